//! UpdateHostKeys (OpenSSH PROTOCOL 2.5, hostkeys-00 / hostkeys-prove-00):
//! Debian's ssh learns sluiced's host keys, sluice learns Debian sshd's and
//! sluiced's, keys the server no longer has leave known_hosts, a host key
//! accepted without checking teaches nothing more, and a bad proof (a
//! paramiko server signing with the wrong key) changes nothing.

mod common;

use common::*;
use std::path::Path;
use std::process::{Command, Stdio};

fn pub_line(s: &Setup, name: &str) -> (String, String) {
    let text = std::fs::read_to_string(s.dir.path(&format!("{name}.pub"))).unwrap();
    let mut f = text.split_whitespace();
    (f.next().unwrap().to_owned(), f.next().unwrap().to_owned())
}

/// known_hosts lines: (host field, type, base64 key).
fn lines(p: &Path) -> Vec<(String, String, String)> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            Some((
                f.next()?.to_owned(),
                f.next()?.to_owned(),
                f.next()?.to_owned(),
            ))
        })
        .collect()
}

fn has_key(p: &Path, key: &(String, String)) -> bool {
    lines(p).iter().any(|l| l.1 == key.0 && l.2 == key.1)
}

const ALGS: &str = "HostKeyAlgorithms=ssh-ed25519,ecdsa-sha2-nistp256,rsa-sha2-512,rsa-sha2-256";

#[test]
fn clients_learn_the_servers_other_keys_and_forget_removed_ones() {
    if missing("ssh") || missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("updhk");
    let kh = s.dir.path("known_hosts");
    let ed = pub_line(&s, "host_ed25519");
    let ecdsa = pub_line(&s, "host_ecdsa");
    let rsa = pub_line(&s, "host_rsa");
    // A key the servers do not have, listed for the host as if it had been
    // rotated out.
    keygen(&s.dir.path("stale"), "ed25519");
    let stale = pub_line(&s, "stale");
    keygen(&s.dir.path("other"), "ed25519");
    let other = pub_line(&s, "other");
    // (client is OpenSSH, server is OpenSSH): ssh -> sluiced, sluice ->
    // sshd, sluice -> sluiced.
    for (ssh, sshd) in [(true, false), (false, true), (false, false)] {
        let server = s.start(sshd, "");
        let name = format!("[127.0.0.1]:{}", server.port);
        // An unchecked first connection (the key added by
        // StrictHostKeyChecking=no) learns nothing more, as ssh.
        let _ = std::fs::remove_file(&kh);
        let c = s.client_at(
            ssh,
            &server,
            "DEBUG1",
            &["-o", "UpdateHostKeys=yes", "-o", ALGS],
        );
        ok(&run(with_true(c), b"", 30), "first connection");
        assert_eq!(lines(&kh).len(), 1, "{:?} (ssh {ssh})", lines(&kh));
        assert!(has_key(&kh, &ed));
        // Known (StrictHostKeyChecking=no from client_at changes nothing
        // for a known key) and trusted: the other keys are proved and added; the stale
        // key goes; an unrelated line stays.
        std::fs::write(
            &kh,
            format!(
                "{name} {} {}\nother.example {} {}\n{name} {} {}\n",
                ed.0, ed.1, other.0, other.1, stale.0, stale.1
            ),
        )
        .unwrap();
        let c = s.client_at(
            ssh,
            &server,
            "DEBUG1",
            &["-o", "UpdateHostKeys=yes", "-o", ALGS],
        );
        let out = run(with_true(c), b"", 30);
        ok(&out, "second connection");
        let err = String::from_utf8_lossy(&out.stderr);
        let got = lines(&kh);
        assert!(
            has_key(&kh, &ecdsa) && has_key(&kh, &rsa) && has_key(&kh, &ed),
            "{got:?}\n{err}"
        );
        assert_eq!(
            got.iter().filter(|l| l.0 == name).count(),
            3,
            "{got:?}\n{err}"
        );
        assert!(got.iter().any(|l| l.0 == "other.example"), "{got:?}");
        assert!(err.contains("Learned new hostkey: ECDSA"), "{err}");
        assert!(
            err.contains("Deprecating obsolete hostkey: ED25519"),
            "{err}"
        );
        // Nothing new the next time.
        let before = std::fs::read(&kh).unwrap();
        let c = s.client(ssh, &server, &["-o", "UpdateHostKeys=yes"]);
        ok(&run(with_true(c), b"", 30), "third connection");
        assert_eq!(std::fs::read(&kh).unwrap(), before);
    }
}

fn with_true(mut c: Command) -> Command {
    c.arg("true");
    c
}

#[test]
fn a_bad_proof_changes_nothing() {
    let ok_python = Command::new("python3")
        .args(["-c", "import paramiko"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok_python {
        assert!(
            std::env::var("CI").is_err(),
            "python3 with paramiko is required under CI"
        );
        return;
    }
    let s = Setup::new("updhk-bad");
    let kh = s.dir.path("known_hosts");
    let ed = pub_line(&s, "host_ed25519");
    let ecdsa = pub_line(&s, "host_ecdsa");
    for (mode, learns) in [("bad", false), ("good", true)] {
        let port = free_port();
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/peers/hostkeys_server.py"
        );
        let mut child = Command::new("python3")
            .arg(script)
            .arg(port.to_string())
            .arg(s.dir.path("host_ed25519"))
            .arg(s.dir.path("host_ecdsa"))
            .arg(s.dir.path("authorized_keys"))
            .arg(mode)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        assert_eq!(line.trim(), "ready");
        let text = format!("[127.0.0.1]:{port} {} {}\n", ed.0, ed.1);
        std::fs::write(&kh, &text).unwrap();
        let c = s.client_to(false, port, "DEBUG1", &["-o", "UpdateHostKeys=yes"]);
        let out = run(with_true(c), b"", 30);
        let _ = child.kill();
        let _ = child.wait();
        ok(&out, mode);
        let err = String::from_utf8_lossy(&out.stderr);
        if learns {
            assert!(has_key(&kh, &ecdsa), "{err}");
            assert_eq!(lines(&kh).len(), 2, "{err}");
        } else {
            assert_eq!(std::fs::read_to_string(&kh).unwrap(), text, "{err}");
            assert!(
                err.contains("server gave bad signature for ECDSA key 0"),
                "{err}"
            );
        }
    }
}
