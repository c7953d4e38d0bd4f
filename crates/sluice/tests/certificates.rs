//! OpenSSH certificates (PROTOCOL.certkeys) both ways against Debian's
//! OpenSSH: user certificates trusted through TrustedUserCAKeys (with and
//! without AuthorizedPrincipalsFile) and `cert-authority` lines, host
//! certificates (HostCertificate) trusted through `@cert-authority`, and the
//! refusals: expired, wrong principal, untrusted CA, no permit-pty, a
//! forced command, source-address, an unknown critical option. CAs and
//! certificates come from `ssh-keygen -s` in the test's directory.

mod agent_util;
mod common;
use agent_util::{agent_client, Agent};
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn keygen_run(args: &[&str]) {
    let out = Command::new("ssh-keygen").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ssh-keygen {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A certificate for `key`'s public half signed by `ca`, written to
/// `out` (`*-cert.pub`); `opts` are more ssh-keygen arguments (-h, -V, -O).
fn sign(ca: &Path, key: &Path, out: &Path, principals: &str, opts: &[&str]) -> PathBuf {
    // ssh-keygen writes `<name>-cert.pub` next to `<name>.pub`.
    let src = PathBuf::from(format!("{}.src.pub", out.display()));
    std::fs::copy(format!("{}.pub", key.display()), &src).unwrap();
    let mut args = vec!["-q", "-s", ca.to_str().unwrap(), "-I", "test-id", "-z", "7"];
    if !principals.is_empty() {
        args.extend(["-n", principals]);
    }
    args.extend(opts);
    args.push(src.to_str().unwrap());
    keygen_run(&args);
    std::fs::rename(format!("{}.src-cert.pub", out.display()), out).unwrap();
    let _ = std::fs::remove_file(src);
    out.to_owned()
}

/// A test directory with a CA, an untrusted CA, and no plain key in
/// authorized_keys (only certificates can log in).
fn setup(tag: &str) -> Setup {
    let s = Setup::new(tag);
    keygen(&s.dir.path("ca"), "ed25519");
    keygen(&s.dir.path("ca_other"), "ed25519");
    std::fs::write(s.dir.path("authorized_keys"), "").unwrap();
    s
}

fn ca_pub(s: &Setup) -> String {
    std::fs::read_to_string(s.dir.path("ca.pub")).unwrap()
}

/// A client with strict host key checking against `known_hosts`, the
/// test's key and any `extra` options; runs `cmd`.
fn client(s: &Setup, openssh: bool, port: u16, known_hosts: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(if openssh { "ssh" } else { SLUICE });
    c.args([
        "-F",
        "/dev/null",
        "-o",
        "BatchMode=yes",
        "-o",
        "LogLevel=ERROR",
    ])
    .arg("-o")
    .arg(format!("UserKnownHostsFile={}", known_hosts.display()))
    .args(["-o", "GlobalKnownHostsFile=/dev/null"])
    .arg("-i")
    .arg(&s.user_key)
    .args(["-p", &port.to_string()])
    .args(extra)
    .arg("127.0.0.1");
    c
}

/// Runs `cmd` through a client that accepts any host key.
fn login(s: &Setup, openssh: bool, server: &Server, extra: &[&str], cmd: &str) -> (bool, String) {
    let mut c = s.client(openssh, server, extra);
    c.arg(cmd);
    let out = run(c, b"", 60);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// (client is OpenSSH, server is OpenSSH, label): both directions against
/// OpenSSH, and sluice against sluiced.
const WAYS: &[(bool, bool, &str)] = &[
    (false, true, "sluice->sshd"),
    (true, false, "ssh->sluiced"),
    (false, false, "sluice->sluiced"),
];

/// The `Accepted publickey` line's key description (after `ssh2: `).
fn accepted(log: &str) -> Option<String> {
    log.lines()
        .find(|l| l.contains("Accepted publickey for"))
        .and_then(|l| l.split("ssh2: ").nth(1))
        .map(str::to_owned)
}

#[test]
fn user_certificate_via_trusted_user_ca_keys() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = setup("cert-tuck");
    // `<identity>-cert.pub` is picked up by both clients.
    let auto = PathBuf::from(format!("{}-cert.pub", s.user_key.display()));
    sign(&s.dir.path("ca"), &s.user_key, &auto, &user(), &[]);
    let extra = format!("TrustedUserCAKeys {}", s.dir.path("ca.pub").display());
    let mut lines = Vec::new();
    for &(oc, os, label) in WAYS {
        let server = s.start(os, &extra);
        let (ok, out) = login(&s, oc, &server, &[], "echo ok");
        assert!(ok, "{label}: {out}\n{}", server.log_text());
        assert_eq!(out, "ok\n", "{label}");
        let line = accepted(&server.log_text()).expect("an Accepted line");
        assert!(line.starts_with("ED25519-CERT SHA256:"), "{label}: {line}");
        lines.push(line);
    }
    // sluiced logs the certificate as sshd does.
    assert_eq!(lines[0], lines[1], "sshd's and sluiced's Accepted lines");
    let log = s.start(false, &extra);
    let (ok, _) = login(&s, true, &log, &[], "true");
    assert!(ok);
    assert!(
        log.log_text().contains(
            "Accepted certificate ID \"test-id\" (serial 7) signed by ED25519 CA SHA256:"
        ),
        "{}",
        log.log_text()
    );
}

/// Where ssh finds certificates, in its order: a key file whose `.pub` is
/// a certificate offers the certificate; CertificateFile's go before the
/// identity files, so that MaxAuthTries is not spent on plain keys first.
/// Against both servers, with ssh's own result beside sluice's.
#[test]
fn a_certificate_in_a_pub_file_and_certificate_files_first() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = setup("cert-order");
    let ca = s.dir.path("ca");
    // A copy of the key whose `.pub` holds its certificate.
    let k = s.dir.path("certpub");
    std::fs::copy(&s.user_key, &k).unwrap();
    sign(&ca, &s.user_key, &s.dir.path("certpub.pub"), &user(), &[]);
    let cert = sign(&ca, &s.user_key, &s.dir.path("cf-cert.pub"), &user(), &[]);
    let other = s.dir.path("other");
    keygen(&other, "ed25519");
    let certfile = format!("CertificateFile={}", cert.display());
    let (k, other) = (k.display().to_string(), other.display().to_string());
    let extra = format!(
        "TrustedUserCAKeys {}\nMaxAuthTries 2",
        s.dir.path("ca.pub").display()
    );
    for (os, server_name) in [(true, "sshd"), (false, "sluiced")] {
        let server = s.start(os, &extra);
        for oc in [true, false] {
            let label = format!("{} -> {server_name}", if oc { "ssh" } else { "sluice" });
            // The setup's plain key (not authorized) first, then these.
            let cases: [&[&str]; 2] = [&["-i", &k], &["-i", &other, "-o", &certfile]];
            for case in cases {
                let mut c = s.client(oc, &server, &["-o", "IdentitiesOnly=yes"]);
                c.args(case).arg("echo ok").env_remove("SSH_AUTH_SOCK");
                let out = run(c, b"", 60);
                assert_eq!(
                    String::from_utf8_lossy(&out.stdout),
                    "ok\n",
                    "{label} {case:?}: {}\n{}",
                    String::from_utf8_lossy(&out.stderr),
                    server.log_text()
                );
            }
        }
    }
}

#[test]
fn user_certificate_via_principals_file_and_cert_authority() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = setup("cert-princ");
    // A principal that is not the user name, named by the principals file.
    let cert = s.dir.path("alpha-cert.pub");
    sign(&s.dir.path("ca"), &s.user_key, &cert, "alpha,beta", &[]);
    let certfile = format!("CertificateFile={}", cert.display());
    std::fs::create_dir_all(s.dir.path("principals")).unwrap();
    std::fs::write(
        s.dir.path(&format!("principals/{}", user())),
        "# comment\nbeta\n",
    )
    .unwrap();
    let extra = format!(
        "TrustedUserCAKeys {}\nAuthorizedPrincipalsFile {}/principals/%u",
        s.dir.path("ca.pub").display(),
        s.dir.0.display()
    );
    for &(oc, os, label) in WAYS {
        let server = s.start(os, &extra);
        let (ok, out) = login(&s, oc, &server, &["-o", &certfile], "echo ok");
        assert!(ok, "{label} principals file: {out}\n{}", server.log_text());
    }
    // Without the principals file, `alpha` is not the user: refused.
    let extra_no_file = format!("TrustedUserCAKeys {}", s.dir.path("ca.pub").display());
    for &(oc, os, label) in WAYS {
        let server = s.start(os, &extra_no_file);
        let (ok, _) = login(&s, oc, &server, &["-o", &certfile], "echo ok");
        assert!(!ok, "{label}: a principal other than the user got in");
    }
    // cert-authority in authorized_keys, with principals="...".
    for (line, want) in [
        (
            format!("cert-authority,principals=\"beta\" {}", ca_pub(&s)),
            true,
        ),
        (
            format!("cert-authority,principals=\"gamma\" {}", ca_pub(&s)),
            false,
        ),
        // Without principals= the user name must be listed: it is not.
        (format!("cert-authority {}", ca_pub(&s)), false),
        // The CA's key as a plain key line does not vouch for certificates.
        (ca_pub(&s), false),
    ] {
        std::fs::write(s.dir.path("authorized_keys"), &line).unwrap();
        for &(oc, os, label) in WAYS {
            let server = s.start(os, "");
            let (ok, out) = login(&s, oc, &server, &["-o", &certfile], "echo ok");
            assert_eq!(
                ok,
                want,
                "{label} with {line}: {out}\n{}",
                server.log_text()
            );
        }
    }
}

