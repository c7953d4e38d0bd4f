//! The wire between the [`super::Pair`]'s two ends, when a test wants a
//! worse one than "everything arrives one latency later, whole".
//!
//! SSH runs over TCP, so loss and reordering never reach the engine as
//! such: TCP retransmits and puts segments back in order, and what the
//! engine sees is the byte stream arriving in pieces of any size, late and
//! unevenly. A [`Policy`] models exactly that, from a seed: each direction's
//! bytes are cut into chunks of random size, each landing after the latency
//! plus a random delay, never before the chunk ahead of it. A [`Fault`]
//! models what TCP does not hide (a middlebox rewriting a byte, a broken
//! proxy losing some): the engine must then end with a typed error or wait
//! for bytes that never come, never panic and never deliver wrong data.
//!
//! The link draws from its own seeded generator, so adding it to a pair
//! changes nothing the engines draw: a seed gives the same run each time.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// A small seeded generator (splitmix64) for the link's choices only.
#[derive(Debug, Clone)]
pub struct LinkRng(u64);

impl LinkRng {
    pub fn new(seed: u64) -> LinkRng {
        LinkRng(seed ^ 0x11_4b_11_4b)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// Which way bytes flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// Client to server.
    Up,
    /// Server to client.
    Down,
}

/// What goes wrong with the bytes, once, at a byte offset of one direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The byte at `at` has `mask` (non-zero) XORed in.
    Flip { dir: Dir, at: u64, mask: u8 },
    /// `len` bytes from `at` never arrive.
    Drop { dir: Dir, at: u64, len: u64 },
}

/// How the link treats the byte streams.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// The largest chunk a write is cut into (at least 1).
    pub max_chunk: usize,
    /// The largest extra delay of a chunk beyond the pair's latency.
    pub max_delay: Duration,
    /// A fault to apply, if any.
    pub fault: Option<Fault>,
}

impl Policy {
    /// Chunks of 1..=`max_chunk` bytes, each up to `max_delay` late.
    pub fn chunked(max_chunk: usize, max_delay: Duration) -> Policy {
        Policy {
            max_chunk: max_chunk.max(1),
            max_delay,
            fault: None,
        }
    }

    /// A policy drawn from `seed`: chunk sizes from a byte to 16 KiB, delays
    /// up to 40 ms, so different seeds cut the stream differently.
    pub fn seeded(seed: u64) -> Policy {
        let mut r = LinkRng::new(seed.rotate_left(17));
        let max_chunk = [1usize, 7, 64, 1500, 16 << 10][r.range(0, 4) as usize];
        Policy::chunked(max_chunk, Duration::from_millis(r.range(0, 40)))
    }

    pub fn with_fault(mut self, fault: Fault) -> Policy {
        self.fault = Some(fault);
        self
    }
}

/// One direction: chunks in flight, in order, with their arrival times.
#[derive(Debug, Default)]
pub struct Lane {
    in_flight: VecDeque<(Instant, Vec<u8>)>,
    /// Bytes sent so far (the stream offset of the next byte).
    pub offset: u64,
    /// Bytes lost to a `Drop` fault.
    pub dropped: u64,
    /// Whether the fault has hit this lane.
    pub faulted: bool,
}

impl Lane {
    fn send(&mut self, dir: Dir, now: Instant, bytes: Vec<u8>, policy: &Policy, rng: &mut LinkRng) {
        if bytes.is_empty() {
            return;
        }
        let bytes = self.apply_fault(dir, bytes, policy);
        // TCP keeps order: no chunk lands before the one ahead of it.
        let mut floor = self.in_flight.back().map(|c| c.0);
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            let n = (rng.range(1, policy.max_chunk as u64) as usize).min(rest.len());
            let (chunk, tail) = rest.split_at(n);
            let delay = rng.range(0, policy.max_delay.as_micros() as u64);
            let mut at = now + Duration::from_micros(delay);
            if let Some(f) = floor {
                at = at.max(f);
            }
            self.in_flight.push_back((at, chunk.to_vec()));
            floor = Some(at);
            rest = tail;
        }
    }

    fn apply_fault(&mut self, dir: Dir, mut bytes: Vec<u8>, policy: &Policy) -> Vec<u8> {
        let start = self.offset;
        self.offset += bytes.len() as u64;
        let end = self.offset;
        match policy.fault {
            Some(Fault::Flip { dir: d, at, mask }) if d == dir && (start..end).contains(&at) => {
                bytes[(at - start) as usize] ^= mask.max(1);
                self.faulted = true;
            }
            Some(Fault::Drop { dir: d, at, len }) if d == dir && start < at + len && at < end => {
                let from = at.max(start) - start;
                let to = (at + len).min(end) - start;
                bytes.drain(from as usize..to as usize);
                self.dropped += to - from;
                self.faulted = true;
            }
            _ => {}
        }
        bytes
    }

    /// Moves every chunk due by `now` into `rx`; true if any moved.
    fn arrive(&mut self, now: Instant, rx: &mut Vec<u8>) -> bool {
        let mut any = false;
        while let Some((at, _)) = self.in_flight.front() {
            if *at > now {
                break;
            }
            if let Some((_, chunk)) = self.in_flight.pop_front() {
                rx.extend_from_slice(&chunk);
                any = true;
            }
        }
        any
    }

    fn next_arrival(&self) -> Option<Instant> {
        self.in_flight.front().map(|c| c.0)
    }

    /// Bytes sent but not yet arrived.
    pub fn in_flight(&self) -> usize {
        self.in_flight.iter().map(|c| c.1.len()).sum()
    }
}

/// Both directions under one policy and one seeded generator.
#[derive(Debug)]
pub struct Link {
    pub policy: Policy,
    rng: LinkRng,
    pub up: Lane,
    pub down: Lane,
}

impl Link {
    pub fn new(policy: Policy, seed: u64) -> Link {
        Link {
            policy,
            rng: LinkRng::new(seed),
            up: Lane::default(),
            down: Lane::default(),
        }
    }

    /// Takes what each end wrote at `sent_at` (the pair adds its latency)
    /// off the senders' buffers and puts it in flight.
    pub fn carry(&mut self, sent_at: Instant, c2s: &mut Vec<u8>, s2c: &mut Vec<u8>) {
        let policy = self.policy;
        self.up.send(
            Dir::Up,
            sent_at,
            std::mem::take(c2s),
            &policy,
            &mut self.rng,
        );
        self.down.send(
            Dir::Down,
            sent_at,
            std::mem::take(s2c),
            &policy,
            &mut self.rng,
        );
    }

    /// Delivers what has landed by `*now` into the receivers' buffers. When
    /// nothing has, and something is still in flight, the clock jumps to
    /// the next arrival first (a wire that is only waiting takes no steps).
    /// True if any byte arrived.
    pub fn arrive(
        &mut self,
        now: &mut Instant,
        up_rx: &mut Vec<u8>,
        down_rx: &mut Vec<u8>,
    ) -> bool {
        let due = |t: Option<Instant>| t.is_some_and(|t| t <= *now);
        if !due(self.up.next_arrival()) && !due(self.down.next_arrival()) {
            if let Some(t) = self.next_arrival() {
                *now = (*now).max(t);
            }
        }
        let a = self.up.arrive(*now, up_rx);
        let b = self.down.arrive(*now, down_rx);
        a || b
    }

    /// When the next chunk lands, either way.
    pub fn next_arrival(&self) -> Option<Instant> {
        match (self.up.next_arrival(), self.down.next_arrival()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether any byte is still in flight.
    pub fn busy(&self) -> bool {
        self.next_arrival().is_some()
    }
}
