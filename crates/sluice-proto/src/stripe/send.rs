//! The sending half of a striped channel (PROTOCOL.md, "Channel
//! striping"): the channel's byte stream in one direction, cut into chunks
//! handed to whichever carrier has room, each kept until the receiver
//! acknowledges it and sent again, at the same offset, when its carrier is
//! lost (cut shorter if the carrier at hand has less room: chunks are only
//! ever cut, never merged or moved, so every chunk sent is inside one cut
//! before it or apart from it, which keeps the receiver's ranges out of
//! order no more than the chunks not acknowledged).
//!
//! Memory is bounded twice: the bytes kept (sent and not acknowledged, or
//! not yet sent) never exceed the caller's `max_retained`, and the chunks
//! not acknowledged never exceed [`MAX_UNACKED_CHUNKS`]. What goes out is
//! bounded by the receiver's limit; nothing goes out before its first
//! acknowledgement. The bytes are copied once in (they must outlive the
//! carrier that takes them) and once out, into the caller's packet slot.

use super::codec::Ack;
use super::{StripeError, CHUNK_HEADER, MAX_UNACKED_CHUNKS};
use std::collections::{BTreeMap, VecDeque};

/// A carrier, by the sender's own number (in order of [`StripeSender::add_carrier`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CarrierId(pub u32);

/// Where plain data is booked: the striped channel itself, on the primary
/// (never a carrier, so never lost or sent again: the primary's loss ends
/// the session).
const PLAIN: CarrierId = CarrierId(u32::MAX);

/// A chunk sent or to be sent again: its length, and the carrier it is on
/// (None: waiting to be sent again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Piece {
    len: usize,
    carrier: Option<CarrierId>,
}

/// The sender of one direction of a striped channel.
#[derive(Debug)]
pub struct StripeSender {
    /// Bytes from `acked` on: sent and not acknowledged, then not sent yet.
    retained: VecDeque<u8>,
    /// The receiver's `received`: everything before is gone from here.
    acked: u64,
    /// The receiver's latest limit; None before its first acknowledgement.
    limit: Option<u64>,
    /// The next offset never sent.
    next_new: u64,
    /// Chunks sent and not acknowledged, by offset; they never overlap.
    pieces: BTreeMap<u64, Piece>,
    /// Carriers that are up.
    live: Vec<CarrierId>,
    carriers_added: u32,
    max_retained: usize,
    chunk: usize,
    finished: bool,
    /// Bytes before this offset may go as plain data (CHANNEL_DATA on the
    /// striped channel) until the first chunk goes; 0: none.
    plain_cap: u64,
    /// The receiver refused to stripe: everything goes as plain data and
    /// nothing waits for an acknowledgement.
    plain_only: bool,
}

impl StripeSender {
    /// A sender keeping at most `max_retained` bytes and cutting chunks of
    /// at most `chunk` bytes of data (both at least 1).
    pub fn new(max_retained: usize, chunk: usize) -> Self {
        StripeSender {
            retained: VecDeque::new(),
            acked: 0,
            limit: None,
            next_new: 0,
            pieces: BTreeMap::new(),
            live: Vec::new(),
            carriers_added: 0,
            max_retained: max_retained.max(1),
            chunk: chunk.max(1),
            finished: false,
            plain_cap: 0,
            plain_only: false,
        }
    }

    /// The stream's first `cap` bytes may go as plain data, ahead of the
    /// receiver's first acknowledgement and of any carrier (PROTOCOL.md,
    /// "Striping a channel"), until the first chunk goes.
    pub fn allow_plain(&mut self, cap: u64) {
        if self.next_new == 0 {
            self.plain_cap = cap;
        }
    }

    /// Whether plain data may still go.
    pub fn plain_open(&self) -> bool {
        self.plain_only || self.next_new < self.plain_cap
    }

    /// The receiver refused to stripe and took the plain data as ordinary
    /// channel data: what went is delivered, and the rest goes the same way.
    pub fn plain_only(&mut self) {
        let sent = usize::try_from(self.next_new - self.acked).unwrap_or(usize::MAX);
        self.retained.drain(..sent.min(self.retained.len()));
        self.acked = self.next_new;
        self.pieces.clear();
        self.plain_only = true;
    }

