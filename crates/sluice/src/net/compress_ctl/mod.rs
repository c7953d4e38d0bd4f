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
//!   [`WINDOW_TIME`]; the first, which holds the session's setup, only
//!   the bytes) gives the payload rate (what was compressed per
//!   second) and the ratio at the current level. After a change of level
//!   the window waits until the peer has acknowledged everything that was
//!   in the socket at the change (TCP_INFO and SIOCOUTQ): until then the
//!   socket's buffer, megabytes on a long path, drains data of the old
//!   level and the rate would be the old level's. From then on the backlog
//!   is this level's own and the rate is what this level delivers,
//!   whichever of link, our CPU or the peer's is the limit;
//! - after a few windows at one level (one at the start, from level 0)
//!   the controller probes a neighbour for one window: up while data
//!   waits unsent in the socket or for the peer's channel window (the
//!   link or the peer is the limit: compression keeps ahead of it), down
//!   otherwise (the CPU is). A probe up that still keeps ahead of the
//!   link is kept (more ratio, same link: more payload, whatever the
//!   window's data did to the rate) and the next level is probed at once;
//!   otherwise a probe is
//!   kept only when its rate beats the level before by [`GAIN`]. Each
//!   failed probe doubles the time before the next (up to [`HOLD_MAX`]
//!   windows), each move starts again at [`HOLD_MIN`]. A probe up whose
//!   socket still backs up after [`WINDOW_BYTES`] has won already, and its
//!   window ends there;
//! - a probe up while the CPU, not the link, is the limit (loopback, a
//!   fast LAN) adds work where work is what limits: it rarely wins and
//!   costs a slower window, a good part of a short transfer. So such
//!   probes wait until [`CPU_PROBE_WAIT`] of transfer went by; and after
//!   any probe up that lost, the next waits until the loss comes to at
//!   most [`PROBE_BUDGET`] of the time since (a probe that was 30% slower
//!   for 70 ms waits 0.7 s);
//! - data that does not compress (ratio below [`MIN_RATIO`]) goes to
//!   level 0 at once and is probed again after [`PROBE_EVERY`] bytes
//!   (doubling while it stays so, up to [`PROBE_MAX`]), so text after
//!   random data is noticed within a few MiB; such a probe ends after
//!   [`FUTILE_BYTES`], and one that cost (slower than the copy, as on
//!   loopback; through a link both go at the link's rate) makes the next
//!   wait until the loss is [`PROBE_BUDGET`] of the time since;
//! - over a path of at least [`SETUP_RTT`] it starts at level 1 from the
//!   first batch: the transfer starts in TCP's slow start, where the link
//!   is the limit (no rate to beat: kept while ahead, else level 0 is
//!   probed against it). Under it (loopback, a LAN) it starts at 0, and a
//!   socket that backs up in the setup's window is the peer starting its
//!   command, not the link;
//! - level 0 carries at most the link: no probe of it from a window that
//!   delivered well over the link's measured capacity, and a probe of it
//!   whose copy backs up in the socket while the link drains it under
//!   [`EARLY_LOSS`] of the level before has lost before its window (the
//!   copy fills a large socket buffer with uncompressed data fast);
//! - the link's capacity as measured (the most a window put on the wire
//!   while the socket backed up): a CPU-bound window that puts less than
//!   [`AT_LINK`] of it on the wire has a level too slow for the link, and
//!   steps down at once rather than after its hold (after a few MiB when
//!   it puts under [`EARLY_SHORT`] of it there). The estimate may be
//!   low (a socket backs up behind a slow receiver too), so it is never
//!   taken to say a window was at the link: a window taken as link-bound
//!   on a low estimate had levels up kept whatever they cost (zstd climbed
//!   to 9 at 37 MB/s on a 5 Gbit/s path);
//! - a peer's channel window that the path's round trip fills (a stock
//!   sshd's 2 MiB at 10 ms: the payload in flight at the rate is at least
//!   [`WINDOW_SHARE`] of it) counts payload, so no ratio raises it: behind
//!   it level 1 (the least work that still shortens the wire's queue) is
//!   the level, kept unless clearly slower ([`WINDOW_SLACK`]), with no
//!   probes up or down from it. Window by window the data's own ratio moves
//!   the rate more than a level does there, and each probe cost 3-7%.
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
/// A probe slower than this share of the level before ends its window
/// early, once it ran for [`EARLY_MIN`] and [`WINDOW_BYTES`].
const EARLY_LOSS: f64 = 0.6;
const EARLY_MIN: Duration = Duration::from_millis(10);
/// Payload bytes after which a probe up from level 0 that still finds the
/// data incompressible ends: one compression job (zstd's and zlib's are
/// 1 MiB and 512 KiB), enough to tell random data from text.
const FUTILE_BYTES: u64 = 1 << 20;
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

