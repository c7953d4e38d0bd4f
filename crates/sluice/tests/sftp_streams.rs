//! Large files over several connections (ssh_config `Streams`,
//! client/sftp/parallel.rs): `sluice-scp` and `sluice-sftp` up and down
//! with sluiced's internal-sftp and Debian's sshd (its sftp-server), data
//! checked by SHA-256; `-v` shows the extra connections; `Streams 1`
//! opens none. And `-l`, the rate limit all of a copy's connections share.

mod common;
mod sftp_util;

use common::*;
use sftp_util::*;
use std::path::Path;
use std::process::Command;

const SFTP: &str = env!("CARGO_BIN_EXE_sluice-sftp");
const SCP: &str = env!("CARGO_BIN_EXE_sluice-scp");

fn ssh_opts(c: &mut Command, s: &Setup, server: &Server, streams: &str) {
    c.args(["-F", "/dev/null", "-o", "StrictHostKeyChecking=no"])
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
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn most_streams(log: &str) -> usize {
    log.lines()
        .filter_map(|l| l.split("Streams: ").nth(1))
        .filter_map(|r| r.strip_suffix(" connections"))
        .filter_map(|n| n.trim().parse().ok())
        .max()
        .unwrap_or(1)
}

#[test]
fn large_files_go_over_several_connections_up_and_down() {
    let s = Setup::new("sftp-streams");
    let src = s.dir.path("src.bin");
    // 100 MiB + 1: not a multiple of the range size.
    std::fs::write(&src, data((100 << 20) + 1, 9)).unwrap();
    let want = sha_of(&src);
    let mut servers = vec![("sluiced", start_sftp(&s, "internal-sftp", ""))];
    if !missing("/usr/sbin/sshd") {
        servers.push(("sshd", s.start(true, "")));
    }
    for (label, server) in &servers {
        let d = s.dir.path(&format!("streams_{label}"));
        std::fs::create_dir_all(&d).unwrap();
        let at = |p: &Path| format!("127.0.0.1:{}", p.display());
        let scp = |streams: &str, args: &[&str]| {
            let mut c = Command::new(SCP);
            ssh_opts(&mut c, &s, server, streams);
            c.args(args);
            let o = run(c, b"", 180);
            let log = text(&o.stderr);
            assert!(o.status.success(), "{label} scp {args:?}: {log}");
            log
        };
        // Streams 4: four connections each way.
        let up = d.join("up.bin");
        let log = scp("4", &[src.to_str().unwrap(), &at(&up)]);
        assert_eq!(sha_of(&up), want, "{label}: upload");
        // Loopback may finish before the others are up: they were asked
        // for, and at most 4 worked.
        assert!(
            log.contains("Streams 4: opening 3 more connection(s)"),
            "{log}"
        );
        assert!(most_streams(&log) <= 4, "{label}: upload used:\n{log}");
        eprintln!("{label}: upload on {} connections", most_streams(&log));
        let down = d.join("down.bin");
        let log = scp("4", &[&at(&up), down.to_str().unwrap()]);
        assert_eq!(sha_of(&down), want, "{label}: download");
        assert!(
            log.contains("Streams 4: opening 3 more connection(s)"),
            "{log}"
        );
        eprintln!("{label}: download on {} connections", most_streams(&log));
        // No temporary names left beside the targets.
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().all(|n| !n.contains(".sluice-")),
            "{label}: {names:?}"
        );
        // Streams 1: one connection.
        let one = d.join("one.bin");
        let log = scp("1", &[&at(&up), one.to_str().unwrap()]);
        assert_eq!(sha_of(&one), want);
        assert!(!log.contains("Streams"), "{label}: Streams 1 used:\n{log}");
        // auto, through sftp's get and put.
        let b = d.join("batch");
        std::fs::write(
            &b,
            format!(
                "put {} {}\nget {} {}\n",
                src.display(),
                d.join("auto_up.bin").display(),
                d.join("auto_up.bin").display(),
                d.join("auto_down.bin").display()
            ),
        )
        .unwrap();
        let mut c = Command::new(SFTP);
        ssh_opts(&mut c, &s, server, "auto");
        c.arg("-b").arg(&b).arg("127.0.0.1");
        let o = run(c, b"", 180);
        assert!(o.status.success(), "{label} sftp auto: {}", text(&o.stderr));
        assert_eq!(sha_of(&d.join("auto_up.bin")), want, "{label}: auto put");
        assert_eq!(sha_of(&d.join("auto_down.bin")), want, "{label}: auto get");
    }
}

