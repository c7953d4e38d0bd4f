//! ChannelTimeout and UnusedConnectionTimeout (server/idle.rs): sluiced
//! and Debian's sshd given the same configuration, driven by OpenSSH's
//! ssh, must end the same channels and connections, at about the same
//! time, with the same exit status. Each case runs against both servers
//! at once and its clients in parallel, so a test costs one timeout.
//! sshd counts in whole seconds (a 2 s limit fires 1-2 s after the last
//! data, an unused connection 2-3 s after), hence the loose bounds.

mod common;

use common::*;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Output};
use std::time::{Duration, Instant};

/// `f(openssh)` for sshd and for sluiced at once.
fn both<T: Send>(f: impl Fn(bool) -> T + Sync) -> Vec<(&'static str, T)> {
    std::thread::scope(|sc| {
        let f = &f;
        let h: Vec<_> = [true, false]
            .into_iter()
            .map(|openssh| sc.spawn(move || f(openssh)))
            .collect();
        ["sshd", "sluiced"]
            .into_iter()
            .zip(h.into_iter().map(|h| h.join().expect("server thread")))
            .collect()
    })
}

/// Runs `ssh [extra] 127.0.0.1 command...` and times it.
fn ssh(s: &Setup, server: &Server, extra: &[&str], command: &[&str]) -> (Output, Duration) {
    let mut c = s.client(true, server, extra);
    c.args(command);
    let t = Instant::now();
    let out = run(c, b"", 30);
    (out, t.elapsed())
}

/// Waits until the server's log has `needle` (it may come just after the
/// client saw the effect).
fn log_has(server: &Server, needle: &str) -> bool {
    let end = Instant::now() + Duration::from_secs(3);
    while Instant::now() < end {
        if server.log_text().contains(needle) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn within(d: Duration, lo: u64, hi: u64) -> bool {
    d >= Duration::from_secs(lo) && d < Duration::from_secs(hi)
}

#[test]
fn idle_command_is_closed_and_a_busy_one_is_not() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("ctmo-cmd");
    let results = both(|openssh| {
        let server = s.start(openssh, "ChannelTimeout session:command=2");
        std::thread::scope(|sc| {
            let idle = sc.spawn(|| ssh(&s, &server, &["-n"], &["sleep 6; exit 23"]));
            let busy = sc.spawn(|| {
                ssh(
                    &s,
                    &server,
                    &["-n"],
                    &["for i in 1 2 3 4; do echo x; sleep 1; done; exit 23"],
                )
            });
            let (idle, busy) = (idle.join().unwrap(), busy.join().unwrap());
            let logged = log_has(&server, "closing after 2 seconds of inactivity");
            (idle, busy, logged, server.log_text())
        })
    });
    for (name, ((idle, t), (busy, _), logged, log)) in &results {
        // Closed without an exit status: ssh's 255, with nothing said.
        assert_eq!(idle.status.code(), Some(255), "{name}: {idle:?}");
        assert!(within(*t, 1, 5), "{name}: closed after {t:?}");
        assert_eq!(busy.status.code(), Some(23), "{name}: {busy:?}");
        assert_eq!(busy.stdout, b"x\nx\nx\nx\n", "{name}");
        assert!(logged, "{name}: {log}");
    }
    let [(_, sshd), (_, ours)] = &results[..] else {
        unreachable!()
    };
    assert_eq!(sshd.0 .0.stderr, ours.0 .0.stderr, "what ssh says");
}

/// sshd 9.2 names a running command's channel `session:command`: a bare
/// `session` pattern matches no running session, nor does a shell's.
#[test]
fn a_bare_session_pattern_closes_no_command() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("ctmo-bare");
    for (name, (out, _)) in both(|openssh| {
        let server = s.start(openssh, "ChannelTimeout session=1 session:shell=1");
        ssh(&s, &server, &["-n"], &["sleep 3; exit 23"])
    }) {
        assert_eq!(out.status.code(), Some(23), "{name}: {out:?}");
    }
}

