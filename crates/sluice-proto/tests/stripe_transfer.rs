//! Channel striping in memory (PROTOCOL.md, "Channel striping"): one
//! stream through a `StripeSender`, N simulated carriers (each a FIFO with
//! its own window, as a channel on its own connection), acknowledgements
//! on the "primary" back, a `Reassembler`, checked byte for byte by
//! SHA-256. The interleaving of every action is drawn from a seeded RNG
//! (`SLUICE_TEST_SEED` varies it).

mod common;

use aws_lc_rs::digest::{digest, SHA256};
use common::{pattern, test_seed};
use sluice_proto::stripe::codec::{Ack, Chunk};
use sluice_proto::stripe::reassemble::Reassembler;
use sluice_proto::stripe::send::{CarrierId, StripeSender};
use sluice_proto::stripe::{StripeError, CHUNK_HEADER, MAX_UNACKED_CHUNKS};
use std::collections::VecDeque;

/// splitmix64, so every run with the same seed interleaves the same way.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

struct Carrier {
    id: CarrierId,
    /// CHANNEL_DATA messages in flight, in order.
    queue: VecDeque<Vec<u8>>,
    /// Bytes in flight: the carrier's window in use.
    in_flight: usize,
    window: usize,
    stalled: bool,
    alive: bool,
}

struct Sim {
    rng: Rng,
    source: Vec<u8>,
    pushed: usize,
    sender: StripeSender,
    max_retained: usize,
    receiver: Reassembler,
    budget: usize,
    carriers: Vec<Carrier>,
    /// Acknowledgements in flight on the primary (encoded).
    acks: VecDeque<Vec<u8>>,
    out: Vec<u8>,
    eof_sent: bool,
    max_held: usize,
    steps: usize,
}

impl Sim {
    fn new(seed: u64, len: usize, carriers: usize, budget: usize, max_retained: usize) -> Sim {
        let mut rng = Rng(seed);
        let chunk = 1 + rng.below(48 * 1024);
        let mut sender = StripeSender::new(max_retained, chunk);
        let carriers = (0..carriers)
            .map(|_| Carrier {
                id: sender.add_carrier(),
                queue: VecDeque::new(),
                in_flight: 0,
                window: 64 + rng.below(256 * 1024),
                stalled: false,
                alive: true,
            })
            .collect();
        Sim {
            source: pattern(len, seed as u8),
            rng,
            pushed: 0,
            sender,
            max_retained,
            receiver: Reassembler::new(budget),
            budget,
            carriers,
            acks: VecDeque::new(),
            out: Vec::new(),
            eof_sent: false,
            max_held: 0,
            steps: 0,
        }
    }

    fn done(&self) -> bool {
        self.receiver.is_finished()
    }

    /// One action, drawn at random.
    fn step(&mut self) -> Result<(), StripeError> {
        self.steps += 1;
        match self.rng.below(6) {
            0 => {
                let n = self
                    .rng
                    .below(128 * 1024)
                    .min(self.source.len() - self.pushed);
                self.pushed += self.sender.push(&self.source[self.pushed..][..n]);
                if self.pushed == self.source.len() {
                    self.sender.finish();
                }
            }
            1 => {
                let i = self.rng.below(self.carriers.len());
                let max_packet = CHUNK_HEADER + 1 + self.rng.below(64 * 1024);
                let c = &mut self.carriers[i];
                let room = c.window.saturating_sub(c.in_flight).min(max_packet);
                if c.alive && room > 0 {
                    let mut slot = vec![0u8; room];
                    if let Some(n) = self.sender.fill(c.id, &mut slot) {
                        slot.truncate(n);
                        c.in_flight += n;
                        c.queue.push_back(slot);
                    }
                }
            }
            2 => {
                let i = self.rng.below(self.carriers.len());
                let k = 1 + self.rng.below(8);
                for _ in 0..k {
                    let c = &mut self.carriers[i];
                    if c.stalled {
                        break;
                    }
                    let Some(m) = c.queue.pop_front() else { break };
                    c.in_flight -= m.len();
                    self.receiver.on_chunk(Chunk::decode(&m)?)?;
                    self.max_held = self.max_held.max(self.receiver.held());
                }
            }
            3 => {
                let want = self.rng.below(256 * 1024);
                let r = self.receiver.readable();
                let n = want.min(r.len());
                self.out.extend_from_slice(&r[..n]);
                self.receiver.consume(n);
            }
            4 => {
                if let Some(a) = self.receiver.poll_ack() {
                    self.acks.push_back(a.encode());
                }
            }
            _ => {
                for _ in 0..1 + self.rng.below(3) {
                    let Some(a) = self.acks.pop_front() else {
                        break;
                    };
                    self.sender.on_ack(Ack::decode(&a)?)?;
                }
            }
        }
        assert!(self.sender.retained() <= self.max_retained);
        assert!(self.sender.unacked_chunks() <= MAX_UNACKED_CHUNKS);
        assert!(self.receiver.held() <= self.budget, "budget exceeded");
        // EOF goes on the primary only once everything is acknowledged.
        if self.sender.all_acked() && !self.eof_sent {
            assert_eq!(self.sender.acked(), self.source.len() as u64);
            self.eof_sent = true;
            self.receiver.on_eof()?;
        }
        Ok(())
    }

