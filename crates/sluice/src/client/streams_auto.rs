//! `Streams auto`'s rule, shared by a file copied over several connections
//! (sftp/parallel/) and a channel striped over several (stripe.rs):
//! connections are added in steps, and each step is measured over a period
//! once its connections are up. A step must raise the total rate by a
//! tenth, else it is given back (or, where connections cannot be given
//! back, no more are added); a step that scaled almost in proportion (the
//! path had room) is followed by one as large as all there are (1, 2, 4, 8:
//! slow start for connections), any other by one more. At most
//! [`AUTO_MAX`] in all. `-v` prints each decision.
//!
//! A copy that starts its connections cold ([`Steer::on_plateaus`]) also
//! waits, before each decision, for a period whose rate is within a
//! quarter of the period before: a connection still in TCP's slow start
//! (about ten round trips to fill a 1 Gbit/s path at 240 ms) would look
//! held back, and the step it made look like a gain.
//!
//! Plain data: the caller brings the time and the bytes moved so far.

use std::time::{Duration, Instant};

/// How often `auto` looks at the rates (and the loss signs).
pub const LOOK_EVERY: Duration = Duration::from_millis(100);

/// The most connections `Streams auto` opens (mscp's authors saw gains
/// flatten near 8).
pub const AUTO_MAX: usize = 8;

/// The rate auto assumes a path may carry, to size its bandwidth-delay
/// product against one socket's buffer cap (1 Gbit/s).
pub const ASSUMED_RATE: f64 = 125e6;

/// The bandwidth-delay product of a path of `rtt` at [`ASSUMED_RATE`], and
/// what one TCP socket may buffer to send: where the second is the larger,
/// one connection can fill the path and auto stays at one.
pub fn bdp_and_cap(rtt: Duration) -> (u64, u64) {
    let bdp = (ASSUMED_RATE * rtt.as_secs_f64()) as u64;
    (bdp, socket_cap())
}

/// How many connections a copy starts with under auto: enough that, with
/// at most `per_conn` bytes in flight on each (the server's fixed channel
/// window, or one socket's buffer cap), they cover the bandwidth-delay
/// product of a path of `rtt` at [`ASSUMED_RATE`]; 1 to [`AUTO_MAX`]. The
/// steps measured from there decide the rest.
pub fn start_count(rtt: Duration, per_conn: u64) -> usize {
    let bdp = ASSUMED_RATE * rtt.as_secs_f64();
    let n = (bdp / per_conn.max(1) as f64).ceil();
    (n as usize).clamp(1, AUTO_MAX)
}

/// What one TCP socket may buffer to send when its size is left to the
/// kernel (a stock server's): autotuning's maximum.
pub fn autotune_cap() -> u64 {
    crate::net::sockbuf::read_sysctl("/proc/sys/net/ipv4/tcp_wmem")
        .and_then(|v| v.get(2).copied())
        .unwrap_or(4 << 20)
}

/// The most one TCP socket may buffer to send: the larger of autotuning's
/// maximum and twice net.core.wmem_max (what an explicit size reaches).
pub fn socket_cap() -> u64 {
    let auto = autotune_cap();
    let core = crate::net::sockbuf::read_sysctl("/proc/sys/net/core/wmem_max")
        .and_then(|v| v.first().copied())
        .unwrap_or(208 << 10);
    auto.max(core * 2)
}

/// What to do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Keep measuring.
    Wait,
    /// Open this many more connections.
    Add(usize),
    /// The last step (this many connections) did not help: give them back
    /// (or keep them, where that cannot be done) and add no more.
    GiveBack(usize),
    /// As many as auto opens: add no more.
    Settle,
}

/// The measurement between decisions.
#[derive(Debug)]
pub struct Steer {
    period: Duration,
    since: Instant,
    at: u64,
    /// The rate before the last step, and how many that step added.
    before: Option<f64>,
    added: usize,
    /// Decide only on a plateau (see the file doc); the last period's rate
    /// since the last decision, and how many periods were waited for it.
    plateaus: bool,
    last: Option<f64>,
    waited: u32,
}

/// A period's rate within this factor of the one before is a plateau.
const PLATEAU: f64 = 1.25;

/// Periods waited for a plateau at most: a rate that keeps creeping up
/// is decided on anyway.
const PLATEAU_WAIT_MAX: u32 = 8;

impl Steer {
    /// Measures from `now` (`moved` bytes so far) over periods of `period`.
    pub fn new(now: Instant, moved: u64, period: Duration) -> Steer {
        Steer {
            period,
            since: now,
            at: moved,
            before: None,
            added: 0,
            plateaus: false,
            last: None,
            waited: 0,
        }
    }

    /// Decides only once the rate stopped growing (see the file doc).
    pub fn on_plateaus(mut self) -> Steer {
        self.plateaus = true;
        self
    }

