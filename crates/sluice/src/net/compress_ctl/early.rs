//! Windows that end before their time: a probe that has lost or won
//! already, and a level well short of the link. Each ends once
//! [`WINDOW_BYTES`] went by, so the decision comes after a few MiB rather
//! than a whole window (on loopback a window is much of a transfer).

#[cfg(doc)]
use super::WINDOW_BYTES;
use super::{LevelControl, Phase, Socket, EARLY_LOSS, EARLY_MIN, EARLY_SHORT, LINK_BOUND};
use std::time::Duration;

impl LevelControl {
    /// A probe (up or down) that runs at under [`EARLY_LOSS`] of the level
    /// before has lost already: its window need not go on (on loopback,
    /// where windows are short anyway, each probe is a good part of a
    /// transfer; at 1 Gbit/s level 0 probed from a level 1 that kept the
    /// link full ran 109 ms at 139 MB/s against 384).
    pub(super) fn losing_probe(
        &self,
        bytes: u64,
        secs: Duration,
        ratio: f64,
        socket: &impl Fn() -> Option<Socket>,
    ) -> bool {
        let Phase::Probe { from, from_rate } = self.phase else {
            return false;
        };
        if self.level.get() == from || !from_rate.is_finite() || secs < EARLY_MIN {
            return false;
        }
        self.rate_so_far(bytes, secs, ratio, socket()) < from_rate * EARLY_LOSS
    }

    /// The payload rate of the window so far: what went into the socket's
    /// buffer rather than to the peer since its start does not count.
    fn rate_so_far(&self, bytes: u64, secs: Duration, ratio: f64, k: Option<Socket>) -> f64 {
        let grown = match (self.queued, k) {
            (Some(q0), Some(k)) => (k.queued as f64 - q0 as f64) * ratio,
            _ => 0.0,
        };
        (bytes as f64 - grown).max(0.0) / secs.as_secs_f64()
    }

    /// A probe up whose socket still backs up has won already: more ratio
    /// through the same link is more payload, which is all a link-bound
    /// window would say after 100 ms. Its window ends after
    /// [`WINDOW_BYTES`] of this level's own data, so a climb takes a level
    /// per few MiB instead of per window.
    pub(super) fn ahead_probe(&self, secs: Duration, socket: &impl Fn() -> Option<Socket>) -> bool {
        let Phase::Probe { from, .. } = self.phase else {
            return false;
        };
        self.level.get() > from
            && secs >= EARLY_MIN
            && socket().is_some_and(|k| k.unsent >= LINK_BOUND)
    }

    /// A window at a level above 0 that so far puts under [`EARLY_SHORT`]
    /// of the link's measured capacity on the wire, with nothing waiting in
    /// the socket or for the peer, is CPU-bound below the link: it ends
    /// now, so the step down (see [`LevelControl::below_link`]) comes
    /// after [`WINDOW_BYTES`] rather than a whole window (on loopback,
    /// level 1 kept for a stretch of text at ratio 18 ran the next 24 MiB
    /// at 509 MB/s against the copy's 1156).
    pub(super) fn short_of_link(
        &self,
        bytes: u64,
        secs: Duration,
        ratio: f64,
        socket: &impl Fn() -> Option<Socket>,
    ) -> bool {
        if self.level.get() == 0 || self.link_wire <= 0.0 || secs < EARLY_MIN {
            return false;
        }
        let Some(k) = socket() else {
            return false;
        };
        if k.unsent >= LINK_BOUND || self.stalls.count > 0 {
            return false;
        }
        self.rate_so_far(bytes, secs, ratio, Some(k)) / ratio.max(1.0)
            < EARLY_SHORT * self.link_wire
    }

    /// A probe of level 0 whose copy backs up in the socket before the old
    /// level's bytes are through: the link is its limit, and the link's
    /// drain since the change, at ratio 1, is all it can deliver. Under
    /// [`EARLY_LOSS`] of the level it left it has lost, and waiting for its
    /// window only lets the copy fill the socket with uncompressed data (at
    /// 1 Gbit/s, 18 MB behind a level 1 that ran at 385 MB/s: 150 ms of the
    /// link). Returns the drain rate (bytes/s) and the seconds since the
    /// change.
    pub(super) fn copy_probe_lost(&self, k: Socket) -> Option<(f64, f64)> {
        let Phase::Probe { from, from_rate } = self.phase else {
            return None;
        };
        let (at, acked0) = self.changed?;
        let secs = at.elapsed();
        if self.level.get() != 0
            || from == 0
            || !from_rate.is_finite()
            || k.unsent < LINK_BOUND
            || secs < EARLY_MIN.max(k.rtt)
        {
            return None;
        }
        let secs = secs.as_secs_f64();
        let drain = k.acked.saturating_sub(acked0) as f64 / secs;
        (drain < from_rate * EARLY_LOSS).then_some((drain, secs))
    }
}
