//! Private keys in memory and signing (RFC 4253 section 6.6 blobs; RFC 8709
//! Ed25519, RFC 5656 section 3.1.2 ECDSA signatures as two mpints, RFC 8332
//! RSA with SHA-256/512).
//!
//! Built from the fields OpenSSH key files hold (PROTOCOL.key); the RSA CRT
//! exponents that those files lack are computed in [`super::bignum`].
//!
//! Randomness: Ed25519 (RFC 8032) and RSA PKCS#1 v1.5 signatures are
//! deterministic. ECDSA nonces come from aws-lc's own DRBG: aws-lc-rs takes
//! a `SecureRandom` argument for them but ignores it, so there is no way to
//! feed the connection's Rng in; a reproducible run uses the insecure
//! provider's keys instead (`crypto::insecure`). `generate_ed25519` is the
//! runtime's (throwaway demo keys), not the engine's, and uses aws-lc's DRBG.

use super::bignum;
use super::{left_pad_into, strip_zeros, EcCurve, Signer};
use crate::crypto::CryptoError;
use crate::wire::Writer;
use aws_lc_rs::encoding::{AsBigEndian, Curve25519SeedBin};
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::KeyPairComponents;
use aws_lc_rs::signature::{
    self, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _, RsaKeyPair, RsaPublicKeyComponents,
};
use zeroize::Zeroizing;

/// A private key held in memory.
pub struct KeyPair {
    inner: Inner,
}

enum Inner {
    Ed25519(Ed25519KeyPair),
    Ecdsa {
        curve: EcCurve,
        key: EcdsaKeyPair,
    },
    Rsa {
        key: RsaKeyPair,
        /// Public exponent and modulus, without leading zeros, for the blob.
        e: Vec<u8>,
        n: Vec<u8>,
        /// The private exponent, for `ssh-rsa` (SHA-1) signatures, which
        /// aws-lc-rs does not make (see `rsa_sha1.rs`).
        d: Zeroizing<Vec<u8>>,
    },
}

impl std::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeyPair({})", self.key_type())
    }
}

impl KeyPair {
    /// A fresh Ed25519 key (throwaway keys for `sluice demo` and tests).
    pub fn generate_ed25519() -> Result<KeyPair, CryptoError> {
        let key = Ed25519KeyPair::generate().map_err(|_| CryptoError)?;
        Ok(KeyPair {
            inner: Inner::Ed25519(key),
        })
    }

    /// From a 32-byte Ed25519 seed.
    pub fn from_ed25519_seed(seed: &[u8]) -> Result<KeyPair, CryptoError> {
        if seed.len() != 32 {
            return Err(CryptoError);
        }
        let key = Ed25519KeyPair::from_seed_unchecked(seed).map_err(|_| CryptoError)?;
        Ok(KeyPair {
            inner: Inner::Ed25519(key),
        })
    }

    /// From an ECDSA private scalar and uncompressed public point; `curve` is
    /// `nistp256`, `nistp384` or `nistp521`. The scalar may carry leading
    /// zeros or lack them (as an OpenSSH `mpint`); the point must match it.
    pub fn from_ecdsa(
        curve: &str,
        private_scalar: &[u8],
        public_point: &[u8],
    ) -> Result<KeyPair, CryptoError> {
        let curve = EcCurve::by_id(curve).ok_or(CryptoError)?;
        curve.check_point(public_point)?;
        let mut scalar = Zeroizing::new(vec![0u8; curve.field_len()]);
        left_pad_into(private_scalar, &mut scalar)?;
        let key = EcdsaKeyPair::from_private_key_and_public_key(
            curve.signing_alg(),
            &scalar,
            public_point,
        )
        .map_err(|_| CryptoError)?;
        Ok(KeyPair {
            inner: Inner::Ecdsa { curve, key },
        })
    }

