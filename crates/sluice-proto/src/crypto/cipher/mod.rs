//! Packet ciphers and MACs (RFC 4253 6.3-6.4, RFC 4344, RFC 5647, RFC 6668,
//! RFC 4418, OpenSSH PROTOCOL 1.5-1.6 and PROTOCOL.chacha20poly1305): the name tables,
//! and constructors that build one direction's [`Sealer`] or [`Opener`] from
//! the keys the key exchange derived (RFC 4253 7.2).
//!
//! Each construction lives in its own file: `gcm` (AES-GCM), `chacha`
//! (chacha20-poly1305@openssh.com), `ctr` (AES-CTR or `none`, with a MAC
//! from `mac`, encrypt-and-MAC or encrypt-then-MAC; UMAC in `umac`). All of them are
//! stateless per packet: nonces and counters come from [`super::PacketPos`],
//! so `seal`/`open` take `&self` and packets may be processed in parallel.
//! Known-answer vectors are in `kat.rs` (made by `testdata/kat_gen.py`).

mod chacha;
mod ctr;
mod gcm;
#[cfg(test)]
mod kat;
mod mac;
#[cfg(test)]
mod tests;
mod umac;

use super::provider::PacketCipher;
use super::{CryptoError, Opener, Sealer};
use chacha::ChaCha;
use ctr::CtrMac;
use gcm::Gcm;
use mac::Mac;

/// Sizes of a cipher's keys (RFC 4253 7.2 derivation lengths).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CipherInfo {
    /// Wire name.
    pub name: &'static str,
    /// Encryption key bytes.
    pub key_len: usize,
    /// IV bytes derived for it (0 for chacha20-poly1305).
    pub iv_len: usize,
    /// Block size for padding.
    pub block_size: usize,
    /// An AEAD cipher: the negotiated MAC is ignored (RFC 5647 5.1, PROTOCOL.chacha20poly1305).
    pub aead: bool,
}

/// Sizes of a MAC's key and tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MacInfo {
    /// Wire name.
    pub name: &'static str,
    /// MAC key bytes.
    pub key_len: usize,
    /// Tag bytes.
    pub tag_len: usize,
    /// Encrypt-then-MAC (`-etm@openssh.com`).
    pub etm: bool,
}

/// Ciphers we offer, in OpenSSH 10's default order restricted to those we implement.
pub const DEFAULT_CIPHERS: &[&str] = &[
    "chacha20-poly1305@openssh.com",
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "aes128-ctr",
    "aes192-ctr",
    "aes256-ctr",
];

/// MACs we offer: OpenSSH 10's default (ssh_config(5) and sshd_config(5)
/// MACs, the same list), in its order. Used only with the CTR ciphers: the
/// AEAD ciphers ahead of them carry their own tag.
pub const DEFAULT_MACS: &[&str] = &[
    "umac-64-etm@openssh.com",
    "umac-128-etm@openssh.com",
    "hmac-sha2-256-etm@openssh.com",
    "hmac-sha2-512-etm@openssh.com",
    "hmac-sha1-etm@openssh.com",
    "umac-64@openssh.com",
    "umac-128@openssh.com",
    "hmac-sha2-256",
    "hmac-sha2-512",
    "hmac-sha1",
];

/// Every MAC sluice implements, in the order `ssh -Q mac` lists them: what
/// `MACs` may name. MD5 and the -96 forms are never offered by default.
pub const SUPPORTED_MACS: &[&str] = &[
    "hmac-sha1",
    "hmac-sha1-96",
    "hmac-sha2-256",
    "hmac-sha2-512",
    "hmac-md5",
    "hmac-md5-96",
    "umac-64@openssh.com",
    "umac-128@openssh.com",
    "hmac-sha1-etm@openssh.com",
    "hmac-sha1-96-etm@openssh.com",
    "hmac-sha2-256-etm@openssh.com",
    "hmac-sha2-512-etm@openssh.com",
    "hmac-md5-etm@openssh.com",
    "hmac-md5-96-etm@openssh.com",
    "umac-64-etm@openssh.com",
    "umac-128-etm@openssh.com",
];

const fn cipher(
    name: &'static str,
    key_len: usize,
    iv_len: usize,
    block_size: usize,
    aead: bool,
) -> AwsLcCipher {
    AwsLcCipher(CipherInfo {
        name,
        key_len,
        iv_len,
        block_size,
        aead,
    })
}

/// The aws-lc provider's ciphers, `none` included (never offered by default).
pub(crate) static CIPHERS: &[&dyn PacketCipher] = &[
    &cipher("chacha20-poly1305@openssh.com", 64, 0, 8, true),
    &cipher("aes128-gcm@openssh.com", 16, 12, 16, true),
    &cipher("aes256-gcm@openssh.com", 32, 12, 16, true),
    &cipher("aes128-ctr", 16, 16, 16, false),
    &cipher("aes192-ctr", 24, 16, 16, false),
    &cipher("aes256-ctr", 32, 16, 16, false),
    &cipher("none", 0, 0, 8, false),
];

const fn mac(name: &'static str, key_len: usize, tag_len: usize, etm: bool) -> MacInfo {
    MacInfo {
        name,
        key_len,
        tag_len,
        etm,
    }
}

