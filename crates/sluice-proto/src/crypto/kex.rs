//! Key exchange methods (RFC 5656, RFC 8731, draft-ietf-sshm-mlkem-hybrid-kex)
//! and key derivation (RFC 4253 7.2). STUB: contract only.

use super::CryptoError;

/// Hash function of a key exchange method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashAlg {
    /// SHA-256.
    Sha256,
    /// SHA-384.
    Sha384,
    /// SHA-512.
    Sha512,
}

impl HashAlg {
    /// Digest of `data`.
    pub fn digest(self, data: &[u8]) -> Vec<u8> {
        let _ = data;
        Vec::new()
    }
}

/// Methods we offer, in OpenSSH 10's default order restricted to those we implement.
pub const DEFAULT_KEX: &[&str] = &[
    "mlkem768x25519-sha256",
    "curve25519-sha256",
    "curve25519-sha256@libssh.org",
    "ecdh-sha2-nistp256",
    "ecdh-sha2-nistp384",
    "ecdh-sha2-nistp521",
];

/// The hash of a method, or None if we do not implement it.
pub fn kex_hash(name: &str) -> Option<HashAlg> {
    let _ = name;
    None
}

/// The shared secret K, already encoded as it enters the exchange hash and
/// key derivation: `mpint` for ECDH and curve25519, `string` for the ML-KEM hybrid.
pub struct SharedSecret(zeroize::Zeroizing<Vec<u8>>);

impl SharedSecret {
    /// Wraps an encoded secret.
    pub fn from_encoded(encoded: Vec<u8>) -> Self {
        SharedSecret(zeroize::Zeroizing::new(encoded))
    }
    /// The encoded bytes (length prefix included).
    pub fn encoded(&self) -> &[u8] {
        &self.0
    }
}

/// The client's half of a key exchange in progress.
pub trait KexClient: Send {
    /// Q_C: what the client sends in its init message.
    fn client_public(&self) -> &[u8];
    /// Completes the exchange with the server's Q_S.
    fn finish(self: Box<Self>, server_public: &[u8]) -> Result<SharedSecret, CryptoError>;
}

/// Starts a key exchange as client.
pub fn client_start(name: &str) -> Result<Box<dyn KexClient>, CryptoError> {
    let _ = name;
    Err(CryptoError)
}

/// The server's whole side: returns Q_S and K for the client's Q_C.
pub fn server_respond(name: &str, client_public: &[u8]) -> Result<(Vec<u8>, SharedSecret), CryptoError> {
    let _ = (name, client_public);
    Err(CryptoError)
}

/// RFC 4253 7.2: HASH(K || H || letter || session_id), extended with
/// HASH(K || H || K1 || ...) until `len` bytes.
pub fn derive_key(
    hash: HashAlg,
    k: &SharedSecret,
    h: &[u8],
    letter: u8,
    session_id: &[u8],
    len: usize,
) -> zeroize::Zeroizing<Vec<u8>> {
    let _ = (hash, k, h, letter, session_id, len);
    zeroize::Zeroizing::new(Vec::new())
}
