//! An **insecure**, deterministic crypto provider for tests and fuzzing only.
//! Compiled with the `insecure-test-crypto` feature or under `cfg(fuzzing)`;
//! the runtime never enables it.
//!
//! Every algorithm here is named [`NAME`] (`insecure-test@sluice.dev`), a
//! name no real SSH implementation offers, so it can never be negotiated
//! with a real peer by accident: a connection using [`config`] fails
//! negotiation against anything but another such connection.
//!
//! - Key exchange: Q_C and Q_S are 32 bytes from the Rng; K is SHA-256 of
//!   both, so anyone who sees the exchange knows K.
//! - Cipher: an AEAD-shaped XOR with the key and sequence number, and an
//!   8-byte FNV-1a checksum as tag. It detects accidental damage, nothing
//!   more, and costs next to nothing per byte.
//! - Host and user keys ([`InsecureKey`]): the "signature" is SHA-256 of
//!   the key's id and the data, which anyone can compute.
//! - [`SeededRng`]: a splitmix64 stream, so two runs with the same seeds
//!   put the same bytes on the wire.
//!
//! The exchange hash and key derivation stay SHA-2 as for every provider:
//! they are protocol, not provider.

use super::cipher::{CipherInfo, DirectionKeys};
use super::hostkey::Signer;
use super::kex::{HashAlg, KexClient, SharedSecret};
use super::provider::{CryptoProvider, KexMethod, PacketCipher};
use super::{CryptoError, Opener, PacketPos, Rng, Sealer};
use crate::config::Config;
use crate::wire::{Reader, Writer};

/// The wire name of every algorithm of this provider.
pub const NAME: &str = "insecure-test@sluice.dev";

/// Bytes of a public value and of a key id.
const LEN: usize = 32;
/// Bytes of the checksum tag.
const TAG: usize = 8;

/// The insecure provider: one kex, one cipher, one signature algorithm.
pub fn provider() -> CryptoProvider {
    CryptoProvider {
        name: "insecure-test",
        kex: &[&Kex],
        ciphers: &[&Cipher],
        macs: &[],
        sig_algs_for_key_type,
        verify,
    }
}

/// [`Config::default`] switched to the insecure provider and its names.
pub fn config() -> Config {
    let one = || vec![NAME.to_owned()];
    Config {
        kex: one(),
        host_key_algs: one(),
        ciphers: one(),
        macs: one(),
        pubkey_algs: one(),
        provider: provider(),
        ..Config::default()
    }
}

/// A deterministic Rng (splitmix64): the same seed gives the same stream.
#[derive(Debug, Clone)]
pub struct SeededRng(u64);

impl SeededRng {
    /// A stream starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SeededRng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

impl Rng for SeededRng {
    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let word = self.next().to_le_bytes();
            let n = chunk.len();
            chunk.copy_from_slice(word.get(..n).unwrap_or_default());
        }
    }
}

/// K = string(SHA-256(Q_C || Q_S)).
fn secret(q_c: &[u8], q_s: &[u8]) -> SharedSecret {
    let mut both = Vec::with_capacity(2 * LEN);
    both.extend_from_slice(q_c);
    both.extend_from_slice(q_s);
    SharedSecret::string(&HashAlg::Sha256.digest(&both))
}

struct Kex;

struct KexStarted([u8; LEN]);

impl KexClient for KexStarted {
    fn client_public(&self) -> &[u8] {
        &self.0
    }

    fn finish(self: Box<Self>, server_public: &[u8]) -> Result<SharedSecret, CryptoError> {
        if server_public.len() != LEN {
            return Err(CryptoError);
        }
        Ok(secret(&self.0, server_public))
    }
}

