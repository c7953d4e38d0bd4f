//! Finite-field Diffie-Hellman (RFC 4253 section 8): the fixed groups of
//! `diffie-hellman-group1-sha1` (RFC 2409 group 2), `group14-sha1`
//! (RFC 4253), `group14-sha256`, `group16-sha512` and `group18-sha512`
//! (RFC 8268), and the arithmetic of group exchange (RFC 4419), whose group
//! the server picks at run time ([`DhGroup`]).
//!
//! The public values e and f travel as `mpint`s. In the [`KexMethod`] shape
//! they are the mpint's body (minimal two's complement, big-endian), so the
//! ECDH message codec and exchange hash (`string Q_C`, `string Q_S`) carry
//! them byte for byte as RFC 4253 8 encodes them. K is an `mpint`.
//!
//! Exponentiation is crypto-bigint's Montgomery form, constant time in the
//! secret exponent. Private exponents are sized as OpenSSH sizes them: twice
//! the bits the exchange must protect (at least 256, so at least 512 bits),
//! and never wider than p. Entropy comes only from the connection's [`Rng`].

use super::dh_groups;
use super::{HashAlg, KexClient, SharedSecret};
use crate::crypto::provider::KexMethod;
use crate::crypto::{CryptoError, Rng};
use crypto_bigint::modular::{BoxedMontyForm, BoxedMontyParams};
use crypto_bigint::{BoxedUint, Odd, Resize};
use zeroize::Zeroizing;

/// Smallest modulus we accept in any exchange (bits): group 2's 1024.
pub const MIN_MODULUS_BITS: u32 = 1024;
/// Largest modulus we accept (bits): RFC 4419's 8192.
pub const MAX_MODULUS_BITS: u32 = 8192;

/// A group: prime modulus p and generator g, checked and ready for
/// Montgomery arithmetic.
#[derive(Clone)]
pub struct DhGroup {
    params: BoxedMontyParams,
    p: BoxedUint,
    g: BoxedUint,
    bits: u32,
}

impl std::fmt::Debug for DhGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DhGroup({} bits)", self.bits)
    }
}

impl DhGroup {
    /// A group from the unsigned big-endian magnitudes of p and g. Fails
    /// unless p is odd and 1024..=8192 bits wide and 1 < g < p - 1.
    pub fn new(p: &[u8], g: &[u8]) -> Result<Self, CryptoError> {
        let p = BoxedUint::from_be_slice_vartime(p);
        let bits = p.bit_width_vartime();
        if !(MIN_MODULUS_BITS..=MAX_MODULUS_BITS).contains(&bits) {
            return Err(CryptoError);
        }
        let p = p.try_resize(bits).ok_or(CryptoError)?;
        let odd: Option<Odd<BoxedUint>> = Odd::new(p.clone()).into();
        let odd = odd.ok_or(CryptoError)?;
        let g = BoxedUint::from_be_slice_vartime(g);
        if g.bit_width_vartime() > bits {
            return Err(CryptoError);
        }
        let g = g.try_resize(p.bits_precision()).ok_or(CryptoError)?;
        let group = DhGroup {
            params: BoxedMontyParams::new_vartime(odd),
            p,
            g,
            bits,
        };
        if !group.between_1_and_p_minus_1(&group.g) {
            return Err(CryptoError);
        }
        Ok(group)
    }

    /// A fixed group from its hex modulus; the generator is 2.
    fn fixed(p_hex: &str) -> Result<Self, CryptoError> {
        let p = hex_decode(p_hex).ok_or(CryptoError)?;
        Self::new(&p, &[2])
    }

    /// The RFC 3526 group OpenSSH falls back to for a request of at most
    /// `max` bits when it has no suitable group of its own (sshd's
    /// `dh_new_group_fallback`): 2048 below 3072, 4096 below 6144, else 8192.
    pub fn fallback(max: u32) -> Result<Self, CryptoError> {
        let hex = if max < 3072 {
            dh_groups::GROUP14_P
        } else if max < 6144 {
            dh_groups::GROUP16_P
        } else {
            dh_groups::GROUP18_P
        };
        Self::fixed(hex)
    }