/// The aws-lc provider's MACs, `none` included (never offered by default).
pub(crate) static MACS: &[MacInfo] = &[
    mac("hmac-sha2-256", 32, 32, false),
    mac("hmac-sha2-512", 64, 64, false),
    mac("hmac-sha2-256-etm@openssh.com", 32, 32, true),
    mac("hmac-sha2-512-etm@openssh.com", 64, 64, true),
    mac("hmac-sha1", 20, 20, false),
    mac("hmac-sha1-96", 20, 12, false),
    mac("hmac-md5", 16, 16, false),
    mac("hmac-md5-96", 16, 12, false),
    mac("umac-64@openssh.com", 16, 8, false),
    mac("umac-128@openssh.com", 16, 16, false),
    mac("hmac-sha1-etm@openssh.com", 20, 20, true),
    mac("hmac-sha1-96-etm@openssh.com", 20, 12, true),
    mac("hmac-md5-etm@openssh.com", 16, 16, true),
    mac("hmac-md5-96-etm@openssh.com", 16, 12, true),
    mac("umac-64-etm@openssh.com", 16, 8, true),
    mac("umac-128-etm@openssh.com", 16, 16, true),
    mac("none", 0, 0, false),
];

/// Looks up an aws-lc cipher by wire name (including `none`, never offered by default).
pub fn cipher_info(name: &str) -> Option<CipherInfo> {
    CIPHERS.iter().map(|c| c.info()).find(|i| i.name == name)
}

/// Looks up an aws-lc MAC by wire name (including `none`, never offered by default).
pub fn mac_info(name: &str) -> Option<MacInfo> {
    MACS.iter().copied().find(|m| m.name == name)
}

/// An entry of [`CIPHERS`]: the construction is chosen by name in `build`.
pub(crate) struct AwsLcCipher(CipherInfo);

impl PacketCipher for AwsLcCipher {
    fn info(&self) -> CipherInfo {
        self.0
    }

    fn sealer(&self, keys: DirectionKeys<'_>) -> Result<Box<dyn Sealer>, CryptoError> {
        sealer(DirectionKeys {
            cipher: self.0.name,
            ..keys
        })
    }

    fn opener(&self, keys: DirectionKeys<'_>) -> Result<Box<dyn Opener>, CryptoError> {
        opener(DirectionKeys {
            cipher: self.0.name,
            ..keys
        })
    }
}

/// Keys for one direction, derived by the key exchange.
#[derive(Debug, Clone, Copy)]
pub struct DirectionKeys<'a> {
    /// Cipher wire name.
    pub cipher: &'a str,
    /// MAC wire name; ignored for AEAD ciphers.
    pub mac: &'a str,
    /// Encryption key, `key_len` bytes.
    pub key: &'a [u8],
    /// Initial IV, `iv_len` bytes.
    pub iv: &'a [u8],
    /// Integrity key, the MAC's `key_len` bytes.
    pub mac_key: &'a [u8],
}

/// The construction a cipher name selects, built from its keys and boxed
/// once (an HMAC key holds its precomputed state inline, about 1.7 KB).
enum Built {
    ChaCha(Box<ChaCha>),
    Gcm(Box<Gcm>),
    CtrMac(Box<CtrMac>),
}

fn build(keys: DirectionKeys<'_>) -> Result<Built, CryptoError> {
    let info = cipher_info(keys.cipher).ok_or(CryptoError)?;
    if keys.key.len() != info.key_len || keys.iv.len() != info.iv_len {
        return Err(CryptoError);
    }
    let mac = || Mac::new(keys.mac, keys.mac_key);
    Ok(match info.name {
        "chacha20-poly1305@openssh.com" => Built::ChaCha(Box::new(ChaCha::new(keys.key)?)),
        "aes128-gcm@openssh.com" | "aes256-gcm@openssh.com" => {
            Built::Gcm(Box::new(Gcm::new(keys.key, keys.iv)?))
        }
        "aes128-ctr" | "aes192-ctr" | "aes256-ctr" => {
            Built::CtrMac(Box::new(CtrMac::aes(keys.key, keys.iv, mac()?)?))
        }
        "none" => Built::CtrMac(Box::new(CtrMac::plain(mac()?))),
        _ => return Err(CryptoError),
    })
}

/// A sealer for one direction. For an AEAD cipher the MAC name and key are
/// ignored; otherwise the MAC key must have the MAC's `key_len` bytes.
pub fn sealer(keys: DirectionKeys<'_>) -> Result<Box<dyn Sealer>, CryptoError> {
    Ok(match build(keys)? {
        Built::ChaCha(c) => c,
        Built::Gcm(c) => c,
        Built::CtrMac(c) => c,
    })
}

/// An opener for one direction; the same rules as [`sealer`].
pub fn opener(keys: DirectionKeys<'_>) -> Result<Box<dyn Opener>, CryptoError> {
    Ok(match build(keys)? {
        Built::ChaCha(c) => c,
        Built::Gcm(c) => c,
        Built::CtrMac(c) => c,
    })
}

/// The state before the first NEWKEYS: no encryption, no MAC, block size 8.
pub fn initial_sealer() -> Box<dyn Sealer> {
    Box::new(CtrMac::initial())
}

/// The state before the first NEWKEYS: no encryption, no MAC, block size 8.
pub fn initial_opener() -> Box<dyn Opener> {
    Box::new(CtrMac::initial())
}
