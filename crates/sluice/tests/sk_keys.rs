//! FIDO security keys (PROTOCOL.u2f: `sk-ssh-ed25519@openssh.com`,
//! `sk-ecdsa-sha2-nistp256@openssh.com` and their certificates) with
//! OpenSSH's sk-dummy middleware (package openssh-tests), which signs in
//! software and sets in each signature the flags the key was made with:
//! user presence unless `ssh-keygen -O no-touch-required`, user
//! verification with `-O verify-required`.
//!
//! Debian's ssh into sluiced and into sshd side by side, each case expected
//! the same of both: plain keys, `no-touch-required` and `verify-required`
//! in authorized_keys, PubkeyAuthOptions, certificates with their
//! no-touch-required extension and verify-required option. Then sluice
//! signing through ssh-agent (`ssh-agent -P`, `ssh-add` with
//! SSH_SK_PROVIDER) and through SecurityKeyProvider, into both servers.

mod agent_util;
mod common;
use agent_util::text;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SK_DUMMY: &str = "/usr/lib/openssh/regress/misc/sk-dummy/sk-dummy.so";

fn have_all() -> bool {
    !(missing("/usr/sbin/sshd") || missing("ssh-agent") || missing(SK_DUMMY))
}

/// `ssh-keygen -t ty -w sk-dummy` with `-O` options.
fn sk_keygen(dir: &TempDir, name: &str, ty: &str, opts: &[&str]) -> PathBuf {
    let p = dir.path(name);
    let mut c = Command::new("ssh-keygen");
    c.args(["-q", "-N", "", "-C", name, "-t", ty, "-w", SK_DUMMY]);
    for o in opts {
        c.args(["-O", o]);
    }
    let out = c.arg("-f").arg(&p).output().unwrap();
    ok(&out, &format!("ssh-keygen -t {ty} {opts:?}"));
    p
}

fn pub_line(key: &Path) -> String {
    std::fs::read_to_string(format!("{}.pub", key.display()))
        .unwrap()
        .trim()
        .to_owned()
}

fn authorize(s: &Setup, lines: &[String]) {
    std::fs::write(s.dir.path("authorized_keys"), lines.join("\n") + "\n").unwrap();
}

/// A client offering `key` (with SecurityKeyProvider sk-dummy unless
/// `provider` is false) and the setup's plain key, which is not authorized.
fn run_with_key(s: &Setup, openssh: bool, server: &Server, key: &Path, provider: bool) -> String {
    let sk = format!("SecurityKeyProvider={SK_DUMMY}");
    let mut extra = vec!["-o", "IdentitiesOnly=yes", "-i"];
    let k = key.display().to_string();
    extra.push(&k);
    if provider {
        extra.extend(["-o", &sk]);
    }
    let mut c = s.client(openssh, server, &extra);
    c.arg("echo ok");
    c.env_remove("SSH_AUTH_SOCK").env_remove("SSH_SK_PROVIDER");
    let out = run(c, b"", 60);
    let got = text(&out.stdout);
    if got != "ok\n" {
        return format!("refused: {}", text(&out.stderr));
    }
    got
}

