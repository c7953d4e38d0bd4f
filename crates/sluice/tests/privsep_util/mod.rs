//! Helpers for the privilege separation tests: a throwaway user, the
//! process tree below the listener, /proc status fields, polling.

#![allow(dead_code)]

use crate::common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A throwaway user whose authorized key is the setup's (AuthorizedKeysFile
/// points into the test directory), removed on drop.
pub(crate) struct TestUser {
    pub(crate) name: String,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
}

impl TestUser {
    pub(crate) fn new() -> TestUser {
        Self::named("slps")
    }

    /// A user whose name starts with `prefix` (a few letters).
    pub(crate) fn named(prefix: &str) -> TestUser {
        let name = format!("{prefix}{}", std::process::id() % 100_000);
        let _ = Command::new("userdel").args(["-r", &name]).output();
        // Tests run in parallel: useradd fails while another holds the
        // passwd lock, so try a few times.
        let mut tries = 0;
        loop {
            // "*": no password but not locked ("!", useradd's default,
            // refuses every login without PAM, as in sshd).
            let out = Command::new("useradd")
                .args(["-m", "-s", "/bin/sh", "-p", "*", &name])
                .output()
                .unwrap();
            if out.status.success() {
                break;
            }
            tries += 1;
            assert!(
                tries < 20,
                "useradd {name}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let id = |flag: &str| -> u32 {
            let o = Command::new("id").args([flag, &name]).output().unwrap();
            String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
        };
        let (uid, gid) = (id("-u"), id("-g"));
        TestUser { name, uid, gid }
    }
}

impl Drop for TestUser {
    fn drop(&mut self) {
        for _ in 0..20 {
            let st = Command::new("userdel")
                .args(["-r", &self.name])
                .stderr(Stdio::null())
                .status();
            // 6: no such user (gone already); 10: cannot lock, try again.
            if st.map_or(true, |s| s.code() != Some(10)) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

pub(crate) fn skip() -> bool {
    if user() != "root" {
        eprintln!("skipping: needs root");
        return true;
    }
    false
}

/// Every process below `root` (children, grandchildren...).
pub(crate) fn descendants(root: u32) -> Vec<u32> {
    let mut parent: Vec<(u32, u32)> = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The field after the command name's closing parenthesis: state, ppid.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        if let Some(ppid) = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
            parent.push((pid, ppid));
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for (c, pp) in &parent {
            if *pp == p {
                out.push(*c);
                frontier.push(*c);
            }
        }
    }
    out
}

/// (real uid, Seccomp mode) from /proc/PID/status.
pub(crate) fn uid_and_seccomp(pid: u32) -> Option<(u32, u32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
    };
    Some((field("Uid:")?, field("Seccomp:")?))
}

/// The sandboxed pre-auth children below the listener.
pub(crate) fn sandboxed_children(listener: u32) -> Vec<u32> {
    descendants(listener)
        .into_iter()
        .filter(|p| uid_and_seccomp(*p).is_some_and(|(uid, sc)| uid != 0 && sc == 2))
        .collect()
}

pub(crate) fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
