//! `sluice bench` against a local sluiced and a stock sshd: every run
//! moves data, the server is named, the runs that need sluiced are left
//! out toward sshd, and a login that fails stops it at once with ssh's
//! message and exit 255.

mod common;
use common::*;
use std::process::{Command, Output};

fn bench(s: &Setup, port: u16, extra: &[&str]) -> Output {
    let kh = s.dir.path("known_hosts");
    let mut c = Command::new(SLUICE);
    c.args([
        "bench",
        "--json",
        "--time",
        "1",
        "--no-ssh",
        "-F",
        "/dev/null",
    ])
    .args(["-o", "StrictHostKeyChecking=no", "-o"])
    .arg(format!("UserKnownHostsFile={}", kh.display()))
    .args(extra)
    .args(["-p", &port.to_string(), "127.0.0.1"]);
    run(c, b"", 120)
}

/// The runs' (name, MB/s, error) from the JSON, by plain text: each run
/// object has these keys in this order.
fn runs(json: &str) -> Vec<(String, f64, String)> {
    let field = |obj: &str, key: &str| -> String {
        let k = format!("\"{key}\":");
        let rest = obj.split_once(&k).map_or("", |(_, r)| r);
        let end = rest.find([',', '}']).unwrap_or(rest.len());
        rest[..end].trim_matches('"').to_owned()
    };
    json.split("{\"name\":")
        .skip(1)
        .map(|o| {
            let name = o.split('"').nth(1).unwrap_or_default().to_owned();
            let rate = field(o, "mb_per_s").parse().unwrap_or(0.0);
            (name, rate, field(o, "error"))
        })
        .collect()
}

#[test]
fn bench_measures_a_local_sluiced_and_sshd() {
    let s = Setup::new("pathbench");
    let key = s.user_key.display().to_string();
    let server = s.start(false, "");
    let out = bench(&s, server.port, &["-i", &key]);
    ok(&out, "sluice bench -> sluiced");
    let json = String::from_utf8_lossy(&out.stdout);
    assert!(json.contains("\"server\":\"SSH-2.0-sluice"), "{json}");
    let r = runs(&json);
    assert!(r.len() >= 6, "{json}");
    for (name, rate, error) in &r {
        assert_eq!(error, "null", "{name}: {json}");
        assert!(*rate > 1.0, "{name}: {rate} MB/s\n{json}");
    }
    assert!(
        r.iter().any(|(n, ..)| n.ends_with("Streams auto")),
        "{json}"
    );
    assert!(json.contains("\"recommended\":["), "{json}");
    drop(server);

    if !missing("/usr/sbin/sshd") {
        let server = s.start(true, "");
        let out = bench(&s, server.port, &["-i", &key]);
        ok(&out, "sluice bench -> sshd");
        let json = String::from_utf8_lossy(&out.stdout);
        assert!(json.contains("\"server\":\"SSH-2.0-OpenSSH"), "{json}");
        let r = runs(&json);
        assert!(r.len() >= 5, "{json}");
        assert!(
            r.iter().all(|(_, rate, e)| e == "null" && *rate > 1.0),
            "{json}"
        );
        // Striping needs sluiced: not tried against sshd.
        assert!(!r.iter().any(|(n, ..)| n.contains("Streams")), "{json}");
    }

    // No login: the first run's error, at once, exit 255.
    let server = s.start(false, "");
    let other = s.dir.path("other_key");
    keygen(&other, "ed25519");
    let out = bench(
        &s,
        server.port,
        &[
            "-o",
            "IdentitiesOnly=yes",
            "-i",
            &other.display().to_string(),
        ],
    );
    assert_eq!(out.status.code(), Some(255));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Permission denied"), "{err}");
    assert!(out.stdout.is_empty());
}
