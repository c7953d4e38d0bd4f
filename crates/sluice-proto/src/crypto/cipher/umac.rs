//! UMAC (RFC 4418) with AES-128, as `umac-64@openssh.com` and
//! `umac-128@openssh.com` use it: a 16-byte key, 8- or 16-byte tags, and the
//! packet's sequence number as the nonce (see [`super::mac`]).
//!
//! `Tag = UHASH(K, M) xor PDF(K, Nonce)` (RFC 4418 3-5). UHASH runs one
//! iteration per 4 tag bytes, each over its own key material:
//! - L1 (5.2.1-5.2.2): NH over 1024-byte blocks of 32-bit little-endian
//!   message words against big-endian key words, each block's bit length
//!   added to its 64-bit result;
//! - L2 (5.3-5.4): a polynomial over those results mod 2^64 - 59, switching
//!   to mod 2^128 - 159 past 2^14 blocks (16 MiB); skipped for messages of
//!   one block or less;
//! - L3 (5.5): an inner product of the 16-bit words mod 2^36 - 5, 32 bits
//!   kept and masked.
//!
//! All keys are derived once (KDF, 3.2.1) and the hash runs in one pass over
//! the message with every iteration side by side, on the stack: nothing is
//! allocated per packet. AES comes from aws-lc-rs (ECB on single blocks).

use crate::crypto::CryptoError;
use aws_lc_rs::cipher::{EncryptingKey, UnboundCipherKey, AES_128};
use zeroize::Zeroize;

/// UMAC's key (the AES-128 key) in bytes.
pub(super) const KEY_LEN: usize = 16;
/// Most UHASH iterations: UMAC-128's 16-byte tag, 4 bytes each.
const MAX_ITERS: usize = 4;
/// L1's block size in bytes (RFC 4418 5.2.1).
const L1_BLOCK: usize = 1024;
/// NH key words: one block, plus 4 words more per further iteration.
const NH_KEY_WORDS: usize = L1_BLOCK / 4 + 4 * (MAX_ITERS - 1);
/// L2 hashes this many L1 results mod 2^64 - 59 before switching to
/// 2^128 - 159 (RFC 4418 5.4: M longer than 2^17 bytes).
const POLY64_WORDS: u64 = 1 << 14;
const P36: u64 = (1 << 36) - 5;
const P64: u64 = 0u64.wrapping_sub(59);
const P128: u128 = 0u128.wrapping_sub(159);

/// One UMAC key, expanded for a tag of 4, 8, 12 or 16 bytes.
pub(super) struct Umac {
    tag_len: usize,
    /// KDF(K, 1): the NH key as big-endian 32-bit words.
    nh_key: [u32; NH_KEY_WORDS],
    /// KDF(K, 2): each iteration's POLY keys, masked (RFC 4418 5.4).
    k64: [u64; MAX_ITERS],
    k128: [u128; MAX_ITERS],
    /// KDF(K, 3) reduced mod 2^36 - 5, and KDF(K, 4) (RFC 4418 5.5).
    l3_k1: [[u64; 8]; MAX_ITERS],
    l3_k2: [u32; MAX_ITERS],
    /// AES with KDF(K, 0, 16), for the pad (RFC 4418 3.2.2).
    pdf: EncryptingKey,
}

/// One AES block encrypted in place.
fn encrypt_block(key: &EncryptingKey, block: &mut [u8; 16]) -> Result<(), CryptoError> {
    key.encrypt(block).map(|_| ()).map_err(|_| CryptoError)
}

/// KDF(K, index, out.len()) (RFC 4418 3.2.1): AES_K(uint64 index ||
/// uint64 i) for i = 1, 2, ..., concatenated and cut to length.
fn kdf(key: &EncryptingKey, index: u64, out: &mut [u8]) -> Result<(), CryptoError> {
    for (i, chunk) in (1u64..).zip(out.chunks_mut(16)) {
        let mut block = (u128::from(index) << 64 | u128::from(i)).to_be_bytes();
        encrypt_block(key, &mut block)?;
        chunk.copy_from_slice(block.get(..chunk.len()).ok_or(CryptoError)?);
        block.zeroize();
    }
    Ok(())
}