    fn run(&mut self, max_steps: usize) {
        while !self.done() {
            self.step().unwrap();
            assert!(
                self.steps < max_steps,
                "no progress: {} {:?}",
                self.state(),
                self.sender
            );
        }
    }

    fn state(&self) -> String {
        format!(
            "pushed {} acked {} received {} out {} held {} retained {} unacked {}",
            self.pushed,
            self.sender.acked(),
            self.receiver.received(),
            self.out.len(),
            self.receiver.held(),
            self.sender.retained(),
            self.sender.unacked_chunks()
        )
    }

    /// The carrier's connection dies: a random prefix of what it had in
    /// flight still arrives, the rest is lost.
    fn kill(&mut self, i: usize) {
        let arrive = self.rng.below(self.carriers[i].queue.len() + 1);
        for _ in 0..arrive {
            let m = self.carriers[i].queue.pop_front().unwrap();
            self.receiver.on_chunk(Chunk::decode(&m).unwrap()).unwrap();
        }
        let c = &mut self.carriers[i];
        c.queue.clear();
        c.in_flight = 0;
        c.alive = false;
        self.sender.carrier_lost(c.id);
    }

    fn assert_exact(&self) {
        assert_eq!(self.out.len(), self.source.len());
        assert_eq!(
            digest(&SHA256, &self.out).as_ref(),
            digest(&SHA256, &self.source).as_ref()
        );
    }
}

#[test]
fn random_interleavings_deliver_the_exact_stream() {
    for round in 0..24u64 {
        let seed = test_seed() ^ round.wrapping_mul(0x1234_5678_9abc);
        let carriers = 1 + (round as usize % 8);
        let budget = 4096 + Rng(seed).below(4 << 20);
        let mut sim = Sim::new(
            seed,
            3 << 20,
            carriers,
            budget,
            1 + Rng(!seed).below(8 << 20),
        );
        sim.run(2_000_000);
        sim.assert_exact();
        assert!(sim.max_held <= budget);
    }
}

#[test]
fn an_empty_stream_ends_at_once() {
    let mut sim = Sim::new(test_seed(), 0, 3, 1 << 20, 1 << 20);
    sim.sender.finish();
    sim.run(10_000);
    sim.assert_exact();
}

#[test]
fn a_carrier_lost_mid_stream_has_its_chunks_sent_again() {
    for round in 0..12u64 {
        let seed = test_seed() ^ (round << 40) ^ 0xdead;
        let mut sim = Sim::new(seed, 4 << 20, 2 + round as usize % 5, 2 << 20, 8 << 20);
        let at = (1 << 20) + Rng(seed).below(2 << 20);
        while sim.receiver.received() < at as u64 {
            sim.step().unwrap();
            assert!(sim.steps < 2_000_000, "{}", sim.state());
        }
        let victim = sim.rng.below(sim.carriers.len());
        sim.kill(victim);
        // A second loss while the first one's chunks are being sent again.
        if round % 3 == 0 && sim.carriers.len() > 2 {
            let other = (victim + 1) % sim.carriers.len();
            sim.kill(other);
        }
        sim.run(4_000_000);
        sim.assert_exact();
    }
}

