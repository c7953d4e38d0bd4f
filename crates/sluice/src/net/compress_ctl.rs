//! Steering the outgoing compression level from what the pump measures
//! (`Compression auto`, and the sending side of `-C`).
//!
//! One stock zlib stream at level 6 on one thread is what makes `ssh -C`
//! slower than no compression on fast links. sluice's engines run in
//! parallel jobs whose level may change from one job to the next
//! (sluice-proto `transport/pzlib.rs`, `transport/zstd.rs`), with level 0
//! meaning "off" (raw or stored blocks: a copy, no compression work). So
//! the sender picks the level by measuring what it is after, the payload
//! delivered per second, rather than by guessing from proxies:
//!
//! - every window (at least [`WINDOW_BYTES`] of payload and
//!   [`WINDOW_TIME`]) gives the payload rate (what was compressed per
//!   second) and the ratio at the current level. After a change of level
//!   the window waits until the peer has acknowledged everything that was
//!   in the socket at the change (TCP_INFO and SIOCOUTQ): until then the
//!   socket's buffer, megabytes on a long path, drains data of the old
//!   level and the rate would be the old level's. From then on the backlog
//!   is this level's own and the rate is what this level delivers,
//!   whichever of link, our CPU or the peer's is the limit;
//! - after a few windows at one level (one at the start, from level 0)
//!   the controller probes a neighbour for one window: up while data
//!   waits unsent in the socket (the link is the limit: compression keeps
//!   ahead of it), down otherwise (the CPU is). A probe up that still
//!   keeps ahead of the link is kept (more ratio, same link: more payload,
//!   whatever the window's data did to the rate); otherwise a probe is
//!   kept only when its rate beats the level before by [`GAIN`]. Each
//!   failed probe doubles the time before the next (up to [`HOLD_MAX`]
//!   windows), each move starts again at [`HOLD_MIN`];
//! - a probe up while the CPU, not the link, is the limit (loopback, a
//!   fast LAN) adds work where work is what limits: it rarely wins and
//!   costs a slower window, a good part of a short transfer. So such
//!   probes wait until [`CPU_PROBE_WAIT`] of transfer went by, and after
//!   one that lost, until the loss comes to at most [`PROBE_BUDGET`] of
//!   the time since (a probe that was 30% slower for 70 ms waits 0.7 s);
//! - data that does not compress (ratio below [`MIN_RATIO`]) goes to
//!   level 0 at once and is probed again after [`PROBE_EVERY`] bytes
//!   (doubling while it stays so, up to [`PROBE_MAX`]), so text after
//!   random data is noticed within a few MiB.
//!
//! Each decision is logged at debug1 (`-v`) with its figures, each window
//! at debug2.

use crate::log;
use sluice_proto::transport::compress::Level;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Payload bytes per window, at least.
const WINDOW_BYTES: u64 = 4 << 20;
/// Time per window, at least: long enough that the socket buffer's fill
/// level does not decide the rate.
const WINDOW_TIME: Duration = Duration::from_millis(100);
/// ... unless this much payload went by first: on a fast path (loopback,
/// 10 Gbit/s) 100 ms is most of a transfer, and a probe of a slower level
/// that long costs more than it can find (several socket buffers' worth is
/// plenty to measure).
const WINDOW_FAST_BYTES: u64 = 24 << 20;
/// Below this ratio the data is taken as incompressible.
const MIN_RATIO: f64 = 1.05;
/// Payload bytes sent at level 0 for incompressible data before a probe
/// (doubled after each probe that finds it still incompressible).
const PROBE_EVERY: u64 = 8 << 20;
const PROBE_MAX: u64 = 32 << 20;
/// How much faster a probed level must be to be kept.
const GAIN: f64 = 1.04;
/// Windows at a level before the first probe; doubled by a failed probe.
const HOLD_MIN: u32 = 2;
const HOLD_MAX: u32 = 32;
/// Seconds of transfer before a probe up while CPU-bound.
const CPU_PROBE_WAIT: f64 = 1.0;
/// Share of the time a lost CPU-bound probe may cost.
const PROBE_BUDGET: f64 = 0.03;
/// Longest wait between CPU-bound probes: a change of data or of link
/// is still found within this.
const CPU_PROBE_WAIT_MAX: f64 = 30.0;

/// Logs a connection's compression totals as ssh and sshd do at its end
/// (debug1): `compress outgoing: raw data N, compressed M, factor F`.
pub fn log_summary(conn: &sluice_proto::Connection) {
    let (out, inc) = conn.compression_stats();
    for (dir, counts) in [("outgoing", out), ("incoming", inc)] {
        if let Some((raw, z)) = counts {
            log!(
                Debug1,
                "compress {dir}: raw data {raw}, compressed {z}, factor {:.2}",
                z as f64 / raw.max(1) as f64
            );
        }
    }
}