    /// Width of p in bits.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// p as an unsigned big-endian magnitude without leading zeros.
    pub fn p_bytes(&self) -> Vec<u8> {
        self.p.to_be_bytes_trimmed_vartime().into_vec()
    }

    /// g as an unsigned big-endian magnitude without leading zeros.
    pub fn g_bytes(&self) -> Vec<u8> {
        self.g.to_be_bytes_trimmed_vartime().into_vec()
    }

    /// 1 < y < p - 1. Public values only: variable time.
    fn between_1_and_p_minus_1(&self, y: &BoxedUint) -> bool {
        let one = BoxedUint::one_with_precision(self.p.bits_precision());
        let p_minus_1 = self.p.wrapping_sub(&one);
        y.cmp_vartime(&one).is_gt() && y.cmp_vartime(&p_minus_1).is_lt()
    }

    /// A peer's public value is usable: 1 < y < p - 1 (RFC 4253 8) and more
    /// than one bit set (OpenSSH's `dh_pub_is_valid` refuses powers of two).
    fn in_range(&self, y: &BoxedUint) -> bool {
        let ones: u32 = y.as_words().iter().map(|w| w.count_ones()).sum();
        self.between_1_and_p_minus_1(y) && ones > 1
    }

    /// A private exponent x and the public value g^x mod p as an mpint body.
    fn keypair(&self, hash: HashAlg, rng: &mut dyn Rng) -> (Zeroizing<BoxedUint>, Vec<u8>) {
        let xbits = exponent_bits(hash, self.bits);
        let len = xbits.div_ceil(8) as usize;
        let mut raw = Zeroizing::new(vec![0u8; len]);
        rng.fill(&mut raw);
        // Exactly xbits wide: the top byte keeps only the bits that fit,
        // and the top one is set so x > 1.
        let spare = len as u32 * 8 - xbits;
        if let Some(top) = raw.first_mut() {
            *top &= 0xff >> spare;
            *top |= 0x80 >> spare;
        }
        let x = Zeroizing::new(BoxedUint::from_be_slice_vartime(&raw).resize_unchecked(xbits));
        let y = self.pow(&self.g, &x);
        (x, mpint_body(&y.to_be_bytes()))
    }

    /// base^x mod p, constant time in x.
    fn pow(&self, base: &BoxedUint, x: &BoxedUint) -> BoxedUint {
        BoxedMontyForm::new(base.clone(), &self.params)
            .pow(x)
            .retrieve()
    }

    /// K = y^x mod p for the peer's public value (an mpint body), checked.
    fn agree(&self, x: &BoxedUint, peer: &[u8]) -> Result<SharedSecret, CryptoError> {
        let y = parse_public(peer, self.bits).ok_or(CryptoError)?;
        let y = y.try_resize(self.p.bits_precision()).ok_or(CryptoError)?;
        if !self.in_range(&y) {
            return Err(CryptoError);
        }
        let k = Zeroizing::new(self.pow(&y, x));
        let bytes = Zeroizing::new(k.to_be_bytes());
        Ok(SharedSecret::mpint(&bytes))
    }
}

/// Private exponent width: twice max(256, hash bits), below p's width.
fn exponent_bits(hash: HashAlg, p_bits: u32) -> u32 {
    let need = (hash.output_len() as u32 * 8).max(256);
    (2 * need).min(p_bits - 1)
}

/// An mpint's body for an unsigned magnitude: leading zeros stripped, one
/// zero byte added when the top bit is set.
fn mpint_body(magnitude: &[u8]) -> Vec<u8> {
    let (pad, m) = crate::wire::mpint_parts(magnitude);
    let mut out = Vec::with_capacity(m.len() + 1);
    if pad {
        out.push(0);
    }
    out.extend_from_slice(m);
    out
}

/// A peer's public value from its mpint body, strictly: not negative, no
/// superfluous leading zero, not wider than p.
fn parse_public(body: &[u8], p_bits: u32) -> Option<BoxedUint> {
    match body {
        [] => return None,
        [b, ..] if b & 0x80 != 0 => return None,
        [0] => return None,
        [0, b, ..] if b & 0x80 == 0 => return None,
        _ => {}
    }
    let mag = if body[0] == 0 { &body[1..] } else { body };
    if mag.len() > p_bits.div_ceil(8) as usize {
        return None;
    }
    Some(BoxedUint::from_be_slice_vartime(mag))
}