/// Debian's ssh into each server; every case the same for sshd and sluiced.
#[test]
fn openssh_client_keys_and_policies() {
    if !have_all() {
        return;
    }
    let s = Setup::new("skpolicy");
    let ed = sk_keygen(&s.dir, "ed", "ed25519-sk", &[]);
    let ec = sk_keygen(&s.dir, "ec", "ecdsa-sk", &[]);
    let untouched = sk_keygen(&s.dir, "nt", "ed25519-sk", &["no-touch-required"]);
    let verified = sk_keygen(&s.dir, "vr", "ed25519-sk", &["verify-required"]);
    // (server's extra config, authorized_keys options, key, accepted)
    let cases: &[(&str, &str, &Path, bool)] = &[
        ("", "", &ed, true),
        ("", "", &ec, true),
        ("", "restrict", &ec, true),
        ("", "", &untouched, false),
        ("", "no-touch-required", &untouched, true),
        ("", "verify-required", &ed, false),
        ("", "verify-required", &verified, true),
        (
            "PubkeyAuthOptions touch-required",
            "no-touch-required",
            &untouched,
            false,
        ),
        ("PubkeyAuthOptions touch-required", "", &ed, true),
        ("PubkeyAuthOptions verify-required", "", &ed, false),
        ("PubkeyAuthOptions verify-required", "", &verified, true),
        (
            "PubkeyAuthOptions none",
            "no-touch-required",
            &untouched,
            true,
        ),
    ];
    for openssh in [true, false] {
        let who = if openssh { "sshd" } else { "sluiced" };
        let mut current: Option<(&str, Server)> = None;
        for &(cfg, opts, key, accepted) in cases {
            if current.as_ref().map(|(c, _)| *c) != Some(cfg) {
                drop(current.take()); // the old server goes first
                current = Some((cfg, s.start(openssh, cfg)));
            }
            let (_, server) = current.as_ref().unwrap();
            let line = pub_line(key);
            authorize(
                &s,
                &[if opts.is_empty() {
                    line
                } else {
                    format!("{opts} {line}")
                }],
            );
            let got = run_with_key(&s, true, server, key, true);
            assert_eq!(
                got == "ok\n",
                accepted,
                "{who} [{cfg}] '{opts}' {}: {got}\n{}",
                key.display(),
                server.log_text()
            );
        }
    }
    // sluiced logs each refusal's reason.
    let server = s.start(false, "");
    authorize(
        &s,
        &[
            pub_line(&untouched),
            format!("verify-required {}", pub_line(&ed)),
        ],
    );
    assert_ne!(run_with_key(&s, true, &server, &untouched, true), "ok\n");
    assert_ne!(run_with_key(&s, true, &server, &ed, true), "ok\n");
    let log = server.log_text();
    assert!(
        log.contains("rejected: user presence (authenticator touch) requirement not met"),
        "{log}"
    );
    assert!(
        log.contains("rejected: user verification requirement not met"),
        "{log}"
    );
    // -T shows the keyword as sshd does.
    let cfg = s.config(
        free_port(),
        "PubkeyAuthOptions verify-required touch-required",
    );
    let out = Command::new(SLUICED)
        .arg("-T")
        .arg("-f")
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(
        text(&out.stdout).contains("pubkeyauthoptions touch-required verify-required\n"),
        "{}",
        text(&out.stderr)
    );
    let cfg = s.config(free_port(), "PubkeyAuthOptions sometimes");
    let out = Command::new(SLUICED)
        .arg("-t")
        .arg("-f")
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("sometimes"),
        "{}",
        text(&out.stderr)
    );
}

/// `ssh-keygen -s ca` on a copy of `key` named `name` (with its -cert.pub).
fn certify(s: &Setup, key: &Path, name: &str, opts: &[&str]) -> PathBuf {
    let copy = s.dir.path(name);
    std::fs::copy(key, &copy).unwrap();
    std::fs::copy(
        format!("{}.pub", key.display()),
        format!("{}.pub", copy.display()),
    )
    .unwrap();
    let mut c = Command::new("ssh-keygen");
    c.args(["-q", "-s"])
        .arg(s.dir.path("ca"))
        .args(["-I", name, "-n", &user()]);
    for o in opts {
        c.args(["-O", o]);
    }
    let out = c.arg(format!("{}.pub", copy.display())).output().unwrap();
    ok(&out, "ssh-keygen -s");
    copy
}

/// Certificates of sk keys under TrustedUserCAKeys: the certificate's
/// no-touch-required extension and verify-required option; ssh and sluice.
#[test]
fn certificates_of_security_keys() {
    if !have_all() {
        return;
    }
    let s = Setup::new("skcert");
    keygen(&s.dir.path("ca"), "ed25519");
    let ed = sk_keygen(&s.dir, "ed", "ed25519-sk", &[]);
    let ec = sk_keygen(&s.dir, "ec", "ecdsa-sk", &[]);
    let untouched = sk_keygen(&s.dir, "nt", "ed25519-sk", &["no-touch-required"]);
    let cases = [
        (certify(&s, &ed, "ed_c", &[]), true),
        (certify(&s, &ec, "ec_c", &[]), true),
        (certify(&s, &untouched, "nt_plain", &[]), false),
        (
            certify(&s, &untouched, "nt_ext", &["no-touch-required"]),
            true,
        ),
        (certify(&s, &ed, "ed_vr", &["verify-required"]), false),
    ];
    authorize(&s, &[]);
    let ca = format!("TrustedUserCAKeys {}.pub", s.dir.path("ca").display());
    for openssh_server in [true, false] {
        let server = s.start(openssh_server, &ca);
        for openssh_client in [true, false] {
            for (key, accepted) in &cases {
                let got = run_with_key(&s, openssh_client, &server, key, true);
                assert_eq!(
                    got == "ok\n",
                    *accepted,
                    "{} -> {}: {}: {got}\n{}",
                    if openssh_client { "ssh" } else { "sluice" },
                    if openssh_server { "sshd" } else { "sluiced" },
                    key.display(),
                    server.log_text()
                );
            }
        }
    }
}

