//! `ssh-rsa` (RSA with SHA-1) signatures only where configured, as
//! OpenSSH since 8.8: user signatures with `PubkeyAcceptedAlgorithms
//! +ssh-rsa`, host key signatures with `HostKeyAlgorithms +ssh-rsa`, and
//! `ssh-rsa-cert-v01@openssh.com` certificates likewise; refused without.
//! Debian's ssh into sluiced and sluice into Debian's sshd, and each
//! against the other of ours, each outcome checked against what OpenSSH
//! does in the same place.

mod agent_util;
mod common;
use agent_util::text;
use common::*;
use std::path::Path;

/// A client that offers only `key` with the given `-o` options.
fn connect(s: &Setup, openssh: bool, server: &Server, key: &Path, opts: &[&str]) -> (bool, String) {
    let k = key.display().to_string();
    let mut extra = vec!["-o", "IdentitiesOnly=yes", "-i", &k];
    for o in opts {
        extra.extend(["-o", o]);
    }
    let mut c = s.client(openssh, server, &extra);
    c.arg("echo ok").env_remove("SSH_AUTH_SOCK");
    let out = run(c, b"", 60);
    (text(&out.stdout) == "ok\n", text(&out.stderr))
}

fn rsa_setup(tag: &str) -> (Setup, std::path::PathBuf) {
    let s = Setup::new(tag);
    let rsa = s.dir.path("user_rsa");
    keygen(&rsa, "rsa");
    let line = std::fs::read_to_string(s.dir.path("user_rsa.pub")).unwrap();
    std::fs::write(s.dir.path("authorized_keys"), line).unwrap();
    (s, rsa)
}

/// User signatures: a client limited to ssh-rsa is refused by a server's
/// defaults and accepted with `+ssh-rsa`; every pairing with OpenSSH.
#[test]
fn user_signatures_with_sha1_only_where_listed() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let (s, rsa) = rsa_setup("sha1user");
    for openssh_server in [true, false] {
        let who = if openssh_server { "sshd" } else { "sluiced" };
        let default = s.start(openssh_server, "");
        let plus = s.start(openssh_server, "PubkeyAcceptedAlgorithms +ssh-rsa");
        for openssh_client in [true, false] {
            if openssh_client && openssh_server {
                continue; // OpenSSH against itself proves nothing of ours
            }
            let by = if openssh_client { "ssh" } else { "sluice" };
            // The client signs with SHA-1 only.
            let sha1 = ["PubkeyAcceptedAlgorithms=ssh-rsa"];
            let (got, err) = connect(&s, openssh_client, &default, &rsa, &sha1);
            assert!(!got, "{by} -> {who} default accepted ssh-rsa: {err}");
            let (got, err) = connect(&s, openssh_client, &plus, &rsa, &sha1);
            assert!(got, "{by} -> {who} +ssh-rsa: {err}\n{}", plus.log_text());
            // `+ssh-rsa` on the client alone still prefers SHA-2.
            let (got, err) = connect(
                &s,
                openssh_client,
                &default,
                &rsa,
                &["PubkeyAcceptedAlgorithms=+ssh-rsa"],
            );
            assert!(got, "{by} -> {who} client +ssh-rsa: {err}");
        }
    }
    // sluice's default list does not hold it.
    let out = std::process::Command::new(SLUICE)
        .args(["-F", "/dev/null", "-G", "127.0.0.1"])
        .output()
        .unwrap();
    let g = text(&out.stdout);
    let line = g
        .lines()
        .find(|l| l.starts_with("pubkeyacceptedalgorithms "))
        .unwrap_or_default()
        .to_owned();
    assert!(!line.split([' ', ',']).any(|a| a == "ssh-rsa"), "{line}");
}

/// Host key signatures: `HostKeyAlgorithms +ssh-rsa` on the server lets a
/// client that wants only ssh-rsa in; without it the key exchange finds no
/// host key algorithm in common.
#[test]
fn host_key_signatures_with_sha1_only_where_listed() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("sha1host");
    for openssh_server in [true, false] {
        let who = if openssh_server { "sshd" } else { "sluiced" };
        let default = s.start(openssh_server, "");
        let plus = s.start(openssh_server, "HostKeyAlgorithms +ssh-rsa");
        for openssh_client in [true, false] {
            if openssh_client && openssh_server {
                continue;
            }
            let by = if openssh_client { "ssh" } else { "sluice" };
            let want = ["HostKeyAlgorithms=ssh-rsa"];
            let (got, err) = connect(&s, openssh_client, &default, &s.user_key, &want);
            assert!(!got, "{by} -> {who} default signed with ssh-rsa");
            // ssh says so above LogLevel ERROR; sluice at its error level.
            if !openssh_client {
                assert!(err.contains("host key"), "{by} -> {who}: {err}");
            }
            let (got, err) = connect(&s, openssh_client, &plus, &s.user_key, &want);
            assert!(got, "{by} -> {who} +ssh-rsa: {err}\n{}", plus.log_text());
        }
    }
}

/// `ssh-rsa-cert-v01@openssh.com`: an RSA certificate used with SHA-1
/// only when the server lists that algorithm.
#[test]
fn rsa_certificates_with_sha1_only_where_listed() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let (s, rsa) = rsa_setup("sha1cert");
    keygen(&s.dir.path("ca"), "ed25519");
    let out = std::process::Command::new("ssh-keygen")
        .args(["-q", "-s"])
        .arg(s.dir.path("ca"))
        .args(["-I", "old", "-n", &user()])
        .arg(s.dir.path("user_rsa.pub"))
        .output()
        .unwrap();
    ok(&out, "ssh-keygen -s");
    std::fs::write(s.dir.path("authorized_keys"), "").unwrap();
    let ca = format!("TrustedUserCAKeys {}.pub\n", s.dir.path("ca").display());
    let cert_sha1 = ["PubkeyAcceptedAlgorithms=ssh-rsa-cert-v01@openssh.com"];
    for openssh_server in [true, false] {
        let who = if openssh_server { "sshd" } else { "sluiced" };
        let default = s.start(openssh_server, &ca);
        let plus = s.start(
            openssh_server,
            &format!("{ca}PubkeyAcceptedAlgorithms +ssh-rsa-cert-v01@openssh.com"),
        );
        for openssh_client in [true, false] {
            if openssh_client && openssh_server {
                continue;
            }
            let by = if openssh_client { "ssh" } else { "sluice" };
            let (got, err) = connect(&s, openssh_client, &default, &rsa, &cert_sha1);
            assert!(!got, "{by} -> {who} default accepted ssh-rsa-cert: {err}");
            let (got, err) = connect(&s, openssh_client, &plus, &rsa, &cert_sha1);
            assert!(
                got,
                "{by} -> {who} +ssh-rsa-cert: {err}\n{}",
                plus.log_text()
            );
            // SHA-2 with the same certificate, by default.
            let (got, err) = connect(&s, openssh_client, &default, &rsa, &[]);
            assert!(got, "{by} -> {who} rsa-sha2 certificate: {err}");
        }
    }
}