#[test]
fn losing_every_carrier_strands_the_sender_without_eof() {
    let mut sim = Sim::new(test_seed() ^ 77, 1 << 20, 3, 1 << 20, 2 << 20);
    while sim.receiver.received() < 64 * 1024 {
        sim.step().unwrap();
    }
    for i in 0..3 {
        sim.kill(i);
    }
    for _ in 0..100_000 {
        sim.step().unwrap();
    }
    assert!(sim.sender.is_stranded());
    assert!(!sim.sender.all_acked() && !sim.eof_sent && !sim.done());
    assert!(sim.out.len() < sim.source.len());
}

#[test]
fn a_stalled_carrier_never_pushes_the_receiver_past_its_budget() {
    let budget = 256 * 1024;
    let mut sim = Sim::new(test_seed() ^ 5, 8 << 20, 4, budget, 16 << 20);
    for c in &mut sim.carriers {
        c.window = 4 << 20; // more than the budget: the budget must hold alone
    }
    sim.carriers[0].stalled = true;
    for _ in 0..300_000 {
        sim.step().unwrap();
    }
    // The stalled carrier holds a chunk below everything else: the receiver
    // fills its budget out of order and the sender stops at the limit.
    assert!(
        sim.receiver.received() < (8 << 20) as u64,
        "{}",
        sim.state()
    );
    assert!(sim.receiver.ranges_out_of_order() > 0, "{}", sim.state());
    assert!(sim.max_held <= budget, "{}", sim.max_held);
    assert!(
        sim.sender.sent() - sim.sender.acked() <= budget as u64,
        "{}",
        sim.state()
    );
    // The stalled connection is given up: its chunks go on the others.
    sim.kill(0);
    sim.run(4_000_000);
    sim.assert_exact();
    assert!(sim.max_held <= budget);
}

#[test]
fn a_stalled_carrier_that_recovers_completes_the_stream() {
    let budget = 128 * 1024;
    let mut sim = Sim::new(test_seed() ^ 6, 2 << 20, 3, budget, 4 << 20);
    sim.carriers[1].stalled = true;
    for _ in 0..100_000 {
        sim.step().unwrap();
    }
    sim.carriers[1].stalled = false;
    sim.run(4_000_000);
    sim.assert_exact();
    assert!(sim.max_held <= budget);
}

fn chunk(offset: u64, data: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    Chunk { offset, data }.encode(&mut v);
    v
}

#[test]
fn the_receiver_refuses_what_breaks_the_protocol() {
    let mut r = Reassembler::new(1000);
    assert_eq!(
        r.on_chunk(Chunk::decode(&chunk(0, b"x")).unwrap()),
        Err(StripeError::BeyondLimit),
        "nothing before the first acknowledgement"
    );
    assert_eq!(
        r.poll_ack(),
        Some(Ack {
            received: 0,
            limit: 1000
        })
    );
    assert_eq!(
        r.on_chunk(Chunk::decode(&chunk(999, b"ab")).unwrap()),
        Err(StripeError::BeyondLimit)
    );
    r.on_chunk(Chunk::decode(&chunk(10, b"hello")).unwrap())
        .unwrap();
    // The same bytes again are fine, other bytes are not.
    r.on_chunk(Chunk::decode(&chunk(10, b"hello")).unwrap())
        .unwrap();
    r.on_chunk(Chunk::decode(&chunk(12, b"llo!")).unwrap())
        .unwrap();
    assert_eq!(
        r.on_chunk(Chunk::decode(&chunk(8, b"..HELLO")).unwrap()),
        Err(StripeError::InconsistentOverlap)
    );
    assert_eq!(r.on_eof(), Err(StripeError::EofWithGap));
    r.on_chunk(Chunk::decode(&chunk(0, b"0123456789")).unwrap())
        .unwrap();
    assert_eq!(r.received(), 16);
    assert_eq!(r.readable(), b"0123456789hello!");
    // Already received: dropped whatever it holds.
    r.on_chunk(Chunk::decode(&chunk(0, b"zzz")).unwrap())
        .unwrap();
    r.consume(16);
    assert_eq!(
        r.poll_ack(),
        Some(Ack {
            received: 16,
            limit: 1016
        })
    );
    assert_eq!(r.poll_ack(), None);
    r.on_eof().unwrap();
    assert!(r.is_finished());
    // A copy sent again may trail the EOF on another connection: dropped.
    r.on_chunk(Chunk::decode(&chunk(6, b"6789")).unwrap())
        .unwrap();
    assert_eq!(
        r.on_chunk(Chunk::decode(&chunk(16, b"late")).unwrap()),
        Err(StripeError::AfterEof)
    );
}

