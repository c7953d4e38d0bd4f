//! Channel window accounting (RFC 4254 5.2) and the policy deciding when to
//! send WINDOW_ADJUST and when the window grows. Plain data, so tests can
//! check the policy without a connection.
//!
//! Receive side invariant: `available + delivered + consumed == max`, where
//! `available` is what the peer may still send, `delivered` is data handed
//! to the runtime but not yet written out, and `consumed` is data written out
//! but not yet re-granted. Only consumed data is granted back, so a slow
//! consumer is never overrun.
//!
//! Growth (bulk channels only): a fixed window caps a path at `max / RTT`
//! (OpenSSH's 2 MiB is 20 MB/s at 100 ms). With the path's round-trip time
//! from the runtime (TCP_INFO), the window measures itself: when a whole
//! window's worth was written out in less than two round trips, the sender
//! moved more than half of what the window lets through per round trip, so
//! the window, not the path, may be what limits it: it doubles, up to `cap`.
//! It settles between 2x and 4x the bandwidth-delay product, so the sender
//! never waits for an adjust. A consumer that does not keep up (data
//! delivered but not written out) never makes it grow, so memory stays
//! bounded by what the consumer cannot take. Grants go out every eighth of
//! the window, early enough that the sender keeps streaming.
//!
//! The window also never stays below the kernel's receive buffer for the
//! connection (SO_RCVBUF, which TCP autotunes to what the path needs, up to
//! `net.ipv4.tcp_rmem`'s maximum; HPN-SSH's rule). The doubling rule sees
//! the path's RTT without queues, but a sender also needs window for data
//! queued in the path and held by the receiving kernel while a loss is
//! repaired (a round trip with nothing delivered): measured at 240 ms with
//! a 1-BDP queue, a window that started at 16 MiB and doubled lost 1.1 s of
//! a 1 GiB upload against one of 128 MiB from the start. The kernel's own
//! buffer already accounts for all of that, so following it keeps the SSH
//! window from being the smaller of the two.

use std::time::{Duration, Instant};

/// Grants are sent once this fraction (1/N) of the window was written out:
/// small enough that the sender rarely waits on an adjust, large enough to
/// keep adjusts rare (eight per window).
const GRANT_DIVISOR: u32 = 8;

/// Receive window of one channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecvWindow {
    /// Bytes the peer may still send.
    pub available: u32,
    /// The window's full size.
    pub max: u32,
    /// Bytes handed to the runtime, not yet reported consumed.
    pub delivered: u32,
    /// Bytes consumed and not yet granted back.
    pub consumed: u32,
    /// Largest size the window may grow to (== `max`: fixed).
    pub cap: u32,
    /// When the current measuring period began (the first grant after the
    /// last growth check).
    pub epoch: Option<Instant>,
    /// Bytes granted back since `epoch`.
    pub epoch_bytes: u64,
}

impl RecvWindow {
    /// A fixed window of `max` bytes, all available.
    pub fn new(max: u32) -> Self {
        Self::growing(max, max)
    }

    /// A window of `max` bytes that may grow up to `cap`.
    pub fn growing(max: u32, cap: u32) -> Self {
        RecvWindow {
            available: max,
            max,
            delivered: 0,
            consumed: 0,
            cap: cap.max(max),
            epoch: None,
            epoch_bytes: 0,
        }
    }

    /// Interactive channels keep a small window: growth stops, and a window
    /// larger than `size` shrinks to it as data is written out (what was
    /// advertised stays valid; only less is granted back).
    pub fn shrink_to(&mut self, size: u32) {
        self.cap = size.min(self.max).max(1);
    }

    /// Accounts for `n` received bytes; false if they exceed the window.
    pub fn receive(&mut self, n: u32) -> bool {
        match self.available.checked_sub(n) {
            Some(a) => {
                self.available = a;
                self.delivered += n;
                true
            }
            None => false,
        }
    }

    /// The runtime wrote out `n` bytes; returns the adjust to send, if due.
    /// `now` and the path's `rtt`, when known, let a bulk window grow;
    /// `recv_buffer` (the socket's receive buffer, 0 if unknown) is a floor
    /// it grows to at once.
    pub fn consume(
        &mut self,
        n: u32,
        now: Option<Instant>,
        rtt: Option<Duration>,
        recv_buffer: u32,
    ) -> Option<u32> {
        self.consume_within(n, now, rtt, recv_buffer, u32::MAX)
    }

