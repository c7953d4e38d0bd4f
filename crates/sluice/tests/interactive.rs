//! Interactive sessions with ptys, driven through a pty this test owns
//! (openpty; the client is its session leader, so resizing the master sends
//! it SIGWINCH): sluice->sluiced, ssh->sluiced and sluice->sshd each get a
//! shell on /dev/pts/N with the size set, follow a resize, survive ^C of a
//! sleep, and pass `exit 3` on; `~.` disconnects sluice with 255. A raw
//! protocol client sends malformed pty-reqs and a window-change flood.

mod common;
mod pty_term;
use common::*;
use pty_term::Term;
use sluice_proto::crypto::SystemRng;
use sluice_proto::msg::ChannelRequestKind;
use sluice_proto::{ClientConfig, Connection, Event};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

/// A shell through the client: tty, sizes, ^C, exit status.
fn shell_checks(openssh_client: bool, openssh_server: bool) {
    let label = format!(
        "{}->{}",
        if openssh_client { "ssh" } else { "sluice" },
        if openssh_server { "sshd" } else { "sluiced" }
    );
    let s = Setup::new("tty");
    let server = s.start(openssh_server, "");
    let mut t = Term::spawn(s.client(openssh_client, &server, &[]), 24, 80);
    let out = t.run("tty", "T");
    assert!(out.contains("/dev/pts/"), "{label}: tty said: {out}");
    let out = t.run("stty size", "S");
    assert!(out.contains("24 80"), "{label}: size: {out}");
    // The new size travels as window-change; poll until the shell sees it.
    t.resize(30, 100);
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let out = t.run("stty size", "R");
        if out.contains("30 100") {
            break;
        }
        assert!(Instant::now() < end, "{label}: resize not seen: {out}");
    }
    let out = t.run("echo $TERM", "E");
    assert!(out.contains("xterm"), "{label}: TERM: {out}");
    // ^C ends the sleep; the shell goes on (typed-ahead lines may be
    // flushed by the interrupt, so ask again until it answers).
    // The remote shell runs here: wait until the sleep (its length tells
    // the tests apart) is the terminal's foreground job ('+' in ps), or
    // the ^C could reach the shell before it handed the terminal over.
    let secs = 100 + u32::from(openssh_client) + 2 * u32::from(openssh_server);
    t.send(format!("sleep {secs}\r").as_bytes());
    let end = Instant::now() + Duration::from_secs(30);
    let pattern = format!("sleep {secs}");
    loop {
        let ps = Command::new("ps")
            .args(["-C", "sleep", "-o", "stat=,args="])
            .output()
            .unwrap();
        let ps = String::from_utf8_lossy(&ps.stdout).into_owned();
        if ps.lines().any(|l| {
            l.trim_end().ends_with(&pattern)
                && l.split_whitespace()
                    .next()
                    .is_some_and(|st| st.contains('+'))
        }) {
            break;
        }
        assert!(
            Instant::now() < end,
            "{label}: sleep never ran:\n{}",
            t.text()
        );
        t.read_some(50);
    }
    t.send(b"\x03");
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        t.send(b"echo C$((6*7))\r");
        let hay = Instant::now() + Duration::from_secs(2);
        let mut seen = false;
        while Instant::now() < hay && !seen {
            t.read_some(100);
            seen = String::from_utf8_lossy(&t.buf).contains("C42");
        }
        if seen {
            break;
        }
        assert!(
            Instant::now() < end,
            "{label}: ^C did not end the sleep:\n{}",
            t.text()
        );
    }
    t.send(b"exit 3\r");
    let st = t.wait(30);
    assert_eq!(
        st.code(),
        Some(3),
        "{label}: exit status; output:\n{}",
        t.text()
    );
}

#[test]
fn shell_sluice_to_sluiced() {
    shell_checks(false, false);
}

#[test]
fn shell_ssh_to_sluiced() {
    if missing("ssh") {
        return;
    }
    shell_checks(true, false);
}

#[test]
fn shell_sluice_to_sshd() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    shell_checks(false, true);
}