    /// From RSA components as OpenSSH key files store them (big-endian
    /// magnitudes); dP and dQ are computed here. aws-lc checks that the
    /// components are consistent and takes moduli of 2048 to 8192 bits.
    pub fn from_rsa(
        n: &[u8],
        e: &[u8],
        d: &[u8],
        iqmp: &[u8],
        p: &[u8],
        q: &[u8],
    ) -> Result<KeyPair, CryptoError> {
        let (n, e) = (strip_zeros(n), strip_zeros(e));
        let p_1 = bignum::sub_one(p).ok_or(CryptoError)?;
        let q_1 = bignum::sub_one(q).ok_or(CryptoError)?;
        let dp = bignum::rem(d, &p_1).ok_or(CryptoError)?;
        let dq = bignum::rem(d, &q_1).ok_or(CryptoError)?;
        let components = KeyPairComponents {
            public_key: RsaPublicKeyComponents { n, e },
            d,
            p,
            q,
            dP: dp.as_slice(),
            dQ: dq.as_slice(),
            qInv: iqmp,
        };
        let key = RsaKeyPair::from_components(&components).map_err(|_| CryptoError)?;
        Ok(KeyPair {
            inner: Inner::Rsa {
                key,
                e: e.to_vec(),
                n: n.to_vec(),
                d: Zeroizing::new(strip_zeros(d).to_vec()),
            },
        })
    }

    /// The Ed25519 seed, for writing a generated key to a file; None for other types.
    pub fn ed25519_seed(&self) -> Option<[u8; 32]> {
        match &self.inner {
            Inner::Ed25519(key) => {
                let seed = key.seed().ok()?;
                let bin: Curve25519SeedBin<'_> = seed.as_be_bytes().ok()?;
                bin.as_ref().try_into().ok()
            }
            _ => None,
        }
    }

    /// The key type name in the public blob (`ssh-ed25519`, `ecdsa-sha2-nistp256`, `ssh-rsa`, ...).
    pub fn key_type(&self) -> &'static str {
        match &self.inner {
            Inner::Ed25519(_) => "ssh-ed25519",
            Inner::Ecdsa { curve, .. } => curve.key_type(),
            Inner::Rsa { .. } => "ssh-rsa",
        }
    }
}

impl Signer for KeyPair {
    fn public_blob(&self) -> Vec<u8> {
        let mut blob = Vec::new();
        let mut w = Writer::new(&mut blob);
        w.utf8(self.key_type());
        match &self.inner {
            Inner::Ed25519(key) => {
                w.string(key.public_key().as_ref());
            }
            Inner::Ecdsa { curve, key } => {
                w.utf8(curve.id()).string(key.public_key().as_ref());
            }
            Inner::Rsa { e, n, .. } => {
                w.mpint_unsigned(e).mpint_unsigned(n);
            }
        }
        blob
    }

    fn sig_algs(&self) -> Vec<&'static str> {
        super::sig_algs_for_key_type(self.key_type()).to_vec()
    }

    fn sign(&self, sig_alg: &str, data: &[u8]) -> Result<Vec<u8>, CryptoError> {
        if !super::sig_algs_for_key_type(self.key_type()).contains(&sig_alg) {
            return Err(CryptoError);
        }
        let mut blob = Vec::new();
        let mut w = Writer::new(&mut blob);
        w.utf8(sig_alg);
        match &self.inner {
            Inner::Ed25519(key) => {
                let sig = key.try_sign(data).map_err(|_| CryptoError)?;
                w.string(sig.as_ref());
            }
            Inner::Ecdsa { curve, key } => {
                // aws-lc draws the nonce from its own DRBG; the argument is unused.
                let sig = key
                    .sign(&SystemRandom::new(), data)
                    .map_err(|_| CryptoError)?;
                let fixed = sig.as_ref();
                if fixed.len() != curve.field_len().saturating_mul(2) {
                    return Err(CryptoError);
                }
                let (r, s) = fixed.split_at(curve.field_len());
                w.nested(|inner| {
                    inner.mpint_unsigned(r).mpint_unsigned(s);
                });
            }
            Inner::Rsa { n, e, d, .. } if sig_alg == "ssh-rsa" => {
                w.string(&super::rsa_sha1::sign(n, e, d, data)?);
            }
            Inner::Rsa { key, .. } => {
                let encoding: &'static dyn signature::RsaEncoding = match sig_alg {
                    "rsa-sha2-512" => &signature::RSA_PKCS1_SHA512,
                    _ => &signature::RSA_PKCS1_SHA256,
                };
                let mut sig = vec![0u8; key.public_modulus_len()];
                key.sign(encoding, &SystemRandom::new(), data, &mut sig)
                    .map_err(|_| CryptoError)?;
                w.string(&sig);
            }
        }
        Ok(blob)
    }
}
