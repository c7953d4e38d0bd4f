//! `ssh-rsa` signatures: RSASSA-PKCS1-v1_5 with SHA-1 (RFC 4253 6.6,
//! RFC 8017 8.2), which aws-lc-rs verifies but will not make. Used only
//! where a configuration names `ssh-rsa` (sluiced's `HostKeyAlgorithms
//! +ssh-rsa`, the client's `PubkeyAcceptedAlgorithms +ssh-rsa`), for old
//! peers that know nothing else.
//!
//! The private operation is m^d mod n in Montgomery form, constant time in
//! d (crypto-bigint's `pow`), without CRT. The result is verified with the
//! public key before it leaves, so a faulty computation never discloses a
//! signature that would leak the key.

use crate::crypto::CryptoError;
use aws_lc_rs::digest;
use aws_lc_rs::signature::{self, RsaPublicKeyComponents};
use crypto_bigint::modular::{BoxedMontyForm, BoxedMontyParams};
use crypto_bigint::{BoxedUint, Odd, Resize};
use zeroize::Zeroizing;

/// DigestInfo's DER prefix for SHA-1 (RFC 8017 9.2, note 1).
const SHA1_DIGEST_INFO: &[u8] = &[
    0x30, 0x21, 0x30, 0x09, 0x06, 0x05, 0x2b, 0x0e, 0x03, 0x02, 0x1a, 0x05, 0x00, 0x04, 0x14,
];

/// The SHA-1 PKCS#1 v1.5 signature of `data` under (n, e, d), big-endian
/// magnitudes; as long as n.
pub(super) fn sign(n: &[u8], e: &[u8], d: &[u8], data: &[u8]) -> Result<Vec<u8>, CryptoError> {
    let k = n.len();
    let hash = digest::digest(&digest::SHA1_FOR_LEGACY_USE_ONLY, data);
    // EM = 00 01 FF..FF 00 || DigestInfo || H, with at least 8 bytes of FF.
    let t_len = SHA1_DIGEST_INFO.len() + hash.as_ref().len();
    let ps = k
        .checked_sub(t_len + 3)
        .filter(|&p| p >= 8)
        .ok_or(CryptoError)?;
    let mut em = Vec::with_capacity(k);
    em.extend_from_slice(&[0x00, 0x01]);
    em.resize(2 + ps, 0xff);
    em.push(0x00);
    em.extend_from_slice(SHA1_DIGEST_INFO);
    em.extend_from_slice(hash.as_ref());

    let modulus = BoxedUint::from_be_slice_vartime(n);
    let bits = modulus.bits_precision();
    let odd: Option<Odd<BoxedUint>> = Odd::new(modulus).into();
    let params = BoxedMontyParams::new_vartime(odd.ok_or(CryptoError)?);
    let m = BoxedUint::from_be_slice_vartime(&em)
        .try_resize(bits)
        .ok_or(CryptoError)?;
    let d = Zeroizing::new(BoxedUint::from_be_slice_vartime(d));
    let s = BoxedMontyForm::new(m, &params).pow(&d).retrieve();
    let be = s.to_be_bytes();
    let mut sig = vec![0u8; k];
    super::left_pad_into(&be, &mut sig)?;
    RsaPublicKeyComponents { n, e }
        .verify(
            &signature::RSA_PKCS1_1024_8192_SHA1_FOR_LEGACY_USE_ONLY,
            data,
            &sig,
        )
        .map_err(|_| CryptoError)?;
    Ok(sig)
}
