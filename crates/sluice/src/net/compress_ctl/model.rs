//! The level controller's model of one outgoing stream: per level the ratio
//! relative to the level in use (from samples of the same bytes) and the
//! CPU cost per byte, with the path's measured capacities, giving each
//! level's predicted payload rate.
//!
//! Ratios are kept as EWMAs of ln(raw / compressed) per level, every level
//! of a sample updated from the same bytes: the difference of two such
//! EWMAs is the EWMA of their difference, so a level's ratio relative to
//! the level in use does not move with the data's luck (ratio 1.3 to 34
//! within one tar), only with how the levels compare on it. The stream's
//! own ratio at the level in use (history helps it over a fresh 64 KiB
//! sample) scales them all.

use super::Limit;

/// Levels of our 0-9 scale.
pub(super) const LEVELS: usize = 10;
/// Weight of one sample in the per-level EWMAs.
const ALPHA_SAMPLE: f64 = 0.3;
/// Weight of one window in the EWMAs of what windows measure.
const ALPHA_WINDOW: f64 = 0.3;
/// A level not sampled among the last this many samples is not a candidate
/// (its ratio may be of other data).
const FRESH_SAMPLES: u64 = 6;
/// Seconds per payload byte of the critical path besides compression (read,
/// frame, seal, write) before a window measured it: a copy at 1.2 GB/s,
/// what sluice moves on loopback.
const BASE_DEFAULT: f64 = 1.0 / 1.2e9;
/// Bounds of that figure: 20 GB/s to 1 MB/s.
const BASE_MIN: f64 = 1.0 / 20e9;
const BASE_MAX: f64 = 1.0 / 1e6;
/// Bounds of the real jobs' cost against the samples' (a sample is 64 KiB
/// from a fresh stream on a side thread, a job 0.5-1 MiB going on with its
/// stream, maybe beside others on more threads).
const CALIB_MIN: f64 = 0.2;
const CALIB_MAX: f64 = 8.0;
/// Weight of one window in that scale: the real cost is measured on all
/// of the window's data, the samples' lag behind a change of data.
const ALPHA_CALIB: f64 = 0.6;
/// Share by which the link's capacity falls towards a lower link-bound
/// window (it rises at once to a higher one).
const LINK_FALL: f64 = 0.1;

/// One sample's figures: for each level compressed, (level, compressed
/// bytes, seconds it took on the sampling thread).
#[derive(Debug, Clone, Default)]
pub(super) struct Sample {
    /// Raw bytes in the sample.
    pub(super) raw: usize,
    /// (level, compressed bytes, seconds) for each level compressed.
    pub(super) levels: Vec<(u8, usize, f64)>,
}

/// What the model predicts for one level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Prediction {
    pub(super) level: u8,
    /// Payload bytes per second: the least of the three below.
    pub(super) rate: f64,
    /// What our CPU delivers at this level (payload bytes/s).
    pub(super) cpu: f64,
    /// What the link carries at this level's ratio (payload bytes/s;
    /// infinite while nothing is known of it).
    pub(super) link: f64,
    pub(super) ratio: f64,
    /// Seconds per raw byte of compression on the critical path.
    pub(super) cost: f64,
}

#[derive(Debug, Clone, Copy, Default)]
struct PerLevel {
    /// EWMA of ln(raw / compressed) of the samples.
    log_ratio: Option<f64>,
    /// EWMA of the samples' seconds per raw byte.
    cost: Option<f64>,
    /// The sample count when last updated.
    seen: u64,
}

/// The model of one stream.
#[derive(Debug, Clone)]
pub(super) struct Model {
    per: [PerLevel; LEVELS],
    samples: u64,
    /// EWMA of ln(stream ratio / sample ratio) at the level in use: what the
    /// stream's history adds to a sample's ratio.
    gain: f64,
    base: f64,
    /// Real jobs' cost over the samples' at the level in use.
    calib: f64,
    /// Wire bytes/s of link-bound windows (0: never seen).
    link: f64,
    /// The most wire bytes/s of any window: the link's least capacity.
    wire_best: f64,
    /// Payload bytes/s behind the peer's window (or its CPU), while the last
    /// window was held back there: every level's limit alike.
    cap: Option<f64>,
}

impl Default for Model {
    fn default() -> Self {
        Model {
            per: [PerLevel::default(); LEVELS],
            samples: 0,
            gain: 0.0,
            base: BASE_DEFAULT,
            calib: 1.0,
            link: 0.0,
            wire_best: 0.0,
            cap: None,
        }
    }
}

fn ewma(old: Option<f64>, new: f64, alpha: f64) -> f64 {
    old.map_or(new, |o| o + alpha * (new - o))
}

impl Model {
    /// Takes one sample's figures: every level in it from the same bytes.
    pub(super) fn observe_sample(&mut self, s: &Sample) {
        if s.raw == 0 {
            return;
        }
        self.samples += 1;
        let raw = s.raw as f64;
        for &(level, size, secs) in &s.levels {
            let Some(p) = self.per.get_mut(usize::from(level)) else {
                continue;
            };
            if level == 0 {
                continue;
            }
            let lr = (raw / size.max(1) as f64).ln();
            p.log_ratio = Some(ewma(p.log_ratio, lr, ALPHA_SAMPLE));
            p.cost = Some(ewma(p.cost, secs.max(0.0) / raw, ALPHA_SAMPLE));
            p.seen = self.samples;
        }
    }

