//! The receiving half of a striped channel (PROTOCOL.md, "Channel
//! striping"): chunks from any carrier put back in order, a byte-exact
//! stream out, acknowledgements back.
//!
//! The receiver holds at most its budget: every byte from what the consumer
//! has taken up to the limit it announced, in one ring that grows only as
//! far as chunks reach. Ranges held out of order are at most
//! [`MAX_UNACKED_CHUNKS`]. A chunk past the limit, bytes received again
//! that differ, or EOF with bytes missing is the peer's protocol error.

use super::codec::{Ack, Chunk};
use super::{StripeError, MAX_UNACKED_CHUNKS};
use std::collections::{BTreeMap, VecDeque};

/// The receiver of one direction of a striped channel.
#[derive(Debug)]
pub struct Reassembler {
    budget: u64,
    /// Bytes passed on to the consumer.
    consumed: u64,
    /// Every byte before this has arrived.
    received: u64,
    /// Bytes from `consumed` on; gaps hold zeros until filled.
    buf: VecDeque<u8>,
    /// Ranges held past `received` (start, end), merged, never touching.
    ranges: BTreeMap<u64, u64>,
    /// The last acknowledgement sent.
    last_ack: Option<Ack>,
    eof: bool,
}

impl Reassembler {
    /// A receiver holding at most `budget` bytes (at least 1).
    pub fn new(budget: usize) -> Self {
        Reassembler {
            budget: budget.max(1) as u64,
            consumed: 0,
            received: 0,
            buf: VecDeque::new(),
            ranges: BTreeMap::new(),
            last_ack: None,
            eof: false,
        }
    }

    /// The limit announced last (0 before the first acknowledgement).
    fn limit(&self) -> u64 {
        self.last_ack.map_or(0, |a| a.limit)
    }

    /// Takes one chunk from any carrier.
    pub fn on_chunk(&mut self, chunk: Chunk<'_>) -> Result<(), StripeError> {
        let end = chunk
            .offset
            .checked_add(chunk.data.len() as u64)
            .ok_or(StripeError::OffsetOverflow)?;
        if end <= self.received {
            // Sent again after its carrier closed or was lost: had it. A
            // copy may trail the EOF on another connection.
            return Ok(());
        }
        if self.eof {
            return Err(StripeError::AfterEof);
        }
        if end > self.limit() {
            return Err(StripeError::BeyondLimit);
        }
        let start = chunk.offset.max(self.received);
        let skip = usize::try_from(start - chunk.offset).map_err(|_| StripeError::BeyondLimit)?;
        let data = chunk.data.get(skip..).unwrap_or_default();
        // Within the limit, so within the budget from `consumed`: fits usize.
        let at = usize::try_from(start - self.consumed).map_err(|_| StripeError::BeyondLimit)?;
        let need = at + data.len();
        // Bytes held already must be the same bytes.
        for (&s, &e) in self.ranges.range(..end) {
            if e <= start {
                continue;
            }
            let (lo, hi) = (s.max(start), e.min(end));
            let (from, to) = ((lo - start) as usize, (hi - start) as usize);
            let held_at = at + from;
            if held_at + (to - from) > self.buf.len() {
                return Err(StripeError::InconsistentOverlap);
            }
            let same = self
                .buf
                .range(held_at..held_at + (to - from))
                .eq(data.get(from..to).unwrap_or_default().iter());
            if !same {
                return Err(StripeError::InconsistentOverlap);
            }
        }
        if self.buf.len() < need {
            self.buf.resize(need, 0);
        }
        // Two slice copies (the ring's halves), not a byte loop.
        let (front, back) = self.buf.as_mut_slices();
        let in_front = front.len().saturating_sub(at).min(data.len());
        let (d1, d2) = data.split_at(in_front);
        if let Some(dst) = front.get_mut(at..at + in_front) {
            dst.copy_from_slice(d1);
        }
        let back_at = (at + in_front).saturating_sub(front.len());
        if let Some(dst) = back.get_mut(back_at..back_at + d2.len()) {
            dst.copy_from_slice(d2);
        }
        self.insert_range(start, end);
        if self.ranges.len() > MAX_UNACKED_CHUNKS {
            return Err(StripeError::TooManyRanges);
        }
        Ok(())
    }

    /// Adds [start, end) to the ranges held, merging what it overlaps or
    /// touches, and moves `received` over what is now contiguous.
    fn insert_range(&mut self, mut start: u64, mut end: u64) {
        let touching: Vec<(u64, u64)> = self
            .ranges
            .range(..=end)
            .filter(|(_, &e)| e >= start)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in touching {
            self.ranges.remove(&s);
            start = start.min(s);
            end = end.max(e);
        }
        if start <= self.received {
            self.received = self.received.max(end);
        } else {
            self.ranges.insert(start, end);
        }
    }

    /// The next in-order bytes for the consumer (part of them when the
    /// ring wraps: take them, then ask again).
    pub fn readable(&self) -> &[u8] {
        let n = (self.received - self.consumed) as usize;
        let (a, b) = self.buf.as_slices();
        if a.is_empty() {
            b.get(..n).unwrap_or_default()
        } else {
            a.get(..n.min(a.len())).unwrap_or_default()
        }
    }

    /// The consumer took `n` bytes of [`Reassembler::readable`].
    pub fn consume(&mut self, n: usize) {
        let n = n
            .min((self.received - self.consumed) as usize)
            .min(self.buf.len());
        self.buf.drain(..n);
        self.consumed += n as u64;
    }

    /// The acknowledgement to send now, if one is due: the first one at
    /// once; then when `received` or the limit moved by a quarter of the
    /// budget, or when nothing is held out of order and `received` moved
    /// (so a stream's last bytes are acknowledged).
    #[must_use]
    pub fn poll_ack(&mut self) -> Option<Ack> {
        let now = Ack {
            received: self.received,
            limit: self.consumed + self.budget,
        };
        let due = match self.last_ack {
            None => true,
            Some(last) => {
                let quarter = (self.budget / 4).max(1);
                now.received >= last.received + quarter
                    || now.limit >= last.limit + quarter
                    || (self.ranges.is_empty() && now.received > last.received)
            }
        };
        if due && !self.eof {
            self.last_ack = Some(now);
            return Some(now);
        }
        None
    }

    /// The sender's CHANNEL_EOF: it came only after every byte was
    /// acknowledged, so nothing may be missing or held out of order.
    pub fn on_eof(&mut self) -> Result<(), StripeError> {
        if !self.ranges.is_empty() {
            return Err(StripeError::EofWithGap);
        }
        self.eof = true;
        Ok(())
    }

    /// EOF came and the consumer has every byte: pass the EOF on.
    pub fn is_finished(&self) -> bool {
        self.eof && self.consumed == self.received
    }

    /// Bytes held now (in order and out of order): never over the budget.
    pub fn held(&self) -> usize {
        self.buf.len()
    }

    /// Bytes every one of which has arrived.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Ranges held out of order.
    pub fn ranges_out_of_order(&self) -> usize {
        self.ranges.len()
    }
}