/// Unsent bytes in the socket above which the link (or the peer's
/// window) is taken as the limit: compression is keeping ahead of it.
const LINK_BOUND: u64 = 256 << 10;

/// What the socket says, read once or twice per window.
#[derive(Debug, Clone, Copy)]
pub struct Socket {
    /// Bytes the peer acknowledged, since the connection started.
    pub acked: u64,
    /// Bytes in the send queue, sent or not (SIOCOUTQ).
    pub queued: u64,
    /// Bytes in the send queue not sent yet.
    pub unsent: u64,
}

/// What the controller is doing.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// At a level; `left` windows before the next probe.
    Hold { left: u32 },
    /// Trying the current level for one window, against `from_rate` at `from`.
    Probe { from: u8, from_rate: f64 },
    /// At level 0 because the data does not compress; probe after
    /// `until` payload bytes (of the stream's count).
    Incompressible { until: u64 },
}

/// The controller of one connection's outgoing stream.
pub struct LevelControl {
    level: Arc<Level>,
    engine: String,
    max_level: u8,
    /// (raw, compressed) at the window's start.
    start: (u64, u64),
    /// After a change of level: the socket's acknowledged-bytes count that
    /// means everything written before the change has arrived.
    settle: Option<u64>,
    /// The socket's send queue at the window's start.
    queued: Option<u64>,
    started: Instant,
    phase: Phase,
    /// Windows between probes now.
    hold: u32,
    /// Payload between probes of incompressible data now.
    stored_gap: u64,
    /// The first window has gone by: it started with the session's setup
    /// (channel open, the remote command starting), not with data.
    warm: bool,
    /// Seconds of windows since the last probe ended (or the start).
    since_probe: f64,
    /// Seconds that must go by before a probe up while CPU-bound.
    cpu_wait: f64,
}

impl LevelControl {
    /// Steers `level` of the engine named `engine`; `stats` are the
    /// outgoing (raw, compressed) counts now. It starts off (level 0) and
    /// probes upwards: on a fast link the copy is what wins and the
    /// transfer is short, so the first windows count; on a slow one a
    /// window without compression is a small part of a long transfer.
    pub fn new(level: Arc<Level>, engine: &str, stats: (u64, u64)) -> Self {
        // Above deflate's 6 the ratio barely moves; zstd's scale goes on.
        let max_level = if engine.starts_with("zlib") { 6 } else { 9 };
        level.set(0);
        log!(
            Debug1,
            "compression: {engine} outgoing, level 0 of 0-{max_level}, steered by measured rate"
        );
        LevelControl {
            level,
            engine: engine.to_owned(),
            max_level,
            start: stats,
            settle: None,
            queued: None,
            started: Instant::now(),
            // One window at level 0, then the first probe.
            phase: Phase::Hold { left: 1 },
            hold: HOLD_MIN,
            warm: false,
            stored_gap: PROBE_EVERY,
            since_probe: 0.0,
            cpu_wait: CPU_PROBE_WAIT,
        }
    }

    /// After a batch: decides once a window of data went by. `socket`
    /// reads (bytes acknowledged, bytes in the send queue) of the socket
    /// (None: not a TCP socket, e.g. a ProxyCommand pipe).
    pub fn after_batch(&mut self, (raw, z): (u64, u64), socket: impl Fn() -> Option<Socket>) {
        if let Some(target) = self.settle {
            match socket() {
                Some(k) if k.acked < target => {
                    // Still the old level's bytes on the wire: the window
                    // starts when they are through.
                    self.start = (raw, z);
                    self.queued = Some(k.queued);
                    self.started = Instant::now();
                    return;
                }
                _ => self.settle = None,
            }
        }
        let (raw0, z0) = self.start;
        let bytes = raw.saturating_sub(raw0);
        let secs = self.started.elapsed();
        if bytes < WINDOW_BYTES || (secs < WINDOW_TIME && bytes < WINDOW_FAST_BYTES) {
            return;
        }
        let secs = secs.as_secs_f64();
        let ratio = bytes as f64 / z.saturating_sub(z0).max(1) as f64;
        // What went into the socket's buffer rather than to the peer (or
        // came out of it) is not delivered payload.
        let k = socket();
        let queued = k.map(|k| k.queued);
        // The link is the limit when data waits in the socket unsent.
        let link_bound = k.is_some_and(|k| k.unsent >= LINK_BOUND);
        let grown = match (self.queued, queued) {
            (Some(q0), Some(q)) => (q as f64 - q0 as f64) * ratio,
            _ => 0.0,
        };
        self.queued = queued;
        let rate = (bytes as f64 - grown).max(0.0) / secs;
        log!(
            Debug2,
            "compression: window {:.0} ms at level {}: {:.1} MB/s, ratio {ratio:.2}, {}",
            secs * 1e3,
            self.level.get(),
            rate / 1e6,
            if link_bound {
                "link-bound"
            } else {
                "CPU-bound"
            }
        );
        self.start = (raw, z);
        self.started = Instant::now();
        if !std::mem::replace(&mut self.warm, true) {
            return;
        }
        let now = self.level.get();
        let next = self.decide(now, rate, ratio, raw, link_bound, secs);
        if next != now {
            self.level.set(next);
            self.settle = socket().map(|k| k.acked + k.queued);
        }
    }

