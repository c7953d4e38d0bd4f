//! The Pair over a seeded link: the byte streams arrive in pieces of any
//! size and late (what TCP makes of loss and reordering), timers fire by
//! the clock jumping to `poll_timeout`, and a flipped or lost byte ends the
//! connection with a typed error, never a panic or wrong data.
//! `SLUICE_TEST_SEED` moves every seed used here.

mod common;
use common::link::{Dir, Fault, Link, LinkRng, Policy};
use common::*;
use sluice_proto::crypto::cipher;
use sluice_proto::{Error, Event, Violation};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

/// Seeds for a test: a few, moved by `SLUICE_TEST_SEED`.
fn seeds(n: u64) -> impl Iterator<Item = u64> {
    let base = test_seed();
    (0..n).map(move |i| base.wrapping_add(i))
}

fn over(p: Pair, policy: Policy, seed: u64) -> Pair {
    p.over(Link::new(policy, seed))
}

fn rekeys(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, Event::KexDone { initial: false, .. }))
        .count()
}

#[test]
fn round_trip_under_seeded_chunks_and_delays() {
    for seed in seeds(8) {
        let policy = Policy::seeded(seed);
        let mut p = over(Pair::default_algs(), policy, seed);
        let start = p.now;
        p.establish();
        let up = pattern(200_000, 1);
        p.upload(&up);
        assert!(
            p.server_data == up,
            "seed {seed} {policy:?}: upload differs"
        );
        let down = pattern(150_000, 2);
        p.download(&down);
        assert!(
            p.client_data == down,
            "seed {seed} {policy:?}: download differs"
        );
        let link = p.link.as_ref().unwrap();
        assert!(link.up.offset > 200_000 && link.down.offset > 150_000);
        assert!(!link.busy());
        assert!(p.now > start, "virtual time must move");
    }
}

/// Every cipher (and so every way of framing the length) with the stream
/// in one-byte to few-byte pieces at uneven times.
#[test]
fn every_cipher_with_tiny_late_pieces() {
    for (i, c) in cipher::DEFAULT_CIPHERS.iter().enumerate() {
        let aead = cipher::cipher_info(c).unwrap().aead;
        let mac = if aead {
            "hmac-sha2-256"
        } else {
            "hmac-sha2-256-etm@openssh.com"
        };
        let seed = test_seed().wrapping_add(i as u64);
        let policy = Policy::chunked(1 + i % 5, Duration::from_millis(3));
        let mut p = over(
            Pair::new("curve25519-sha256", "ssh-ed25519", c, mac),
            policy,
            seed,
        );
        p.establish();
        let up = pattern(20_000, 3);
        p.upload(&up);
        assert!(p.server_data == up, "{c} seed {seed}");
        let down = pattern(20_000, 4);
        p.download(&down);
        assert!(p.client_data == down, "{c} seed {seed}");
    }
}

/// A small window refilled many times while adjusts and data are late.
#[test]
fn window_refills_across_a_slow_link() {
    for seed in seeds(4) {
        let mut p = Pair::tweaked(
            "curve25519-sha256",
            "ssh-ed25519",
            "aes128-gcm@openssh.com",
            "hmac-sha2-256",
            |c, _| {
                c.window = 64 * 1024;
                c.window_max = 64 * 1024;
            },
        );
        p = over(p, Policy::chunked(1500, Duration::from_millis(30)), seed);
        p.latency = Duration::from_millis(20);
        p.establish();
        let up = pattern(1 << 20, 5);
        p.upload(&up);
        assert!(p.server_data == up, "seed {seed}");
        let adjusts = p
            .client_events
            .iter()
            .filter(|e| matches!(e, Event::ChannelWindow(_)))
            .count();
        assert!(
            adjusts >= 8,
            "seed {seed}: {adjusts} window adjusts for 16 windows"
        );
    }
}

/// A re-key started by either end in the middle of a transfer whose
/// packets arrive in pieces (the old keys' last bytes and the new keys'
/// first can share a chunk).
#[test]
fn rekey_mid_transfer_over_a_chunked_link() {
    for (seed, server_starts) in seeds(4).zip([false, true, false, true]) {
        let mut p = over(Pair::default_algs(), Policy::seeded(seed), seed);
        p.establish();
        let data = pattern(1 << 20, 4);
        let ch = p.client_channel.unwrap();
        let (mut sent, mut rekeyed) = (0, false);
        while sent < data.len() {
            sent += p
                .client
                .send_data(p.now, ch, None, &data[sent..], &mut p.c2s);
            if !rekeyed && sent > data.len() / 2 {
                if server_starts {
                    p.server.rekey()
                } else {
                    p.client.rekey()
                }
                rekeyed = true;
            }
            p.step().unwrap();
        }
        p.drive().unwrap();
        assert!(p.server_data == data, "seed {seed}");
        assert_eq!(rekeys(&p.client_events), 1, "seed {seed}");
    }
}

