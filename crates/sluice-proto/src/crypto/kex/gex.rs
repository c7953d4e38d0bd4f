//! Diffie-Hellman group exchange (RFC 4419): which sizes a client asks for
//! and which group a server answers with, as OpenSSH does both.
//!
//! The moduli themselves come from the runtime (sluiced reads
//! `/etc/ssh/moduli`, moduli(5)) through [`crate::Config::dh_moduli`]; the
//! engine draws the random pick among equals from the connection's Rng.

use super::dh::DhGroup;
use crate::crypto::{CryptoError, Rng};

/// Smallest group a client asks for and a server hands out (OpenSSH's DH_GRP_MIN).
pub const GEX_MIN: u32 = 2048;
/// Largest group (OpenSSH's DH_GRP_MAX).
pub const GEX_MAX: u32 = 8192;

/// One safe prime from a moduli file: its width in bits, generator and
/// modulus as unsigned big-endian magnitudes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DhModulus {
    /// Width of `prime` in bits.
    pub bits: u32,
    /// The generator.
    pub generator: Vec<u8>,
    /// The prime modulus.
    pub prime: Vec<u8>,
}

/// The group size a client prefers for ciphers needing `sec_bits` of
/// security (OpenSSH's `dh_estimate`, after NIST SP 800-57).
pub fn preferred_bits(sec_bits: u32) -> u32 {
    match sec_bits {
        0..=112 => 2048,
        113..=128 => 3072,
        129..=192 => 7680,
        _ => 8192,
    }
}

/// A client's (min, n, max) is acceptable: min <= n <= max and max at least
/// [`GEX_MIN`] (sshd's check on KEX_DH_GEX_REQUEST).
pub fn request_ok(min: u32, n: u32, max: u32) -> bool {
    min <= n && n <= max && max >= GEX_MIN
}

/// The server's group for a request, as sshd's `choose_dh`: the request is
/// clamped to [GEX_MIN, GEX_MAX]; among moduli inside [min, max] the size
/// closest above n (or the largest below it when none is above) wins, and
/// one of that size is picked at random. With no such modulus, the RFC 3526
/// group for `max` (`DhGroup::fallback`).
pub fn choose(
    moduli: &[DhModulus],
    min: u32,
    n: u32,
    max: u32,
    rng: &mut dyn Rng,
) -> Result<DhGroup, CryptoError> {
    let min = min.max(GEX_MIN);
    let max = max.min(GEX_MAX);
    let want = n.clamp(GEX_MIN, GEX_MAX);
    let usable = |m: &&DhModulus| (min..=max).contains(&m.bits);
    let mut best = 0u32;
    for m in moduli.iter().filter(usable) {
        if (m.bits > want && m.bits < best) || (m.bits > best && best < want) {
            best = m.bits;
        }
    }
    let same: Vec<&DhModulus> = moduli
        .iter()
        .filter(usable)
        .filter(|m| m.bits == best)
        .collect();
    if !same.is_empty() {
        let mut r = [0u8; 4];
        rng.fill(&mut r);
        let which = u32::from_be_bytes(r) as usize % same.len();
        if let Some(g) = same
            .get(which)
            .and_then(|m| DhGroup::new(&m.prime, &m.generator).ok())
        {
            return Ok(g);
        }
    }
    DhGroup::fallback(max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::SystemRng;

    fn modulus(bits: u32) -> DhModulus {
        let g = DhGroup::fallback(bits).unwrap();
        DhModulus {
            bits: g.bits(),
            generator: g.g_bytes(),
            prime: g.p_bytes(),
        }
    }

    #[test]
    fn estimates() {
        assert_eq!(preferred_bits(128), 3072);
        assert_eq!(preferred_bits(256), 8192);
        assert_eq!(preferred_bits(192), 7680);
        assert_eq!(preferred_bits(80), 2048);
    }

    #[test]
    fn picks_like_sshd() {
        let all = [modulus(2048), modulus(4096), modulus(8192)];
        let pick = |min, n, max| choose(&all, min, n, max, &mut SystemRng).unwrap().bits();
        assert_eq!(pick(2048, 3072, 8192), 4096);
        assert_eq!(pick(2048, 8192, 8192), 8192);
        assert_eq!(pick(2048, 2048, 8192), 2048);
        assert_eq!(pick(1024, 1024, 2048), 2048);
        // Nothing in range: the RFC 3526 fallback for max.
        assert_eq!(
            choose(&[], 2048, 3072, 8192, &mut SystemRng)
                .unwrap()
                .bits(),
            8192
        );
        assert_eq!(
            choose(&[], 2048, 2048, 4096, &mut SystemRng)
                .unwrap()
                .bits(),
            4096
        );
        assert_eq!(
            choose(&all[2..], 2048, 2048, 4096, &mut SystemRng)
                .unwrap()
                .bits(),
            4096
        );
    }

    #[test]
    fn request_checks() {
        assert!(request_ok(2048, 3072, 8192));
        assert!(!request_ok(3072, 2048, 8192));
        assert!(!request_ok(1024, 1024, 1024));
        assert!(!request_ok(2048, 8192, 4096));
    }
}