#[test]
fn escape_dot_disconnects_with_255() {
    for openssh_server in [false, true] {
        if openssh_server && missing("/usr/sbin/sshd") {
            return;
        }
        let s = Setup::new("esc");
        let server = s.start(openssh_server, "");
        let mut t = Term::spawn(s.client(false, &server, &[]), 24, 80);
        t.run("true", "D");
        // `~` only counts after a newline: this one is sent as text.
        t.send(b"echo a~.b\r");
        t.expect("a~.b\r\n", 30);
        // `~?` lists the escapes, `~^Z` suspends (a no-op here: the client
        // leads an orphaned process group) and the session goes on.
        t.send(b"\r~?");
        t.expect("escapes are only recognized immediately after newline", 30);
        t.send(b"\r~\x1a");
        t.expect("[suspend ssh]", 30);
        t.run("true", "U");
        assert!(t.lflag_raw(), "raw mode again after the suspend");
        // `~v` and `~V` step the log level (from the test's ERROR), `~R`
        // re-keys at once (its completion is a debug1 line).
        t.send(b"\r~v");
        t.expect("~v [LogLevel INFO]", 30);
        t.send(b"\r~v\r~v");
        t.expect("~v [LogLevel DEBUG1]", 30);
        t.send(b"\r~R");
        t.expect("rekey completed", 30);
        t.send(b"\r~V");
        t.expect("~V [LogLevel VERBOSE]", 30);
        t.run("true", "R");
        t.send(b"\r~.");
        let st = t.wait(30);
        assert_eq!(st.code(), Some(255), "output:\n{}", t.text());
        assert!(!t.lflag_raw(), "terminal left raw after ~.");
    }
}

#[test]
fn terminal_restored_on_exit_and_on_sigterm() {
    let s = Setup::new("restore");
    let server = s.start(false, "");
    for kill in [false, true] {
        let mut t = Term::spawn(s.client(false, &server, &[]), 24, 80);
        t.run("true", "K");
        assert!(t.lflag_raw(), "not raw during the session");
        if kill {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(t.child.id() as i32, libc::SIGTERM) };
        } else {
            t.send(b"exit\r");
        }
        let st = t.wait(30);
        assert!(kill != st.success(), "{st:?}");
        assert!(!t.lflag_raw(), "terminal left raw (kill {kill})");
    }
}

#[test]
fn dash_t_and_stdin_not_a_terminal() {
    let s = Setup::new("ttyflag");
    let server = s.start(false, "");
    // -t with a command: a pty (stdin is our pty).
    let mut c = s.client(false, &server, &["-t"]);
    c.arg("tty");
    let mut t = Term::spawn(c, 24, 80);
    let st = t.wait(30);
    assert!(
        st.success() && t.text().contains("/dev/pts/"),
        "{}",
        t.text()
    );
    // Without -t a command gets none.
    let mut c = s.client(false, &server, &[]);
    c.arg("tty");
    let mut t = Term::spawn(c, 24, 80);
    t.wait(30);
    assert!(t.text().contains("not a tty"), "{}", t.text());
    // stdin a pipe: no pty, and with -t (or for a shell) ssh's notice at
    // the default LogLevel; -T keeps quiet. Both clients say the same.
    for openssh in [false, true] {
        for (flags, cmd, notice) in [
            (&["-t"][..], Some("tty"), true),
            (&[][..], None, true),
            (&["-T"][..], None, false),
            (&[][..], Some("tty"), false),
        ] {
            // Default LogLevel (INFO): the "will not be allocated" line.
            let mut c = s.client_at(openssh, &server, "INFO", flags);
            if let Some(cmd) = cmd {
                c.arg(cmd);
            }
            let out = run(c, b"tty\n", 30);
            let (o, e) = (
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
            );
            let what = format!("openssh {openssh} {flags:?} {cmd:?}: {o} {e}");
            assert!(o.contains("not a tty"), "{what}");
            assert_eq!(
                e.contains(
                    "Pseudo-terminal will not be allocated because stdin is not a terminal."
                ),
                notice,
                "{what}"
            );
        }
    }
}

/// An in-process client: authenticate, open a session, then the test sends
/// requests by hand.
struct Raw {
    conn: Connection,
    sock: TcpStream,
    inbuf: Vec<u8>,
    data: Vec<u8>,
}

