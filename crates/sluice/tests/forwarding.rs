//! Port forwarding against real peers: -L, -R (and port 0), -D (SOCKS5 and
//! SOCKS4), -W and Unix sockets for sluice->sluiced, sluice->sshd and
//! ssh->sluiced; ExitOnForwardFailure; forwards refused by policy while
//! the connection keeps running its command. Data goes through an echo
//! server written here and is checked by SHA-256 both ways.

mod common;

use common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const DATA: usize = 3 << 20;

/// Echoes every connection (TCP or Unix) until EOF, then shuts down its side.
fn echo<S: Read + Write + Send + 'static>(mut s: S, done: impl FnOnce(&mut S) + Send + 'static) {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if s.write_all(&buf[..n]).is_err() {
                        return;
                    }
                }
            }
        }
        done(&mut s);
    });
}

fn tcp_echo() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            echo(s, |s| {
                let _ = s.shutdown(Shutdown::Write);
            });
        }
    });
    port
}

fn unix_echo(path: &std::path::Path) {
    let l = UnixListener::bind(path).unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            echo(s, |s| {
                let _ = s.shutdown(Shutdown::Write);
            });
        }
    });
}

/// Sends DATA, shuts down, reads the echo; hashes must match.
fn round_trip<S: Read + Write + Send + 'static>(mut s: S, seed: u64, shut: impl FnOnce(&S)) {
    let data = random_data(DATA, seed);
    let want = sha256(&data);
    s.write_all(&data).unwrap_or_else(|e| panic!("write: {e}"));
    shut(&s);
    let mut back = Vec::new();
    s.read_to_end(&mut back).unwrap();
    assert_eq!(back.len(), data.len(), "echoed length");
    assert_eq!(sha256(&back), want, "echoed data hash");
}

fn tcp_round_trip(port: u16, seed: u64) {
    let s = connect_retry(port);
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    // Write and read at once: the echo may fill the buffers both ways.
    let r = s.try_clone().unwrap();
    let data = random_data(DATA, seed);
    let want = sha256(&data);
    let reader = std::thread::spawn(move || {
        let mut back = Vec::new();
        let _ = (&r).read_to_end(&mut back);
        back
    });
    (&s).write_all(&data).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let back = reader.join().unwrap();
    assert_eq!((back.len(), sha256(&back)), (data.len(), want));
}

fn connect_retry(port: u16) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => return s,
            Err(e) => {
                assert!(Instant::now() < deadline, "port {port}: {e}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// A client process killed on drop, stderr kept in a file.
struct Bg(Child, std::path::PathBuf);

impl Bg {
    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.1).unwrap_or_default()
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A client command line with our log level (the harness's says ERROR).
fn client(s: &Setup, openssh: bool, server: &Server, level: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(if openssh { "ssh" } else { SLUICE });
    c.args([
        "-F",
        "/dev/null",
        "-o",
        "StrictHostKeyChecking=no",
        "-o",
        "BatchMode=yes",
    ])
    .arg("-o")
    .arg(format!("LogLevel={level}"))
    .arg("-o")
    .arg(format!(
        "UserKnownHostsFile={}",
        s.dir.path("known_hosts").display()
    ))
    .arg("-i")
    .arg(&s.user_key)
    .args(["-p", &server.port.to_string()])
    .args(extra)
    .arg("127.0.0.1");
    c
}

/// Appends the remote command after the destination.
fn cmd(mut c: Command, words: &[&str]) -> Command {
    c.args(words);
    c
}

fn background(s: &Setup, mut c: Command) -> Bg {
    let n = free_port();
    let err = s.dir.path(&format!("client_{n}.err"));
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap());
    Bg(c.spawn().unwrap(), err)
}

const PAIRS: [(bool, bool, &str); 3] = [
    (false, false, "sluice->sluiced"),
    (false, true, "sluice->sshd"),
    (true, false, "ssh->sluiced"),
];

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

fn socks5(port: u16, ep: u16) -> TcpStream {
    let mut s = connect_retry(port);
    s.write_all(&[5, 1, 0]).unwrap();
    let mut r = [0u8; 2];
    s.read_exact(&mut r).unwrap();
    assert_eq!(r, [5, 0]);
    let mut req = vec![5, 1, 0, 3, 9];
    req.extend_from_slice(b"127.0.0.1");
    req.extend_from_slice(&ep.to_be_bytes());
    s.write_all(&req).unwrap();
    let mut r = [0u8; 10];
    s.read_exact(&mut r).unwrap();
    assert_eq!(r[..2], [5, 0], "SOCKS5 reply");
    s
}

fn socks4(port: u16, ep: u16) -> TcpStream {
    let mut s = connect_retry(port);
    let mut req = vec![4, 1];
    req.extend_from_slice(&ep.to_be_bytes());
    req.extend_from_slice(&[127, 0, 0, 1, b'u', 0]);
    s.write_all(&req).unwrap();
    let mut r = [0u8; 8];
    s.read_exact(&mut r).unwrap();
    assert_eq!(r[..2], [0, 0x5a], "SOCKS4 reply");
    s
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

/// Kills, on drop, the background process whose command line holds `tag`.
struct Daemon(String);

impl Drop for Daemon {
    fn drop(&mut self) {
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.starts_with(SLUICE) && text.contains(&self.0) {
                if let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() {
                    let _ = Command::new("kill").arg(pid.to_string()).status();
                }
            }
        }
    }
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

/// A system user for the test, removed on drop.
struct TestUser(String);

impl Drop for TestUser {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.0).status();
    }
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
    let st = Command::new("useradd")
        .args(["-M", "-s", "/bin/sh", &name])
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
    assert!(
        text.contains(&format!("localforward {lp} 127.0.0.1:{ep}")),
        "{text}"
    );
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
