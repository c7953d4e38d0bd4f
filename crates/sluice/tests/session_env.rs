//! Sessions as OpenSSH users expect them: a root server runs the session
//! as the user with sshd's environment (compared with Debian's sshd),
//! SetEnv and PermitUserEnvironment, a forwarded agent that is the user's,
//! bounded env requests, and no-more-sessions@openssh.com.

mod agent_util;
mod common;
use agent_util::*;
use common::*;
use std::path::Path;
use std::process::{Command, Stdio};

struct TempUser {
    name: String,
}

impl TempUser {
    fn create(home: &Path) -> TempUser {
        let name = format!("slt{}", std::process::id() % 1_000_000);
        let _ = Command::new("userdel")
            .args(["-r", &name])
            .stderr(Stdio::null())
            .status();
        let st = Command::new("useradd")
            .args(["-m", "-s", "/bin/sh", "-p", "*", "-d"])
            .arg(home)
            .arg(&name)
            .status()
            .expect("useradd (passwd)");
        assert!(st.success(), "useradd {name}");
        TempUser { name }
    }
}

impl Drop for TempUser {
    fn drop(&mut self) {
        let _ = Command::new("userdel")
            .args(["-r", &self.name])
            .stderr(Stdio::null())
            .status();
    }
}

const ENV_COMMAND: &str = "id -u; pwd; for v in HOME USER LOGNAME SHELL PATH MAIL FOO SSH_CONNECTION SSH_CLIENT; do eval echo $v=\\$$v; done";

/// Runs ENV_COMMAND as `user` on `server`; lines by name.
fn session_env(s: &Setup, server: &Server, user: &str) -> Vec<String> {
    let mut c = s.client(false, server, &["-l", user]);
    c.arg(ENV_COMMAND);
    let out = run(c, b"", 60);
    ok(&out, &format!("env as {user}\n{}", server.log_text()));
    text(&out.stdout).lines().map(str::to_owned).collect()
}

#[test]
fn root_server_runs_the_session_as_the_user_with_sshds_environment() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || missing("/usr/sbin/sshd") || missing("useradd") {
        return;
    }
    let s = Setup::new("userenv");
    let u = TempUser::create(&s.dir.path("home"));
    let uid = text(
        &Command::new("id")
            .args(["-u", &u.name])
            .output()
            .unwrap()
            .stdout,
    );
    let sluiced = s.start(false, "SetEnv FOO=bar");
    let sshd = s.start(true, "SetEnv FOO=bar");
    for name in [u.name.as_str(), "root"] {
        let ours = session_env(&s, &sluiced, name);
        let theirs = session_env(&s, &sshd, name);
        // Everything but the ports matches Debian's sshd.
        let strip = |v: &[String]| -> Vec<String> {
            v.iter()
                .filter(|l| !l.starts_with("SSH_"))
                .cloned()
                .collect()
        };
        assert_eq!(strip(&ours), strip(&theirs), "as {name}");
        if name != "root" {
            assert_eq!(ours[0], uid.trim());
            assert_eq!(ours[1], s.dir.path("home").display().to_string());
            assert!(
                ours.contains(&format!("USER={name}"))
                    && ours.contains(&format!("MAIL=/var/mail/{name}"))
            );
            assert!(ours.contains(&"PATH=/usr/local/bin:/usr/bin:/bin:/usr/games".to_owned()));
        }
        assert!(ours.contains(&"FOO=bar".to_owned()), "{ours:?}");
        let conn = ours
            .iter()
            .find(|l| l.starts_with("SSH_CONNECTION="))
            .unwrap();
        let f: Vec<&str> = conn
            .trim_start_matches("SSH_CONNECTION=")
            .split(' ')
            .collect();
        assert_eq!(
            (f.len(), f[0], f[2], f[3]),
            (4, "127.0.0.1", "127.0.0.1", &*sluiced.port.to_string())
        );
        let client = format!("SSH_CLIENT=127.0.0.1 {} {}", f[1], sluiced.port);
        assert!(ours.contains(&client), "{ours:?}");
    }
    // A forwarded agent is the user's: socket and directory belong to them
    // and their ssh-add reaches it.
    let agent = Agent::start(&s.dir, &[&s.user_key]);
    let mut c = agent_client(
        &s,
        false,
        sluiced.port,
        Some(&agent.sock),
        &["-A", "-l", &u.name],
    );
    c.arg(
        "stat -c '%U %a' ${SSH_AUTH_SOCK%/*} $SSH_AUTH_SOCK; ssh-add -l >/dev/null && echo listed",
    );
    let out = run(c, b"", 60);
    let want = format!("{0} 700\n{0} ", u.name);
    let o = text(&out.stdout);
    assert!(
        o.starts_with(&want) && o.ends_with("listed\n"),
        "{o}\n{}",
        text(&out.stderr)
    );
    // PermitUserEnvironment: authorized_keys environment= and
    // ~/.ssh/environment, only when allowed.
    let ssh_dir = s.dir.path("home/.ssh");
    std::fs::create_dir_all(&ssh_dir).unwrap();
    std::fs::write(ssh_dir.join("environment"), "# comment\nUENV=fromfile\n").unwrap();
    let st = Command::new("chown")
        .args(["-R", &format!("{0}:{0}", u.name)])
        .arg(&ssh_dir)
        .status()
        .unwrap();
    assert!(st.success());
    let key = std::fs::read_to_string(s.dir.path("id_ed25519.pub")).unwrap();
    std::fs::write(
        s.dir.path("authorized_keys"),
        format!("environment=\"KENV=fromkey\" {key}"),
    )
    .unwrap();
    for (permit, want) in [("yes", "fromkey fromfile\n"), ("no", "-\n")] {
        let server = s.start(false, &format!("PermitUserEnvironment {permit}"));
        let mut c = s.client(false, &server, &["-l", &u.name]);
        c.arg("echo ${KENV:--} $UENV");
        let out = run(c, b"", 60);
        assert_eq!(
            text(&out.stdout),
            want,
            "PermitUserEnvironment {permit}: {}",
            server.log_text()
        );
    }
}

