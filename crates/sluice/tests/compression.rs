//! sluice's parallel zlib against stock OpenSSH: what sluice deflates in
//! jobs (preset dictionaries, sync flushes, levels changing between
//! windows) OpenSSH inflates as one stream, across re-keys, text and
//! random data alike; checked by SHA-256 and by OpenSSH's own summary.

mod common;
mod wan_util;

use common::*;

/// Pseudo-text: words from a small vocabulary, as compressible as prose.
fn text(n: usize, seed: u64) -> Vec<u8> {
    const WORDS: &[&str] = &[
        "the",
        "stream",
        "of",
        "packets",
        "window",
        "sluice",
        "deflate",
        "channel",
        "and",
        "key",
        "exchange",
        "server",
        "client",
        "data",
        "to",
        "is",
        "a",
        "bulk",
        "link",
        "compression",
        "level",
        "job",
        "history",
        "flush",
        "byte",
        "in",
        "out",
    ];
    let mut x = seed | 1;
    let mut v = Vec::with_capacity(n + 16);
    while v.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(WORDS[(x % WORDS.len() as u64) as usize].as_bytes());
        v.push(if x % 11 == 0 { b'\n' } else { b' ' });
    }
    v.truncate(n);
    v
}

/// 64 MiB: 32 MiB of text, then 32 MiB of random data. (One change of
/// kind: after a stored stretch the controller probes again only every
/// 8 MiB, so text right after random data can go partly stored, more so
/// on a loaded machine; the ratio asserted below is about the engines.)
fn mixed() -> Vec<u8> {
    let mut v = Vec::with_capacity(64 << 20);
    v.extend(text(32 << 20, 1));
    v.extend(random_data(32 << 20, 100));
    v
}

/// `(raw, compressed)` from a "compress incoming/outgoing: raw data N,
/// compressed M" line of a `-v` log.
fn summary(log: &str, dir: &str) -> Option<(u64, u64)> {
    let line = log
        .lines()
        .find(|l| l.contains(&format!("compress {dir}: raw data")))?;
    let num = |after: &str| -> Option<u64> {
        let rest = line.split(after).nth(1)?;
        rest.trim_start()
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    };
    Some((num("raw data")?, num("compressed")?))
}

#[test]
fn parallel_zlib_is_read_by_openssh() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("pzlib");
    let data = mixed();
    let hash = sha256(&data);
    let src = s.dir.path("mixed");
    std::fs::write(&src, &data).unwrap();
    // sluice deflates (in parallel jobs, at a fixed level: on loopback the
    // controller would rightly turn it off), sshd inflates. Level changes
    // toward sshd: `auto_follows_the_data_over_a_slow_path`.
    let server = s.start(true, "RekeyLimit 16M");
    let mut c = s.client_at(
        false,
        &server,
        "DEBUG1",
        &["-C", "-o", "RekeyLimit=16M", "-o", "CompressionLevel=1"],
    );
    c.arg("sha256sum");
    let out = run(c, &data, 300);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with(&hash),
        "sluice -C -> sshd upload: {log}"
    );
    let (raw, z) = summary(&log, "outgoing").expect("sluice's summary");
    // Half of it is text.
    assert!(raw >= 64 << 20 && z < raw * 3 / 4, "{raw} -> {z}");

    // sluiced deflates, ssh inflates and reports it. Re-keys every 20M
    // rather than 16M: 64 MiB sent stored (level 0 on loopback) at 16M
    // left the last key epoch, all OpenSSH's summary counts, nearly empty.
    let server = s.start(false, "RekeyLimit 20M");
    let mut c = s.client_at(true, &server, "DEBUG1", &["-C", "-o", "RekeyLimit=20M"]);
    c.arg(format!("cat {}", src.display()));
    let out = run(c, b"", 300);
    let log = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        sha256(&out.stdout),
        hash,
        "ssh -C <- sluiced download: {log}"
    );
    // OpenSSH inflated it (its summary counts the last key epoch only,
    // here random data sent stored: about as many bytes out as in).
    let (raw, z) = summary(&log, "incoming").expect("OpenSSH's summary");
    assert!(raw >= 1 << 20 && z > 0, "{raw} -> {z}");
}

/// Between sluice peers `-C` is zstd@sluice.dev: across re-keys, both
/// directions (upload at a fixed level, download steered by sluiced).
#[test]
fn zstd_between_sluice_peers() {
    let s = Setup::new("zstd");
    let data = mixed();
    let hash = sha256(&data);
    let src = s.dir.path("mixed");
    std::fs::write(&src, &data).unwrap();
    let server = s.start(false, "RekeyLimit 16M");
    let opts = ["-C", "-o", "RekeyLimit=16M"];
    let mut c = s.client_at(
        false,
        &server,
        "DEBUG1",
        &["-C", "-o", "RekeyLimit=16M", "-o", "CompressionLevel=2"],
    );
    c.arg("sha256sum");
    let out = run(c, &data, 300);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with(&hash),
        "upload: {log}"
    );
    let (raw, z) = summary(&log, "outgoing").expect("summary");
    assert!(raw >= 64 << 20 && z < raw * 3 / 4, "{raw} -> {z}");

    let mut c = s.client_at(false, &server, "DEBUG1", &opts);
    c.arg(format!("cat {}", src.display()));
    let out = run(c, b"", 300);
    let log = String::from_utf8_lossy(&out.stderr);
    assert_eq!(sha256(&out.stdout), hash, "download: {log}");
    // sluiced steers its level (on loopback the copy may win: level 0,
    // raw blocks), and the client decoded it all.
    let (raw, z) = summary(&log, "incoming").expect("summary");
    assert!(raw >= 64 << 20 && z > 0, "{raw} -> {z}");
}