fn aes128(key: &[u8]) -> Result<EncryptingKey, CryptoError> {
    let key = UnboundCipherKey::new(&AES_128, key).map_err(|_| CryptoError)?;
    EncryptingKey::ecb(key).map_err(|_| CryptoError)
}

fn be_u64(b: &[u8]) -> u64 {
    b.first_chunk::<8>().map_or(0, |b| u64::from_be_bytes(*b))
}

fn be_u128(b: &[u8]) -> u128 {
    b.first_chunk::<16>().map_or(0, |b| u128::from_be_bytes(*b))
}

impl Umac {
    /// Expands a 16-byte key for `tag_len`-byte tags (4, 8, 12 or 16).
    pub(super) fn new(key: &[u8], tag_len: usize) -> Result<Self, CryptoError> {
        if key.len() != KEY_LEN || !matches!(tag_len, 4 | 8 | 12 | 16) {
            return Err(CryptoError);
        }
        let iters = tag_len / 4;
        let aes = aes128(key)?;
        let mut buf = [0u8; NH_KEY_WORDS * 4];

        let mut pdf_key = [0u8; 16];
        kdf(&aes, 0, &mut pdf_key)?;
        let pdf = aes128(&pdf_key);
        pdf_key.zeroize();

        let mut nh_key = [0u32; NH_KEY_WORDS];
        kdf(&aes, 1, &mut buf)?;
        for (w, b) in nh_key.iter_mut().zip(buf.chunks_exact(4)) {
            *w = b.first_chunk::<4>().map_or(0, |b| u32::from_be_bytes(*b));
        }

        let (mut k64, mut k128) = ([0u64; MAX_ITERS], [0u128; MAX_ITERS]);
        let l2 = buf.get_mut(..24 * iters).ok_or(CryptoError)?;
        kdf(&aes, 2, l2)?;
        for ((k64, k128), b) in k64.iter_mut().zip(&mut k128).zip(l2.chunks_exact(24)) {
            *k64 = be_u64(b) & 0x01ff_ffff_01ff_ffff;
            *k128 =
                be_u128(b.get(8..).unwrap_or_default()) & 0x01ff_ffff_01ff_ffff_01ff_ffff_01ff_ffff;
        }

        let mut l3_k1 = [[0u64; 8]; MAX_ITERS];
        let l3 = buf.get_mut(..64 * iters).ok_or(CryptoError)?;
        kdf(&aes, 3, l3)?;
        for (k, b) in l3_k1.iter_mut().zip(l3.chunks_exact(64)) {
            for (k, b) in k.iter_mut().zip(b.chunks_exact(8)) {
                *k = be_u64(b) % P36;
            }
        }

        let mut l3_k2 = [0u32; MAX_ITERS];
        let l3 = buf.get_mut(..4 * iters).ok_or(CryptoError)?;
        kdf(&aes, 4, l3)?;
        for (k, b) in l3_k2.iter_mut().zip(l3.chunks_exact(4)) {
            *k = b.first_chunk::<4>().map_or(0, |b| u32::from_be_bytes(*b));
        }
        buf.zeroize();

        Ok(Umac {
            tag_len,
            nh_key,
            k64,
            k128,
            l3_k1,
            l3_k2,
            pdf: pdf?,
        })
    }

    /// Writes UMAC(K, msg, nonce) into the first `tag_len` bytes of `out`
    /// (a shorter `out` gets the first bytes). `nonce` is 1 to 16 bytes.
    pub(super) fn sign(&self, nonce: &[u8], msg: &[u8], out: &mut [u8]) -> Result<(), CryptoError> {
        let pad = self.pdf(nonce)?;
        let hash = self.uhash(msg);
        for ((o, p), h) in out.iter_mut().zip(pad).zip(hash).take(self.tag_len) {
            *o = p ^ h;
        }
        Ok(())
    }

