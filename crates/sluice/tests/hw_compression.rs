//! EnableHwCompression with the system's libz.so.1 standing in for a
//! hardware deflate library (no NX, DFLTCC or QAT on the test machines):
//! the library is loaded and said so at -v, the zlib stream it makes is
//! read by stock OpenSSH and it reads OpenSSH's, across re-keys, text and
//! random data checked by SHA-256; a missing library or one without the
//! zlib functions falls back to software zlib with a clear message; `-G`
//! and `sluiced -T` print the keywords. In sluiced the library is loaded
//! by the post-auth process only, as the user (a library built here notes
//! who ran its constructor).

mod common;
mod privsep_util;

use common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Debian's zlib, the stand-in.
const STAND_IN: &str = "/lib/x86_64-linux-gnu/libz.so.1";

/// Pseudo-text: words from a small vocabulary.
fn text(n: usize, seed: u64) -> Vec<u8> {
    const WORDS: &[&str] = &[
        "the",
        "engine",
        "of",
        "deflate",
        "hardware",
        "stream",
        "packet",
        "and",
        "window",
        "sluice",
        "nest",
        "accelerator",
        "zlib",
        "to",
        "a",
        "link",
        "key",
        "flush",
        "bulk",
        "data",
    ];
    let mut x = seed | 1;
    let mut v = Vec::with_capacity(n + 16);
    while v.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(WORDS[(x % WORDS.len() as u64) as usize].as_bytes());
        v.push(if x.is_multiple_of(9) { b'\n' } else { b' ' });
    }
    v.truncate(n);
    v
}

/// 64 MiB: 32 MiB of text, then 32 MiB of random data.
fn mixed() -> Vec<u8> {
    let mut v = text(32 << 20, 7);
    v.extend(random_data(32 << 20, 8));
    v
}

/// `(raw, compressed)` from a "compress DIR: raw data N, compressed M" line.
fn summary(log: &str, dir: &str) -> Option<(u64, u64)> {
    let line = log
        .lines()
        .find(|l| l.contains(&format!("compress {dir}: raw data")))?;
    let num = |after: &str| -> Option<u64> {
        line.split(after)
            .nth(1)?
            .trim_start()
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    };
    Some((num("raw data")?, num("compressed")?))
}