/// The kex line's compression for one direction ("client->server").
fn negotiated<'a>(log: &'a str, dir: &str) -> Option<&'a str> {
    log.lines()
        .find(|l| l.contains(&format!("kex: {dir} cipher")))?
        .split("compression: ")
        .nth(1)
}

/// `Compression auto` (the default) over a 100 Mbit/s path, where
/// compression pays on text: on for text, off (raw blocks) for random
/// data, each decision reported at -v.
#[test]
fn auto_follows_the_data_over_a_slow_path() {
    let line = match wan_util::Line::up(10, "100mbit") {
        Ok(l) => l,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let s = Setup::new("auto");
    let port = free_port();
    let (server, _log) = wan_util::start_sluiced(&s, &line, port, "");

    let data = text(48 << 20, 7);
    let mut c = wan_util::client(&s, &line, false, port, &["-v"]);
    c.arg("sha256sum");
    let out = run(c, &data, 120);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with(&sha256(&data)),
        "text upload: {log}"
    );
    assert_eq!(negotiated(&log, "client->server"), Some("zstd@sluice.dev"));
    assert!(
        log.contains("compression: zstd@sluice.dev outgoing"),
        "{log}"
    );
    let (raw, z) = summary(&log, "outgoing").expect("summary");
    assert!(raw >= 48 << 20 && z * 2 < raw, "text: {raw} -> {z}\n{log}");

    let data = random_data(48 << 20, 8);
    let mut c = wan_util::client(&s, &line, false, port, &["-v"]);
    c.arg("sha256sum");
    let out = run(c, &data, 120);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with(&sha256(&data)),
        "random upload: {log}"
    );
    assert!(log.contains("-> 0: data does not compress"), "{log}");
    let (raw, z) = summary(&log, "outgoing").expect("summary");
    assert!(z < raw + raw / 50, "random: {raw} -> {z}");
    drop(server);

    // Toward stock sshd: parallel zlib whose level moves with the data
    // (text, then random), across re-keys; sshd inflates every job.
    if missing("/usr/sbin/sshd") {
        return;
    }
    let port = free_port();
    let (server, _log) = wan_util::start_sshd(&s, &line, port, "");
    let data = mixed();
    let mut c = wan_util::client(&s, &line, false, port, &["-v", "-o", "RekeyLimit=16M"]);
    c.arg("sha256sum");
    let out = run(c, &data, 120);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with(&sha256(&data)),
        "mixed upload to sshd: {log}"
    );
    assert_eq!(negotiated(&log, "client->server"), Some("zlib@openssh.com"));
    assert!(
        log.contains("compression: zlib@openssh.com level 0 -> "),
        "{log}"
    );
    assert!(log.contains("-> 0: data does not compress"), "{log}");
    let (raw, z) = summary(&log, "outgoing").expect("summary");
    assert!(z * 100 < raw * 85, "mixed: {raw} -> {z}");
    drop(server);
}

/// Toward stock sshd, auto compresses only what sluice sends (sshd's
/// sender would deflate at level 6 on one thread); a session with a pty
/// is never compressed by auto, and -C still compresses it.
#[test]
fn auto_toward_stock_sshd_and_with_a_pty() {
    let s = Setup::new("autopty");
    if !missing("/usr/sbin/sshd") {
        let server = s.start(true, "");
        let data = text(8 << 20, 3);
        let mut c = s.client_at(false, &server, "DEBUG1", &[]);
        c.arg("sha256sum");
        let out = run(c, &data, 120);
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with(&sha256(&data)),
            "{log}"
        );
        assert_eq!(negotiated(&log, "client->server"), Some("zlib@openssh.com"));
        assert_eq!(negotiated(&log, "server->client"), Some("none"));
    }
    let server = s.start(false, "");
    let mut c = s.client_at(false, &server, "DEBUG1", &["-tt"]);
    c.arg("echo pty-session");
    let out = run(c, b"", 60);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("pty-session"),
        "{log}"
    );
    assert!(log.contains("Compression auto: off for a session with a pty"));
    assert_eq!(negotiated(&log, "client->server"), Some("none"), "{log}");
    assert_eq!(negotiated(&log, "server->client"), Some("none"), "{log}");
    let mut c = s.client_at(false, &server, "DEBUG1", &["-tt", "-C"]);
    c.arg("echo pty-session");
    let out = run(c, b"", 60);
    let log = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        negotiated(&log, "client->server"),
        Some("zstd@sluice.dev"),
        "{log}"
    );
}
