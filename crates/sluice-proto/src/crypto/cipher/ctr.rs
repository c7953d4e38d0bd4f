//! Non-AEAD packet protection: `aes{128,192,256}-ctr` (RFC 4344 4) or the
//! `none` cipher (RFC 4253 6.3), each with a MAC from [`super::mac`].
//!
//! Two orders, chosen by the MAC:
//! - encrypt-and-MAC (RFC 4253 6.4, RFC 6668): the MAC covers `uint32 seq ||
//!   plaintext packet`, and the whole packet, length included, is encrypted,
//!   so the receiver decrypts a copy of the first block to learn the length.
//! - encrypt-then-MAC (OpenSSH PROTOCOL 1.5, `-etm@openssh.com`): the length
//!   stays in clear, the rest is encrypted, and the MAC covers `uint32 seq ||
//!   packet_length || ciphertext`; it is verified before anything is decrypted.
//!
//! The CTR counter is never kept: it is the IV, read as a 128-bit big-endian
//! integer (RFC 4344 4), plus [`PacketPos::offset`]` / 16`, wrapping mod 2^128.

use super::mac::Mac;
use crate::crypto::{CryptoError, Opener, PacketPos, Sealer};
use aws_lc_rs::cipher::{
    EncryptingKey, EncryptionContext, UnboundCipherKey, AES_128, AES_192, AES_256,
};
use aws_lc_rs::iv::FixedLength;

/// AES block bytes: CTR's block size and counter step.
const AES_BLOCK: usize = 16;
/// Block size of the `none` cipher (RFC 4253 6: at least 8).
const NONE_BLOCK: usize = 8;

/// An AES-CTR key and its initial counter block.
struct Ctr {
    key: EncryptingKey,
    iv: u128,
}

impl Ctr {
    fn new(key: &[u8], iv: &[u8]) -> Result<Self, CryptoError> {
        let alg = match key.len() {
            16 => &AES_128,
            24 => &AES_192,
            32 => &AES_256,
            _ => return Err(CryptoError),
        };
        let iv: [u8; AES_BLOCK] = iv.try_into().map_err(|_| CryptoError)?;
        let key = UnboundCipherKey::new(alg, key).map_err(|_| CryptoError)?;
        Ok(Ctr {
            key: EncryptingKey::ctr(key).map_err(|_| CryptoError)?,
            iv: u128::from_be_bytes(iv),
        })
    }

    /// XORs `data` with the keystream that starts `offset` bytes (a multiple
    /// of 16) into these keys' stream. Encryption and decryption alike.
    fn apply(&self, offset: u64, data: &mut [u8]) -> Result<(), CryptoError> {
        let counter = self.iv.wrapping_add(u128::from(offset / AES_BLOCK as u64));
        let iv = FixedLength::from(counter.to_be_bytes());
        self.key
            .less_safe_encrypt(data, EncryptionContext::Iv128(iv))
            .map(|_| ())
            .map_err(|_| CryptoError)
    }
}

/// AES-CTR or no cipher, with an HMAC or no MAC.
pub(super) struct CtrMac {
    /// `None` for the `none` cipher.
    ctr: Option<Ctr>,
    mac: Mac,
}

impl CtrMac {
    /// AES-CTR with `key` (16, 24 or 32 bytes) and a 16-byte `iv`.
    pub(super) fn aes(key: &[u8], iv: &[u8], mac: Mac) -> Result<Self, CryptoError> {
        Ok(CtrMac {
            ctr: Some(Ctr::new(key, iv)?),
            mac,
        })
    }

    /// The `none` cipher with `mac`.
    pub(super) fn plain(mac: Mac) -> Self {
        CtrMac { ctr: None, mac }
    }

    /// No cipher, no MAC: the state before the first NEWKEYS (RFC 4253 6.3).
    pub(super) fn initial() -> Self {
        Self::plain(Mac::none())
    }

    fn block(&self) -> usize {
        if self.ctr.is_some() {
            AES_BLOCK
        } else {
            NONE_BLOCK
        }
    }

    fn apply(&self, offset: u64, data: &mut [u8]) -> Result<(), CryptoError> {
        match &self.ctr {
            Some(c) => c.apply(offset, data),
            None => Ok(()),
        }
    }