#[test]
fn dash_l_limits_the_rate_over_all_connections() {
    let s = Setup::new("sftp-bwlimit");
    let src = s.dir.path("src.bin");
    std::fs::write(&src, data(3 << 20, 4)).unwrap();
    let server = start_sftp(&s, "internal-sftp", "");
    let dst = s.dir.path("dst.bin");
    let mut c = Command::new(SCP);
    ssh_opts(&mut c, &s, &server, "4");
    // 8000 Kbit/s = 1 MB/s: 3 MiB take more than 2.5 s (OpenSSH's unit).
    c.args(["-l", "8000", src.to_str().unwrap()])
        .arg(format!("127.0.0.1:{}", dst.display()));
    let t = std::time::Instant::now();
    let o = run(c, b"", 60);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(t.elapsed().as_secs_f64() > 2.5, "{:?}", t.elapsed());
    assert_eq!(sha_of(&dst), sha_of(&src));
    let mut c = Command::new(SCP);
    ssh_opts(&mut c, &s, &server, "1");
    c.args(["-l", "0", src.to_str().unwrap(), "127.0.0.1:/tmp/x"]);
    let o = run(c, b"", 60);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("Invalid limit"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn many_small_files_go_together_up_and_down_and_one_failure_stays_one() {
    let s = Setup::new("sftp-many");
    let tree = s.dir.path("tree");
    for d in 0..3 {
        let sub = tree.join(format!("d{d}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..100 {
            let n = 1 + (f * 977 + d * 31) % 40_000;
            std::fs::write(sub.join(format!("f{f:03}")), data(n, (d * 100 + f) as u64)).unwrap();
        }
    }
    std::fs::write(tree.join("empty"), b"").unwrap();
    let mut servers = vec![("sluiced", start_sftp(&s, "internal-sftp", ""))];
    if !missing("/usr/sbin/sshd") {
        servers.push(("sshd", s.start(true, "")));
    }
    for (label, server) in &servers {
        let dst = s.dir.path(&format!("many_{label}"));
        // A directory where one file should go: that file fails, alone.
        std::fs::create_dir_all(dst.join("tree/d1/f007")).unwrap();
        let mut c = Command::new(SCP);
        ssh_opts(&mut c, &s, server, "1");
        c.args(["-r", tree.to_str().unwrap()])
            .arg(format!("127.0.0.1:{}", dst.display()));
        let o = run(c, b"", 120);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{label}: {err}");
        assert!(err.contains("f007"), "{label}: {err}");
        for d in 0..3 {
            for f in 0..100 {
                let rel = format!("d{d}/f{f:03}");
                if rel == "d1/f007" {
                    continue;
                }
                assert_eq!(
                    sha_of(&dst.join("tree").join(&rel)),
                    sha_of(&tree.join(&rel)),
                    "{label}: {rel}"
                );
            }
        }
        assert!(dst.join("tree/empty").is_file());
        let leftovers: Vec<_> = std::fs::read_dir(dst.join("tree/d1"))
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(".sluice-"))
            .collect();
        assert!(leftovers.is_empty(), "{label}: {leftovers:?}");
        // And back down, by scp -r and by sftp's get -r.
        let back = s.dir.path(&format!("back_{label}"));
        std::fs::create_dir_all(&back).unwrap();
        let mut c = Command::new(SCP);
        ssh_opts(&mut c, &s, server, "1");
        c.args(["-r", &format!("127.0.0.1:{}", dst.join("tree").display())])
            .arg(&back);
        let o = run(c, b"", 120);
        assert!(o.status.success(), "{label}: {}", text(&o.stderr));
        let b = s.dir.path(&format!("batch_{label}"));
        let again = s.dir.path(&format!("again_{label}"));
        std::fs::write(
            &b,
            format!(
                "get -r {} {}\n",
                dst.join("tree").display(),
                again.display()
            ),
        )
        .unwrap();
        let mut c = Command::new(SFTP);
        ssh_opts(&mut c, &s, server, "1");
        c.arg("-b").arg(&b).arg("127.0.0.1");
        let o = run(c, b"", 120);
        assert!(o.status.success(), "{label}: {}", text(&o.stderr));
        for d in 0..3 {
            for f in 0..100 {
                let rel = format!("d{d}/f{f:03}");
                if rel == "d1/f007" {
                    continue;
                }
                let want = sha_of(&tree.join(&rel));
                assert_eq!(
                    sha_of(&back.join("tree").join(&rel)),
                    want,
                    "{label}: scp {rel}"
                );
                assert_eq!(sha_of(&again.join(&rel)), want, "{label}: sftp {rel}");
            }
        }
        assert!(back.join("tree/empty").is_file() && again.join("empty").is_file());
    }
}

#[test]
fn many_small_files_spread_over_several_connections_up_and_down() {
    let s = Setup::new("sftp-spread");
    let tree = s.dir.path("tree");
    for d in 0..3 {
        let sub = tree.join(format!("d{d}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..100 {
            let n = 1 + (f * 1231 + d * 17) % 60_000;
            std::fs::write(
                sub.join(format!("f{f:03}")),
                data(n, (d * 100 + f + 7) as u64),
            )
            .unwrap();
        }
    }
    let mut servers = vec![("sluiced", start_sftp(&s, "internal-sftp", ""))];
    if !missing("/usr/sbin/sshd") {
        servers.push(("sshd", s.start(true, "")));
    }
    for (label, server) in &servers {
        let dst = s.dir.path(&format!("spread_{label}"));
        // A directory where one file should go: that file fails, alone,
        // whichever connection has it.
        std::fs::create_dir_all(dst.join("tree/d2/f042")).unwrap();
        let mut c = Command::new(SCP);
        ssh_opts(&mut c, &s, server, "4");
        // 5 MB/s: loopback would finish before the others are up.
        c.args(["-l", "40000"]);
        c.args(["-r", tree.to_str().unwrap()])
            .arg(format!("127.0.0.1:{}", dst.display()));
        let o = run(c, b"", 120);
        let log = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{label}: {log}");
        assert!(log.contains("f042"), "{label}: {log}");
        assert!(
            log.contains("Streams 4: opening 3 more connection(s) for small files"),
            "{label}: {log}"
        );
        assert!(most_streams(&log) >= 2, "{label}: one connection:\n{log}");
        eprintln!("{label}: put on {} connections", most_streams(&log));
        std::fs::remove_dir(dst.join("tree/d2/f042")).unwrap();
        // Down by scp -r and sftp's get -r.
        let back = s.dir.path(&format!("spread_back_{label}"));
        std::fs::create_dir_all(&back).unwrap();
        let mut c = Command::new(SCP);
        ssh_opts(&mut c, &s, server, "4");
        // 5 MB/s: loopback would finish before the others are up.
        c.args(["-l", "40000"]);
        c.args(["-r", &format!("127.0.0.1:{}", dst.join("tree").display())])
            .arg(&back);
        let o = run(c, b"", 120);
        let log = text(&o.stderr);
        assert!(o.status.success(), "{label}: {log}");
        assert!(most_streams(&log) >= 2, "{label}: one connection:\n{log}");
        eprintln!("{label}: scp get on {} connections", most_streams(&log));
        let b = s.dir.path(&format!("spread_batch_{label}"));
        let again = s.dir.path(&format!("spread_again_{label}"));
        std::fs::write(
            &b,
            format!(
                "get -r {} {}\n",
                dst.join("tree").display(),
                again.display()
            ),
        )
        .unwrap();
        let mut c = Command::new(SFTP);
        ssh_opts(&mut c, &s, server, "4");
        // 5 MB/s: loopback would finish before the others are up.
        c.args(["-l", "40000"]);
        c.arg("-b").arg(&b).arg("127.0.0.1");
        let o = run(c, b"", 120);
        let log = text(&o.stderr);
        assert!(o.status.success(), "{label}: {log}");
        assert!(most_streams(&log) >= 2, "{label}: one connection:\n{log}");
        for d in 0..3 {
            for f in 0..100 {
                let rel = format!("d{d}/f{f:03}");
                let want = sha_of(&tree.join(&rel));
                if rel != "d2/f042" {
                    assert_eq!(
                        sha_of(&dst.join("tree").join(&rel)),
                        want,
                        "{label}: put {rel}"
                    );
                    assert_eq!(
                        sha_of(&back.join("tree").join(&rel)),
                        want,
                        "{label}: scp {rel}"
                    );
                    assert_eq!(sha_of(&again.join(&rel)), want, "{label}: sftp {rel}");
                }
            }
        }
        for root in [dst.join("tree"), back.join("tree"), again.clone()] {
            for d in 0..3 {
                let n = std::fs::read_dir(root.join(format!("d{d}")))
                    .unwrap()
                    .count();
                let want = if d == 2 && root == dst.join("tree") {
                    99
                } else {
                    100 - usize::from(d == 2)
                };
                assert_eq!(
                    n,
                    want,
                    "{label}: {} d{d}: leftovers or missing",
                    root.display()
                );
            }
        }
    }
}
