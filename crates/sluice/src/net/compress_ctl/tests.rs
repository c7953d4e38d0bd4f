//! The level controller's decisions, window by window, without a socket.

use super::*;

fn ctl(level: u8, engine: &str) -> LevelControl {
    LevelControl::new(Level::new(level), engine, (0, 0))
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

/// A warm controller probing `level` from `from` against `from_rate`
/// (infinite: the probe after the setup's window).
fn probing(from: u8, level: u8, from_rate: f64) -> LevelControl {
    let mut c = ctl(0, "zstd@sluice.dev");
    c.warm = true;
    c.level.set(level);
    c.phase = Phase::Probe { from, from_rate };
    c
}

/// Windows one after another at `ratio` behind `limit`: each call takes
/// a window's rate and gives the level decided.
fn steps(ratio: f64, limit: Limit) -> impl FnMut(&mut LevelControl, f64) -> u8 {
    let mut raw = 0;
    move |c, rate| {
        raw += WINDOW_BYTES;
        let next = c.decide(c.level.get(), rate, ratio, raw, limit, 0.1);
        c.level.set(next);
        next
    }
}

/// Runs windows whose rate at each level comes from `rate_at`.
fn run(c: &mut LevelControl, windows: usize, rate_at: impl Fn(u8) -> (f64, f64, bool)) -> Vec<u8> {
    let mut raw = c.start.0;
    let mut seen = Vec::new();
    for _ in 0..windows {
        let now = c.level.get();
        let (rate, ratio, link) = rate_at(now);
        raw += WINDOW_BYTES;
        let limit = if link { Limit::Link } else { Limit::Cpu };
        let next = c.decide(now, rate, ratio, raw, limit, 0.1);
        c.level.set(next);
        seen.push(next);
    }
    c.start.0 = raw;
    seen
}

/// Runs windows whose (rate, ratio, limit) come from `window(level, i)`,
/// the link's capacity noted as `after_batch` notes it.
fn run_limited(
    c: &mut LevelControl,
    windows: usize,
    window: impl Fn(u8, usize) -> (f64, f64, Limit),
) -> Vec<u8> {
    (0..windows)
        .map(|i| {
            c.start.0 += WINDOW_BYTES;
            let now = c.level.get();
            let (rate, ratio, limit) = window(now, i);
            c.note_link(limit, rate / ratio);
            let next = c.decide(now, rate, ratio, c.start.0, limit, 0.1);
            c.level.set(next);
            next
        })
        .collect()
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
fn a_costly_miss_ahead_of_the_link_waits_its_budget() {
    // Loopback behind a busy peer: the socket backs up at level 0
    // (1000 MB/s), level 1 is 40% slower. One miss, then a wait of
    // 0.1 s * 0.4 / 3% = 1.3 s (13 windows) before the next probe.
    let mut c = ctl(0, "zstd@sluice.dev");
    let seen = run(&mut c, 40, |l| {
        (if l == 0 { 1000e6 } else { 600e6 }, 3.0, l == 0)
    });
    let probes = seen.iter().filter(|&&l| l > 0).count();
    assert!((2..=4).contains(&probes), "{probes} probes: {seen:?}");
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

#[test]
fn climbs_a_level_per_window_while_ahead_of_the_link() {
    let mut c = ctl(0, "zstd@sluice.dev");
    // Link-bound up to level 4, CPU-bound above, where level 5 is slower.
    let seen = run(&mut c, 8, |l| {
        (
            if l <= 4 {
                110e6 * f64::from(l + 1)
            } else {
                300e6
            },
            3.0,
            l <= 4,
        )
    });
    assert_eq!(&seen[..6], &[1, 2, 3, 4, 5, 4], "{seen:?}");
    assert!(seen[6..].iter().all(|&l| l == 4), "{seen:?}");
}

#[test]
fn a_backed_up_socket_in_the_setups_window_probes_at_once() {
    let mut c = ctl(0, "zstd@sluice.dev");
    let mut raw = 0;
    let mut window = |c: &mut LevelControl, unsent: u64, rtt_us: u64| {
        raw += WINDOW_FAST_BYTES;
        c.after_batch((raw, raw), Stalls::default(), || sock(unsent, rtt_us));
        c.level.get()
    };
    assert_eq!(window(&mut c, LINK_BOUND, 10_000), 1);
    // Level 1 on data that does not compress: back to 0.
    assert_eq!(window(&mut c, 0, 10_000), 0);
    // Through 10 ms level 1 is where it starts (TCP's slow start): a setup
    // whose socket did not back up keeps it for the first warm window,
    // which, held back by our CPU alone, probes level 0 against it.
    let mut c = ctl(0, "zstd@sluice.dev");
    assert_eq!(window(&mut c, 0, 10_000), 1);
    assert_eq!(window(&mut c, 0, 10_000), 0);
    // On loopback the backlog is the peer starting its command: no probe.
    let mut c = ctl(0, "zstd@sluice.dev");
    assert_eq!(window(&mut c, LINK_BOUND, 50), 0);
}

#[test]
fn starts_at_level_1_over_a_path_of_a_millisecond_or_more() {
    for (rtt_us, level) in [(50, 0), (999, 0), (1_000, 1), (10_000, 1)] {
        let mut c = ctl(0, "zstd@sluice.dev");
        // The first batch, well short of a window.
        c.after_batch((1 << 20, 1 << 18), Stalls::default(), || sock(0, rtt_us));
        assert_eq!(c.level.get(), level, "{rtt_us} us");
    }
    // Without a TCP socket (a ProxyCommand's pipe): level 0.
    let mut c = ctl(0, "zstd@sluice.dev");
    c.after_batch((1 << 20, 1 << 18), Stalls::default(), || None);
    assert_eq!(c.level.get(), 0);
}

#[test]
fn waits_for_a_busy_peers_window_count_as_ahead() {
    // A window that saw no unsent bytes in the socket but data waiting
    // for the peer's window, which the path is far from filling (the
    // peer's work returns it): probe up, as when the socket backs up.
    let mut c = ctl(0, "zlib@openssh.com");
    let socket = || sock(0, 0);
    let mut raw = 0;
    let mut window = |c: &mut LevelControl, count: u32| {
        raw += WINDOW_FAST_BYTES;
        let stalls = Stalls {
            count,
            window: 2 << 20,
        };
        c.after_batch((raw, raw), stalls, socket);
        c.level.get()
    };
    // The warm-up window, then one without stalls: CPU-bound, so a
    // probe up waits.
    assert_eq!(window(&mut c, 0), 0);
    assert_eq!(window(&mut c, 0), 0);
    assert_eq!(window(&mut c, 0), 0);
    // Stalls: the next window probes level 1.
    assert_eq!(window(&mut c, STALLS_BOUND), 1);
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
fn a_window_the_path_fills_in_the_setups_window_probes_at_once() {
    let mut raw = 0;
    let mut window = |c: &mut LevelControl, rtt_us: u64| {
        raw += WINDOW_BYTES;
        let stalls = Stalls {
            count: 3,
            window: 2 << 20,
        };
        c.after_batch((raw, raw), stalls, || sock(0, rtt_us));
        c.level.get()
    };
    // Through 10 ms: level 1 at once.
    let mut c = ctl(0, "zlib@openssh.com");
    assert_eq!(window(&mut c, 10_000), 1);
    // On loopback the stalls say the peer's CPU: no probe yet.
    let mut c = ctl(0, "zlib@openssh.com");
    assert_eq!(window(&mut c, 50), 0);
}

#[test]
fn the_links_capacity_comes_from_warm_link_bound_windows_only() {
    let mut c = ctl(1, "zstd@sluice.dev");
    // The setup's own rate includes the setup.
    c.note_link(Limit::Link, 50e6);
    assert_eq!(c.link_wire, 0.0);
    c.warm = true;
    c.note_link(Limit::Cpu, 300e6);
    c.note_link(Limit::Window, 300e6);
    assert_eq!(c.link_wire, 0.0);
    c.note_link(Limit::Link, 118e6);
    c.note_link(Limit::Link, 90e6);
    assert_eq!(c.link_wire, 118e6);
    // A CPU-bound window near it is not below it; half of it is.
    assert!(!c.below_link(Limit::Cpu, 117e6));
    assert!(c.below_link(Limit::Cpu, 60e6));
    assert!(!c.below_link(Limit::Link, 60e6));
}

#[test]
fn a_lost_probe_down_does_not_hold_back_one_up() {
    // Between sluice peers at 1 Gbit/s: a window that looked CPU-bound
    // probes level 0, which loses; the next windows are link-bound.
    let mut c = ctl(1, "zstd@sluice.dev");
    c.level.set(1);
    c.warm = true;
    c.phase = Phase::Hold { left: 1 };
    let mut raw = 0;
    let mut step = |c: &mut LevelControl, rate: f64, limit: Limit| {
        raw += WINDOW_BYTES;
        let next = c.decide(c.level.get(), rate, 3.0, raw, limit, 0.1);
        c.level.set(next);
        next
    };
    assert_eq!(step(&mut c, 420e6, Limit::Cpu), 0);
    assert_eq!(step(&mut c, 130e6, Limit::Link), 1);
    // Held four windows for the loss, but link-bound: up at once.
    assert_eq!(step(&mut c, 300e6, Limit::Link), 2);
}

#[test]
fn a_level_that_leaves_the_link_short_steps_down_at_once() {
    // Climbed to 6 while ahead of a 1 Gbit/s link; then data that
    // compresses slowly makes it CPU-bound at 94 MB/s (20 on the wire).
    let mut c = ctl(6, "zstd@sluice.dev");
    c.level.set(6);
    c.warm = true;
    c.link_wire = 120e6;
    c.phase = Phase::Hold { left: 4 };
    let next = c.decide(6, 94e6, 4.8, WINDOW_BYTES, Limit::Cpu, 0.1);
    assert_eq!(next, 5);
    // CPU-bound with the link full: the hold stands.
    let mut c = ctl(2, "zstd@sluice.dev");
    c.level.set(2);
    c.warm = true;
    c.link_wire = 120e6;
    c.phase = Phase::Hold { left: 4 };
    assert_eq!(c.decide(2, 400e6, 3.5, WINDOW_BYTES, Limit::Cpu, 0.1), 2);
}

#[test]
fn behind_a_window_the_path_fills_level_1_stays_where_the_copy_fills_the_link() {
    // sluice -C into a stock sshd at 10 ms, 1 Gbit/s: level 1 behind
    // sshd's 2 MiB window at 125 MB/s, the copy link-bound at 114.
    let mut c = ctl(0, "zlib@openssh.com");
    c.warm = true;
    c.level.set(1);
    let mut window = steps(2.5, Limit::Window);
    // The link never seen full: the copy is tried, fills the link, and
    // loses.
    assert_eq!(window(&mut c, 125e6), 0);
    c.note_link(Limit::Link, 114e6);
    let next = c.decide(0, 114e6, 1.0, 1 << 30, Limit::Link, 0.1);
    assert_eq!(next, 1);
    c.level.set(next);
    // From then on the data's own ratio moves the rate more than a level
    // would: level 1 stays, no probes.
    let seen = run_limited(&mut c, 40, |level, i| match level {
        0 => (114e6, 1.0, Limit::Link),
        _ if i % 3 == 0 => (105e6, 2.5, Limit::Window),
        _ => (150e6, 2.5, Limit::Window),
    });
    assert!(seen.iter().filter(|&&l| l == 1).count() >= 36, "{seen:?}");
    // From above (the link was the limit before), steps down to 1.
    let mut c = ctl(3, "zlib@openssh.com");
    c.level.set(3);
    c.warm = true;
    c.link_wire = 100e6;
    let seen: Vec<u8> = (0..12).map(|_| window(&mut c, 140e6)).collect();
    assert_eq!(seen.last(), Some(&1), "{seen:?}");
}

#[test]
fn behind_a_window_with_room_on_the_link_the_copy_wins() {
    // 5 Gbit/s into sshd: level 1 at 120 MB/s (sshd inflating), the copy
    // at 173 behind the same window; at level 0 nothing is probed again
    // (ratio adds no payload behind a window that counts payload).
    let mut c = ctl(0, "zlib@openssh.com");
    c.warm = true;
    c.level.set(1);
    let seen = run_limited(&mut c, 40, |level, _| match level {
        0 => (173e6, 1.0, Limit::Window),
        _ => (120e6, 2.5, Limit::Window),
    });
    let first0 = seen.iter().position(|&l| l == 0).unwrap();
    assert!(first0 <= 3, "{seen:?}");
    assert!(seen[first0..].iter().all(|&l| l == 0), "{seen:?}");
}

#[test]
fn ahead_of_the_peers_window_a_probe_up_must_be_faster() {
    // The peer's window counts payload: more ratio behind it helps
    // only if the rate says so.
    let mut c = ctl(0, "zlib@openssh.com");
    c.warm = true;
    let mut step = steps(3.0, Limit::Peer);
    assert_eq!(step(&mut c, 100e6), 1);
    // Level 1 faster: kept, level 2 probed at once; slower: back to 1.
    assert_eq!(step(&mut c, 140e6), 2);
    assert_eq!(step(&mut c, 120e6), 1);
    let seen: Vec<u8> = (0..20).map(|_| step(&mut c, 140e6)).collect();
    assert!(seen.iter().all(|&l| l <= 2), "{seen:?}");
    // Behind the peer, a probe down comes in turn with one up.
    assert!(seen.contains(&0) && seen.contains(&2), "{seen:?}");
}

#[test]
fn a_probe_down_that_loses_ends_early_too() {
    let mut c = ctl(1, "zstd@sluice.dev");
    c.warm = true;
    c.level.set(0);
    c.phase = Phase::Probe {
        from: 1,
        from_rate: 384e6,
    };
    let none = || None;
    let ms = Duration::from_millis;
    // Level 0 at 140 MB/s against 384 at level 1: lost after 4 MiB.
    assert!(c.losing_probe(WINDOW_BYTES, ms(30), 1.0, &none));
    // Not before EARLY_MIN, and not when it keeps up.
    assert!(!c.losing_probe(WINDOW_BYTES, ms(5), 1.0, &none));
    assert!(!c.losing_probe(WINDOW_BYTES, ms(12), 1.0, &none));
    // Still at the level it came from: no probe.
    c.level.set(1);
    assert!(!c.losing_probe(WINDOW_BYTES, ms(30), 1.0, &none));
}

#[test]
fn a_probe_up_still_ahead_of_the_link_ends_early() {
    let mut c = ctl(1, "zstd@sluice.dev");
    c.warm = true;
    c.level.set(2);
    c.phase = Phase::Probe {
        from: 1,
        from_rate: 300e6,
    };
    let backed = |unsent| move || sock(unsent, 10_000);
    let ms = Duration::from_millis;
    assert!(c.ahead_probe(ms(20), &backed(LINK_BOUND)));
    // The socket drained: the window goes on and the rate decides.
    assert!(!c.ahead_probe(ms(20), &backed(0)));
    assert!(!c.ahead_probe(ms(5), &backed(LINK_BOUND)));
    // A probe down never wins early.
    c.level.set(0);
    assert!(!c.ahead_probe(ms(20), &backed(LINK_BOUND)));
}

#[test]
fn probes_of_random_data_that_cost_wait_their_budget() {
    // Loopback: the copy moves 2 GB/s, level 1 on random data 1 GB/s.
    let mut c = ctl(0, "zstd@sluice.dev");
    c.warm = true;
    let mut raw = 0;
    let mut probes = 0;
    // 1 GiB in windows of 4 MiB.
    for _ in 0..256 {
        let now = c.level.get();
        let rate = if now == 0 { 2e9 } else { 1e9 };
        raw += WINDOW_BYTES;
        let next = c.decide(now, rate, 1.0, raw, Limit::Link, WINDOW_BYTES as f64 / rate);
        probes += usize::from(next > 0);
        c.level.set(next);
    }
    // Without the budget a probe went every PROBE_MAX (32 of them); with
    // it each waits until its loss is 3% of the time since.
    assert!((1..=12).contains(&probes), "{probes} probes");
}

#[test]
fn a_probe_of_plain_data_ends_after_one_job() {
    let mut c = probing(0, 1, 2e9);
    // One MiB at ratio 1: the probe has found random data, back to 0.
    c.after_batch((FUTILE_BYTES, FUTILE_BYTES), Stalls::default(), || {
        sock(0, 50)
    });
    assert_eq!(c.level.get(), 0);
    // Text: the window goes on.
    let mut c = probing(0, 1, 2e9);
    c.after_batch((FUTILE_BYTES, FUTILE_BYTES / 3), Stalls::default(), || {
        sock(0, 50)
    });
    assert_eq!(c.level.get(), 1);
    assert!(matches!(c.phase, Phase::Probe { .. }));
}

#[test]
fn a_level_well_short_of_the_link_ends_its_window_early() {
    let mut c = ctl(0, "zstd@sluice.dev");
    c.warm = true;
    c.level.set(1);
    c.link_wire = 1156e6;
    let socket = |unsent| move || sock(unsent, 50);
    let ms = Duration::from_millis;
    // 4 MiB at ratio 4.2 in 12 ms: 83 MB/s on the wire against 1156.
    assert!(c.short_of_link(WINDOW_BYTES, ms(12), 4.2, &socket(0)));
    // Backed up, or waiting for the peer: the link or the peer is the limit.
    assert!(!c.short_of_link(WINDOW_BYTES, ms(12), 4.2, &socket(LINK_BOUND)));
    c.stalls.count = 1;
    assert!(!c.short_of_link(WINDOW_BYTES, ms(12), 4.2, &socket(0)));
    c.stalls.count = 0;
    // Near the link, or at level 0, or with no capacity measured: no.
    assert!(!c.short_of_link(4 * WINDOW_BYTES, ms(12), 1.0, &socket(0)));
    c.level.set(0);
    assert!(!c.short_of_link(WINDOW_BYTES, ms(12), 4.2, &socket(0)));
    c.level.set(1);
    c.link_wire = 0.0;
    assert!(!c.short_of_link(WINDOW_BYTES, ms(12), 4.2, &socket(0)));
}

#[test]
fn a_setup_probe_ahead_of_nothing_is_measured_against_the_copy() {
    // 1 Gbit/s: level 1 on text at ratio 25 runs 1.7 GB/s, CPU-bound (the
    // link idles), and the copy then moves 120 MB/s: level 1 it is.
    let mut c = probing(0, 1, f64::INFINITY);
    let mut step = steps(25.0, Limit::Cpu);
    assert_eq!(step(&mut c, 1.7e9), 0);
    let mut step = steps(1.0, Limit::Link);
    assert_eq!(step(&mut c, 120e6), 1);
    // Loopback-like: the copy beats level 1, and stays.
    let mut c = probing(0, 1, f64::INFINITY);
    let mut step = steps(4.0, Limit::Cpu);
    assert_eq!(step(&mut c, 1.1e9), 0);
    let mut step = steps(1.0, Limit::Cpu);
    assert_eq!(step(&mut c, 2.5e9), 0);
    assert!(matches!(c.phase, Phase::Hold { .. }));
}

/// A probe of level 0 from level 1 (400 MB/s) that changed `ms` ago with
/// the socket's acknowledged count at 0 then, still settling.
fn copy_probe(ms: u64) -> LevelControl {
    let mut c = probing(1, 0, 400e6);
    c.begun = true;
    c.changed = Some((Instant::now() - Duration::from_millis(ms), 0));
    c.settle = Some(u64::MAX);
    c
}

fn backed_up(acked: u64) -> Socket {
    Socket {
        acked,
        queued: 16 << 20,
        unsent: 12 << 20,
        rtt: Duration::from_millis(10),
    }
}

#[test]
fn a_copy_probe_that_floods_a_slow_link_ends_before_its_window() {
    // 2 MB drained in 20 ms: 100 MB/s at ratio 1 against 400.
    let c = copy_probe(20);
    let (drain, secs) = c.copy_probe_lost(backed_up(2_000_000)).unwrap();
    assert!(
        (80e6..=100e6).contains(&drain) && secs >= 0.02,
        "{drain} {secs}"
    );
    // Not before a round trip; not while the link keeps up (7 MB: 350
    // MB/s); not while the copy does not back up in the socket.
    assert!(copy_probe(5).copy_probe_lost(backed_up(500_000)).is_none());
    assert!(c.copy_probe_lost(backed_up(7_000_000)).is_none());
    let quiet = Socket {
        unsent: 0,
        ..backed_up(2_000_000)
    };
    assert!(c.copy_probe_lost(quiet).is_none());
    // A probe up is never a copy probe.
    let up = copy_probe(20);
    up.level.set(2);
    assert!(up.copy_probe_lost(backed_up(2_000_000)).is_none());

    // Through after_batch: back to level 1 at once, the link's drain kept
    // as its capacity, the next probe further off.
    let mut c = copy_probe(20);
    c.after_batch((8 << 20, 2 << 20), Stalls::default(), || {
        Some(backed_up(2_000_000))
    });
    assert_eq!(c.level.get(), 1);
    assert!(matches!(c.phase, Phase::Hold { left } if left > HOLD_MIN));
    assert!(c.link_wire > 50e6, "{}", c.link_wire);
}

#[test]
fn no_copy_probe_from_a_level_well_above_the_link() {
    // Level 1 held back by our CPU at 400 MB/s on a link measured at
    // 117 MB/s: a copy cannot do better, and is not tried.
    let mut c = ctl(1, "zstd@sluice.dev");
    c.warm = true;
    c.level.set(1);
    c.link_wire = 117e6;
    let mut step = steps(3.4, Limit::Cpu);
    let seen: Vec<u8> = (0..40).map(|_| step(&mut c, 400e6)).collect();
    assert!(seen.iter().all(|&l| l == 1), "{seen:?}");
    // Unmeasured link: the copy is probed.
    let mut c = ctl(1, "zstd@sluice.dev");
    c.warm = true;
    c.level.set(1);
    let seen: Vec<u8> = (0..40).map(|_| step(&mut c, 400e6)).collect();
    assert!(seen.contains(&0), "{seen:?}");
}
