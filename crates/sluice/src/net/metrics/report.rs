//! The end-of-transfer summary (`Metrics yes`, `~I`): both ends' intervals
//! turned into the classifier's numbers (classify.rs) and into a screen of
//! text, one figure group per line, ending with the line that says what
//! limited the transfer.

use super::classify::{
    bytes_text, classify, ms_text, rate_text, Buffer, Direction, EndNumbers, Measured, Side, Waits,
};
use super::snapshot::{Figure, Interval};
use std::fmt::Write as _;
use std::time::Duration;

/// What the client knows of the session besides its figures.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// The server's version string.
    pub server_version: String,
    /// Ciphers client to server, server to client.
    pub ciphers: (String, String),
    /// Compression names each way ("none" when off).
    pub compression: (String, String),
    /// Compression counts each way: (raw, compressed) bytes, where it ran.
    pub compression_stats: (Option<(u64, u64)>, Option<(u64, u64)>),
    /// The outgoing compression level, where it has one.
    pub compression_level: Option<u8>,
    /// Connections the data went over (1: not striped).
    pub streams: u32,
    /// Bytes on the sockets: (received, sent).
    pub socket_bytes: (u64, u64),
}

fn share(i: &Interval, f: Figure) -> f64 {
    i.wait_share(f).unwrap_or(0.0)
}

/// A buffer from an interval's figures.
fn buffer(i: &Interval, size: Figure, asked: Figure, core: Figure, auto: Figure) -> Option<Buffer> {
    Some(Buffer {
        size: i.get(size)?,
        asked: i.get(asked).unwrap_or(0),
        core_max: i.get(core),
        autotune_max: i.get(auto),
    })
}

/// `part` of TCP's busy time, as a share.
fn of_busy(i: &Interval, part: Figure) -> Option<f64> {
    let busy = i.get(Figure::BusyUs).filter(|b| *b > 0)?;
    Some(i.get(part).unwrap_or(0) as f64 / busy as f64)
}

/// One end's numbers for the classifier.
pub fn end_numbers(side: Side, i: &Interval) -> EndNumbers {
    let span = i.span();
    let per_span = |f: Figure| (span > 0.0).then(|| i.secs(f).unwrap_or(0.0) / span);
    EndNumbers {
        side,
        thread_cpu: per_span(Figure::CpuThreadUs),
        process_cpu: per_span(Figure::CpuUs),
        cores: i
            .get(Figure::Cores)
            .and_then(|c| u32::try_from(c).ok())
            .unwrap_or(1),
        waits: Waits {
            socket: share(i, Figure::WaitSocketUs),
            window: share(i, Figure::WaitWindowUs),
            sink: share(i, Figure::WaitSinkUs),
            source: share(i, Figure::WaitSourceUs),
        },
        tcp_busy: per_span(Figure::BusyUs),
        cwnd_bytes: i
            .get(Figure::Cwnd)
            .zip(i.get(Figure::Mss))
            .map(|(c, m)| c.saturating_mul(m)),
        rwnd_limited: of_busy(i, Figure::RwndLimitedUs),
        sndbuf_limited: of_busy(i, Figure::SndbufLimitedUs),
        rcvbuf: buffer(
            i,
            Figure::SoRcvbuf,
            Figure::RcvbufAsked,
            Figure::RmemMax,
            Figure::TcpRmemMax,
        ),
        sndbuf: buffer(
            i,
            Figure::SoSndbuf,
            Figure::SndbufAsked,
            Figure::WmemMax,
            Figure::TcpWmemMax,
        ),
    }
}

/// The classifier's view of the transfer.
pub fn measured(facts: &Facts, client: &Interval, server: Option<&Interval>) -> Measured {
    let sent = client.get(Figure::DataSent).unwrap_or(0);
    let received = client.get(Figure::DataReceived).unwrap_or(0);
    let direction = if sent >= received {
        Direction::Upload
    } else {
        Direction::Download
    };
    // The sender's figures say most about the path; ours stand in for a
    // server that did not report.
    let sender = match direction {
        Direction::Upload => Some(client),
        Direction::Download => server,
    };
    let path = sender.unwrap_or(client);
    let window = match direction {
        Direction::Upload => client.get(Figure::PeerWindowMax),
        Direction::Download => server
            .and_then(|s| s.get(Figure::PeerWindowMax))
            .or_else(|| client.get(Figure::RecvWindowMax)),
    };
    let (cipher, compression, stats) = match direction {
        Direction::Upload => (
            &facts.ciphers.0,
            &facts.compression.0,
            facts.compression_stats.0,
        ),
        Direction::Download => (
            &facts.ciphers.1,
            &facts.compression.1,
            facts.compression_stats.1,
        ),
    };
    let compression = stats.map(|_| match (direction, facts.compression_level) {
        (Direction::Upload, Some(l)) => format!("{compression} level {l}"),
        _ => compression.clone(),
    });
    Measured {
        direction,
        bytes: sent.max(received),
        seconds: client.span(),
        rtt: client
            .get(Figure::MinRttUs)
            .filter(|r| *r > 0)
            .map(Duration::from_micros),
        delivery_rate: path.get(Figure::DeliveryMax).map(|d| d as f64),
        retransmits: path.get(Figure::Retrans),
        window: window.filter(|w| *w > 0),
        cipher: cipher.clone(),
        compression,
        streams: facts.streams.max(1),
        client: end_numbers(Side::Client, client),
        server: server.map(|s| end_numbers(Side::Server, s)),
    }
}

