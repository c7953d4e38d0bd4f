//! `Streams auto` on a striped channel through the delay line (its own
//! test binary: a delay line's namespaces are named after the process).
//! Needs root, /dev/net/tun and the delayline binary; skipped otherwise,
//! saying why.

mod common;
mod wan_util;
use common::*;
use wan_util::*;

/// `Streams auto` measures the channel's rate and steers by it: on a 50 ms
/// path one connection starts (one socket's buffer covers the path), the
/// first measurement adds one, and the next either adds more or ends the
/// growth; `-v` reports each decision, and the data hashes right.
#[test]
fn streams_auto_measures_and_reports_each_decision() {
    let line = match Line::up(50, "100mbit") {
        Ok(l) => l,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let s = Setup::new("wan-stripe-auto");
    let port = 3200 + (std::process::id() % 1000) as u16;
    let (server, _log) = start_sluiced(&s, &line, port, "LogLevel VERBOSE\n");
    let data = random_data(96 << 20, 78);
    let mut c = client(&s, &line, false, port, &["-v", "-o", "Streams=auto"]);
    c.arg("sha256sum");
    let out = run(c, &data, 180);
    ok(&out, "upload with Streams auto");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(&sha256(&data)));
    let err = String::from_utf8_lossy(&out.stderr);
    let decisions: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("Streams auto: ") && l.contains(" MB/s"))
        .collect();
    eprintln!("{}", decisions.join("\n"));
    assert!(err.contains("starting with 1 connection"), "{err}");
    assert!(
        decisions
            .first()
            .is_some_and(|d| d.contains("1 connection(s) move") && d.contains("opening 1 more")),
        "{err}"
    );
    assert!(decisions.len() >= 2, "{err}");
    let added: usize = decisions
        .iter()
        .filter_map(|d| {
            d.split("opening ")
                .nth(1)?
                .split(' ')
                .next()?
                .parse::<usize>()
                .ok()
        })
        .sum();
    // The last step's connections may come up after the data is through.
    let opened = err.matches("carrier open").count();
    assert!(
        opened >= 1 && opened <= added,
        "{opened} opened, {added} added: {err}"
    );
    drop(server);
}
