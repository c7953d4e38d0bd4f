//! Privilege separation in sluiced: the process parsing a fresh connection
//! is unprivileged and under seccomp; what a user does after login (Unix
//! and TCP forwards, remote listeners) carries the user's uid and gid; a
//! pre-auth child killed mid key exchange or mid authentication costs only
//! its own connection. Needs root (a throwaway user is created and removed).

mod common;
mod privsep_util;

use common::*;
use privsep_util::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixListener;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Connects and exchanges version lines only; the server's KEXINIT follows.
fn banner_only(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert!(line.starts_with("SSH-2.0-"), "{line}");
    (&s).write_all(b"SSH-2.0-privsep_test\r\n").unwrap();
    s
}

#[test]
fn preauth_process_is_unprivileged_and_filtered() {
    if skip() {
        return;
    }
    let s = Setup::new("privsep-sandbox");
    let server = s.start(false, "");
    let conn = banner_only(server.port);
    let kids = wait_for("a sandboxed child", || {
        Some(sandboxed_children(server.child.id())).filter(|k| !k.is_empty())
    });
    let t = Command::new(SLUICED)
        .args(["-T", "-f"])
        .arg(s.dir.path(&format!("server_config_{}", server.port)))
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&t.stdout).contains("\nuseprivilegeseparation sandbox\n"),
        "-T shows the separation"
    );
    // Setup::start's readiness probe made a connection too; its child may
    // have gone since: check the ones still there (ours stays).
    let _ = kids;
    let mut checked = 0;
    for k in sandboxed_children(server.child.id()) {
        let Some((uid, sc)) = uid_and_seccomp(k) else {
            continue;
        };
        let Ok(root) = std::fs::read_link(format!("/proc/{k}/root")) else {
            continue;
        };
        assert_ne!(uid, 0);
        assert_eq!(sc, 2);
        assert_eq!(root, std::path::Path::new("/run/sluiced/empty"), "chrooted");
        checked += 1;
    }
    assert!(checked >= 1, "no pre-auth child for the open connection");
    drop(conn);
}

/// One transfer through a fresh connection: `sha256sum` of random data.
fn transfer_ok(s: &Setup, server: &Server, seed: u64) {
    let data = random_data(1 << 20, seed);
    let mut c = s.client(false, server, &[]);
    c.arg("sha256sum");
    let out = run(c, &data, 30);
    ok(&out, "transfer");
    let got = String::from_utf8_lossy(&out.stdout);
    assert!(got.starts_with(&sha256(&data)), "{got}");
}

#[test]
fn killed_preauth_child_costs_only_its_connection() {
    if skip() {
        return;
    }
    let s = Setup::new("privsep-kill");
    let server = s.start(false, "PasswordAuthentication yes\nUsePAM no\n");
    let listener = server.child.id();

    // Setup::start's readiness probe had a child too: let it go first.
    wait_for("the probe's child to end", || {
        sandboxed_children(listener).is_empty().then_some(())
    });
    // During key exchange: versions exchanged, KEXINIT pending.
    let mut conn = banner_only(server.port);
    let kid = wait_for("the pre-auth child", || sandboxed_children(listener).pop());
    // SAFETY: signalling a process of the server under test.
    unsafe { libc::kill(kid as i32, libc::SIGKILL) };
    let mut sink = Vec::new();
    let _ = conn.read_to_end(&mut sink);
    transfer_ok(&s, &server, 1);

    // During authentication: the client waits on its password prompt.
    let askpass = s.dir.path("askpass.sh");
    std::fs::write(&askpass, "#!/bin/sh\nsleep 30\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&askpass, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut c = Command::new("ssh");
    c.args([
        "-F",
        "/dev/null",
        "-o",
        "StrictHostKeyChecking=no",
        "-o",
        "UserKnownHostsFile=/dev/null",
        "-o",
        "PreferredAuthentications=password",
        "-p",
        &server.port.to_string(),
        "127.0.0.1",
    ]);
    c.env("SSH_ASKPASS", &askpass)
        .env("SSH_ASKPASS_REQUIRE", "force")
        .env("DISPLAY", ":0")
        .arg("true")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut client = c.spawn().unwrap();
    // The askpass script running means key exchange is over and the
    // client is in authentication.
    wait_for("the askpass prompt", || {
        descendants(client.id()).into_iter().find(|p| {
            std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.contains("askpass"))
        })
    });
    let kid = wait_for("the pre-auth child", || sandboxed_children(listener).pop());
    // SAFETY: as above.
    unsafe { libc::kill(kid as i32, libc::SIGKILL) };
    let _ = client.kill();
    let _ = client.wait();
    transfer_ok(&s, &server, 2);
    assert!(
        server
            .log_text()
            .contains("pre-auth child killed by signal 9"),
        "{}",
        server.log_text()
    );
}

