//! RevokedKeys as sshd applies it, compared with Debian's sshd: a key in
//! the file (public keys, one per line) cannot log in while another can;
//! a missing file refuses every key; a binary KRL (not read yet) stops
//! `sluiced -t` and startup with a clear message.

mod common;

use common::*;
use std::process::Command;

/// OpenSSH's ssh offering only `key`.
fn logs_in(s: &Setup, server: &Server, key: &std::path::Path) -> bool {
    let mut c = Command::new("ssh");
    c.args([
        "-F",
        "/dev/null",
        "-o",
        "StrictHostKeyChecking=no",
        "-o",
        "BatchMode=yes",
    ])
    .args([
        "-o",
        "LogLevel=ERROR",
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        "IdentityAgent=none",
    ])
    .arg("-o")
    .arg(format!(
        "UserKnownHostsFile={}",
        s.dir.path("known_hosts").display()
    ))
    .arg("-i")
    .arg(key)
    .args(["-p", &server.port.to_string(), "127.0.0.1", "echo in"])
    .env_remove("SSH_AUTH_SOCK");
    run(c, b"", 30).stdout == b"in\n"
}

#[test]
fn revoked_key_is_refused_another_is_not() {
    let s = Setup::new("revoked");
    let other = s.dir.path("id_other");
    keygen(&other, "ed25519");
    let mut ak = std::fs::read_to_string(s.dir.path("id_ed25519.pub")).unwrap();
    ak.push_str(&std::fs::read_to_string(s.dir.path("id_other.pub")).unwrap());
    std::fs::write(s.dir.path("authorized_keys"), ak).unwrap();
    let revoked = s.dir.path("revoked");
    std::fs::write(
        &revoked,
        format!(
            "# keys of the lost laptop\n\n{}",
            std::fs::read_to_string(s.dir.path("id_other.pub")).unwrap()
        ),
    )
    .unwrap();
    let sshd = !missing("/usr/sbin/sshd");
    for openssh in [false, true] {
        if openssh && !sshd {
            continue;
        }
        let label = if openssh { "sshd" } else { "sluiced" };
        let server = s.start(openssh, &format!("RevokedKeys {}", revoked.display()));
        assert!(logs_in(&s, &server, &s.user_key), "{label}: the other key");
        assert!(!logs_in(&s, &server, &other), "{label}: the revoked key");
        if !openssh {
            let log = server.log_text();
            assert!(
                log.contains(&format!("revoked by file {}", revoked.display())),
                "{log}"
            );
        }
        // A missing file refuses every key.
        let missing_file = s.dir.path("no-such-revoked-file");
        let server = s.start(openssh, &format!("RevokedKeys {}", missing_file.display()));
        assert!(!logs_in(&s, &server, &s.user_key), "{label}: missing file");
        if !openssh {
            let log = server.log_text();
            assert!(
                log.contains("Error checking authentication key ED25519")
                    && log.contains(&format!("in revoked keys file {}", missing_file.display())),
                "{log}"
            );
        }
        // Through Match, for this user only.
        if !openssh {
            let server = s.start(
                false,
                &format!("Match User {}\n  RevokedKeys {}", user(), revoked.display()),
            );
            assert!(!logs_in(&s, &server, &other), "Match: revoked");
            assert!(logs_in(&s, &server, &s.user_key), "Match: the other key");
        }
    }
}

#[test]
fn binary_krl_is_refused_at_startup() {
    let s = Setup::new("krl");
    let krl = s.dir.path("revoked.krl");
    let st = Command::new("ssh-keygen")
        .arg("-q")
        .arg("-k")
        .arg("-f")
        .arg(&krl)
        .arg(s.dir.path("id_ed25519.pub"))
        .status()
        .unwrap();
    assert!(st.success());
    let d = s.dir.0.display().to_string();
    let cfg = s.dir.path("cfg");
    for text in [
        format!("HostKey {d}/host_ed25519\nRevokedKeys {}\n", krl.display()),
        format!(
            "HostKey {d}/host_ed25519\nMatch User nobody\n  RevokedKeys {}\n",
            krl.display()
        ),
    ] {
        std::fs::write(&cfg, &text).unwrap();
        let line = text.lines().count();
        for args in [&["-t"][..], &["-T"]] {
            let mut c = Command::new(SLUICED);
            c.args(args).arg("-f").arg(&cfg);
            let out = run(c, b"", 20);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(255), "{err}");
            assert!(
                err.contains(&format!(
                    "unsupported option RevokedKeys at {}:{line}: {} is a binary KRL",
                    cfg.display(),
                    krl.display()
                )),
                "{err}"
            );
        }
    }
    // -T shows the file as sshd does.
    std::fs::write(
        &cfg,
        format!("HostKey {d}/host_ed25519\nRevokedKeys {d}/plain\n"),
    )
    .unwrap();
    let mut c = Command::new(SLUICED);
    c.args(["-T", "-f"]).arg(&cfg);
    let out = run(c, b"", 20);
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("\nrevokedkeys {d}/plain\n")));
}
