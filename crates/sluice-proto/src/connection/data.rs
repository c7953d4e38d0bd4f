//! The channel data fast path (RFC 4254 5.2): CHANNEL_DATA and
//! CHANNEL_EXTENDED_DATA parsed by hand on receipt, and built in place in
//! the caller's output buffer on sending, so bulk payload is copied at most
//! once (and not at all when the runtime reads a file straight into the slot).

use crate::core::Connection;
use crate::error::{Error, Violation};
use crate::event::ChannelId;
use crate::transport::send::{SendState, HEADER};
use crate::transport::MAX_PACKET_LEN;
use crate::wire::{MsgNum, Reader, WireError};
use std::ops::Range;
use std::time::Instant;

/// Largest data payload we put in one packet, leaving room for headers,
/// padding and tag within the 256 KiB every peer accepts.
const MAX_DATA: usize = MAX_PACKET_LEN - 1024;
/// The same with outgoing compression: the packet limit applies to the
/// compressed payload, and deflate's fastest level (static Huffman codes,
/// 9 bits for half the literals) grows data that does not compress by up
/// to 1/8, plus block headers and the flush.
const MAX_DATA_COMPRESSED: usize = (MAX_DATA - 64) / 9 * 8;

/// A data packet being built in the output buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataSlot {
    /// Where the packet starts in `out`.
    start: usize,
    /// Where the data goes: `out[data_at..data_at + max]`.
    pub data_at: usize,
    /// Most bytes the slot takes (window and packet size permitting).
    pub max: usize,
    channel: ChannelId,
    /// Room left for a stored packet's prefix (see `SendState::reserve`).
    reserve: usize,
}

impl Connection {
    /// Parses CHANNEL_DATA / EXTENDED_DATA and charges the window; returns
    /// the data's range within `payload`.
    pub(crate) fn handle_channel_data(
        &mut self,
        payload: &[u8],
    ) -> Result<(ChannelId, Option<u32>, Range<usize>), Error> {
        let num = MsgNum(payload.first().copied().unwrap_or(0));
        let bad = |e: WireError| Error::Protocol(Violation::Malformed(num, e));
        let mut r = Reader::new(payload.get(1..).unwrap_or_default());
        let recipient = r.u32().map_err(bad)?;
        let ext = if num == MsgNum::CHANNEL_EXTENDED_DATA {
            Some(r.u32().map_err(bad)?)
        } else {
            None
        };
        let data = r.string().map_err(bad)?;
        r.finish().map_err(bad)?;
        let len = data.len();
        let start = payload.len() - len;
        let max_packet = self.config.max_packet as usize;
        let clock = self.clock;
        let ch = self.open_channel_mut(recipient)?;
        if ch.eof_received {
            return Err(Violation::DataAfterEof(recipient).into());
        }
        if len > max_packet {
            return Err(Violation::PacketExceedsMaximum(recipient).into());
        }
        if !ch.recv.receive(len as u32) {
            return Err(Violation::WindowExceeded(recipient).into());
        }
        if len > 0 {
            ch.last_data = clock;
        }
        Ok((ChannelId(recipient), ext, start..payload.len()))
    }

    /// Seals every queued control packet into `out`, keeping wire order
    /// ahead of data packets.
    fn flush_outbox(&mut self, now: Instant, out: &mut Vec<u8>) {
        if self.outbox.is_empty() {
            return;
        }
        // Frames without sealing, so batch crypto keeps its batch.
        self.transmit_queued(now, out);
    }

