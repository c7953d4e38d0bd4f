//! How many READs or WRITEs one transfer keeps in flight. `-R N` fixes the
//! count, as in OpenSSH's sftp. Otherwise it follows the path: OpenSSH's 64
//! from the first request (no slow start), then, once per round trip,
//! enough requests to carry four times what the last round trip delivered.
//! While the pipeline is what holds the rate back, that quadruples it each
//! round trip; once the path (or the disk, or `-l`) is the limit it stops
//! near four times the bandwidth-delay product. Twice was too little: a
//! sender filling a path's queue (BBR's startup, a drop-tail queue of one
//! BDP) has two BDPs in flight, and while a loss is repaired the server
//! answers nothing for a round trip, so a pipeline of 2 BDPs ran dry and the
//! link idled at each loss (measured at 240 ms, 1 Gbit/s: 0.1-0.2 s a loss).
//! [`MAX_IN_FLIGHT`] bounds it whatever the measurements say: requests
//! beyond what the channel's window carries wait in the channel's bounded
//! queue (`channel::OUT_MAX`) or, for READs, cost the server a queued
//! request each.

use std::time::{Duration, Instant};

/// Requests in flight at first: OpenSSH's default (`sftp -R`).
pub const START: usize = 64;

/// The most request payload kept in flight: 128 MiB (512 requests of
/// 255 KiB), a 1 Gbit/s path of over a second's round trip.
pub const MAX_IN_FLIGHT: u64 = 128 << 20;

/// The fewest requests [`Depth::within`] leaves in flight.
const MIN_WITHIN: u64 = 8;

/// The shortest period measured, so a loopback RTT does not make every
/// reply a decision.
const MIN_PERIOD: Duration = Duration::from_millis(20);

/// The pipeline depth of one transfer loop.
#[derive(Debug)]
pub struct Depth {
    n: usize,
    /// The most requests [`MAX_IN_FLIGHT`] allows at this request size.
    max: usize,
    len: u64,
    /// The path's round trip; None: fixed (`-R`, or no RTT measured).
    rtt: Option<Duration>,
    since: Instant,
    bytes: u64,
}

impl Depth {
    /// `requests`: `-R` (0: sized from the path); `len`: the size of one
    /// READ or WRITE; `rtt`: the session's measured round trip.
    pub fn new(requests: usize, len: u32, rtt: Option<Duration>) -> Depth {
        let len = u64::from(len.max(1));
        let max = (MAX_IN_FLIGHT / len).max(START as u64) as usize;
        let (n, rtt) = if requests == 0 {
            (START.min(max), rtt)
        } else {
            (requests, None)
        };
        Depth {
            n,
            max,
            len,
            rtt,
            since: Instant::now(),
            bytes: 0,
        }
    }

    /// Requests to keep in flight now.
    pub fn get(&self) -> usize {
        self.n
    }

    /// Requests to keep in flight when at most `bytes` can be on the way
    /// at once (0: no such bound). A server that keeps its channel window
    /// fixed (sshd's 2 MiB) takes no more than that per round trip, and
    /// WRITEs past a few windows only wait in our queue: in a copy in
    /// ranges they are what each connection must still drain once the
    /// ranges run out. A fixed count (`-R`) is kept as asked.
    pub fn within(&self, bytes: u64) -> usize {
        if bytes == 0 || self.rtt.is_none() {
            return self.n;
        }
        self.n.min((bytes / self.len).max(MIN_WITHIN) as usize)
    }

    /// A reply delivered `bytes` of payload (written or read).
    pub fn delivered(&mut self, bytes: u64) {
        let Some(rtt) = self.rtt else {
            return;
        };
        self.bytes += bytes;
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(self.since);
        if elapsed < rtt.max(MIN_PERIOD) {
            return;
        }
        let want = want(self.bytes, elapsed, rtt, self.len).min(self.max);
        if want > self.n {
            crate::log!(
                Debug1,
                "sftp: {} requests of {} bytes in flight ({:.1} MB/s delivered over {:?}, round trip {:?})",
                want,
                self.len,
                rate(self.bytes, elapsed) / 1e6,
                elapsed,
                rtt
            );
            self.n = want;
        }
        self.since = now;
        self.bytes = 0;
    }
}

fn rate(bytes: u64, elapsed: Duration) -> f64 {
    bytes as f64 / elapsed.as_secs_f64().max(1e-6)
}

/// How many bandwidth-delay products the pipeline covers (see the file doc).
const BDPS: f64 = 4.0;

/// Requests of `len` bytes that carry [`BDPS`] times `bytes` per `elapsed`
/// over `rtt`.
fn want(bytes: u64, elapsed: Duration, rtt: Duration, len: u64) -> usize {
    let bdp = rate(bytes, elapsed) * rtt.as_secs_f64();
    (BDPS * bdp / len as f64)
        .ceil()
        .min(usize::MAX as f64 / 2.0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEN: u32 = 255 * 1024;

    #[test]
    fn fixed_count_never_moves() {
        let mut d = Depth::new(16, LEN, Some(Duration::from_millis(1)));
        std::thread::sleep(Duration::from_millis(25));
        d.delivered(1 << 30);
        assert_eq!(d.get(), 16);
    }

    #[test]
    fn starts_at_openssh_default_without_slow_start() {
        assert_eq!(
            Depth::new(0, LEN, Some(Duration::from_millis(240))).get(),
            START
        );
        assert_eq!(Depth::new(0, LEN, None).get(), START);
    }

    #[test]
    fn covers_four_times_the_delivered_bdp() {
        // 59 MB/s over a 240 ms path: 14 MB per round trip, 57 MB wanted.
        let n = want(
            59_000_000,
            Duration::from_secs(1),
            Duration::from_millis(240),
            LEN.into(),
        );
        assert_eq!(n, 217);
        // A pipeline-bound loop quadruples each round trip.
        let full = START as u64 * u64::from(LEN);
        let rtt = Duration::from_millis(100);
        assert_eq!(want(full, rtt, rtt, LEN.into()), 4 * START);
    }

    #[test]
    fn bounded_by_the_memory_cap() {
        let mut d = Depth::new(0, LEN, Some(Duration::from_millis(1)));
        std::thread::sleep(Duration::from_millis(25));
        d.delivered(1 << 40);
        assert_eq!(d.get(), (MAX_IN_FLIGHT / u64::from(LEN)) as usize);
        // Small requests: the count grows, the bytes stay bounded.
        let d = Depth::new(0, 512, None);
        assert_eq!(d.max as u64 * 512, MAX_IN_FLIGHT);
    }

    #[test]
    fn within_a_fixed_window() {
        let rtt = Some(Duration::from_millis(100));
        let d = Depth::new(0, LEN, rtt);
        // Four 2 MiB windows: 32 requests of 255 KiB, not 64.
        assert_eq!(d.within(4 * (2 << 20)), 32);
        assert_eq!(d.within(0), START);
        assert_eq!(d.within(1), MIN_WITHIN as usize);
        // -R is kept.
        assert_eq!(Depth::new(100, LEN, rtt).within(1 << 20), 100);
    }

    #[test]
    fn no_rtt_keeps_the_start() {
        let mut d = Depth::new(0, LEN, None);
        d.delivered(1 << 30);
        assert_eq!(d.get(), START);
    }
}