fn hex_decode(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| s.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect()
}

/// The client's half: x and e.
pub(crate) struct DhClient {
    group: DhGroup,
    x: Zeroizing<BoxedUint>,
    e: Vec<u8>,
}

impl DhClient {
    /// Makes x and e = g^x mod p in `group`.
    pub(crate) fn start(group: DhGroup, hash: HashAlg, rng: &mut dyn Rng) -> Self {
        let (x, e) = group.keypair(hash, rng);
        DhClient { group, x, e }
    }
}

impl KexClient for DhClient {
    fn client_public(&self) -> &[u8] {
        &self.e
    }

    fn finish(self: Box<Self>, server_public: &[u8]) -> Result<SharedSecret, CryptoError> {
        self.group.agree(&self.x, server_public)
    }
}

/// The server's half: f and K for the client's e.
pub(crate) fn respond(
    group: &DhGroup,
    hash: HashAlg,
    client_public: &[u8],
    rng: &mut dyn Rng,
) -> Result<(Vec<u8>, SharedSecret), CryptoError> {
    // Check e before spending an exponentiation on f.
    let e = parse_public(client_public, group.bits).ok_or(CryptoError)?;
    let e = e.try_resize(group.p.bits_precision()).ok_or(CryptoError)?;
    if !group.in_range(&e) {
        return Err(CryptoError);
    }
    let (y, f) = group.keypair(hash, rng);
    let k = group.agree(&y, client_public)?;
    Ok((f, k))
}

/// A fixed-group method in the aws-lc provider's table.
pub(super) struct Method {
    pub(super) name: &'static str,
    pub(super) p_hex: &'static str,
    pub(super) hash: HashAlg,
}

impl KexMethod for Method {
    fn name(&self) -> &'static str {
        self.name
    }

    fn hash(&self) -> HashAlg {
        self.hash
    }

    fn start(&self, rng: &mut dyn Rng) -> Result<Box<dyn KexClient>, CryptoError> {
        let group = DhGroup::fixed(self.p_hex)?;
        Ok(Box::new(DhClient::start(group, self.hash, rng)))
    }

    fn respond(
        &self,
        client_public: &[u8],
        rng: &mut dyn Rng,
    ) -> Result<(Vec<u8>, SharedSecret), CryptoError> {
        respond(&DhGroup::fixed(self.p_hex)?, self.hash, client_public, rng)
    }
}

/// Group exchange (RFC 4419): the group is chosen per connection, so the
/// key exchange machine drives [`DhClient`] and [`respond`] itself; this
/// entry only names the method and its hash in the provider's table.
pub(super) struct GexMethod {
    pub(super) name: &'static str,
    pub(super) hash: HashAlg,
}

