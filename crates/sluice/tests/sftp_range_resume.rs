//! Resume per range (client/sftp/resume.rs): a copy over several
//! connections (`Streams 4`) killed with SIGKILL once some ranges are
//! complete, then resumed with `reget`/`reput`: the result's SHA-256 is
//! the source's, `-v` shows the completed ranges skipped, no short file
//! ever appears under the final name, and a corrupted completed range is
//! caught by sluiced's hash and copied again.

mod common;
mod sftp_util;

use common::*;
use sftp_util::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SFTP: &str = env!("CARGO_BIN_EXE_sluice-sftp");
const SIZE: usize = 96 << 20;

/// sluice-sftp in batch mode with Streams 4, upload records under `state`.
fn sftp(s: &Setup, server: &Server, state: &Path, batch: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(SFTP);
    c.env("XDG_STATE_HOME", state)
        .args(["-F", "/dev/null", "-o", "StrictHostKeyChecking=no"])
        .args(["-o", "BatchMode=yes", "-o", "Streams=4", "-v"])
        .arg("-o")
        .arg(format!(
            "UserKnownHostsFile={}",
            s.dir.path("known_hosts").display()
        ))
        .arg("-i")
        .arg(&s.user_key)
        .args(["-P", &server.port.to_string()])
        .args(extra)
        .arg("-b")
        .arg(batch)
        .arg("127.0.0.1");
    c
}

/// The `done` lines of a range record.
fn done_ranges(record: &Path) -> Vec<(u64, u64)> {
    std::fs::read_to_string(record)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("done "))
        .filter_map(|r| r.split_once(' '))
        .filter_map(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
        .collect()
}

/// Runs `c` (rate-limited) and kills it with SIGKILL once the record
/// `find` points to lists two completed ranges; returns the ranges the
/// record holds after the kill.
fn kill_after_a_range(mut c: Command, find: &dyn Fn() -> Option<PathBuf>) -> Vec<(u64, u64)> {
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let record = loop {
        if let Some(p) = find().filter(|p| done_ranges(p).len() >= 2) {
            break p;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the copy ended before a range completed"
        );
        assert!(Instant::now() < deadline, "no range completed");
        std::thread::sleep(Duration::from_millis(5));
    };
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    done_ranges(&record)
}

fn skipped(log: &str) -> usize {
    log.lines()
        .filter_map(|l| l.split("resume: skipping ").nth(1))
        .filter_map(|r| r.split(' ').next()?.parse().ok())
        .next()
        .unwrap_or(0)
}

#[test]
fn a_killed_parallel_download_resumes_per_range_and_a_corrupt_range_goes_again() {
    let s = Setup::new("sftp-range-get");
    let src = s.dir.path("src.bin");
    std::fs::write(&src, data(SIZE, 21)).unwrap();
    let want = sha_of(&src);
    let state = s.dir.path("state");
    let mut servers = vec![("sluiced", start_sftp(&s, "internal-sftp", ""))];
    if !missing("/usr/sbin/sshd") {
        servers.push(("sshd", s.start(true, "")));
    }
    for (label, server) in &servers {
        let dst = s.dir.path(&format!("get_{label}.bin"));
        let part = s.dir.path(&format!(".get_{label}.bin.sluice-part"));
        let record = s.dir.path(&format!(".get_{label}.bin.sluice-ranges"));
        let b = s.dir.path(&format!("get_{label}.batch"));
        std::fs::write(&b, format!("get {} {}\n", src.display(), dst.display())).unwrap();
        // 200000 Kbit/s: 25 MB/s, about four seconds for the file.
        let c = sftp(&s, server, &state, &b, &["-l", "200000"]);
        let rec = record.clone();
        let done = kill_after_a_range(c, &move || Some(rec.clone()));
        assert!(!dst.exists(), "{label}: a short file under the final name");
        assert!(part.is_file(), "{label}: no partial file");
        // Against sluiced, spoil a byte of the first completed range.
        let spoiled = done[0];
        if *label == "sluiced" {
            let f = std::fs::OpenOptions::new().write(true).open(&part).unwrap();
            std::os::unix::fs::FileExt::write_at(&f, b"\xff\x00\xff", spoiled.0 + 1000).unwrap();
        }
        std::fs::write(&b, format!("reget {} {}\n", src.display(), dst.display())).unwrap();
        let o = run(sftp(&s, server, &state, &b, &[]), b"", 180);
        let log = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "{label}: {log}");
        assert_eq!(sha_of(&dst), want, "{label}: resumed download");
        assert!(!part.exists() && !record.exists(), "{label}: leftovers");
        let n = skipped(&log);
        if *label == "sluiced" {
            assert!(
                log.contains(&format!("bytes {}-{} differ", spoiled.0, spoiled.1)),
                "{label}: corruption not caught:\n{log}"
            );
            assert_eq!(n, done.len() - 1, "{label}:\n{log}");
        } else {
            assert!(log.contains("trusting the record"), "{label}:\n{log}");
            assert_eq!(n, done.len(), "{label}:\n{log}");
        }
        assert!(n >= 1, "{label}: nothing skipped:\n{log}");
        eprintln!("{label}: {n} of the ranges skipped on resume");
    }
}