    /// PDF(K, Nonce, taglen) (RFC 4418 3.2.2): the nonce, zero-padded to a
    /// block and encrypted; a 4- or 8-byte tag takes the slice of the block
    /// that the nonce's low bits select (those bits cleared before AES).
    fn pdf(&self, nonce: &[u8]) -> Result<[u8; 16], CryptoError> {
        if nonce.is_empty() || nonce.len() > 16 {
            return Err(CryptoError);
        }
        let mut block = [0u8; 16];
        block
            .get_mut(..nonce.len())
            .ok_or(CryptoError)?
            .copy_from_slice(nonce);
        let slices = 16 / self.tag_len;
        let index = if self.tag_len <= 8 {
            let last = block.get_mut(nonce.len() - 1).ok_or(CryptoError)?;
            let index = usize::from(*last) % slices;
            *last ^= index as u8;
            index
        } else {
            0
        };
        encrypt_block(&self.pdf, &mut block)?;
        block.rotate_left(index * self.tag_len);
        Ok(block)
    }

    /// UHASH(K, M, taglen) (RFC 4418 5.1): 4 bytes per iteration.
    fn uhash(&self, msg: &[u8]) -> [u8; 16] {
        let iters = self.tag_len / 4;
        let mut l2 = [Poly::default(); MAX_ITERS];
        let mut last = [0u64; MAX_ITERS];
        let mut words = [0u32; L1_BLOCK / 4];
        // An empty message is one empty block (RFC 4418 5.2.2).
        let blocks = msg
            .chunks(L1_BLOCK)
            .chain(msg.is_empty().then_some(&[][..]));
        for block in blocks {
            let n = nh_words(block, &mut words);
            let words = words.get(..n).unwrap_or_default();
            let len_bits = 8 * block.len() as u64;
            for (i, ((last, l2), (k64, k128))) in last
                .iter_mut()
                .zip(&mut l2)
                .zip(self.k64.iter().zip(&self.k128))
                .take(iters)
                .enumerate()
            {
                let key = self.nh_key.get(4 * i..).unwrap_or_default();
                *last = nh(key, words).wrapping_add(len_bits);
                if msg.len() > L1_BLOCK {
                    l2.absorb(*k64, *k128, *last);
                }
            }
        }
        let mut out = [0u8; 16];
        for (i, (o, last)) in out.chunks_exact_mut(4).zip(last).take(iters).enumerate() {
            // One block or less: L2 is skipped and its 16-byte input is
            // zeroes(64) || L1 output (RFC 4418 5.1).
            let l2_out = match l2.get(i) {
                Some(p) if msg.len() > L1_BLOCK => p.finish(self.k128.get(i).copied()),
                _ => u128::from(last),
            };
            let (k1, k2) = (self.l3_k1.get(i), self.l3_k2.get(i));
            let (Some(k1), Some(k2)) = (k1, k2) else {
                break;
            };
            o.copy_from_slice(&l3(k1, *k2, l2_out).to_be_bytes());
        }
        out
    }
}

impl Drop for Umac {
    fn drop(&mut self) {
        self.nh_key.zeroize();
        self.k64.zeroize();
        self.k128.zeroize();
        self.l3_k1.iter_mut().for_each(|k| k.zeroize());
        self.l3_k2.zeroize();
    }
}

/// Loads `block` as little-endian 32-bit words into `words`, zero-padded to
/// a positive multiple of 32 bytes (RFC 4418 5.2.2 zeropad); returns how
/// many words NH reads.
fn nh_words(block: &[u8], words: &mut [u32; L1_BLOCK / 4]) -> usize {
    let mut chunks = block.chunks_exact(4);
    let mut n = 0;
    for (w, c) in words.iter_mut().zip(chunks.by_ref()) {
        *w = c.first_chunk::<4>().map_or(0, |c| u32::from_le_bytes(*c));
        n += 1;
    }
    let rest = chunks.remainder();
    let padded = block.len().div_ceil(32).max(1) * 8;
    if let Some(w) = words.get_mut(n..padded) {
        w.fill(0);
        if let Some(first) = w.first_mut().filter(|_| !rest.is_empty()) {
            let mut tail = [0u8; 4];
            tail.iter_mut().zip(rest).for_each(|(t, r)| *t = *r);
            *first = u32::from_le_bytes(tail);
        }
    }
    padded
}

