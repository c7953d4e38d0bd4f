//! Steering the outgoing compression level from a model of the levels and
//! the path (`Compression auto`, and the sending side of `-C`).
//!
//! One stock zlib stream at level 6 on one thread is what makes `ssh -C`
//! slower than no compression on fast links. sluice's engines run in
//! parallel jobs whose level may change from one job to the next
//! (sluice-proto `transport/pzlib.rs`, `transport/zstd.rs`), with level 0
//! meaning "off" (raw or stored blocks: a copy, no compression work). The
//! controller picks the level from a model (`model.rs`) rather than by
//! trying levels on the stream: windows of the stream hold different data
//! (ratio 1.3 to 34 within one tar), so comparing one window's rate at one
//! level with the next window's at another kept or dropped levels on the
//! data's luck.
//!
//! - **Samples** (`sample.rs`): after each window (at most every
//!   [`SAMPLE_GAP`]) a copy of the next 64 KiB of payload goes to a side
//!   thread (a queue of one: dropped while it is busy), which compresses
//!   it alone at the level in use, one down, two up and 1, each from a
//!   fresh stream, and times each.
//!   That gives every level's ratio relative to the level in use on the
//!   same bytes, and its cost per byte; both are smoothed (EWMA) so one
//!   sample's luck does not flip a decision. The cost is calibrated by the
//!   real batches' compression time per byte at the level in use.
//! - **Windows**: at least [`WINDOW_BYTES`] of payload and [`WINDOW_TIME`]
//!   ([`WINDOW_FAST_BYTES`] on a fast path; the first, holding the
//!   session's setup, only the bytes) give the payload rate, the stream's
//!   ratio, and what held the rate back (`limit.rs`): the link when data
//!   waited unsent in the socket (TCP_INFO, SIOCOUTQ), the peer's window
//!   when data waited for it, our CPU otherwise. A CPU-bound window gives
//!   the cost of the rest of the path (read, seal, write) per byte; a
//!   link-bound one the link's capacity (while the link was never the
//!   limit, its capacity is at least the best wire rate seen); one held
//!   back by the peer (its window or its work) a limit every level shares.
//!   After a change of level the window waits until the peer has
//!   acknowledged what was in the socket at the change: until then the
//!   old level's bytes drain.
//! - **The decision** (`decide.rs`), after each window: each level's
//!   predicted payload rate is the least of our CPU's (1 / (path cost +
//!   its compression cost)), the link's capacity times its ratio, and the
//!   peer's limit. The level moves to the best only once the level in use
//!   held for [`HOLD_TIME`] and [`HOLD_BYTES`], and only for a predicted
//!   gain of [`MARGIN`] or more ([`LINK_MARGIN`] from a level above 0 to
//!   one the link holds back with our CPU well ahead, where the gain is
//!   the ratio alone); at once when the model says the level in use is
//!   CPU-bound below what the copy would deliver through the link.
//! - Data that does not compress (a window's ratio under [`MIN_RATIO`])
//!   goes to level 0 at once, its levels' ratios start again from 1, and
//!   the samples, which go on at level 0, are the re-check: a level whose
//!   predicted ratio is under [`MIN_RATIO`] is never chosen.
//! - Behind a peer's window that the path's round trip fills (a stock
//!   sshd's 2 MiB at 10 ms: the payload in flight is at least
//!   [`limit::WINDOW_SHARE`] of it) every level delivers the same payload:
//!   level 1 is the level there (the least work that still shortens the
//!   wire's queue), unless the copy is predicted faster by [`MARGIN`].
//! - The link's capacity is known only from windows it held back; while
//!   compression keeps the stream under it, the model knows only the best
//!   wire rate seen, which a compressed stream keeps low. So once per
//!   connection, when a level above 0 is CPU-bound and our CPU would copy
//!   clearly faster (by [`MARGIN`]), level 0 is tried for one short window
//!   ([`PROBE_TIME`] or two round trips): on a 5 Gbit/s LAN the copy is
//!   the faster (the link carries more than level 1's CPU compresses);
//!   at 1 Gbit/s the window measures the link and the level goes back.
//!   During the try the socket takes at most [`PROBE_UNSENT`] unsent
//!   ([`LevelControl::unsent_cap`], TCP_NOTSENT_LOWAT): else its buffer
//!   fills with uncompressed bytes that drain at the link's rate after it.
//!   Even so the try holds a 1 Gbit/s upload of text to the link's raw
//!   rate (a third of its compressed one) for about 40 ms: tried at the
//!   first CPU-bound window it cost a 256 MiB upload 9% (13% without the
//!   cap), so it waits until the stream has run [`PROBE_AFTER`]; a
//!   transfer shorter than that is not slowed by it, a longer one pays a
//!   few percent at most, once.
//! - Over a path of at least [`SETUP_RTT`] it starts at level 1 (the
//!   transfer starts in TCP's slow start, where the link is the limit);
//!   under it (loopback, a LAN) at 0. zlib stays at most at 6, which
//!   stock inflaters read as fast as any (above it the ratio barely moves).
//!
//! The clock is the caller's (every call takes `now`), so the tests drive
//! the controller deterministically (`sim_tests.rs`). Each decision is
//! logged at debug1 (`-v`) with its figures, each window at debug2.