/// Compression both ways (delayed start at authentication) over the link.
#[test]
fn compression_over_a_chunked_link() {
    for seed in seeds(2) {
        let mut p = Pair::tweaked(
            "curve25519-sha256",
            "ssh-ed25519",
            "aes256-gcm@openssh.com",
            "hmac-sha2-256",
            |c, _| {
                c.compression_engines = sluice_proto::transport::compress::default_engines();
                c.prefer_compression = true;
            },
        );
        p = over(p, Policy::seeded(seed), seed);
        p.establish();
        let text: Vec<u8> = b"the quick brown fox jumps over the lazy dog\n"
            .iter()
            .cycle()
            .take(512 << 10)
            .copied()
            .collect();
        p.upload(&text);
        p.download(&text);
        assert!(
            p.server_data == text && p.client_data == text,
            "seed {seed}"
        );
        let (raw, z) = p.client.compression_stats().0.unwrap();
        assert!(z * 10 < raw, "seed {seed}: compressed {z} of {raw}");
    }
}

/// RekeyLimit's time: five hours of virtual time, a re-key each hour, in
/// a few hundred steps and no sleep; the link keeps working after.
#[test]
fn rekey_by_time_with_the_clock_jumping_to_poll_timeout() {
    for (seed, link) in seeds(2).zip([false, true]) {
        let mut p = Pair::tweaked(
            "curve25519-sha256",
            "ssh-ed25519",
            "chacha20-poly1305@openssh.com",
            "hmac-sha2-256",
            |c, _| c.rekey_time = Some(Duration::from_secs(3600)),
        );
        if link {
            p = over(p, Policy::seeded(seed), seed);
        }
        p.establish();
        assert!(p.next_timeout().is_some());
        let start = p.now;
        let fired = p.run_for(Duration::from_secs(5 * 3600 + 60)).unwrap();
        assert!(p.now >= start + Duration::from_secs(5 * 3600));
        let (c, s) = (rekeys(&p.client_events), rekeys(&p.server_events));
        assert!(
            (5..=6).contains(&c) && c == s,
            "link {link}: {c}/{s} re-keys, {fired} timers"
        );
        assert!(fired >= 5);
        let up = pattern(50_000, 6);
        p.upload(&up);
        assert!(p.server_data == up);
    }
}

/// Without a timer set, `run_for` only moves the clock.
#[test]
fn run_for_without_timers_just_moves_the_clock() {
    let mut p = over(Pair::default_algs(), Policy::seeded(1), 1);
    p.establish();
    assert_eq!(p.next_timeout(), None);
    let t = p.now;
    assert_eq!(p.run_for(Duration::from_secs(86_400)).unwrap(), 0);
    assert_eq!(p.now, t + Duration::from_secs(86_400));
    assert_eq!(rekeys(&p.client_events), 0);
}

/// The same seeds give the same bytes on the wire, link and all.
#[test]
fn a_seeded_link_is_reproducible() {
    let run = |seed: u64| {
        let mut p = over(Pair::insecure(seed), Policy::seeded(seed), seed);
        let start = p.now;
        p.record = true;
        p.establish();
        p.upload(&pattern(100_000, 1));
        p.download(&pattern(100_000, 2));
        (p.transcript, p.now - start)
    };
    let (a, b) = (run(5), run(5));
    assert!(a == b, "two runs with seed 5 differ");
    assert!(a.0 .0.len() > 100_000 && a.0 .1.len() > 100_000);
}

/// How a run under a faulty link ended.
#[derive(Debug)]
enum Outcome {
    /// Data moved intact: the fault hit bytes nothing checks (padding
    /// before the first NEWKEYS).
    Intact,
    /// An end failed with this error.
    Failed(Error),
    /// Both ends wait for bytes that will never come (a lost byte, or a
    /// length made longer): TCP or the runtime's timeouts end it.
    Stalled,
}

