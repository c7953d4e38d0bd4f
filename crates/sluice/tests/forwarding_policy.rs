//! Forwarding policy and failures: ExitOnForwardFailure, forwards refused
//! by PermitOpen, AllowTcpForwarding and PermitListen while the connection
//! keeps running its command, -f, and Unix sockets bound and connected with
//! the user's credentials.

mod common;
mod fwd_util;

use common::*;
use fwd_util::*;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn exit_on_forward_failure() {
    let s = Setup::new("fwd-exit");
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let bp = busy.local_addr().unwrap().port();
    for (client_ssh, server_ssh, label) in PAIRS {
        if client_ssh {
            continue; // the client's behaviour is what is under test
        }
        let server = s.start(server_ssh, "");
        let r = format!("127.0.0.1:{bp}:127.0.0.1:1");
        let out = run(
            cmd(
                client(
                    &s,
                    false,
                    &server,
                    "ERROR",
                    &["-o", "ExitOnForwardFailure=yes", "-R", &r],
                ),
                &["sleep", "20"],
            ),
            b"",
            30,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(255), "{label}: {err}");
        assert!(
            err.contains(&format!(
                "Error: remote port forwarding failed for listen port {bp}"
            )),
            "{label}: {err}"
        );
        // Without it: a warning, and the command runs.
        let out = run(
            cmd(
                client(&s, false, &server, "INFO", &["-R", &r]),
                &["echo", "ran"],
            ),
            b"",
            30,
        );
        ok(&out, label);
        assert_eq!(out.stdout, b"ran\n");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!(
                "Warning: remote port forwarding failed for listen port {bp}"
            )),
            "{err}"
        );
        // A local listener that cannot bind.
        let l = format!("127.0.0.1:{bp}:127.0.0.1:1");
        let out = run(
            cmd(
                client(
                    &s,
                    false,
                    &server,
                    "ERROR",
                    &["-o", "ExitOnForwardFailure=yes", "-L", &l],
                ),
                &["echo", "ran"],
            ),
            b"",
            30,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(255), "{label}: {err}");
        assert!(
            err.contains(&format!("bind [127.0.0.1]:{bp}: Address already in use")),
            "{err}"
        );
        assert!(out.stdout.is_empty());
        eprintln!("{label}: ExitOnForwardFailure ok");
    }
}

/// A refused forward: the client reports it, the session's command still
/// runs (it waits on stdin until the refusal was seen), the server logs why.
fn refused(server_cfg: &str, why: &str) {
    let s = Setup::new("fwd-deny");
    let ep = tcp_echo();
    let server = s.start(false, server_cfg);
    for client_ssh in [false, true] {
        let lp = free_port();
        let spec = format!("{lp}:127.0.0.1:{ep}");
        let mut c = client(&s, client_ssh, &server, "INFO", &["-L", &spec]);
        c.arg("read x; echo alive $x");
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = Bg(c.spawn().unwrap(), s.dir.path("unused"));
        let mut sock = connect_retry(lp);
        sock.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut buf = Vec::new();
        let _ = sock.read_to_end(&mut buf); // closed once the open fails
        assert!(buf.is_empty());
        child.0.stdin.take().unwrap().write_all(b"still\n").unwrap();
        let mut out = String::new();
        child
            .0
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        let mut err = String::new();
        child
            .0
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert_eq!(out, "alive still\n", "{err}");
        assert!(child.0.wait().unwrap().success());
        assert!(
            err.contains("open failed: administratively prohibited: open failed"),
            "{err}"
        );
    }
    let log = server.log_text();
    assert!(
        log.contains("refused local port forward: originator 127.0.0.1 port")
            && log.contains(&format!("target 127.0.0.1 port {ep}: {why}")),
        "{log}"
    );
}

#[test]
fn forward_refused_by_permit_open() {
    refused("PermitOpen 127.0.0.1:1", "PermitOpen");
}

#[test]
fn forward_refused_by_allow_tcp_forwarding() {
    refused("AllowTcpForwarding no", "AllowTcpForwarding");
}

