//! Login records of a pty session, as sshd keeps them: while Debian's
//! `ssh -tt` holds a shell, `who` (utmp) lists the user on that tty from
//! 127.0.0.1, and lastlog names the tty and address; after `exit` `who`
//! no longer lists it, and `last` (wtmp) shows the login ended. Needs root
//! (a throwaway user; the records are root's files).

mod common;
mod privsep_util;

use common::*;
use privsep_util::*;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const UTMP: &str = "/var/run/utmp";

/// The client, killed if the test fails while its session runs (the
/// session then ends and its logout is recorded).
struct Client(std::process::Child);

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// utmp as Debian's packaging leaves it, if the machine has none.
fn ensure_utmp() {
    if std::path::Path::new(UTMP).exists() {
        return;
    }
    std::fs::write(UTMP, b"").unwrap();
    std::fs::set_permissions(UTMP, std::fs::Permissions::from_mode(0o664)).unwrap();
    let _ = Command::new("chgrp").args(["utmp", UTMP]).status();
}

/// `who`'s lines naming `user`.
fn who(user: &str) -> Vec<String> {
    let out = Command::new("who").output().expect("who");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.split_whitespace().next() == Some(user))
        .map(str::to_owned)
        .collect()
}

/// The (line, host) of `uid`'s lastlog slot, if the file has one.
fn lastlog(uid: u32) -> Option<(String, String)> {
    let f = std::fs::File::open("/var/log/lastlog").ok()?;
    let mut rec = [0u8; 292];
    f.read_exact_at(&mut rec, u64::from(uid) * 292).ok()?;
    let text = |b: &[u8]| {
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        String::from_utf8_lossy(&b[..end]).into_owned()
    };
    Some((text(&rec[4..36]), text(&rec[36..])))
}

#[test]
fn pty_session_is_in_utmp_wtmp_and_lastlog() {
    if skip() {
        return;
    }
    ensure_utmp();
    // Eight characters at most, so `last` shows the name whole.
    let u = TestUser::named("slu");
    let s = Setup::new("logins");
    let server = s.start(false, "");
    let mut c = s.client(true, &server, &["-tt", "-l", &u.name]);
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut client = Client(c.spawn().unwrap());
    let mut stdin = client.0.stdin.take().unwrap();
    let stdout = client.0.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    stdin.write_all(b"echo TTY=$(tty)\n").unwrap();
    let mut seen = Vec::new();
    let tty = loop {
        let Ok(line) = rx.recv_timeout(Duration::from_secs(30)) else {
            panic!(
                "no tty from the shell; output {seen:?}; server log:\n{}",
                server.log_text()
            );
        };
        // After the prompt; the typed line (echoed) has `$(tty)` instead.
        if let Some((_, t)) = line.trim().split_once("TTY=/dev/") {
            break t.to_owned();
        }
        seen.push(line);
    };

    let lines = who(&u.name);
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&format!(" {tty} ")) && l.ends_with("(127.0.0.1)")),
        "who should list {} on {tty} from 127.0.0.1: {lines:?}",
        u.name
    );
    if let Some((line, host)) = lastlog(u.uid) {
        assert_eq!((line.as_str(), host.as_str()), (tty.as_str(), "127.0.0.1"));
    }

    stdin.write_all(b"exit\n").unwrap();
    drop(stdin);
    let status = wait_for("the client to end", || client.0.try_wait().unwrap());
    assert!(status.success(), "ssh -tt: {status}");
    // The monitor records the logout once the session's process is reaped.
    wait_for("the logout in utmp", || {
        who(&u.name).is_empty().then_some(())
    });

    if std::path::Path::new("/usr/bin/last").exists() {
        let out = Command::new("last")
            .args(["-w", "-f", "/var/log/wtmp", &u.name])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let entry = text
            .lines()
            .find(|l| l.starts_with(&u.name) && l.contains(&tty))
            .unwrap_or_else(|| panic!("last should show {} on {tty}: {text}", u.name));
        assert!(entry.contains("127.0.0.1"), "{entry}");
        assert!(
            !entry.contains("still logged in"),
            "no logout in wtmp: {entry}"
        );
    }
}