/// NH(K, M) (RFC 4418 5.2.1) over whole 8-word groups, mod 2^64.
fn nh(key: &[u32], msg: &[u32]) -> u64 {
    let mut y = 0u64;
    for (m, k) in msg.chunks_exact(8).zip(key.chunks_exact(8)) {
        if let (&[m0, m1, m2, m3, m4, m5, m6, m7], &[k0, k1, k2, k3, k4, k5, k6, k7]) = (m, k) {
            let mul = |a: u32, b: u32| u64::from(a) * u64::from(b);
            y = y
                .wrapping_add(mul(m0.wrapping_add(k0), m4.wrapping_add(k4)))
                .wrapping_add(mul(m1.wrapping_add(k1), m5.wrapping_add(k5)))
                .wrapping_add(mul(m2.wrapping_add(k2), m6.wrapping_add(k6)))
                .wrapping_add(mul(m3.wrapping_add(k3), m7.wrapping_add(k7)));
        }
    }
    y
}

/// L2-HASH (RFC 4418 5.4) fed one L1 result at a time: POLY over 64-bit
/// words mod 2^64 - 59 for the first 2^14 of them, then POLY over 128-bit
/// words mod 2^128 - 159, started from the 64-bit result.
#[derive(Clone, Copy)]
struct Poly {
    count: u64,
    y64: u64,
    y128: u128,
    /// The first half of a 128-bit word, waiting for its second.
    half: Option<u64>,
}

impl Default for Poly {
    fn default() -> Self {
        Poly {
            count: 0,
            y64: 1,
            y128: 1,
            half: None,
        }
    }
}

impl Poly {
    fn absorb(&mut self, k64: u64, k128: u128, word: u64) {
        self.count += 1;
        if self.count <= POLY64_WORDS {
            self.y64 = poly64(k64, self.y64, word);
            return;
        }
        if self.count == POLY64_WORDS + 1 {
            self.y128 = poly128(k128, 1, u128::from(self.y64));
        }
        match self.half.take() {
            None => self.half = Some(word),
            Some(hi) => {
                self.y128 = poly128(k128, self.y128, u128::from(hi) << 64 | u128::from(word))
            }
        }
    }

    /// The 16-byte L2 output, as an integer. Past 2^14 words the rest is
    /// closed with a 0x80 byte and zero-padded to 16 bytes.
    fn finish(&self, k128: Option<u128>) -> u128 {
        if self.count <= POLY64_WORDS {
            return u128::from(self.y64);
        }
        let last = match self.half {
            Some(hi) => u128::from(hi) << 64 | 0x80 << 56,
            None => 0x80 << 120,
        };
        poly128(k128.unwrap_or(0), self.y128, last)
    }
}

/// One POLY step with 64-bit words (RFC 4418 5.3): `y = k * y + m mod p`,
/// a word at or past 2^64 - 2^32 entering as the marker p - 1 then m - 59.
fn poly64(k: u64, y: u64, m: u64) -> u64 {
    let step =
        |y: u64, m: u64| ((u128::from(k) * u128::from(y) + u128::from(m)) % u128::from(P64)) as u64;
    if m >= 0u64.wrapping_sub(1 << 32) {
        step(step(y, P64 - 1), m - 59)
    } else {
        step(y, m)
    }
}

/// One POLY step with 128-bit words, mod 2^128 - 159 (RFC 4418 5.3).
fn poly128(k: u128, y: u128, m: u128) -> u128 {
    let step = |y: u128, m: u128| add_mod_p128(mul_mod_p128(k, y), m);
    if m >= 0u128.wrapping_sub(1 << 96) {
        step(step(y, P128 - 1), m - 159)
    } else {
        step(y, m)
    }
}

