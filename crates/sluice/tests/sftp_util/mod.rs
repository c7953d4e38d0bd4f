//! Helpers for the internal-sftp tests: sluiced with `Subsystem sftp
//! internal-sftp`, stock `sftp -b` runs, root-owned chroot directories,
//! raw SFTP packets and their replies.

#![allow(dead_code)]

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// sluiced with `Subsystem sftp SUBSYSTEM` (instead of OpenSSH's program)
/// and `extra` lines.
pub(crate) fn start_sftp(s: &Setup, subsystem: &str, extra: &str) -> Server {
    let port = free_port();
    let cfg = s.config(port, extra);
    let text = std::fs::read_to_string(&cfg).unwrap().replace(
        "Subsystem sftp /usr/lib/openssh/sftp-server",
        &format!("Subsystem sftp {subsystem}"),
    );
    std::fs::write(&cfg, text).unwrap();
    let log_path = s.dir.path(&format!("server_{port}.log"));
    let log = std::fs::File::create(&log_path).unwrap();
    let child = Command::new(SLUICED)
        .args(["-D", "-e", "-f"])
        .arg(&cfg)
        .stdin(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "sluiced did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    Server {
        child,
        port,
        log: log_path,
    }
}

/// Stock `sftp -b BATCH` as `user` (None: the test's own user).
pub(crate) fn sftp_batch(
    s: &Setup,
    server: &Server,
    user: Option<&str>,
    batch: &[u8],
) -> std::process::Output {
    let b = s.dir.path(&format!("batch_{}", batch.len()));
    std::fs::write(&b, batch).unwrap();
    let mut c = Command::new("sftp");
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
    .args(["-P", &server.port.to_string()])
    .arg("-b")
    .arg(&b)
    .arg(match user {
        Some(u) => format!("{u}@127.0.0.1"),
        None => "127.0.0.1".into(),
    });
    run(c, b"", 120)
}

/// A directory owned by root, mode 0755, under /var/lib (root-owned all
/// the way up, as ChrootDirectory demands; /tmp is world-writable),
/// removed on drop.
pub(crate) struct Jail(pub PathBuf);

impl Jail {
    pub(crate) fn new(tag: &str) -> Jail {
        let p = PathBuf::from(format!("/var/lib/sluice-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        chmod(&p, 0o755);
        Jail(p)
    }
}

impl Drop for Jail {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(crate) fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

pub(crate) fn chown(p: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::chown(p, Some(uid), Some(gid)).unwrap();
}

/// The replies in `out`: (type, id, the bytes after the id).
pub(crate) fn replies(out: &[u8]) -> Vec<(u8, u32, Vec<u8>)> {
    let mut v = Vec::new();
    let mut at = 0;
    while at + 4 <= out.len() {
        let n = u32::from_be_bytes(out[at..at + 4].try_into().unwrap()) as usize;
        if at + 4 + n > out.len() || n < 5 {
            break;
        }
        let body = &out[at + 4..at + 4 + n];
        let id = u32::from_be_bytes(body[1..5].try_into().unwrap());
        v.push((body[0], id, body[5..].to_vec()));
        at += 4 + n;
    }
    v
}

/// A STATUS reply's code.
pub(crate) fn status_code(rest: &[u8]) -> u32 {
    u32::from_be_bytes(rest[..4].try_into().unwrap())
}

pub(crate) fn sha_of(p: &Path) -> String {
    sha256_file(p)
}

/// Pseudo-random bytes (a fixed xorshift stream), `n` of them.
pub(crate) fn data(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
