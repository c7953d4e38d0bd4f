//! Packet MACs: `hmac-sha2-256` and `hmac-sha2-512` (RFC 6668 2, computed as
//! RFC 4253 6.4 says: `mac = MAC(key, uint32 sequence_number ||
//! unencrypted_packet)`), their encrypt-then-MAC forms
//! `hmac-sha2-{256,512}-etm@openssh.com` (OpenSSH PROTOCOL 1.5: the same MAC
//! over `uint32 sequence_number || packet_length || ciphertext`), and `none`.
//!
//! What the MAC covers is the caller's business ([`super::ctr`]); this file
//! only signs and verifies `seq || data` with a key built once.

use super::mac_info;
use crate::crypto::{constant_time_eq, CryptoError};
use aws_lc_rs::hmac;

/// Largest tag of any MAC here (HMAC-SHA-512).
const MAX_TAG: usize = 64;

/// One direction's MAC key, or no MAC.
pub(super) struct Mac {
    /// `None` for the `none` MAC.
    key: Option<hmac::Key>,
    tag_len: usize,
    etm: bool,
}

impl Mac {
    /// No MAC: empty tags (RFC 4253 6.4, before the first NEWKEYS).
    pub(super) fn none() -> Self {
        Mac {
            key: None,
            tag_len: 0,
            etm: false,
        }
    }

    /// Builds the MAC `name` from a key of exactly its `key_len` bytes.
    pub(super) fn new(name: &str, key: &[u8]) -> Result<Self, CryptoError> {
        let info = mac_info(name).ok_or(CryptoError)?;
        if key.len() != info.key_len || info.tag_len > MAX_TAG {
            return Err(CryptoError);
        }
        let alg = match name {
            "hmac-sha2-256" | "hmac-sha2-256-etm@openssh.com" => hmac::HMAC_SHA256,
            "hmac-sha2-512" | "hmac-sha2-512-etm@openssh.com" => hmac::HMAC_SHA512,
            "none" => return Ok(Mac::none()),
            _ => return Err(CryptoError),
        };
        if alg.digest_algorithm().output_len() != info.tag_len {
            return Err(CryptoError);
        }
        Ok(Mac {
            key: Some(hmac::Key::new(alg, key)),
            tag_len: info.tag_len,
            etm: info.etm,
        })
    }

    /// Tag bytes after each packet.
    pub(super) fn tag_len(&self) -> usize {
        self.tag_len
    }

    /// Encrypt-then-MAC: the length travels in clear and the MAC covers ciphertext.
    pub(super) fn etm(&self) -> bool {
        self.etm
    }

    /// Writes `MAC(key, uint32 seq || data)` into `out` (`tag_len()` bytes;
    /// a shorter `out` gets the first bytes, a longer one keeps its tail).
    pub(super) fn sign(&self, seq: u32, data: &[u8], out: &mut [u8]) {
        let Some(key) = &self.key else { return };
        let mut ctx = hmac::Context::with_key(key);
        ctx.update(&seq.to_be_bytes());
        ctx.update(data);
        let tag = ctx.sign();
        for (o, t) in out.iter_mut().zip(tag.as_ref()) {
            *o = *t;
        }
    }

    /// Checks `tag` against `MAC(key, uint32 seq || data)` in constant time.
    pub(super) fn verify(&self, seq: u32, data: &[u8], tag: &[u8]) -> Result<(), CryptoError> {
        if tag.len() != self.tag_len {
            return Err(CryptoError);
        }
        if self.key.is_none() {
            return Ok(());
        }
        let mut expect = [0u8; MAX_TAG];
        let expect = expect.get_mut(..self.tag_len).ok_or(CryptoError)?;
        self.sign(seq, data, expect);
        if constant_time_eq(expect, tag) {
            Ok(())
        } else {
            Err(CryptoError)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4231_case_2_through_seq_prefix() {
        // RFC 4231 4.3 (key "Jefe"), with the first 4 data bytes taken as the
        // sequence number: HMAC sees the same byte string.
        let data = b"what do ya want for nothing?";
        let seq = u32::from_be_bytes(*b"what");
        let want256 = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
        let want512 = "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554\
                       9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737";
        for (alg, want) in [(hmac::HMAC_SHA256, want256), (hmac::HMAC_SHA512, want512)] {
            let m = Mac {
                key: Some(hmac::Key::new(alg, b"Jefe")),
                tag_len: want.len() / 2,
                etm: false,
            };
            let mut out = vec![0u8; m.tag_len()];
            m.sign(seq, &data[4..], &mut out);
            assert_eq!(super::super::tests::to_hex(&out), want);
            assert!(m.verify(seq, &data[4..], &out).is_ok());
            out[0] ^= 1;
            assert!(m.verify(seq, &data[4..], &out).is_err());
        }
    }

    #[test]
    fn key_and_tag_lengths_are_checked() {
        assert!(Mac::new("hmac-sha2-256", &[0; 31]).is_err());
        assert!(Mac::new("hmac-sha2-512", &[0; 32]).is_err());
        assert!(Mac::new("hmac-sha1", &[0; 20]).is_err());
        let m = Mac::new("hmac-sha2-512-etm@openssh.com", &[0; 64]).unwrap();
        assert_eq!((m.tag_len(), m.etm()), (64, true));
        assert!(m.verify(0, b"x", &[0; 32]).is_err());
        let none = Mac::new("none", &[]).unwrap();
        assert!(none.verify(0, b"x", &[]).is_ok());
        assert!(none.verify(0, b"x", &[0]).is_err());
    }
}