/// Unsent bytes in the socket above which the link (or the peer's
/// window) is taken as the limit: compression is keeping ahead of it.
const LINK_BOUND: u64 = 256 << 10;

/// Waits for the peer's channel window in one window that make it the
/// limit (one may be a burst at the window's edge).
const STALLS_BOUND: u32 = 2;

/// Share of the peer's window that the payload in flight over the path's
/// round trip must reach for the window itself (not the peer's CPU) to be
/// what holds the rate back. On loopback behind a busy sshd it is about
/// 1%, through 10 ms at 1 Gbit/s about 60%.
const WINDOW_SHARE: f64 = 0.3;

/// The least round trip over which a socket that backs up in the setup's
/// window is taken as a slow link (level 1 at once): on loopback it backs
/// up behind the peer starting its command, and the probe cost 5% of a
/// 1 GiB upload there (24 MiB at level 1 against a copy 2.5 times as fast).
const SETUP_RTT: Duration = Duration::from_millis(1);

/// What a level-0 copy moves here, at least (bytes per second): a peer's
/// window that the path's round trip fills at this rate (a stock sshd's
/// 2 MiB over more than 0.6 ms) holds back the setup's window too.
const COPY_RATE: f64 = 1e9;

/// Behind such a window, a level 1 at this share of the rate before still
/// counts as no slower.
const WINDOW_SLACK: f64 = 0.9;

/// A CPU-bound window that put less than this share of the link's
/// measured capacity on the wire steps down at once.
const AT_LINK: f64 = 0.8;
/// ... and one that puts less than this share on it after a few MiB ends
/// there (few MiB are a noisy measure: only a clear shortfall counts).
const EARLY_SHORT: f64 = 0.5;

