//! Port forwarding carrying data, against real peers: -L, -R (and port 0),
//! -D (SOCKS5 and SOCKS4), -R as a SOCKS proxy, -W and Unix sockets for sluice->sluiced,
//! sluice->sshd and ssh->sluiced, and forwards from ssh_config. Data goes
//! through an echo server written here and is checked by SHA-256 both ways.

mod common;
mod fwd_util;

use common::*;
use fwd_util::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn local_forward_carries_data_both_ways() {
    let s = Setup::new("fwd-l");
    let ep = tcp_echo();
    for (client_ssh, server_ssh, label) in PAIRS {
        let server = s.start(server_ssh, "");
        let lp = free_port();
        let spec = format!("{lp}:127.0.0.1:{ep}");
        let _c = background(
            &s,
            client(&s, client_ssh, &server, "ERROR", &["-N", "-L", &spec]),
        );
        tcp_round_trip(lp, 1);
        tcp_round_trip(lp, 2);
        eprintln!("{label}: -L ok");
    }
}

#[test]
fn remote_forward_fixed_port_and_port_zero() {
    let s = Setup::new("fwd-r");
    let ep = tcp_echo();
    for (client_ssh, server_ssh, label) in PAIRS {
        let server = s.start(server_ssh, "");
        let rp = free_port();
        let spec = format!("{rp}:127.0.0.1:{ep}");
        let c = background(
            &s,
            client(&s, client_ssh, &server, "ERROR", &["-N", "-R", &spec]),
        );
        tcp_round_trip(rp, 3);
        drop(c);
        // Port 0: the server picks, the client prints it as ssh does.
        let mut c = client(
            &s,
            client_ssh,
            &server,
            "INFO",
            &["-N", "-R", &format!("0:127.0.0.1:{ep}")],
        );
        c.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = Bg(c.spawn().unwrap(), s.dir.path("unused"));
        let err = child.0.stderr.take().unwrap();
        let mut port = None;
        for line in BufReader::new(err).lines() {
            let line = line.unwrap();
            if let Some(rest) = line.strip_prefix("Allocated port ") {
                let (p, tail) = rest.split_once(' ').unwrap();
                assert_eq!(tail, format!("for remote forward to 127.0.0.1:{ep}"));
                port = Some(p.parse::<u16>().unwrap());
                break;
            }
        }
        let port = port.unwrap_or_else(|| panic!("{label}: no 'Allocated port' line"));
        tcp_round_trip(port, 4);
        eprintln!("{label}: -R ok (allocated {port})");
    }
}

#[test]
fn dynamic_forward_socks5_and_socks4() {
    let s = Setup::new("fwd-d");
    let ep = tcp_echo();
    for (client_ssh, server_ssh, label) in PAIRS {
        let server = s.start(server_ssh, "");
        let dp = free_port();
        let _c = background(
            &s,
            client(
                &s,
                client_ssh,
                &server,
                "ERROR",
                &["-N", "-D", &dp.to_string()],
            ),
        );
        round_trip(socks5(dp, ep), 5, |s| s.shutdown(Shutdown::Write).unwrap());
        round_trip(socks4(dp, ep), 6, |s| s.shutdown(Shutdown::Write).unwrap());
        eprintln!("{label}: -D ok");
    }
}

#[test]
fn remote_dynamic_forward_is_a_socks_proxy_within_permit_remote_open() {
    // `-R port` alone: the server's listener is a SOCKS proxy served by the
    // client (OpenSSH's dynamic-forward regress test, -R half).
    let s = Setup::new("fwd-rd");
    let ep = tcp_echo();
    for server_ssh in [false, true] {
        let server = s.start(server_ssh, "");
        let rp = free_port();
        let c = background(
            &s,
            client(&s, false, &server, "ERROR", &["-N", "-R", &rp.to_string()]),
        );
        round_trip(socks5(rp, ep), 7, |s| s.shutdown(Shutdown::Write).unwrap());
        round_trip(socks4(rp, ep), 8, |s| s.shutdown(Shutdown::Write).unwrap());
        drop(c);
        // PermitRemoteOpen names where it may connect: not the echo server.
        let rp = free_port();
        let _c = background(
            &s,
            client(
                &s,
                false,
                &server,
                "ERROR",
                &[
                    "-N",
                    "-R",
                    &rp.to_string(),
                    "-o",
                    "PermitRemoteOpen=127.0.0.1:1 localhost:1",
                ],
            ),
        );
        let mut sock = connect_retry(rp);
        let mut req = vec![4, 1];
        req.extend_from_slice(&ep.to_be_bytes());
        req.extend_from_slice(&[127, 0, 0, 1, b'u', 0]);
        sock.write_all(&req).unwrap();
        let mut r = [0u8; 8];
        sock.read_exact(&mut r).unwrap();
        assert_eq!(
            r[..2],
            [0, 0x5b],
            "refused by PermitRemoteOpen (server sshd: {server_ssh})"
        );
    }
}

#[test]
fn stdio_forward() {
    let s = Setup::new("fwd-w");
    let ep = tcp_echo();
    for (client_ssh, server_ssh, label) in PAIRS {
        let server = s.start(server_ssh, "");
        let data = random_data(DATA, 7);
        let w = format!("127.0.0.1:{ep}");
        let out = run(
            client(&s, client_ssh, &server, "ERROR", &["-W", &w]),
            &data,
            60,
        );
        ok(&out, label);
        assert_eq!(sha256(&out.stdout), sha256(&data), "{label}: -W data");
    }
}