/// `a * b mod 2^128 - 159`, through the 256-bit product and 2^128 = 159.
fn mul_mod_p128(a: u128, b: u128) -> u128 {
    let (hi, lo) = mul_wide(a, b);
    // hi * 2^128 + lo = hi * 159 + lo; hi * 159 < 2^136.
    let (h2, l2) = mul_wide(hi, 159);
    let (lo, carry) = l2.overflowing_add(lo);
    // (h2 + carry) * 2^128 + lo, with h2 + carry < 2^9.
    let fold = (h2 + u128::from(carry)) * 159;
    add_mod_p128(lo % P128, fold)
}

/// `a + b mod 2^128 - 159` for `a < p`.
fn add_mod_p128(a: u128, b: u128) -> u128 {
    let b = b % P128;
    let (s, carry) = a.overflowing_add(b);
    let s = if carry { s + 159 } else { s };
    if s >= P128 {
        s - P128
    } else {
        s
    }
}

/// The 256-bit product of `a` and `b` as (high, low) halves.
fn mul_wide(a: u128, b: u128) -> (u128, u128) {
    const M: u128 = u64::MAX as u128;
    let (a1, a0, b1, b0) = (a >> 64, a & M, b >> 64, b & M);
    let (p00, p01, p10, p11) = (a0 * b0, a0 * b1, a1 * b0, a1 * b1);
    let mid = (p00 >> 64) + (p01 & M) + (p10 & M);
    let lo = (p00 & M) | (mid << 64);
    let hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
    (hi, lo)
}

