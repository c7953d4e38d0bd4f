//! RevokedKeys as sshd applies it, compared with Debian's sshd: a key in
//! the file (public keys, one per line) cannot log in while another can;
//! a missing file refuses every key; binary KRLs revoke keys and
//! certificates (by serial) in sluiced and, as RevokedHostKeys, in sluice.

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

fn keygen_ok(args: &[&str], files: &[&std::path::Path]) {
    let st = Command::new("ssh-keygen")
        .args(args)
        .args(files)
        .stdin(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "ssh-keygen {args:?}");
}

#[test]
fn binary_krls_revoke_keys_and_certificates_as_in_sshd() {
    let s = Setup::new("krl");
    let d = s.dir.0.display().to_string();
    // A CA; `other` certified with serial 5, `third` with serial 6.
    let ca = s.dir.path("ca");
    keygen(&ca, "ed25519");
    let (other, third) = (s.dir.path("id_other"), s.dir.path("id_third"));
    for (k, serial) in [(&other, "5"), (&third, "6")] {
        keygen(k, "ed25519");
        let pubkey = s
            .dir
            .path(&format!("{}.pub", k.file_name().unwrap().to_string_lossy()));
        keygen_ok(
            &[
                "-q",
                "-s",
                &format!("{d}/ca"),
                "-I",
                "id",
                "-n",
                &user(),
                "-z",
                serial,
            ],
            &[&pubkey],
        );
    }
    let empty = s.dir.path("empty.krl");
    keygen_ok(&["-q", "-k", "-f", &format!("{d}/empty.krl")], &[]);
    // The user's plain key, and certificate serial 5 of this CA.
    let spec = s.dir.path("spec");
    std::fs::write(&spec, "serial: 5\n").unwrap();
    let krl = s.dir.path("revoked.krl");
    keygen_ok(
        &["-q", "-k", "-f", &format!("{d}/revoked.krl")],
        &[&s.dir.path("id_ed25519.pub")],
    );
    keygen_ok(
        &[
            "-q",
            "-k",
            "-u",
            "-s",
            &format!("{d}/ca.pub"),
            "-f",
            &format!("{d}/revoked.krl"),
        ],
        &[&spec],
    );
    let extra =
        |f: &std::path::Path| format!("TrustedUserCAKeys {d}/ca.pub\nRevokedKeys {}", f.display());
    let sshd = !missing("/usr/sbin/sshd");
    for openssh in [false, true] {
        if openssh && !sshd {
            continue;
        }
        let label = if openssh { "sshd" } else { "sluiced" };
        let server = s.start(openssh, &extra(&empty));
        for k in [&s.user_key, &other, &third] {
            assert!(
                logs_in(&s, &server, k),
                "{label}, empty KRL: {}",
                k.display()
            );
        }
        let server = s.start(openssh, &extra(&krl));
        assert!(!logs_in(&s, &server, &s.user_key), "{label}: revoked key");
        assert!(!logs_in(&s, &server, &other), "{label}: revoked serial");
        assert!(logs_in(&s, &server, &third), "{label}: serial 6");
    }
    // A KRL that does not parse stops -t and startup.
    let bad = s.dir.path("bad.krl");
    std::fs::write(&bad, b"SSHKRL\n\0\0\0\0\x09").unwrap();
    let cfg = s.dir.path("cfg");
    std::fs::write(
        &cfg,
        format!("HostKey {d}/host_ed25519\nRevokedKeys {}\n", bad.display()),
    )
    .unwrap();
    let mut c = Command::new(SLUICED);
    c.arg("-t").arg("-f").arg(&cfg);
    let out = run(c, b"", 20);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(255), "{err}");
    assert!(err.contains("unsupported KRL format version 9"), "{err}");
    // The client's RevokedHostKeys reads KRLs too.
    let server = s.start(false, "");
    let host_krl = s.dir.path("host.krl");
    keygen_ok(
        &["-q", "-k", "-f", &format!("{d}/host.krl")],
        &[&s.dir.path("host_ed25519.pub")],
    );
    for (f, ok_expected) in [(&empty, true), (&host_krl, false)] {
        let mut c = s.client(
            false,
            &server,
            &[
                "-o",
                "HostKeyAlgorithms=ssh-ed25519",
                "-o",
                &format!("RevokedHostKeys={}", f.display()),
            ],
        );
        c.arg("true");
        let out = run(c, b"", 30);
        assert_eq!(
            out.status.success(),
            ok_expected,
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
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