    /// [`RecvWindow::consume`] for a window that may grow by at most `room`
    /// bytes (what the connection's budget has left, see
    /// `Config::windows_max`).
    pub fn consume_within(
        &mut self,
        n: u32,
        now: Option<Instant>,
        rtt: Option<Duration>,
        recv_buffer: u32,
        room: u32,
    ) -> Option<u32> {
        let n = n.min(self.delivered);
        self.delivered -= n;
        self.consumed += n;
        if self.max > self.cap {
            let cut = self.consumed.min(self.max - self.cap);
            self.max -= cut;
            self.consumed -= cut;
        }
        let step = (self.max / GRANT_DIVISOR).max(1);
        if self.consumed < step {
            return None;
        }
        let mut add = self.consumed;
        let mut room = room;
        if let (Some(now), Some(rtt)) = (now, rtt) {
            let grown = self.grow(add, now, rtt, room);
            add += grown;
            room -= grown;
        }
        add += self.follow(recv_buffer, room);
        self.available = self.available.saturating_add(add);
        self.consumed = 0;
        Some(add)
    }

    /// Grows a bulk window to the kernel's receive buffer (up to `cap`)
    /// while the consumer keeps up. Returns the bytes it grew by.
    fn follow(&mut self, recv_buffer: u32, room: u32) -> u32 {
        let target = recv_buffer.min(self.cap).min(self.max.saturating_add(room));
        if target <= self.max || self.delivered > self.max / 4 {
            return 0;
        }
        let extra = target - self.max;
        self.max = target;
        extra
    }