/// A process that listens and accepts, then never writes.
fn silent_listener() -> (u16, std::thread::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let h = std::thread::spawn(move || {
        let mut held = Vec::new();
        l.set_nonblocking(true).unwrap();
        let end = Instant::now() + Duration::from_secs(20);
        while Instant::now() < end {
            if let Ok((c, _)) = l.accept() {
                held.push(c);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    (port, h)
}

/// `ssh -N` with `forward`, started in the background; returns once the
/// local end listens.
fn forwarding_client(s: &Setup, server: &Server, forward: &[&str], lport: u16) -> Child {
    let mut c = s.client(true, server, &["-N", "-o", "ExitOnForwardFailure=yes"]);
    c.args(forward)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let child = c.spawn().expect("ssh");
    let end = Instant::now() + Duration::from_secs(10);
    // A probe's own channel ends with the probe.
    while TcpStream::connect(("127.0.0.1", lport)).is_err() {
        assert!(Instant::now() < end, "ssh -L did not listen on {lport}");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

#[test]
fn idle_forwarded_connection_is_closed_and_the_connection_stays() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("ctmo-fwd");
    let (target, _l) = silent_listener();
    for (name, (eof_after, alive)) in both(|openssh| {
        let server = s.start(openssh, "ChannelTimeout direct-tcpip=2");
        let lport = free_port();
        let spec = format!("{lport}:127.0.0.1:{target}");
        let mut client = forwarding_client(&s, &server, &["-L", &spec], lport);
        let mut c = TcpStream::connect(("127.0.0.1", lport)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(8))).unwrap();
        let t = Instant::now();
        let mut b = [0u8; 16];
        let n = c.read(&mut b);
        let eof_after = matches!(n, Ok(0)).then(|| t.elapsed());
        let alive = client.try_wait().unwrap().is_none();
        let _ = client.kill();
        let _ = client.wait();
        (eof_after, alive)
    }) {
        let t = eof_after.unwrap_or_else(|| panic!("{name}: the forwarded connection stayed"));
        assert!(within(t, 1, 5), "{name}: closed after {t:?}");
        assert!(alive, "{name}: the SSH connection ended with the channel");
    }
}

#[test]
fn unused_connection_is_closed_unless_a_session_runs() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("ctmo-unused");
    let results = both(|openssh| {
        let server = s.start(openssh, "UnusedConnectionTimeout 2");
        let lport = free_port();
        let spec = format!("{lport}:127.0.0.1:{}", server.port);
        std::thread::scope(|sc| {
            let plain = sc.spawn(|| ssh(&s, &server, &["-N"], &[]));
            let listening = sc.spawn(|| ssh(&s, &server, &["-N", "-L", &spec], &[]));
            let session = sc.spawn(|| ssh(&s, &server, &["-n"], &["sleep 4; exit 23"]));
            let r = [plain, listening, session].map(|h| h.join().unwrap());
            let logged = log_has(&server, "terminating inactive connection from user ");
            (r, logged, server.log_text())
        })
    });
    for (name, ([(plain, t1), (listening, t2), (session, _)], logged, log)) in &results {
        assert_eq!(plain.status.code(), Some(255), "{name}: -N {plain:?}");
        assert!(within(*t1, 1, 6), "{name}: -N closed after {t1:?}");
        assert_eq!(
            listening.status.code(),
            Some(255),
            "{name}: -L {listening:?}"
        );
        assert!(within(*t2, 1, 6), "{name}: -N -L closed after {t2:?}");
        assert_eq!(session.status.code(), Some(23), "{name}: {session:?}");
        assert!(logged, "{name}: {log}");
    }
    let [(_, sshd), (_, ours)] = &results[..] else {
        unreachable!()
    };
    assert_eq!(sshd.0[0].0.stderr, ours.0[0].0.stderr, "what ssh says");
}
