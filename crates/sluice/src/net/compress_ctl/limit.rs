//! What held a window's rate back, from what the socket and the peer's
//! channel window said during it: the link, the peer's window, the peer's
//! work, or our own.

use std::time::Duration;

/// Unsent bytes in the socket above which the link (or the peer's
/// window) is taken as the limit: compression is keeping ahead of it.
pub(super) const LINK_BOUND: u64 = 256 << 10;
/// Waits for the peer's channel window in one window that make it the
/// limit (one may be a burst at the window's edge).
const STALLS_BOUND: u32 = 2;
/// Share of the peer's window that the payload in flight over the path's
/// round trip must reach for the window itself (not the peer's CPU) to be
/// what holds the rate back. On loopback behind a busy sshd it is about
/// 1%, through 10 ms at 1 Gbit/s about 60%.
pub(super) const WINDOW_SHARE: f64 = 0.3;

/// Waits for the peer's channel window since the controller last looked.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stalls {
    /// How many times data waited.
    pub count: u32,
    /// The largest window those peers granted (payload bytes).
    pub window: u64,
}

/// What held a window's rate back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Limit {
    /// Data waited unsent in the socket: the link.
    Link,
    /// Data waited for the peer's channel window, and the path's round trip
    /// at this rate fills a good part of it: the window is the limit.
    Window,
    /// Data waited for the peer's channel window, far from filled by the
    /// path: the peer's work is what returns it.
    Peer,
    /// Neither: our own work.
    Cpu,
}

impl Limit {
    /// How a window's log line says it.
    pub(super) fn describe(self) -> &'static str {
        match self {
            Limit::Link => "link-bound",
            Limit::Window => "window-bound (the peer's window fills the path)",
            Limit::Peer => "peer-bound (waits for its window)",
            Limit::Cpu => "CPU-bound",
        }
    }

    /// The link when data waited in the socket unsent; the peer when data
    /// waited for its window more than once: the window itself when the
    /// payload in flight at `rate` over the path's round trip fills a good
    /// part of it, else the peer's work; otherwise our own.
    pub(super) fn of(socket: Option<Socket>, stalls: Stalls, rate: f64) -> Limit {
        if socket.is_some_and(|k| k.unsent >= LINK_BOUND) {
            Limit::Link
        } else if stalls.count >= STALLS_BOUND {
            let in_flight = socket.map_or(0.0, |k| rate * k.rtt.as_secs_f64());
            if in_flight >= WINDOW_SHARE * stalls.window as f64 {
                Limit::Window
            } else {
                Limit::Peer
            }
        } else {
            Limit::Cpu
        }
    }
}

/// What the socket says, read once or twice per window.
#[derive(Debug, Clone, Copy)]
pub struct Socket {
    /// Bytes the peer acknowledged, since the connection started.
    pub acked: u64,
    /// Bytes in the send queue, sent or not (SIOCOUTQ).
    pub queued: u64,
    /// Bytes in the send queue not sent yet.
    pub unsent: u64,
    /// The path's round trip (TCP_INFO's minimum).
    pub rtt: Duration,
}