fn opt_bytes(v: Option<u64>) -> String {
    v.map_or_else(|| "?".into(), bytes_text)
}

fn opt_num(v: Option<u64>) -> String {
    v.map_or_else(|| "?".into(), |n| n.to_string())
}

/// An end's buffers, caps, CPU and waits, on one line.
fn end_line(i: &Interval) -> String {
    let n = end_numbers(Side::Client, i);
    let mut s = format!(
        "SO_SNDBUF {}, SO_RCVBUF {} (caps: net.core.wmem_max {}, rmem_max {}; tcp_wmem max {}, tcp_rmem max {})",
        opt_bytes(i.get(Figure::SoSndbuf)),
        opt_bytes(i.get(Figure::SoRcvbuf)),
        opt_num(i.get(Figure::WmemMax)),
        opt_num(i.get(Figure::RmemMax)),
        opt_num(i.get(Figure::TcpWmemMax)),
        opt_num(i.get(Figure::TcpRmemMax)),
    );
    if let (Some(p), Some(t)) = (n.process_cpu, n.thread_cpu) {
        let _ = write!(
            s,
            "; CPU {:.0}% of a core (loop thread {:.0}%)",
            p * 100.0,
            t * 100.0
        );
    }
    if let (Some(b), Some(r), Some(w)) = (n.tcp_busy, n.rwnd_limited, n.sndbuf_limited) {
        let _ = write!(
            s,
            "; TCP busy {:.0}% (held by the peer's receive window {:.0}%, by its send buffer {:.0}%)",
            b * 100.0,
            r * 100.0,
            w * 100.0
        );
    }
    let w = n.waits;
    let _ = write!(
        s,
        "; loop waited: socket full {:.0}%, peer's window {:.0}%, writing out {:.0}%, nothing to send {:.0}%",
        w.socket * 100.0,
        w.window * 100.0,
        w.sink * 100.0,
        w.source * 100.0
    );
    s
}

