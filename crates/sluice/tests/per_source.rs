//! Per-source limits in sluiced's listener (OpenSSH 9.8's keywords):
//! PerSourcePenalties refuses a source whose connections ended badly before
//! authenticating (failed authentication, LoginGraceTime, a crash), with
//! sshd's log line; PerSourcePenaltyExemptList spares a source;
//! PerSourceMaxStartups refuses a second unauthenticated connection from
//! the same block; `-T` shows all four as sshd 9.8+ does.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

fn wait_for_log(server: &Server, needle: &str, secs: u64) -> bool {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(secs) {
        if server.log_text().contains(needle) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// `sluice ... true` against `server`: did it log in?
fn login(s: &Setup, server: &Server) -> std::process::Output {
    let mut c = s.client(false, server, &[]);
    c.arg("true");
    run(c, b"", 20)
}

/// What the server sends first on a fresh TCP connection, up to EOF or a line.
fn first_bytes(port: u16) -> String {
    let mut t = TcpStream::connect(("127.0.0.1", port)).unwrap();
    t.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 256];
    let n = t.read(&mut buf).unwrap_or(0);
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[test]
fn failed_authentication_gets_the_source_refused() {
    let s = Setup::new("penalty-authfail");
    let server = s.start(false, "PerSourcePenalties authfail:30s min:10s");
    assert!(login(&s, &server).status.success(), "{}", server.log_text());
    // One failed authentication: 30 s is over `min`, active at once.
    let keys = s.dir.path("authorized_keys");
    let saved = std::fs::read(&keys).unwrap();
    std::fs::write(&keys, b"").unwrap();
    assert!(!login(&s, &server).status.success());
    std::fs::write(&keys, saved).unwrap();
    // New ("ipv4: new 127.0.0.1/32 active penalty of 30.000 seconds for
    // ...") or added to the readiness probe's deferred noauth second
    // ("127.0.0.1/32: activating ipv4 penalty of 31.000 seconds for ...").
    assert!(
        wait_for_log(&server, "seconds for penalty: failed authentication", 10),
        "{}",
        server.log_text()
    );
    // The right key no longer helps: refused at accept, with sshd's words.
    let out = login(&s, &server);
    assert!(!out.status.success());
    assert_eq!(first_bytes(server.port), "Not allowed at this time\r\n");
    let log = server.log_text();
    let drop = log
        .lines()
        .find(|l| l.contains("drop connection #"))
        .unwrap_or_else(|| panic!("no drop line:\n{log}"));
    assert!(
        drop.contains(&format!("from [127.0.0.1]:"))
            && drop.contains(&format!(
                "on [127.0.0.1]:{} penalty: failed authentication",
                server.port
            )),
        "{drop}"
    );
}

#[test]
fn exempt_list_spares_the_source() {
    let s = Setup::new("penalty-exempt");
    let server = s.start(
        false,
        "PerSourcePenalties authfail:30s min:10s\nPerSourcePenaltyExemptList 10.0.0.0/8,127.0.0.0/8",
    );
    let keys = s.dir.path("authorized_keys");
    let saved = std::fs::read(&keys).unwrap();
    std::fs::write(&keys, b"").unwrap();
    for _ in 0..3 {
        assert!(!login(&s, &server).status.success());
    }
    std::fs::write(&keys, saved).unwrap();
    let out = login(&s, &server);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.log_text()
    );
    assert!(!server.log_text().contains("drop connection"));
}

#[test]
fn login_grace_time_exceeded_is_penalised() {
    let s = Setup::new("penalty-grace");
    let server = s.start(
        false,
        "LoginGraceTime 1\nPerSourcePenalties grace-exceeded:30s min:10s",
    );
    // A client that sends its version and then nothing.
    let mut t = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    t.write_all(b"SSH-2.0-stalled\r\n").unwrap();
    assert!(
        wait_for_log(&server, "penalty: exceeded LoginGraceTime", 15),
        "{}",
        server.log_text()
    );
    assert_eq!(first_bytes(server.port), "Not allowed at this time\r\n");
    assert!(wait_for_log(&server, "penalty: exceeded LoginGraceTime", 1));
    drop(t);
}

/// The connection processes the listener `pid` has started.
fn children_of(pid: u32) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[test]
fn a_crashed_connection_process_is_penalised() {
    let s = Setup::new("penalty-crash");
    let server = s.start(false, "PerSourcePenalties crash:30s min:10s");
    let mut t = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    t.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut banner = [0u8; 64];
    assert!(t.read(&mut banner).unwrap() > 0);
    // The readiness probe of `start` may still be ending: find the
    // process serving this connection, the newest.
    let pid = *children_of(server.child.id())
        .iter()
        .max()
        .expect("a connection process");
    // SAFETY: signalling a process of this test's server.
    unsafe { libc::kill(pid, libc::SIGABRT) };
    assert!(
        wait_for_log(&server, "for penalty: caused crash", 10),
        "{}",
        server.log_text()
    );
    assert_eq!(first_bytes(server.port), "Not allowed at this time\r\n");
    assert!(wait_for_log(&server, "penalty: caused crash", 1));
}

#[test]
fn per_source_max_startups_refuses_a_second_unauthenticated_connection() {
    let s = Setup::new("persource-startups");
    let server = s.start(false, "PerSourceMaxStartups 1");
    // Let the readiness probe's process end first.
    assert!(wait_for_log(&server, "Connection closed by 127.0.0.1", 10));
    let t0 = Instant::now();
    while children_of(server.child.id()).len() > 0 && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut held = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    held.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut b = [0u8; 64];
    let n = held.read(&mut b).unwrap();
    assert!(String::from_utf8_lossy(&b[..n]).starts_with("SSH-2.0-"));
    assert_eq!(first_bytes(server.port), "Not allowed at this time\r\n");
    assert!(
        wait_for_log(&server, "past MaxStartups", 5),
        "{}",
        server.log_text()
    );
    assert!(server
        .log_text()
        .contains("1 unauthenticated connections from 127.0.0.1/32: at PerSourceMaxStartups 1"));
    // Once the held connection is gone, the source may log in again.
    drop(held);
    let t0 = Instant::now();
    while !children_of(server.child.id()).is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{}",
            server.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(login(&s, &server).status.success(), "{}", server.log_text());
}

fn dump(s: &Setup, body: &str) -> std::process::Output {
    let d = s.dir.0.display().to_string();
    let cfg = s.dir.path("dump_config");
    std::fs::write(
        &cfg,
        format!("HostKey {d}/host_ed25519\nListenAddress 127.0.0.1\nPidFile none\n{body}\n"),
    )
    .unwrap();
    let mut c = Command::new(SLUICED);
    c.arg("-T").arg("-f").arg(&cfg);
    run(c, b"", 20)
}

fn lines_with(out: &std::process::Output, prefix: &str) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(str::to_owned)
        .collect()
}

