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
//!   [`WINDOW_TIME`]) gives the payload rate and the ratio at the current
//!   level. The rate is what the socket took, so it falls when either the
//!   link or the CPU (ours, or the peer's through its window) is the limit;
//! - after a few windows at one level the controller probes a neighbour
//!   (one down first, then up and down in turn) for one window and moves there only
//!   when its rate beats the current one by [`GAIN`]; each failed probe
//!   doubles the time before the next (up to [`HOLD_MAX`] windows), each
//!   move starts again at [`HOLD_MIN`];
//! - data that does not compress (ratio below [`MIN_RATIO`]) goes to
//!   level 0 at once and is probed again every [`PROBE_EVERY`] bytes, so
//!   text after random data is noticed within a few MiB.
//!
//! Each decision is logged at debug1 (`-v`) with its figures.

use crate::log;
use sluice_proto::transport::compress::Level;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Payload bytes per window, at least.
const WINDOW_BYTES: u64 = 4 << 20;
/// Time per window, at least: long enough that the socket buffer's fill
/// level does not decide the rate.
const WINDOW_TIME: Duration = Duration::from_millis(150);
/// Below this ratio the data is taken as incompressible.
const MIN_RATIO: f64 = 1.05;
/// Payload bytes sent at level 0 for incompressible data before a probe.
const PROBE_EVERY: u64 = 8 << 20;
/// How much faster a probed level must be to be kept.
const GAIN: f64 = 1.04;
/// Windows at a level before the first probe; doubled by a failed probe.
const HOLD_MIN: u32 = 2;
const HOLD_MAX: u32 = 32;

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
    started: Instant,
    phase: Phase,
    /// Windows between probes now.
    hold: u32,
    /// The next probe goes up (else down).
    up_next: bool,
    /// The first window has gone by: it started with the session's setup
    /// (channel open, the remote command starting), not with data.
    warm: bool,
}

impl LevelControl {
    /// Steers `level` of the engine named `engine`; `stats` are the
    /// outgoing (raw, compressed) counts now.
    pub fn new(level: Arc<Level>, engine: &str, stats: (u64, u64)) -> Self {
        // Above deflate's 6 the ratio barely moves; zstd's scale goes on.
        let max_level = if engine.starts_with("zlib") { 6 } else { 9 };
        log!(
            Debug1,
            "compression: {engine} outgoing, level {} of 0-{max_level}, steered by measured rate",
            level.get()
        );
        LevelControl {
            level,
            engine: engine.to_owned(),
            max_level,
            start: stats,
            started: Instant::now(),
            phase: Phase::Hold { left: HOLD_MIN },
            hold: HOLD_MIN,
            // Off first: on a fast link the copy wins, and finding that
            // early matters most; on a slow one the probe costs a window.
            up_next: false,
            warm: false,
        }
    }

    /// After a batch: decides once a window of data went by.
    pub fn after_batch(&mut self, (raw, z): (u64, u64)) {
        let (raw0, z0) = self.start;
        let bytes = raw.saturating_sub(raw0);
        let secs = self.started.elapsed();
        if bytes < WINDOW_BYTES || secs < WINDOW_TIME {
            return;
        }
        let rate = bytes as f64 / secs.as_secs_f64();
        let ratio = bytes as f64 / z.saturating_sub(z0).max(1) as f64;
        self.start = (raw, z);
        self.started = Instant::now();
        if !std::mem::replace(&mut self.warm, true) {
            return;
        }
        let now = self.level.get();
        let next = self.decide(now, rate, ratio, raw);
        if next != now {
            self.level.set(next);
        }
    }

    /// The next level and phase from one window's figures.
    fn decide(&mut self, now: u8, rate: f64, ratio: f64, raw: u64) -> u8 {
        let mbs = rate / 1e6;
        if now > 0 && ratio < MIN_RATIO {
            log!(
                Debug1,
                "compression: {} level {now} -> 0: data does not compress (ratio {ratio:.2}, {mbs:.0} MB/s)",
                self.engine
            );
            self.phase = Phase::Incompressible {
                until: raw + PROBE_EVERY,
            };
            return 0;
        }
        match self.phase {
            Phase::Incompressible { until } => {
                if raw < until {
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
                if rate > from_rate * GAIN {
                    log!(
                        Debug1,
                        "compression: {} level {from} -> {now}: {mbs:.0} MB/s against {was:.0} (ratio {ratio:.2})",
                        self.engine
                    );
                    self.hold = HOLD_MIN;
                    self.phase = Phase::Hold { left: self.hold };
                    now
                } else {
                    log!(
                        Debug1,
                        "compression: {} stays at level {from}: level {now} gave {mbs:.0} MB/s against {was:.0} (ratio {ratio:.2})",
                        self.engine
                    );
                    self.hold = (self.hold * 2).min(HOLD_MAX);
                    self.up_next = now < from;
                    self.phase = Phase::Hold { left: self.hold };
                    from
                }
            }
            Phase::Hold { left } if left > 1 => {
                self.phase = Phase::Hold { left: left - 1 };
                now
            }
            Phase::Hold { .. } => {
                let up = (now < self.max_level).then_some(now + 1);
                let down = now.checked_sub(1);
                let probe = match (up, down) {
                    (Some(u), Some(d)) => {
                        if self.up_next {
                            u
                        } else {
                            d
                        }
                    }
                    (Some(u), None) => u,
                    (None, Some(d)) => d,
                    (None, None) => return now,
                };
                self.up_next = !self.up_next;
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
    fn run(c: &mut LevelControl, windows: usize, rate_at: impl Fn(u8) -> (f64, f64)) -> Vec<u8> {
        let mut raw = c.start.0;
        let mut seen = Vec::new();
        for _ in 0..windows {
            let now = c.level.get();
            let (rate, ratio) = rate_at(now);
            raw += WINDOW_BYTES;
            let next = c.decide(now, rate, ratio, raw);
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
            (mbs[l as usize] * 1e6, 2.0 + f64::from(l) * 0.1)
        });
        let tail = &seen[150..];
        let at5 = tail.iter().filter(|&&l| l == 5).count();
        assert!(at5 * 10 > tail.len() * 8, "{seen:?}");
    }

    #[test]
    fn goes_off_on_a_fast_link() {
        let mut c = ctl(1, "zstd@sluice.dev");
        // Loopback: the copy (level 0) is the fastest.
        let seen = run(&mut c, 100, |l| {
            (if l == 0 { 800e6 } else { 400e6 / f64::from(l) }, 3.0)
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
        let seen = run(&mut c, 20, |l| (100e6, if l == 0 { 1.0 } else { 1.0 }));
        assert_eq!(seen[0], 0);
        // Probes every PROBE_EVERY bytes, and goes back to 0 each time.
        assert!(seen.iter().filter(|&&l| l == 1).count() >= 3, "{seen:?}");
        // Text again: the next probe finds it and stays.
        let seen = run(&mut c, 10, |l| {
            (
                if l == 0 { 11e6 } else { 30e6 },
                if l == 0 { 1.0 } else { 3.0 },
            )
        });
        // (A probe down to 0 may come by; it is not kept.)
        assert!(
            seen.iter().skip(3).filter(|&&l| l == 0).count() <= 1,
            "{seen:?}"
        );
    }
}
