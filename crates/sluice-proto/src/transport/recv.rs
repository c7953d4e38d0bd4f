//! The receiving half of the binary packet protocol (RFC 4253 section 6):
//! length checks, opening in place in the caller's input buffer,
//! decompression, and sequence numbers (reset by strict KEX).

use crate::crypto::cipher;
use crate::crypto::{Opener, PacketPos};
use crate::error::Violation;
use crate::transport::batch::{self, AheadPacket, CryptoJob};
use crate::transport::compress_state::{InCompression, Inflated};
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;

/// Most packets opened ahead in one batch.
const AHEAD_MAX: usize = 64;

/// Largest `packet_length` accepted, as OpenSSH (`PACKET_MAX_SIZE`, 256 KiB).
pub const MAX_PACKET_LEN: usize = 256 * 1024;
/// Largest payload after decompression.
const MAX_PAYLOAD: usize = MAX_PACKET_LEN;

/// Where an opened packet's payload is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Payload {
    /// Decrypted in place: this range of the input.
    Input(Range<usize>),
    /// Inflated into the receive state's scratch buffer.
    Scratch,
}

/// Result of offering input to [`RecvState::open`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Opened {
    /// Not a whole packet yet.
    NeedMore,
    /// One packet, `consumed` bytes of input, and where its payload is.
    Packet {
        /// Bytes of input the packet occupied, tag included.
        consumed: usize,
        /// The payload's place.
        payload: Payload,
        /// Its sequence number (for UNIMPLEMENTED replies).
        seq: u32,
    },
}

/// State of the incoming direction.
pub(crate) struct RecvState {
    opener: Arc<dyn Opener>,
    pub(crate) seq: u32,
    index: u64,
    offset: u64,
    /// Bytes received under the current keys, for `RekeyLimit`.
    pub(crate) bytes: u64,
    /// The decompression engine and its stream, when one runs.
    pub(crate) compression: InCompression,
    /// Decompressed payload of the last packet.
    pub(crate) scratch: Vec<u8>,
    /// Length of a packet whose head has been decrypted but whose body has not arrived.
    pending_len: Option<u32>,
    /// Verdicts of the packets at the front of the input already opened by
    /// [`RecvState::open_ahead`], in order.
    ahead: VecDeque<bool>,
    /// Reused description of an open-ahead batch.
    found: Vec<AheadPacket>,
}

impl RecvState {
    pub(crate) fn new() -> Self {
        RecvState {
            opener: Arc::from(cipher::initial_opener()),
            seq: 0,
            index: 0,
            offset: 0,
            bytes: 0,
            compression: InCompression::default(),
            scratch: Vec::new(),
            pending_len: None,
            ahead: VecDeque::new(),
            found: Vec::new(),
        }
    }

    /// Packets under the current keys (RFC 4344 3.1's re-key count).
    pub(crate) fn packets(&self) -> u64 {
        self.index
    }

    /// Installs new keys after receiving NEWKEYS; strict KEX resets the
    /// sequence number. The decompression stream of the new epoch starts here.
    pub(crate) fn set_keys(&mut self, opener: Box<dyn Opener>, strict: bool) {
        // Opening ahead stops short of any key change (see `open_ahead`);
        // verdicts under old keys would be meaningless now.
        self.ahead.clear();
        self.opener = Arc::from(opener);
        if strict {
            self.seq = 0;
        }
        self.index = 0;
        self.offset = 0;
        self.bytes = 0;
        self.pending_len = None;
        self.compression.new_epoch();
    }

    /// Where the next packet stands under the current keys, and the bytes
    /// received under them (exported at a handover, `crate::handover`).
    pub(crate) fn position(&self) -> (PacketPos, u64) {
        (self.pos(), self.bytes)
    }

    /// No packet was opened ahead or half read: the input not yet consumed
    /// is still exactly as the peer sent it.
    pub(crate) fn is_idle(&self) -> bool {
        self.ahead.is_empty() && self.pending_len.is_none()
    }

    /// Installs keys already in force at `pos` (imported at a handover).
    pub(crate) fn resume(&mut self, opener: Box<dyn Opener>, pos: PacketPos, bytes: u64) {
        self.opener = Arc::from(opener);
        self.seq = pos.seq;
        self.index = pos.index;
        self.offset = pos.offset;
        self.bytes = bytes;
    }

    fn pos(&self) -> PacketPos {
        PacketPos {
            seq: self.seq,
            index: self.index,
            offset: self.offset,
        }
    }

