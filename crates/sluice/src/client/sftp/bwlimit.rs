//! `-l limit` (Kbit/s, as sftp(1) and scp(1)): the copy's data rate,
//! shared by every connection of a copy. Each READ or WRITE asks for its
//! bytes before it goes out, and waits until the average since the first
//! one is back under the limit; pacing the requests paces the data.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A rate limit over all of a run's transfers.
#[derive(Debug)]
pub struct BwLimit {
    bytes_per_sec: f64,
    /// When the first request went, and the bytes asked for since.
    sent: Mutex<Option<(Instant, u64)>>,
}

impl BwLimit {
    /// A limit of `kbit` Kbit/s (1000 bits, as OpenSSH counts).
    pub fn new(kbit: u64) -> BwLimit {
        BwLimit {
            bytes_per_sec: kbit.max(1) as f64 * 1000.0 / 8.0,
            sent: Mutex::new(None),
        }
    }

    /// `n` bytes are about to be requested: waits as long as the limit
    /// asks.
    pub fn pace(&self, n: u64) {
        let wait = {
            let mut g = self.sent.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            let (t0, sent) = g.get_or_insert((now, 0));
            // What was sent before this request is what the time must cover.
            let due = Duration::from_secs_f64(*sent as f64 / self.bytes_per_sec);
            *sent += n;
            due.saturating_sub(now.duration_since(*t0))
        };
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paces_to_the_limit() {
        // 800 Kbit/s = 100 KB/s: 5 x 10 KB after the first take ~0.4 s.
        let l = BwLimit::new(800);
        let t = Instant::now();
        for _ in 0..5 {
            l.pace(10_000);
        }
        let e = t.elapsed();
        assert!(
            e >= Duration::from_millis(390) && e < Duration::from_secs(2),
            "{e:?}"
        );
    }
}
