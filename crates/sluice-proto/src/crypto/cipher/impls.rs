//! Cipher implementations (fallback written by the lead).

use crate::crypto::{constant_time_eq, CryptoError, Opener, PacketPos, Sealer};
use aws_lc_rs::aead::{
    self, chacha20_poly1305_openssh as chacha, Aad, LessSafeKey, Nonce, UnboundKey,
};
use aws_lc_rs::cipher::{EncryptingKey, EncryptionContext, UnboundCipherKey};
use aws_lc_rs::hmac;
use aws_lc_rs::iv::FixedLength;

/// AES-GCM (RFC 5647): 4-byte fixed IV part + 8-byte invocation counter.
pub(super) struct Gcm {
    key: LessSafeKey,
    fixed: [u8; 4],
    counter: u64,
}

impl Gcm {
    pub(super) fn new(key: &[u8], iv: &[u8]) -> Result<Self, CryptoError> {
        let alg = if key.len() == 16 {
            &aead::AES_128_GCM
        } else {
            &aead::AES_256_GCM
        };
        let key = LessSafeKey::new(UnboundKey::new(alg, key).map_err(|_| CryptoError)?);
        let fixed = iv
            .get(..4)
            .and_then(|s| s.try_into().ok())
            .ok_or(CryptoError)?;
        let counter = iv
            .get(4..12)
            .and_then(|s| s.try_into().ok())
            .map(u64::from_be_bytes)
            .ok_or(CryptoError)?;
        Ok(Gcm {
            key,
            fixed,
            counter,
        })
    }

    fn nonce(&self, pos: PacketPos) -> Nonce {
        let mut n = [0u8; 12];
        n[..4].copy_from_slice(&self.fixed);
        n[4..].copy_from_slice(&self.counter.wrapping_add(pos.index).to_be_bytes());
        Nonce::assume_unique_for_key(n)
    }
}

impl Sealer for Gcm {
    fn block_size(&self) -> usize {
        16
    }
    fn tag_len(&self) -> usize {
        16
    }
    fn length_in_blocks(&self) -> bool {
        false
    }
    fn seal(&self, pos: PacketPos, packet: &mut [u8], tag: &mut [u8]) {
        let (len, body) = packet.split_at_mut(4.min(packet.len()));
        if let Ok(t) = self
            .key
            .seal_in_place_separate_tag(self.nonce(pos), Aad::from(&*len), body)
        {
            copy_prefix(tag, t.as_ref());
        }
    }
}

impl Opener for Gcm {
    fn block_size(&self) -> usize {
        16
    }
    fn tag_len(&self) -> usize {
        16
    }
    fn length_in_blocks(&self) -> bool {
        false
    }
    fn decrypt_length(&self, _pos: PacketPos, head: &[u8]) -> Result<u32, CryptoError> {
        plain_length(head)
    }
    fn open(&self, pos: PacketPos, packet: &mut [u8], tag: &[u8]) -> Result<(), CryptoError> {
        if packet.len() < 4 {
            return Err(CryptoError);
        }
        let (len, body) = packet.split_at_mut(4);
        self.key
            .open_in_place_separate_tag(self.nonce(pos), Aad::from(&*len), tag, body)
            .map_err(|_| CryptoError)?;
        Ok(())
    }
}

fn plain_length(head: &[u8]) -> Result<u32, CryptoError> {
    head.get(..4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_be_bytes)
        .ok_or(CryptoError)
}

/// chacha20-poly1305@openssh.com.
pub(super) struct ChaCha {
    seal: chacha::SealingKey,
    open: chacha::OpeningKey,
}

impl ChaCha {
    pub(super) fn new(key: &[u8]) -> Result<Self, CryptoError> {
        let k: &[u8; 64] = key.try_into().map_err(|_| CryptoError)?;
        Ok(ChaCha {
            seal: chacha::SealingKey::new(k),
            open: chacha::OpeningKey::new(k),
        })
    }
}

impl Sealer for ChaCha {
    fn block_size(&self) -> usize {
        8
    }
    fn tag_len(&self) -> usize {
        16
    }
    fn length_in_blocks(&self) -> bool {
        false
    }
    fn seal(&self, pos: PacketPos, packet: &mut [u8], tag: &mut [u8]) {
        if let Ok(t) = <&mut [u8; 16]>::try_from(tag) {
            self.seal.seal_in_place(pos.seq, packet, t);
        }
    }
}

impl Opener for ChaCha {
    fn block_size(&self) -> usize {
        8
    }
    fn tag_len(&self) -> usize {
        16
    }
    fn length_in_blocks(&self) -> bool {
        false
    }
    fn decrypt_length(&self, pos: PacketPos, head: &[u8]) -> Result<u32, CryptoError> {
        let enc: [u8; 4] = head
            .get(..4)
            .and_then(|b| b.try_into().ok())
            .ok_or(CryptoError)?;
        Ok(u32::from_be_bytes(
            self.open.decrypt_packet_length(pos.seq, enc),
        ))
    }
    fn open(&self, pos: PacketPos, packet: &mut [u8], tag: &[u8]) -> Result<(), CryptoError> {
        let tag: &[u8; 16] = tag.try_into().map_err(|_| CryptoError)?;
        let enc: [u8; 4] = packet
            .get(..4)
            .and_then(|b| b.try_into().ok())
            .ok_or(CryptoError)?;
        self.open
            .open_in_place(pos.seq, packet, tag)
            .map_err(|_| CryptoError)?;
        let len = self.open.decrypt_packet_length(pos.seq, enc);
        if let Some(l) = packet.get_mut(..4) {
            l.copy_from_slice(&len);
        }
        Ok(())
    }
}