/// The uid owning a TCP socket in /proc/net/tcp with local port `port`
/// and state `state` (hex, "0A" listen, "01" established).
fn tcp_owner(port: u16, state: &str) -> Option<u32> {
    let t = std::fs::read_to_string("/proc/net/tcp").ok()?;
    t.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let local_port = f.get(1)?.rsplit_once(':')?.1;
        (u16::from_str_radix(local_port, 16).ok()? == port && *f.get(3)? == state)
            .then(|| f.get(7)?.parse().ok())
            .flatten()
    })
}

#[test]
fn forwards_carry_the_users_credentials() {
    if skip() {
        return;
    }
    let u = TestUser::new();
    let s = Setup::new("privsep-user");
    let server = s.start(false, "");
    // A Unix socket the user may connect to, reporting its peer's creds.
    let sock = s.dir.path("peercred.sock");
    let ul = UnixListener::bind(&sock).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o777)).unwrap();
    // A TCP endpoint; the forwarded connection's source port tells whose it is.
    let tl = TcpListener::bind("127.0.0.1:0").unwrap();
    let tport = tl.local_addr().unwrap().port();
    let (lu, lt, rport) = (free_port(), free_port(), free_port());
    let l1 = format!("{lu}:{}", sock.display());
    let l2 = format!("{lt}:127.0.0.1:{tport}");
    let r1 = format!("{rport}:127.0.0.1:{tport}");
    let mut c = s.client(
        false,
        &server,
        &["-N", "-l", &u.name, "-L", &l1, "-L", &l2, "-R", &r1],
    );
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut client = c.spawn().unwrap();

    let _a = wait_for("the -L unix forward", || {
        TcpStream::connect(("127.0.0.1", lu)).ok()
    });
    let (us, _) = ul.accept().unwrap();
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: cred and len are valid for SO_PEERCRED.
    let rc = unsafe {
        libc::getsockopt(
            std::os::fd::AsRawFd::as_raw_fd(&us),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    assert_eq!(rc, 0);
    assert_eq!((cred.uid, cred.gid), (u.uid, u.gid), "SO_PEERCRED");

    let _b = TcpStream::connect(("127.0.0.1", lt)).unwrap();
    let (ts, from) = tl.accept().unwrap();
    assert_eq!(tcp_owner(from.port(), "01"), Some(u.uid), "-L TCP connect");
    drop(ts);
    let owner = wait_for("the -R listener", || tcp_owner(rport, "0A"));
    assert_eq!(owner, u.uid, "-R listener");

    let _ = client.kill();
    let _ = client.wait();
}

/// `sluiced -i` (inetd: the accepted socket on stdin) is separated too:
/// the session runs, and the log shows the monitor and the post-auth
/// process as two pids.
#[test]
fn inetd_mode_is_separated() {
    if skip() || missing("systemd-socket-activate") {
        return;
    }
    let s = Setup::new("privsep-inetd");
    // A config file as Setup writes it, served by the inetd stand-in.
    let server = s.start(false, "");
    let cfg = s.dir.path(&format!("server_config_{}", server.port));
    drop(server);
    let port = free_port();
    let log = s.dir.path("inetd.log");
    let mut inetd = Command::new("systemd-socket-activate")
        .args(["-a", "--inetd", "-l", &format!("127.0.0.1:{port}")])
        .arg(SLUICED)
        .args(["-i", "-e", "-f"])
        .arg(&cfg)
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    wait_for("the inetd listener", || {
        TcpStream::connect(("127.0.0.1", port)).ok()
    });
    let mut c = Command::new(SLUICE);
    c.args([
        "-F",
        "/dev/null",
        "-o",
        "StrictHostKeyChecking=no",
        "-o",
        "BatchMode=yes",
        "-o",
        "UserKnownHostsFile=/dev/null",
        "-i",
    ])
    .arg(&s.user_key)
    .args(["-p", &port.to_string(), "127.0.0.1", "echo separated"]);
    let out = run(c, b"", 30);
    ok(&out, "sluice to sluiced -i");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "separated");
    // The post-auth process logs its end after the client is gone.
    let text = wait_for("the post-auth process's last line", || {
        std::fs::read_to_string(&log)
            .ok()
            .filter(|t| t.contains("from user ") || t.contains("by user "))
    });
    let _ = inetd.kill();
    let _ = inetd.wait();
    let pid_of = |needle: &str| {
        text.lines()
            .find(|l| l.contains(needle))
            .and_then(|l| l.split_once("]:"))
            .map(|(p, _)| p.to_owned())
    };
    let monitor = pid_of("Accepted publickey").expect("monitor's line");
    let user = pid_of("from user ")
        .or_else(|| pid_of("by user "))
        .expect("post-auth line");
    assert_ne!(monitor, user, "{text}");
}