/// `ssh-agent -P sk-dummy's directory` holding keys added with
/// SSH_SK_PROVIDER; killed on drop.
struct SkAgent {
    child: std::process::Child,
    sock: PathBuf,
}

impl SkAgent {
    fn start(dir: &TempDir, keys: &[&Path]) -> SkAgent {
        let sock = dir.path("skagent.sock");
        let child = Command::new("ssh-agent")
            .args(["-D", "-a"])
            .arg(&sock)
            .args(["-P", "/usr/lib/openssh/regress/misc/sk-dummy/*"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !sock.exists() {
            assert!(Instant::now() < deadline, "ssh-agent did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        for k in keys {
            let out = Command::new("ssh-add")
                .arg("-q")
                .arg(k)
                .env("SSH_AUTH_SOCK", &sock)
                .env("SSH_SK_PROVIDER", SK_DUMMY)
                .output()
                .unwrap();
            ok(&out, "ssh-add");
        }
        SkAgent { child, sock }
    }
}

impl Drop for SkAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// sluice signs with sk keys held by ssh-agent, and with key files through
/// SecurityKeyProvider or SSH_SK_PROVIDER; without either it says what to
/// set.
#[test]
fn sluice_signs_through_agent_and_provider() {
    if !have_all() {
        return;
    }
    let s = Setup::new("skclient");
    let ed = sk_keygen(&s.dir, "ed", "ed25519-sk", &[]);
    let ec = sk_keygen(&s.dir, "ec", "ecdsa-sk", &[]);
    authorize(&s, &[pub_line(&ed), pub_line(&ec)]);
    let agent = SkAgent::start(&s.dir, &[&ed, &ec]);
    for openssh in [true, false] {
        let who = if openssh { "sshd" } else { "sluiced" };
        let server = s.start(openssh, "");
        // The agent's keys only (no key file offered).
        for key in [&ed, &ec] {
            authorize(&s, &[pub_line(key)]);
            let mut c = agent_util::agent_client(&s, false, server.port, Some(&agent.sock), &[]);
            c.arg("echo ok");
            let out = run(c, b"", 60);
            assert_eq!(
                text(&out.stdout),
                "ok\n",
                "agent -> {who} {}: {}\n{}",
                key.display(),
                text(&out.stderr),
                server.log_text()
            );
            // The key file, through SecurityKeyProvider.
            assert_eq!(run_with_key(&s, false, &server, key, true), "ok\n", "{who}");
        }
        // SSH_SK_PROVIDER names the library when the config does not.
        let mut c = s.client(
            false,
            &server,
            &["-o", "IdentitiesOnly=yes", "-i", &ec.display().to_string()],
        );
        c.arg("echo ok");
        c.env_remove("SSH_AUTH_SOCK")
            .env("SSH_SK_PROVIDER", SK_DUMMY);
        let out = run(c, b"", 60);
        assert_eq!(text(&out.stdout), "ok\n", "{who}: {}", text(&out.stderr));
        // No library: refused with what to do.
        let got = run_with_key(&s, false, &server, &ec, false);
        assert!(got.contains("SecurityKeyProvider"), "{who}: {got}");
        // A library that cannot be loaded: named.
        let bogus = format!(
            "SecurityKeyProvider={}",
            s.dir.path("no_such_provider.so").display()
        );
        let mut c = s.client(
            false,
            &server,
            &[
                "-o",
                "IdentitiesOnly=yes",
                "-o",
                &bogus,
                "-i",
                &ec.display().to_string(),
            ],
        );
        c.arg("echo ok");
        c.env_remove("SSH_AUTH_SOCK");
        let out = run(c, b"", 60);
        assert_ne!(out.status.code(), Some(0));
        assert!(
            text(&out.stderr).contains("no_such_provider.so: cannot load"),
            "{who}: {}",
            text(&out.stderr)
        );
    }
}