    /// Bytes of channel data that could be sent now (0 during a key exchange).
    pub fn send_capacity(&self, id: ChannelId) -> usize {
        if self.kex.sending_blocked() || self.closed {
            return 0;
        }
        match self.channels.get(id) {
            Some(ch)
                if ch.state == crate::connection::ChannelState::Open
                    && !ch.eof_sent
                    && !ch.close_sent
                    && !ch.close_received =>
            {
                // An engine's stored form takes whole packets up to its
                // limit (zstd: one block, or a packet's room for a peer that
                // reads long ones, which are never compressed): the header
                // is 13 bytes at most.
                let limit = match self.send.stored_max() {
                    Some(max) if max > MAX_DATA_COMPRESSED => MAX_DATA.min(max.saturating_sub(13)),
                    Some(max) => MAX_DATA_COMPRESSED.min(max.saturating_sub(13)),
                    None if self.send.compression.active() => MAX_DATA_COMPRESSED,
                    None => MAX_DATA,
                };
                (ch.send_window as usize)
                    .min(ch.send_max_packet as usize)
                    .min(limit)
            }
            _ => 0,
        }
    }

    /// Starts a data packet in `out` (after any queued control packets) and
    /// returns the slot the caller fills, or None if nothing can be sent now.
    /// `ext` is `Some(1)` for stderr. `now` is the runtime's clock: queued
    /// control packets go out first and may start a re-key that is due by time.
    pub fn data_slot(
        &mut self,
        now: Instant,
        id: ChannelId,
        ext: Option<u32>,
        out: &mut Vec<u8>,
    ) -> Option<DataSlot> {
        self.clock = Some(now);
        // Queued control packets go first; sending NEWKEYS may unblock data.
        self.flush_outbox(now, out);
        let max = self.send_capacity(id);
        if max == 0 {
            return None;
        }
        let remote = self.channels.get(id)?.remote;
        self.noise_before_packet(out);
        let start = SendState::begin(out);
        let reserve = self.send.reserve();
        out.resize(out.len() + reserve, 0);
        match ext {
            None => out.push(MsgNum::CHANNEL_DATA.0),
            Some(_) => out.push(MsgNum::CHANNEL_EXTENDED_DATA.0),
        }
        out.extend_from_slice(&remote.to_be_bytes());
        if let Some(code) = ext {
            out.extend_from_slice(&code.to_be_bytes());
        }
        out.extend_from_slice(&[0u8; 4]);
        let data_at = out.len();
        let _ = start + HEADER;
        Some(DataSlot {
            start,
            data_at,
            max,
            channel: id,
            reserve,
        })
    }

    /// Seals the slot's packet with `n` bytes of data written at
    /// `out[slot.data_at..]`. `out` must hold at least `data_at + n` bytes;
    /// anything beyond is discarded. `n == 0` withdraws the slot.
    pub fn finish_data_slot(&mut self, slot: DataSlot, n: usize, out: &mut Vec<u8>) {
        let n = n.min(slot.max);
        if n == 0 || out.len() < slot.data_at + n {
            out.truncate(slot.start);
            return;
        }
        out.truncate(slot.data_at + n);
        if let Some(len) = out.get_mut(slot.data_at - 4..slot.data_at) {
            len.copy_from_slice(&(n as u32).to_be_bytes());
        }
        let clock = self.clock;
        if let Some(ch) = self.channels.get_mut(slot.channel) {
            ch.send_window = ch.send_window.saturating_sub(n as u32);
            ch.last_data = clock;
        }
        self.send
            .finish_reserved(out, slot.start, slot.reserve, self.rng.as_mut());
        self.rekey_if_bytes_due();
    }

    /// Sends as much of `data` as windows allow, sealing into `out`; returns
    /// how many bytes were taken.
    pub fn send_data(
        &mut self,
        now: Instant,
        id: ChannelId,
        ext: Option<u32>,
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> usize {
        let mut sent = 0;
        while sent < data.len() {
            let Some(slot) = self.data_slot(now, id, ext, out) else {
                break;
            };
            let chunk = data.get(sent..).unwrap_or_default();
            let n = chunk.len().min(slot.max);
            out.extend_from_slice(chunk.get(..n).unwrap_or_default());
            self.finish_data_slot(slot, n, out);
            sent += n;
        }
        sent
    }
}