#[test]
fn too_many_ranges_out_of_order_are_refused() {
    let mut r = Reassembler::new(1 << 20);
    let _ = r.poll_ack();
    for i in 0..MAX_UNACKED_CHUNKS as u64 {
        r.on_chunk(Chunk::decode(&chunk(2 * i + 1, b"x")).unwrap())
            .unwrap();
    }
    assert_eq!(r.ranges_out_of_order(), MAX_UNACKED_CHUNKS);
    let next = 2 * MAX_UNACKED_CHUNKS as u64 + 1;
    assert_eq!(
        r.on_chunk(Chunk::decode(&chunk(next, b"x")).unwrap()),
        Err(StripeError::TooManyRanges)
    );
}

#[test]
fn the_sender_refuses_bad_acknowledgements() {
    let mut s = StripeSender::new(1 << 20, 100);
    let c = s.add_carrier();
    let mut slot = [0u8; 1 << 12];
    assert_eq!(s.push(&[7; 1000]), 1000);
    assert_eq!(s.fill(c, &mut slot), None, "nothing before the first ack");
    s.on_ack(Ack {
        received: 0,
        limit: 250,
    })
    .unwrap();
    assert_eq!(s.fill(c, &mut slot), Some(CHUNK_HEADER + 100));
    assert_eq!(s.fill(c, &mut slot), Some(CHUNK_HEADER + 100));
    assert_eq!(
        s.fill(c, &mut slot),
        Some(CHUNK_HEADER + 50),
        "up to the limit"
    );
    assert_eq!(s.fill(c, &mut slot), None);
    let bad = [
        (300, 300), // more than was sent
        (50, 300),  // inside a chunk
        (100, 200), // limit going back
    ];
    for (received, limit) in bad {
        assert_eq!(
            s.on_ack(Ack { received, limit }),
            Err(StripeError::BadAck),
            "{received} {limit}"
        );
    }
    s.on_ack(Ack {
        received: 200,
        limit: 400,
    })
    .unwrap();
    assert_eq!(s.retained(), 800);
    assert_eq!(
        s.on_ack(Ack {
            received: 100,
            limit: 400
        }),
        Err(StripeError::BadAck),
        "received going back"
    );
    // A lost carrier's chunk goes again first, at its offset, cut to the
    // room there is; the rest follows.
    let d = s.add_carrier();
    s.carrier_lost(c);
    assert_eq!(s.fill(c, &mut slot), None, "a lost carrier takes nothing");
    let offset = |slot: &[u8]| u64::from_be_bytes(slot[..8].try_into().unwrap());
    assert_eq!(
        s.fill(d, &mut slot[..CHUNK_HEADER + 30]),
        Some(CHUNK_HEADER + 30)
    );
    assert_eq!(offset(&slot), 200);
    assert_eq!(s.fill(d, &mut slot), Some(CHUNK_HEADER + 20));
    assert_eq!(offset(&slot), 230);
    assert_eq!(s.fill(d, &mut slot), Some(CHUNK_HEADER + 100));
    assert_eq!(offset(&slot), 250, "then new data");
    assert!(!s.is_stranded());
    s.carrier_lost(d);
    assert!(s.is_stranded());
}

