//! The level controller driven on a synthetic clock by a simulated path
//! (a link's capacity, a round trip, the cost of the rest of the path) and
//! synthetic data whose ratio swings: the levels it chooses, how often it
//! moves, and what it delivers against each level held fixed.

use super::model::Sample;
use super::*;

const MIB: u64 = 1 << 20;

/// Kinds of data, with zstd-like ratios and costs on our 0-9 scale.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Text,
    /// Text that is slow to compress (costs six times as much).
    SlowText,
    /// Binary members of a tar: they compress a little.
    Binary,
    Random,
}

impl Kind {
    /// The stream's ratio at `level`.
    fn ratio(self, level: u8) -> f64 {
        let l = usize::from(level.min(9));
        match self {
            Kind::Text | Kind::SlowText => {
                [1.0, 2.3, 2.7, 2.9, 3.25, 3.35, 3.45, 3.55, 3.65, 3.75][l]
            }
            Kind::Binary => [1.0, 1.3, 1.38, 1.41, 1.45, 1.46, 1.48, 1.49, 1.5, 1.5][l],
            Kind::Random => {
                if level == 0 {
                    1.0
                } else {
                    0.999
                }
            }
        }
    }

    /// Seconds per byte of compression at `level` on one core.
    fn cost(self, level: u8) -> f64 {
        let ns = [0.0, 1.0, 2.5, 3.2, 4.5, 6.0, 9.0, 14.0, 22.0, 35.0][usize::from(level.min(9))];
        let k = match self {
            Kind::Text => 1.0,
            Kind::SlowText => 6.0,
            Kind::Binary => 1.5,
            Kind::Random => 0.3,
        };
        ns * k * 1e-9
    }
}

/// A path: the link's capacity (wire bytes/s; infinite on loopback), its
/// round trip, and the seconds per payload byte of the rest (read, seal,
/// write).
#[derive(Debug, Clone, Copy)]
struct Path {
    link: f64,
    rtt_us: u64,
    base: f64,
}

const GBIT: Path = Path {
    link: 118e6,
    rtt_us: 10_000,
    base: 1.0 / 1.2e9,
};
const MBIT100: Path = Path {
    link: 11.8e6,
    rtt_us: 10_000,
    base: 1.0 / 1.2e9,
};
/// A LAN faster than level 1 compresses slow text: 570 MB/s, 2 ms.
const FAST_LAN: Path = Path {
    link: 570e6,
    rtt_us: 2_000,
    base: 1.0 / 1.2e9,
};
/// A path faster than level 1's text ratio needs but slower than the copy:
/// 3.2 Gbit/s, 10 ms.
const GBIT3: Path = Path {
    link: 400e6,
    rtt_us: 10_000,
    base: 1.0 / 1.2e9,
};
const LOOPBACK: Path = Path {
    link: f64::INFINITY,
    rtt_us: 50,
    base: 1.0 / 1.2e9,
};

impl Path {
    /// Seconds to send one MiB of `kind` at `level`, and whether the link
    /// (rather than the CPU) held it back.
    fn step(self, kind: Kind, level: u8) -> (f64, bool) {
        let b = MIB as f64;
        let cpu = b * (self.base + kind.cost(level));
        let wire = b / kind.ratio(level) / self.link;
        (cpu.max(wire), wire > cpu)
    }

    /// The payload rate of the copy through this path.
    fn copy_rate(self) -> f64 {
        (1.0 / self.base).min(self.link)
    }

    /// Seconds to send `mib` MiB of `data` at `level` held fixed.
    fn fixed(self, data: &impl Fn(u64) -> Kind, mib: u64, level: u8) -> f64 {
        (0..mib).map(|i| self.step(data(i), level).0).sum()
    }
}

/// What a run gave: the level of each MiB, the level changes (seconds
/// since the start, new level), and the run's seconds.
#[derive(Debug)]
struct Run {
    levels: Vec<u8>,
    changes: Vec<(f64, u8)>,
    secs: f64,
    /// MiB during which the socket was to take little unsent (level 0 tried).
    capped: usize,
    /// That cap at the end.
    cap_at_end: Option<u32>,
}

impl Run {
    /// The most level changes within any second.
    fn most_changes_per_second(&self) -> usize {
        self.changes
            .iter()
            .map(|&(t, _)| {
                self.changes
                    .iter()
                    .filter(|&&(u, _)| u >= t && u < t + 1.0)
                    .count()
            })
            .max()
            .unwrap_or(0)
    }
}

