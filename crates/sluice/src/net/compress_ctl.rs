//! Steering the outgoing compression level from what the pump measures.
//!
//! One stock zlib stream at level 6 on one thread is what makes `ssh -C`
//! slower than no compression on fast links. sluice's zlib runs in
//! parallel jobs whose level may change from one job to the next
//! (sluice-proto `transport/pzlib.rs`), so the sender can pick it per
//! window of data, from three measurements:
//!
//! - the ratio of the last window: data that does not compress (below
//!   [`MIN_RATIO`]) goes at level 0, stored blocks that cost a copy, and
//!   is probed again at level 1 every [`PROBE_EVERY`] bytes;
//! - whether the socket was the limit: the pump left output unsent
//!   (EAGAIN) on most writes, so compression keeps ahead of the link and
//!   more effort buys ratio for free;
//! - whether cores are left: this process's CPU time over the window
//!   against the cores the machine has free.
//!
//! The link is the limit, or CPU is left: one level up. Neither: the
//! link waits on compression, one level down (never below 1 while data
//! compresses). Each decision is logged at debug1 with its figures.

use crate::log;
use sluice_proto::transport::compress::Level;
use std::sync::Arc;
use std::time::Instant;

/// Raw bytes per decision window.
const WINDOW: u64 = 4 << 20;
/// Below this ratio the data is taken as incompressible.
const MIN_RATIO: f64 = 1.05;
/// Raw bytes sent stored before compression is tried again.
const PROBE_EVERY: u64 = 8 << 20;
/// The highest level used: above 6 deflate's ratio barely moves.
const MAX_LEVEL: u8 = 6;
/// CPU left over (in cores) that justifies more effort.
const SPARE_CORES: f64 = 0.6;

/// The controller of one connection's outgoing stream.
pub struct LevelControl {
    level: Arc<Level>,
    /// (raw, compressed) at the window's start.
    start: (u64, u64),
    started: Instant,
    cpu_start: f64,
    /// Writes that left output unsent, and writes that drained it.
    blocked: u32,
    drained: u32,
    /// Raw bytes at level 0 since the last probe.
    stored: u64,
}

impl LevelControl {
    /// Steers `level`; `stats` are the outgoing (raw, compressed) counts now.
    pub fn new(level: Arc<Level>, stats: (u64, u64)) -> Self {
        LevelControl {
            level,
            start: stats,
            started: Instant::now(),
            cpu_start: process_cpu(),
            blocked: 0,
            drained: 0,
            stored: 0,
        }
    }

    /// A socket write with output pending: `left` when some stayed unsent.
    pub fn on_write(&mut self, left: bool) {
        if left {
            self.blocked += 1;
        } else {
            self.drained += 1;
        }
    }

    /// After a batch: decides once a window of data went by. `cores` are
    /// the cores this process could use (None: all the machine's).
    pub fn after_batch(&mut self, (raw, z): (u64, u64), cores: Option<f64>) {
        let (raw0, z0) = self.start;
        let in_window = raw.saturating_sub(raw0);
        if in_window < WINDOW {
            return;
        }
        let ratio = in_window as f64 / z.saturating_sub(z0).max(1) as f64;
        let secs = self.started.elapsed().as_secs_f64().max(1e-6);
        let used = (process_cpu() - self.cpu_start) / secs;
        let cores = cores.unwrap_or_else(available_cores);
        let writes = self.blocked + self.drained;
        let blocked = if writes == 0 {
            0.0
        } else {
            f64::from(self.blocked) / f64::from(writes)
        };
        let now = self.level.get();
        let next = if now == 0 {
            self.stored += in_window;
            if self.stored >= PROBE_EVERY {
                self.stored = 0;
                1
            } else {
                0
            }
        } else if ratio < MIN_RATIO {
            0
        } else if blocked > 0.5 || cores - used >= SPARE_CORES {
            (now + 1).min(MAX_LEVEL)
        } else if blocked < 0.2 {
            now.saturating_sub(1).max(1)
        } else {
            now
        };
        if next != now {
            self.level.set(next);
            log!(
                Debug1,
                "compression: level {now} -> {next} (ratio {ratio:.2}, {:.0} MB/s in, socket full on {:.0}% of writes, CPU {used:.1} of {cores:.1} cores)",
                in_window as f64 / secs / 1e6,
                blocked * 100.0
            );
        }
        self.start = (raw, z);
        self.started = Instant::now();
        self.cpu_start = process_cpu();
        self.blocked = 0;
        self.drained = 0;
    }
}

/// This process's CPU time in seconds (all threads).
fn process_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid clock id and pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

fn available_cores() -> f64 {
    std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64)
}
