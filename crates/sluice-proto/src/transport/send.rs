//! The sending half of the binary packet protocol (RFC 4253 section 6):
//! framing, padding, compression and sealing in place in the caller's buffer.
//!
//! A packet is built where it will be sent from: [`SendState::begin`]
//! reserves the 5-byte header in `out`, the caller appends the payload
//! directly behind it (or reads file data into it), and [`SendState::finish`]
//! pads and seals it there. Nothing is allocated per packet once `out` has
//! grown to its working size.
//!
//! With deferred sealing on, `finish` frames and pads but leaves the seal to
//! [`SendState::seal_pending`], which lets the runtime seal a batch of packets
//! on several threads ([`super::batch`]).
//!
//! Compression sits between the payload and the framing: a sequential
//! engine compresses the payload in `finish` (into a scratch buffer, then
//! back into the packet's place); a batch engine's payloads are queued and
//! framed at [`SendState::compress_pending`] ([`super::compress_batch`]).

use crate::crypto::cipher;
use crate::crypto::{PacketPos, Rng, Sealer};
use crate::transport::batch::{self, CryptoJob, PendingSeal};
use crate::transport::compress_batch::{CompressJob, STORED_PREFIX};
use crate::transport::compress_state::{OutCompression, Staged};
use std::sync::Arc;

/// Bytes before the payload: uint32 packet_length, byte padding_length.
pub(crate) const HEADER: usize = 5;

/// State of the outgoing direction.
pub(crate) struct SendState {
    sealer: Arc<dyn Sealer>,
    /// Sequence number of the next packet.
    pub(crate) seq: u32,
    /// Packets sealed under the current keys.
    index: u64,
    /// Bytes encrypted under the current keys (the CTR counter offset).
    offset: u64,
    /// Bytes sent under the current keys, for `RekeyLimit`.
    pub(crate) bytes: u64,
    /// The compression engine and its stream, when one runs.
    pub(crate) compression: OutCompression,
    /// Leave sealing to `seal_pending` (the runtime seals batches in parallel).
    pub(crate) defer: bool,
    /// Framed packets not sealed yet, in buffer order.
    pending: Vec<PendingSeal>,
    /// Random bytes for padding, drawn from the RNG 4 KiB at a time: one
    /// DRBG call per few hundred packets instead of one per packet.
    pad_pool: Vec<u8>,
    pad_used: usize,
}

impl SendState {
    /// The state before the first NEWKEYS.
    pub(crate) fn new() -> Self {
        SendState {
            sealer: Arc::from(cipher::initial_sealer()),
            seq: 0,
            index: 0,
            offset: 0,
            bytes: 0,
            compression: OutCompression::default(),
            defer: false,
            pending: Vec::new(),
            pad_pool: Vec::new(),
            pad_used: 0,
        }
    }

    /// Packets under the current keys (RFC 4344 3.1's re-key count).
    pub(crate) fn packets(&self) -> u64 {
        self.index
    }

    /// Installs new keys after sending NEWKEYS; strict KEX resets the sequence number.
    /// Packets framed earlier keep the keys they were framed under. The
    /// compression stream of the new epoch starts here too.
    pub(crate) fn set_keys(&mut self, sealer: Box<dyn Sealer>, strict: bool) {
        self.sealer = Arc::from(sealer);
        if strict {
            self.seq = 0;
        }
        self.index = 0;
        self.offset = 0;
        self.bytes = 0;
        self.compression.new_epoch();
    }

    /// Where the next packet stands under the current keys, and the bytes
    /// sent under them (exported at a handover, `crate::handover`).
    pub(crate) fn position(&self) -> (PacketPos, u64) {
        let pos = PacketPos {
            seq: self.seq,
            index: self.index,
            offset: self.offset,
        };
        (pos, self.bytes)
    }

    /// Installs keys already in force at `pos` (imported at a handover).
    pub(crate) fn resume(&mut self, sealer: Box<dyn Sealer>, pos: PacketPos, bytes: u64) {
        self.sealer = Arc::from(sealer);
        self.seq = pos.seq;
        self.index = pos.index;
        self.offset = pos.offset;
        self.bytes = bytes;
    }

    /// Starts a packet at the end of `out`; returns where it starts. The
    /// payload is appended to `out` by the caller.
    pub(crate) fn begin(out: &mut Vec<u8>) -> usize {
        let start = out.len();
        out.extend_from_slice(&[0u8; HEADER]);
        start
    }