#[test]
fn the_end_may_go_behind_unacknowledged_chunks_only_when_all_are_on_one_carrier() {
    let mut tx = StripeSender::new(1 << 20, 1000);
    let (a, b) = (tx.add_carrier(), tx.add_carrier());
    assert_eq!(tx.push(&[7u8; 3000]), 3000);
    tx.finish();
    tx.on_ack(Ack {
        received: 0,
        limit: 1 << 20,
    })
    .unwrap();
    let mut slot = vec![0u8; CHUNK_HEADER + 1000];
    tx.fill(a, &mut slot).unwrap();
    tx.fill(b, &mut slot).unwrap();
    // Bytes not sent yet: never.
    assert!(!tx.ends_behind(Some(a)));
    tx.fill(a, &mut slot).unwrap();
    // One chunk not acknowledged on b: neither carrier alone holds the rest.
    assert!(!tx.ends_behind(Some(a)) && !tx.ends_behind(Some(b)));
    tx.on_ack(Ack {
        received: 2000,
        limit: 1 << 20,
    })
    .unwrap();
    assert!(tx.ends_behind(Some(a)) && !tx.ends_behind(Some(b)) && !tx.all_acked());
    // Lost with a, its chunk waits to be sent again: no longer on a.
    tx.carrier_lost(a);
    assert!(!tx.ends_behind(Some(a)));
}

#[test]
fn plain_data_goes_first_and_stops_at_the_first_chunk() {
    let mut tx = StripeSender::new(1 << 20, 1000);
    tx.allow_plain(2500);
    let data: Vec<u8> = (0..6000u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(tx.push(&data), 6000);
    tx.finish();
    let mut rx = Reassembler::new(1 << 20);
    let first = rx.poll_ack().unwrap();
    let mut slot = vec![0u8; 1500];
    // Before any acknowledgement, within the cap only.
    let n = tx.fill_plain(&mut slot).unwrap();
    assert_eq!(n, 1500);
    rx.on_chunk(Chunk {
        offset: 0,
        data: &slot[..n],
    })
    .unwrap();
    let n2 = tx.fill_plain(&mut slot).unwrap();
    assert_eq!(n2, 1000, "cut at the cap");
    rx.on_chunk(Chunk {
        offset: 1500,
        data: &slot[..n2],
    })
    .unwrap();
    assert!(tx.fill_plain(&mut slot).is_none());
    tx.on_ack(first).unwrap();
    let c = tx.add_carrier();
    let mut cslot = vec![0u8; CHUNK_HEADER + 1000];
    // The rest as chunks; plain data is closed from the first one on.
    while let Some(len) = tx.fill(c, &mut cslot) {
        rx.on_chunk(Chunk::decode(&cslot[..len]).unwrap()).unwrap();
        assert!(!tx.plain_open());
    }
    // Every byte sent, the unacknowledged ones as plain data or on c: the
    // end may go behind them on the primary.
    assert!(tx.ends_behind(Some(c)) && !tx.ends_behind(None));
    let ack = rx.poll_ack().unwrap();
    tx.on_ack(ack).unwrap();
    assert!(tx.all_acked());
    let mut out = Vec::new();
    while !rx.readable().is_empty() {
        let r = rx.readable().to_vec();
        rx.consume(r.len());
        out.extend(r);
    }
    assert_eq!(out, data);
}

#[test]
fn refused_striping_sends_the_rest_plain_and_keeps_nothing() {
    let mut tx = StripeSender::new(1 << 20, 1000);
    tx.allow_plain(1000);
    assert_eq!(tx.push(&[1u8; 3000]), 3000);
    let mut slot = vec![0u8; 4096];
    assert_eq!(tx.fill_plain(&mut slot), Some(1000));
    assert!(tx.fill_plain(&mut slot).is_none());
    tx.plain_only();
    assert_eq!(tx.fill_plain(&mut slot), Some(2000));
    tx.finish();
    assert!(tx.all_acked() && tx.retained() == 0);
    let c = tx.add_carrier();
    assert!(tx.fill(c, &mut slot).is_none());
}