#[test]
fn rsa_and_ecdsa_user_certificates() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = setup("cert-types");
    // An RSA CA signing (rsa-sha2-512), for RSA and ECDSA user keys.
    keygen(&s.dir.path("ca_rsa"), "rsa");
    let extra = format!("TrustedUserCAKeys {}", s.dir.path("ca_rsa.pub").display());
    for ty in ["rsa", "ecdsa"] {
        let key = s.dir.path(&format!("id_{ty}"));
        keygen(&key, ty);
        let cert = s.dir.path(&format!("id_{ty}-cert.pub"));
        sign(&s.dir.path("ca_rsa"), &key, &cert, &user(), &[]);
        for &(oc, os, label) in WAYS {
            let server = s.start(os, &extra);
            let mut c = s.client(
                oc,
                &server,
                &["-i", key.to_str().unwrap(), "-o", "IdentitiesOnly=yes"],
            );
            c.arg("echo ok");
            let out = run(c, b"", 60);
            assert!(
                out.status.success(),
                "{label} {ty}: {}\n{}",
                String::from_utf8_lossy(&out.stderr),
                server.log_text()
            );
            let line = accepted(&server.log_text()).unwrap_or_default();
            let want = if ty == "rsa" {
                "RSA-CERT"
            } else {
                "ECDSA-CERT"
            };
            assert!(
                line.starts_with(want) && line.contains("CA RSA SHA256:"),
                "{label}: {line}"
            );
        }
    }
}

