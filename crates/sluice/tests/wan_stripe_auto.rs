//! `Streams auto` on a striped channel through the delay line (its own
//! test binary: a delay line's namespaces are named after the process).
//! Needs root, /dev/net/tun and the delayline binary; skipped otherwise,
//! saying why.

mod common;
mod wan_util;
use common::*;
use wan_util::*;

/// `Streams auto` measures the channel's rate and steers by it: on a
/// 100 ms path whose bandwidth-delay product at 1 Gbit/s (12.5 MB) is past
/// one socket's send buffer cap, it starts with four connections, and the
/// first measurement opens four more (a first step is always tried); the
/// next either adds or ends the growth. `-v` reports each decision, and
/// the data hashes right.
#[test]
fn streams_auto_measures_and_reports_each_decision() {
    // The cap sluice reads: the larger of tcp_wmem's maximum (set below in
    // the client's namespace) and twice net.core.wmem_max (the host's).
    let wmem_max: u64 = std::fs::read_to_string("/proc/sys/net/core/wmem_max")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    if 2 * wmem_max >= 12_500_000 {
        eprintln!("skipped: net.core.wmem_max {wmem_max} lets one socket cover the path");
        return;
    }
    let line = match Line::up(100, "100mbit") {
        Ok(l) => l,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let set = line
        .in_ns(false, "sysctl")
        .args(["-qw", "net.ipv4.tcp_wmem=4096 16384 4194304"])
        .status()
        .unwrap();
    assert!(set.success());
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
    assert!(err.contains("starting with 4 connections"), "{err}");
    assert!(
        decisions
            .first()
            .is_some_and(|d| d.contains("4 connection(s) move") && d.contains("opening 4 more")),
        "{err}"
    );
    assert!(decisions.len() >= 2, "{err}");
    // Three at the start, then what the steps added; the last step's
    // connections may come up after the data is through.
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
    let opened = err.matches("carrier open").count();
    assert!(
        (3..=3 + added).contains(&opened),
        "{opened} opened, {added} added: {err}"
    );
    drop(server);
}