/// L3-HASH (RFC 4418 5.5): the sixteen bytes as eight big-endian 16-bit
/// words, dot `k1` mod 2^36 - 5, low 32 bits, xor `k2`.
fn l3(k1: &[u64; 8], k2: u32, m: u128) -> u32 {
    let m = m.to_be_bytes();
    let y = m
        .chunks_exact(2)
        .zip(k1)
        .map(|(w, k)| {
            w.first_chunk::<2>()
                .map_or(0, |w| u64::from(u16::from_be_bytes(*w)))
                * k
        })
        .sum::<u64>();
    ((y % P36) as u32) ^ k2
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::cipher::tests::to_hex;

    fn tag(msg: &[u8], nonce: &[u8], tag_len: usize) -> String {
        let u = Umac::new(b"abcdefghijklmnop", tag_len).unwrap();
        let mut out = [0u8; 16];
        u.sign(nonce, msg, &mut out).unwrap();
        to_hex(&out[..tag_len])
    }

    /// RFC 4418's appendix (key "abcdefghijklmnop", nonce "bcdefghi"), with
    /// erratum 3507's values for 'a' * 2^25. The 128-bit tags' last 4 bytes
    /// (the RFC prints 96 bits) come from the reference code's test list.
    #[test]
    fn rfc4418_vectors() {
        let a = |n: usize| vec![b'a'; n];
        let abc = |n: usize| b"abc".repeat(n);
        let cases: &[(Vec<u8>, &str, &str, &str)] = &[
            (
                vec![],
                "113145fb",
                "6e155fad26900be1",
                "32fedb100c79ad58f07ff7643cc60465",
            ),
            (
                a(3),
                "3b91d102",
                "44b5cb542f220104",
                "185e4fe905cba7bd85e4c2dc3d117d8d",
            ),
            (
                a(1 << 10),
                "599b350b",
                "26bf2f5d60118bd9",
                "7a54abe04af82d60fb298c3cbd195bcb",
            ),
            (
                a(1 << 15),
                "58dcf532",
                "27f8ef643b0d118d",
                "7b136bd911e4b734286ef2be501f2c3c",
            ),
            (
                a(1 << 20),
                "db6364d1",
                "a4477e87e9f55853",
                "f8acfa3ac31cfeea047f7b115b03bef5",
            ),
            (
                a(1 << 25),
                "85ee5cae",
                "faca46f856e9b45f",
                "a621c2457c0012e64f3fdae9e7e1870c",
            ),
            (
                abc(1),
                "abf3a3a0",
                "d4d7b9f6bd4fbfcf",
                "883c3d4b97a61976ffcf232308cba5a5",
            ),
            (
                abc(500),
                "abeb3c8b",
                "d4cf26ddefd5c01a",
                "8824a260c53c66a36c9260a62cb83aa1",
            ),
        ];
        for (msg, t32, t64, t128) in cases {
            let n = msg.len();
            assert_eq!(tag(msg, b"bcdefghi", 4), *t32, "umac-32 of {n} bytes");
            assert_eq!(tag(msg, b"bcdefghi", 8), *t64, "umac-64 of {n} bytes");
            assert_eq!(tag(msg, b"bcdefghi", 16), *t128, "umac-128 of {n} bytes");
            assert_eq!(
                tag(msg, b"bcdefghi", 12),
                t128[..24],
                "umac-96 of {n} bytes"
            );
        }
    }

    /// Block and POLY boundaries (one L1 block, one byte past it; exactly
    /// 2^14 blocks and one byte more, where L2 switches to 128-bit words),
    /// and nonces of other lengths: values from the reference code's list.
    #[test]
    fn boundaries_and_nonce_lengths() {
        let msg = |n: usize| {
            b"defdefdefdefdef"
                .iter()
                .copied()
                .cycle()
                .take(n)
                .collect::<Vec<u8>>()
        };
        let cases: &[(usize, &[u8], &str, &str)] = &[
            (
                0,
                b"b",
                "9e38f67da91a08d9",
                "9e38f67da91a08d9c980f4db4089c877",
            ),
            (
                1022,
                b"bcdefghi",
                "2cee9784556387b3",
                "700513397f8a210a98938d3e7ac3bd88",
            ),
            (
                1024,
                b"bcdefghijk",
                "64c6a0fd14615a76",
                "abc223116cedd2db5af365e641a97539",
            ),
            (
                1025,
                b"bcdefghijkl",
                "93251e18e56bbdc4",
                "93251e18e56bbdc457de556f95c59931",
            ),
            (
                2048,
                b"bcdefghijklmnopq",
                "3968d5d0af147884",
                "84565620def1e3a614d274e87626f215",
            ),
            (
                16777216,
                b"bcdefgh",
                "42d8562a224a9e9a",
                "42d8562a224a9e9a75c2f85d39462d07",
            ),
            (
                16777217,
                b"bcdefghi",
                "374f09dbb0b84b88",
                "6ba48d669a51ed3195ebc2aa562ee71b",
            ),
            (
                16778240,
                b"bcdefghijk",
                "e1974b26fb35f2c6",
                "2e93c8ca83b97a6b1a21082e2a4c540d",
            ),
        ];
        for (n, nonce, t64, t128) in cases {
            let m = msg(*n);
            assert_eq!(tag(&m, nonce, 8), *t64, "umac-64 of {n} bytes");
            assert_eq!(tag(&m, nonce, 16), *t128, "umac-128 of {n} bytes");
        }
    }

    #[test]
    fn bad_keys_and_nonces_are_errors() {
        assert!(Umac::new(&[0; 15], 8).is_err());
        assert!(Umac::new(&[0; 16], 7).is_err());
        let u = Umac::new(&[0; 16], 8).unwrap();
        let mut out = [0u8; 8];
        assert!(u.sign(&[], b"x", &mut out).is_err());
        assert!(u.sign(&[0; 17], b"x", &mut out).is_err());
    }

    #[test]
    fn p128_arithmetic() {
        // (p - 1)^2 = 1 mod p; 2^127 * 2 = 2^128 = 159.
        assert_eq!(mul_mod_p128(P128 - 1, P128 - 1), 1);
        assert_eq!(mul_mod_p128(1 << 127, 2), 159);
        // u128::MAX = p + 158, and p - 1 + 158 = p + 157.
        assert_eq!(add_mod_p128(P128 - 1, u128::MAX), 157);
        assert_eq!(mul_wide(u128::MAX, u128::MAX), (u128::MAX - 1, 1));
    }
}