/// Each refusal, on both servers with the other side's client.
#[test]
fn refused_user_certificates() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = setup("cert-refused");
    let ca = s.dir.path("ca");
    let extra = format!("TrustedUserCAKeys {}", s.dir.path("ca.pub").display());
    let u = user();
    let cases: Vec<(&str, PathBuf, &str)> = vec![
        (
            "expired",
            sign(
                &ca,
                &s.user_key,
                &s.dir.path("expired-cert.pub"),
                &u,
                &["-V", "20200101:20200102"],
            ),
            "Certificate invalid: expired",
        ),
        (
            "not yet valid",
            sign(
                &ca,
                &s.user_key,
                &s.dir.path("future-cert.pub"),
                &u,
                &["-V", "+52w:+53w"],
            ),
            "Certificate invalid: not yet valid",
        ),
        (
            "wrong principal",
            sign(
                &ca,
                &s.user_key,
                &s.dir.path("other-cert.pub"),
                "someoneelse",
                &[],
            ),
            "Certificate invalid: name is not a listed principal",
        ),
        (
            "untrusted CA",
            sign(
                &s.dir.path("ca_other"),
                &s.user_key,
                &s.dir.path("untrusted-cert.pub"),
                &u,
                &[],
            ),
            "Failed publickey",
        ),
        (
            "source-address",
            sign(
                &ca,
                &s.user_key,
                &s.dir.path("src-cert.pub"),
                &u,
                &["-O", "source-address=10.9.9.0/24"],
            ),
            "not from a permitted source address",
        ),
        (
            "unknown critical option",
            sign(
                &ca,
                &s.user_key,
                &s.dir.path("crit-cert.pub"),
                &u,
                &["-O", "critical:frobnicate=yes"],
            ),
            "Certificate critical option \"frobnicate\" is not supported",
        ),
        (
            "host certificate as a user certificate",
            sign(
                &ca,
                &s.user_key,
                &s.dir.path("hostcert-cert.pub"),
                &u,
                &["-h"],
            ),
            "Certificate invalid: not a user certificate",
        ),
    ];
    for (what, cert, why) in &cases {
        let certfile = format!("CertificateFile={}", cert.display());
        for &(oc, os, label) in WAYS {
            let server = s.start(os, &extra);
            let (ok, out) = login(&s, oc, &server, &["-o", &certfile], "echo ok");
            assert!(!ok, "{label} {what}: logged in: {out}");
            // Neither client offers a host certificate as a user's: the
            // server's refusal is in keys/cert.rs's unit tests.
            if !os && !what.starts_with("host certificate") {
                let log = server.log_text();
                assert!(log.contains(why), "{label} {what}: no \"{why}\" in\n{log}");
            }
        }
    }
    // The same source-address that matches is let in.
    let good = sign(
        &ca,
        &s.user_key,
        &s.dir.path("src-ok-cert.pub"),
        &u,
        &["-O", "source-address=10.0.0.0/8,127.0.0.1/32"],
    );
    let certfile = format!("CertificateFile={}", good.display());
    for &(oc, os, label) in WAYS {
        let server = s.start(os, &extra);
        let (ok, out) = login(&s, oc, &server, &["-o", &certfile], "echo ok");
        assert!(
            ok,
            "{label} matching source-address: {out}\n{}",
            server.log_text()
        );
    }
}

