//! `sluice -o Metrics=yes`: the end-of-transfer summary against sluiced
//! (both halves, every byte counted, the cipher named, MetricsPath's JSON
//! lines) and against Debian's sshd (the server's half "not reported"), and
//! the escape `~I` in a pty session printing the summary so far.

mod common;
mod pty_term;
use common::*;
use pty_term::Term;

/// The summary's line for `label` ("  data        ...").
fn summary_line<'a>(err: &'a str, label: &str) -> &'a str {
    let head = format!("  {label:<12}");
    err.lines()
        .find_map(|l| l.strip_prefix(head.as_str()))
        .unwrap_or_else(|| panic!("no {label} line in:\n{err}"))
}

#[test]
fn against_sluiced_both_halves_and_every_byte() {
    let s = Setup::new("metrics");
    let server = s.start(false, "");
    let data = random_data(24 << 20, 42);
    let samples = s.dir.path("samples.jsonl");
    let mut c = s.client(
        false,
        &server,
        &[
            "-c",
            "aes128-gcm@openssh.com",
            "-o",
            "Metrics=yes",
            "-o",
            &format!("MetricsFile={}", samples.display()),
        ],
    );
    c.arg("sha256sum");
    let out = run(c, &data, 60);
    ok(&out, "upload with Metrics=yes");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(&sha256(&data)));
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("{err}");
    assert!(err.starts_with("Metrics: 24.0 MiB up in "), "{err}");
    assert!(err.contains("(server SSH-2.0-sluice"), "{err}");
    assert!(
        summary_line(&err, "data").starts_with(&format!("sent {}, received 68 bytes;", data.len())),
        "{err}"
    );
    assert_eq!(
        summary_line(&err, "cipher"),
        "aes128-gcm@openssh.com both ways"
    );
    assert!(summary_line(&err, "path").starts_with("RTT min "), "{err}");
    for end in ["client", "server"] {
        let l = summary_line(&err, end);
        assert!(
            l.starts_with("SO_SNDBUF ") && l.contains("rmem_max ") && l.contains("CPU "),
            "{end}: {l}"
        );
    }
    let limit = summary_line(&err, "limit");
    assert!(
        limit.starts_with("limited by ") || limit.starts_with("no single limit"),
        "{limit}"
    );
    // MetricsFile (MetricsPath's other name): a sample a second at least
    // the first, each a JSON object with the counts so far.
    let lines = std::fs::read_to_string(&samples).unwrap();
    let first = lines.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("{\"t\":0.") && first.contains("\"sent\":") && first.ends_with('}'),
        "{lines}"
    );

    // A download: the received side counts every byte.
    let file = s.dir.path("down");
    std::fs::write(&file, &data).unwrap();
    let mut c = s.client(false, &server, &["-o", "Metrics=yes"]);
    c.arg(format!("cat {}", file.display()));
    let out = run(c, b"", 60);
    ok(&out, "download with Metrics=yes");
    assert_eq!(sha256(&out.stdout), sha256(&data));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("Metrics: 24.0 MiB down in "), "{err}");
    assert!(
        summary_line(&err, "data").starts_with(&format!("sent 0, received {} bytes;", data.len())),
        "{err}"
    );
    assert!(
        summary_line(&err, "server").starts_with("SO_SNDBUF "),
        "{err}"
    );
}

#[test]
fn against_a_stock_sshd_the_server_is_not_reported() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("metrics-stock");
    let server = s.start(true, "");
    let data = random_data(4 << 20, 7);
    let mut c = s.client(false, &server, &["-o", "Metrics=yes"]);
    c.arg("cat > /dev/null");
    let out = run(c, &data, 60);
    ok(&out, "upload to sshd with Metrics=yes");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("(server SSH-2.0-OpenSSH_"), "{err}");
    assert!(
        summary_line(&err, "data").starts_with(&format!("sent {}, received 0 bytes;", data.len())),
        "{err}"
    );
    assert_eq!(
        summary_line(&err, "server"),
        "not reported (not sluiced)",
        "{err}"
    );
    assert!(summary_line(&err, "limit").len() > 10, "{err}");
    // No summary without the option.
    let mut c = s.client(false, &server, &[]);
    c.arg("true");
    let out = run(c, b"", 30);
    ok(&out, "plain run");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("Metrics:"));
}

#[test]
fn tilde_i_prints_the_summary_so_far() {
    for openssh_server in [false, true] {
        if openssh_server && missing("/usr/sbin/sshd") {
            return;
        }
        let s = Setup::new("tilde-i");
        let server = s.start(openssh_server, "");
        let mut t = Term::spawn(s.client(false, &server, &[]), 24, 80);
        t.run("true", "I");
        // `~?` lists it; `~I` prints the summary on the terminal.
        t.send(b"\r~?");
        t.expect("I   - show connection information", 30);
        t.send(b"\r~I");
        let text = t.expect("  limit       ", 30);
        assert!(text.contains("Metrics: "), "{text}");
        let server_half = if openssh_server {
            "  server      not reported (not sluiced)\r\n"
        } else {
            "  server      SO_SNDBUF "
        };
        assert!(text.contains(server_half), "{text}");
        t.send(b"exit\r");
        let st = t.wait(30);
        assert!(st.success(), "{st:?}:\n{}", t.text());
    }
}