impl KexMethod for Kex {
    fn name(&self) -> &'static str {
        NAME
    }

    fn hash(&self) -> HashAlg {
        HashAlg::Sha256
    }

    fn start(&self, rng: &mut dyn Rng) -> Result<Box<dyn KexClient>, CryptoError> {
        let mut q_c = [0u8; LEN];
        rng.fill(&mut q_c);
        Ok(Box::new(KexStarted(q_c)))
    }

    fn respond(
        &self,
        client_public: &[u8],
        rng: &mut dyn Rng,
    ) -> Result<(Vec<u8>, SharedSecret), CryptoError> {
        if client_public.len() != LEN {
            return Err(CryptoError);
        }
        let mut q_s = vec![0u8; LEN];
        rng.fill(&mut q_s);
        let k = secret(client_public, &q_s);
        Ok((q_s, k))
    }
}

struct Cipher;

impl PacketCipher for Cipher {
    fn info(&self) -> CipherInfo {
        CipherInfo {
            name: NAME,
            key_len: LEN,
            iv_len: 0,
            block_size: 8,
            aead: true,
        }
    }

    fn sealer(&self, keys: DirectionKeys<'_>) -> Result<Box<dyn Sealer>, CryptoError> {
        Ok(Box::new(Xor::new(keys.key)?))
    }

    fn opener(&self, keys: DirectionKeys<'_>) -> Result<Box<dyn Opener>, CryptoError> {
        Ok(Box::new(Xor::new(keys.key)?))
    }
}

/// XOR "encryption" of everything after the length field, FNV-1a tag over
/// the whole packet as sent.
struct Xor {
    key: [u8; LEN],
}

impl Xor {
    fn new(key: &[u8]) -> Result<Self, CryptoError> {
        Ok(Xor {
            key: key.try_into().map_err(|_| CryptoError)?,
        })
    }

    fn xor(&self, seq: u32, body: &mut [u8]) {
        let s = seq.to_le_bytes();
        for (i, (b, k)) in body.iter_mut().zip(self.key.iter().cycle()).enumerate() {
            *b ^= k ^ s.get(i % 4).copied().unwrap_or(0);
        }
    }

    fn tag(&self, seq: u32, packet: &[u8]) -> [u8; TAG] {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let parts: [&[u8]; 3] = [&self.key, &seq.to_be_bytes(), packet];
        for b in parts.into_iter().flatten() {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
        h.to_be_bytes()
    }
}

impl Sealer for Xor {
    fn block_size(&self) -> usize {
        8
    }
    fn tag_len(&self) -> usize {
        TAG
    }
    fn length_in_blocks(&self) -> bool {
        false
    }
    fn seal(&self, pos: PacketPos, packet: &mut [u8], tag: &mut [u8]) {
        if let Some(body) = packet.get_mut(4..) {
            self.xor(pos.seq, body);
        }
        tag.copy_from_slice(&self.tag(pos.seq, packet));
    }
}

impl Opener for Xor {
    fn block_size(&self) -> usize {
        8
    }
    fn tag_len(&self) -> usize {
        TAG
    }
    fn length_in_blocks(&self) -> bool {
        false
    }
    fn decrypt_length(&self, _pos: PacketPos, head: &[u8]) -> Result<u32, CryptoError> {
        let len: [u8; 4] = head
            .get(..4)
            .and_then(|h| h.try_into().ok())
            .ok_or(CryptoError)?;
        Ok(u32::from_be_bytes(len))
    }
    fn open(&self, pos: PacketPos, packet: &mut [u8], tag: &[u8]) -> Result<(), CryptoError> {
        if tag != self.tag(pos.seq, packet) {
            return Err(CryptoError);
        }
        if let Some(body) = packet.get_mut(4..) {
            self.xor(pos.seq, body);
        }
        Ok(())
    }
}

/// A key of the insecure provider, for host or user authentication: a
/// 32-byte id anyone who sees the public blob knows.
#[derive(Debug, Clone)]
pub struct InsecureKey {
    id: [u8; LEN],
}

impl InsecureKey {
    /// The key with this id (tests give each party its own).
    pub fn new(id: [u8; LEN]) -> Self {
        InsecureKey { id }
    }
}

/// SHA-256(id || data): the whole "signature".
fn mac(id: &[u8], data: &[u8]) -> Vec<u8> {
    let mut both = Vec::with_capacity(id.len() + data.len());
    both.extend_from_slice(id);
    both.extend_from_slice(data);
    HashAlg::Sha256.digest(&both)
}

impl Signer for InsecureKey {
    fn public_blob(&self) -> Vec<u8> {
        let mut blob = Vec::new();
        Writer::new(&mut blob).utf8(NAME).string(&self.id);
        blob
    }

