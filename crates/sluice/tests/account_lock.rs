//! UsePAM no: sshd's own account checks apply to every method, keys
//! included, as with Debian's sshd: a locked password (`!`, as `passwd -l`
//! or a bare `useradd` leave it) or a passed expiry date refuses the
//! login; `*` (no password) does not.

mod common;

use common::*;
use std::process::{Command, Stdio};

/// A system user for the test (home under the test directory), removed on drop.
struct TempUser(String);

impl TempUser {
    fn create(s: &Setup, tag: &str, password_field: &str, expire: Option<&str>) -> TempUser {
        let name = format!("sl{tag}{}", std::process::id() % 100_000);
        let _ = Command::new("userdel")
            .args(["-r", &name])
            .stderr(Stdio::null())
            .status();
        let mut c = Command::new("useradd");
        c.args(["-m", "-s", "/bin/sh", "-p", password_field, "-d"])
            .arg(s.dir.path(&format!("home-{name}")));
        if let Some(e) = expire {
            c.args(["-e", e]);
        }
        let st = c.arg(&name).status().expect("useradd (passwd)");
        assert!(st.success(), "useradd {name}");
        TempUser(name)
    }
}

impl Drop for TempUser {
    fn drop(&mut self) {
        let _ = Command::new("userdel")
            .args(["-r", &self.0])
            .stderr(Stdio::null())
            .status();
    }
}

fn logs_in(s: &Setup, server: &Server, user: &str) -> bool {
    let mut c = s.client(true, server, &["-l", user]);
    c.arg("echo in");
    run(c, b"", 30).stdout == b"in\n"
}

#[test]
fn locked_and_expired_accounts_are_refused_without_pam() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || missing("useradd") || missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("acct");
    let open = TempUser::create(&s, "o", "*", None);
    let locked = TempUser::create(&s, "l", "!", None);
    let expired = TempUser::create(&s, "e", "*", Some("2001-01-01"));
    for openssh in [false, true] {
        let label = if openssh { "sshd" } else { "sluiced" };
        let server = s.start(openssh, "UsePAM no");
        assert!(logs_in(&s, &server, &open.0), "{label}: '*' account");
        assert!(!logs_in(&s, &server, &locked.0), "{label}: locked account");
        assert!(
            !logs_in(&s, &server, &expired.0),
            "{label}: expired account"
        );
        if !openssh {
            let log = server.log_text();
            for want in [
                format!("User {} not allowed because account is locked", locked.0),
                format!("Account {} has expired", expired.0),
            ] {
                assert!(log.contains(&want), "{want}\n{log}");
            }
        }
    }
}

/// UsePAM yes: PAM's account modules decide for keys too (an expired
/// account is refused though its key is right, with sshd's log line), and
/// the session is opened around the user's process as sshd opens it: the
/// command sees the same login uid under sluiced as under sshd.
#[test]
fn pam_account_and_session_apply_to_keys() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0
        || missing("useradd")
        || missing("/usr/sbin/sshd")
        || !std::path::Path::new("/etc/pam.d/sshd").exists()
    {
        return;
    }
    let s = Setup::new("pamacct");
    let open = TempUser::create(&s, "po", "*", None);
    let expired = TempUser::create(&s, "pe", "*", Some("2001-01-01"));
    let mut loginuid = Vec::new();
    for openssh in [false, true] {
        let label = if openssh { "sshd" } else { "sluiced" };
        let server = s.start(openssh, "UsePAM yes");
        assert!(logs_in(&s, &server, &open.0), "{label}: open account");
        assert!(
            !logs_in(&s, &server, &expired.0),
            "{label}: expired account"
        );
        let mut c = s.client(true, &server, &["-l", &open.0]);
        c.arg("cat /proc/self/loginuid");
        loginuid.push(String::from_utf8_lossy(&run(c, b"", 30).stdout).into_owned());
        if !openssh {
            let log = server.log_text();
            let want = format!(
                "Access denied for user {} by PAM account configuration",
                expired.0
            );
            assert!(log.contains(&want), "{want}\n{log}");
        }
    }
    assert_eq!(loginuid[0], loginuid[1], "login uid: sluiced, sshd");
}

/// UsePAM yes: what PAM's session modules put in its environment (here
/// pam_env's per-user file, which Debian's /etc/pam.d/sshd reads with
/// user_readenv=1) reaches the session, as under sshd; SSH_CONNECTION stays
/// the server's own.
#[test]
fn pam_environment_reaches_the_session() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0
        || missing("useradd")
        || missing("/usr/sbin/sshd")
        || !std::path::Path::new("/etc/pam.d/sshd").exists()
    {
        return;
    }
    let s = Setup::new("pamenv");
    let u = TempUser::create(&s, "pv", "*", None);
    let home = s.dir.path(&format!("home-{}", u.0));
    let file = home.join(".pam_environment");
    std::fs::write(
        &file,
        "SLUICE_PAM_T DEFAULT=from-pam\nSSH_CONNECTION DEFAULT=forged\n",
    )
    .unwrap();
    let st = Command::new("chown").arg(&u.0).arg(&file).status().unwrap();
    assert!(st.success());
    let mut seen = Vec::new();
    for openssh in [false, true] {
        let server = s.start(openssh, "UsePAM yes");
        let mut c = s.client(true, &server, &["-l", &u.0]);
        c.arg("echo \"$SLUICE_PAM_T\"; echo \"$SSH_CONNECTION\" | cut -d' ' -f1");
        seen.push(String::from_utf8_lossy(&run(c, b"", 30).stdout).into_owned());
    }
    assert_eq!(seen[0], seen[1], "sluiced, sshd");
    // Where pam_env reads the user's file (Debian), the value is there.
    if std::fs::read_to_string("/etc/pam.d/sshd").is_ok_and(|t| t.contains("user_readenv=1")) {
        assert!(seen[0].starts_with("from-pam\n"), "{seen:?}");
    }
    assert!(!seen[0].contains("forged"), "{seen:?}");
}
