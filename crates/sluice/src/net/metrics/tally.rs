//! What the driver loops of this process measured, kept in process-wide
//! counters (as `pump::socket_totals` keeps the socket's bytes): how long
//! the loop slept and why, the channel data it moved, the largest window a
//! peer granted, and the path's figures at each TCP_INFO reading.
//!
//! The loop adds to these once per turn and per reading (a few relaxed
//! atomic adds), so they cost nothing a transfer would notice. A process
//! serves one connection (sluiced's post-auth process), or one session over
//! one or more connections (sluice, striped or not), so process-wide is
//! the right scope for a summary of that session.

use crate::net::tcp_info::TcpInfo;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Why the loop slept, one reason per sleep, in this order of precedence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Sealed output waited for the socket (its send buffer was full): the
    /// network side, TCP, held us.
    Socket,
    /// Channel data waited for the peer's channel window.
    Window,
    /// Received data waited for a sink that took no more (our stdout, a
    /// command's stdin): the local writer held us.
    Sink,
    /// A channel's source had nothing to read while the window and the
    /// socket had room (our stdin, a command's stdout): the local reader.
    Source,
}

impl Wait {
    /// All reasons, in [`Tally::wait_us`]'s order.
    pub const ALL: [Wait; 4] = [Wait::Socket, Wait::Window, Wait::Sink, Wait::Source];

    fn idx(self) -> usize {
        self as usize
    }
}

static LOOP_US: AtomicU64 = AtomicU64::new(0);
static WAIT_US: [AtomicU64; 4] = [
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
];
static DATA_SENT: AtomicU64 = AtomicU64::new(0);
static DATA_RECEIVED: AtomicU64 = AtomicU64::new(0);
static PEER_WINDOW_MAX: AtomicU64 = AtomicU64::new(0);
static RECV_WINDOW_MAX: AtomicU64 = AtomicU64::new(0);
static RTT_SUM_US: AtomicU64 = AtomicU64::new(0);
static RTT_SAMPLES: AtomicU64 = AtomicU64::new(0);
static DELIVERY_MAX: AtomicU64 = AtomicU64::new(0);
static DELIVERY_MAX_APP_LIMITED: AtomicU64 = AtomicU64::new(0);

/// The loop slept `d` for `why` (None: for nothing of ours, waiting for
/// the peer).
pub fn add_wait(why: Option<Wait>, d: Duration) {
    if let Some(w) = why {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        if let Some(a) = WAIT_US.get(w.idx()) {
            a.fetch_add(us, Ordering::Relaxed);
        }
    }
}

/// A driver loop ran for `d` (a turn, its sleep included): the sum over
/// every loop of the process is what the sleeps are shares of.
pub fn add_loop_time(d: Duration) {
    let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    LOOP_US.fetch_add(us, Ordering::Relaxed);
}

/// Channel data moved: `sent` read from sources into packets, `received`
/// taken from packets for sinks.
pub fn add_data(sent: u64, received: u64) {
    if sent > 0 {
        DATA_SENT.fetch_add(sent, Ordering::Relaxed);
    }
    if received > 0 {
        DATA_RECEIVED.fetch_add(received, Ordering::Relaxed);
    }
}

/// A peer's channel window seen now, bytes.
pub fn note_peer_window(bytes: u32) {
    PEER_WINDOW_MAX.fetch_max(u64::from(bytes), Ordering::Relaxed);
}

/// One of our channel receive windows, as it grew, bytes.
pub fn note_recv_window(bytes: u32) {
    RECV_WINDOW_MAX.fetch_max(u64::from(bytes), Ordering::Relaxed);
}

/// One TCP_INFO reading: the smoothed RTT for its average, and the
/// delivery rate for its maximum. A sample the kernel marks as limited by
/// us (nothing to send) says little of the path and counts only while no
/// other sample was seen.
pub fn note_path(info: &TcpInfo) {
    if !info.rtt.is_zero() {
        let us = u64::try_from(info.rtt.as_micros()).unwrap_or(u64::MAX);
        RTT_SUM_US.fetch_add(us, Ordering::Relaxed);
        RTT_SAMPLES.fetch_add(1, Ordering::Relaxed);
    }
    let max = if info.app_limited {
        &DELIVERY_MAX_APP_LIMITED
    } else {
        &DELIVERY_MAX
    };
    max.fetch_max(info.delivery_rate, Ordering::Relaxed);
}

/// The counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Microseconds the driver loops ran, summed over the loops.
    pub loop_us: u64,
    /// Microseconds slept for each [`Wait`], in [`Wait::ALL`]'s order.
    pub wait_us: [u64; 4],
    /// Channel data bytes sent.
    pub data_sent: u64,
    /// Channel data bytes received.
    pub data_received: u64,
    /// The largest channel window a peer granted, bytes.
    pub peer_window_max: u64,
    /// The largest receive window of ours, bytes.
    pub recv_window_max: u64,
    /// Sum of the smoothed RTTs read, microseconds.
    pub rtt_sum_us: u64,
    /// How many were read.
    pub rtt_samples: u64,
    /// The largest delivery rate read, bytes per second (see [`note_path`]).
    pub delivery_max: u64,
}

impl Tally {
    /// Microseconds slept for `w`.
    pub fn wait(&self, w: Wait) -> u64 {
        self.wait_us.get(w.idx()).copied().unwrap_or(0)
    }
}

/// The counters now.
pub fn read() -> Tally {
    let mut wait_us = [0; 4];
    for (v, a) in wait_us.iter_mut().zip(&WAIT_US) {
        *v = a.load(Ordering::Relaxed);
    }
    Tally {
        loop_us: LOOP_US.load(Ordering::Relaxed),
        wait_us,
        data_sent: DATA_SENT.load(Ordering::Relaxed),
        data_received: DATA_RECEIVED.load(Ordering::Relaxed),
        peer_window_max: PEER_WINDOW_MAX.load(Ordering::Relaxed),
        recv_window_max: RECV_WINDOW_MAX.load(Ordering::Relaxed),
        rtt_sum_us: RTT_SUM_US.load(Ordering::Relaxed),
        rtt_samples: RTT_SAMPLES.load(Ordering::Relaxed),
        delivery_max: match DELIVERY_MAX.load(Ordering::Relaxed) {
            0 => DELIVERY_MAX_APP_LIMITED.load(Ordering::Relaxed),
            n => n,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_only_grow() {
        let before = read();
        add_wait(Some(Wait::Window), Duration::from_millis(3));
        add_wait(None, Duration::from_secs(1));
        add_data(10, 20);
        note_peer_window(7);
        let after = read();
        assert!(after.wait(Wait::Window) >= before.wait(Wait::Window) + 3000);
        assert!(after.data_sent >= before.data_sent + 10);
        assert!(after.data_received >= before.data_received + 20);
        assert!(after.peer_window_max >= 7);
        let mut i = TcpInfo {
            rtt: Duration::from_millis(1),
            delivery_rate: 1000,
            ..TcpInfo::default()
        };
        note_path(&i);
        i.app_limited = true;
        i.delivery_rate = 1 << 40;
        note_path(&i);
        let t = read();
        // The app-limited sample counts only while no other was seen.
        assert!(t.rtt_samples >= 2 && t.delivery_max >= 1000);
    }
}
