//! Key exchange methods and key derivation.
//!
//! - `curve25519-sha256` and `curve25519-sha256@libssh.org` (RFC 8731) and
//!   `ecdh-sha2-nistp256/384/521` (RFC 5656 section 4): see [`ecdh`].
//! - `mlkem768x25519-sha256` (draft-ietf-sshm-mlkem-hybrid-kex, OpenSSH 9.9+):
//!   see [`mlkem`].
//! - Key derivation (RFC 4253 section 7.2): [`derive_key`].
//!
//! This module computes the shared secret `K` and derives keys; the KEX
//! messages, the exchange hash `H` and host-key signatures belong to the
//! `kex` state machine. `METHODS` is the aws-lc provider's table; ephemeral
//! keys draw from the connection's Rng where aws-lc lets them (see `ecdh`
//! and `mlkem`).

mod dh;
mod dh_groups;
mod ecdh;
pub mod gex;
mod mlkem;
mod sntrup;

pub(crate) use dh::{respond as dh_respond, DhClient};
pub use dh::{DhGroup, MAX_MODULUS_BITS, MIN_MODULUS_BITS};
pub use gex::DhModulus;

use super::provider::KexMethod;
use super::{CryptoError, Rng};
use aws_lc_rs::digest;
use zeroize::Zeroizing;

/// Hash function of a key exchange method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashAlg {
    /// SHA-1: only the legacy methods a user configures (RFC 4253 8).
    Sha1,
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
        digest::digest(self.algorithm(), data).as_ref().to_vec()
    }

    /// Output length in bytes.
    pub fn output_len(self) -> usize {
        self.algorithm().output_len()
    }

    /// A streaming hash context, for hashing data that is not contiguous.
    pub(crate) fn context(self) -> digest::Context {
        digest::Context::new(self.algorithm())
    }

    fn algorithm(self) -> &'static digest::Algorithm {
        match self {
            HashAlg::Sha1 => &digest::SHA1_FOR_LEGACY_USE_ONLY,
            HashAlg::Sha256 => &digest::SHA256,
            HashAlg::Sha384 => &digest::SHA384,
            HashAlg::Sha512 => &digest::SHA512,
        }
    }
}

/// The client's default (ssh_config(5) KexAlgorithms of OpenSSH 10.x, in
/// its order): the post-quantum hybrids, the curves, then group exchange
/// and the RFC 8268 groups. The SHA-1 methods and group 1 are implemented
/// but offered only when configured ([`LEGACY_KEX`]).
pub const DEFAULT_KEX: &[&str] = &[
    "mlkem768x25519-sha256",
    "sntrup761x25519-sha512",
    "sntrup761x25519-sha512@openssh.com",
    "curve25519-sha256",
    "curve25519-sha256@libssh.org",
    "ecdh-sha2-nistp256",
    "ecdh-sha2-nistp384",
    "ecdh-sha2-nistp521",
    "diffie-hellman-group-exchange-sha256",
    "diffie-hellman-group16-sha512",
    "diffie-hellman-group18-sha512",
    "diffie-hellman-group14-sha256",
];

/// The server's default (sshd_config(5) KexAlgorithms of OpenSSH 10.x):
/// the client's without finite-field Diffie-Hellman, which sshd 10.0 took
/// out of its default (each such exchange costs the server a large modular
/// exponentiation per unauthenticated connection). A configuration may
/// still name them.
pub const SERVER_DEFAULT_KEX: &[&str] = &[
    "mlkem768x25519-sha256",
    "sntrup761x25519-sha512",
    "sntrup761x25519-sha512@openssh.com",
    "curve25519-sha256",
    "curve25519-sha256@libssh.org",
    "ecdh-sha2-nistp256",
    "ecdh-sha2-nistp384",
    "ecdh-sha2-nistp521",
];

/// Implemented but not offered unless configured: SHA-1 and 1024-bit group 1.
pub const LEGACY_KEX: &[&str] = &[
    "diffie-hellman-group14-sha1",
    "diffie-hellman-group-exchange-sha1",
    "diffie-hellman-group1-sha1",
];

/// Every method implemented: the defaults, then the legacy ones (what
/// `ssh -Q kex` lists and a configuration may name).
pub const ALL_KEX: &[&str] = &[
    "mlkem768x25519-sha256",
    "sntrup761x25519-sha512",
    "sntrup761x25519-sha512@openssh.com",
    "curve25519-sha256",
    "curve25519-sha256@libssh.org",
    "ecdh-sha2-nistp256",
    "ecdh-sha2-nistp384",
    "ecdh-sha2-nistp521",
    "diffie-hellman-group-exchange-sha256",
    "diffie-hellman-group16-sha512",
    "diffie-hellman-group18-sha512",
    "diffie-hellman-group14-sha256",
    "diffie-hellman-group14-sha1",
    "diffie-hellman-group-exchange-sha1",
    "diffie-hellman-group1-sha1",
];