    /// The next level and phase from one window's figures.
    fn decide(
        &mut self,
        now: u8,
        rate: f64,
        ratio: f64,
        raw: u64,
        link_bound: bool,
        secs: f64,
    ) -> u8 {
        let mbs = rate / 1e6;
        self.since_probe += secs;
        // A probe up now would add work where work is the limit: only
        // once its expected cost fits the budget.
        let cpu_probe_due = link_bound || self.since_probe >= self.cpu_wait;
        if now > 0 && ratio < MIN_RATIO {
            log!(
                Debug1,
                "compression: {} level {now} -> 0: data does not compress (ratio {ratio:.2}, {mbs:.0} MB/s)",
                self.engine
            );
            // Probed again after PROBE_EVERY, twice that after a second
            // miss in a row, and so on up to PROBE_MAX.
            self.stored_gap = if matches!(self.phase, Phase::Probe { from: 0, .. }) {
                (self.stored_gap * 2).clamp(PROBE_EVERY, PROBE_MAX)
            } else {
                PROBE_EVERY
            };
            self.phase = Phase::Incompressible {
                until: raw + self.stored_gap,
            };
            return 0;
        }
        match self.phase {
            Phase::Incompressible { until } => {
                if raw < until || !cpu_probe_due {
                    return 0;
                }
                log!(Debug2, "compression: {} probing level 1", self.engine);
                self.phase = Phase::Probe {
                    from: 0,
                    from_rate: rate,
                };
                1
            }
            Phase::Probe { from, from_rate } => {
                let was = from_rate / 1e6;
                self.since_probe = 0.0;
                // Up and still ahead of the link: more ratio, the same link,
                // more payload, whatever this window's data did to the rate.
                let keep = (now > from && link_bound) || rate > from_rate * GAIN;
                if keep {
                    log!(
                        Debug1,
                        "compression: {} level {from} -> {now}: {mbs:.0} MB/s against {was:.0} (ratio {ratio:.2})",
                        self.engine
                    );
                    self.hold = HOLD_MIN;
                    self.cpu_wait = CPU_PROBE_WAIT;
                    // Still ahead of the link after a step up: the next
                    // step is worth trying at once.
                    let left = if now > from && link_bound {
                        1
                    } else {
                        self.hold
                    };
                    self.phase = Phase::Hold { left };
                    now
                } else {
                    log!(
                        Debug1,
                        "compression: {} stays at level {from}: level {now} gave {mbs:.0} MB/s against {was:.0} (ratio {ratio:.2})",
                        self.engine
                    );
                    self.hold = (self.hold * 2).min(HOLD_MAX);
                    self.phase = Phase::Hold { left: self.hold };
                    if now > from {
                        let loss = (1.0 - rate / from_rate.max(1.0)).clamp(0.0, 1.0);
                        self.cpu_wait = (self.cpu_wait * 2.0)
                            .max(secs * loss / PROBE_BUDGET)
                            .min(CPU_PROBE_WAIT_MAX);
                    }
                    from
                }
            }
            Phase::Hold { left } if left > 1 => {
                self.phase = Phase::Hold { left: left - 1 };
                now
            }
            Phase::Hold { .. } => {
                // Ahead of the link: try more ratio; behind it: less work.
                let up = (now < self.max_level).then_some(now + 1);
                let down = now.checked_sub(1);
                let probe = match (link_bound, up, down) {
                    (true, Some(u), _) => u,
                    (false, _, Some(d)) => d,
                    (_, Some(u), None) => u,
                    (_, None, Some(d)) => d,
                    (_, None, None) => return now,
                };
                if probe > now && !cpu_probe_due {
                    self.phase = Phase::Hold { left: 1 };
                    return now;
                }
                log!(
                    Debug2,
                    "compression: {} probing level {probe} from {now} ({mbs:.0} MB/s, ratio {ratio:.2})",
                    self.engine
                );
                self.phase = Phase::Probe {
                    from: now,
                    from_rate: rate,
                };
                probe
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctl(level: u8, engine: &str) -> LevelControl {
        LevelControl::new(Level::new(level), engine, (0, 0))
    }

    /// Runs windows whose rate at each level comes from `rate_at`.
    fn run(
        c: &mut LevelControl,
        windows: usize,
        rate_at: impl Fn(u8) -> (f64, f64, bool),
    ) -> Vec<u8> {
        let mut raw = c.start.0;
        let mut seen = Vec::new();
        for _ in 0..windows {
            let now = c.level.get();
            let (rate, ratio, link) = rate_at(now);
            raw += WINDOW_BYTES;
            let next = c.decide(now, rate, ratio, raw, link, 0.1);
            c.level.set(next);
            seen.push(next);
        }
        c.start.0 = raw;
        seen
    }

    #[test]
    fn climbs_to_the_fastest_level_and_stays() {
        let mut c = ctl(1, "zstd@sluice.dev");
        // Payload rate per level: the link gains from ratio up to level 5,
        // where the CPU becomes the limit.
        let seen = run(&mut c, 200, |l| {
            let mbs = [
                100.0, 110.0, 120.0, 130.0, 140.0, 150.0, 140.0, 130.0, 120.0, 110.0,
            ];
            (mbs[l as usize] * 1e6, 2.0 + f64::from(l) * 0.1, l < 5)
        });
        let tail = &seen[150..];
        let at5 = tail.iter().filter(|&&l| l == 5).count();
        assert!(at5 * 10 > tail.len() * 8, "{seen:?}");
    }

    #[test]
    fn goes_off_on_a_fast_link() {
        let mut c = ctl(1, "zstd@sluice.dev");
        // Loopback: the copy (level 0) is the fastest; the peer's CPU is
        // the limit there (the socket fills), ours above it.
        let seen = run(&mut c, 100, |l| {
            (
                if l == 0 { 800e6 } else { 400e6 / f64::from(l) },
                3.0,
                l == 0,
            )
        });
        let tail = &seen[50..];
        assert!(
            tail.iter().filter(|&&l| l == 0).count() * 10 > tail.len() * 9,
            "{seen:?}"
        );
    }

    #[test]
    fn random_data_goes_to_zero_and_text_comes_back() {
        let mut c = ctl(3, "zlib@openssh.com");
        c.level.set(3);
        let seen = run(&mut c, 20, |_| (100e6, 1.0, true));
        assert_eq!(seen[0], 0);
        // Probes every PROBE_EVERY bytes, and goes back to 0 each time.
        assert!(seen.iter().filter(|&&l| l == 1).count() >= 3, "{seen:?}");
        // Text again: the next probe (at most PROBE_MAX later) finds it
        // and stays.
        let seen = run(&mut c, 20, |l| {
            (
                if l == 0 { 11e6 } else { 30e6 },
                if l == 0 { 1.0 } else { 3.0 },
                true,
            )
        });
        assert!(seen.iter().skip(10).all(|&l| l >= 1), "{seen:?}");
    }

    #[test]
    fn cpu_bound_probes_up_are_rare() {
        // Loopback: level 0 is CPU-bound at 800 MB/s, level 1 gives 300.
        let mut c = ctl(0, "zstd@sluice.dev");
        let seen = run(&mut c, 200, |l| {
            (if l == 0 { 800e6 } else { 300e6 }, 3.0, false)
        });
        let probes = seen.iter().filter(|&&l| l > 0).count();
        // 20 s of 0.1 s windows: the first probe after 1 s, the next ones
        // further apart each time (1 s, 2 s, 4 s, 8 s: loss 0.625 for
        // 0.1 s needs 2 s at 3%).
        assert!(seen[..9].iter().all(|&l| l == 0), "{seen:?}");
        assert!((1..=5).contains(&probes), "{probes} probes: {seen:?}");
    }

    #[test]
    fn link_bound_probes_start_at_once() {
        let mut c = ctl(0, "zstd@sluice.dev");
        let seen = run(&mut c, 4, |l| {
            (if l == 0 { 110e6 } else { 200e6 }, 3.0, true)
        });
        // The window after the warm-up one already probes level 1.
        assert_eq!(seen[0], 1, "{seen:?}");
    }
}
