//! The level decided from the model after each window: the best predicted
//! payload rate, held for a minimum and moved to only for a clear gain.

use super::model::Prediction;
use super::{
    LevelControl, Limit, Probe, Window, HOLD_BYTES, HOLD_TIME, LINK_MARGIN, MARGIN, MIN_RATIO,
    PROBE_AFTER,
};
use crate::log;
use std::fmt::Write as _;
use std::time::Instant;

impl LevelControl {
    /// The level to move to after a window at `now_level`, if any.
    pub(super) fn decide(&mut self, now: Instant, now_level: u8, w: Window) -> Option<u8> {
        if now_level > 0 && w.ratio < MIN_RATIO {
            self.model.reset_ratios();
            log!(
                Debug1,
                "compression: {} level {now_level} -> 0: data does not compress (ratio {:.2}, {:.0} MB/s)",
                self.engine,
                w.ratio,
                w.rate / 1e6
            );
            return Some(0);
        }
        // The window at level 0 that measured the link ends the try: the
        // model decides from it at once, without the hold.
        let probed = self.probe == Probe::Running;
        if probed {
            self.probe = Probe::Done;
        }
        let preds = self.predictions();
        let cur = *preds.iter().find(|p| p.level == now_level)?;
        let copy = *preds.first()?;
        let (target, why) = if self.limit == Limit::Window {
            self.behind_window(&preds)?
        } else {
            // The fastest; of two alike, the lower (less work).
            let best = preds
                .iter()
                .copied()
                .fold(copy, |b, p| if p.rate > b.rate { p } else { b });
            (best.level, "best predicted rate")
        };
        // A level our CPU holds below what the copy would deliver through
        // the link is left at once, whatever its hold.
        let slow = now_level > 0 && cur.cpu < copy.rate && target != now_level;
        let held = probed
            || now.saturating_duration_since(self.changed.0) >= HOLD_TIME
                && w.raw.saturating_sub(self.changed.1) >= HOLD_BYTES;
        if self.probe_now(now, now_level, cur, copy) {
            self.probe = Probe::Running;
            log!(
                Debug1,
                "compression: {} level {now_level} -> 0: trying the copy for a window: level {now_level} is CPU-bound at {:.0} MB/s, our CPU would copy {:.0} MB/s and the link was never the limit",
                self.engine,
                cur.rate / 1e6,
                copy.cpu / 1e6
            );
            return Some(0);
        }
        let clear = preds.iter().find(|p| p.level == target).is_some_and(|p| {
            // Held back by the link with our CPU well ahead: the gain is
            // the ratio's alone. Not from level 0, whose ratios start again
            // from 1 after data that did not compress: a few samples of
            // what follows are not yet a ratio to trust that closely.
            let link_held = p.cpu >= p.link * (1.0 + MARGIN) && cur.cpu >= cur.link;
            let margin = if link_held && now_level > 0 {
                LINK_MARGIN
            } else {
                MARGIN
            };
            p.rate >= cur.rate * (1.0 + margin)
        }) || self.limit == Limit::Window;
        if target == now_level || !(slow || (held && clear)) {
            return None;
        }
        let why = if slow {
            "CPU-bound below the copy's rate through the link"
        } else {
            why
        };
        self.log_decision(now_level, target, why, &preds);
        Some(target)
    }

    /// Whether to try level 0 now (once per connection, after
    /// [`PROBE_AFTER`]): the level in use is CPU-bound, the link was never
    /// the limit (its capacity is only the best wire rate seen, which
    /// compression keeps low), and our CPU would copy clearly faster than
    /// the level delivers.
    fn probe_now(&self, now: Instant, now_level: u8, cur: Prediction, copy: Prediction) -> bool {
        self.probe == Probe::Ready
            && now.saturating_duration_since(self.born) >= PROBE_AFTER
            && now_level > 0
            && self.limit == Limit::Cpu
            && !self.model.link().1
            && copy.cpu > cur.rate * (1.0 + MARGIN)
    }

    /// Behind a peer's window the path fills, payload is what it counts:
    /// level 1, the least work that still shortens the wire's queue, unless
    /// the copy is clearly faster (our CPU the limit at 1).
    fn behind_window(&self, preds: &[Prediction]) -> Option<(u8, &'static str)> {
        let copy = preds.first()?;
        match preds.iter().find(|p| p.level == 1) {
            Some(one) if copy.rate <= one.rate * (1.0 + MARGIN) => {
                Some((1, "behind a peer's window the path fills"))
            }
            _ => Some((0, "behind a peer's window, the copy is faster")),
        }
    }

    /// The predictions of level 0 and of every level with fresh samples
    /// whose ratio counts, in order of level.
    fn predictions(&self) -> Vec<Prediction> {
        (0..=self.max_level)
            .filter(|&l| self.model.fresh(l))
            .filter_map(|l| self.model.predict(l))
            .filter(|p| p.level == 0 || p.ratio >= MIN_RATIO)
            .collect()
    }

    /// Logs a move at debug1 with the model's figures.
    fn log_decision(&self, from: u8, to: u8, why: &str, preds: &[Prediction]) {
        let mut figures = String::new();
        for p in preds {
            let _ = write!(
                figures,
                " L{} {:.0} MB/s (ratio {:.2}, cpu {:.0}, {:.2} ns/B);",
                p.level,
                p.rate / 1e6,
                p.ratio,
                p.cpu / 1e6,
                p.cost * 1e9
            );
        }
        let (link, seen) = self.model.link();
        log!(
            Debug1,
            "compression: {} level {from} -> {to}: {why}; predicted{figures} link {}{:.0} MB/s",
            self.engine,
            if seen { "" } else { ">= " },
            link / 1e6
        );
    }
}