/// The aws-lc provider's key exchange methods.
pub(crate) static METHODS: &[&dyn KexMethod] = &[
    &mlkem::Method,
    &sntrup::Method {
        name: "sntrup761x25519-sha512",
    },
    &sntrup::Method {
        name: "sntrup761x25519-sha512@openssh.com",
    },
    &ecdh::Method {
        name: "curve25519-sha256",
        curve: ecdh::Curve::X25519,
        hash: HashAlg::Sha256,
    },
    &ecdh::Method {
        name: "curve25519-sha256@libssh.org",
        curve: ecdh::Curve::X25519,
        hash: HashAlg::Sha256,
    },
    &ecdh::Method {
        name: "ecdh-sha2-nistp256",
        curve: ecdh::Curve::P256,
        hash: HashAlg::Sha256,
    },
    &ecdh::Method {
        name: "ecdh-sha2-nistp384",
        curve: ecdh::Curve::P384,
        hash: HashAlg::Sha384,
    },
    &ecdh::Method {
        name: "ecdh-sha2-nistp521",
        curve: ecdh::Curve::P521,
        hash: HashAlg::Sha512,
    },
    &dh::GexMethod {
        name: "diffie-hellman-group-exchange-sha256",
        hash: HashAlg::Sha256,
    },
    &dh::Method {
        name: "diffie-hellman-group16-sha512",
        p_hex: dh_groups::GROUP16_P,
        hash: HashAlg::Sha512,
    },
    &dh::Method {
        name: "diffie-hellman-group18-sha512",
        p_hex: dh_groups::GROUP18_P,
        hash: HashAlg::Sha512,
    },
    &dh::Method {
        name: "diffie-hellman-group14-sha256",
        p_hex: dh_groups::GROUP14_P,
        hash: HashAlg::Sha256,
    },
    &dh::Method {
        name: "diffie-hellman-group14-sha1",
        p_hex: dh_groups::GROUP14_P,
        hash: HashAlg::Sha1,
    },
    &dh::GexMethod {
        name: "diffie-hellman-group-exchange-sha1",
        hash: HashAlg::Sha1,
    },
    &dh::Method {
        name: "diffie-hellman-group1-sha1",
        p_hex: dh_groups::GROUP2_P,
        hash: HashAlg::Sha1,
    },
];

fn method(name: &str) -> Option<&'static dyn KexMethod> {
    METHODS.iter().copied().find(|m| m.name() == name)
}

/// The hash of an aws-lc method, or None if we do not implement it.
pub fn kex_hash(name: &str) -> Option<HashAlg> {
    method(name).map(|m| m.hash())
}

/// The shared secret K, already encoded as it enters the exchange hash and
/// key derivation: `mpint` for DH, ECDH and curve25519, `string` for the hybrids.
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

    /// K as an `mpint` (RFC 4251 section 5) of an unsigned big-endian
    /// magnitude: the ECDH x coordinate or the X25519 output (RFC 8731 3.1).
    pub(crate) fn mpint(magnitude: &[u8]) -> Self {
        // Capacity for the worst case, so the writer never reallocates and
        // leaves an unzeroized copy behind.
        let mut v = Zeroizing::new(Vec::with_capacity(magnitude.len().saturating_add(5)));
        crate::wire::Writer::new(&mut v).mpint_unsigned(magnitude);
        SharedSecret(v)
    }

    /// K as a `string`: the hybrid methods' hashed secret.
    pub(crate) fn string(bytes: &[u8]) -> Self {
        let mut v = Zeroizing::new(Vec::with_capacity(bytes.len().saturating_add(4)));
        crate::wire::Writer::new(&mut v).string(bytes);
        SharedSecret(v)
    }
}

impl std::fmt::Debug for SharedSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedSecret(..)")
    }
}

/// The client's half of a key exchange in progress.
pub trait KexClient: Send {
    /// Q_C: what the client sends in its init message.
    fn client_public(&self) -> &[u8];
    /// Completes the exchange with the server's Q_S.
    fn finish(self: Box<Self>, server_public: &[u8]) -> Result<SharedSecret, CryptoError>;
}

/// Starts an aws-lc key exchange as client: generates the ephemeral key(s).
pub fn client_start(name: &str, rng: &mut dyn Rng) -> Result<Box<dyn KexClient>, CryptoError> {
    method(name).ok_or(CryptoError)?.start(rng)
}

/// The server's whole side of an aws-lc method: Q_S and K for the client's
/// Q_C. A Q_C of the wrong length or not a valid point/key fails.
pub fn server_respond(
    name: &str,
    client_public: &[u8],
    rng: &mut dyn Rng,
) -> Result<(Vec<u8>, SharedSecret), CryptoError> {
    method(name).ok_or(CryptoError)?.respond(client_public, rng)
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
    let mut out = Zeroizing::new(Vec::with_capacity(len.saturating_add(hash.output_len())));
    let mut ctx = hash.context();
    ctx.update(k.encoded());
    ctx.update(h);
    ctx.update(&[letter]);
    ctx.update(session_id);
    out.extend_from_slice(ctx.finish().as_ref());
    while out.len() < len {
        let mut ctx = hash.context();
        ctx.update(k.encoded());
        ctx.update(h);
        ctx.update(&out);
        out.extend_from_slice(ctx.finish().as_ref());
    }
    out.truncate(len);
    out
}

