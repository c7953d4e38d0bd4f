//! Resume by default (issue 42): every copy keeps what it needs to resume,
//! on one connection as on several. A 1 GiB upload and a 1 GiB download
//! into sluiced, each killed with SIGKILL at about half (when its record
//! of completed ranges says 45-55%), with `Streams auto` (the default: one
//! connection on loopback into sluiced) and `Streams 1`, then resumed with
//! `reput`/`reget`, and once with `sluice-scp -a`: the result's SHA-256 is
//! the source's, less than 60% of the file crossed the second time (the
//! client's own count of socket bytes at -v, "Transferred: sent N,
//! received M bytes", not a clock), and nothing is left hidden: no
//! partial file, no record.

mod common;
mod sftp_util;

use common::*;
use sftp_util::*;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SFTP: &str = env!("CARGO_BIN_EXE_sluice-sftp");
const SCP: &str = env!("CARGO_BIN_EXE_sluice-scp");
const SIZE: u64 = 1 << 30;
/// The first run's rate (Kbit/s: 100 MB/s), so the 45-55% window lasts
/// about a second even on a loaded machine; the resume runs at full speed.
const FIRST_RATE: &str = "800000";

/// `SIZE` pseudo-random bytes (xorshift, 8 bytes a step) written in
/// pieces, not held in memory.
fn write_source(p: &Path, seed: u64) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(p).unwrap());
    let mut x = seed | 1;
    let mut buf = vec![0u8; 8 << 20];
    for _ in 0..SIZE / buf.len() as u64 {
        for w in buf.chunks_exact_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            w.copy_from_slice(&x.to_le_bytes());
        }
        f.write_all(&buf).unwrap();
    }
    f.flush().unwrap();
}