mod limit;
mod model;
mod sample;

use crate::log;
use limit::Limit;
#[cfg(test)]
use limit::LINK_BOUND;
pub use limit::{Socket, Stalls};
use model::{Model, Sample};
use sample::Sampler;
use sluice_proto::transport::compress::Level;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Payload bytes per window, at least.
const WINDOW_BYTES: u64 = 4 << 20;
/// Time per window, at least: long enough that the socket buffer's fill
/// level does not decide the rate.
const WINDOW_TIME: Duration = Duration::from_millis(100);
/// ... unless this much payload went by first (loopback, 10 Gbit/s).
const WINDOW_FAST_BYTES: u64 = 24 << 20;
/// Least time between two samples: at most 20 a second, each a few
/// compressions of 64 KiB (1-2% of a core).
const SAMPLE_GAP: Duration = Duration::from_millis(50);
/// Below this ratio the data is taken as incompressible.
const MIN_RATIO: f64 = 1.05;
/// A level holds at least this long and this many payload bytes before the
/// model may move it (except down at once, see the module doc): a few
/// windows, so the model has new samples of the level's data.
const HOLD_TIME: Duration = Duration::from_millis(200);
const HOLD_BYTES: u64 = 8 << 20;
/// The least predicted gain a move needs: above the model's error on the
/// relative ratio and cost, so two levels close to each other do not flap.
const MARGIN: f64 = 0.1;
/// ... and for a level the link holds back with our CPU well ahead of it
/// (by [`MARGIN`]): its gain is its ratio relative to the level in use,
/// measured on the same bytes, which varies far less (zstd's levels 3 to 6
/// add 6% on text).
const LINK_MARGIN: f64 = 0.03;
/// The least length of the window that tries level 0 over a link never
/// measured (two round trips if longer): the socket backs up within a few
/// milliseconds where the link is slower than the copy.
const PROBE_TIME: Duration = Duration::from_millis(20);
/// How long the stream runs before level 0 may be tried.
const PROBE_AFTER: Duration = Duration::from_secs(1);
/// Unsent bytes the socket may hold while level 0 is tried: above
/// [`limit::LINK_BOUND`], so a link-bound window still says so.
const PROBE_UNSENT: u32 = 512 << 10;
/// The least round trip over which the transfer starts at level 1: on
/// loopback the copy is 2.5 times as fast as level 1.
const SETUP_RTT: Duration = Duration::from_millis(1);

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

/// One batch as the pump saw it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Batch {
    /// The outgoing stream's (raw, compressed) counts now.
    pub stats: (u64, u64),
    /// Waits for the peer's window since the last batch.
    pub stalls: Stalls,
    /// How long the batch's compression took on the pump's thread.
    pub busy: Duration,
}

/// The controller of one connection's outgoing stream.
pub struct LevelControl {
    level: Arc<Level>,
    engine: String,
    max_level: u8,
    model: Model,
    /// The side thread (None in tests, which feed samples themselves).
    sampler: Option<Sampler>,
    /// Levels the next sample is wanted for (until taken).
    wanted: Option<Vec<u8>>,
    last_sample: Option<Instant>,
    /// (raw, compressed) at the window's start.
    start: (u64, u64),
    started: Instant,
    /// Compression time in this window so far.
    busy: Duration,
    /// After a change of level: the socket's acknowledged-bytes count that
    /// means everything written before the change has arrived.
    settle: Option<u64>,
    /// The socket's send queue at the window's start.
    queued: Option<u64>,
    /// When the level last changed, and the raw count then.
    changed: (Instant, u64),
    /// Waits for the peer's window in this window so far.
    stalls: Stalls,
    /// What held the last window back.
    limit: Limit,
    /// The first window has gone by: it started with the session's setup
    /// (channel open, the remote command starting), not with data.
    warm: bool,
    /// The first batch went by (the level to start at is chosen there).
    begun: bool,
    /// Whether level 0 was tried to measure the link (see the module doc).
    probe: Probe,
    /// The path's round trip, as the socket last said.
    rtt: Duration,
    /// When the stream began.
    born: Instant,
}