impl KexMethod for GexMethod {
    fn name(&self) -> &'static str {
        self.name
    }

    fn hash(&self) -> HashAlg {
        self.hash
    }

    fn group_exchange(&self) -> bool {
        true
    }

    fn start(&self, _rng: &mut dyn Rng) -> Result<Box<dyn KexClient>, CryptoError> {
        Err(CryptoError)
    }

    fn respond(
        &self,
        _client_public: &[u8],
        _rng: &mut dyn Rng,
    ) -> Result<(Vec<u8>, SharedSecret), CryptoError> {
        Err(CryptoError)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::SystemRng;

    fn all_fixed() -> [(&'static str, u32); 4] {
        [
            (dh_groups::GROUP2_P, 1024),
            (dh_groups::GROUP14_P, 2048),
            (dh_groups::GROUP16_P, 4096),
            (dh_groups::GROUP18_P, 8192),
        ]
    }

    #[test]
    fn fixed_groups_load() {
        for (hex, bits) in all_fixed() {
            let g = DhGroup::fixed(hex).unwrap();
            assert_eq!(g.bits(), bits);
            assert_eq!(g.g_bytes(), [2]);
            // Every RFC 2409/3526 prime starts and ends with 64 one bits.
            let p = g.p_bytes();
            assert!(p[..8].iter().chain(&p[p.len() - 8..]).all(|&b| b == 0xff));
        }
        assert_eq!(DhGroup::fallback(2048).unwrap().bits(), 2048);
        assert_eq!(DhGroup::fallback(3072).unwrap().bits(), 4096);
        assert_eq!(DhGroup::fallback(8192).unwrap().bits(), 8192);
    }

    /// Known answer: 2^x mod p for a small x, computed independently with
    /// Python's pow() (x = 0x10001 in group 14, last 16 bytes of the result).
    #[test]
    fn known_power() {
        let g = DhGroup::fixed(dh_groups::GROUP14_P).unwrap();
        let x = BoxedUint::from(0x10001u32);
        let y = g.pow(&g.g, &x).to_be_bytes();
        let tail = hex_decode(GROUP14_2_POW_65537_TAIL).unwrap();
        assert_eq!(&y[y.len() - 16..], tail.as_slice());
    }

    const GROUP14_2_POW_65537_TAIL: &str = "72f0cfd840ae84f5b826602b2d52c428";

    #[test]
    fn agreement_in_every_group() {
        for (hex, _) in all_fixed() {
            for hash in [HashAlg::Sha1, HashAlg::Sha256, HashAlg::Sha512] {
                let group = DhGroup::fixed(hex).unwrap();
                let c = Box::new(DhClient::start(group.clone(), hash, &mut SystemRng));
                let (f, k_s) = respond(&group, hash, c.client_public(), &mut SystemRng).unwrap();
                let k_c = c.finish(&f).unwrap();
                assert_eq!(k_c.encoded(), k_s.encoded());
            }
        }
    }

    #[test]
    fn exponent_sizes() {
        assert_eq!(exponent_bits(HashAlg::Sha1, 1024), 512);
        assert_eq!(exponent_bits(HashAlg::Sha256, 2048), 512);
        assert_eq!(exponent_bits(HashAlg::Sha512, 8192), 1024);
        assert_eq!(exponent_bits(HashAlg::Sha512, 1024), 1023);
    }

    #[test]
    fn rejects_bad_public_values() {
        let group = DhGroup::fixed(dh_groups::GROUP14_P).unwrap();
        let p = group.p_bytes();
        let mut p_minus_1 = p.clone();
        *p_minus_1.last_mut().unwrap() -= 1;
        for bad in [
            vec![],
            vec![0],
            vec![1],
            vec![2],                             // a power of two
            vec![0x80],                          // negative
            vec![0, 0x05],                       // superfluous zero
            mpint_body(&p),                      // p
            mpint_body(&p_minus_1),              // p - 1
            [vec![0, 0xff], p.clone()].concat(), // wider than p
        ] {
            assert!(
                respond(&group, HashAlg::Sha256, &bad, &mut SystemRng).is_err(),
                "{bad:02x?}"
            );
        }
        assert!(respond(&group, HashAlg::Sha256, &[3], &mut SystemRng).is_ok());
    }

    #[test]
    fn group_checks() {
        let p = DhGroup::fixed(dh_groups::GROUP14_P).unwrap().p_bytes();
        assert!(DhGroup::new(&p, &[2]).is_ok());
        assert!(DhGroup::new(&p, &[1]).is_err());
        assert!(DhGroup::new(&p, &[]).is_err());
        let mut even = p.clone();
        *even.last_mut().unwrap() &= 0xfe;
        assert!(DhGroup::new(&even, &[2]).is_err());
        assert!(DhGroup::new(&p[..100], &[2]).is_err()); // 800 bits: too small
    }

    #[test]
    fn mpint_bodies() {
        assert_eq!(mpint_body(&[0, 0, 0x7f]), [0x7f]);
        assert_eq!(mpint_body(&[0, 0x80, 1]), [0, 0x80, 1]);
        assert_eq!(
            parse_public(&[0, 0x80], 2048).unwrap(),
            BoxedUint::from(0x80u32)
        );
    }
}
