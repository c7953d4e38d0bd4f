//! Multi-step AuthenticationMethods (sshd_config(5)): `publickey,password`
//! needs both, in that order; a step met gets USERAUTH_FAILURE with partial
//! success and the methods that can continue; `publickey,publickey` needs two
//! different keys; `keyboard-interactive:pam` only through PAM; Match blocks
//! apply. Clients: Debian's ssh (`-v` shows the partial success), paramiko
//! (each step by hand) and sluice. sluiced runs as root, so the monitor makes
//! every decision. Needs root (a throwaway user with a password).

mod common;
mod privsep_util;

use common::*;
use privsep_util::TestUser;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

const PASSWORD: &str = "Two-steps 9";

/// A user with PASSWORD whose authorized key is the setup's (`tag`: one
/// letter per test, as tests run at once).
fn user_with_password(tag: &str) -> Option<TestUser> {
    if user() != "root" {
        eprintln!("skipping: needs root");
        return None;
    }
    let u = TestUser::named(&format!("slam{tag}"));
    let mut c = Command::new("chpasswd")
        .args(["-c", "YESCRYPT"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let line = format!("{}:{PASSWORD}\n", u.name);
    c.stdin.take().unwrap().write_all(line.as_bytes()).unwrap();
    assert!(c.wait().unwrap().success(), "chpasswd");
    Some(u)
}

/// `id -un` as `user` through ssh or sluice at DEBUG1, offering `keys`
/// and answering every password or keyboard-interactive prompt with
/// `answer` (None: BatchMode, nothing asked).
fn login(
    s: &Setup,
    openssh: bool,
    port: u16,
    user: &str,
    keys: &[&Path],
    answer: Option<&str>,
) -> (bool, String) {
    login_running(s, openssh, port, user, keys, answer, &[], "id -un").0
}

/// As [`login`], with more client arguments and another command; also
/// returns the command's output.
fn login_running(
    s: &Setup,
    openssh: bool,
    port: u16,
    user: &str,
    keys: &[&Path],
    answer: Option<&str>,
    extra: &[&str],
    command: &str,
) -> ((bool, String), String) {
    let askpass = s.dir.path("askpass");
    let script = format!("#!/bin/sh\nprintf '%s\\n' '{}'\n", answer.unwrap_or(""));
    std::fs::write(&askpass, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&askpass, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut c = Command::new(if openssh { "ssh" } else { SLUICE });
    c.args(["-F", "/dev/null", "-v", "-o", "StrictHostKeyChecking=no"])
        .arg("-o")
        .arg(format!(
            "UserKnownHostsFile={}",
            s.dir.path("known_hosts").display()
        ))
        .args(["-o", "IdentitiesOnly=yes"])
        .args(["-o", "NumberOfPasswordPrompts=1"]);
    if answer.is_none() {
        c.args(["-o", "BatchMode=yes"]);
    }
    if keys.is_empty() {
        c.args(["-o", "IdentityFile=/nonexistent"]);
    }
    for k in keys {
        c.arg("-i").arg(k);
    }
    c.args(extra)
        .args(["-p", &port.to_string(), "-l", user, "127.0.0.1", command])
        .env("SSH_ASKPASS", &askpass)
        .env("SSH_ASKPASS_REQUIRE", "force")
        .env_remove("DISPLAY")
        .env_remove("SSH_AUTH_SOCK");
    let out = run(c, b"", 60);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let ok = out.status.success() && stdout.trim() == user;
    (
        (ok, String::from_utf8_lossy(&out.stderr).into_owned()),
        stdout,
    )
}

const PARTIAL: &str = "Authenticated using \"publickey\" with partial success.";

fn config(extra: &str) -> String {
    format!("UsePAM no\nPasswordAuthentication yes\nKbdInteractiveAuthentication no\n{extra}")
}

#[test]
fn publickey_then_password_needs_both() {
    let Some(u) = user_with_password("a") else {
        return;
    };
    let s = Setup::new("am-both");
    let server = s.start(false, &config("AuthenticationMethods publickey,password"));
    let key = s.user_key.clone();
    for openssh in [true, false] {
        let who = if openssh { "ssh" } else { "sluice" };
        // Both: the key meets the first step, the password the second.
        let (ok, err) = login(&s, openssh, server.port, &u.name, &[&key], Some(PASSWORD));
        assert!(ok, "{who}, key and password: {err}\n{}", server.log_text());
        assert!(err.contains(PARTIAL), "{who}: {err}");
        // The key alone: partial success, then nothing can continue.
        let (ok, err) = login(&s, openssh, server.port, &u.name, &[&key], None);
        assert!(!ok, "{who}: the key alone logged in");
        assert!(err.contains(PARTIAL), "{who}: {err}");
        assert!(err.contains("Permission denied (password)"), "{who}: {err}");
        // The password alone: password is not offered before the key.
        let (ok, err) = login(&s, openssh, server.port, &u.name, &[], Some(PASSWORD));
        assert!(!ok, "{who}: the password alone logged in");
        assert!(
            err.contains("Permission denied (publickey)"),
            "{who}: {err}"
        );
        assert!(!err.contains("partial success"), "{who}: {err}");
        // A wrong password after the key.
        let (ok, _) = login(&s, openssh, server.port, &u.name, &[&key], Some("wrong"));
        assert!(!ok, "{who}: a wrong password logged in");
    }
    let log = server.log_text();
    assert!(
        log.contains(&format!("Partial publickey for {} from 127.0.0.1", u.name)),
        "{log}"
    );
    assert!(
        log.contains(&format!("Accepted password for {} from 127.0.0.1", u.name)),
        "{log}"
    );
}

/// paramiko, one step at a time: `steps` are "pk", "pk2" (a second key),
/// "pw", "badpw"; prints each step's outcome: a list of methods that can
/// continue (partial success), "ok" when authenticated, or the error.
fn paramiko(s: &Setup, port: u16, user: &str, key2: &Path, steps: &[&str]) -> String {
    let script = r#"
import sys, paramiko
port, user, k1, k2, pw = sys.argv[1:6]
keys = {"pk": paramiko.Ed25519Key.from_private_key_file(k1),
        "pk2": paramiko.Ed25519Key.from_private_key_file(k2)}
t = paramiko.Transport(("127.0.0.1", int(port)))
t.start_client(timeout=20)
for step in sys.argv[6:]:
    try:
        if step in keys:
            left = t.auth_publickey(user, keys[step])
        else:
            left = t.auth_password(user, pw if step == "pw" else "wrong", fallback=False)
        print(step, "ok" if t.is_authenticated() else ",".join(left))
    except paramiko.BadAuthenticationType as e:
        print(step, "badtype", ",".join(e.allowed_types))
    except paramiko.AuthenticationException as e:
        print(step, "failed")
    except Exception as e:
        print(step, "error", type(e).__name__)
        break
    sys.stdout.flush()
t.close()
"#;
    let mut c = Command::new("python3");
    c.arg("-c")
        .arg(script)
        .arg(port.to_string())
        .arg(user)
        .arg(&s.user_key)
        .arg(key2)
        .arg(PASSWORD)
        .args(steps);
    let out = run(c, b"", 60);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn python_has_paramiko() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import paramiko"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipping: python3 paramiko is missing");
    }
    ok
}

#[test]
fn paramiko_steps_and_their_order() {
    let Some(u) = user_with_password("b") else {
        return;
    };
    if !python_has_paramiko() {
        return;
    }
    let s = Setup::new("am-paramiko");
    let key2 = s.dir.path("id_second");
    keygen(&key2, "ed25519");
    let server = s.start(false, &config("AuthenticationMethods publickey,password"));
    let out = paramiko(&s, server.port, &u.name, &key2, &["pk", "pw"]);
    assert_eq!(out, "pk password\npw ok\n", "{}", server.log_text());
    // The order matters: a password first is not even offered.
    let out = paramiko(&s, server.port, &u.name, &key2, &["pw", "pk", "pw"]);
    assert_eq!(out, "pw badtype publickey\npk password\npw ok\n");
    // A wrong password after the key: still partial, the password again.
    let out = paramiko(&s, server.port, &u.name, &key2, &["pk", "badpw", "pw"]);
    assert_eq!(out, "pk password\nbadpw failed\npw ok\n");
    drop(server);

    // Two lists: the key then either password or a second key.
    let mut keys = std::fs::read_to_string(s.dir.path("id_ed25519.pub")).unwrap();
    keys.push_str(&std::fs::read_to_string(s.dir.path("id_second.pub")).unwrap());
    std::fs::write(s.dir.path("authorized_keys"), keys).unwrap();
    let server = s.start(
        false,
        &config("AuthenticationMethods publickey,publickey password,publickey"),
    );
    // A key used once cannot meet the second step.
    let out = paramiko(&s, server.port, &u.name, &key2, &["pk", "pk", "pk2"]);
    assert_eq!(out, "pk publickey,password\npk failed\npk2 ok\n");
    assert!(server
        .log_text()
        .contains("refusing previously-used ED25519 key"));
    // The other list, from its own first step.
    let out = paramiko(&s, server.port, &u.name, &key2, &["pw", "pk2"]);
    assert_eq!(out, "pw publickey\npk2 ok\n", "{}", server.log_text());
}

#[test]
fn two_keys_through_ssh_and_sluice() {
    let Some(u) = user_with_password("c") else {
        return;
    };
    let s = Setup::new("am-twokeys");
    let key2 = s.dir.path("id_second");
    keygen(&key2, "ed25519");
    let mut keys = std::fs::read_to_string(s.dir.path("id_ed25519.pub")).unwrap();
    keys.push_str(&std::fs::read_to_string(s.dir.path("id_second.pub")).unwrap());
    std::fs::write(s.dir.path("authorized_keys"), keys).unwrap();
    let server = s.start(false, &config("AuthenticationMethods publickey,publickey"));
    let key = s.user_key.clone();
    for openssh in [true, false] {
        let who = if openssh { "ssh" } else { "sluice" };
        let (ok, err) = login(&s, openssh, server.port, &u.name, &[&key, &key2], None);
        assert!(ok, "{who}, two keys: {err}\n{}", server.log_text());
        let (ok, err) = login(&s, openssh, server.port, &u.name, &[&key], None);
        assert!(!ok, "{who}: one key logged in twice");
        assert!(err.contains(PARTIAL), "{who}: {err}");
    }
    // A certificate of a key is that key (sshd compares the certified
    // key): the key and its certificate are not two keys. Both clients
    // offer `<key>-cert.pub` beside `-i <key>`.
    let ca = s.dir.path("user_ca");
    keygen(&ca, "ed25519");
    let st = Command::new("ssh-keygen")
        .args(["-q", "-s"])
        .arg(&ca)
        .args(["-I", "twice", "-n", &u.name])
        .arg(s.dir.path("id_ed25519.pub"))
        .status()
        .unwrap();
    assert!(st.success());
    let extra = format!(
        "AuthenticationMethods publickey,publickey\nTrustedUserCAKeys {}.pub",
        ca.display()
    );
    let server = s.start(false, &config(&extra));
    for openssh in [true, false] {
        let who = if openssh { "ssh" } else { "sluice" };
        let (ok, err) = login(&s, openssh, server.port, &u.name, &[&key], None);
        assert!(!ok, "{who}: a key and its certificate logged in\n{err}");
        assert!(err.contains(PARTIAL), "{who}: {err}");
        assert!(
            server.log_text().contains("refusing previously-used"),
            "{who}: {}",
            server.log_text()
        );
    }
}

#[test]
fn match_blocks_and_keyboard_interactive_devices() {
    let Some(u) = user_with_password("d") else {
        return;
    };
    let s = Setup::new("am-match");
    let key = s.user_key.clone();
    // Only the Match user needs the second factor.
    let server = s.start(
        false,
        &config(&format!(
            "Match User {}\n  AuthenticationMethods publickey,password",
            u.name
        )),
    );
    let (ok, err) = login(&s, true, server.port, &u.name, &[&key], None);
    assert!(!ok && err.contains(PARTIAL), "Match user, key alone: {err}");
    let (ok, err) = login(&s, true, server.port, &u.name, &[&key], Some(PASSWORD));
    assert!(ok, "Match user, key and password: {err}");
    drop(server);
    // keyboard-interactive:pam: met through PAM's prompts only.
    let kbd = "PasswordAuthentication no\nKbdInteractiveAuthentication yes\n\
               AuthenticationMethods publickey,keyboard-interactive:pam";
    let server = s.start(false, &format!("UsePAM yes\n{kbd}"));
    let (ok, err) = login(&s, true, server.port, &u.name, &[&key], Some(PASSWORD));
    assert!(
        ok,
        "keyboard-interactive:pam with UsePAM yes: {err}\n{}",
        server.log_text()
    );
    assert!(server
        .log_text()
        .contains(&format!("Accepted keyboard-interactive/pam for {}", u.name)));
    drop(server);
    // Without PAM the device does not exist: the step cannot be met.
    let server = s.start(false, &format!("UsePAM no\n{kbd}"));
    let (ok, err) = login(&s, true, server.port, &u.name, &[&key], Some(PASSWORD));
    assert!(!ok, "keyboard-interactive:pam without PAM logged in");
    assert!(err.contains(PARTIAL), "{err}");
}

#[test]
fn the_key_restrictions_of_the_first_step_hold() {
    let Some(u) = user_with_password("e") else {
        return;
    };
    let s = Setup::new("am-restrict");
    let key = s.user_key.clone();
    let public = std::fs::read_to_string(s.dir.path("id_ed25519.pub")).unwrap();
    std::fs::write(s.dir.path("authorized_keys"), format!("restrict {public}")).unwrap();
    let server = s.start(false, &config("AuthenticationMethods publickey,password"));
    // `restrict` means no pty, even though a password ended the list.
    let ((_, err), out) = login_running(
        &s,
        true,
        server.port,
        &u.name,
        &[&key],
        Some(PASSWORD),
        &["-tt"],
        "tty",
    );
    assert!(!out.contains("/dev/pts"), "{out}\n{err}");
    let log = server.log_text();
    assert!(
        log.contains(&format!("Accepted password for {}", u.name)),
        "{log}"
    );
    assert!(log.contains("pty-req refused: key option no-pty"), "{log}");
}

/// PermitEmptyPasswords with PasswordAuthentication: an account whose
/// password is empty logs in through the `none` method, never asked
/// (BatchMode), as with sshd, with and without PAM (Debian's pam_unix has
/// nullok); with `no` (the default) it does not, and an account with a
/// password is not let in by `none`.
#[test]
fn an_empty_password_logs_in_through_none_only_when_permitted() {
    if user() != "root" {
        eprintln!("skipping: needs root");
        return;
    }
    let empty = TestUser::named("slemp");
    let mut tries = 0;
    while !Command::new("passwd")
        .args(["-d", &empty.name])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
    {
        tries += 1;
        assert!(tries < 20, "passwd -d {}", empty.name);
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let Some(with_password) = user_with_password("n") else {
        return;
    };
    let s = Setup::new("am-empty");
    let cases = [
        // (server is sshd, UsePAM, PermitEmptyPasswords, the empty account logs in)
        (true, "no", "yes", true),
        (false, "no", "yes", true),
        (false, "yes", "yes", true),
        (false, "no", "no", false),
        (false, "yes", "no", false),
    ];
    for (openssh_server, pam, permit, want) in cases {
        let cfg = format!(
            "UsePAM {pam}\nPasswordAuthentication yes\nKbdInteractiveAuthentication no\nPermitEmptyPasswords {permit}"
        );
        let server = s.start(openssh_server, &cfg);
        for openssh in [true, false] {
            let who = format!(
                "{} -> {} UsePAM {pam} PermitEmptyPasswords {permit}",
                if openssh { "ssh" } else { "sluice" },
                if openssh_server { "sshd" } else { "sluiced" }
            );
            let (ok, err) = login(&s, openssh, server.port, &empty.name, &[], None);
            assert_eq!(ok, want, "{who}: {err}\n{}", server.log_text());
            let (ok, _) = login(&s, openssh, server.port, &with_password.name, &[], None);
            assert!(!ok, "{who}: an account with a password got in");
        }
        if want {
            // Both servers log these at VERBOSE (the setup's LogLevel).
            let log = server.log_text();
            assert!(
                log.contains(&format!("Accepted none for {}", empty.name)),
                "{log}"
            );
            assert!(
                log.contains(&format!("Failed none for {}", with_password.name)),
                "{log}"
            );
        }
    }
}