/// The one try of level 0 over a link never measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    Ready,
    /// At level 0 until the next window is measured.
    Running,
    Done,
}

impl LevelControl {
    /// Steers `level` of the engine named `engine` from `now`; `stats` are
    /// the outgoing (raw, compressed) counts now. It starts at level 0
    /// (level 1 from the first batch over a path of [`SETUP_RTT`] or more).
    pub fn new(level: Arc<Level>, engine: &str, stats: (u64, u64), now: Instant) -> Self {
        // Above deflate's 6 the ratio barely moves; zstd's scale goes on.
        let max_level = if engine.starts_with("zlib") { 6 } else { 9 };
        level.set(0);
        log!(
            Debug1,
            "compression: {engine} outgoing, level 0 of 0-{max_level}, steered by a model of the levels"
        );
        LevelControl {
            level,
            engine: engine.to_owned(),
            max_level,
            model: Model::default(),
            sampler: None,
            wanted: None,
            last_sample: None,
            start: stats,
            started: now,
            busy: Duration::ZERO,
            settle: None,
            queued: None,
            changed: (now, stats.0),
            stalls: Stalls::default(),
            limit: Limit::Cpu,
            warm: false,
            begun: false,
            probe: Probe::Ready,
            rtt: Duration::ZERO,
            born: now,
        }
    }

    /// The most unsent bytes the socket should take now (TCP_NOTSENT_LOWAT),
    /// or None for no limit: set while level 0 is tried (see the module doc).
    pub fn unsent_cap(&self) -> Option<u32> {
        (self.probe == Probe::Running).then_some(PROBE_UNSENT)
    }

    /// Samples go to a side thread ([`Sampler`]) fed by [`LevelControl::offer`].
    pub fn with_sampler(mut self) -> Self {
        self.sampler = Some(Sampler::new(&self.engine));
        self
    }

    /// Payload just read for sending, uncompressed: a sample is copied from
    /// it while one is wanted.
    pub fn offer(&mut self, data: &[u8]) {
        if let Some(s) = self.sampler.as_mut() {
            s.offer(data);
        }
    }

    /// The levels a sample is wanted for, taken (the tests' sampler).
    #[cfg(test)]
    fn take_wanted(&mut self) -> Option<Vec<u8>> {
        self.wanted.take()
    }

    /// One sample's figures (from the side thread, or a test).
    fn observe_sample(&mut self, s: &Sample) {
        self.model.observe_sample(s);
    }

    /// After a batch: a window is measured once enough data went by, and
    /// the level decided. `socket` reads the TCP socket (None: not one,
    /// e.g. a ProxyCommand's pipe).
    ///
    /// `batch.stalls` counts the times data waited for the peer's channel
    /// window: like unsent bytes in the socket, that says the sender is
    /// ahead of what drains it (a stock sshd's 2 MiB window about covers a
    /// fast LAN's round trip, so its socket never backs up while the link
    /// is still the limit).
    pub fn after_batch(&mut self, now: Instant, batch: Batch, socket: impl Fn() -> Option<Socket>) {
        let (raw, z) = batch.stats;
        self.stalls = Stalls {
            count: self.stalls.count.saturating_add(batch.stalls.count),
            window: self.stalls.window.max(batch.stalls.window),
        };
        self.busy += batch.busy;
        while let Some(s) = self.sampler.as_mut().and_then(Sampler::poll) {
            self.observe_sample(&s);
        }
        if !std::mem::replace(&mut self.begun, true) {
            self.start_level(now, raw, socket());
        }
        if self.settling(now, (raw, z), &socket) {
            return;
        }
        let (raw0, z0) = self.start;
        let bytes = raw.saturating_sub(raw0);
        let elapsed = now.saturating_duration_since(self.started);
        let least = if self.probe == Probe::Running {
            PROBE_TIME.max(self.rtt * 2)
        } else {
            WINDOW_TIME
        };
        let short = elapsed < least && bytes < WINDOW_FAST_BYTES && self.warm;
        let ratio = bytes as f64 / z.saturating_sub(z0).max(1) as f64;
        // Data that does not compress says so in a few MiB: a level above
        // 0 need not go on for a whole window.
        let futile = self.level.get() > 0 && ratio < MIN_RATIO;
        if bytes < WINDOW_BYTES || (short && !futile) {
            return;
        }
        let secs = elapsed.as_secs_f64().max(1e-6);
        // What went into the socket's buffer rather than to the peer (or
        // came out of it) is not delivered payload.
        let k = socket();
        let queued = k.map(|k| k.queued);
        let grown = match (self.queued, queued) {
            (Some(q0), Some(q)) => (q as f64 - q0 as f64) * ratio,
            _ => 0.0,
        };
        self.queued = queued;
        if let Some(k) = k {
            self.rtt = k.rtt;
        }
        let rate = (bytes as f64 - grown).max(0.0) / secs;
        let stalls = std::mem::take(&mut self.stalls);
        let limit = Limit::of(k, stalls, rate);
        let busy = std::mem::take(&mut self.busy);
        let now_level = self.level.get();
        log!(
            Debug2,
            "compression: window {:.0} ms at level {now_level}: {:.1} MB/s, ratio {ratio:.2}, {}",
            secs * 1e3,
            rate / 1e6,
            limit.describe()
        );
        self.start = (raw, z);
        self.started = now;
        // The setup's window measures the setup: not the model's.
        if std::mem::replace(&mut self.warm, true) {
            self.limit = limit;
            let real = busy.as_secs_f64() / bytes as f64;
            self.model
                .observe_window(now_level, rate, ratio, limit, real);
            let w = Window { rate, ratio, raw };
            if let Some(next) = self.decide(now, now_level, w) {
                self.set_level(now, raw, next, k);
            }
        }
        self.want_sample(now);
    }

