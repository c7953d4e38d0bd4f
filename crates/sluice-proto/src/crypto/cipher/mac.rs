//! Packet MACs (RFC 4253 6.4: `mac = MAC(key, uint32 sequence_number ||
//! unencrypted_packet)`): `hmac-sha2-256` and `hmac-sha2-512` (RFC 6668 2),
//! `hmac-sha1`, `hmac-sha1-96`, `hmac-md5` and `hmac-md5-96` (RFC 4253 6.4,
//! RFC 2104: a `-96` tag is the first 12 bytes), `umac-64@openssh.com` and
//! `umac-128@openssh.com` (RFC 4418, see [`super::umac`]), the
//! encrypt-then-MAC form `-etm@openssh.com` of each (OpenSSH PROTOCOL 1.5:
//! the same MAC over `uint32 sequence_number || packet_length ||
//! ciphertext`), and `none`.
//!
//! UMAC takes no sequence number in its input: OpenSSH passes it as the
//! nonce, a big-endian uint64, and MACs the packet alone (checked against
//! Debian's ssh and sshd in the runtime's tests/interop_macs.rs). RFC 4418
//! wants a nonce unique per key, which the sequence number is until it
//! wraps at 2^32 packets; the default RekeyLimit (4 GiB, and a packet is at
//! least 16 bytes) re-keys before that, as RFC 4344 3.1 asks.
//!
//! What the MAC covers is the caller's business ([`super::ctr`]); this file
//! only signs and verifies `seq || data` with a key built once. OpenSSH
//! 10's default MACs are offered ([`super::DEFAULT_MACS`]); MD5 and the
//! -96 forms are here for peers and configurations that ask for them.

use super::mac_info;
use super::umac::Umac;
use crate::crypto::{constant_time_eq, CryptoError};
use ::hmac::Mac as _;
use aws_lc_rs::hmac;

/// Largest tag of any MAC here (HMAC-SHA-512).
const MAX_TAG: usize = 64;

/// HMAC-MD5 from RustCrypto: aws-lc-rs has no MD5 HMAC.
type HmacMd5 = ::hmac::Hmac<md5::Md5>;

/// A MAC algorithm with its key. Held inline: each direction's [`Mac`] lives
/// in a construction boxed once per key exchange (`super::Built`).
#[allow(clippy::large_enum_variant)]
enum Keyed {
    /// The `none` MAC.
    None,
    /// HMAC-SHA-1 or HMAC-SHA-2 (aws-lc-rs).
    Hmac(hmac::Key),
    /// HMAC-MD5, keyed once and cloned per packet.
    HmacMd5(HmacMd5),
    /// UMAC-64 or UMAC-128 with the sequence number as nonce.
    Umac(Umac),
}

/// One direction's MAC key, or no MAC.
pub(super) struct Mac {
    key: Keyed,
    tag_len: usize,
    etm: bool,
}