/// The summary's lines, each ended with `eol` ("\r\n" on a raw terminal).
pub fn summary(facts: &Facts, client: &Interval, server: Option<&Interval>, eol: &str) -> String {
    let m = measured(facts, client, server);
    let verdict = classify(&m);
    let sent = client.get(Figure::DataSent).unwrap_or(0);
    let received = client.get(Figure::DataReceived).unwrap_or(0);
    let secs = m.seconds;
    let rate = if secs > 0.0 {
        m.bytes as f64 / secs
    } else {
        0.0
    };
    let mut out = String::new();
    let mut line = |label: &str, text: String| {
        let _ = write!(out, "  {label:<12}{text}{eol}");
    };
    let way = match m.direction {
        Direction::Upload => "up",
        Direction::Download => "down",
    };
    let header = format!(
        "Metrics: {} {way} in {secs:.1} s, {} (server {}){eol}",
        bytes_text(m.bytes),
        rate_text(rate),
        if facts.server_version.is_empty() {
            "?"
        } else {
            &facts.server_version
        }
    );
    line(
        "data",
        format!(
            "sent {sent}, received {received} bytes; on the socket sent {}, received {}",
            facts.socket_bytes.1, facts.socket_bytes.0
        ),
    );
    let (c2s, s2c) = &facts.ciphers;
    line(
        "cipher",
        if c2s == s2c {
            format!("{c2s} both ways")
        } else {
            format!("{c2s} up, {s2c} down")
        },
    );
    let mut comp = Vec::new();
    for (dir, name, stats) in [
        ("up", &facts.compression.0, facts.compression_stats.0),
        ("down", &facts.compression.1, facts.compression_stats.1),
    ] {
        if let Some((raw, z)) = stats {
            let level = match (dir, facts.compression_level) {
                ("up", Some(l)) => format!(" level {l}"),
                _ => String::new(),
            };
            comp.push(format!(
                "{dir} {name}{level}: {raw} -> {z} bytes ({:.2})",
                z as f64 / raw.max(1) as f64
            ));
        }
    }
    line(
        "compression",
        if comp.is_empty() {
            "none".into()
        } else {
            comp.join("; ")
        },
    );
    if m.streams > 1 {
        line("streams", format!("{} connections", m.streams));
    }
    let ours = client
        .get(Figure::RecvWindowMax)
        .filter(|w| *w > 0)
        .map(|w| format!(", largest of ours {}", bytes_text(w)))
        .unwrap_or_default();
    line(
        "window",
        format!(
            "largest the server granted {}{ours}",
            opt_bytes(client.get(Figure::PeerWindowMax).filter(|w| *w > 0)),
        ),
    );
    let path = match m.direction {
        Direction::Download => server.unwrap_or(client),
        Direction::Upload => client,
    };
    let avg = match (path.get(Figure::RttSumUs), path.get(Figure::RttSamples)) {
        (Some(sum), Some(n)) if n > 0 => ms_text(Duration::from_micros(sum / n)),
        _ => "?".into(),
    };
    line(
        "path",
        format!(
            "RTT min {}, avg {avg}; delivery rate {}; {} segments sent again; cwnd {} segments",
            m.rtt.map_or_else(|| "?".into(), ms_text),
            m.delivery_rate.map_or_else(|| "?".into(), rate_text),
            opt_num(m.retransmits),
            opt_num(path.get(Figure::Cwnd)),
        ),
    );
    line("client", end_line(client));
    line(
        "server",
        match server {
            Some(s) => end_line(s),
            None => "not reported (not sluiced)".into(),
        },
    );
    line("limit", verdict.line);
    format!("{header}{out}")
}

#[cfg(test)]
mod tests {
    use super::super::snapshot::Snapshot;
    use super::*;

    fn snap(pairs: &[(Figure, u64)]) -> Snapshot {
        let mut s = Snapshot::default();
        for (f, v) in pairs {
            s.set(*f, *v);
        }
        s
    }

    #[test]
    fn an_upload_into_a_small_server_buffer() {
        use Figure::*;
        let client = Interval::new(
            Some(snap(&[
                (ElapsedUs, 1_000_000),
                (DataSent, 0),
                (WaitSocketUs, 0),
            ])),
            snap(&[
                (ElapsedUs, 5_000_000),
                (CpuUs, 400_000),
                (CpuThreadUs, 300_000),
                (Cores, 2),
                (DataSent, 8 << 20),
                (DataReceived, 64),
                (WaitSocketUs, 3_600_000),
                (BusyUs, 4_000_000),
                (RwndLimitedUs, 3_800_000),
                (MinRttUs, 100_000),
                (RttSumUs, 3_030_000),
                (RttSamples, 30),
                (DeliveryMax, 2_200_000),
                (PeerWindowMax, 16 << 20),
            ]),
        );
        let server = Interval::new(
            None,
            snap(&[
                (ElapsedUs, 6_000_000),
                (SoRcvbuf, 262_144),
                (RcvbufAsked, 262_144),
                (RmemMax, 4 << 20),
                (TcpRmemMax, 32 << 20),
            ]),
        );
        let facts = Facts {
            server_version: "SSH-2.0-sluice_0.1".into(),
            ciphers: (
                "aes128-gcm@openssh.com".into(),
                "aes128-gcm@openssh.com".into(),
            ),
            compression: ("none".into(), "none".into()),
            streams: 1,
            socket_bytes: (40_000, 8_500_000),
            ..Facts::default()
        };
        let text = summary(&facts, &client, Some(&server), "\n");
        assert!(
            text.starts_with("Metrics: 8.0 MiB up in 4.0 s, 2.1 MB/s"),
            "{text}"
        );
        assert!(text.contains("sent 8388608, received 64 bytes"), "{text}");
        assert!(text.contains("aes128-gcm@openssh.com both ways"), "{text}");
        assert!(text.contains("RTT min 100.0 ms, avg 101.0 ms"), "{text}");
        assert!(text.contains("loop waited: socket full 90%"), "{text}");
        assert!(
            text.contains("limit       limited by the receiver's socket buffer: SO_RCVBUF 256 KiB on the server"),
            "{text}"
        );
        let stock = summary(&facts, &client, None, "\r\n");
        assert!(
            stock.contains("server      not reported (not sluiced)\r\n"),
            "{stock}"
        );
    }
}