    /// Asks for a sample when the last is old enough: the level in use, one
    /// down, two up, and 1 (behind a window the path fills, 1 alone).
    fn want_sample(&mut self, now: Instant) {
        if self
            .last_sample
            .is_some_and(|t| now.saturating_duration_since(t) < SAMPLE_GAP)
        {
            return;
        }
        self.last_sample = Some(now);
        let c = self.level.get();
        let mut levels: Vec<u8> = if self.limit == Limit::Window {
            vec![1]
        } else {
            vec![1, c.saturating_sub(1), c, c + 1, c + 2]
        };
        levels.retain(|&l| (1..=self.max_level).contains(&l));
        levels.sort_unstable();
        levels.dedup();
        match self.sampler.as_mut() {
            Some(s) => s.request(levels),
            None => self.wanted = Some(levels),
        }
    }

    /// Over a path of at least [`SETUP_RTT`] the transfer starts in TCP's
    /// slow start, where the link (its congestion window) is the limit and
    /// every byte of ratio is payload: level 1 from the first batch. At 1
    /// Gbit/s through 10 ms the setup's window at level 0 sent 5 MB of text
    /// raw (ratio 25 at level 1), 40 ms of the link.
    fn start_level(&mut self, now: Instant, raw: u64, k: Option<Socket>) {
        if let Some(k) = k {
            self.rtt = k.rtt;
        }
        let Some(k) = k.filter(|k| k.rtt >= SETUP_RTT) else {
            return;
        };
        if self.level.get() != 0 || self.max_level == 0 {
            return;
        }
        log!(
            Debug1,
            "compression: {} level 0 -> 1: start over a path of {:.1} ms round trip",
            self.engine,
            k.rtt.as_secs_f64() * 1e3
        );
        self.set_level(now, raw, 1, Some(k));
    }

    /// Moves to `level`; its windows start once what the socket holds now
    /// (`k`) has reached the peer.
    fn set_level(&mut self, now: Instant, raw: u64, level: u8, k: Option<Socket>) {
        if level == self.level.get() {
            return;
        }
        self.level.set(level);
        self.settle = k.map(|k| k.acked + k.queued);
        self.changed = (now, raw);
    }

    /// Whether the bytes of the level before a change are still on their
    /// way (`settle`): the window starts when they are through.
    fn settling(
        &mut self,
        now: Instant,
        stats: (u64, u64),
        socket: &impl Fn() -> Option<Socket>,
    ) -> bool {
        let Some(target) = self.settle else {
            return false;
        };
        match socket() {
            Some(k) if k.acked < target => {
                self.start = stats;
                self.queued = Some(k.queued);
                self.started = now;
                self.stalls = Stalls::default();
                self.busy = Duration::ZERO;
                true
            }
            _ => {
                self.settle = None;
                false
            }
        }
    }
}

/// One window's figures, as the decision takes them.
#[derive(Debug, Clone, Copy)]
struct Window {
    /// Payload delivered, bytes/s.
    rate: f64,
    ratio: f64,
    /// The stream's raw byte count at its end.
    raw: u64,
}

mod decide;
#[cfg(test)]
mod sim_tests;
#[cfg(test)]
mod tests;
