//! The crypto provider: one value, carried by [`crate::Config`], that names
//! every algorithm the engine may negotiate and builds its implementations.
//!
//! The engine never calls a primitive directly: key exchanges, packet
//! ciphers and signature checks come from the provider's tables, and every
//! random byte they need is drawn from the connection's [`Rng`], which the
//! runtime hands to the constructor. A run is therefore reproducible when
//! both the provider and the Rng are deterministic (see `insecure`, built
//! only for tests and fuzzing).
//!
//! Signing is not here: host and user keys are [`super::hostkey::Signer`]
//! values the runtime supplies, which is already the seam a test or an agent
//! plugs into.
//!
//! The tables list what is *implemented*; what is *offered* and in which
//! order is the Config's algorithm lists, checked against the tables.

use super::cipher::{CipherInfo, DirectionKeys, MacInfo};
use super::kex::{HashAlg, KexClient, SharedSecret};
use super::{CryptoError, Opener, Rng, Sealer};

/// One key exchange method (RFC 4253 section 7): its name, hash and both halves.
pub trait KexMethod: Send + Sync {
    /// Wire name (`curve25519-sha256`, ...).
    fn name(&self) -> &'static str;
    /// The hash of the exchange hash and key derivation.
    fn hash(&self) -> HashAlg;
    /// Group exchange (RFC 4419): the key exchange machine runs the extra
    /// round itself, and `start`/`respond` are not used.
    fn group_exchange(&self) -> bool {
        false
    }
    /// Client: makes the ephemeral key(s), drawing entropy from `rng`
    /// where the implementation can take it.
    fn start(&self, rng: &mut dyn Rng) -> Result<Box<dyn KexClient>, CryptoError>;
    /// Server: Q_S and K for the client's Q_C. A Q_C of the wrong length or
    /// not a valid point/key fails.
    fn respond(
        &self,
        client_public: &[u8],
        rng: &mut dyn Rng,
    ) -> Result<(Vec<u8>, SharedSecret), CryptoError>;
}

/// One packet cipher (RFC 4253 section 6.3): sizes, and its two directions.
/// Non-AEAD ciphers take the MAC named in the keys (see [`CryptoProvider::macs`]).
pub trait PacketCipher: Send + Sync {
    /// Wire name and key sizes.
    fn info(&self) -> CipherInfo;
    /// The sealing half for one direction's keys.
    fn sealer(&self, keys: DirectionKeys<'_>) -> Result<Box<dyn Sealer>, CryptoError>;
    /// The opening half for one direction's keys.
    fn opener(&self, keys: DirectionKeys<'_>) -> Result<Box<dyn Opener>, CryptoError>;
}

/// Checks a signature blob (`string alg || string sig`) over `data` with a
/// public key blob, requiring the algorithm `sig_alg` (RFC 4253 6.6).
pub type VerifyFn =
    fn(sig_alg: &str, key_blob: &[u8], signature: &[u8], data: &[u8]) -> Result<(), CryptoError>;

/// Tables of algorithm implementations, rustls-style: plain data, so a
/// provider can be assembled from parts of another.
#[derive(Clone, Copy)]
pub struct CryptoProvider {
    /// For diagnostics.
    pub name: &'static str,
    /// Key exchange methods.
    pub kex: &'static [&'static dyn KexMethod],
    /// Packet ciphers (including `none` where the provider allows it).
    pub ciphers: &'static [&'static dyn PacketCipher],
    /// MACs the non-AEAD ciphers accept.
    pub macs: &'static [MacInfo],
    /// Signature algorithms a public key type can make (empty: a type
    /// [`CryptoProvider::verify`] does not know).
    pub sig_algs_for_key_type: fn(key_type: &str) -> &'static [&'static str],
    /// Signature verification for host keys and user keys.
    pub verify: VerifyFn,
}

impl CryptoProvider {
    /// The key exchange method of a wire name.
    pub fn kex_method(&self, name: &str) -> Option<&'static dyn KexMethod> {
        self.kex.iter().copied().find(|k| k.name() == name)
    }

    /// The cipher of a wire name.
    pub fn cipher(&self, name: &str) -> Option<&'static dyn PacketCipher> {
        self.ciphers.iter().copied().find(|c| c.info().name == name)
    }

    /// Sizes of a cipher, if implemented.
    pub fn cipher_info(&self, name: &str) -> Option<CipherInfo> {
        self.cipher(name).map(|c| c.info())
    }

    /// Sizes of a MAC, if implemented.
    pub fn mac_info(&self, name: &str) -> Option<MacInfo> {
        self.macs.iter().copied().find(|m| m.name == name)
    }
}

impl std::fmt::Debug for CryptoProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CryptoProvider({})", self.name)
    }
}