/// A sample of `kind` at `levels`, as the sampling thread gives it: from a
/// fresh stream (a tenth less ratio than the stream), timed.
fn sample_of(kind: Kind, levels: &[u8]) -> Sample {
    let raw = 64usize << 10;
    Sample {
        raw,
        levels: levels
            .iter()
            .map(|&l| {
                let r = (kind.ratio(l) / 1.1).max(0.999);
                (l, (raw as f64 / r) as usize, raw as f64 * kind.cost(l))
            })
            .collect(),
    }
}

/// Sends `mib` MiB of `data` (its kind MiB by MiB) through `path` in
/// batches of one MiB, the controller steering the level.
fn run(path: Path, data: impl Fn(u64) -> Kind, mib: u64) -> Run {
    run_engine("zstd@sluice.dev", path, data, mib)
}

/// [`run`] with the engine named `engine`.
fn run_engine(engine: &str, path: Path, data: impl Fn(u64) -> Kind, mib: u64) -> Run {
    if std::env::var_os("SIM_LOG").is_some() {
        crate::log::set_level(crate::log::Level::Debug2);
    }
    let t0 = Instant::now();
    let mut c = LevelControl::new(Level::new(0), engine, (0, 0), t0);
    let (mut secs, mut raw, mut z) = (0.0, 0u64, 0.0);
    let mut out = Run {
        levels: Vec::new(),
        changes: Vec::new(),
        secs: 0.0,
        capped: 0,
        cap_at_end: None,
    };
    for i in 0..mib {
        let level = c.level.get();
        let kind = data(i);
        let (dt, link_bound) = path.step(kind, level);
        secs += dt;
        raw += MIB;
        z += MIB as f64 / kind.ratio(level);
        out.levels.push(level);
        let socket = Socket {
            acked: z as u64,
            queued: 0,
            unsent: if link_bound { LINK_BOUND } else { 0 },
            rtt: Duration::from_micros(path.rtt_us),
        };
        let batch = Batch {
            stats: (raw, z as u64),
            stalls: Stalls::default(),
            busy: Duration::from_secs_f64(MIB as f64 * kind.cost(level)),
        };
        c.after_batch(t0 + Duration::from_secs_f64(secs), batch, || Some(socket));
        if let Some(levels) = c.take_wanted() {
            c.observe_sample(&sample_of(data(i + 1), &levels));
        }
        if c.level.get() != level {
            out.changes.push((secs, c.level.get()));
        }
        out.capped += usize::from(c.unsent_cap().is_some());
    }
    out.secs = secs;
    out.cap_at_end = c.unsent_cap();
    out
}

fn text(_: u64) -> Kind {
    Kind::Text
}

/// Text with binary members of 24 MiB every 64 MiB and a compressed (random)
/// one of 8 MiB every 96 MiB.
fn tar(i: u64) -> Kind {
    if i % 96 >= 88 {
        Kind::Random
    } else if i % 64 >= 40 {
        Kind::Binary
    } else {
        Kind::Text
    }
}

#[test]
fn random_data_goes_to_level_0_within_a_few_mib() {
    let r = run(GBIT, |_| Kind::Random, 256);
    // Level 1 from the start (10 ms), level 0 after the setup's window and
    // one more.
    assert_eq!(r.levels.get(1), Some(&1), "{r:?}");
    let first0 = r.levels.iter().position(|&l| l == 0);
    assert!(first0.is_some_and(|i| i <= 10), "{r:?}");
    // And there it stays: the samples say the data still does not compress.
    assert!(r.levels.iter().skip(10).all(|&l| l == 0), "{r:?}");
}

#[test]
fn text_over_100_mbit_climbs_to_a_high_level() {
    let r = run(MBIT100, text, 512);
    let tail = r.levels.get(384..).unwrap_or_default();
    assert!(tail.iter().all(|&l| l >= 5), "{r:?}");
    // Far ahead of the copy, near the best fixed level.
    let best = (0..=9)
        .map(|l| MBIT100.fixed(&text, 512, l))
        .fold(f64::MAX, f64::min);
    assert!(r.secs < best * 1.2, "{} s against {best} s", r.secs);
}

#[test]
fn loopback_stays_at_level_0() {
    let r = run(LOOPBACK, text, 1024);
    assert!(r.levels.iter().all(|&l| l == 0), "{r:?}");
    assert_eq!(r.capped, 0);
}