#[test]
fn certificate_options_limit_the_session() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = setup("cert-opts");
    let ca = s.dir.path("ca");
    let u = user();
    let extra = format!("TrustedUserCAKeys {}", s.dir.path("ca.pub").display());
    let forced = sign(
        &ca,
        &s.user_key,
        &s.dir.path("forced-cert.pub"),
        &u,
        &["-O", "force-command=echo forced"],
    );
    let nopty = sign(
        &ca,
        &s.user_key,
        &s.dir.path("nopty-cert.pub"),
        &u,
        &["-O", "no-pty"],
    );
    let full = sign(&ca, &s.user_key, &s.dir.path("full-cert.pub"), &u, &[]);
    for &(oc, os, label) in WAYS {
        let server = s.start(os, &extra);
        let f = format!("CertificateFile={}", forced.display());
        let (ok, out) = login(&s, oc, &server, &["-o", &f], "echo asked");
        assert!(ok, "{label}: {out}");
        assert!(out.starts_with("forced\n"), "{label} force-command: {out}");
        // No permit-pty: the pty request is refused (ssh -tt then ends).
        let f = format!("CertificateFile={}", nopty.display());
        let (ok, out) = login(&s, oc, &server, &["-tt", "-o", &f], "tty");
        assert!(
            out.contains("PTY allocation request failed") && !out.contains("/dev/pts/"),
            "{label} no-pty: {ok} {out}"
        );
        let f = format!("CertificateFile={}", full.display());
        let (_, out) = login(&s, oc, &server, &["-tt", "-o", &f], "tty");
        assert!(out.contains("/dev/pts/"), "{label} with permit-pty: {out}");
    }
}