/// Establishes and moves 64 KiB up and down under `policy`; returns how it
/// ended. Panics (from the engine) are caught and reported by the caller.
fn faulty_run(seed: u64, policy: Policy) -> Outcome {
    let mut p = over(Pair::default_algs(), policy, seed);
    let up = pattern(64 << 10, 1);
    let down = pattern(64 << 10, 2);
    let run = |p: &mut Pair| -> Result<bool, Error> {
        if !p.drive_bounded(10_000)? || p.client_channel.is_none() || p.server_channel.is_none() {
            return Ok(false);
        }
        let (ch, sch) = (p.client_channel.unwrap(), p.server_channel.unwrap());
        let (mut sent_up, mut sent_down) = (0, 0);
        for _ in 0..10_000 {
            sent_up += p
                .client
                .send_data(p.now, ch, None, &up[sent_up..], &mut p.c2s);
            sent_down += p
                .server
                .send_data(p.now, sch, None, &down[sent_down..], &mut p.s2c);
            let moved = p.step()?;
            if sent_up == up.len() && sent_down == down.len() && !moved {
                break;
            }
        }
        p.drive_bounded(10_000)?;
        Ok(p.server_data.len() >= up.len() && p.client_data.len() >= down.len())
    };
    match run(&mut p) {
        Err(e) => Outcome::Failed(e),
        Ok(true) => {
            assert!(
                p.server_data == up && p.client_data == down,
                "seed {seed}: wrong data delivered"
            );
            Outcome::Intact
        }
        Ok(false) => {
            assert!(p.server_data.len() <= up.len() && p.client_data.len() <= down.len());
            assert!(
                up.starts_with(&p.server_data) && down.starts_with(&p.client_data),
                "seed {seed}: wrong data delivered"
            );
            Outcome::Stalled
        }
    }
}

/// A fault somewhere in the first `span` bytes of either direction.
fn fault(r: &mut LinkRng, span: u64, flip: bool) -> Fault {
    let dir = if r.next().is_multiple_of(2) {
        Dir::Up
    } else {
        Dir::Down
    };
    let at = r.range(0, span);
    if flip {
        Fault::Flip {
            dir,
            at,
            mask: (r.next() as u8) | 1,
        }
    } else {
        Fault::Drop {
            dir,
            at,
            len: r.range(1, 64),
        }
    }
}

fn under_faults(flip: bool, runs: u64) -> Vec<Outcome> {
    let mut out = Vec::new();
    for seed in seeds(runs) {
        let mut r = LinkRng::new(seed ^ u64::from(flip));
        // Half in the handshake (banner, KEXINIT, exchange: the first few
        // hundred bytes), half anywhere in the data.
        let span = if seed % 2 == 0 { 700 } else { 60_000 };
        let policy = Policy::seeded(seed).with_fault(fault(&mut r, span, flip));
        match catch_unwind(AssertUnwindSafe(|| faulty_run(seed, policy))) {
            Ok(o) => {
                if let Outcome::Failed(e) = &o {
                    assert!(
                        matches!(e, Error::Protocol(_) | Error::PeerDisconnected { .. }),
                        "seed {seed} {policy:?}: {e:?}"
                    );
                }
                out.push(o)
            }
            Err(_) => panic!("seed {seed} {policy:?}: panicked"),
        }
    }
    out
}

#[test]
fn a_flipped_byte_ends_with_a_typed_error() {
    let outcomes = under_faults(true, 48);
    let failed = |f: fn(&Violation) -> bool| {
        outcomes
            .iter()
            .filter(|o| matches!(o, Outcome::Failed(Error::Protocol(v)) if f(v)))
            .count()
    };
    let errors = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Failed(_)))
        .count();
    assert!(errors * 4 >= outcomes.len() * 3, "{outcomes:?}");
    // In the data: the MAC catches it; in the handshake: the KEXINIT's
    // decoding, the negotiation or the exchange hash does.
    assert!(failed(|v| *v == Violation::MacFailure) > 0, "{outcomes:?}");
    assert!(
        failed(|v| matches!(
            v,
            Violation::Malformed(..)
                | Violation::BadHostSignature
                | Violation::NoCommonAlgorithm { .. }
                | Violation::BadVersion(_)
                | Violation::VersionTooLong
        )) > 0,
        "{outcomes:?}"
    );
}

#[test]
fn lost_bytes_end_with_a_typed_error_or_a_stall() {
    let outcomes = under_faults(false, 48);
    let intact = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Intact))
        .count();
    assert!(intact * 4 <= outcomes.len(), "{outcomes:?}");
    assert!(
        outcomes.iter().any(|o| matches!(o, Outcome::Failed(_))),
        "{outcomes:?}"
    );
}
