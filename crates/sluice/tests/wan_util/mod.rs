//! The repo's delay line (crates/delayline) for tests that cross a long
//! path: two network namespaces joined at a round trip and rate the test
//! picks, sluiced in one, clients in the other. Needs root, /dev/net/tun
//! and the delayline binary (built by `cargo test --workspace`).

#![allow(dead_code)]

use super::common::*;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn delayline() -> Option<PathBuf> {
    let p = PathBuf::from(SLUICE).with_file_name("delayline");
    p.exists().then_some(p)
}

/// A running delay line; taken down on drop.
pub(crate) struct Line {
    child: Child,
    ns_a: String,
    ns_b: String,
    pub(crate) addr_b: String,
}

impl Line {
    /// Two namespaces joined with `rtt_ms` of round trip at `rate`
    /// (delayline's syntax, e.g. "100mbit"); Err says why it cannot run.
    pub(crate) fn up(rtt_ms: u64, rate: &str) -> Result<Line, String> {
        Line::up_with(rtt_ms, rate, &[])
    }

    /// As [`Line::up`], with more of delayline's options (`--loss 1%`).
    pub(crate) fn up_with(rtt_ms: u64, rate: &str, extra: &[&str]) -> Result<Line, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 || !std::path::Path::new("/dev/net/tun").exists() {
            return Err("needs root and /dev/net/tun".into());
        }
        let bin = delayline().ok_or("the delayline binary is not built")?;
        let pid = std::process::id();
        let (ns_a, ns_b) = (format!("swa{pid}"), format!("swb{pid}"));
        let net = format!("10.{}.{}", 100 + pid % 100, (pid / 100) % 250);
        let mut child = Command::new(bin)
            .args(["up", "--rtt", &format!("{rtt_ms}ms"), "--rate", rate])
            .args(["--ns-a", &ns_a, "--ns-b", &ns_b, "--net", &net])
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let line = Line {
            child,
            ns_a,
            ns_b,
            addr_b: format!("{net}.2"),
        };
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(l) if l.starts_with("ready:") => Ok(line),
            other => panic!("delayline did not come up: {other:?}"),
        }
    }

    pub(crate) fn in_ns(&self, b: bool, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args([
            "netns",
            "exec",
            if b { &self.ns_b } else { &self.ns_a },
            program,
        ]);
        c
    }
}

impl Line {
    /// Stops the delay line (SIGSTOP): from now on nothing crosses the
    /// path, in either direction, and nobody says so (no RST, no ICMP),
    /// as when a peer or a middlebox vanishes.
    pub(crate) fn freeze(&self) {
        // SAFETY: plain kill(2) of our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGSTOP) };
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        // What still runs in the namespaces goes first: a server's
        // connection processes outlive its listener (as sshd's do), and a
        // test that ended with its client cut off would leave them waiting
        // for keepalives.
        for ns in [&self.ns_a, &self.ns_b] {
            let pids = Command::new("ip")
                .args(["netns", "pids", ns])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            for pid in pids
                .split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok())
            {
                if pid != self.child.id() as i32 && pid != std::process::id() as i32 {
                    // SAFETY: kill(2); the pid was just listed in our test's
                    // own namespace.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
        }
        // SAFETY: plain kill(2) of our own child; SIGTERM lets it clean up
        // (SIGCONT first, in case it was frozen).
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGCONT);
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let _ = self.child.wait();
    }
}

/// A server process, killed when dropped (also when an assertion fails).
pub(crate) struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// sluiced in namespace B, logging at DEBUG1 to a file; `extra` adds config lines.
pub(crate) fn start_sluiced(s: &Setup, line: &Line, port: u16, extra: &str) -> (Daemon, PathBuf) {
    start_server(s, line, port, SLUICED, extra)
}

/// Debian's sshd in namespace B, as [`start_sluiced`].
pub(crate) fn start_sshd(s: &Setup, line: &Line, port: u16, extra: &str) -> (Daemon, PathBuf) {
    let _ = std::fs::create_dir_all("/run/sshd");
    start_server(
        s,
        line,
        port,
        "/usr/sbin/sshd",
        &format!("UsePAM no\n{extra}"),
    )
}

fn start_server(s: &Setup, line: &Line, port: u16, bin: &str, extra: &str) -> (Daemon, PathBuf) {
    let d = s.dir.0.display();
    let cfg = s.dir.path(&format!("wan_server_{port}_config"));
    std::fs::write(
        &cfg,
        format!(
            "ListenAddress {}\nPort {port}\nHostKey {d}/host_ed25519\nAuthorizedKeysFile {d}/authorized_keys\n\
             StrictModes no\nPidFile none\nPermitRootLogin yes\nLogLevel DEBUG1\n{extra}",
            line.addr_b
        ),
    )
    .unwrap();
    let log = s.dir.path(&format!("wan_server_{port}.log"));
    let child = Daemon(
        line.in_ns(true, bin)
            .args(["-D", "-e", "-f"])
            .arg(&cfg)
            .stdin(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("Server listening")
    {
        assert!(Instant::now() < deadline, "{bin} did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, log)
}

pub(crate) fn client(s: &Setup, line: &Line, openssh: bool, port: u16, extra: &[&str]) -> Command {
    let mut c = line.in_ns(false, if openssh { "ssh" } else { SLUICE });
    c.args([
        "-F",
        "/dev/null",
        "-o",
        "StrictHostKeyChecking=no",
        "-o",
        "BatchMode=yes",
    ])
    .arg("-o")
    .arg(format!(
        "UserKnownHostsFile={}",
        s.dir.path("known_hosts").display()
    ))
    .arg("-i")
    .arg(&s.user_key)
    .args(["-p", &port.to_string()])
    .args(extra)
    .arg(&line.addr_b);
    c
}