    /// Fills `slot` with the stream's next bytes as plain data; returns how
    /// many (None: none may go now). Within the plain cap and the receiver's
    /// limit once known; kept until acknowledged, as chunks are (refused:
    /// dropped at once).
    pub fn fill_plain(&mut self, slot: &mut [u8]) -> Option<usize> {
        if !self.plain_open() {
            return None;
        }
        let held_end = self.acked.saturating_add(self.retained.len() as u64);
        let mut n = held_end
            .saturating_sub(self.next_new)
            .min(slot.len() as u64);
        if !self.plain_only {
            if self.pieces.len() >= MAX_UNACKED_CHUNKS {
                return None;
            }
            let limit = self.limit.unwrap_or(u64::MAX).min(self.plain_cap);
            n = n.min(limit.saturating_sub(self.next_new));
        }
        let n = usize::try_from(n).ok().filter(|&n| n > 0)?;
        let off = self.next_new;
        let from = usize::try_from(off - self.acked).unwrap_or(usize::MAX);
        self.copy_out(from, slot.get_mut(..n)?);
        self.next_new += n as u64;
        if self.plain_only {
            self.retained.drain(..n.min(self.retained.len()));
            self.acked = self.next_new;
        } else {
            self.pieces.insert(
                off,
                Piece {
                    len: n,
                    carrier: Some(PLAIN),
                },
            );
        }
        Some(n)
    }

    /// A new carrier is open (on any connection of the session).
    pub fn add_carrier(&mut self) -> CarrierId {
        let id = CarrierId(self.carriers_added);
        self.carriers_added += 1;
        self.live.push(id);
        id
    }

    /// A carrier closed or its connection ended: every chunk on it that is
    /// not acknowledged goes back in line, to be sent again first.
    pub fn carrier_lost(&mut self, carrier: CarrierId) {
        self.live.retain(|c| *c != carrier);
        for p in self.pieces.values_mut() {
            if p.carrier == Some(carrier) {
                p.carrier = None;
            }
        }
    }

    /// Whether chunks sent on `carrier` wait for their acknowledgement (a
    /// carrier given back closes once none do, so nothing goes twice).
    pub fn carries(&self, carrier: CarrierId) -> bool {
        self.pieces.values().any(|p| p.carrier == Some(carrier))
    }

    /// Bytes [`StripeSender::push`] would take now.
    pub fn room(&self) -> usize {
        if self.finished {
            return 0;
        }
        self.max_retained.saturating_sub(self.retained.len())
    }

    /// Takes as much of `data` as there is room for; returns how much.
    pub fn push(&mut self, data: &[u8]) -> usize {
        let n = self.room().min(data.len());
        self.retained.extend(data.get(..n).unwrap_or_default());
        n
    }

    /// The stream has ended: nothing more will be pushed.
    pub fn finish(&mut self) {
        self.finished = true;
    }

    /// Whether [`StripeSender::finish`] was called: the stream has ended.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Takes the receiver's acknowledgement. It must not go backwards, not
    /// acknowledge bytes never sent, and fall between two chunks.
    pub fn on_ack(&mut self, ack: Ack) -> Result<(), StripeError> {
        if ack.received < self.acked
            || ack.received > self.next_new
            || ack.limit < ack.received
            || self.limit.is_some_and(|l| ack.limit < l)
        {
            return Err(StripeError::BadAck);
        }
        while let Some(entry) = self.pieces.first_entry() {
            let end = entry.key().saturating_add(entry.get().len as u64);
            if end > ack.received {
                if *entry.key() < ack.received {
                    return Err(StripeError::BadAck);
                }
                break;
            }
            entry.remove();
        }
        let drop = usize::try_from(ack.received - self.acked).unwrap_or(usize::MAX);
        self.retained.drain(..drop.min(self.retained.len()));
        self.acked = ack.received;
        self.limit = Some(ack.limit);
        Ok(())
    }