impl Raw {
    fn connect(s: &Setup, port: u16) -> (Raw, sluice_proto::ChannelId) {
        let key = sluice::keys::identity::load(&s.user_key, &mut |_| None).unwrap();
        let conn = Connection::client(ClientConfig::default(), Box::new(SystemRng));
        let sock = TcpStream::connect(("127.0.0.1", port)).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let mut r = Raw {
            conn,
            sock,
            inbuf: Vec::new(),
            data: Vec::new(),
        };
        let user = user();
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            assert!(Instant::now() < end, "session setup timed out");
            for e in r.step() {
                match e {
                    Event::HostKey { .. } => r.conn.accept_host_key(),
                    Event::AuthReady => r
                        .conn
                        .auth_publickey_sign(&user, "ssh-ed25519", &key)
                        .unwrap(),
                    Event::Authenticated { .. } => {
                        r.conn.open_session().unwrap();
                    }
                    Event::ChannelOpened(id) => return (r, id),
                    _ => {}
                }
            }
        }
    }

    /// Sends what is queued, reads what came; returns the events.
    fn step(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        self.conn.poll_transmit(Instant::now(), &mut out);
        self.sock.write_all(&out).unwrap();
        let mut buf = [0u8; 65536];
        match self.sock.read(&mut buf) {
            Ok(0) => panic!("server closed the connection"),
            Ok(n) => self.inbuf.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
        loop {
            let r = self
                .conn
                .handle_input(Instant::now(), &mut self.inbuf)
                .unwrap();
            if let Some(d) = r.data {
                self.data.extend_from_slice(d.data);
            }
            let n = r.consumed;
            if n == 0 {
                break;
            }
            self.inbuf.drain(..n);
        }
        std::iter::from_fn(|| self.conn.poll_event()).collect()
    }

    /// Sends a request wanting a reply and returns the verdict.
    fn ask(&mut self, id: sluice_proto::ChannelId, req: ChannelRequestKind) -> bool {
        self.conn.channel_request(id, req, true).unwrap();
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            assert!(Instant::now() < end, "no reply");
            for e in self.step() {
                if let Event::ChannelReply { success, .. } = e {
                    return success;
                }
            }
        }
    }
}

fn pty_req(modes: Vec<u8>, rows: u32, cols: u32) -> ChannelRequestKind {
    ChannelRequestKind::PtyReq {
        term: "vt100".into(),
        cols,
        rows,
        width_px: 0,
        height_px: 0,
        modes,
    }
}

#[test]
fn bad_pty_requests_and_window_change_flood() {
    let s = Setup::new("ttybad");
    let server = s.start(false, "");
    let (mut r, id) = Raw::connect(&s, server.port);
    // Truncated argument, over-long string: refused, the connection lives.
    assert!(
        !r.ask(id, pty_req(vec![53, 0, 0], 24, 80)),
        "truncated modes"
    );
    assert!(
        !r.ask(id, pty_req(vec![53, 0, 0, 0, 1].repeat(1000), 24, 80)),
        "long modes"
    );
    // Unknown opcodes are skipped, parsing stops at 160+; absurd sizes clamp.
    let modes = vec![20, 0, 0, 0, 7, 53, 0, 0, 0, 0, 200, 1, 2, 3];
    assert!(
        r.ask(id, pty_req(modes, u32::MAX, u32::MAX)),
        "valid pty-req"
    );
    assert!(!r.ask(id, pty_req(vec![0], 24, 80)), "second pty-req");
    for i in 0..5000u32 {
        let req = ChannelRequestKind::WindowChange {
            cols: 20 + i % 200,
            rows: 10 + i % 50,
            width_px: u32::MAX,
            height_px: i,
        };
        r.conn.channel_request(id, req, false).unwrap();
        if i % 500 == 0 {
            r.step();
        }
    }
    let last = ChannelRequestKind::WindowChange {
        cols: 111,
        rows: 33,
        width_px: 0,
        height_px: 0,
    };
    r.conn.channel_request(id, last, false).unwrap();
    let cmd = b"stty size; stty -a | grep -o -- '-echo ' ; echo done-$((6*7))".to_vec();
    assert!(r.ask(id, ChannelRequestKind::Exec { command: cmd }), "exec");
    let end = Instant::now() + Duration::from_secs(30);
    let mut status = None;
    while !String::from_utf8_lossy(&r.data).contains("done-42") || status.is_none() {
        assert!(
            Instant::now() < end,
            "no output: {}",
            String::from_utf8_lossy(&r.data)
        );
        for e in r.step() {
            if let Event::ChannelRequest {
                request: ChannelRequestKind::ExitStatus { status: st },
                ..
            } = e
            {
                status = Some(st);
            }
        }
    }
    let out = String::from_utf8_lossy(&r.data).into_owned();
    assert!(out.contains("33 111"), "{out}");
    assert!(out.contains("-echo"), "modes not applied: {out}");
    assert_eq!(status, Some(0));
    let log = server.log_text();
    assert!(log.contains("terminal modes truncated"), "{log}");
    assert!(log.contains("terminal modes too long"), "{log}");
}

#[test]
fn permit_tty_no_refuses_the_pty() {
    let s = Setup::new("nopty");
    let server = s.start(false, "PermitTTY no");
    for openssh in [false, true] {
        let mut c = s.client(openssh, &server, &["-tt"]);
        c.arg("tty");
        let mut t = Term::spawn(c, 24, 80);
        let st = t.wait(30);
        // ssh ends the session when an explicitly asked-for pty is refused.
        assert!(
            t.text()
                .contains("PTY allocation request failed on channel 0"),
            "openssh {openssh}: {}",
            t.text()
        );
        assert!(!st.success(), "openssh {openssh}: {}", t.text());
    }
}