#[test]
fn fork_after_authentication() {
    let s = Setup::new("fwd-f");
    let ep = tcp_echo();
    let server = s.start(false, "");
    // -f with ExitOnForwardFailure: the parent returns once the remote
    // forward is confirmed, so it works at once.
    let rp = free_port();
    let spec = format!("{rp}:127.0.0.1:{ep}");
    let _d = Daemon(spec.clone());
    let err = s.dir.path("f.err");
    let st = client(
        &s,
        false,
        &server,
        "ERROR",
        &["-f", "-N", "-o", "ExitOnForwardFailure=yes", "-R", &spec],
    )
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(std::fs::File::create(&err).unwrap())
    .status()
    .unwrap();
    assert!(st.success(), "{}", std::fs::read_to_string(&err).unwrap());
    let mut sock = TcpStream::connect(("127.0.0.1", rp)).expect("forward up when -f returns");
    sock.write_all(b"ping").unwrap();
    sock.shutdown(Shutdown::Write).unwrap();
    let mut back = String::new();
    sock.read_to_string(&mut back).unwrap();
    assert_eq!(back, "ping");
    // A failing forward keeps the client in the foreground and fails it.
    let out = run(
        client(
            &s,
            false,
            &server,
            "ERROR",
            &["-f", "-N", "-o", "ExitOnForwardFailure=yes", "-R", &spec],
        ),
        b"",
        30,
    );
    assert_eq!(out.status.code(), Some(255));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!(
        "Error: remote port forwarding failed for listen port {rp}"
    )));
    // Without a command or -N, -f is refused as ssh does.
    let out = run(client(&s, false, &server, "ERROR", &["-f"]), b"", 30);
    assert_eq!(out.status.code(), Some(255));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("Cannot fork into background without a command to execute."));
}