#[test]
fn host_certificate_trusted_by_cert_authority() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = setup("cert-host");
    // User login by plain key here; the host certificate is the subject.
    std::fs::copy(s.dir.path("id_ed25519.pub"), s.dir.path("authorized_keys")).unwrap();
    let ca = s.dir.path("ca");
    let good = sign(
        &ca,
        &s.dir.path("host_ed25519"),
        &s.dir.path("host_ed25519-cert.pub"),
        "127.0.0.1,localhost",
        &["-h"],
    );
    let wrong_name = sign(
        &ca,
        &s.dir.path("host_ecdsa"),
        &s.dir.path("host_ecdsa-cert.pub"),
        "other.example",
        &["-h"],
    );
    let expired = sign(
        &ca,
        &s.dir.path("host_rsa"),
        &s.dir.path("host_rsa-cert.pub"),
        "127.0.0.1",
        &["-h", "-V", "20200101:20200102"],
    );
    let user_cert = sign(
        &ca,
        &s.dir.path("host_ed25519"),
        &s.dir.path("host_user-cert.pub"),
        "127.0.0.1",
        &[],
    );
    let kh = s.dir.path("kh_ca");
    std::fs::write(&kh, format!("@cert-authority * {}", ca_pub(&s))).unwrap();
    let kh_revoked = s.dir.path("kh_revoked");
    std::fs::write(
        &kh_revoked,
        format!(
            "@cert-authority * {}@revoked * {}",
            ca_pub(&s),
            std::fs::read_to_string(s.dir.path("host_ed25519.pub")).unwrap()
        ),
    )
    .unwrap();
    for &(oc, os, label) in WAYS {
        let server = s.start(os, &format!("HostCertificate {}", good.display()));
        let mut c = client(
            &s,
            oc,
            server.port,
            &kh,
            &["-o", "StrictHostKeyChecking=yes", "-v"],
        );
        c.arg("echo ok");
        let out = run(c, b"", 60);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{label}: {err}\n{}",
            server.log_text()
        );
        assert!(
            err.contains("is known and matches the ED25519-CERT host certificate"),
            "{label}: {err}"
        );
        // @revoked on the certified key: refused.
        let mut c = client(
            &s,
            oc,
            server.port,
            &kh_revoked,
            &["-o", "StrictHostKeyChecking=yes"],
        );
        c.arg("echo ok");
        let out = run(c, b"", 60);
        assert!(
            !out.status.success(),
            "{label}: a revoked host key was accepted"
        );
        // RevokedHostKeys listing the certified key or the CA: refused.
        for listed in ["host_ed25519.pub", "ca.pub"] {
            let rhk = format!("RevokedHostKeys={}", s.dir.path(listed).display());
            let mut c = client(
                &s,
                oc,
                server.port,
                &kh,
                &["-o", "StrictHostKeyChecking=yes", "-o", &rhk],
            );
            c.arg("echo ok");
            let out = run(c, b"", 60);
            assert!(
                !out.status.success(),
                "{label}: RevokedHostKeys {listed} ignored"
            );
        }
    }
    // Certificates that must not be trusted: the client falls back to the
    // plain key, which is unknown, and strict checking refuses it.
    for (what, cert, alg) in [
        (
            "wrong principal",
            &wrong_name,
            "ecdsa-sha2-nistp256-cert-v01@openssh.com",
        ),
        ("expired", &expired, "rsa-sha2-512-cert-v01@openssh.com"),
        (
            "user certificate",
            &user_cert,
            "ssh-ed25519-cert-v01@openssh.com",
        ),
    ] {
        for &(oc, os, label) in WAYS {
            if what == "user certificate" && os {
                continue; // sshd refuses to load it at all
            }
            let server = s.start(os, &format!("HostCertificate {}", cert.display()));
            let hka = format!("HostKeyAlgorithms={alg}");
            let mut c = client(
                &s,
                oc,
                server.port,
                &kh,
                &["-o", "StrictHostKeyChecking=yes", "-o", &hka],
            );
            c.arg("echo ok");
            let out = run(c, b"", 60);
            assert!(
                !out.status.success(),
                "{label} {what}: accepted\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

#[test]
fn sluiced_prints_host_certificates_and_cert_algorithms() {
    let s = setup("cert-dump");
    let cert = sign(
        &s.dir.path("ca"),
        &s.dir.path("host_ed25519"),
        &s.dir.path("host_ed25519-cert.pub"),
        "h",
        &["-h"],
    );
    let cfg = s.config(
        free_port(),
        &format!(
            "HostCertificate {}\nTrustedUserCAKeys /etc/ca.pub\nAuthorizedPrincipalsFile %h/p",
            cert.display()
        ),
    );
    let out = Command::new(SLUICED)
        .arg("-T")
        .arg("-f")
        .arg(&cfg)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!("hostcertificate {}\n", cert.display())),
        "{text}"
    );
    assert!(text.contains("trustedusercakeys /etc/ca.pub\n"), "{text}");
    assert!(text.contains("authorizedprincipalsfile %h/p\n"), "{text}");
    assert!(
        text.contains("hostkeyalgorithms ssh-ed25519-cert-v01@openssh.com,"),
        "{text}"
    );
    // AuthorizedPrincipalsCommand is refused, not ignored.
    let cfg = s.config(free_port(), "AuthorizedPrincipalsCommand /bin/true");
    let out = Command::new(SLUICED)
        .arg("-t")
        .arg("-f")
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(!out.status.success());
}

/// Certificates held by ssh-agent (ssh-add loads `<key>-cert.pub` with the
/// key), and a CertificateFile whose key only the agent holds; RSA keys
/// sign as rsa-sha2-*-cert through the agent's flags.
#[test]
fn agent_certificates() {
    if missing("/usr/sbin/sshd") || missing("ssh-agent") {
        return;
    }
    let s = setup("cert-agent");
    let ca = s.dir.path("ca");
    let u = user();
    let mut keys = Vec::new();
    for ty in ["ed25519", "rsa"] {
        let k = s.dir.path(&format!("agent_{ty}"));
        keygen(&k, ty);
        sign(
            &ca,
            &k,
            &s.dir.path(&format!("agent_{ty}-cert.pub")),
            &u,
            &[],
        );
        keys.push(k);
    }
    // A key the agent holds without its certificate, which is elsewhere.
    let bare = s.dir.path("agent_bare");
    keygen(&bare, "ed25519");
    let bare_cert = sign(&ca, &bare, &s.dir.path("elsewhere-cert.pub"), &u, &[]);
    let extra = format!("TrustedUserCAKeys {}", s.dir.path("ca.pub").display());
    for (i, key) in keys.iter().enumerate() {
        let agent = Agent::start(&s.dir, &[key]);
        for openssh_server in [true, false] {
            let server = s.start(openssh_server, &extra);
            let mut c = agent_client(&s, false, server.port, Some(&agent.sock), &[]);
            c.arg("echo ok");
            let out = run(c, b"", 60);
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                "ok\n",
                "agent cert {i} to {}: {}\n{}",
                if openssh_server { "sshd" } else { "sluiced" },
                String::from_utf8_lossy(&out.stderr),
                server.log_text()
            );
        }
    }
    let agent = Agent::start(&s.dir, &[&bare]);
    let cf = format!("CertificateFile={}", bare_cert.display());
    for openssh_server in [true, false] {
        let server = s.start(openssh_server, &extra);
        let mut c = agent_client(&s, false, server.port, Some(&agent.sock), &["-o", &cf]);
        c.arg("echo ok");
        let out = run(c, b"", 60);
        assert!(
            out.status.success(),
            "CertificateFile with an agent key: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            server.log_text()
        );
    }
}