    /// Fills `slot` (what `carrier` can take now: its window and maximum
    /// packet) with one chunk, header and data, and returns its length;
    /// None when there is nothing `carrier` may send. Chunks to be sent
    /// again go first, lowest offset first.
    pub fn fill(&mut self, carrier: CarrierId, slot: &mut [u8]) -> Option<usize> {
        if self.plain_only || !self.live.contains(&carrier) || slot.len() <= CHUNK_HEADER {
            return None;
        }
        let room = slot.len() - CHUNK_HEADER;
        let (offset, len) = match self.again(room) {
            Some(x) => x,
            None => {
                let limit = self.limit?;
                if self.pieces.len() >= MAX_UNACKED_CHUNKS {
                    return None;
                }
                let held_end = self.acked.saturating_add(self.retained.len() as u64);
                let available = held_end.saturating_sub(self.next_new);
                let allowed = limit.saturating_sub(self.next_new);
                let n = available
                    .min(allowed)
                    .min(room as u64)
                    .min(self.chunk as u64);
                if n == 0 {
                    return None;
                }
                let off = self.next_new;
                self.next_new += n;
                // No plain data after a chunk: the receiver counts plain
                // bytes from 0 on, in order.
                self.plain_cap = 0;
                (off, n as usize)
            }
        };
        self.pieces.insert(
            offset,
            Piece {
                len,
                carrier: Some(carrier),
            },
        );
        let (head, body) = slot.split_at_mut(CHUNK_HEADER);
        head.copy_from_slice(&offset.to_be_bytes());
        let from = usize::try_from(offset - self.acked).unwrap_or(usize::MAX);
        self.copy_out(from, body.get_mut(..len)?);
        Some(CHUNK_HEADER + len)
    }

    /// The chunk to send again in `room` bytes of data: the lowest one
    /// waiting, cut to its first `room` bytes when it is longer (the rest
    /// waits as a chunk of its own), or, at the cap on chunks, the lowest
    /// one that fits whole.
    fn again(&mut self, room: usize) -> Option<(u64, usize)> {
        let (&off, p) = self.pieces.iter().find(|(_, p)| p.carrier.is_none())?;
        let len = p.len;
        if len <= room {
            return Some((off, len));
        }
        if self.pieces.len() < MAX_UNACKED_CHUNKS {
            self.pieces.insert(
                off + room as u64,
                Piece {
                    len: len - room,
                    carrier: None,
                },
            );
            return Some((off, room));
        }
        self.pieces
            .iter()
            .find(|(_, p)| p.carrier.is_none() && p.len <= room)
            .map(|(&off, p)| (off, p.len))
    }

    fn copy_out(&self, from: usize, dst: &mut [u8]) {
        let (a, b) = self.retained.as_slices();
        let mut at = 0;
        for (i, part) in [a, b].into_iter().enumerate() {
            let start = if i == 0 {
                from.min(a.len())
            } else {
                from.saturating_sub(a.len())
            };
            let Some(src) = part.get(start..) else {
                continue;
            };
            let n = src.len().min(dst.len() - at);
            if let (Some(d), Some(s)) = (dst.get_mut(at..at + n), src.get(..n)) {
                d.copy_from_slice(s);
            }
            at += n;
        }
    }

    /// Something could go out now, given a carrier with room.
    pub fn has_pending(&self) -> bool {
        if self.pieces.values().any(|p| p.carrier.is_none()) {
            return true;
        }
        let held_end = self.acked + self.retained.len() as u64;
        self.limit
            .is_some_and(|l| held_end > self.next_new && l > self.next_new)
            && self.pieces.len() < MAX_UNACKED_CHUNKS
    }

    /// The stream ended and every byte is acknowledged: CHANNEL_EOF may go
    /// out on the primary.
    pub fn all_acked(&self) -> bool {
        self.finished && self.retained.is_empty() && self.pieces.is_empty()
    }

    /// The stream ended, every byte of it went out, and every chunk not
    /// acknowledged is on `carrier` (the primary's) or went as plain data:
    /// an EOF sent behind them on the same
    /// connection reaches the receiver after all of them (PROTOCOL.md,
    /// "Order of the end"), so it need not wait for their acknowledgement.
    pub fn ends_behind(&self, carrier: Option<CarrierId>) -> bool {
        self.finished
            && self.next_new == self.acked + self.retained.len() as u64
            && self
                .pieces
                .values()
                .all(|p| p.carrier == Some(PLAIN) || (p.carrier.is_some() && p.carrier == carrier))
    }

    /// No carrier is left and bytes are still to be delivered: the channel
    /// cannot complete (the caller fails it loudly, without EOF).
    pub fn is_stranded(&self) -> bool {
        self.live.is_empty() && !(self.retained.is_empty() && self.pieces.is_empty())
    }

    /// Bytes acknowledged so far.
    pub fn acked(&self) -> u64 {
        self.acked
    }

    /// Bytes kept (not acknowledged).
    pub fn retained(&self) -> usize {
        self.retained.len()
    }

    /// The next offset never sent: bytes sent and not acknowledged are
    /// `sent() - acked()`, never more than the receiver's budget.
    pub fn sent(&self) -> u64 {
        self.next_new
    }

    /// Chunks sent and not acknowledged.
    pub fn unacked_chunks(&self) -> usize {
        self.pieces.len()
    }
}
