//! Privilege separation after login: the pty comes from the monitor and
//! is the user's; a killed monitor ends its connection; authorized_keys
//! planted as a FIFO cannot starve the listener. Needs root (throwaway
//! users are created and removed).

mod common;
mod privsep_util;

use common::*;
use privsep_util::*;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The post-auth process of `user` below the listener (a `sluiced` that
/// runs as the user) and its parent, the connection's monitor.
fn postauth_and_monitor(listener: u32, uid: u32) -> Option<(u32, u32)> {
    descendants(listener).into_iter().find_map(|p| {
        let comm = std::fs::read_to_string(format!("/proc/{p}/comm")).ok()?;
        let (u, _) = uid_and_seccomp(p)?;
        if u != uid || comm.trim() != "sluiced" {
            return None;
        }
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
        let rest = stat.rsplit_once(')')?.1;
        let ppid = rest.split_whitespace().nth(1)?.parse().ok()?;
        Some((p, ppid))
    })
}

#[test]
fn pty_comes_from_the_monitor_and_is_the_users() {
    if skip() {
        return;
    }
    let u = TestUser::named("slpt");
    let s = Setup::new("privsep-pty");
    let server = s.start(false, "");
    // Through a pty the session's stdin is the terminal: the script is
    // typed, and `exit` ends the shell.
    let script = b"tty; stat -c 'owner=%U group=%G mode=%a' $(tty); exit\n";
    let mut c = s.client(true, &server, &["-tt", "-l", &u.name]);
    c.stdin(Stdio::piped());
    let out = run(c, script, 30);
    ok(&out, "ssh -tt");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("/dev/pts/"), "{text}");
    let want = format!("owner={} group=tty mode=620", u.name);
    assert!(text.contains(&want), "want {want} in {text}");
    let log = server.log_text();
    assert!(
        log.contains(&format!("monitor: allocated a pty for {}", u.name)),
        "{log}"
    );
}

#[test]
fn killed_monitor_ends_its_connection() {
    if skip() {
        return;
    }
    let u = TestUser::named("slmk");
    let s = Setup::new("privsep-monitor-kill");
    let server = s.start(false, "");
    let listener = server.child.id();
    let mut c = s.client(false, &server, &["-l", &u.name]);
    c.arg("sleep 60");
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut client = c.spawn().unwrap();
    let (_user_proc, monitor) = wait_for("the post-auth process", || {
        postauth_and_monitor(listener, u.uid)
    });
    let t = Instant::now();
    // SAFETY: signalling a process of the server under test.
    unsafe { libc::kill(monitor as i32, libc::SIGKILL) };
    let status = wait_for("the client to end", || client.try_wait().unwrap());
    assert!(!status.success());
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    // The listener goes on.
    let mut c = s.client(false, &server, &[]);
    c.arg("echo still serving");
    c.stdin(Stdio::null());
    let out = run(c, b"", 30);
    ok(&out, "after the monitor's death");
}

#[test]
fn fifo_probes_do_not_starve_other_users() {
    if skip() {
        return;
    }
    let victim = TestUser::named("slfv");
    let other = TestUser::named("slfo");
    let s = Setup::new("privsep-fifo-load");
    let fifo = s.dir.path("victim_keys");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    // The default MaxStartups (10:30:100): hung probes would fill it.
    let extra = format!(
        "Match User {}\n  AuthorizedKeysFile {}\n",
        victim.name,
        fifo.display()
    );
    let server = s.start(false, &extra);

    let t = Instant::now();
    let probes: Vec<_> = (0..100)
        .map(|_| {
            let mut c = s.client(false, &server, &["-l", &victim.name]);
            c.arg("true");
            c.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            c.spawn().unwrap()
        })
        .collect();
    for mut p in probes {
        let st = wait_for("a probe to end", || p.try_wait().unwrap());
        assert!(!st.success(), "a FIFO authorized_keys let a login through");
    }
    let took = t.elapsed();
    assert!(took < Duration::from_secs(60), "100 probes took {took:?}");
    for i in 0..5 {
        let mut c = s.client(false, &server, &["-l", &other.name]);
        c.arg("echo in");
        c.stdin(Stdio::null());
        let out = run(c, b"", 30);
        ok(&out, &format!("login {i} of 5 after the probes"));
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "in");
    }
    let log = server.log_text();
    let line = format!("authorized keys {} is not a regular file", fifo.display());
    assert!(log.matches(&line).count() >= 1, "{log}");
    eprintln!("100 FIFO probes ended in {took:?}");
}
