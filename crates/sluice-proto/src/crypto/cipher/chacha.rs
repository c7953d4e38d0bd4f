//! `chacha20-poly1305@openssh.com` (OpenSSH PROTOCOL.chacha20poly1305), through
//! aws-lc-rs's `aead::chacha20_poly1305_openssh`.
//!
//! The 64-byte key splits into K_2 (first half: payload and Poly1305 key) and
//! K_1 (second half: the 4-byte length). The nonce is the sequence number
//! (RFC 4253 6.4) as a 64-bit big-endian integer, so [`PacketPos::seq`] is all
//! this cipher needs. The tag is Poly1305 over `encrypted length ||
//! ciphertext` and is checked before decryption. Block size 8 for padding;
//! the negotiated MAC is ignored.

use crate::crypto::{CryptoError, Opener, PacketPos, Sealer};
use aws_lc_rs::aead::chacha20_poly1305_openssh::{OpeningKey, SealingKey, KEY_LEN, TAG_LEN};

/// Padding block (PROTOCOL.chacha20poly1305: "a block size of 8").
const BLOCK: usize = 8;

/// One direction's chacha20-poly1305@openssh.com keys.
pub(super) struct ChaCha {
    seal: SealingKey,
    open: OpeningKey,
}

impl ChaCha {
    /// Builds both halves from the 64-byte derived key.
    pub(super) fn new(key: &[u8]) -> Result<Self, CryptoError> {
        let key: &[u8; KEY_LEN] = key.try_into().map_err(|_| CryptoError)?;
        Ok(ChaCha {
            seal: SealingKey::new(key),
            open: OpeningKey::new(key),
        })
    }

    fn length(&self, seq: u32, head: &[u8]) -> Result<[u8; 4], CryptoError> {
        let enc = *head.first_chunk::<4>().ok_or(CryptoError)?;
        Ok(self.open.decrypt_packet_length(seq, enc))
    }
}

impl Sealer for ChaCha {
    fn block_size(&self) -> usize {
        BLOCK
    }

    fn tag_len(&self) -> usize {
        TAG_LEN
    }

    fn length_in_blocks(&self) -> bool {
        false
    }

    fn seal(&self, pos: PacketPos, packet: &mut [u8], tag: &mut [u8]) {
        match <&mut [u8; TAG_LEN]>::try_from(&mut *tag) {
            // aws-lc splits the packet at 4 and would panic on less.
            Ok(t) if packet.len() >= 4 => self.seal.seal_in_place(pos.seq, packet, t),
            _ => {
                // Only a caller's wrong sizes get here; send nothing readable.
                packet.fill(0);
                tag.fill(0);
            }
        }
    }
}

impl Opener for ChaCha {
    fn block_size(&self) -> usize {
        BLOCK
    }

    fn tag_len(&self) -> usize {
        TAG_LEN
    }

    fn length_in_blocks(&self) -> bool {
        false
    }

    fn decrypt_length(&self, pos: PacketPos, head: &[u8]) -> Result<u32, CryptoError> {
        self.length(pos.seq, head).map(u32::from_be_bytes)
    }

    fn open(&self, pos: PacketPos, packet: &mut [u8], tag: &[u8]) -> Result<(), CryptoError> {
        let tag: &[u8; TAG_LEN] = tag.try_into().map_err(|_| CryptoError)?;
        // Also guarantees the 4 bytes aws-lc slices off without a check.
        let len = self.length(pos.seq, packet)?;
        self.open
            .open_in_place(pos.seq, packet, tag)
            .map_err(|_| CryptoError)?;
        // aws-lc leaves the length field encrypted; the trait wants it plain.
        let head = packet.first_chunk_mut::<4>().ok_or(CryptoError)?;
        *head = len;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_sizes_are_errors() {
        assert!(ChaCha::new(&[0; 32]).is_err());
        let c = ChaCha::new(&[5; 64]).unwrap();
        let pos = PacketPos::default();
        assert!(c.decrypt_length(pos, &[0; 3]).is_err());
        assert!(c.open(pos, &mut [0; 3], &[0; 16]).is_err());
        assert!(c.open(pos, &mut [0; 8], &[0; 17]).is_err());
        let mut p = [0x41u8; 3];
        let mut t = [0x42u8; 16];
        c.seal(pos, &mut p, &mut t);
        assert_eq!((p, t), ([0; 3], [0; 16]));
    }

    #[test]
    fn failed_open_leaves_length_field_alone() {
        let c = ChaCha::new(&[5; 64]).unwrap();
        let pos = PacketPos {
            seq: 1,
            ..PacketPos::default()
        };
        let mut p = [0u8; 16];
        p[3] = 12;
        let mut t = [0u8; 16];
        c.seal(pos, &mut p, &mut t);
        let sealed = p;
        t[0] ^= 1;
        assert!(c.open(pos, &mut p, &t).is_err());
        assert_eq!(p, sealed);
    }
}