/// sluiced binds and connects Unix sockets with the user's credentials:
/// the remote socket is the user's, a root-only socket is out of reach.
#[test]
fn unix_sockets_as_the_user() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || missing("useradd") {
        eprintln!("skipping: needs root and useradd");
        return;
    }
    let s = Setup::new("fwd-uid");
    let name = format!("slfwd{}", std::process::id() % 100000);
    // "*": no password, not locked ("!", useradd's default, refuses
    // every login without PAM, as in sshd).
    let st = Command::new("useradd")
        .args(["-M", "-s", "/bin/sh", "-p", "*", &name])
        .status()
        .unwrap();
    assert!(st.success());
    let _user = TestUser(name.clone());
    let uid = String::from_utf8(
        Command::new("id")
            .args(["-u", &name])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .parse::<u32>()
    .unwrap();
    let ep = tcp_echo();
    let server = s.start(false, "");
    let open = s.dir.path("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let rsock = open.join("r.sock");
    let root_only = s.dir.path("root.sock");
    unix_echo(&root_only);
    std::fs::set_permissions(
        &root_only,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let lp = free_port();
    let r = format!("{}:127.0.0.1:{ep}", rsock.display());
    let l = format!("{lp}:{}", root_only.display());
    let c = background(
        &s,
        client(
            &s,
            false,
            &server,
            "INFO",
            &["-l", &name, "-N", "-R", &r, "-L", &l],
        ),
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    let u = loop {
        match UnixStream::connect(&rsock) {
            Ok(u) => break u,
            Err(e) => {
                assert!(Instant::now() < deadline, "{e}: {}", c.stderr());
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    };
    let meta = std::fs::metadata(&rsock).unwrap();
    assert_eq!(
        std::os::unix::fs::MetadataExt::uid(&meta),
        uid,
        "socket owner"
    );
    round_trip(u, 11, |u| u.shutdown(Shutdown::Write).unwrap());
    let mut sock = connect_retry(lp);
    let mut buf = Vec::new();
    let _ = sock.read_to_end(&mut buf);
    assert!(buf.is_empty());
    let deadline = Instant::now() + Duration::from_secs(15);
    while !c
        .stderr()
        .contains("open failed: connect failed: Permission denied")
    {
        assert!(Instant::now() < deadline, "{}", c.stderr());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// PermitListen refuses a remote forward with a log line naming it; the
/// connection goes on.
#[test]
fn remote_forward_refused_by_permit_listen() {
    let s = Setup::new("fwd-plisten");
    let server = s.start(false, "PermitListen 1");
    let rp = free_port();
    let r = format!("{rp}:127.0.0.1:1");
    let out = run(
        cmd(
            client(&s, false, &server, "INFO", &["-R", &r]),
            &["echo ran"],
        ),
        b"",
        30,
    );
    ok(&out, "PermitListen");
    assert_eq!(out.stdout, b"ran\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "Warning: remote port forwarding failed for listen port {rp}"
        )),
        "{err}"
    );
    let log = server.log_text();
    assert!(
        log.contains(&format!(
            "refused remote port forward: listen host localhost port {rp}: PermitListen"
        )),
        "{log}"
    );
}

/// MaxForwardChannels bounds the forwarding channels of one connection:
/// past it a new one is refused (resource shortage) and the connection and
/// the channels already open go on; once one closes, the next opens.
#[test]
fn forwarding_channels_capped_by_max_forward_channels() {
    let s = Setup::new("fwd-max");
    let ep = tcp_echo();
    let server = s.start(false, "MaxForwardChannels 2");
    let lp = free_port();
    let spec = format!("{lp}:127.0.0.1:{ep}");
    let mut c = client(&s, true, &server, "INFO", &["-L", &spec]);
    c.arg("read x; echo alive $x");
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = Bg(c.spawn().unwrap(), s.dir.path("unused"));
    let echoed = |sock: &mut TcpStream, what: &[u8]| {
        sock.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        sock.write_all(what).unwrap();
        let mut got = vec![0u8; what.len()];
        sock.read_exact(&mut got).map(|()| got)
    };
    let mut a = connect_retry(lp);
    assert_eq!(echoed(&mut a, b"one").unwrap(), b"one");
    let mut b = TcpStream::connect(("127.0.0.1", lp)).unwrap();
    assert_eq!(echoed(&mut b, b"two").unwrap(), b"two");
    let mut third = TcpStream::connect(("127.0.0.1", lp)).unwrap();
    third
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut buf = Vec::new();
    let _ = third.read_to_end(&mut buf); // closed once the open fails
    assert!(buf.is_empty());
    // The first two still work; after one closes, a new one opens.
    assert_eq!(echoed(&mut b, b"again").unwrap(), b"again");
    a.shutdown(Shutdown::Both).unwrap();
    drop(a);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut d = TcpStream::connect(("127.0.0.1", lp)).unwrap();
        if let Ok(got) = echoed(&mut d, b"four") {
            assert_eq!(got, b"four");
            break;
        }
        assert!(Instant::now() < deadline, "no channel after one closed");
        std::thread::sleep(Duration::from_millis(100));
    }
    // ssh waits for its forwarded connections before it exits.
    drop((b, third));
    child.0.stdin.take().unwrap().write_all(b"still\n").unwrap();
    let mut out = String::new();
    let mut err = String::new();
    child
        .0
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(out, "alive still\n", "{err}");
    assert!(
        err.contains("open failed: resource shortage: too many forwarding channels"),
        "{err}"
    );
    let log = server.log_text();
    assert!(
        log.contains(
            "refused direct-tcpip channel: 2 forwarding channels open (MaxForwardChannels)"
        ),
        "{log}"
    );
}

/// Pumps `conn` over `sock` until the answer to the last global request.
fn global_reply(conn: &mut sluice_proto::Connection, sock: &mut TcpStream) -> bool {
    let end = Instant::now() + Duration::from_secs(10);
    let mut inbuf = Vec::new();
    loop {
        assert!(Instant::now() < end, "no global reply");
        let mut out = Vec::new();
        conn.poll_transmit(Instant::now(), &mut out);
        sock.write_all(&out).unwrap();
        let mut buf = [0u8; 65536];
        match sock.read(&mut buf) {
            Ok(0) => panic!("server closed the connection"),
            Ok(n) => inbuf.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
        loop {
            let r = conn.handle_input(Instant::now(), &mut inbuf).unwrap();
            let n = r.consumed;
            if n == 0 {
                break;
            }
            inbuf.drain(..n);
        }
        while let Some(e) = conn.poll_event() {
            if let sluice_proto::Event::GlobalReply { success, .. } = e {
                return success;
            }
        }
    }
}

/// A cancel-tcpip-forward names its port as a uint32: one past 65535 names
/// no listener (it used to be cut to its low 16 bits, cancelling another).
#[test]
fn cancel_forward_with_a_port_past_65535_cancels_nothing() {
    let s = Setup::new("fwd-cancel-port");
    let server = s.start(false, "");
    let (mut conn, mut sock, _) = engine_session(&s, server.port, b"sleep 30");
    let port = free_port();
    let data = |p: u32| {
        let mut d = Vec::new();
        d.extend_from_slice(&9u32.to_be_bytes());
        d.extend_from_slice(b"127.0.0.1");
        d.extend_from_slice(&p.to_be_bytes());
        d
    };
    let p = u32::from(port);
    conn.global_request("tcpip-forward", true, &data(p))
        .unwrap();
    assert!(global_reply(&mut conn, &mut sock), "tcpip-forward refused");
    conn.global_request("cancel-tcpip-forward", true, &data(p + 65536))
        .unwrap();
    assert!(
        !global_reply(&mut conn, &mut sock),
        "port {} cancelled port {p}",
        p + 65536
    );
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_ok(),
        "listener gone"
    );
    conn.global_request("cancel-tcpip-forward", true, &data(p))
        .unwrap();
    assert!(
        global_reply(&mut conn, &mut sock),
        "cancel of the real port"
    );
}