/// The MAC half of classic and etm constructions.
pub(super) struct Mac {
    key: Option<hmac::Key>,
    tag_len: usize,
    pub(super) etm: bool,
}

impl Mac {
    pub(super) fn new(name: &str, key: &[u8]) -> Result<Self, CryptoError> {
        let (alg, tag_len, etm) = match name {
            "hmac-sha2-256" => (Some(hmac::HMAC_SHA256), 32, false),
            "hmac-sha2-512" => (Some(hmac::HMAC_SHA512), 64, false),
            "hmac-sha2-256-etm@openssh.com" => (Some(hmac::HMAC_SHA256), 32, true),
            "hmac-sha2-512-etm@openssh.com" => (Some(hmac::HMAC_SHA512), 64, true),
            "none" => (None, 0, false),
            _ => return Err(CryptoError),
        };
        Ok(Mac {
            key: alg.map(|a| hmac::Key::new(a, key)),
            tag_len,
            etm,
        })
    }

    fn compute(&self, seq: u32, data: &[u8], out: &mut [u8]) {
        let Some(key) = &self.key else { return };
        let mut ctx = hmac::Context::with_key(key);
        ctx.update(&seq.to_be_bytes());
        ctx.update(data);
        copy_prefix(out, ctx.sign().as_ref());
    }

    fn verify(&self, seq: u32, data: &[u8], tag: &[u8]) -> Result<(), CryptoError> {
        if self.key.is_none() {
            return if tag.is_empty() {
                Ok(())
            } else {
                Err(CryptoError)
            };
        }
        let mut expect = [0u8; 64];
        let e = expect.get_mut(..self.tag_len).ok_or(CryptoError)?;
        self.compute(seq, data, e);
        if tag.len() == self.tag_len && constant_time_eq(e, tag) {
            Ok(())
        } else {
            Err(CryptoError)
        }
    }
}

/// AES-CTR (RFC 4344) or no cipher, with an HMAC or no MAC.
pub(super) struct CtrMac {
    /// None: the `none` cipher.
    key: Option<EncryptingKey>,
    iv: u128,
    mac: Mac,
}

impl CtrMac {
    pub(super) fn new(key: Option<&[u8]>, iv: &[u8], mac: Mac) -> Result<Self, CryptoError> {
        let key = match key {
            Some(k) => {
                let alg = match k.len() {
                    16 => &aws_lc_rs::cipher::AES_128,
                    24 => &aws_lc_rs::cipher::AES_192,
                    _ => &aws_lc_rs::cipher::AES_256,
                };
                Some(
                    EncryptingKey::ctr(UnboundCipherKey::new(alg, k).map_err(|_| CryptoError)?)
                        .map_err(|_| CryptoError)?,
                )
            }
            None => None,
        };
        let iv = if key.is_some() {
            u128::from_be_bytes(iv.try_into().map_err(|_| CryptoError)?)
        } else {
            0
        };
        Ok(CtrMac { key, iv, mac })
    }

    /// Applies the keystream starting `offset` bytes into these keys' stream.
    fn apply(&self, offset: u64, data: &mut [u8]) {
        let Some(key) = &self.key else { return };
        let ctr = self.iv.wrapping_add(u128::from(offset / 16));
        let ctx = EncryptionContext::Iv128(FixedLength::from(ctr.to_be_bytes()));
        let _ = key.less_safe_encrypt(data, ctx);
    }

    fn bs(&self) -> usize {
        if self.key.is_some() {
            16
        } else {
            8
        }
    }
}

impl Sealer for CtrMac {
    fn block_size(&self) -> usize {
        self.bs()
    }
    fn tag_len(&self) -> usize {
        self.mac.tag_len
    }
    fn length_in_blocks(&self) -> bool {
        !self.mac.etm
    }
    fn seal(&self, pos: PacketPos, packet: &mut [u8], tag: &mut [u8]) {
        if self.mac.etm {
            if let Some(body) = packet.get_mut(4..) {
                self.apply(pos.offset, body);
            }
            self.mac.compute(pos.seq, packet, tag);
        } else {
            self.mac.compute(pos.seq, packet, tag);
            self.apply(pos.offset, packet);
        }
    }
}

impl Opener for CtrMac {
    fn block_size(&self) -> usize {
        self.bs()
    }
    fn tag_len(&self) -> usize {
        self.mac.tag_len
    }
    fn length_in_blocks(&self) -> bool {
        !self.mac.etm
    }
    fn decrypt_length(&self, pos: PacketPos, head: &[u8]) -> Result<u32, CryptoError> {
        if self.mac.etm || self.key.is_none() {
            return plain_length(head);
        }
        let mut block: [u8; 16] = head
            .get(..16)
            .and_then(|b| b.try_into().ok())
            .ok_or(CryptoError)?;
        self.apply(pos.offset, &mut block);
        plain_length(&block)
    }
    fn open(&self, pos: PacketPos, packet: &mut [u8], tag: &[u8]) -> Result<(), CryptoError> {
        if self.mac.etm {
            self.mac.verify(pos.seq, packet, tag)?;
            if let Some(body) = packet.get_mut(4..) {
                self.apply(pos.offset, body);
            }
            Ok(())
        } else {
            self.apply(pos.offset, packet);
            self.mac.verify(pos.seq, packet, tag)
        }
    }
}

impl CtrMac {
    /// No cipher, no MAC: the state before the first NEWKEYS.
    pub(super) fn initial() -> Self {
        CtrMac {
            key: None,
            iv: 0,
            mac: Mac {
                key: None,
                tag_len: 0,
                etm: false,
            },
        }
    }
}

/// Copies as much of `src` as fits into the start of `dst`.
fn copy_prefix(dst: &mut [u8], src: &[u8]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = *s;
    }
}