    fn sig_algs(&self) -> Vec<&'static str> {
        vec![NAME]
    }

    fn sign(&self, sig_alg: &str, data: &[u8]) -> Result<Vec<u8>, CryptoError> {
        if sig_alg != NAME {
            return Err(CryptoError);
        }
        let mut blob = Vec::new();
        Writer::new(&mut blob)
            .utf8(NAME)
            .string(&mac(&self.id, data));
        Ok(blob)
    }
}

fn sig_algs_for_key_type(key_type: &str) -> &'static [&'static str] {
    if key_type == NAME {
        &[NAME]
    } else {
        &[]
    }
}

fn verify(
    sig_alg: &str,
    key_blob: &[u8],
    signature: &[u8],
    data: &[u8],
) -> Result<(), CryptoError> {
    let mut key = Reader::new(key_blob);
    let key_type = key.utf8().map_err(|_| CryptoError)?;
    let id = key.string().map_err(|_| CryptoError)?;
    key.finish().map_err(|_| CryptoError)?;
    let mut sig = Reader::new(signature);
    let alg = sig.utf8().map_err(|_| CryptoError)?;
    let hash = sig.string().map_err(|_| CryptoError)?;
    sig.finish().map_err(|_| CryptoError)?;
    if key_type != NAME || alg != NAME || sig_alg != NAME || hash != mac(id, data) {
        return Err(CryptoError);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_rng_repeats_and_differs() {
        let (mut a, mut b, mut c) = (SeededRng::new(1), SeededRng::new(1), SeededRng::new(2));
        let (mut x, mut y, mut z) = ([0u8; 37], [0u8; 37], [0u8; 37]);
        a.fill(&mut x);
        b.fill(&mut y);
        c.fill(&mut z);
        assert_eq!(x, y);
        assert_ne!(x, z);
    }

    #[test]
    fn kex_agrees_and_checks_lengths() {
        let mut rng = SeededRng::new(5);
        let c = Kex.start(&mut rng).unwrap();
        let (q_s, k_s) = Kex.respond(c.client_public(), &mut rng).unwrap();
        assert_eq!(c.finish(&q_s).unwrap().encoded(), k_s.encoded());
        assert!(Kex.respond(&[0; 31], &mut rng).is_err());
        assert!(Kex.start(&mut rng).unwrap().finish(&[0; 33]).is_err());
    }

    #[test]
    fn cipher_round_trips_and_detects_damage() {
        let x = Xor::new(&[3u8; LEN]).unwrap();
        let pos = PacketPos {
            seq: 7,
            ..PacketPos::default()
        };
        let plain = [0u8, 0, 0, 12, 4, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
        let mut p = plain;
        let mut tag = [0u8; TAG];
        x.seal(pos, &mut p, &mut tag);
        assert_ne!(p, plain);
        assert_eq!(x.decrypt_length(pos, &p).unwrap(), 12);
        let mut bad = p;
        bad[9] ^= 1;
        assert!(x.open(pos, &mut bad, &tag).is_err());
        assert!(x.open(PacketPos::default(), &mut p.clone(), &tag).is_err());
        x.open(pos, &mut p, &tag).unwrap();
        assert_eq!(p, plain);
    }

    #[test]
    fn signatures_verify_only_for_their_key_and_data() {
        let k = InsecureKey::new([1; LEN]);
        let sig = k.sign(NAME, b"data").unwrap();
        let blob = k.public_blob();
        verify(NAME, &blob, &sig, b"data").unwrap();
        assert!(verify(NAME, &blob, &sig, b"datb").is_err());
        let other = InsecureKey::new([2; LEN]).public_blob();
        assert!(verify(NAME, &other, &sig, b"data").is_err());
        assert!(verify("ssh-ed25519", &blob, &sig, b"data").is_err());
        assert!(k.sign("ssh-ed25519", b"data").is_err());
    }
}
