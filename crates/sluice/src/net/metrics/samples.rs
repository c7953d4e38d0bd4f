//! `MetricsPath`: a sample of the connection every `MetricsInterval`, one
//! JSON object per line (JSON Lines), so a transfer can be plotted or
//! watched with `tail -f`. Plain formatting: every value is a number.
//!
//! Fields: `t` (seconds since the first sample), `sent` and `received`
//! (channel data bytes so far), `rate_sent` and `rate_received` (bytes per
//! second since the previous sample), `rtt_us`, `min_rtt_us`, `cwnd`
//! (segments), `mss`, `delivery_rate` (bytes per second), `retrans`
//! (segments sent again so far), `peer_window` (the peer's channel window
//! now) and `peer_window_max`, `send_queue` and `sndbuf` (the socket's send
//! buffer: bytes in it and its size), `recv_queue` and `rcvbuf` (the same
//! for received bytes not read yet).

use super::tally;
use crate::net::{path, sockbuf};
use std::io::Write;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// Bytes received on a socket that we have not read (SIOCINQ).
fn recv_queue(fd: RawFd) -> Option<u64> {
    crate::sys::tcp::recv_queue(fd)
}

/// The MetricsPath file could not be created.
#[derive(Debug)]
pub struct CreateError {
    /// MetricsPath as given.
    pub path: String,
    /// The system's reason.
    pub error: std::io::Error,
}

impl std::fmt::Display for CreateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MetricsPath {}: {}", self.path, self.error)
    }
}

impl std::error::Error for CreateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// The sample file and when the next sample is due.
pub struct Sampler {
    file: std::fs::File,
    every: Duration,
    start: Instant,
    next: Instant,
    last: Option<(Instant, u64, u64)>,
}

impl Sampler {
    /// Creates (truncates) `path` and samples every `every`.
    pub fn create(path: &str, every: Duration) -> Result<Sampler, CreateError> {
        let file = std::fs::File::create(path).map_err(|error| CreateError {
            path: path.to_owned(),
            error,
        })?;
        let now = Instant::now();
        Ok(Sampler {
            file,
            every: every.max(Duration::from_millis(10)),
            start: now,
            next: now,
            last: None,
        })
    }

    /// How long until the next sample is due.
    pub fn wait(&self, now: Instant) -> Duration {
        self.next.saturating_duration_since(now)
    }

    /// Writes a sample of `sock` if one is due; `peer_window` is the
    /// session channel's send window now.
    pub fn tick(&mut self, now: Instant, sock: Option<RawFd>, peer_window: Option<u32>) {
        if now < self.next {
            return;
        }
        self.next = now + self.every;
        let line = self.line(now, sock, peer_window);
        // A failed write (a full disk) loses samples, not the session.
        let _ = self.file.write_all(line.as_bytes());
    }

    fn line(&mut self, now: Instant, sock: Option<RawFd>, peer_window: Option<u32>) -> String {
        let t = tally::read();
        let (rate_sent, rate_received) = match self.last {
            Some((then, s, r)) if now > then => {
                let secs = (now - then).as_secs_f64();
                (
                    t.data_sent.saturating_sub(s) as f64 / secs,
                    t.data_received.saturating_sub(r) as f64 / secs,
                )
            }
            _ => (0.0, 0.0),
        };
        self.last = Some((now, t.data_sent, t.data_received));
        let mut fields: Vec<(&str, String)> = vec![
            ("t", format!("{:.3}", (now - self.start).as_secs_f64())),
            ("sent", t.data_sent.to_string()),
            ("received", t.data_received.to_string()),
            ("rate_sent", format!("{rate_sent:.0}")),
            ("rate_received", format!("{rate_received:.0}")),
        ];
        let mut num = |k: &'static str, v: Option<u64>| {
            if let Some(v) = v {
                fields.push((k, v.to_string()));
            }
        };
        let info = sock.and_then(path::tcp_info);
        let us = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        num("rtt_us", info.map(|i| us(i.rtt)));
        num("min_rtt_us", info.map(|i| us(i.path_rtt())));
        num("cwnd", info.map(|i| u64::from(i.snd_cwnd)));
        num("mss", info.map(|i| u64::from(i.snd_mss)));
        num("delivery_rate", info.map(|i| i.delivery_rate));
        num("retrans", info.map(|i| u64::from(i.total_retrans)));
        num("peer_window", peer_window.map(u64::from));
        num("peer_window_max", Some(t.peer_window_max));
        let fd = sock.filter(|_| info.is_some());
        num("send_queue", fd.and_then(path::send_queue));
        num(
            "sndbuf",
            fd.and_then(|f| sockbuf::get(f, sockbuf::Buf::Send)),
        );
        num("recv_queue", fd.and_then(recv_queue));
        num(
            "rcvbuf",
            fd.and_then(|f| sockbuf::get(f, sockbuf::Buf::Recv)),
        );
        let body: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
        format!("{{{}}}\n", body.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn an_uncreatable_file_is_named_with_the_reason() {
        let e = Sampler::create("/nonexistent-dir/m.jsonl", Duration::from_secs(1))
            .err()
            .unwrap();
        assert_eq!(e.path, "/nonexistent-dir/m.jsonl");
        assert_eq!(e.error.kind(), std::io::ErrorKind::NotFound);
        assert!(e
            .to_string()
            .starts_with("MetricsPath /nonexistent-dir/m.jsonl: No such file or directory"));
    }

    #[test]
    fn writes_one_json_object_per_due_sample() {
        let dir = std::env::temp_dir().join(format!("sluice-samples-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let p = dir.join("m.jsonl");
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let mut s = Sampler::create(p.to_str().unwrap(), Duration::from_secs(1)).unwrap();
        let t0 = Instant::now();
        s.tick(t0, Some(c.as_raw_fd()), Some(2 << 20));
        s.tick(t0 + Duration::from_millis(500), Some(c.as_raw_fd()), None);
        assert_eq!(
            s.wait(t0 + Duration::from_millis(600)),
            Duration::from_millis(400)
        );
        s.tick(t0 + Duration::from_secs(1), None, None);
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].starts_with("{\"t\":0.000,\"sent\":"), "{text}");
        assert!(lines[0].contains("\"peer_window\":2097152"), "{text}");
        assert!(
            lines[0].contains("\"rcvbuf\":") && lines[0].ends_with('}'),
            "{text}"
        );
        assert!(lines[1].starts_with("{\"t\":1.000,") && !lines[1].contains("cwnd"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
