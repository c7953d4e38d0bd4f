//! sshd_config keywords sluiced used to accept without acting on: those it
//! cannot honour stop `sluiced -t`, `-T` and startup with "unsupported
//! option X at FILE:LINE" (exit 255) unless set to the value that turns
//! them off; those implemented since (RequiredRSASize, AuthenticationMethods
//! (multi-step lists in tests/auth_methods.rs), AddressFamily,
//! StreamLocalBindMask, TCPKeepAlive) behave as with Debian's sshd.

mod common;
mod fwd_util;

use common::*;
use fwd_util::{connect_retry, tcp_echo};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn sluiced(args: &[&str], cfg: &std::path::Path) -> Output {
    let mut c = Command::new(SLUICED);
    c.args(args).arg("-f").arg(cfg);
    run(c, b"", 20)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn unsupported_values_refuse_to_start() {
    let s = Setup::new("kw-refuse");
    let d = s.dir.0.display().to_string();
    let head = format!("HostKey {d}/host_ed25519\nListenAddress 127.0.0.1\nPidFile none\n");
    let cases = [
        (
            "AuthenticationMethods publickey,keyboard-interactive:bsdauth",
            "AuthenticationMethods publickey,keyboard-interactive:pam",
        ),
        ("UseDNS yes", "UseDNS no"),
        ("RDomain vrf1", "RDomain none"),
        (
            "Match User nobody\n  RDomain vrf1",
            "Match User nobody\n  RDomain none",
        ),
    ];
    for (bad, off) in cases {
        let kw = bad
            .lines()
            .last()
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap();
        let cfg = s.dir.path("refused");
        std::fs::write(&cfg, format!("{head}{bad}\n")).unwrap();
        let line = head.lines().count() + bad.lines().count();
        let want = format!("unsupported option {kw} at {}:{line}: ", cfg.display());
        for args in [&["-t"][..], &["-T"], &["-D", "-e"]] {
            let out = sluiced(args, &cfg);
            assert_eq!(out.status.code(), Some(255), "{bad} {args:?}");
            assert!(
                text(&out.stderr).contains(&want),
                "{args:?}: {}",
                text(&out.stderr)
            );
            assert!(out.stdout.is_empty(), "{bad} {args:?}");
        }
        std::fs::write(&cfg, format!("{head}{off}\n")).unwrap();
        let out = sluiced(&["-t"], &cfg);
        assert_eq!(out.status.code(), Some(0), "{off}: {}", text(&out.stderr));
    }
    // On the command line too.
    let cfg = s.dir.path("plain");
    std::fs::write(&cfg, &head).unwrap();
    let out = sluiced(&["-t", "-o", "RDomain=vrf1"], &cfg);
    assert_eq!(out.status.code(), Some(255));
    assert!(
        text(&out.stderr).contains("unsupported option RDomain at command-line:0"),
        "{}",
        text(&out.stderr)
    );
    // An unsatisfiable AuthenticationMethods stops sshd too.
    std::fs::write(
        &cfg,
        format!("{head}PasswordAuthentication no\nAuthenticationMethods password\n"),
    )
    .unwrap();
    let out = sluiced(&["-t"], &cfg);
    assert_eq!(out.status.code(), Some(255));
    assert!(text(&out.stderr)
        .contains("AuthenticationMethods cannot be satisfied by enabled authentication methods"));
    if !missing("/usr/sbin/sshd") {
        let mut c = Command::new("/usr/sbin/sshd");
        c.arg("-t").arg("-f").arg(&cfg);
        assert_eq!(run(c, b"", 20).status.code(), Some(255));
    }
    // `none` is a method to sshd (on until used): a global `none` list
    // starts, and a Match block may give the real one (OpenSSH's
    // regression test multipubkey does so).
    std::fs::write(
        &cfg,
        format!(
            "{head}AuthenticationMethods none\nPubkeyAuthentication no\n\
             Match all\nPubkeyAuthentication yes\nAuthenticationMethods publickey,publickey\n"
        ),
    )
    .unwrap();
    let out = sluiced(&["-t"], &cfg);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    if !missing("/usr/sbin/sshd") {
        let mut c = Command::new("/usr/sbin/sshd");
        c.arg("-t").arg("-f").arg(&cfg);
        assert_eq!(run(c, b"", 20).status.code(), Some(0));
    }
}

/// ssh -v's "Authentications that can continue" for a client offering
/// nothing usable, and whether the test key logs in.
fn methods_and_login(s: &Setup, server: &Server) -> (String, bool) {
    let mut c = s.client_at(
        true,
        server,
        "DEBUG1",
        &[
            "-o",
            "PreferredAuthentications=none",
            "-o",
            "NumberOfPasswordPrompts=0",
        ],
    );
    c.arg("true");
    let out = run(c, b"", 30);
    let err = text(&out.stderr);
    let methods = err
        .lines()
        .find_map(|l| l.split("Authentications that can continue: ").nth(1))
        .unwrap_or_default()
        .trim()
        .to_owned();
    let mut c = s.client(true, server, &[]);
    c.arg("echo in");
    let login = run(c, b"", 30).stdout == b"in\n";
    (methods, login)
}

#[test]
fn authentication_methods_of_single_methods() {
    let s = Setup::new("kw-authmethods");
    let sshd = !missing("/usr/sbin/sshd");
    for openssh in [false, true] {
        if openssh && !sshd {
            continue;
        }
        let label = if openssh { "sshd" } else { "sluiced" };
        let server = s.start(
            openssh,
            "PasswordAuthentication yes\nAuthenticationMethods publickey",
        );
        assert_eq!(
            methods_and_login(&s, &server),
            ("publickey".to_owned(), true),
            "{label}"
        );
        let server = s.start(
            openssh,
            "PasswordAuthentication yes\nKbdInteractiveAuthentication no\nAuthenticationMethods password",
        );
        assert_eq!(
            methods_and_login(&s, &server),
            ("password".to_owned(), false),
            "{label}: the key is not enough"
        );
    }
    // Per user, through Match (sluiced only: the harness adds UsePAM to
    // sshd's configuration, which a Match block cannot hold).
    let server = s.start(
        false,
        &format!(
            "PasswordAuthentication yes\nMatch User {}\n  AuthenticationMethods password",
            user()
        ),
    );
    assert!(!methods_and_login(&s, &server).1, "Match");
    let server = s.start(
        false,
        "PasswordAuthentication yes\nMatch User nosuchuser\n  AuthenticationMethods password",
    );
    assert!(methods_and_login(&s, &server).1, "Match for another user");
}

#[test]
fn required_rsa_size_for_user_and_host_keys() {
    let s = Setup::new("kw-rsa");
    let rsa = s.dir.path("id_rsa2048");
    let st = Command::new("ssh-keygen")
        .args(["-q", "-N", "", "-t", "rsa", "-b", "2048", "-f"])
        .arg(&rsa)
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::copy(s.dir.path("id_rsa2048.pub"), s.dir.path("authorized_keys")).unwrap();
    let sshd = !missing("/usr/sbin/sshd");
    for openssh in [false, true] {
        if openssh && !sshd {
            continue;
        }
        for (size, ok) in [
            ("", true),
            ("RequiredRSASize 2048", true),
            ("RequiredRSASize 3072", false),
        ] {
            let server = s.start(openssh, size);
            let key = rsa.display().to_string();
            let mut c = s.client(true, &server, &["-i", &key]);
            c.arg("echo in");
            let out = run(c, b"", 30);
            assert_eq!(out.stdout == b"in\n", ok, "openssh {openssh}: {size}");
            if !openssh && !ok {
                assert!(server
                    .log_text()
                    .contains("refusing RSA key: Invalid key length"));
            }
        }
    }
    // Host keys: a small RSA key is skipped (error logged); none left stops it.
    let d = s.dir.0.display().to_string();
    let cfg = s.dir.path("hostrsa");
    std::fs::write(
        &cfg,
        format!("HostKey {d}/host_rsa\nHostKey {d}/host_ed25519\nRequiredRSASize 4096\n"),
    )
    .unwrap();
    let out = sluiced(&["-t"], &cfg);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains(&format!("Host key {d}/host_rsa: Invalid key length")),
        "{}",
        text(&out.stderr)
    );
    let out = sluiced(&["-T"], &cfg);
    assert!(text(&out.stdout).contains("\nrequiredrsasize 4096\n"));
    std::fs::write(
        &cfg,
        format!("HostKey {d}/host_rsa\nRequiredRSASize 4096\n"),
    )
    .unwrap();
    let out = sluiced(&["-t"], &cfg);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no hostkeys available -- exiting."));
    // The server offers only the keys it kept.
    let server = s.start(false, "RequiredRSASize 4096");
    let out = run(
        {
            let mut c = s.client_at(
                true,
                &server,
                "INFO",
                &["-o", "HostKeyAlgorithms=rsa-sha2-256"],
            );
            c.arg("true");
            c
        },
        b"",
        30,
    );
    assert_eq!(out.status.code(), Some(255));
    assert!(
        text(&out.stderr).contains("no matching host key type found"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn address_family_inet() {
    let s = Setup::new("kw-family");
    let echo4 = tcp_echo();
    let l6 = std::net::TcpListener::bind("[::1]:0");
    let Ok(l6) = l6 else {
        eprintln!("skipping: no IPv6 loopback");
        return;
    };
    let echo6 = l6.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for c in l6.incoming().flatten() {
            let mut r = c.try_clone().unwrap();
            let mut w = c;
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut r, &mut w);
                let _ = w.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    let sshd = !missing("/usr/sbin/sshd");
    for openssh in [false, true] {
        if openssh && !sshd {
            continue;
        }
        let server = s.start(openssh, "AddressFamily inet");
        let opens = |target: &str| {
            let mut c = s.client(true, &server, &["-W", target]);
            c.arg("true");
            run(c, b"ping\n", 30).stdout == b"ping\n"
        };
        assert!(opens(&format!("127.0.0.1:{echo4}")), "openssh {openssh}");
        assert!(
            !opens(&format!("[::1]:{echo6}")),
            "openssh {openssh}: IPv6 target"
        );
        // -R "localhost": the IPv4 loopback only.
        let port = free_port();
        let spec = format!("localhost:{port}:127.0.0.1:{echo4}");
        let mut c = s.client(
            true,
            &server,
            &["-o", "ExitOnForwardFailure=yes", "-R", &spec],
        );
        c.arg("sleep 20")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = c.spawn().unwrap();
        drop(connect_retry(port));
        assert!(
            std::net::TcpStream::connect(("::1", port)).is_err(),
            "openssh {openssh}: -R listens on ::1"
        );
        let _ = child.kill();
        let _ = child.wait();
    }
    // A ListenAddress of the other family cannot be served.
    let d = s.dir.0.display().to_string();
    let cfg = s.dir.path("v6");
    std::fs::write(
        &cfg,
        format!("HostKey {d}/host_ed25519\nAddressFamily inet\nListenAddress ::1\nPidFile none\nPort {}\n", free_port()),
    )
    .unwrap();
    let out = sluiced(&["-D", "-e"], &cfg);
    assert_eq!(out.status.code(), Some(255));
    assert!(
        text(&out.stderr).contains("ListenAddress ::1"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn stream_local_bind_mask() {
    let s = Setup::new("kw-mask");
    let sshd = !missing("/usr/sbin/sshd");
    for openssh in [false, true] {
        if openssh && !sshd {
            continue;
        }
        for (cfg, mode) in [
            ("", 0o600),
            ("StreamLocalBindMask 0111", 0o666),
            ("StreamLocalBindMask 0177", 0o600),
        ] {
            let server = s.start(openssh, cfg);
            let sock = s.dir.path(&format!("fwd-{}.sock", server.port));
            let spec = format!("{}:127.0.0.1:1", sock.display());
            let mut c = s.client(
                true,
                &server,
                &["-o", "ExitOnForwardFailure=yes", "-R", &spec],
            );
            c.arg("sleep 20")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let mut child = c.spawn().unwrap();
            let deadline = Instant::now() + Duration::from_secs(15);
            while !sock.exists() {
                assert!(Instant::now() < deadline, "no socket");
                std::thread::sleep(Duration::from_millis(20));
            }
            let got = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
            let _ = child.kill();
            let _ = child.wait();
            assert_eq!(got, mode, "openssh {openssh}: {cfg:?}");
        }
    }
}

/// Whether the server's end of the connection from a held session has a
/// keepalive timer (`ss -o`: `timer:(keepalive,...)`).
fn server_keepalive(s: &Setup, server: &Server) -> bool {
    let mut c = s.client(true, server, &[]);
    c.arg("sleep 20")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let found = loop {
        let out = Command::new("ss")
            .args(["-tnoH", "state", "established"])
            .arg(format!("( sport = :{} )", server.port))
            .output()
            .unwrap();
        let t = text(&out.stdout);
        if t.contains("keepalive") {
            break true;
        }
        if Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = child.kill();
    let _ = child.wait();
    found
}

#[test]
fn tcp_keep_alive() {
    if missing("ss") {
        return;
    }
    let s = Setup::new("kw-keepalive");
    let sshd = !missing("/usr/sbin/sshd");
    for openssh in [false, true] {
        if openssh && !sshd {
            continue;
        }
        let server = s.start(openssh, "");
        assert!(
            server_keepalive(&s, &server),
            "openssh {openssh}: default yes"
        );
    }
    // Off: no timer once the session runs (checked a few seconds in).
    let server = s.start(false, "TCPKeepAlive no");
    let mut c = s.client(true, &server, &[]);
    c.arg("sleep 20")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let out = Command::new("ss")
        .args(["-tnoH", "state", "established"])
        .arg(format!("( sport = :{} )", server.port))
        .output()
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let t = text(&out.stdout);
    assert!(!t.trim().is_empty() && !t.contains("keepalive"), "{t}");
}