/// A window that delivered this many times the link's measured capacity
/// has no probe of level 0 (see [`LevelControl::copy_cannot_win`]).
const COPY_MARGIN: f64 = 1.5;

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
enum Limit {
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
    /// The link when data waited in the socket unsent; the peer when data
    /// waited for its window more than once: the window itself when the
    /// payload in flight at `rate` over the path's round trip fills a good
    /// part of it, else the peer's work; otherwise our own.
    fn of(socket: Option<Socket>, stalls: Stalls, rate: f64) -> Limit {
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
    /// When the level last changed, and the socket's acknowledged bytes then.
    changed: Option<(Instant, u64)>,
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
    /// The first batch went by (the level to start at is chosen there).
    begun: bool,
    /// Seconds of windows since the last probe ended (or the start).
    since_probe: f64,
    /// Seconds that must go by before a probe up while CPU-bound.
    cpu_wait: f64,
    /// Waits for the peer's window in this window so far.
    stalls: Stalls,
    /// The last probe behind the peer's window went down.
    peer_down: bool,
    /// The most payload/ratio per second of a link-bound window (bytes/s).
    link_wire: f64,
    /// The last probe was one down, and it lost.
    down_missed: bool,
    /// Seconds that must go by before any probe up: what the last failed
    /// one cost, within [`PROBE_BUDGET`].
    fail_wait: f64,
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
            changed: None,
            queued: None,
            started: Instant::now(),
            // One window at level 0, then the first probe.
            phase: Phase::Hold { left: 1 },
            hold: HOLD_MIN,
            warm: false,
            begun: false,
            stored_gap: PROBE_EVERY,
            since_probe: 0.0,
            cpu_wait: CPU_PROBE_WAIT,
            stalls: Stalls::default(),
            peer_down: true,
            link_wire: 0.0,
            down_missed: false,
            fail_wait: 0.0,
        }
    }

    /// After a batch: decides once a window of data went by. `socket`
    /// reads (bytes acknowledged, bytes in the send queue) of the socket
    /// (None: not a TCP socket, e.g. a ProxyCommand pipe).
    ///
    /// `stalls` counts the times since the last call that data waited for
    /// the peer's channel window: like unsent bytes in the socket, that
    /// says the sender is ahead of what drains it (a stock sshd's 2 MiB
    /// window about covers a fast LAN's round trip, so its socket never
    /// backs up while the link is still the limit).
    pub fn after_batch(
        &mut self,
        (raw, z): (u64, u64),
        stalls: Stalls,
        socket: impl Fn() -> Option<Socket>,
    ) {
        self.stalls = Stalls {
            count: self.stalls.count.saturating_add(stalls.count),
            window: self.stalls.window.max(stalls.window),
        };
        if !std::mem::replace(&mut self.begun, true) {
            self.start_level(socket());
        }
        if self.settling((raw, z), &socket) {
            return;
        }
        let (raw0, z0) = self.start;
        let bytes = raw.saturating_sub(raw0);
        let secs = self.started.elapsed();
        // The first window only lets the session's setup go by: its bytes
        // are enough, its rate is not used.
        let short = secs < WINDOW_TIME && bytes < WINDOW_FAST_BYTES && self.warm;
        let ratio = bytes as f64 / z.saturating_sub(z0).max(1) as f64;
        // Data that does not compress is plain from the first few MiB:
        // a level above 0 need not go on for a whole window to say so.
        let futile = self.level.get() > 0 && ratio < MIN_RATIO;
        // A probe from level 0 that finds the data still plain says so after
        // one job's worth (a probe on loopback ran at a fifth of the copy).
        let probing_plain = futile && matches!(self.phase, Phase::Probe { from: 0, .. });
        if (bytes < WINDOW_BYTES && !(probing_plain && bytes >= FUTILE_BYTES))
            || (short
                && !futile
                && !self.losing_probe(bytes, secs, ratio, &socket)
                && !self.ahead_probe(secs, &socket)
                && !self.short_of_link(bytes, secs, ratio, &socket))
        {
            return;
        }
        let secs = secs.as_secs_f64();
        // What went into the socket's buffer rather than to the peer (or
        // came out of it) is not delivered payload.
        let k = socket();
        let queued = k.map(|k| k.queued);
        let grown = match (self.queued, queued) {
            (Some(q0), Some(q)) => (q as f64 - q0 as f64) * ratio,
            _ => 0.0,
        };
        self.queued = queued;
        let rate = (bytes as f64 - grown).max(0.0) / secs;
        let stalls = std::mem::take(&mut self.stalls);
        let limit = Limit::of(k, stalls, rate);
        self.note_link(limit, rate / ratio.max(1.0));
        // The setup's rate says nothing; a window that over the path's
        // round trip allows less than a copy moves is the limit all the same.
        // Over a path of under SETUP_RTT (loopback, a LAN) a socket that
        // backs up during the setup says the peer is still starting its
        // command, not that the link is slow: the first window measures
        // level 0 instead.
        let setup_limit = match Limit::of(k, stalls, COPY_RATE) {
            Limit::Link if k.is_some_and(|k| k.rtt < SETUP_RTT) => Limit::Cpu,
            l => l,
        };
        log!(
            Debug2,
            "compression: window {:.0} ms at level {}: {:.1} MB/s, ratio {ratio:.2}, {}",
            secs * 1e3,
            self.level.get(),
            rate / 1e6,
            match limit {
                Limit::Link => "link-bound",
                Limit::Window => "window-bound (the peer's window fills the path)",
                Limit::Peer => "peer-bound (waits for its window)",
                Limit::Cpu => "CPU-bound",
            }
        );
        self.start = (raw, z);
        self.started = Instant::now();
        let now = self.level.get();
        let next = if std::mem::replace(&mut self.warm, true) {
            self.decide(now, rate, ratio, raw, limit, secs)
        } else if matches!(setup_limit, Limit::Link | Limit::Window)
            && now == 0
            && self.max_level > 0
        {
            // The setup's window: its rate says nothing, but a socket that
            // already backs up says the link is the limit, and waits for a
            // window the path fills say that window is. Level 1 at once,
            // kept only if it stays ahead of them (no rate to beat).
            log!(
                Debug2,
                "compression: {} probing level 1 at once",
                self.engine
            );
            self.phase = Phase::Probe {
                from: 0,
                from_rate: f64::INFINITY,
            };
            1
        } else {
            now
        };
        if next != now {
            self.set_level(next, socket());
        }
    }

    /// Whether the bytes of the level before a change are still on their
    /// way (`settle`): the window starts when they are through. A copy
    /// probe may be judged lost meanwhile.
    fn settling(&mut self, (raw, z): (u64, u64), socket: &impl Fn() -> Option<Socket>) -> bool {
        let Some(target) = self.settle else {
            return false;
        };
        match socket() {
            Some(k) if k.acked < target => {
                // A copy that floods the socket while the link drains it
                // slower than the level it left: lost, before its window.
                if let Some((drain, secs)) = self.copy_probe_lost(k) {
                    self.note_link(Limit::Link, drain);
                    let next = self.decide(0, drain, 1.0, raw, Limit::Link, secs);
                    self.set_level(next, Some(k));
                }
                // Still the old level's bytes on the wire: the window
                // starts when they are through.
                self.start = (raw, z);
                self.queued = Some(k.queued);
                self.started = Instant::now();
                self.stalls = Stalls::default();
                true
            }
            _ => {
                self.settle = None;
                false
            }
        }
    }

    /// Over a path of at least [`SETUP_RTT`] the transfer starts in TCP's
    /// slow start, where the link (its congestion window) is the limit and
    /// every byte of ratio is payload: level 1 from the first batch, as the
    /// probe after the setup's window would be (kept while ahead, else
    /// level 0 is probed against it). At 1 Gbit/s through 10 ms the
    /// setup's window at level 0 sent 5 MB of text raw (ratio 25 at level
    /// 1), 40 ms of the link, and left 3 MB of it in the socket.
    fn start_level(&mut self, k: Option<Socket>) {
        let Some(k) = k.filter(|k| k.rtt >= SETUP_RTT) else {
            return;
        };
        if self.level.get() != 0 || self.max_level == 0 {
            return;
        }
        log!(
            Debug2,
            "compression: {} starting at level 1 (path round trip {:.1} ms)",
            self.engine,
            k.rtt.as_secs_f64() * 1e3
        );
        self.phase = Phase::Probe {
            from: 0,
            from_rate: f64::INFINITY,
        };
        self.set_level(1, Some(k));
    }

    /// Moves to `level`; its windows start once what the socket holds now
    /// (`k`) has reached the peer.
    fn set_level(&mut self, level: u8, k: Option<Socket>) {
        if level == self.level.get() {
            return;
        }
        self.level.set(level);
        if let Some(k) = k {
            log!(
                Debug3,
                "compression: level {level}: {} KiB in the socket to drain first ({} KiB unsent)",
                k.queued >> 10,
                k.unsent >> 10
            );
        }
        self.settle = k.map(|k| k.acked + k.queued);
        self.changed = k.map(|k| (Instant::now(), k.acked));
    }

    /// Keeps the link's capacity as measured: the most a warm window put
    /// on the wire (`wire`, bytes/s) while the socket backed up. Never
    /// more than the link carried, it may be less (a socket backs up
    /// behind a slow receiver too): it only ever says "well short of the
    /// link", never "at it".
    fn note_link(&mut self, limit: Limit, wire: f64) {
        if self.warm && limit == Limit::Link {
            self.link_wire = self.link_wire.max(wire);
        }
    }

    /// Level 0 cannot beat `rate`: a copy delivers at most what the link
    /// carries, and this window delivered well over the link's measured
    /// capacity (at 1 Gbit/s a level 1 held back by our CPU at 385 MB/s on
    /// text: the copy probe ran at 88 MB/s and left 18 MB of uncompressed
    /// data in the socket, 150 ms of the link). The margin covers a low
    /// estimate.
    fn copy_cannot_win(&self, rate: f64) -> bool {
        self.link_wire > 0.0 && rate > COPY_MARGIN * self.link_wire
    }

    /// Our CPU held a window back while it put well under the link's
    /// measured capacity on the wire.
    fn below_link(&self, limit: Limit, wire: f64) -> bool {
        limit == Limit::Cpu && wire < AT_LINK * self.link_wire
    }

    /// The next level and phase from one window's figures.
    fn decide(&mut self, now: u8, rate: f64, ratio: f64, raw: u64, limit: Limit, secs: f64) -> u8 {
        let w = Window {
            now,
            rate,
            ratio,
            raw,
            limit,
            secs,
        };
        self.since_probe += secs;
        if now > 0 && ratio < MIN_RATIO {
            return self.plain(w);
        }
        match self.phase {
            Phase::Incompressible { until } => self.after_plain(w, until),
            Phase::Probe { from, from_rate } => self.after_probe(w, from, from_rate),
            // A probe down that lost says nothing against one up: once the
            // link is the limit, that one goes at once. And a level that
            // leaves the measured link well short is our CPU's limit: a
            // step down goes at once too.
            Phase::Hold { left }
                if left > 1
                    && !(limit == Limit::Link && self.down_missed)
                    && !(now > 0 && self.below_link(limit, rate / ratio.max(1.0))) =>
            {
                self.phase = Phase::Hold { left: left - 1 };
                now
            }
            Phase::Hold { .. } => self.after_hold(w),
        }
    }

    /// A level above 0 found data that does not compress: back to 0, and
    /// the next probe waits.
    fn plain(&mut self, w: Window) -> u8 {
        let Window {
            now,
            rate,
            ratio,
            raw,
            secs,
            ..
        } = w;
        let mbs = rate / 1e6;
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
        // What the probe cost against the copy before it: the next one
        // also waits until that is at most PROBE_BUDGET of the time
        // (on loopback PROBE_MAX goes by every 15 ms, and a probe of
        // random data at level 1 ran at half the copy's rate). Through
        // a link both rates are the link's, and nothing waits.
        if let Phase::Probe { from: 0, from_rate } = self.phase {
            self.fail_wait = budget_wait(secs, rate, from_rate);
            self.since_probe = 0.0;
        }
        self.phase = Phase::Incompressible {
            until: raw + self.stored_gap,
        };
        0
    }

    /// At level 0 on plain data: probes level 1 once enough went by.
    fn after_plain(&mut self, w: Window, until: u64) -> u8 {
        let Window {
            rate, raw, limit, ..
        } = w;
        let (link_bound, window_bound) = (limit == Limit::Link, limit == Limit::Window);
        // Waits for the peer do not count here: with data that did
        // not compress, they say the peer's CPU is the limit, and a
        // probe only adds to its work.
        if raw < until
            || self.since_probe < self.fail_wait
            || !(link_bound || window_bound || self.since_probe >= self.cpu_wait)
        {
            return 0;
        }
        log!(Debug2, "compression: {} probing level 1", self.engine);
        self.phase = Phase::Probe {
            from: 0,
            from_rate: rate,
        };
        1
    }

    /// A probe's window is over: keeps the level, probes on, or goes back.
    fn after_probe(&mut self, w: Window, from: u8, from_rate: f64) -> u8 {
        let Window {
            now,
            rate,
            ratio,
            limit,
            secs,
            ..
        } = w;
        let mbs = rate / 1e6;
        let (link_bound, window_bound) = (limit == Limit::Link, limit == Limit::Window);
        let ahead = limit != Limit::Cpu;
        // Infinite: the probe straight after the setup's window,
        // which measured nothing to beat.
        let was = if from_rate.is_finite() {
            format!("{:.0} MB/s", from_rate / 1e6)
        } else {
            "the unmeasured setup".to_owned()
        };
        self.since_probe = 0.0;
        // Up and still ahead of the link: more ratio, the same link,
        // more payload, whatever this window's data did to the rate.
        // Not so ahead of the peer's window: it counts payload, so
        // only the rate says whether more ratio helped.
        // The probe after the setup has no rate to beat: kept while
        // ahead of either.
        let unmeasured = !from_rate.is_finite();
        // Behind a window the path fills, level 1 (or a step down to
        // at least 1) carries as much with less work: kept unless
        // clearly slower.
        let least_work = window_bound && now >= 1 && (now == 1 || now < from);
        let keep = (now > from && (link_bound || (ahead && unmeasured)))
            || rate > from_rate * GAIN
            || (least_work && rate >= from_rate * WINDOW_SLACK);
        if keep {
            log!(
                Debug1,
                "compression: {} level {from} -> {now}: {mbs:.0} MB/s against {was} (ratio {ratio:.2})",
                self.engine
            );
            self.hold = HOLD_MIN;
            self.cpu_wait = CPU_PROBE_WAIT;
            self.fail_wait = 0.0;
            // Still ahead of the link after a step up: the next
            // step is worth trying at once, against this window
            // (it measured this level alone, after the settle).
            if now > from && ahead && !window_bound && now < self.max_level {
                log!(
                    Debug2,
                    "compression: {} probing level {} from {now} ({mbs:.0} MB/s, ratio {ratio:.2})",
                    self.engine,
                    now + 1
                );
                self.phase = Phase::Probe {
                    from: now,
                    from_rate: rate,
                };
                return now + 1;
            }
            self.phase = Phase::Hold { left: self.hold };
            now
        } else if unmeasured && now > from {
            // Ahead of nothing, but with no rate to lose against: a
            // level 1 that runs at 1.7 GB/s on text at ratio 25 left
            // a 1 Gbit/s link idle without being slower than the
            // copy. The level below is probed against this rate.
            log!(
                Debug2,
                "compression: {} level {now} after the setup: {mbs:.0} MB/s (ratio {ratio:.2}); probing level {from} against it",
                self.engine
            );
            self.phase = Phase::Probe {
                from: now,
                from_rate: rate,
            };
            from
        } else {
            log!(
                Debug1,
                "compression: {} stays at level {from}: level {now} gave {mbs:.0} MB/s against {was} (ratio {ratio:.2})",
                self.engine
            );
            self.hold = (self.hold * 2).min(HOLD_MAX);
            self.phase = Phase::Hold { left: self.hold };
            self.down_missed = now < from;
            if now > from {
                let budget = budget_wait(secs, rate, from_rate);
                self.cpu_wait = (self.cpu_wait * 2.0).max(budget).min(CPU_PROBE_WAIT_MAX);
                // Ahead of the link or not, a costly miss waits
                // (loopback: a socket that backs up behind a busy
                // peer looks like a link to keep ahead of).
                self.fail_wait = budget;
            }
            from
        }
    }

    /// A hold is over: probes one level up or down.
    fn after_hold(&mut self, w: Window) -> u8 {
        let Window {
            now,
            rate,
            ratio,
            limit,
            ..
        } = w;
        let mbs = rate / 1e6;
        // A probe up now would add work where work is the limit: only
        // once its expected cost fits the budget.
        let cpu_probe_due = self.since_probe >= self.fail_wait
            && (limit != Limit::Cpu || self.since_probe >= self.cpu_wait);
        // Ahead of the link: try more ratio; behind it: less work.
        // Behind the peer's window, either may help (its window
        // counts payload; its CPU may be what returns it): the
        // two in turn.
        let up = (now < self.max_level).then_some(now + 1);
        let down = now.checked_sub(1);
        let try_up = match limit {
            Limit::Link => true,
            Limit::Cpu => false,
            // Such a window counts payload: ratio adds none while
            // the link has room. From above 1 down; at 1 down to
            // the copy only while the link was never seen full: at
            // 5 Gbit/s into sshd level 1 ran at 120 MB/s (sshd
            // inflating) against the copy's 173; at 1 Gbit/s the
            // copy fills the link at 114 against level 1's 125,
            // and once seen so it is not tried again (window by
            // window the data's ratio moves the rate more than a
            // level does there). At 0 nothing.
            Limit::Window if now == 0 || (now == 1 && self.link_wire > 0.0) => {
                self.phase = Phase::Hold { left: self.hold };
                return now;
            }
            Limit::Window => false,
            Limit::Peer => {
                self.peer_down = !self.peer_down;
                !self.peer_down
            }
        };
        let probe = match (try_up, up, down) {
            (true, Some(u), _) => u,
            (false, _, Some(d)) => d,
            (_, Some(u), None) => u,
            (_, None, Some(d)) => d,
            (_, None, None) => return now,
        };
        if probe == 0 && self.copy_cannot_win(rate) {
            self.phase = Phase::Hold { left: self.hold };
            return now;
        }
        if probe > now && !cpu_probe_due {
            self.phase = Phase::Hold { left: 1 };
            return now;
        }
        log!(
            Debug2,
            "compression: {} probing level {probe} from {now} ({mbs:.0} MB/s, ratio {ratio:.2})",
            self.engine
        );
        self.down_missed = false;
        self.phase = Phase::Probe {
            from: now,
            from_rate: rate,
        };
        probe
    }
}

/// One window's figures, as [`LevelControl::decide`] gets them.
#[derive(Clone, Copy)]
struct Window {
    /// The level it ran at.
    now: u8,
    /// Payload delivered, bytes/s.
    rate: f64,
    ratio: f64,
    /// The stream's raw byte count at its end.
    raw: u64,
    limit: Limit,
    secs: f64,
}

/// How long the next probe waits after one of `secs` that ran at `rate`
/// against `from_rate` before it: until its loss is at most
/// [`PROBE_BUDGET`] of the time since (none without a rate to lose against).
fn budget_wait(secs: f64, rate: f64, from_rate: f64) -> f64 {
    if !from_rate.is_finite() {
        return 0.0;
    }
    let loss = (1.0 - rate / from_rate.max(1.0)).clamp(0.0, 1.0);
    (secs * loss / PROBE_BUDGET).min(CPU_PROBE_WAIT_MAX)
}

mod early;
#[cfg(test)]
mod tests;