    /// Takes one window's figures at `level`: its payload `rate`, the
    /// stream's `ratio` over it, what held it back, and the seconds per raw
    /// byte its batches' compression took on the pump's thread (`real`,
    /// however many threads ran the jobs): that is the level's cost on the
    /// critical path, and it scales every level's sampled cost alike (data
    /// slow to compress is slow at every level).
    pub(super) fn observe_window(
        &mut self,
        level: u8,
        rate: f64,
        ratio: f64,
        limit: Limit,
        real: f64,
    ) {
        if !(rate.is_finite() && rate > 0.0) {
            return;
        }
        let sampled = self.sampled_cost(level);
        let real = if real.is_finite() { real.max(0.0) } else { 0.0 };
        if level > 0 && real > 0.0 && sampled > 0.0 {
            let k = (real / sampled).clamp(CALIB_MIN, CALIB_MAX);
            self.calib = ewma(Some(self.calib), k, ALPHA_CALIB);
        }
        let wire = rate / ratio.max(1.0);
        self.wire_best = self.wire_best.max(wire);
        match limit {
            Limit::Link => {
                self.link = if wire >= self.link {
                    wire
                } else {
                    self.link + LINK_FALL * (wire - self.link)
                };
                // The CPU kept ahead of this rate: its own part is at most
                // what is left of the time per byte.
                self.base = self.base.min((1.0 / rate - real).max(BASE_MIN));
            }
            Limit::Cpu => {
                let seen = (1.0 / rate - real).clamp(BASE_MIN, BASE_MAX);
                self.base = ewma(Some(self.base), seen, ALPHA_WINDOW);
            }
            Limit::Window | Limit::Peer => {}
        }
        self.cap = matches!(limit, Limit::Window | Limit::Peer)
            .then(|| ewma(self.cap, rate, ALPHA_WINDOW));
        if let Some(lr) = self.log_ratio(level).filter(|_| level > 0) {
            let g = ratio.max(1e-3).ln() - lr;
            self.gain = ewma(Some(self.gain), g, ALPHA_WINDOW).max(0.0);
        }
    }

    /// The data changed to what does not compress: every level's ratio
    /// starts again from 1 (samples raise it again as text comes back).
    pub(super) fn reset_ratios(&mut self) {
        for p in self.per.iter_mut().skip(1) {
            if p.log_ratio.is_some() {
                p.log_ratio = Some(0.0);
            }
        }
        self.gain = 0.0;
    }

    fn log_ratio(&self, level: u8) -> Option<f64> {
        if level == 0 {
            return Some(0.0);
        }
        self.per.get(usize::from(level))?.log_ratio
    }

    fn sampled_cost(&self, level: u8) -> f64 {
        if level == 0 {
            return 0.0;
        }
        self.per
            .get(usize::from(level))
            .and_then(|p| p.cost)
            .unwrap_or(0.0)
    }

    /// Seconds per raw byte at `level` on the critical path: the samples'
    /// cost (one thread, fresh stream) scaled by the real jobs'.
    pub(super) fn cost(&self, level: u8) -> f64 {
        self.sampled_cost(level) * self.calib
    }

    /// The link's capacity (wire bytes/s) as measured, and whether it was
    /// ever the limit (else it is the best wire rate seen: at least that).
    pub(super) fn link(&self) -> (f64, bool) {
        if self.link > 0.0 {
            (self.link, true)
        } else {
            (self.wire_best, false)
        }
    }

    /// Whether `level` has figures recent enough to be judged on.
    pub(super) fn fresh(&self, level: u8) -> bool {
        level == 0
            || self
                .per
                .get(usize::from(level))
                .is_some_and(|p| p.log_ratio.is_some() && p.seen + FRESH_SAMPLES > self.samples)
    }

    /// The predicted ratio of `level`: its samples' ratio and what the
    /// stream's history adds (1 at level 0).
    pub(super) fn ratio(&self, level: u8) -> Option<f64> {
        if level == 0 {
            return Some(1.0);
        }
        Some((self.log_ratio(level)? + self.gain).exp())
    }

    /// What `level` would deliver: the least of our CPU's rate at its cost,
    /// the link's capacity times its ratio, and the peer's limit.
    pub(super) fn predict(&self, level: u8) -> Option<Prediction> {
        let ratio = self.ratio(level)?;
        let cost = self.cost(level);
        let cpu = 1.0 / (self.base + cost);
        let (link, _) = self.link();
        let link = if link > 0.0 {
            link * ratio
        } else {
            f64::INFINITY
        };
        let rate = cpu.min(link).min(self.cap.unwrap_or(f64::INFINITY));
        Some(Prediction {
            level,
            rate,
            cpu,
            link,
            ratio,
            cost,
        })
    }
}