/// sluiced as `Setup::start` runs it, at LogLevel DEBUG1 (the config's
/// VERBOSE line comes first, and the first value wins; `-o` comes before).
fn sluiced_debug(s: &Setup, extra: &str) -> Server {
    let port = free_port();
    let cfg = s.config(port, extra);
    let log_path = s.dir.path(&format!("server_{port}.log"));
    let log = std::fs::File::create(&log_path).unwrap();
    let child = Command::new(SLUICED)
        .args(["-D", "-e", "-o", "LogLevel=DEBUG1", "-f"])
        .arg(&cfg)
        .stdin(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    // Listening, seen in the log rather than by connecting: a probe
    // connection would leave a pre-auth child of its own that a test could
    // take for the one it holds.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&log_path)
        .unwrap_or_default()
        .contains("Server listening on")
    {
        assert!(Instant::now() < deadline, "sluiced did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    Server {
        child,
        port,
        log: log_path,
    }
}

fn stand_in_missing() -> bool {
    missing("/usr/sbin/sshd") || !std::path::Path::new(STAND_IN).exists()
}

#[test]
fn stand_in_library_interoperates_with_openssh() {
    if stand_in_missing() {
        return;
    }
    let s = Setup::new("hwz");
    let data = mixed();
    let hash = sha256(&data);
    let src = s.dir.path("mixed");
    std::fs::write(&src, &data).unwrap();
    let lib_opt = format!("HwCompressionLibrary={STAND_IN}");
    let opts = [
        "-C",
        "-o",
        "RekeyLimit=16M",
        "-o",
        "EnableHwCompression=yes",
        "-o",
        &lib_opt,
    ];

    // sluice deflates through the library, sshd inflates.
    let server = s.start(true, "RekeyLimit 16M");
    let mut c = s.client_at(false, &server, "DEBUG1", &opts);
    c.arg("sha256sum");
    let out = run(c, &data, 300);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with(&hash),
        "sluice -C (hw) -> sshd upload: {log}"
    );
    assert!(
        log.contains(&format!("EnableHwCompression: using {STAND_IN} from")),
        "{log}"
    );
    assert!(log.contains("compression: zlib@openssh.com"), "{log}");
    // A fresh deflate stream per key epoch (RekeyLimit counts wire bytes).
    let streams = log.matches("zlib@openssh.com: deflating through").count();
    let rekeys = log.matches("rekey completed").count();
    assert!(
        rekeys >= 2 && streams == rekeys + 1,
        "{streams} streams: {log}"
    );
    // The software controller never ran: the library has no level handle.
    assert!(!log.contains("compression: level"), "{log}");
    let (raw, z) = summary(&log, "outgoing").expect("sluice's summary");
    assert!(raw > 0 && z > 0, "{raw} -> {z}");
    // sshd deflates, sluice inflates through the library.
    let mut c = s.client_at(false, &server, "DEBUG1", &opts);
    c.arg(format!("cat {}", src.display()));
    let out = run(c, b"", 300);
    let log = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        sha256(&out.stdout),
        hash,
        "sluice -C (hw) <- sshd download: {log}"
    );
    assert!(log.contains("zlib@openssh.com: inflating through"), "{log}");
    let (raw, z) = summary(&log, "incoming").expect("sluice's summary");
    assert!(raw > 0 && z > 0, "{raw} -> {z}");

    // sluiced deflates through the library, ssh -C inflates.
    let server = sluiced_debug(
        &s,
        &format!("RekeyLimit 16M\nEnableHwCompression yes\nHwCompressionLibrary {STAND_IN}"),
    );
    let mut c = s.client_at(true, &server, "DEBUG1", &["-C", "-o", "RekeyLimit=16M"]);
    c.arg(format!("cat {}", src.display()));
    let out = run(c, b"", 300);
    let log = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        sha256(&out.stdout),
        hash,
        "ssh -C <- sluiced download: {log}"
    );
    assert!(log.contains("compression: zlib@openssh.com"), "{log}");
    let (raw, z) = summary(&log, "incoming").expect("OpenSSH's summary");
    assert!(raw > 0 && z > 0, "{raw} -> {z}");
    // And ssh -C uploads: sluiced inflates through the library.
    let mut c = s.client_at(true, &server, "ERROR", &["-C", "-o", "RekeyLimit=16M"]);
    c.arg("sha256sum");
    let out = run(c, &data, 300);
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with(&hash),
        "ssh -C -> sluiced upload: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let slog = server.log_text();
    assert!(
        slog.contains(&format!("EnableHwCompression: using {STAND_IN} from")),
        "{slog}"
    );
    assert!(
        slog.contains("zlib@openssh.com: deflating through"),
        "{slog}"
    );
    assert!(
        slog.contains("zlib@openssh.com: inflating through"),
        "{slog}"
    );
}

#[test]
fn missing_or_broken_library_falls_back_to_software() {
    if stand_in_missing() {
        return;
    }
    let s = Setup::new("hwz_fallback");
    let data = text(2 << 20, 3);
    let hash = sha256(&data);
    let server = s.start(true, "");
    // libm loads but has none of zlib's functions.
    for (lib, why) in [
        ("/nonexistent/libnxz.so.0", "cannot load"),
        ("libm.so.6", "no symbol zlibVersion: not a zlib-API library"),
    ] {
        let lib_opt = format!("HwCompressionLibrary={lib}");
        let opts = ["-C", "-o", "EnableHwCompression=yes", "-o", &lib_opt];
        let mut c = s.client_at(false, &server, "DEBUG1", &opts);
        c.arg("sha256sum");
        let out = run(c, &data, 60);
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with(&hash),
            "{lib}: {log}"
        );
        assert!(
            log.contains(&format!("HwCompressionLibrary {lib}: {why}")),
            "{lib}: {log}"
        );
        assert!(
            log.contains("EnableHwCompression: no hardware deflate library found (tried"),
            "{log}"
        );
        assert!(log.contains("using software zlib"), "{log}");
        // Software zlib did the work.
        assert!(log.contains("compression: zlib@openssh.com"), "{log}");
        assert!(!log.contains("deflating through"), "{log}");
    }
    // Without -v the admin's broken library is still reported.
    let opts = [
        "-C",
        "-o",
        "EnableHwCompression=yes",
        "-o",
        "HwCompressionLibrary=libm.so.6",
    ];
    let mut c = s.client_at(false, &server, "INFO", &opts);
    c.arg("true");
    let out = run(c, b"", 60);
    ok(&out, "sluice with a broken library");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("HwCompressionLibrary libm.so.6: no symbol"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The server side: sluiced with a broken library serves ssh -C.
    let server = s.start(
        false,
        "EnableHwCompression yes\nHwCompressionLibrary libm.so.6",
    );
    let mut c = s.client(true, &server, &["-C"]);
    c.arg("sha256sum");
    let out = run(c, &data, 60);
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with(&hash),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let slog = server.log_text();
    assert!(
        slog.contains("HwCompressionLibrary libm.so.6: no symbol zlibVersion"),
        "{slog}"
    );
}

