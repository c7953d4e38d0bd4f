//! Progress on a terminal (a pty from script(1)) for recursive copies:
//! `sluice-scp -r` both ways and sluice-sftp's `put -r`/`get -r` print a
//! finished meter line for every file (small files travel many at once,
//! so theirs is drawn as each lands) and one total line; `-q` and a
//! stdout that is not a terminal print none, as scp.

mod common;
mod sftp_util;

use common::*;
use sftp_util::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const SFTP: &str = env!("CARGO_BIN_EXE_sluice-sftp");
const SCP: &str = env!("CARGO_BIN_EXE_sluice-scp");

/// 24 small files in three directories and one large (past the batch's
/// 1 MiB) file: 25 files.
fn tree(root: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for d in 0..3 {
        let dir = root.join(format!("d{d}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..8 {
            let name = format!("small{d}{f}");
            std::fs::write(dir.join(&name), data(1000 + 700 * f, (d * 8 + f) as u64)).unwrap();
            names.push(name);
        }
    }
    std::fs::write(root.join("large"), data(3 << 20, 99)).unwrap();
    names.push("large".to_owned());
    names
}

fn opts(s: &Setup, server: &Server, port_flag: &str) -> String {
    format!(
        "-F /dev/null -o StrictHostKeyChecking=no -o BatchMode=yes -o LogLevel=ERROR \
         -o UserKnownHostsFile={} -i {} {port_flag} {}",
        s.dir.path("known_hosts").display(),
        s.user_key.display(),
        server.port
    )
}

/// `cmd` with its stdout on a terminal; what the terminal showed.
fn on_pty(cmd: &str, input: &[u8]) -> String {
    let mut c = Command::new("script");
    c.args(["-qec", cmd, "/dev/null"]);
    let out = run(c, input, 120);
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{cmd}: {shown}");
    shown
}

/// The lines a terminal would keep: each \r-rewritten line's last state.
fn lines(shown: &str) -> Vec<String> {
    shown
        .split('\n')
        .map(|l| {
            l.trim_end_matches('\r')
                .rsplit('\r')
                .next()
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

/// Every file has a finished line (name, 100%), and one total line counts them.
fn check_meters(what: &str, shown: &str, names: &[String]) {
    let ls = lines(shown);
    for n in names {
        assert!(
            ls.iter()
                .any(|l| l.starts_with(n.as_str()) && l.contains("100%")),
            "{what}: no finished line for {n}:\n{shown}"
        );
    }
    let total = format!("{} files, ", names.len());
    assert!(
        ls.iter().any(|l| l.starts_with(&total) && l.contains("/s")),
        "{what}: no total line '{total}...':\n{shown}"
    );
}

fn same_tree(a: &Path, b: &Path, names: &[String]) {
    for d in 0..3 {
        for f in 0..8 {
            let rel = PathBuf::from(format!("d{d}/small{d}{f}"));
            assert_eq!(
                std::fs::read(a.join(&rel)).unwrap(),
                std::fs::read(b.join(&rel)).unwrap(),
                "{}",
                rel.display()
            );
        }
    }
    assert_eq!(names.len(), 25);
    assert_eq!(
        std::fs::read(a.join("large")).unwrap(),
        std::fs::read(b.join("large")).unwrap()
    );
}

#[test]
fn scp_and_sftp_meters_for_every_file_of_a_tree() {
    if missing("script") {
        return;
    }
    let s = Setup::new("meters");
    let server = start_sftp(&s, "internal-sftp", "");
    let src = s.dir.path("src");
    let names = tree(&src);
    let at = |p: &Path| format!("127.0.0.1:{}", p.display());

    // scp -r up and down, on a terminal.
    let up = s.dir.path("up");
    let shown = on_pty(
        &format!(
            "{SCP} {} -r {} {}",
            opts(&s, &server, "-P"),
            src.display(),
            at(&up)
        ),
        b"",
    );
    check_meters("scp -r up", &shown, &names);
    same_tree(&src, &up, &names);
    let down = s.dir.path("down");
    let shown = on_pty(
        &format!(
            "{SCP} {} -r {} {}",
            opts(&s, &server, "-P"),
            at(&up),
            down.display()
        ),
        b"",
    );
    check_meters("scp -r down", &shown, &names);
    same_tree(&src, &down, &names);

    // -q on a terminal, and no terminal at all: nothing on stdout.
    let shown = on_pty(
        &format!(
            "{SCP} -q {} -r {} {}",
            opts(&s, &server, "-P"),
            src.display(),
            at(&s.dir.path("q"))
        ),
        b"",
    );
    assert!(
        !shown.contains("100%") && !shown.contains(" files, "),
        "-q: {shown}"
    );
    let mut c = Command::new("sh");
    c.args([
        "-c",
        &format!(
            "{SCP} {} -r {} {}",
            opts(&s, &server, "-P"),
            src.display(),
            at(&s.dir.path("nt"))
        ),
    ]);
    let out = run(c, b"", 120);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stdout.is_empty(),
        "not a terminal: {}",
        String::from_utf8_lossy(&out.stdout)
    );

    // Interactive sluice-sftp: put -r, then get -r (one session each: a
    // terminal echoes what is typed, wherever the output is).
    let sftp = |cmd: String| {
        on_pty(
            &format!("{SFTP} {} 127.0.0.1", opts(&s, &server, "-P")),
            format!("{cmd}\nbye\n").as_bytes(),
        )
    };
    let sput = s.dir.path("sput");
    let shown = sftp(format!("put -r {} {}", src.display(), sput.display()));
    check_meters("sftp put -r", &shown, &names);
    same_tree(&src, &sput, &names);
    let back = s.dir.path("back");
    let shown = sftp(format!("get -r {} {}", sput.display(), back.display()));
    check_meters("sftp get -r", &shown, &names);
    same_tree(&src, &back, &names);
}