/// SHA-256 of a file, read in pieces.
fn sha(p: &Path) -> String {
    let mut f = std::fs::File::open(p).unwrap();
    let mut ctx = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
    let mut buf = vec![0u8; 8 << 20];
    loop {
        let n = f.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        ctx.update(&buf[..n]);
    }
    ctx.finish()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The connection's options for sluice-sftp or sluice-scp, `-v`, upload
/// records under `state`.
fn client(bin: &str, s: &Setup, server: &Server, state: &Path, streams: &str) -> Command {
    let mut c = Command::new(bin);
    c.env("XDG_STATE_HOME", state)
        .args(["-F", "/dev/null", "-o", "StrictHostKeyChecking=no"])
        .args(["-o", "BatchMode=yes", "-v"])
        .arg("-o")
        .arg(format!("Streams={streams}"))
        .arg("-o")
        .arg(format!(
            "UserKnownHostsFile={}",
            s.dir.path("known_hosts").display()
        ))
        .arg("-i")
        .arg(&s.user_key)
        .args(["-P", &server.port.to_string()]);
    c
}

/// sluice-sftp running `line` in batch mode.
fn sftp(
    s: &Setup,
    server: &Server,
    state: &Path,
    streams: &str,
    line: &str,
    extra: &[&str],
) -> Command {
    let b = s.dir.path(&format!("batch_{}", line.len()));
    std::fs::write(&b, format!("{line}\n")).unwrap();
    let mut c = client(SFTP, s, server, state, streams);
    c.args(extra).arg("-b").arg(b).arg("127.0.0.1");
    c
}

/// The bytes a record lists as complete (its ranges joined).
fn recorded(record: &Path) -> u64 {
    let mut v: Vec<(u64, u64)> = std::fs::read_to_string(record)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("done "))
        .filter_map(|r| r.split_once(' '))
        .filter_map(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
        .collect();
    v.sort_unstable();
    let (mut total, mut at) = (0, 0);
    for (a, b) in v {
        let a = a.max(at);
        if b > a {
            total += b - a;
            at = b;
        }
    }
    total
}

/// Runs `c` and kills it with SIGKILL once the record `find` points to
/// lists 45-55% of the file; returns what it listed then.
fn kill_at_half(mut c: Command, log: &Path, find: &dyn Fn() -> Option<PathBuf>) -> u64 {
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(240);
    let (lo, hi) = (SIZE * 45 / 100, SIZE * 55 / 100);
    loop {
        let n = find().map_or(0, |p| recorded(&p));
        if n >= lo {
            child.kill().unwrap(); // SIGKILL
            child.wait().unwrap();
            assert!(
                n <= hi,
                "the record went from under 45% to {n} bytes between two looks"
            );
            return n;
        }
        if let Some(st) = child.try_wait().unwrap() {
            panic!(
                "the copy ended ({st}) before half was recorded:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        assert!(Instant::now() < deadline, "half was never recorded");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// What crossed the connection(s) one way, by the client's -v count
/// (every connection's line; the largest is the process's total).
fn crossed(log: &str, up: bool) -> u64 {
    log.lines()
        .filter_map(|l| l.split("Transferred: sent ").nth(1))
        .filter_map(|r| {
            let (sent, rest) = r.split_once(", received ")?;
            let received = rest.split(' ').next()?;
            let n = if up { sent } else { received };
            n.trim_end_matches(',').parse::<u64>().ok()
        })
        .max()
        .unwrap_or(u64::MAX)
}

/// The names starting with a dot in `d`.
fn hidden(d: &Path) -> Vec<String> {
    std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

/// The upload record under `state`, if any.
fn upload_record(state: &Path) -> Option<PathBuf> {
    std::fs::read_dir(state.join("sluice/resume"))
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.extension().is_none())
}

/// After a resume: the right bytes, under 60% of the file crossed, no
/// partial file or record left.
fn check(label: &str, o: &std::process::Output, dst: &Path, want: &str, up: bool, state: &Path) {
    let log = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{label}: resume failed:\n{log}");
    assert_eq!(sha(dst), want, "{label}: resumed file");
    let n = crossed(&log, up);
    eprintln!(
        "{label}: {n} bytes crossed on resume ({:.1}% of the file)",
        n as f64 * 100.0 / SIZE as f64
    );
    assert!(
        n < SIZE * 60 / 100,
        "{label}: {n} bytes crossed on resume:\n{log}"
    );
    let left = hidden(dst.parent().unwrap());
    assert!(left.is_empty(), "{label}: left behind: {left:?}");
    assert!(
        upload_record(state).is_none(),
        "{label}: upload record left"
    );
}

#[test]
fn killed_copies_resume_from_their_partial_file_on_one_stream_or_auto() {
    let s = Setup::new("resume-default");
    let src = s.dir.path("src.bin");
    write_source(&src, 42);
    let want = sha(&src);
    let server = start_sftp(&s, "internal-sftp", "");
    for (up, streams, with_scp) in [
        (true, "auto", false),
        (true, "1", true),
        (false, "auto", false),
        (false, "1", false),
    ] {
        let label = format!(
            "{} Streams {streams}{}",
            if up { "upload" } else { "download" },
            if with_scp { ", resumed by scp -a" } else { "" }
        );
        let d = s
            .dir
            .path(&format!("{}_{streams}", if up { "up" } else { "down" }));
        std::fs::create_dir_all(&d).unwrap();
        let state = s.dir.path(&format!("state_{}_{streams}", up));
        let dst = d.join("big.bin");
        let part = d.join(".big.bin.sluice-part");
        let (cmd, again) = if up {
            ("put", "reput")
        } else {
            ("get", "reget")
        };
        let line = |c: &str| format!("{c} {} {}", src.display(), dst.display());
        let first = sftp(
            &s,
            &server,
            &state,
            streams,
            &line(cmd),
            &["-l", FIRST_RATE],
        );
        let record = d.join(".big.bin.sluice-ranges");
        let st = state.clone();
        let find = move || -> Option<PathBuf> {
            if up {
                upload_record(&st)
            } else {
                Some(record.clone())
            }
        };
        let log1 = s.dir.path(&format!("first_{}_{streams}.log", up));
        let at = kill_at_half(first, &log1, &find);
        eprintln!("{label}: killed with {at} bytes recorded");
        assert!(!dst.exists(), "{label}: a short file under the final name");
        assert!(part.is_file(), "{label}: no partial file");
        let o = if with_scp {
            let mut c = client(SCP, &s, &server, &state, streams);
            c.arg("-a")
                .arg(&src)
                .arg(format!("127.0.0.1:{}", dst.display()));
            run(c, b"", 300)
        } else {
            run(
                sftp(&s, &server, &state, streams, &line(again), &[]),
                b"",
                300,
            )
        };
        check(&label, &o, &dst, &want, up, &state);
        std::fs::remove_file(&dst).unwrap();
    }
}

/// A failure the program sees (the local file may not grow past 12 or 24
/// MiB, as sh counts blocks: RLIMIT_FSIZE, with SIGXFSZ ignored so the
/// write fails with EFBIG):
/// with KeepPartial yes (the default) the part and its record stay with a
/// line naming them and `reget` finishes the file; with KeepPartial no
/// nothing is left.
#[test]
fn keep_partial_keeps_or_removes_what_a_failed_copy_wrote() {
    let s = Setup::new("resume-keep");
    let src = s.dir.path("src.bin");
    std::fs::write(&src, data(48 << 20, 9)).unwrap();
    let want = sha_of(&src);
    let server = start_sftp(&s, "internal-sftp", "");
    let state = s.dir.path("state");
    for keep in ["yes", "no"] {
        let d = s.dir.path(&format!("keep_{keep}"));
        std::fs::create_dir_all(&d).unwrap();
        let dst = d.join("f.bin");
        let line = |c: &str| format!("{c} {} {}", src.display(), dst.display());
        let opt = format!("KeepPartial={keep}");
        let c = sftp(&s, &server, &state, "1", &line("get"), &["-o", &opt]);
        // Through a shell that sets the limit for what it runs.
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg("trap '' XFSZ; ulimit -f 24576; exec \"$0\" \"$@\"")
            .arg(c.get_program())
            .args(c.get_args())
            .envs(c.get_envs().filter_map(|(k, v)| Some((k, v?))));
        let o = run(sh, b"", 120);
        let log = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(
            !o.status.success(),
            "KeepPartial {keep}: the get should fail:\n{log}"
        );
        assert!(
            !dst.exists(),
            "KeepPartial {keep}: a short file under the final name"
        );
        let part = d.join(".f.bin.sluice-part");
        if keep == "yes" {
            assert!(part.is_file(), "no partial file kept:\n{log}");
            assert!(log.contains("Kept the partial file"), "not said:\n{log}");
            let kept = recorded(&d.join(".f.bin.sluice-ranges"));
            assert!(kept >= 8 << 20, "{kept} bytes recorded");
            let o = run(
                sftp(&s, &server, &state, "1", &line("reget"), &[]),
                b"",
                120,
            );
            let log = String::from_utf8_lossy(&o.stderr).into_owned();
            assert!(o.status.success(), "reget:\n{log}");
            assert_eq!(sha_of(&dst), want);
            let n = crossed(&log, false);
            assert!(
                n < (48 << 20) - kept + (1 << 20),
                "reget fetched {n}:\n{log}"
            );
        } else {
            assert!(!log.contains("Kept the partial file"), "{log}");
        }
        let left = hidden(&d);
        assert!(left.is_empty(), "KeepPartial {keep}: left behind: {left:?}");
    }
}