#[test]
fn a_killed_parallel_upload_resumes_per_range() {
    let s = Setup::new("sftp-range-put");
    let src = s.dir.path("src.bin");
    std::fs::write(&src, data(SIZE, 22)).unwrap();
    let want = sha_of(&src);
    let mut servers = vec![("sluiced", start_sftp(&s, "internal-sftp", ""))];
    if !missing("/usr/sbin/sshd") {
        servers.push(("sshd", s.start(true, "")));
    }
    for (label, server) in &servers {
        let state = s.dir.path(&format!("state_{label}"));
        let records = state.join("sluice/resume");
        let dst = s.dir.path(&format!("put_{label}.bin"));
        let part = s.dir.path(&format!(".put_{label}.bin.sluice-part"));
        let b = s.dir.path(&format!("put_{label}.batch"));
        std::fs::write(&b, format!("put {} {}\n", src.display(), dst.display())).unwrap();
        let c = sftp(&s, server, &state, &b, &["-l", "200000"]);
        let dir = records.clone();
        let done = kill_after_a_range(c, &move || {
            std::fs::read_dir(&dir)
                .ok()?
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .find(|p| p.extension().is_none())
        });
        assert!(!dst.exists(), "{label}: a short file under the final name");
        assert!(part.is_file(), "{label}: no partial file");
        let spoiled = done[0];
        if *label == "sluiced" {
            let f = std::fs::OpenOptions::new().write(true).open(&part).unwrap();
            std::os::unix::fs::FileExt::write_at(&f, b"\x00\x01", spoiled.0 + 7).unwrap();
        }
        std::fs::write(&b, format!("reput {} {}\n", src.display(), dst.display())).unwrap();
        let o = run(sftp(&s, server, &state, &b, &[]), b"", 180);
        let log = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "{label}: {log}");
        assert_eq!(sha_of(&dst), want, "{label}: resumed upload");
        assert!(!part.exists(), "{label}: partial file left");
        let left: Vec<_> = std::fs::read_dir(&records).unwrap().collect();
        assert!(left.is_empty(), "{label}: records left: {left:?}");
        let n = skipped(&log);
        if *label == "sluiced" {
            assert!(
                log.contains(&format!("bytes {}-{} differ", spoiled.0, spoiled.1)),
                "{label}: corruption not caught:\n{log}"
            );
            assert_eq!(n, done.len() - 1, "{label}:\n{log}");
        } else {
            assert!(log.contains("trusting the record"), "{label}:\n{log}");
            assert_eq!(n, done.len(), "{label}:\n{log}");
        }
        assert!(n >= 1, "{label}: nothing skipped:\n{log}");
        eprintln!("{label}: {n} of the ranges skipped on resume");
    }
}
