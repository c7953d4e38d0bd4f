//! Public-key signatures for host keys and user keys (RFC 4253 6.6, RFC 8709,
//! RFC 5656, RFC 8332). STUB: contract only.

use super::CryptoError;

/// Signature algorithms we accept and offer, in OpenSSH 10's default order
/// restricted to those we implement.
pub const DEFAULT_SIG_ALGS: &[&str] = &[
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "rsa-sha2-512",
    "rsa-sha2-256",
];

/// The key type name at the start of a public key blob (`ssh-ed25519`,
/// `ecdsa-sha2-nistp256`, `ssh-rsa`, ...), or None if malformed.
pub fn blob_key_type(blob: &[u8]) -> Option<&str> {
    let _ = blob;
    None
}

/// Signature algorithms a key type can produce (`ssh-rsa` gives
/// `rsa-sha2-512` and `rsa-sha2-256`; others give their own name).
pub fn sig_algs_for_key_type(key_type: &str) -> &'static [&'static str] {
    let _ = key_type;
    &[]
}

/// Verifies `signature` (the blob `string alg || string sig`) over `data`
/// with the public key `key_blob`, requiring the blob's algorithm to be
/// `sig_alg` and compatible with the key's type.
pub fn verify(sig_alg: &str, key_blob: &[u8], signature: &[u8], data: &[u8]) -> Result<(), CryptoError> {
    let _ = (sig_alg, key_blob, signature, data);
    Err(CryptoError)
}

/// Something that can sign with one key: a key pair in memory, or an agent.
pub trait Signer: Send + Sync {
    /// The public key blob (RFC 4253 6.6).
    fn public_blob(&self) -> Vec<u8>;
    /// Signature algorithms this key can produce, preferred first.
    fn sig_algs(&self) -> Vec<&'static str>;
    /// Signs `data`, returning the signature blob `string alg || string sig`.
    fn sign(&self, sig_alg: &str, data: &[u8]) -> Result<Vec<u8>, CryptoError>;
}

/// A private key held in memory.
pub struct KeyPair {
    _private: (),
}

impl KeyPair {
    /// A fresh Ed25519 key (throwaway keys for `sluice demo` and tests).
    pub fn generate_ed25519() -> Result<KeyPair, CryptoError> {
        Err(CryptoError)
    }
    /// From a 32-byte Ed25519 seed.
    pub fn from_ed25519_seed(seed: &[u8]) -> Result<KeyPair, CryptoError> {
        let _ = seed;
        Err(CryptoError)
    }
    /// From an ECDSA private scalar and uncompressed public point; `curve` is
    /// `nistp256`, `nistp384` or `nistp521`.
    pub fn from_ecdsa(curve: &str, private_scalar: &[u8], public_point: &[u8]) -> Result<KeyPair, CryptoError> {
        let _ = (curve, private_scalar, public_point);
        Err(CryptoError)
    }
    /// From RSA components as OpenSSH key files store them (big-endian
    /// magnitudes); dP and dQ are computed here.
    pub fn from_rsa(n: &[u8], e: &[u8], d: &[u8], iqmp: &[u8], p: &[u8], q: &[u8]) -> Result<KeyPair, CryptoError> {
        let _ = (n, e, d, iqmp, p, q);
        Err(CryptoError)
    }
    /// The Ed25519 seed, for writing a generated key to a file; None for other types.
    pub fn ed25519_seed(&self) -> Option<[u8; 32]> {
        None
    }
}

impl Signer for KeyPair {
    fn public_blob(&self) -> Vec<u8> {
        Vec::new()
    }
    fn sig_algs(&self) -> Vec<&'static str> {
        Vec::new()
    }
    fn sign(&self, sig_alg: &str, data: &[u8]) -> Result<Vec<u8>, CryptoError> {
        let _ = (sig_alg, data);
        Err(CryptoError)
    }
}