    /// Completes the packet begun at `start`: compresses the payload if
    /// compression is on, pads, writes the header, seals, appends the tag.
    /// A batch engine's payload is queued instead and leaves `out` as it
    /// was before `begin`.
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>, start: usize, rng: &mut dyn Rng) {
        self.finish_reserved(out, start, 0, rng);
    }

    /// Room a data slot leaves between header and payload: a stored
    /// packet's prefix goes there (see [`SendState::finish_reserved`]).
    pub(crate) fn reserve(&self) -> usize {
        match self.compression.stored_max() {
            Some(_) => STORED_PREFIX,
            None => 0,
        }
    }

    /// The largest payload of a data packet the compression takes in its
    /// stored form, if it has one.
    pub(crate) fn stored_max(&self) -> Option<usize> {
        self.compression.stored_max()
    }

    /// [`SendState::finish`] for a packet whose payload starts `reserve`
    /// bytes after the header (0 or [`STORED_PREFIX`]): the engine's stored
    /// prefix fills the room, else it is closed up.
    pub(crate) fn finish_reserved(
        &mut self,
        out: &mut Vec<u8>,
        start: usize,
        reserve: usize,
        rng: &mut dyn Rng,
    ) {
        let payload_at = start + HEADER + reserve;
        let staged = self.compression.stage(
            out.get(payload_at..).unwrap_or_default(),
            reserve == STORED_PREFIX,
        );
        match staged {
            Staged::Plain => {
                if reserve > 0 {
                    out.drain(start + HEADER..payload_at);
                }
            }
            Staged::Stored(prefix) => {
                if let Some(room) = out.get_mut(start + HEADER..payload_at) {
                    room.copy_from_slice(&prefix);
                }
            }
            Staged::Compressed => {
                out.truncate(start + HEADER);
                out.extend_from_slice(self.compression.scratch());
            }
            Staged::Queued => {
                out.truncate(start);
                if self.compression.flush_due() {
                    self.compress_pending(out, rng, &mut |_| {});
                }
                return;
            }
        }
        self.frame(out, start, rng);
    }

    /// Compresses the queued payloads of a batch engine, offering the jobs
    /// to `run` first, and frames them into `out` in order.
    pub(crate) fn compress_pending(
        &mut self,
        out: &mut Vec<u8>,
        rng: &mut dyn Rng,
        run: &mut dyn FnMut(&mut [CompressJob<'_>]),
    ) {
        if !self.compression.has_queued() {
            return;
        }
        let mut compression = std::mem::take(&mut self.compression);
        compression.flush(run, &mut |compressed| {
            let start = Self::begin(out);
            out.extend_from_slice(compressed);
            self.frame(out, start, rng);
        });
        self.compression = compression;
    }

    /// Pads, writes the header and seals (or defers the seal of) the packet
    /// whose final payload follows `start + HEADER`.
    fn frame(&mut self, out: &mut Vec<u8>, start: usize, rng: &mut dyn Rng) {
        let payload_at = start + HEADER;
        let payload_len = out.len() - payload_at;
        let bs = self.sealer.block_size();
        let unpadded = 1 + payload_len + if self.sealer.length_in_blocks() { 4 } else { 0 };
        let mut pad = bs - unpadded % bs;
        if pad < 4 {
            pad += bs;
        }
        let packet_len = 1 + payload_len + pad;
        let tag_len = self.sealer.tag_len();
        let pad_at = out.len();
        out.resize(pad_at + pad + tag_len, 0);
        let Some(packet) = out.get_mut(start..) else {
            return;
        };
        let (packet, tag) = packet.split_at_mut(4 + packet_len);
        if let Some(p) = packet.get_mut(pad_at - start..) {
            self.fill_padding(p, rng);
        }
        if let Some(h) = packet.get_mut(..HEADER) {
            let l = (packet_len as u32).to_be_bytes();
            h.copy_from_slice(&[l[0], l[1], l[2], l[3], pad as u8]);
        }
        let pos = PacketPos {
            seq: self.seq,
            index: self.index,
            offset: self.offset,
        };
        if self.defer {
            self.pending.push(PendingSeal {
                sealer: Arc::clone(&self.sealer),
                pos,
                start,
                sealed_len: packet.len(),
                tag_len,
            });
        } else {
            self.sealer.seal(pos, packet, tag);
        }
        self.seq = self.seq.wrapping_add(1);
        self.index += 1;
        let encrypted = if self.sealer.length_in_blocks() {
            4 + packet_len
        } else {
            packet_len
        };
        self.offset += encrypted as u64;
        self.bytes += (4 + packet_len + tag_len) as u64;
    }

    /// Fills `p` (at most 255 bytes) with random bytes from the pool,
    /// each pool byte used once.
    fn fill_padding(&mut self, p: &mut [u8], rng: &mut dyn Rng) {
        const POOL: usize = 4096;
        if self.pad_pool.len() != POOL || self.pad_used + p.len() > POOL {
            self.pad_pool.resize(POOL, 0);
            rng.fill(&mut self.pad_pool);
            self.pad_used = 0;
        }
        match self.pad_pool.get(self.pad_used..self.pad_used + p.len()) {
            Some(src) => p.copy_from_slice(src),
            None => rng.fill(p),
        }
        self.pad_used += p.len();
    }

    /// True while framed packets wait in `out` for their seal.
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Seals every deferred packet in `out`, offering them to `run` as a
    /// batch first; whatever `run` leaves undone is sealed here.
    pub(crate) fn seal_pending(
        &mut self,
        out: &mut [u8],
        run: &mut dyn FnMut(&mut [CryptoJob<'_>]),
    ) {
        if !self.pending.is_empty() {
            batch::seal_all(&self.pending, out, run);
            self.pending.clear();
        }
    }

    /// Frames and seals a whole payload: a control packet. Packets queued
    /// for batch compression go out first and this one with them, so a key
    /// change or authentication success that follows it (see
    /// `Connection::after_sent`) falls exactly behind it.
    pub(crate) fn send(&mut self, payload: &[u8], out: &mut Vec<u8>, rng: &mut dyn Rng) {
        let start = Self::begin(out);
        out.extend_from_slice(payload);
        self.finish(out, start, rng);
        if self.compression.has_queued() {
            self.compress_pending(out, rng, &mut |_| {});
        }
    }
}
