//! `aes128-gcm@openssh.com` and `aes256-gcm@openssh.com`: AES-GCM as RFC 5647
//! defines it, with OpenSSH's names and its rule (PROTOCOL 1.6) that the MAC
//! negotiation is ignored.
//!
//! - RFC 5647 7.1: the 12-byte nonce is a 4-byte fixed field followed by a
//!   64-bit invocation counter, both from the derived IV; the counter grows by
//!   one per packet and wraps. We add [`PacketPos::index`] to the initial
//!   counter instead of keeping it.
//! - RFC 5647 7.2-7.3: `packet_length` is sent in clear as the AAD; the
//!   rest of the packet is encrypted; the 16-byte tag follows.

use super::ctr::plain_length;
use crate::crypto::{CryptoError, Opener, PacketPos, Sealer};
use aws_lc_rs::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};

/// Cipher block size for padding (RFC 5647 7.2).
const BLOCK: usize = 16;
/// Authentication tag bytes (RFC 5647 7.3).
const TAG: usize = 16;

/// One direction's AES-GCM key and nonce base.
pub(super) struct Gcm {
    key: LessSafeKey,
    fixed: [u8; 4],
    counter: u64,
}

impl Gcm {
    /// A 16- or 32-byte key and the 12-byte derived IV.
    pub(super) fn new(key: &[u8], iv: &[u8]) -> Result<Self, CryptoError> {
        let alg = match key.len() {
            16 => &aead::AES_128_GCM,
            32 => &aead::AES_256_GCM,
            _ => return Err(CryptoError),
        };
        let iv: &[u8; 12] = iv.try_into().map_err(|_| CryptoError)?;
        let (fixed, counter) = iv.split_first_chunk::<4>().ok_or(CryptoError)?;
        let counter: [u8; 8] = counter.try_into().map_err(|_| CryptoError)?;
        Ok(Gcm {
            key: LessSafeKey::new(UnboundKey::new(alg, key).map_err(|_| CryptoError)?),
            fixed: *fixed,
            counter: u64::from_be_bytes(counter),
        })
    }

    /// The nonce of the packet at `pos`: fixed field || (counter + index).
    fn nonce(&self, pos: PacketPos) -> Nonce {
        let mut n = [0u8; 12];
        let (fixed, counter) = n.split_at_mut(4);
        fixed.copy_from_slice(&self.fixed);
        counter.copy_from_slice(&self.counter.wrapping_add(pos.index).to_be_bytes());
        Nonce::assume_unique_for_key(n)
    }

    fn try_seal(
        &self,
        pos: PacketPos,
        packet: &mut [u8],
        tag: &mut [u8],
    ) -> Result<(), CryptoError> {
        let (len, body) = packet.split_at_mut_checked(4).ok_or(CryptoError)?;
        let t = self
            .key
            .seal_in_place_separate_tag(self.nonce(pos), Aad::from(&*len), body)
            .map_err(|_| CryptoError)?;
        let tag: &mut [u8; TAG] = tag.try_into().map_err(|_| CryptoError)?;
        let t: &[u8; TAG] = t.as_ref().try_into().map_err(|_| CryptoError)?;
        *tag = *t;
        Ok(())
    }
}

impl Sealer for Gcm {
    fn block_size(&self) -> usize {
        BLOCK
    }

    fn tag_len(&self) -> usize {
        TAG
    }

    fn length_in_blocks(&self) -> bool {
        false
    }

    fn seal(&self, pos: PacketPos, packet: &mut [u8], tag: &mut [u8]) {
        if self.try_seal(pos, packet, tag).is_err() {
            // Only a caller's wrong sizes get here; send nothing readable.
            packet.fill(0);
            tag.fill(0);
        }
    }
}

impl Opener for Gcm {
    fn block_size(&self) -> usize {
        BLOCK
    }

    fn tag_len(&self) -> usize {
        TAG
    }

    fn length_in_blocks(&self) -> bool {
        false
    }

    fn decrypt_length(&self, _pos: PacketPos, head: &[u8]) -> Result<u32, CryptoError> {
        plain_length(head)
    }

    fn open(&self, pos: PacketPos, packet: &mut [u8], tag: &[u8]) -> Result<(), CryptoError> {
        if tag.len() != TAG {
            return Err(CryptoError);
        }
        let (len, body) = packet.split_at_mut_checked(4).ok_or(CryptoError)?;
        self.key
            .open_in_place_separate_tag(self.nonce(pos), Aad::from(&*len), tag, body)
            .map(|_| ())
            .map_err(|_| CryptoError)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonce_adds_index_to_counter_and_wraps() {
        let mut iv = [0u8; 12];
        iv[..4].copy_from_slice(&[1, 2, 3, 4]);
        iv[4..].copy_from_slice(&(u64::MAX - 1).to_be_bytes());
        let g = Gcm::new(&[9; 16], &iv).unwrap();
        let at = |index| {
            let n = g.nonce(PacketPos {
                index,
                ..PacketPos::default()
            });
            *n.as_ref()
        };
        assert_eq!(at(0), iv);
        assert_eq!(at(1)[4..], [0xff; 8]);
        assert_eq!(at(2), [1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(at(3)[11], 1);
    }

    #[test]
    fn bad_sizes_are_errors() {
        assert!(Gcm::new(&[0; 24], &[0; 12]).is_err());
        assert!(Gcm::new(&[0; 16], &[0; 16]).is_err());
        let g = Gcm::new(&[0; 32], &[0; 12]).unwrap();
        let pos = PacketPos::default();
        assert!(g.open(pos, &mut [0; 3], &[0; 16]).is_err());
        assert!(g.open(pos, &mut [0; 16], &[0; 15]).is_err());
        assert!(g.decrypt_length(pos, &[0; 3]).is_err());
        let mut p = [0x41u8; 16];
        let mut t = [0x42u8; 15];
        g.seal(pos, &mut p, &mut t);
        assert_eq!((p, t), ([0; 16], [0; 15]));
    }
}
