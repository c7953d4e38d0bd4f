//! ssh-agent at both ends against Debian's OpenSSH: authentication with
//! keys held by `ssh-agent` (RSA with rsa-sha2-256 and -512), agent
//! forwarding in every pairing with a second hop that authenticates through
//! the forwarded agent, refusal when the server disallows it; the session
//! environment of a user started by a root server, bounded env requests and
//! no-more-sessions@openssh.com.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `ssh-agent -D -a SOCK` holding some keys; killed on drop.
struct Agent {
    child: Child,
    sock: PathBuf,
}

impl Agent {
    fn start(dir: &TempDir, keys: &[&Path]) -> Agent {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let sock = dir.path(&format!("agent{n}.sock"));
        // No askpass: keys added with -c are refused at signing time.
        let child = Command::new("ssh-agent")
            .arg("-D")
            .arg("-a")
            .arg(&sock)
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .env("SSH_ASKPASS", "/bin/false")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ssh-agent (openssh-client)");
        let agent = Agent { child, sock };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !agent.sock.exists() {
            assert!(Instant::now() < deadline, "ssh-agent did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        for k in keys {
            agent.add(k, false);
        }
        agent
    }

    /// ssh-add, with -c (confirm each use) when `confirm`.
    fn add(&self, key: &Path, confirm: bool) {
        let st = Command::new("ssh-add")
            .arg(if confirm { "-qc" } else { "-q" })
            .arg(key)
            .env("SSH_AUTH_SOCK", &self.sock)
            .status()
            .unwrap();
        assert!(st.success(), "ssh-add {}", key.display());
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A setup whose extra RSA key is authorized but only held by the agent.
fn agent_setup(tag: &str) -> (Setup, PathBuf) {
    let s = Setup::new(tag);
    let rsa = s.dir.path("agent_rsa");
    keygen(&rsa, "rsa");
    let mut auth = std::fs::read_to_string(s.dir.path("authorized_keys")).unwrap();
    auth.push_str(&std::fs::read_to_string(s.dir.path("agent_rsa.pub")).unwrap());
    std::fs::write(s.dir.path("authorized_keys"), auth).unwrap();
    (s, rsa)
}

/// A client offering only what the agent at `sock` holds (no key files).
fn agent_client(
    s: &Setup,
    openssh: bool,
    port: u16,
    sock: Option<&Path>,
    extra: &[&str],
) -> Command {
    let mut c = Command::new(if openssh { "ssh" } else { SLUICE });
    c.args([
        "-F",
        "/dev/null",
        "-o",
        "StrictHostKeyChecking=no",
        "-o",
        "BatchMode=yes",
    ])
    .args(["-o", "LogLevel=ERROR"])
    .arg("-o")
    .arg(format!(
        "UserKnownHostsFile={}",
        s.dir.path("known_hosts").display()
    ))
    .arg("-o")
    .arg(format!(
        "IdentityFile={}",
        s.dir.path("no_such_key").display()
    ))
    .args(["-p", &port.to_string()])
    .args(extra)
    .arg("127.0.0.1")
    .env_remove("SSH_AUTH_SOCK");
    if let Some(p) = sock {
        c.env("SSH_AUTH_SOCK", p);
    }
    c
}

fn fingerprint(pubkey: &Path) -> String {
    let out = Command::new("ssh-keygen")
        .arg("-lf")
        .arg(pubkey)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_owned()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn agent_authentication_with_rsa_sha2_signatures() {
    if missing("/usr/sbin/sshd") || missing("ssh-agent") {
        return;
    }
    let (s, rsa) = agent_setup("agentauth");
    let agent = Agent::start(&s.dir, &[&rsa]);
    for openssh in [true, false] {
        for alg in ["rsa-sha2-256", "rsa-sha2-512"] {
            let server = s.start(openssh, &format!("PubkeyAcceptedAlgorithms {alg}"));
            let label = format!("sluice->{} {alg}", if openssh { "sshd" } else { "sluiced" });
            // The agent from SSH_AUTH_SOCK, then from IdentityAgent.
            // ssh too picks the alg from the server's server-sig-algs, which
            // sshd 9.2 fills with every algorithm it knows: the client is
            // told the one to use.
            let ia = format!("IdentityAgent={}", agent.sock.display());
            let pa = format!("PubkeyAcceptedAlgorithms={alg}");
            for (sock, extra) in [
                (Some(agent.sock.as_path()), vec!["-o", &pa]),
                (None, vec!["-o", &ia, "-o", &pa]),
            ] {
                let mut c = agent_client(&s, false, server.port, sock, &extra);
                c.arg("echo ok");
                let out = run(c, b"", 60);
                assert_eq!(
                    text(&out.stdout),
                    "ok\n",
                    "{label}: {}\n{}",
                    text(&out.stderr),
                    server.log_text()
                );
            }
        }
    }
    // IdentityAgent none: no agent, no key, refused.
    let server = s.start(false, "");
    let mut c = agent_client(
        &s,
        false,
        server.port,
        Some(&agent.sock),
        &["-o", "IdentityAgent=none"],
    );
    c.arg("echo ok");
    let out = run(c, b"", 60);
    assert_eq!(out.status.code(), Some(255));
    assert!(
        text(&out.stderr).contains("Permission denied"),
        "{}",
        text(&out.stderr)
    );
    // The agent refuses to sign with its first key (added with -c, no
    // askpass to confirm): the next key is tried, as ssh does.
    let confirm = s.dir.path("agent_confirm");
    keygen(&confirm, "ed25519");
    let mut auth = std::fs::read_to_string(s.dir.path("authorized_keys")).unwrap();
    auth.push_str(&std::fs::read_to_string(s.dir.path("agent_confirm.pub")).unwrap());
    std::fs::write(s.dir.path("authorized_keys"), auth).unwrap();
    let agent2 = Agent::start(&s.dir, &[]);
    agent2.add(&confirm, true);
    agent2.add(&rsa, false);
    let mut c = agent_client(&s, false, server.port, Some(&agent2.sock), &[]);
    c.arg("echo ok");
    let out = run(c, b"", 60);
    assert_eq!(text(&out.stdout), "ok\n", "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("signing failed"),
        "{}",
        text(&out.stderr)
    );
}

/// In the remote session: list the forwarded agent's keys, then log in to
/// `hop_port` with it.
fn two_hop_command(hop_port: u16) -> String {
    format!(
        "echo sock=$SSH_AUTH_SOCK; ssh-add -l; echo rc=$?; \
         ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
         -o LogLevel=ERROR -o IdentityFile=/nonexistent -p {hop_port} 127.0.0.1 echo hop"
    )
}

#[test]
fn agent_forwarding_every_pairing_with_a_second_hop() {
    if missing("/usr/sbin/sshd") || missing("ssh-agent") {
        return;
    }
    let (s, rsa) = agent_setup("agentfwd");
    let agent = Agent::start(&s.dir, &[&rsa]);
    let fp = fingerprint(&s.dir.path("agent_rsa.pub"));
    let hop = s.start(false, "");
    for (oc, os, label) in [
        (false, false, "sluice->sluiced"),
        (false, true, "sluice->sshd"),
        (true, false, "ssh->sluiced"),
    ] {
        let server = s.start(os, "AllowAgentForwarding yes");
        // -A, and for sluice also ForwardAgent with the socket's path.
        let fa = format!("ForwardAgent={}", agent.sock.display());
        let variants: Vec<Vec<&str>> = if oc {
            vec![vec!["-A"]]
        } else {
            vec![vec!["-A"], vec!["-o", &fa]]
        };
        for extra in variants {
            let mut c = agent_client(&s, oc, server.port, Some(&agent.sock), &extra);
            c.arg(two_hop_command(hop.port));
            let out = run(c, b"", 60);
            let o = text(&out.stdout);
            let why = format!(
                "{label} {extra:?}: {o}\n{}\nserver log:\n{}\nhop log:\n{}",
                text(&out.stderr),
                server.log_text(),
                hop.log_text()
            );
            assert!(o.contains(&fp) && o.contains("rc=0"), "{why}");
            assert!(o.ends_with("hop\n"), "{why}");
            if !os {
                // sluiced removes the socket and its directory when the
                // connection ends.
                let sock = o
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .trim_start_matches("sock=");
                let dir = Path::new(sock).parent().unwrap().to_owned();
                assert!(dir.to_string_lossy().starts_with("/tmp/ssh-"), "{why}");
                let deadline = Instant::now() + Duration::from_secs(10);
                while dir.exists() {
                    assert!(Instant::now() < deadline, "{} left behind", dir.display());
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
    }
}

#[test]
fn agent_forwarding_refused_when_the_server_disallows_it() {
    if missing("/usr/sbin/sshd") || missing("ssh-agent") {
        return;
    }
    let (s, rsa) = agent_setup("agentno");
    let agent = Agent::start(&s.dir, &[&rsa]);
    let hop = s.start(false, "");
    for (oc, os, cfg) in [
        (false, false, "AllowAgentForwarding no"),
        (false, false, "DisableForwarding yes"),
        (false, true, "AllowAgentForwarding no"),
        (true, false, "AllowAgentForwarding no"),
    ] {
        let server = s.start(os, cfg);
        let mut c = agent_client(&s, oc, server.port, Some(&agent.sock), &["-A"]);
        c.arg(two_hop_command(hop.port));
        let out = run(c, b"", 60);
        let o = text(&out.stdout);
        let why = format!(
            "{oc} {os} {cfg}: {o}\n{}\n{}",
            text(&out.stderr),
            server.log_text()
        );
        assert!(o.starts_with("sock=\n") && o.contains("rc=2"), "{why}");
        assert!(!o.contains("hop"), "{why}");
        assert_eq!(out.status.code(), Some(255), "{why}");
        if !os {
            assert!(
                server.log_text().contains("agent forwarding refused"),
                "{why}"
            );
        }
    }
}

/// A throwaway local user, removed (with its home) on drop.
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

/// A hostile server (paramiko) opens an agent channel: refused and logged
/// unless forwarding was asked for, bridged to the agent when it was.
#[test]
fn client_refuses_agent_channels_it_did_not_ask_for() {
    use std::io::BufRead;
    let has_paramiko = Command::new("python3")
        .args(["-c", "import paramiko"])
        .status()
        .is_ok_and(|s| s.success());
    if !has_paramiko || missing("ssh-agent") {
        assert!(
            std::env::var("CI").is_err(),
            "paramiko is required under CI"
        );
        return;
    }
    let (s, rsa) = agent_setup("agentprobe");
    let agent = Agent::start(&s.dir, &[&rsa]);
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/peers/agent_probe_server.py"
    );
    for (extra, want) in [
        (vec![], "agent channel: refused\n"),
        (vec!["-A"], "agent channel: 1 keys\n"),
    ] {
        let port = free_port();
        let mut server = Command::new("python3")
            .arg(script)
            .arg(port.to_string())
            .arg(s.dir.path("host_ed25519"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        let _ = std::io::BufReader::new(server.stdout.take().unwrap()).read_line(&mut line);
        assert_eq!(line, "ready\n");
        let mut c = agent_client(&s, false, port, Some(&agent.sock), &extra);
        c.arg("probe");
        let out = run(c, b"", 60);
        let _ = server.kill();
        let _ = server.wait();
        let err = text(&out.stderr);
        assert_eq!(text(&out.stdout), want, "{extra:?}: {err}");
        assert_eq!(
            err.contains("Warning: ssh server tried agent forwarding."),
            extra.is_empty(),
            "{err}"
        );
    }
}
