//! The `Metrics` summary checked against a transfer whose limit is known:
//! through the delay line (crates/delayline) at 100 ms of round trip, into
//! a sluiced whose receive buffer is held at 256 KiB (`TcpRcvBuf`), an
//! upload can have no more than that in flight, about 2.6 MB/s; the
//! summary must count every byte, see the path's RTT and the server's
//! buffer, and name the receiver's socket buffer as the limit. Then into
//! Debian's sshd, whose channel window stays near 2 MiB: the peer's window
//! is the limit, told from the client's side alone.
//!
//! A file of its own rather than a test in wan.rs: the delay line's
//! namespaces are named after the test process, so two lines in one
//! process would collide. Needs root, /dev/net/tun and the delayline binary
//! (built by `cargo test --workspace`); skipped otherwise, saying why.

mod common;
mod wan_util;
use common::*;
use wan_util::*;

const RTT_MS: u64 = 100;

fn line_of<'a>(err: &'a str, label: &str) -> &'a str {
    let head = format!("  {label:<12}");
    err.lines()
        .find_map(|l| l.strip_prefix(head.as_str()))
        .unwrap_or_else(|| panic!("no {label} line in:\n{err}"))
}

#[test]
fn the_limits_of_a_capped_buffer_and_a_stock_window_are_named() {
    let line = match Line::up(RTT_MS, "1gbit") {
        Ok(l) => l,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let s = Setup::new("wan-metrics");
    capped_server_receive_buffer(&s, &line);
    if !missing("/usr/sbin/sshd") {
        stock_sshd_window(&s, &line);
    }
}

/// sluiced with `TcpRcvBuf 256K`: the receiver's socket buffer.
fn capped_server_receive_buffer(s: &Setup, line: &Line) {
    let port = 2200 + (std::process::id() % 1000) as u16;
    let (_server, _log) = start_sluiced(s, line, port, "TcpRcvBuf 256K\n");
    // 8 MiB: a few seconds at 256 KiB per round trip, slow start included.
    let data = random_data(8 << 20, 100);
    // One connection: Streams auto would stripe this path.
    let mut c = client(
        s,
        line,
        false,
        port,
        &["-o", "Metrics=yes", "-o", "Streams=1"],
    );
    c.arg("cat > /dev/null");
    let t0 = std::time::Instant::now();
    let out = run(c, &data, 60);
    ok(&out, "upload with Metrics=yes over the delay line");
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("{:.1} s:\n{err}", t0.elapsed().as_secs_f64());
    assert!(err.contains("Metrics: 8.0 MiB up in "), "{err}");
    assert!(
        line_of(&err, "data").starts_with(&format!("sent {}, received 0 bytes;", data.len())),
        "{err}"
    );
    // The delay line's 100 ms, as TCP measured it.
    let rtt = line_of(&err, "path");
    let min: f64 = rtt
        .strip_prefix("RTT min ")
        .and_then(|r| r.split(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{rtt}"));
    assert!((99.0..130.0).contains(&min), "{rtt}");
    assert!(
        line_of(&err, "server").starts_with("SO_SNDBUF ")
            && line_of(&err, "server").contains(", SO_RCVBUF 256 KiB "),
        "{err}"
    );
    let limit = line_of(&err, "limit");
    assert!(
        limit.starts_with(
            "limited by the receiver's socket buffer: SO_RCVBUF 256 KiB on the server, as configured there; ask for more with -o RemoteRcvBuf="
        ),
        "{err}"
    );
}

/// Debian's sshd: its 2 MiB channel window, from this side alone.
fn stock_sshd_window(s: &Setup, line: &Line) {
    let port = 3200 + (std::process::id() % 1000) as u16;
    let (_server, _log) = start_sshd(s, line, port, "");
    // 2 MiB a round trip: about 20 MB/s.
    let data = random_data(32 << 20, 101);
    let mut c = client(
        s,
        line,
        false,
        port,
        &["-o", "Metrics=yes", "-c", "aes128-gcm@openssh.com"],
    );
    c.arg("cat > /dev/null");
    let out = run(c, &data, 60);
    ok(&out, "upload to sshd with Metrics=yes over the delay line");
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("{err}");
    assert_eq!(line_of(&err, "server"), "not reported (not sluiced)");
    let limit = line_of(&err, "limit");
    assert!(
        limit.starts_with("limited by the peer's window: the server's channel window (")
            && limit.contains("a stock sshd's window stays near 2 MiB"),
        "{err}"
    );
}