    /// Counts `granted` bytes into the measuring period; once a whole
    /// window went by, doubles the window if that took under two round
    /// trips. Returns the bytes the window grew by.
    fn grow(&mut self, granted: u32, now: Instant, rtt: Duration, room: u32) -> u32 {
        let Some(epoch) = self.epoch else {
            self.epoch = Some(now);
            self.epoch_bytes = 0;
            return 0;
        };
        self.epoch_bytes += u64::from(granted);
        if self.epoch_bytes < u64::from(self.max) {
            return 0;
        }
        self.epoch = Some(now);
        self.epoch_bytes = 0;
        let fast = now.saturating_duration_since(epoch) < rtt * 2;
        let keeping_up = self.delivered <= self.max / 4;
        if !(fast && keeping_up && self.max < self.cap) {
            return 0;
        }
        let grown = self
            .max
            .saturating_mul(2)
            .min(self.cap)
            .min(self.max.saturating_add(room));
        let extra = grown - self.max;
        self.max = grown;
        extra
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invariant(w: &RecvWindow) {
        assert_eq!(w.available + w.delivered + w.consumed, w.max);
    }

    #[test]
    fn never_grants_more_than_max() {
        // A fixed 1000-byte window grants back every 125 bytes written out.
        let mut w = RecvWindow::new(1000);
        assert!(w.receive(600));
        assert!(!w.receive(401));
        assert_eq!(w.consume(100, None, None, 0), None);
        assert_eq!(w.consume(500, None, None, 0), Some(600));
        assert_eq!(w.available, 1000);
        assert!(w.receive(1000));
        assert!(!w.receive(1));
        invariant(&w);
    }

    #[test]
    fn consuming_more_than_delivered_is_clamped() {
        let mut w = RecvWindow::new(100);
        assert!(w.receive(10));
        assert_eq!(w.consume(1000, None, None, 0), None);
        invariant(&w);
    }

    const MS: Duration = Duration::from_millis(1);

    /// A path of `rate` bytes per millisecond and `delay` ms each way:
    /// data and grants both take `delay`, so the path holds
    /// `2 * delay * rate`. Returns the window after `ms` milliseconds.
    fn run_path(w: &mut RecvWindow, rate: u32, delay: usize, ms: usize, write: u32) {
        use std::collections::VecDeque;
        let t0 = Instant::now();
        let rtt = MS * 2 * delay as u32;
        let mut peer_window = w.max;
        let mut data: VecDeque<u32> = VecDeque::from(vec![0; delay]);
        let mut grants: VecDeque<u32> = VecDeque::from(vec![0; delay]);
        for t in 0..ms {
            let send = peer_window.min(rate);
            peer_window -= send;
            data.push_back(send);
            let n = data.pop_front().unwrap();
            assert!(w.receive(n), "overrun");
            let now = t0 + MS * t as u32;
            let written = (w.delivered).min(write);
            grants.push_back(w.consume(written, Some(now), Some(rtt), 0).unwrap_or(0));
            peer_window += grants.pop_front().unwrap();
            invariant(w);
        }
    }

    #[test]
    fn grows_to_cover_the_path_and_no_further() {
        // 64 KiB/ms = 65 MB/s, 100 ms RTT: the path holds 6.25 MiB.
        let (rate, delay) = (64u32 << 10, 50usize);
        let bdp = 2 * delay as u32 * rate;
        let mut w = RecvWindow::growing(1 << 20, 256 << 20);
        run_path(&mut w, rate, delay, 20_000, u32::MAX);
        assert!(w.max >= 2 * bdp && w.max <= 4 * bdp, "{} vs {bdp}", w.max);
    }

    #[test]
    fn growth_stops_at_the_cap() {
        let mut w = RecvWindow::growing(1 << 20, 4 << 20);
        run_path(&mut w, 64 << 10, 50, 20_000, u32::MAX);
        assert_eq!(w.max, 4 << 20);
    }

    #[test]
    fn no_growth_without_a_round_trip_time() {
        let mut w = RecvWindow::growing(1 << 20, 64 << 20);
        for _ in 0..100 {
            let n = w.available;
            assert!(w.receive(n));
            w.consume(n, Some(Instant::now()), None, 0);
        }
        assert_eq!(w.max, 1 << 20);
    }

    #[test]
    fn a_slow_consumer_does_not_grow_it() {
        // The consumer writes 2 KiB/ms, the path could carry 64 KiB/ms.
        let mut w = RecvWindow::growing(1 << 20, 64 << 20);
        run_path(&mut w, 64 << 10, 50, 20_000, 2 << 10);
        assert_eq!(w.max, 1 << 20);
    }

    #[test]
    fn follows_the_receive_buffer_up_to_the_cap() {
        let mut w = RecvWindow::growing(1 << 20, 8 << 20);
        assert!(w.receive(1 << 20));
        // Granted back with the growth: the peer may send 4 MiB more.
        assert_eq!(w.consume(1 << 20, None, None, 4 << 20), Some(4 << 20));
        assert_eq!(w.max, 4 << 20);
        invariant(&w);
        assert!(w.receive(4 << 20));
        assert_eq!(w.consume(4 << 20, None, None, 64 << 20), Some(8 << 20));
        assert_eq!(w.max, 8 << 20);
        invariant(&w);
    }

    #[test]
    fn growth_stays_within_the_room_given() {
        let mut w = RecvWindow::growing(1 << 20, 64 << 20);
        assert!(w.receive(1 << 20));
        assert_eq!(
            w.consume_within(1 << 20, None, None, 32 << 20, 3 << 20),
            Some(4 << 20)
        );
        assert_eq!(w.max, 4 << 20);
        invariant(&w);
        // No room: grants only what was written out.
        let mut w = RecvWindow::growing(1 << 20, 64 << 20);
        let now = Instant::now();
        for i in 0..64 {
            assert!(w.receive(256 << 10));
            let t = now + Duration::from_micros(i);
            let add = w.consume_within(256 << 10, Some(t), Some(Duration::from_millis(50)), 0, 0);
            assert!(add.is_none_or(|a| a <= 256 << 10));
        }
        assert_eq!(w.max, 1 << 20);
        invariant(&w);
    }

    #[test]
    fn a_stalled_consumer_does_not_follow_the_buffer() {
        let mut w = RecvWindow::growing(1 << 20, 8 << 20);
        assert!(w.receive(1 << 20));
        // Half a window written out, half still waiting for the sink.
        assert_eq!(w.consume(512 << 10, None, None, 8 << 20), Some(512 << 10));
        assert_eq!(w.max, 1 << 20);
        invariant(&w);
    }

    #[test]
    fn interactive_windows_do_not_follow_the_buffer() {
        let mut w = RecvWindow::growing(16 << 20, 64 << 20);
        w.shrink_to(2 << 20);
        assert!(w.receive(16 << 20));
        w.consume(16 << 20, None, None, 64 << 20);
        assert_eq!(w.max, 2 << 20);
        invariant(&w);
    }

    #[test]
    fn interactive_windows_shrink_and_stay_small() {
        let mut w = RecvWindow::growing(16 << 20, 64 << 20);
        w.shrink_to(2 << 20);
        run_path(&mut w, 64 << 10, 50, 5_000, u32::MAX);
        assert_eq!(w.max, 2 << 20);
    }
}