    /// Opens the whole packets at the front of `input` as one batch through
    /// `run`, for [`RecvState::open`] to take in order. The caller must
    /// ensure no key change can come among them (no key exchange running).
    /// Returns how many packets were opened; a batch needs at least two.
    pub(crate) fn open_ahead(
        &mut self,
        input: &mut [u8],
        run: &mut dyn FnMut(&mut [CryptoJob<'_>]),
    ) -> Result<usize, Violation> {
        if !self.ahead.is_empty() || self.pending_len.is_some() {
            return Ok(0);
        }
        self.found.clear();
        let mut pos = self.pos();
        let mut at = 0;
        let need = self.opener.length_bytes();
        let tag_len = self.opener.tag_len();
        while self.found.len() < AHEAD_MAX {
            let Some(head) = input.get(at..at + need) else {
                break;
            };
            let len = self
                .opener
                .decrypt_length(pos, head)
                .map_err(|_| Violation::MacFailure)?;
            // A bad length is reported when `open` reaches this packet.
            if self.check_length(len).is_err() {
                break;
            }
            let sealed_len = 4 + len as usize;
            if input.len() < at + sealed_len + tag_len {
                break;
            }
            self.found.push(AheadPacket {
                pos,
                sealed_len,
                tag_len,
            });
            at += sealed_len + tag_len;
            pos.seq = pos.seq.wrapping_add(1);
            pos.index += 1;
            pos.offset += self.encrypted_len(len as usize) as u64;
        }
        if self.found.len() < 2 {
            return Ok(0);
        }
        let input = input.get_mut(..at).unwrap_or_default();
        batch::open_all(
            self.opener.as_ref(),
            &self.found,
            input,
            run,
            &mut self.ahead,
        );
        Ok(self.ahead.len())
    }

    /// Bytes the cipher encrypts of a packet of `packet_length` `len`.
    fn encrypted_len(&self, len: usize) -> usize {
        if self.opener.length_in_blocks() {
            4 + len
        } else {
            len
        }
    }

    /// Opens the packet at the start of `input` if it is all there.
    pub(crate) fn open(&mut self, input: &mut [u8]) -> Result<Opened, Violation> {
        if let Some(&ok) = self.ahead.front() {
            if !ok {
                return Err(Violation::MacFailure);
            }
            // Opened ahead: the length field is plain now.
            let Some(head) = input.first_chunk::<4>() else {
                return Ok(Opened::NeedMore);
            };
            self.pending_len = Some(u32::from_be_bytes(*head));
            let r = self.finish_open(input, true)?;
            match r {
                Opened::Packet { .. } => {
                    self.ahead.pop_front();
                }
                Opened::NeedMore => self.pending_len = None,
            }
            return Ok(r);
        }
        self.finish_open(input, false)
    }

    fn finish_open(&mut self, input: &mut [u8], opened: bool) -> Result<Opened, Violation> {
        let len = match self.pending_len {
            Some(l) => l,
            None => {
                let need = self.opener.length_bytes();
                let Some(head) = input.get(..need) else {
                    return Ok(Opened::NeedMore);
                };
                let l = self
                    .opener
                    .decrypt_length(self.pos(), head)
                    .map_err(|_| Violation::MacFailure)?;
                self.check_length(l)?;
                self.pending_len = Some(l);
                l
            }
        };
        let len = len as usize;
        let tag_len = self.opener.tag_len();
        let total = 4 + len + tag_len;
        let Some(whole) = input.get_mut(..total) else {
            return Ok(Opened::NeedMore);
        };
        let (packet, tag) = whole.split_at_mut(4 + len);
        if !opened {
            self.opener
                .open(self.pos(), packet, tag)
                .map_err(|_| Violation::MacFailure)?;
        }
        self.pending_len = None;
        let pad = usize::from(*packet.get(4).ok_or(Violation::BadPadding)?);
        if pad < 4 || pad + 1 > len {
            return Err(Violation::BadPadding);
        }
        let range = 5..4 + len - pad;
        let seq = self.seq;
        self.seq = self.seq.wrapping_add(1);
        self.index += 1;
        self.offset += self.encrypted_len(len) as u64;
        self.bytes += total as u64;
        let compressed = packet.get(range.clone()).unwrap_or_default();
        let payload =
            match self
                .compression
                .decompress(compressed, &mut self.scratch, MAX_PAYLOAD)?
            {
                Inflated::Scratch => Payload::Scratch,
                Inflated::Plain => Payload::Input(range),
                Inflated::Within(r) => Payload::Input(range.start + r.start..range.start + r.end),
            };
        Ok(Opened::Packet {
            consumed: total,
            payload,
            seq,
        })
    }

    fn check_length(&self, len: u32) -> Result<(), Violation> {
        let l = len as usize;
        let bs = self.opener.block_size();
        let aligned = if self.opener.length_in_blocks() {
            (l + 4).is_multiple_of(bs)
        } else {
            l.is_multiple_of(bs)
        };
        if !(5..=MAX_PACKET_LEN).contains(&l) || !aligned {
            return Err(Violation::BadPacketLength(len));
        }
        Ok(())
    }
}