#[test]
fn unix_socket_forwards() {
    let s = Setup::new("fwd-unix");
    let ep = tcp_echo();
    let target = s.dir.path("target.sock");
    unix_echo(&target);
    for (client_ssh, server_ssh, label) in PAIRS {
        let server = s.start(server_ssh, "");
        // TCP port -> remote Unix socket, local Unix socket -> remote TCP.
        let lp = free_port();
        let lsock = s.dir.path(&format!("local_{lp}.sock"));
        let rsock = s.dir.path(&format!("remote_{lp}.sock"));
        let l1 = format!("{lp}:{}", target.display());
        let l2 = format!("{}:127.0.0.1:{ep}", lsock.display());
        let r1 = format!("{}:127.0.0.1:{ep}", rsock.display());
        let c = background(
            &s,
            client(
                &s,
                client_ssh,
                &server,
                "ERROR",
                &["-N", "-L", &l1, "-L", &l2, "-R", &r1],
            ),
        );
        tcp_round_trip(lp, 8);
        for (i, p) in [&lsock, &rsock].into_iter().enumerate() {
            let deadline = Instant::now() + Duration::from_secs(15);
            let u = loop {
                match UnixStream::connect(p) {
                    Ok(u) => break u,
                    Err(e) => {
                        assert!(
                            Instant::now() < deadline,
                            "{label}: {}: {e} {}",
                            p.display(),
                            c.stderr()
                        );
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            };
            round_trip(u, 9 + i as u64, |u| u.shutdown(Shutdown::Write).unwrap());
        }
        eprintln!("{label}: unix forwards ok");
    }
}

/// As ssh, the client stays until forwarded connections close, even once
/// the command has exited.
#[test]
fn client_waits_for_open_forwards() {
    let s = Setup::new("fwd-wait");
    let ep = tcp_echo();
    let server = s.start(false, "");
    let lp = free_port();
    let spec = format!("{lp}:127.0.0.1:{ep}");
    let mut c = client(&s, false, &server, "ERROR", &["-L", &spec]);
    c.arg("read x");
    c.stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = Bg(c.spawn().unwrap(), s.dir.path("unused"));
    let mut sock = connect_retry(lp);
    sock.write_all(b"one").unwrap();
    let mut b = [0u8; 3];
    sock.read_exact(&mut b).unwrap();
    child.0.stdin.take().unwrap().write_all(b"\n").unwrap();
    // The command has exited; the forward still carries data.
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "client left with a forward open"
    );
    sock.write_all(b"two").unwrap();
    sock.read_exact(&mut b).unwrap();
    assert_eq!(&b, b"two");
    sock.shutdown(Shutdown::Write).unwrap();
    let mut rest = Vec::new();
    sock.read_to_end(&mut rest).unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let st = loop {
        if let Some(st) = child.0.try_wait().unwrap() {
            break st;
        }
        assert!(
            Instant::now() < deadline,
            "client did not exit after the forward closed"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(st.success());
}

/// LocalForward, DynamicForward and ClearAllForwardings from ssh_config.
#[test]
fn forwards_from_ssh_config() {
    let s = Setup::new("fwd-cfg");
    let ep = tcp_echo();
    let server = s.start(false, "");
    let (lp, dp) = (free_port(), free_port());
    let cfg = s.dir.path("ssh_config");
    std::fs::write(
        &cfg,
        format!(
            "Host 127.0.0.1\n  LocalForward {lp} 127.0.0.1:{ep}\n  DynamicForward 127.0.0.1:{dp}\n"
        ),
    )
    .unwrap();
    let cfg = cfg.display().to_string();
    let c = background(&s, client(&s, false, &server, "ERROR", &["-F", &cfg, "-N"]));
    tcp_round_trip(lp, 12);
    round_trip(socks5(dp, ep), 13, |s| s.shutdown(Shutdown::Write).unwrap());
    drop(c);
    // ClearAllForwardings: none of them is set up, and -G shows the specs.
    let out = run(
        client(
            &s,
            false,
            &server,
            "ERROR",
            &["-F", &cfg, "-o", "ClearAllForwardings=yes", "-G"],
        ),
        b"",
        30,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // As ssh -G prints them: hosts in brackets.
    for want in [
        format!("localforward {lp} [127.0.0.1]:{ep}"),
        format!("dynamicforward [127.0.0.1]:{dp}"),
    ] {
        assert!(text.contains(&want), "{want} in {text}");
    }
    let lp2 = free_port();
    let l2 = format!("{lp2}:127.0.0.1:{ep}");
    let probe = format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{lp2} && echo open || echo closed'");
    for (clear, want) in [("no", "open\n"), ("yes", "closed\n")] {
        let opt = format!("ClearAllForwardings={clear}");
        let c = client(&s, false, &server, "ERROR", &["-o", &opt, "-L", &l2]);
        let out = run(cmd(c, &[&probe]), b"", 30);
        ok(&out, "ClearAllForwardings");
        assert_eq!(String::from_utf8_lossy(&out.stdout), want, "{opt}");
    }
}

/// IPv6 loopback in brackets: a listener on [::1] and targets on ::1.
#[test]
fn ipv6_loopback_forwards() {
    let s = Setup::new("fwd-v6");
    let ep6 = tcp_echo_on("::1");
    for (client_ssh, server_ssh, label) in PAIRS {
        let server = s.start(server_ssh, "");
        let lp = free_port();
        let spec = format!("[::1]:{lp}:[::1]:{ep6}");
        let _c = background(
            &s,
            client(&s, client_ssh, &server, "ERROR", &["-N", "-L", &spec]),
        );
        tcp_round_trip_on("::1", lp, 14);
        let data = random_data(1 << 20, 15);
        let w = format!("[::1]:{ep6}");
        let out = run(
            client(&s, client_ssh, &server, "ERROR", &["-W", &w]),
            &data,
            60,
        );
        ok(&out, label);
        assert_eq!(sha256(&out.stdout), sha256(&data), "{label}: -W [::1]");
    }
}
