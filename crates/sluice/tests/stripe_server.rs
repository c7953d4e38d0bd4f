//! Channel striping in sluiced (PROTOCOL.md, "Channel striping"): the
//! `stripe-v00@sluice.dev` grant on a primary connection, asked for by
//! paramiko (an independent client that knows nothing of striping beyond
//! the global request it is told to send), within MaxStreams, once per
//! connection, declined by `MaxStreams 1` globally or in a Match block.

mod common;
use common::*;
use std::process::Command;

fn paramiko() -> Option<String> {
    let ok = Command::new("python3")
        .args(["-c", "import paramiko"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var("CI").is_err(),
            "python3 with paramiko is required under CI (pip install -r tests/requirements.txt)"
        );
        eprintln!("skipping: python3 paramiko not installed");
        return None;
    }
    Some(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/peers/stripe_grant.py"
        )
        .to_owned(),
    )
}

/// Asks `server` for grants, one request per entry of `requests` on one
/// connection; the script's lines.
fn ask(script: &str, s: &Setup, server: &Server, requests: &[&str]) -> Vec<String> {
    let mut c = Command::new("python3");
    c.arg(script)
        .arg(server.port.to_string())
        .arg(&s.user_key)
        .arg(user())
        .args(requests);
    let out = run(c, b"", 60);
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        lines.len(),
        requests.len(),
        "stderr: {}\nlog: {}",
        String::from_utf8_lossy(&out.stderr),
        server.log_text()
    );
    lines
}

#[test]
fn grant_within_max_streams_once_per_connection() {
    let Some(script) = paramiko() else { return };
    let s = Setup::new("stripe-grant");
    // Default MaxStreams 8: up to 7 secondaries; a second request on the
    // same connection is declined.
    let server = s.start(false, "");
    assert_eq!(
        ask(&script, &s, &server, &["20", "1"]),
        ["granted 7 32 32", "declined"]
    );
    assert_eq!(ask(&script, &s, &server, &["2"]), ["granted 2 32 32"]);
    // Malformed request data is a protocol error: the connection ends.
    assert_eq!(ask(&script, &s, &server, &["bad"]), ["closed"]);
    // 0 secondaries wanted is malformed too (1-255).
    assert_eq!(ask(&script, &s, &server, &["0"]), ["closed"]);
    let server = s.start(false, "MaxStreams 3");
    assert_eq!(ask(&script, &s, &server, &["5"]), ["granted 2 32 32"]);
}

#[test]
fn max_streams_one_declines() {
    let Some(script) = paramiko() else { return };
    let s = Setup::new("stripe-decline");
    let server = s.start(false, "MaxStreams 1");
    assert_eq!(ask(&script, &s, &server, &["3"]), ["declined"]);
    // Per user: a Match block's MaxStreams applies to that user's sessions.
    let server = s.start(
        false,
        &format!("MaxStreams 4\nMatch User {}\n  MaxStreams 1", user()),
    );
    assert_eq!(ask(&script, &s, &server, &["3"]), ["declined"]);
    let server = s.start(false, "Match User nobody-else\n  MaxStreams 1");
    assert_eq!(ask(&script, &s, &server, &["3"]), ["granted 3 32 32"]);
}

#[test]
fn max_streams_in_the_dump_and_checked() {
    let s = Setup::new("stripe-kw");
    let dump = |extra: &str| {
        let cfg = s.config(free_port(), extra);
        let mut c = Command::new(SLUICED);
        c.arg("-T").arg("-f").arg(&cfg);
        run(c, b"", 20)
    };
    let out = dump("");
    assert!(String::from_utf8_lossy(&out.stdout).contains("\nmaxstreams 8\n"));
    let out = dump("MaxStreams 1");
    assert!(String::from_utf8_lossy(&out.stdout).contains("\nmaxstreams 1\n"));
    let out = dump("MaxStreams 0");
    assert_ne!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("MaxStreams must be at least 1"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