    /// How long one measurement lasts.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Whether a whole period has passed since it started.
    pub fn due(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.since) >= self.period
    }

    /// Bytes per second since the period started.
    pub fn rate(&self, now: Instant, moved: u64) -> f64 {
        let secs = now.saturating_duration_since(self.since).as_secs_f64();
        moved.saturating_sub(self.at) as f64 / secs.max(1e-3)
    }

    /// Starts the period again from `now`: while connections of a step are
    /// still coming up, the rate is not theirs yet.
    pub fn mark(&mut self, now: Instant, moved: u64) {
        self.since = now;
        self.at = moved;
    }

    /// A step taken on a rate measured elsewhere (over a longer time than
    /// a period): `added` connections on top of `before` bytes per second.
    /// The next decision weighs the step against `before`.
    pub fn stepped(&mut self, now: Instant, moved: u64, before: f64, added: usize) {
        self.before = Some(before);
        self.added = added;
        self.mark(now, moved);
    }

    /// The decision once a period has passed with `live` connections up
    /// (the first included), `moved` bytes so far.
    pub fn decide(&mut self, now: Instant, moved: u64, live: usize) -> Step {
        let secs = now.saturating_duration_since(self.since);
        if secs < self.period {
            return Step::Wait;
        }
        let rate = moved.saturating_sub(self.at) as f64 / secs.as_secs_f64().max(1e-3);
        self.mark(now, moved);
        let n = live.max(1);
        if self.plateaus {
            let ramping = self.last.is_none_or(|l| rate > l * PLATEAU);
            if ramping && self.waited < PLATEAU_WAIT_MAX {
                self.last = Some(rate);
                self.waited += 1;
                crate::log!(
                    Debug2,
                    "Streams auto: {n} connection(s) move {:.1} MB/s, still growing",
                    rate / 1e6
                );
                return Step::Wait;
            }
            self.last = None;
            self.waited = 0;
        }
        let added = self.added.min(n - 1);
        let add = match self.before {
            Some(before) if rate < before * 1.1 => {
                crate::log!(
                    Debug1,
                    "Streams auto: {n} connections move {:.1} MB/s, {} moved {:.1} MB/s: giving back {added}",
                    rate / 1e6,
                    n - added,
                    before / 1e6
                );
                return Step::GiveBack(added);
            }
            _ if n >= AUTO_MAX => {
                crate::log!(
                    Debug1,
                    "Streams auto: {n} connections move {:.1} MB/s: the most auto opens",
                    rate / 1e6
                );
                return Step::Settle;
            }
            Some(before) if rate < before * n as f64 / (n - added) as f64 * 0.75 => 1,
            _ => n.min(AUTO_MAX - n),
        };
        crate::log!(
            Debug1,
            "Streams auto: {n} connection(s) move {:.1} MB/s: opening {add} more",
            rate / 1e6
        );
        self.before = Some(rate);
        self.added = add;
        Step::Add(add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: Duration = Duration::from_secs(1);

    /// Runs the rule over `rates` (bytes per second with the connections
    /// there are), a period each; returns the steps.
    fn run(rates: &[f64]) -> Vec<Step> {
        let t0 = Instant::now();
        let mut s = Steer::new(t0, 0, SEC);
        let (mut live, mut moved, mut t) = (1usize, 0u64, t0);
        let mut steps = Vec::new();
        for r in rates {
            t += SEC;
            moved += *r as u64;
            let step = s.decide(t, moved, live);
            if let Step::Add(k) = step {
                live += k;
            }
            steps.push(step);
        }
        steps
    }

    #[test]
    fn waits_for_a_whole_period() {
        let t0 = Instant::now();
        let mut s = Steer::new(t0, 0, SEC);
        assert_eq!(s.decide(t0 + SEC / 2, 1 << 20, 1), Step::Wait);
    }

    #[test]
    fn doubles_while_the_rate_scales() {
        // Each connection held at 10 MB/s (a buffer cap): 1, 2, 4, 8.
        let steps = run(&[10e6, 20e6, 40e6, 80e6]);
        assert_eq!(
            steps,
            vec![Step::Add(1), Step::Add(2), Step::Add(4), Step::Settle]
        );
    }

    #[test]
    fn waits_for_slow_start_to_end_on_plateaus() {
        // One connection ramping up to a full path, then a second that
        // adds nothing: each decision waits for two periods alike.
        let t0 = Instant::now();
        let mut s = Steer::new(t0, 0, SEC).on_plateaus();
        let (mut live, mut moved, mut t) = (1usize, 0u64, t0);
        let mut steps = Vec::new();
        for r in [6e6, 29e6, 60e6, 118e6, 120e6, 121e6, 122e6] {
            t += SEC;
            moved += r as u64;
            let step = s.decide(t, moved, live);
            if let Step::Add(k) = step {
                live += k;
            }
            steps.push(step);
        }
        use Step::*;
        assert_eq!(
            steps,
            vec![Wait, Wait, Wait, Wait, Add(1), Wait, GiveBack(1)]
        );
    }

    #[test]
    fn starts_with_enough_windows_for_the_path() {
        let ms = Duration::from_millis;
        // A stock sshd's 2 MiB window at 100 ms: 12.5 MB needs 6.
        assert_eq!(start_count(ms(100), 2 << 20), 6);
        // One 8 MiB socket covers 50 ms; 240 ms needs more than auto opens.
        assert_eq!(start_count(ms(50), 8 << 20), 1);
        assert_eq!(start_count(ms(240), 2 << 20), AUTO_MAX);
        assert_eq!(start_count(ms(0), 0), 1);
    }

    #[test]
    fn gives_back_a_step_that_did_not_help() {
        // The path is full with one connection.
        assert_eq!(run(&[100e6, 104e6]), vec![Step::Add(1), Step::GiveBack(1)]);
    }

    #[test]
    fn adds_one_at_a_time_when_a_step_helped_less_than_in_proportion() {
        // 4 connections moved 1.4x what 2 did: one more, which adds less
        // than a tenth: given back.
        let steps = run(&[10e6, 20e6, 28e6, 29e6]);
        assert_eq!(
            steps,
            vec![Step::Add(1), Step::Add(2), Step::Add(1), Step::GiveBack(1)]
        );
    }
}
