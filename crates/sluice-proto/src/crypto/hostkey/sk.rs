//! FIDO/U2F security-key signatures as OpenSSH has them since 8.2
//! (PROTOCOL.u2f): `sk-ssh-ed25519@openssh.com` and
//! `sk-ecdsa-sha2-nistp256@openssh.com`.
//!
//! Key blob: the plain key's fields, then `string application`.
//! Signature blob: `string alg`, `string sig` (Ed25519's 64 bytes, or
//! ECDSA's `mpint r, mpint s`), `byte flags`, `uint32 counter`. What the
//! authenticator signed is not the message but
//! `SHA-256(application) || flags || counter || SHA-256(message)`, with
//! Ed25519 directly and with ECDSA P-256 over its SHA-256.
//!
//! Whether the flags are good enough (user presence, user verification) is
//! the server's policy: [`verify`] returns them as [`SkSignature`] and
//! checks only the cryptography.

use super::{left_pad_into, EcCurve};
use crate::crypto::CryptoError;
use crate::wire::Reader;
use aws_lc_rs::digest;
use aws_lc_rs::signature::{self, UnparsedPublicKey};

/// The Ed25519 security-key type and signature algorithm.
pub const SK_ED25519: &str = "sk-ssh-ed25519@openssh.com";
/// The ECDSA P-256 security-key type and signature algorithm.
pub const SK_ECDSA: &str = "sk-ecdsa-sha2-nistp256@openssh.com";

/// Flag: the user touched the authenticator (user presence).
pub const FLAG_USER_PRESENT: u8 = 0x01;
/// Flag: the authenticator verified the user (a PIN or biometric).
pub const FLAG_USER_VERIFIED: u8 = 0x04;

/// What an authenticator said about one signature, after it verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkSignature {
    /// The flags byte ([`FLAG_USER_PRESENT`], [`FLAG_USER_VERIFIED`]).
    pub flags: u8,
    /// The authenticator's signature counter.
    pub counter: u32,
}

impl SkSignature {
    /// Whether the user was present (touched the key).
    pub fn user_present(self) -> bool {
        self.flags & FLAG_USER_PRESENT != 0
    }

    /// Whether the user was verified (PIN, biometric).
    pub fn user_verified(self) -> bool {
        self.flags & FLAG_USER_VERIFIED != 0
    }
}

/// Whether a key type or signature algorithm is a security-key one.
pub fn is_sk_type(name: &str) -> bool {
    name == SK_ED25519 || name == SK_ECDSA
}

/// The bytes the authenticator signed for `data` under `application`.
fn signed_bytes(application: &[u8], flags: u8, counter: u32, data: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(69);
    m.extend_from_slice(digest::digest(&digest::SHA256, application).as_ref());
    m.push(flags);
    m.extend_from_slice(&counter.to_be_bytes());
    m.extend_from_slice(digest::digest(&digest::SHA256, data).as_ref());
    m
}

/// Verifies a security-key signature blob over `data` with the plain sk
/// key `key_blob` (its type already read as `key_type`); the flags and
/// counter when it holds.
pub(super) fn verify(
    key_type: &str,
    key_blob: &[u8],
    signature: &[u8],
    data: &[u8],
) -> Result<SkSignature, CryptoError> {
    let bad = |_| CryptoError;
    let mut sig_r = Reader::new(signature);
    if sig_r.utf8().map_err(bad)? != key_type {
        return Err(CryptoError);
    }
    let sig = sig_r.string().map_err(bad)?;
    let flags = sig_r.u8().map_err(bad)?;
    let counter = sig_r.u32().map_err(bad)?;
    sig_r.finish().map_err(bad)?;

    let mut key = Reader::new(key_blob);
    if key.utf8().map_err(bad)? != key_type {
        return Err(CryptoError);
    }
    match key_type {
        SK_ED25519 => {
            let pk = key.string().map_err(bad)?;
            let application = key.string().map_err(bad)?;
            key.finish().map_err(bad)?;
            if pk.len() != 32 || sig.len() != 64 {
                return Err(CryptoError);
            }
            let m = signed_bytes(application, flags, counter, data);
            UnparsedPublicKey::new(&signature::ED25519, pk)
                .verify(&m, sig)
                .map_err(|_| CryptoError)?;
        }
        SK_ECDSA => {
            let curve = EcCurve::P256;
            let id = key.string().map_err(bad)?;
            let q = key.string().map_err(bad)?;
            let application = key.string().map_err(bad)?;
            key.finish().map_err(bad)?;
            if id != curve.id().as_bytes() {
                return Err(CryptoError);
            }
            curve.check_point(q)?;
            let mut inner = Reader::new(sig);
            let r = inner.mpint().map_err(bad)?;
            let s = inner.mpint().map_err(bad)?;
            inner.finish().map_err(bad)?;
            let mut fixed = [0u8; 64];
            let (fr, fs) = fixed.split_at_mut(32);
            left_pad_into(r, fr)?;
            left_pad_into(s, fs)?;
            let m = signed_bytes(application, flags, counter, data);
            UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, q)
                .verify(&m, &fixed)
                .map_err(|_| CryptoError)?;
        }
        _ => return Err(CryptoError),
    }
    Ok(SkSignature { flags, counter })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Writer;
    use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair as _};

    /// An Ed25519 authenticator made in memory: blob and signature as
    /// PROTOCOL.u2f lays them out.
    fn ed25519_sk(flags: u8, data: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let kp = Ed25519KeyPair::generate().unwrap();
        let mut blob = Vec::new();
        Writer::new(&mut blob)
            .utf8(SK_ED25519)
            .string(kp.public_key().as_ref())
            .utf8("ssh:");
        let m = signed_bytes(b"ssh:", flags, 7, data);
        let mut sig = Vec::new();
        Writer::new(&mut sig)
            .utf8(SK_ED25519)
            .string(kp.sign(&m).as_ref())
            .u8(flags)
            .u32(7);
        (blob, sig)
    }

    #[test]
    fn ed25519_sk_verifies_and_reports_flags() {
        let (blob, sig) = ed25519_sk(FLAG_USER_PRESENT, b"msg");
        let got = verify(SK_ED25519, &blob, &sig, b"msg").unwrap();
        assert_eq!(
            got,
            SkSignature {
                flags: 1,
                counter: 7
            }
        );
        assert!(got.user_present() && !got.user_verified());
        assert!(verify(SK_ED25519, &blob, &sig, b"other").is_err());
        // Flags are signed: raising one breaks the signature.
        let mut forged = sig.clone();
        let at = forged.len() - 5;
        forged[at] |= FLAG_USER_VERIFIED;
        assert!(verify(SK_ED25519, &blob, &forged, b"msg").is_err());
        // Trailing or missing bytes are refused, never read past.
        let mut long = sig.clone();
        long.push(0);
        assert!(verify(SK_ED25519, &blob, &long, b"msg").is_err());
        for cut in 0..sig.len() {
            assert!(verify(SK_ED25519, &blob, &sig[..cut], b"msg").is_err());
        }
        assert!(verify(SK_ECDSA, &blob, &sig, b"msg").is_err());
    }
}
