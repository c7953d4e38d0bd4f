//! Pure scheduling logic for one direction of the delay line: no syscalls,
//! so it can be unit-tested without root.
//!
//! Model: a single bottleneck link of `rate` bits/s fed by a drop-tail queue,
//! followed by a fixed propagation delay. A packet arriving at `now` starts
//! serializing when the link is free, finishes `len * 8 / rate` later, and is
//! delivered `delay` after that. The queue limit is expressed in time at the
//! link rate, which is the same as a byte limit of `queue * rate / 8`.

use std::collections::VecDeque;

const NS_PER_SEC: u128 = 1_000_000_000;

/// Bottleneck pacer plus propagation delay.
#[derive(Debug, Clone)]
pub(crate) struct Link {
    rate_bps: u64,
    delay_ns: u64,
    queue_ns: u64,
    /// When the link finishes serializing the last accepted packet.
    busy_until: u64,
}

impl Link {
    /// `rate_bps` must be > 0 (checked by argument parsing).
    pub(crate) fn new(rate_bps: u64, delay_ns: u64, queue_ns: u64) -> Self {
        Link {
            rate_bps: rate_bps.max(1),
            delay_ns,
            queue_ns,
            busy_until: 0,
        }
    }

    /// The propagation delay.
    pub(crate) fn delay_ns(&self) -> u64 {
        self.delay_ns
    }

    /// Serialization time of `len` bytes, rounded up so that the achieved
    /// rate can never exceed the configured one.
    pub(crate) fn ser_ns(&self, len: usize) -> u64 {
        let bits = len as u128 * 8 * NS_PER_SEC;
        bits.div_ceil(self.rate_bps as u128) as u64
    }

    /// Offer a packet of `len` wire bytes at time `now`. Returns the time at
    /// which it must be delivered, or `None` if the queue is full (drop-tail).
    pub(crate) fn admit(&mut self, now: u64, len: usize) -> Option<u64> {
        let start = self.busy_until.max(now);
        // Time still needed for packets already queued ahead of this one.
        let backlog = start - now;
        let ser = self.ser_ns(len);
        // An empty queue always accepts one packet, however small the limit.
        if backlog > 0 && backlog + ser > self.queue_ns {
            return None;
        }
        self.busy_until = start + ser;
        Some(self.busy_until + self.delay_ns)
    }
}

/// A packet held in the ring, waiting for its due time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pkt {
    pub(crate) off: usize,
    pub(crate) len: usize,
    pub(crate) due: u64,
}

/// FIFO of packets stored back to back in one preallocated byte ring, so the
/// hot path never allocates and small packets (ACKs) do not waste whole
/// MTU-sized slots. Due times are monotonic (FIFO link), so FIFO order is
/// also delivery order.
pub(crate) struct Line {
    pub(crate) buf: Vec<u8>,
    pub(crate) queue: VecDeque<Pkt>,
}

impl Line {
    pub(crate) fn new(capacity: usize) -> Self {
        Line {
            buf: vec![0; capacity],
            queue: VecDeque::with_capacity(4096),
        }
    }

    /// Like `new`, but `None` instead of aborting when memory is short (the
    /// size comes from the command line). Zeroed allocation, so untouched
    /// pages of a large ring cost nothing until used.
    pub(crate) fn try_new(capacity: usize) -> Option<Self> {
        let layout = std::alloc::Layout::array::<u8>(capacity).ok()?;
        if capacity == 0 {
            return Some(Line::new(0));
        }
        // SAFETY: non-zero size; the pointer is checked, then owned by a Vec
        // with the same (global) allocator, layout, length and capacity.
        let buf = unsafe {
            let ptr = std::alloc::alloc_zeroed(layout);
            if ptr.is_null() {
                return None;
            }
            Vec::from_raw_parts(ptr, capacity, capacity)
        };
        Some(Line {
            buf,
            queue: VecDeque::with_capacity(4096),
        })
    }

    /// Find `want` contiguous free bytes after the newest packet, wrapping
    /// to the start of the ring when the tail is too short. `None` = full.
    pub(crate) fn reserve(&self, want: usize) -> Option<usize> {
        let cap = self.buf.len();
        let (Some(front), Some(back)) = (self.queue.front(), self.queue.back()) else {
            return (want <= cap).then_some(0);
        };
        let head = front.off;
        let tail = back.off + back.len;
        if back.off >= head {
            // Not wrapped: free space is [tail, cap) and [0, head).
            if cap - tail >= want {
                Some(tail)
            } else if head >= want {
                Some(0)
            } else {
                None
            }
        } else {
            // Wrapped: free space is [tail, head).
            (head - tail >= want).then_some(tail)
        }
    }

    pub(crate) fn push(&mut self, pkt: Pkt) {
        self.queue.push_back(pkt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn pacing_spaces_packets_at_rate() {
        // 1 Gbit/s: 1500 bytes take 12 us. 10 ms delay.
        let mut l = Link::new(1_000_000_000, 10 * MS, 50 * MS);
        assert_eq!(l.ser_ns(1500), 12_000);
        let t0 = 1_000 * MS;
        // Burst of three at the same instant: back to back on the wire.
        assert_eq!(l.admit(t0, 1500), Some(t0 + 12_000 + 10 * MS));
        assert_eq!(l.admit(t0, 1500), Some(t0 + 24_000 + 10 * MS));
        assert_eq!(l.admit(t0, 1500), Some(t0 + 36_000 + 10 * MS));
        // After the link goes idle, a new packet only pays its own time.
        let t1 = t0 + MS;
        assert_eq!(l.admit(t1, 100), Some(t1 + 800 + 10 * MS));
    }

    #[test]
    fn rate_rounds_up_never_faster() {
        let l = Link::new(3, 0, 0);
        // 1 byte = 8 bits at 3 bit/s = 2.666.. s, rounded up.
        assert_eq!(l.ser_ns(1), 2_666_666_667);
    }

    #[test]
    fn drop_tail_limits_queue() {
        // 100 Mbit/s: 1250 bytes = 100 us. Queue of 1 ms = 10 such packets.
        let mut l = Link::new(100_000_000, 0, MS);
        let now = 5 * MS;
        let accepted = (0..20).filter(|_| l.admit(now, 1250).is_some()).count();
        assert_eq!(accepted, 10);
        // Once the queue drains by one packet time, one more fits.
        assert!(l.admit(now + 100_000, 1250).is_some());
        assert!(l.admit(now + 100_000, 1250).is_none());
    }

    #[test]
    fn empty_queue_accepts_oversized_packet() {
        let mut l = Link::new(1_000_000, 0, 1);
        assert!(l.admit(0, 1500).is_some());
        assert!(l.admit(0, 1500).is_none());
    }

    #[test]
    fn ring_wraps_and_fills() {
        let mut r = Line::try_new(100).expect("alloc");
        assert!(r.buf.iter().all(|&b| b == 0));
        assert_eq!(r.reserve(40), Some(0));
        r.push(Pkt {
            off: 0,
            len: 40,
            due: 1,
        });
        assert_eq!(r.reserve(40), Some(40));
        r.push(Pkt {
            off: 40,
            len: 40,
            due: 2,
        });
        // Only 20 bytes left at the tail and none before the head.
        assert_eq!(r.reserve(40), None);
        r.queue.pop_front();
        // Head moved to 40: wrap to the start.
        assert_eq!(r.reserve(40), Some(0));
        r.push(Pkt {
            off: 0,
            len: 30,
            due: 3,
        });
        // Wrapped: only [30, 40) free.
        assert_eq!(r.reserve(10), Some(30));
        assert_eq!(r.reserve(11), None);
    }
}