#[test]
fn dump_shows_the_per_source_keywords_as_sshd() {
    let s = Setup::new("persource-dump");
    let out = dump(&s, "");
    ok(&out, "sluiced -T");
    assert_eq!(
        lines_with(&out, "persource"),
        [
            "persourcepenaltyexemptlist none",
            "persourcemaxstartups none",
            "persourcenetblocksize 32:128",
            "persourcepenalties crash:90.000000 authfail:5.000000 noauth:1.000000 \
             grace-exceeded:10.000000 refuseconnection:10.000000 max:600.000000 min:15.000000 \
             max-sources4:65536 max-sources6:65536 overflow:permissive overflow6:permissive",
        ]
    );
    let out = dump(
        &s,
        "PerSourceMaxStartups 3\nPerSourceNetBlockSize 24:56\nPerSourcePenaltyExemptList 192.0.2.0/24,!192.0.2.1\n\
         PerSourcePenalties authfail:1m overflow6:deny-all\nPerSourcePenalties authfail:2 crash:1.5s",
    );
    ok(&out, "sluiced -T");
    assert_eq!(
        lines_with(&out, "persource"),
        [
            "persourcepenaltyexemptlist 192.0.2.0/24,!192.0.2.1",
            "persourcemaxstartups 3",
            "persourcenetblocksize 24:56",
            "persourcepenalties crash:1.500000 authfail:60.000000 noauth:1.000000 \
             grace-exceeded:10.000000 refuseconnection:10.000000 max:600.000000 min:15.000000 \
             max-sources4:65536 max-sources6:65536 overflow:permissive overflow6:deny-all",
        ]
    );
    let out = dump(&s, "PerSourcePenalties no");
    assert_eq!(
        lines_with(&out, "persourcepenalties"),
        ["persourcepenalties no"]
    );
    for (bad, msg) in [
        (
            "PerSourceNetBlockSize 33",
            "Invalid PerSourceNetBlockSize spec.",
        ),
        (
            "PerSourceNetBlockSize 24:129",
            "Invalid PerSourceNetBlockSize spec.",
        ),
        (
            "PerSourceMaxStartups many",
            "PerSourceMaxStartups integer value invalid.",
        ),
        (
            "PerSourcePenalties authfail:soon",
            "invalid PerSourcePenalties time value.",
        ),
        (
            "PerSourcePenalties bogus:1",
            "unsupported PerSourcePenalties keyword bogus:1",
        ),
        (
            "PerSourcePenalties no crash:1",
            "argument must appear alone.",
        ),
        (
            "PerSourcePenaltyExemptList 10.0.0.0/33",
            "invalid PerSourcePenaltyExemptList list.",
        ),
        (
            "Match User x\n  PerSourceMaxStartups 1",
            "PerSourceMaxStartups",
        ),
    ] {
        let out = dump(&s, bad);
        assert_eq!(out.status.code(), Some(255), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(msg), "{bad}: {err}");
    }
}

