//! The level controller's parts, each alone: what limits a window, the
//! level it starts at, the model's figures and its decisions on them.

use super::model::{Model, Sample};
use super::*;

fn ctl(engine: &str) -> (LevelControl, Instant) {
    let t0 = Instant::now();
    (LevelControl::new(Level::new(0), engine, (0, 0), t0), t0)
}

/// What a socket says: `unsent` bytes not sent yet over a path of
/// `rtt_us`; nothing else in flight, so a change of level settles at once.
fn sock(unsent: u64, rtt_us: u64) -> Option<Socket> {
    Some(Socket {
        acked: 1,
        queued: 0,
        unsent,
        rtt: Duration::from_micros(rtt_us),
    })
}

fn batch(raw: u64, z: u64) -> Batch {
    Batch {
        stats: (raw, z),
        ..Batch::default()
    }
}

/// A sample of 64 KiB whose level `l` compresses to `64 KiB / ratio(l)`
/// at `ns(l)` nanoseconds a byte.
fn sample(levels: &[u8], ratio: impl Fn(u8) -> f64, ns: impl Fn(u8) -> f64) -> Sample {
    let raw = 64 << 10;
    Sample {
        raw,
        levels: levels
            .iter()
            .map(|&l| {
                (
                    l,
                    (raw as f64 / ratio(l)) as usize,
                    raw as f64 * ns(l) * 1e-9,
                )
            })
            .collect(),
    }
}

#[test]
fn starts_at_level_1_over_a_path_of_a_millisecond_or_more() {
    for (rtt_us, level) in [(50, 0), (999, 0), (1_000, 1), (10_000, 1)] {
        let (mut c, t0) = ctl("zstd@sluice.dev");
        // The first batch, well short of a window.
        c.after_batch(t0, batch(1 << 20, 1 << 18), || sock(0, rtt_us));
        assert_eq!(c.level.get(), level, "{rtt_us} us");
    }
    // Without a TCP socket (a ProxyCommand's pipe): level 0.
    let (mut c, t0) = ctl("zstd@sluice.dev");
    c.after_batch(t0, batch(1 << 20, 1 << 18), || None);
    assert_eq!(c.level.get(), 0);
}

#[test]
fn a_window_the_path_fills_is_told_from_a_busy_peer() {
    let socket = sock;
    let sshd = |count| Stalls {
        count,
        window: 2 << 20,
    };
    // A stock sshd's 2 MiB through 10 ms at 120 MB/s: 1.2 MB in flight.
    assert_eq!(Limit::of(socket(0, 10_000), sshd(5), 120e6), Limit::Window);
    // The same window on loopback behind a busy sshd: its CPU.
    assert_eq!(Limit::of(socket(0, 50), sshd(5), 400e6), Limit::Peer);
    // Unsent bytes in the socket say the link, whatever the stalls.
    assert_eq!(
        Limit::of(socket(LINK_BOUND, 10_000), sshd(5), 120e6),
        Limit::Link
    );
    // One stall may be a burst at the window's edge.
    assert_eq!(Limit::of(socket(0, 10_000), sshd(1), 120e6), Limit::Cpu);
}

#[test]
fn relative_ratios_do_not_move_with_the_datas_luck() {
    // Samples alternate between text (levels 1 and 2 at 2.5 and 3.0) and
    // near-random data (1.1 and 1.1): each level's ratio swings, the
    // ratio of level 2 to level 1 stays between the two kinds'.
    let mut m = Model::default();
    for i in 0..40 {
        let text = i % 2 == 0;
        let r = move |l: u8| match (text, l) {
            (true, 1) => 2.5,
            (true, _) => 3.0,
            _ => 1.1,
        };
        m.observe_sample(&sample(&[1, 2], r, |_| 1.0));
        let rel = m.ratio(2).unwrap() / m.ratio(1).unwrap();
        assert!((1.0..=1.2 + 1e-9).contains(&rel), "{rel}");
    }
}

#[test]
fn the_links_capacity_rises_at_once_and_falls_slowly() {
    let mut m = Model::default();
    m.observe_window(0, 300e6, 1.0, Limit::Cpu, 0.0);
    // Never the limit: at least the best wire rate seen.
    assert_eq!(m.link(), (300e6, false));
    m.observe_window(1, 354e6, 3.0, Limit::Link, 0.0);
    assert_eq!(m.link(), (118e6, true));
    m.observe_window(1, 300e6, 3.0, Limit::Link, 0.0);
    let (link, _) = m.link();
    assert!(link > 110e6 && link < 118e6, "{link}");
}

#[test]
fn the_model_predicts_each_levels_limit() {
    // 1 Gbit/s measured; level 1 cheap, level 4 costly.
    let mut m = Model::default();
    let ratio = |l: u8| [1.0, 2.3, 2.7, 2.9, 3.3][usize::from(l)];
    let ns = |l: u8| [0.0, 1.0, 2.5, 3.2, 6.0][usize::from(l)];
    m.observe_sample(&sample(&[1, 2, 3, 4], ratio, ns));
    m.observe_window(1, 271e6, 2.3, Limit::Link, 0.0);
    let p = |l| m.predict(l).unwrap();
    // Level 0 carries the link; level 1 the link times its ratio.
    assert!((p(0).rate - 118e6).abs() < 1e6, "{:?}", p(0));
    assert!((p(1).rate - 271e6).abs() < 2e6, "{:?}", p(1));
    // Level 4's CPU is its limit, below its link share.
    assert!(p(4).cpu < p(4).link && p(4).rate == p(4).cpu, "{:?}", p(4));
    // The real jobs at level 1 cost twice the samples': every level's
    // cost doubles.
    let before = p(4).cost;
    for _ in 0..30 {
        m.observe_window(1, 271e6, 2.3, Limit::Link, 2.0e-9);
    }
    let after = m.predict(4).unwrap();
    assert!((after.cost / before - 2.0).abs() < 0.05, "{after:?}");
}

#[test]
fn behind_a_window_the_path_fills_level_1_is_the_level() {
    // sluice -C into a stock sshd at 10 ms: waits for its 2 MiB window.
    let (mut c, mut t) = ctl("zlib@openssh.com");
    let mut raw = 0;
    let stalls = Stalls {
        count: 3,
        window: 2 << 20,
    };
    c.level.set(3);
    let mut seen = Vec::new();
    // 12 MiB per 100 ms: 1.2 MB in flight over 10 ms, most of the window.
    for _ in 0..40 {
        raw += 3 * WINDOW_BYTES;
        t += Duration::from_millis(100);
        let b = Batch {
            stats: (raw, raw / 3),
            stalls,
            busy: Duration::ZERO,
        };
        c.after_batch(t, b, || sock(0, 10_000));
        if let Some(levels) = c.take_wanted() {
            // The setup's window has no limit yet.
            assert!(raw == 3 * WINDOW_BYTES || levels == [1], "{levels:?}");
            c.observe_sample(&sample(&levels, |_| 2.5, |_| 1.0));
        }
        seen.push(c.level.get());
    }
    assert_eq!(seen.last(), Some(&1), "{seen:?}");
    assert!(seen.iter().rev().take(30).all(|&l| l == 1), "{seen:?}");
}