/// With no library named, x86_64 has only Intel's shim to look for: -v
/// says what was tried and that software zlib is used.
#[test]
#[cfg(target_arch = "x86_64")]
fn nothing_found_says_what_was_tried() {
    if stand_in_missing() {
        return;
    }
    let s = Setup::new("hwz_none");
    let server = s.start(true, "");
    let mut c = s.client_at(
        false,
        &server,
        "DEBUG1",
        &["-C", "-o", "EnableHwCompression=yes"],
    );
    c.arg("true");
    let out = run(c, b"", 60);
    ok(&out, "sluice -C with nothing to load");
    let log = String::from_utf8_lossy(&out.stderr);
    if log.contains("EnableHwCompression: using") {
        return; // this machine has the shim
    }
    assert!(
        log.contains(
            "EnableHwCompression: no hardware deflate library found (tried libzlib-accel.so: cannot load"
        ),
        "{log}"
    );
}

#[test]
fn config_dumps_print_the_keywords() {
    let out = Command::new(SLUICE)
        .args(["-F", "/dev/null", "-G", "-o", "EnableHwCompression=yes"])
        .arg("-o")
        .arg(format!("HwCompressionLibrary={STAND_IN}"))
        .arg("example.org")
        .output()
        .unwrap();
    ok(&out, "sluice -G");
    let g = String::from_utf8_lossy(&out.stdout);
    assert!(g.lines().any(|l| l == "enablehwcompression yes"), "{g}");
    assert!(
        g.lines()
            .any(|l| l == format!("hwcompressionlibrary {STAND_IN}")),
        "{g}"
    );
    let out = Command::new(SLUICE)
        .args(["-F", "/dev/null", "-G", "example.org"])
        .output()
        .unwrap();
    let g = String::from_utf8_lossy(&out.stdout);
    assert!(g.lines().any(|l| l == "enablehwcompression no"), "{g}");
    assert!(g.lines().any(|l| l == "hwcompressionlibrary none"), "{g}");
    let out = Command::new(SLUICE)
        .args([
            "-F",
            "/dev/null",
            "-G",
            "-o",
            "EnableHwCompression=sometimes",
            "x",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());

    let s = Setup::new("hwz_dump");
    for (extra, want) in [
        ("", ["enablehwcompression no", "hwcompressionlibrary none"]),
        (
            "EnableHwCompression yes\nHwCompressionLibrary /opt/nx/libnxz.so.0",
            [
                "enablehwcompression yes",
                "hwcompressionlibrary /opt/nx/libnxz.so.0",
            ],
        ),
    ] {
        let cfg = s.config(free_port(), extra);
        let out = Command::new(SLUICED)
            .arg("-T")
            .arg("-f")
            .arg(&cfg)
            .output()
            .unwrap();
        ok(&out, "sluiced -T");
        let t = String::from_utf8_lossy(&out.stdout);
        for w in want {
            assert!(t.lines().any(|l| l == w), "{w}: {t}");
        }
    }
    // Loaded once, before authentication: not a Match keyword.
    let cfg = s.config(free_port(), "Match User nobody\nEnableHwCompression yes");
    let out = Command::new(SLUICED)
        .arg("-T")
        .arg("-f")
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not allowed within a Match block"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A "hardware" library built for the test: libz.so.1 as a dependency (its
/// zlib functions are found through it) and a constructor that appends
/// "pid uid euid" to `notes`. In a root-owned directory, as sluiced asks.
struct NotingLibrary {
    dir: std::path::PathBuf,
    lib: std::path::PathBuf,
    notes: std::path::PathBuf,
}

impl NotingLibrary {
    fn build() -> NotingLibrary {
        let dir = std::path::PathBuf::from(format!("/run/sluice-test-hwz-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let notes = dir.join("constructor-ran");
        std::fs::write(&notes, "").unwrap();
        // Any user's process may note itself.
        std::fs::set_permissions(&notes, std::fs::Permissions::from_mode(0o666)).unwrap();
        let src = dir.join("noting.c");
        std::fs::write(
            &src,
            format!(
                "#include <stdio.h>\n#include <unistd.h>\n\
                 __attribute__((constructor)) static void noting(void) {{\n\
                 FILE *f = fopen(\"{}\", \"a\");\n\
                 if (f) {{ fprintf(f, \"%d %d %d\\n\", (int)getpid(), (int)getuid(), (int)geteuid()); fclose(f); }}\n}}\n",
                notes.display()
            ),
        )
        .unwrap();
        let lib = dir.join("libnotinghw.so");
        let out = Command::new("cc")
            .args(["-shared", "-fPIC", "-Wl,--no-as-needed", "-o"])
            .arg(&lib)
            .arg(&src)
            .arg(STAND_IN)
            .output()
            .unwrap();
        ok(&out, "cc the noting library");
        NotingLibrary { dir, lib, notes }
    }
}

impl Drop for NotingLibrary {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Whether `pid` has `file` mapped.
fn maps(pid: u32, file: &std::path::Path) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .unwrap_or_default()
        .contains(&file.display().to_string())
}

fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

#[test]
fn sluiced_loads_the_library_only_in_the_post_auth_process_as_the_user() {
    use privsep_util::*;
    use std::io::{BufRead, BufReader, Write};
    if skip() || stand_in_missing() || missing("cc") {
        return;
    }
    let hw = NotingLibrary::build();
    let user = TestUser::named("slhw");
    let s = Setup::new("hwz_postauth");
    let server = sluiced_debug(
        &s,
        &format!(
            "EnableHwCompression yes\nHwCompressionLibrary {}",
            hw.lib.display()
        ),
    );
    let listener = server.child.id();

    // A connection in key exchange: its monitor (root) and sandboxed
    // pre-auth child have their engines, with nothing loaded.
    let pre = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    pre.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut line = String::new();
    BufReader::new(pre.try_clone().unwrap())
        .read_line(&mut line)
        .unwrap();
    (&pre).write_all(b"SSH-2.0-hw_test\r\n").unwrap();
    let kid = wait_for("the pre-auth child", || sandboxed_children(listener).pop());

    // A session of the user with ssh -C (zlib@openssh.com), held open.
    let mut c = s.client(true, &server, &["-C", "-l", &user.name]);
    c.arg("echo ready; read x")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut held = c.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(held.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready", "{}", server.log_text());
    let postauth = wait_for("the post-auth process", || {
        descendants(listener).into_iter().find(|p| {
            comm(*p) == "sluiced" && uid_and_seccomp(*p).is_some_and(|(uid, _)| uid == user.uid)
        })
    });
    assert!(
        maps(postauth, &hw.lib),
        "post-auth process {postauth}: not mapped"
    );
    let mut checked = 0;
    for p in std::iter::once(listener).chain(descendants(listener)) {
        if p == postauth || comm(p) != "sluiced" {
            continue;
        }
        // The listener, every monitor (root) and the pre-auth child.
        assert!(
            !maps(p, &hw.lib),
            "process {p} ({:?}) maps it",
            uid_and_seccomp(p)
        );
        checked += 1;
    }
    assert!(checked >= 3, "{checked} processes checked");
    assert!(
        uid_and_seccomp(kid).is_some(),
        "the pre-auth child ended early: {}",
        server.log_text()
    );
    // The constructor ran in the post-auth process only, as the user.
    let notes = std::fs::read_to_string(&hw.notes).unwrap();
    assert!(!notes.is_empty(), "the constructor never ran");
    for l in notes.lines() {
        let f: Vec<u32> = l.split(' ').map(|v| v.parse().unwrap()).collect();
        assert_eq!(f, [postauth, user.uid, user.uid], "{notes}");
    }
    let _ = held.stdin.as_mut().unwrap().write_all(b"\n");
    let _ = held.wait();
    drop(pre);

    // And compression goes through it, both ways, for that user.
    let data = text(4 << 20, 11);
    let mut c = s.client(true, &server, &["-C", "-l", &user.name]);
    c.arg("sha256sum && head -c 1000000 /dev/zero");
    let out = run(c, &data, 60);
    ok(&out, "ssh -C through the library");
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with(&sha256(&data)),
        "{}",
        server.log_text()
    );
    let log = server.log_text();
    for want in [
        format!("EnableHwCompression: using {} from", hw.lib.display()),
        "zlib@openssh.com: inflating through".to_owned(),
        "zlib@openssh.com: deflating through".to_owned(),
    ] {
        assert!(log.contains(&want), "{want}: {log}");
    }
}