/// A TCP connection to 127.0.0.1:`port` from the source address `from`.
fn connect_from(from: [u8; 4], port: u16) -> TcpStream {
    use std::os::fd::FromRawFd;
    // SAFETY: a new socket, bound and connected with valid sockaddr_in
    // values; its fd is owned by the TcpStream returned.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        assert!(fd >= 0);
        let mut a: libc::sockaddr_in = std::mem::zeroed();
        a.sin_family = libc::AF_INET as libc::sa_family_t;
        a.sin_addr.s_addr = u32::from_ne_bytes(from);
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        assert_eq!(
            libc::bind(fd, (&a as *const libc::sockaddr_in).cast(), len),
            0
        );
        a.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
        a.sin_port = port.to_be();
        assert_eq!(
            libc::connect(fd, (&a as *const libc::sockaddr_in).cast(), len),
            0
        );
        TcpStream::from_raw_fd(fd)
    }
}

fn first_line(mut t: TcpStream) -> String {
    t.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut b = [0u8; 64];
    let n = t.read(&mut b).unwrap_or(0);
    String::from_utf8_lossy(&b[..n]).into_owned()
}

#[test]
fn net_block_size_groups_sources() {
    for (block, refused) in [("32", false), ("8", true)] {
        let s = Setup::new("persource-block");
        let server = s.start(
            false,
            &format!("PerSourceMaxStartups 1\nPerSourceNetBlockSize {block}"),
        );
        assert!(wait_for_log(&server, "Connection closed by 127.0.0.1", 10));
        let t0 = Instant::now();
        while !children_of(server.child.id()).is_empty() && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut held = connect_from([127, 0, 0, 1], server.port);
        held.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut b = [0u8; 64];
        assert!(held.read(&mut b).unwrap() > 0);
        // 127.0.0.2 is another /32 but the same /8.
        let other = first_line(connect_from([127, 0, 0, 2], server.port));
        if refused {
            assert_eq!(other, "Not allowed at this time\r\n", "block {block}");
            assert!(server
                .log_text()
                .contains("from 127.0.0.0/8: at PerSourceMaxStartups 1"));
        } else {
            assert!(other.starts_with("SSH-2.0-"), "block {block}: {other:?}");
        }
    }
}