#[test]
fn alternating_data_does_not_flap() {
    let alternating = |i: u64| {
        if i.is_multiple_of(2) {
            Kind::Text
        } else {
            Kind::Random
        }
    };
    for path in [GBIT, MBIT100] {
        let r = run(path, alternating, 512);
        let most = r.most_changes_per_second();
        assert!(most <= 3, "{most} changes in a second: {:?}", r.changes);
        // Compression pays on half text: it is on most of the time.
        let on = r.levels.iter().filter(|&&l| l > 0).count();
        assert!(on * 10 > r.levels.len() * 8, "{r:?}");
    }
}

#[test]
fn a_tar_with_binary_members_keeps_near_the_best_fixed_level() {
    for path in [GBIT, MBIT100] {
        let r = run(path, tar, 768);
        let fixed: Vec<f64> = (0..=9).map(|l| path.fixed(&tar, 768, l)).collect();
        let best = fixed.iter().copied().fold(f64::MAX, f64::min);
        assert!(
            r.secs < best * 1.15 && r.secs < fixed[0] * 0.7,
            "{:.2} s against the best fixed {best:.2} s (level 0: {:.2} s): {:?}",
            r.secs,
            fixed[0],
            r.changes
        );
    }
}

#[test]
fn a_slow_level_is_never_kept_below_the_link_rate() {
    // Text that compresses fast, then text that compresses six times as
    // slowly: the level it climbed to would hold a 1 Gbit/s link to less
    // than the copy delivers.
    let data = |i: u64| if i < 128 { Kind::Text } else { Kind::SlowText };
    let r = run(GBIT, data, 512);
    let copy = GBIT.copy_rate();
    let slow: Vec<u64> = (0..512u64)
        .filter(|&i| {
            let (dt, _) = GBIT.step(data(i), r.levels[i as usize]);
            MIB as f64 / dt < copy * 0.99
        })
        .collect();
    // Only the window in which the data changed, and the next.
    assert!(
        slow.len() <= 32,
        "{} MiB slower than the copy: {slow:?} {r:?}",
        slow.len()
    );
    assert!(
        r.levels[..128].iter().rev().take(32).all(|&l| l >= 2),
        "{r:?}"
    );
}

#[test]
fn zlib_stays_at_level_6_or_under() {
    // Toward stock sshd: deflate above 6 barely adds ratio.
    let r = run_engine("zlib@openssh.com", MBIT100, text, 256);
    assert!(r.levels.iter().all(|&l| l <= 6), "{r:?}");
    assert!(r.levels.iter().skip(128).all(|&l| l >= 5), "{r:?}");
}

#[test]
fn a_link_faster_than_level_1_is_found_by_trying_the_copy() {
    // Level 1 (from the start, 2 ms) is CPU-bound on slow text far below
    // the link; the link was never the limit, so only level 0 can show it,
    // tried once the stream has run a second (140 MiB at level 1).
    let r = run(FAST_LAN, |_| Kind::SlowText, 512);
    let tail = r.levels.get(160..).unwrap_or_default();
    assert!(tail.iter().all(|&l| l == 0), "{r:?}");
    assert!(r.changes.len() <= 2, "{:?}", r.changes);
    // The socket was held short only for the try.
    assert!((1..=32).contains(&r.capped), "{r:?}");
    assert_eq!(r.cap_at_end, None);
    let one = FAST_LAN.fixed(&|_| Kind::SlowText, 512, 1);
    assert!(r.secs < one * 0.6, "{} s against level 1's {one} s", r.secs);
}

#[test]
fn the_copy_is_tried_once_and_left_when_the_link_is_slower() {
    // Level 1 is CPU-bound on text (546 MB/s against the link's 400 x 2.3)
    // and the copy (400) slower than it: one try of level 0 (after a
    // second: about 520 MiB), then back.
    let r = run(GBIT3, text, 2048);
    let zeros = r.changes.iter().filter(|&&(_, l)| l == 0).count();
    assert!(zeros == 1, "{:?}", r.changes);
    assert!(
        (1..=32).contains(&r.capped) && r.cap_at_end.is_none(),
        "{r:?}"
    );
    let tail = r.levels.get(1024..).unwrap_or_default();
    assert!(tail.iter().all(|&l| l >= 1), "{r:?}");
    let best = (0..=9)
        .map(|l| GBIT3.fixed(&text, 2048, l))
        .fold(f64::MAX, f64::min);
    assert!(r.secs < best * 1.1, "{} s against {best} s", r.secs);
}
