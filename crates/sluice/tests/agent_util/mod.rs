//! Helpers shared by the agent and session tests: an `ssh-agent` the test
//! owns, a setup with an agent-only key, clients offering only agent keys.

#![allow(dead_code)]

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `ssh-agent -D -a SOCK` holding some keys; killed on drop.
pub(crate) struct Agent {
    child: Child,
    pub(crate) sock: PathBuf,
}

impl Agent {
    pub(crate) fn start(dir: &TempDir, keys: &[&Path]) -> Agent {
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
    pub(crate) fn add(&self, key: &Path, confirm: bool) {
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
pub(crate) fn agent_setup(tag: &str) -> (Setup, PathBuf) {
    let s = Setup::new(tag);
    let rsa = s.dir.path("agent_rsa");
    keygen(&rsa, "rsa");
    let mut auth = std::fs::read_to_string(s.dir.path("authorized_keys")).unwrap();
    auth.push_str(&std::fs::read_to_string(s.dir.path("agent_rsa.pub")).unwrap());
    std::fs::write(s.dir.path("authorized_keys"), auth).unwrap();
    (s, rsa)
}

/// A client offering only what the agent at `sock` holds (no key files).
pub(crate) fn agent_client(
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

pub(crate) fn fingerprint(pubkey: &Path) -> String {
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

pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