impl Mac {
    /// No MAC: empty tags (RFC 4253 6.4, before the first NEWKEYS).
    pub(super) fn none() -> Self {
        Mac {
            key: Keyed::None,
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
        let base = name.strip_suffix("-etm@openssh.com").unwrap_or(name);
        let base = base.strip_suffix("@openssh.com").unwrap_or(base);
        let aws = |alg: hmac::Algorithm| {
            // A -96 tag is a prefix of the full one.
            if alg.digest_algorithm().output_len() < info.tag_len {
                return Err(CryptoError);
            }
            Ok(Keyed::Hmac(hmac::Key::new(alg, key)))
        };
        let keyed = match base {
            "none" => return Ok(Mac::none()),
            "hmac-sha2-256" => aws(hmac::HMAC_SHA256)?,
            "hmac-sha2-512" => aws(hmac::HMAC_SHA512)?,
            "hmac-sha1" | "hmac-sha1-96" => aws(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY)?,
            "hmac-md5" | "hmac-md5-96" => {
                Keyed::HmacMd5(HmacMd5::new_from_slice(key).map_err(|_| CryptoError)?)
            }
            "umac-64" | "umac-128" => Keyed::Umac(Umac::new(key, info.tag_len)?),
            _ => return Err(CryptoError),
        };
        Ok(Mac {
            key: keyed,
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

    /// Writes the tag of packet `seq` over `data` into `out` (`tag_len()`
    /// bytes; a shorter `out` gets the first bytes, a longer one keeps its
    /// tail). Never fails in practice; if it did, the tag is zeros, which the
    /// peer rejects.
    pub(super) fn sign(&self, seq: u32, data: &[u8], out: &mut [u8]) {
        if self.try_sign(seq, data, out).is_err() {
            out.iter_mut().take(self.tag_len).for_each(|o| *o = 0);
        }
    }

    fn try_sign(&self, seq: u32, data: &[u8], out: &mut [u8]) -> Result<(), CryptoError> {
        let copy = |out: &mut [u8], tag: &[u8]| {
            for (o, t) in out.iter_mut().zip(tag).take(self.tag_len) {
                *o = *t;
            }
        };
        match &self.key {
            Keyed::None => {}
            Keyed::Hmac(key) => {
                let mut ctx = hmac::Context::with_key(key);
                ctx.update(&seq.to_be_bytes());
                ctx.update(data);
                copy(out, ctx.sign().as_ref());
            }
            Keyed::HmacMd5(key) => {
                let mut ctx = HmacMd5::clone(key);
                ctx.update(&seq.to_be_bytes());
                ctx.update(data);
                copy(out, &ctx.finalize().into_bytes());
            }
            Keyed::Umac(umac) => umac.sign(&u64::from(seq).to_be_bytes(), data, out)?,
        }
        Ok(())
    }

    /// Checks `tag` against the tag of packet `seq` over `data`, in constant time.
    pub(super) fn verify(&self, seq: u32, data: &[u8], tag: &[u8]) -> Result<(), CryptoError> {
        if tag.len() != self.tag_len {
            return Err(CryptoError);
        }
        if matches!(self.key, Keyed::None) {
            return Ok(());
        }
        let mut expect = [0u8; MAX_TAG];
        let expect = expect.get_mut(..self.tag_len).ok_or(CryptoError)?;
        self.try_sign(seq, data, expect)?;
        if constant_time_eq(expect, tag) {
            Ok(())
        } else {
            Err(CryptoError)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{from_hex, to_hex};
    use super::*;

    /// Signs `data` with the MAC `name`, the first 4 bytes taken as the
    /// sequence number (HMAC sees the same byte string), checks the tag
    /// verifies and a flipped bit in tag or data does not.
    fn check(name: &str, key: &[u8], data: &[u8], want: &str) {
        let m = Mac::new(name, key).unwrap();
        let (seq, data) = data.split_at(4);
        let seq = u32::from_be_bytes(seq.try_into().unwrap());
        let mut out = vec![0u8; m.tag_len()];
        m.sign(seq, data, &mut out);
        assert_eq!(to_hex(&out), want, "{name}");
        assert!(m.verify(seq, data, &out).is_ok(), "{name}");
        out[0] ^= 1;
        assert!(m.verify(seq, data, &out).is_err(), "{name}");
        out[0] ^= 1;
        let mut bad = data.to_vec();
        bad[0] ^= 0x80;
        assert!(m.verify(seq, &bad, &out).is_err(), "{name}");
        assert!(m.verify(seq ^ 1, data, &out).is_err(), "{name}");
    }

    #[test]
    fn rfc4231_case_2_through_seq_prefix() {
        // RFC 4231 4.3: key "Jefe" (padded to the key length with zeros
        // changes nothing: HMAC zero-pads keys to the block).
        let data = b"what do ya want for nothing?";
        let want256 = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
        let want512 = "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554\
                       9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737";
        let jefe = |n: usize| {
            let mut k = b"Jefe".to_vec();
            k.resize(n, 0);
            k
        };
        check("hmac-sha2-256", &jefe(32), data, want256);
        check("hmac-sha2-512-etm@openssh.com", &jefe(64), data, want512);
    }

    #[test]
    fn rfc2202_sha1_and_md5() {
        // RFC 2202 test cases 1 and 2 (keys zero-padded as above), and the
        // -96 forms: the first 12 bytes.
        let k0b = |n: usize| vec![0x0b; n];
        let jefe = |n: usize| {
            let mut k = b"Jefe".to_vec();
            k.resize(n, 0);
            k
        };
        let jefe_data = b"what do ya want for nothing?";
        let cases: &[(&str, Vec<u8>, &[u8], &str)] = &[
            (
                "hmac-sha1",
                k0b(20),
                b"Hi There",
                "b617318655057264e28bc0b6fb378c8ef146be00",
            ),
            (
                "hmac-sha1",
                jefe(20),
                jefe_data,
                "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79",
            ),
            (
                "hmac-md5",
                k0b(16),
                b"Hi There",
                "9294727a3638bb1c13f48ef8158bfc9d",
            ),
            (
                "hmac-md5",
                jefe(16),
                jefe_data,
                "750c783e6ab0b503eaa86e310a5db738",
            ),
        ];
        for (name, key, data, want) in cases {
            for suffix in ["", "-etm@openssh.com"] {
                check(&format!("{name}{suffix}"), key, data, want);
                check(&format!("{name}-96{suffix}"), key, data, &want[..24]);
            }
        }
    }

    #[test]
    fn umac_nonce_is_the_sequence_number() {
        // OpenSSH: UMAC over the packet alone, with the sequence number as
        // the nonce, a big-endian uint64.
        let key = b"abcdefghijklmnop";
        for (name, len) in [("umac-64@openssh.com", 8), ("umac-128-etm@openssh.com", 16)] {
            let u = Umac::new(key, len).unwrap();
            for seq in [0u32, 1, 0x0102_0304, u32::MAX] {
                let mut want = [0u8; 16];
                let nonce = from_hex(&format!("00000000{seq:08x}"));
                u.sign(&nonce, b"packet", &mut want).unwrap();
                let mut data = seq.to_be_bytes().to_vec();
                data.extend_from_slice(b"packet");
                check(name, key, &data, &to_hex(&want[..len]));
            }
        }
    }

    #[test]
    fn key_and_tag_lengths_are_checked() {
        assert!(Mac::new("hmac-sha2-256", &[0; 31]).is_err());
        assert!(Mac::new("hmac-sha2-512", &[0; 32]).is_err());
        assert!(Mac::new("hmac-sha1", &[0; 16]).is_err());
        assert!(Mac::new("hmac-md5-96", &[0; 20]).is_err());
        assert!(Mac::new("umac-64@openssh.com", &[0; 32]).is_err());
        assert!(Mac::new("hmac-sha1-etm", &[0; 20]).is_err());
        let m = Mac::new("hmac-sha2-512-etm@openssh.com", &[0; 64]).unwrap();
        assert_eq!((m.tag_len(), m.etm()), (64, true));
        assert!(m.verify(0, b"x", &[0; 32]).is_err());
        for (name, key, tag, etm) in [
            ("hmac-sha1-96", 20, 12, false),
            ("hmac-md5-etm@openssh.com", 16, 16, true),
            ("umac-64-etm@openssh.com", 16, 8, true),
            ("umac-128@openssh.com", 16, 16, false),
        ] {
            let m = Mac::new(name, &vec![0; key]).unwrap();
            assert_eq!((m.tag_len(), m.etm()), (tag, etm), "{name}");
        }
        let none = Mac::new("none", &[]).unwrap();
        assert!(none.verify(0, b"x", &[]).is_ok());
        assert!(none.verify(0, b"x", &[0]).is_err());
    }
}