/// True if every byte is zero, in time independent of the contents.
fn all_zero(b: &[u8]) -> bool {
    b.iter().fold(0u8, |acc, &x| acc | x) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::SystemRng;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn every_method_agrees() {
        for name in DEFAULT_KEX.iter().chain(LEGACY_KEX) {
            assert!(kex_hash(name).is_some(), "{name}");
            if method(name).unwrap().group_exchange() {
                assert!(client_start(name, &mut SystemRng).is_err());
                continue;
            }
            let client = client_start(name, &mut SystemRng).unwrap();
            let q_c = client.client_public().to_vec();
            let (q_s, k_server) = server_respond(name, &q_c, &mut SystemRng).unwrap();
            let k_client = client.finish(&q_s).unwrap();
            assert_eq!(k_client.encoded(), k_server.encoded(), "{name}");
            let body_len = u32::from_be_bytes(k_client.encoded()[..4].try_into().unwrap()) as usize;
            assert_eq!(body_len + 4, k_client.encoded().len());
        }
        assert!(kex_hash("diffie-hellman-group15-sha512").is_none());
        assert!(client_start("diffie-hellman-group15-sha512", &mut SystemRng).is_err());
        assert!(server_respond("nope", &[4; 65], &mut SystemRng).is_err());
        assert_eq!(METHODS.len(), DEFAULT_KEX.len() + LEGACY_KEX.len());
        assert_eq!(ALL_KEX, [DEFAULT_KEX, LEGACY_KEX].concat());
        // The server's list is the client's without finite-field DH.
        let no_dh: Vec<&str> = DEFAULT_KEX
            .iter()
            .copied()
            .filter(|k| !k.starts_with("diffie-hellman"))
            .collect();
        assert_eq!(SERVER_DEFAULT_KEX, no_dh);
    }

    #[test]
    fn hash_digests() {
        assert_eq!(
            HashAlg::Sha256.digest(b"abc"),
            hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        );
        assert_eq!(HashAlg::Sha384.digest(b"").len(), 48);
        assert_eq!(HashAlg::Sha512.output_len(), 64);
    }

    #[test]
    fn derive_key_known_answer() {
        // Expected values from Python hashlib, following RFC 4253 7.2:
        // K = mpint 0x00ff..., H = 32 x 0x11, session_id = 32 x 0x22.
        let k = SharedSecret::mpint(&[0xff; 32]);
        assert_eq!(&k.encoded()[..5], &[0, 0, 0, 33, 0]);
        let h = [0x11u8; 32];
        let sid = [0x22u8; 32];
        let short = derive_key(HashAlg::Sha256, &k, &h, b'A', &sid, 16);
        assert_eq!(*short, hex(DERIVE_A16));
        let long = derive_key(HashAlg::Sha256, &k, &h, b'C', &sid, 80);
        assert_eq!(*long, hex(DERIVE_C80));
        let long512 = derive_key(HashAlg::Sha512, &k, &h, b'E', &h, 100);
        assert_eq!(*long512, hex(DERIVE_E100_SHA512));
        assert!(derive_key(HashAlg::Sha384, &k, &h, b'F', &sid, 0).is_empty());
    }

    const DERIVE_A16: &str = "a4b9610ef4dd55886ee2c9a8e4952c18";
    const DERIVE_C80: &str = "e20b6eb7dfbb13379cddea71173bbe866e4f5167c33670cbf3434ca277b6f2fa221c9d32afb24b25356ca68fd5e89c7e7685a3410a6bc32eb19794bf5874cf0a2ea6432d8058b6001ab3d274fd171c10";
    const DERIVE_E100_SHA512: &str = "14ab96bb93d711f4b2c3988df76e96c953e84732dc1f10c5b9796f7e0d98a5bdb1eab1eed132dca8d9bcbfd2fc55e9f5cac60fcac53ffb737d32853ae5d3b46d295f2fbccc4c74d5f2ccb27505c779ad0cb78338a33f4f247f89f09481e92f5bc0022067";

    #[test]
    fn mpint_and_string_encodings() {
        assert_eq!(
            SharedSecret::mpint(&[0, 0, 0x7f, 1]).encoded(),
            &[0, 0, 0, 2, 0x7f, 1]
        );
        assert_eq!(
            SharedSecret::mpint(&[0x80]).encoded(),
            &[0, 0, 0, 2, 0, 0x80]
        );
        assert_eq!(
            SharedSecret::string(&[0x80, 0]).encoded(),
            &[0, 0, 0, 2, 0x80, 0]
        );
    }
}