    fn try_seal(
        &self,
        pos: PacketPos,
        packet: &mut [u8],
        tag: &mut [u8],
    ) -> Result<(), CryptoError> {
        if self.mac.etm() {
            self.apply(pos.offset, packet.get_mut(4..).ok_or(CryptoError)?)?;
            self.mac.sign(pos.seq, packet, tag);
        } else {
            self.mac.sign(pos.seq, packet, tag);
            self.apply(pos.offset, packet)?;
        }
        Ok(())
    }
}

/// Reads the big-endian `uint32 packet_length` at the start of `head`.
pub(super) fn plain_length(head: &[u8]) -> Result<u32, CryptoError> {
    head.first_chunk::<4>()
        .map(|b| u32::from_be_bytes(*b))
        .ok_or(CryptoError)
}

impl Sealer for CtrMac {
    fn block_size(&self) -> usize {
        self.block()
    }

    fn tag_len(&self) -> usize {
        self.mac.tag_len()
    }

    fn length_in_blocks(&self) -> bool {
        !self.mac.etm()
    }

    fn seal(&self, pos: PacketPos, packet: &mut [u8], tag: &mut [u8]) {
        if self.try_seal(pos, packet, tag).is_err() {
            // Unreachable with AES-CTR, but never let plain text leave: the
            // peer then fails the MAC on zeros.
            packet.fill(0);
            tag.fill(0);
        }
    }
}

impl Opener for CtrMac {
    fn block_size(&self) -> usize {
        self.block()
    }

    fn tag_len(&self) -> usize {
        self.mac.tag_len()
    }

    fn length_in_blocks(&self) -> bool {
        !self.mac.etm()
    }

    fn decrypt_length(&self, pos: PacketPos, head: &[u8]) -> Result<u32, CryptoError> {
        if self.mac.etm() || self.ctr.is_none() {
            return plain_length(head);
        }
        let mut block = *head.first_chunk::<AES_BLOCK>().ok_or(CryptoError)?;
        self.apply(pos.offset, &mut block)?;
        plain_length(&block)
    }

    fn open(&self, pos: PacketPos, packet: &mut [u8], tag: &[u8]) -> Result<(), CryptoError> {
        if self.mac.etm() {
            self.mac.verify(pos.seq, packet, tag)?;
            self.apply(pos.offset, packet.get_mut(4..).ok_or(CryptoError)?)
        } else {
            if packet.len() < 4 {
                return Err(CryptoError);
            }
            self.apply(pos.offset, packet)?;
            self.mac.verify(pos.seq, packet, tag)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aes128(iv: [u8; 16]) -> Ctr {
        Ctr::new(&[7u8; 16], &iv).unwrap()
    }

    #[test]
    fn offset_continues_the_keystream() {
        // One 96-byte pass equals three 32-byte passes at offsets 0, 32, 64,
        // also across the 32-bit and the 128-bit counter carries.
        for iv in [[0u8; 16], [0xff; 16], {
            let mut v = [0x11u8; 16];
            v[12..].copy_from_slice(&[0xff, 0xff, 0xff, 0xfe]);
            v
        }] {
            let c = aes128(iv);
            let mut whole = [0x5au8; 96];
            c.apply(0, &mut whole).unwrap();
            let mut parts = [0x5au8; 96];
            for (i, chunk) in parts.chunks_mut(32).enumerate() {
                c.apply(32 * i as u64, chunk).unwrap();
            }
            assert_eq!(whole, parts);
        }
    }

    #[test]
    fn bad_key_and_iv_lengths() {
        assert!(Ctr::new(&[0; 15], &[0; 16]).is_err());
        assert!(Ctr::new(&[0; 16], &[0; 12]).is_err());
        assert!(Ctr::new(&[0; 24], &[0; 16]).is_ok());
    }

    #[test]
    fn short_input_is_an_error_not_a_panic() {
        let c = CtrMac::aes(
            &[1; 32],
            &[2; 16],
            Mac::new("hmac-sha2-256", &[3; 32]).unwrap(),
        )
        .unwrap();
        let pos = PacketPos::default();
        assert!(c.decrypt_length(pos, &[0; 15]).is_err());
        assert!(c.open(pos, &mut [0; 3], &[0; 32]).is_err());
        assert!(c.open(pos, &mut [0; 16], &[0; 31]).is_err());
        let e = CtrMac::aes(
            &[1; 16],
            &[2; 16],
            Mac::new("hmac-sha2-256-etm@openssh.com", &[3; 32]).unwrap(),
        )
        .unwrap();
        assert!(e.decrypt_length(pos, &[0; 3]).is_err());
        assert!(e.open(pos, &mut [0; 3], &[0; 32]).is_err());
    }
}