#[test]
fn oversized_env_request_is_refused_and_the_session_runs() {
    let s = Setup::new("bigenv");
    let server = s.start(false, "AcceptEnv BIG SMALL");
    let big = "x".repeat(40_000);
    for oc in [true, false] {
        let setenv = format!("SetEnv=BIG={big} SMALL=ok");
        let mut c = s.client(oc, &server, &["-o", &setenv]);
        c.arg("echo ${#BIG} $SMALL");
        let out = run(c, b"", 60);
        ok(&out, "session with an oversized env request");
        assert_eq!(text(&out.stdout), "0 ok\n", "client is ssh: {oc}");
    }
    assert!(
        server.log_text().contains("Ignoring env request BIG"),
        "{}",
        server.log_text()
    );
}

#[test]
fn no_more_sessions_refuses_a_second_session() {
    let has_paramiko = Command::new("python3")
        .args(["-c", "import paramiko"])
        .status()
        .is_ok_and(|s| s.success());
    if !has_paramiko {
        assert!(
            std::env::var("CI").is_err(),
            "paramiko is required under CI"
        );
        return;
    }
    let s = Setup::new("nomore");
    let server = s.start(false, "");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/peers/no_more_sessions.py"
    );
    let mut c = Command::new("python3");
    c.arg(script)
        .arg(server.port.to_string())
        .arg(&s.user_key)
        .arg(user());
    let out = run(c, b"", 60);
    ok(&out, "no_more_sessions.py");
    let o = text(&out.stdout);
    assert!(
        o.starts_with("second session: refused"),
        "{o}\n{}",
        server.log_text()
    );
    assert!(o.ends_with("first still works\nexit 0\n"), "{o}");
    assert!(
        server.log_text().contains("no-more-sessions"),
        "{}",
        server.log_text()
    );
    // sluice promises it too.
    let mut c = s.client(false, &server, &["-v"]);
    c.arg("true");
    let out = run(c, b"", 60);
    ok(&out, "sluice -v");
    assert!(text(&out.stderr).contains("Requesting no-more-sessions@openssh.com"));
}
