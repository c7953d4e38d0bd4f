//! Cryptography behind one seam: the [`CryptoProvider`] (tables of key
//! exchange methods, packet ciphers, MACs and signature checks, in
//! [`provider`]) and the [`Rng`] every random byte comes from. The default
//! provider, [`aws_lc_provider`], is built from aws-lc-rs; with the
//! `insecure-test-crypto` feature (or `cfg(fuzzing)`) `insecure` adds a
//! deterministic one for tests and fuzzing. The protocol code above sees
//! only the traits and tables here, never a primitive.
//!
//! Packet ciphers work in place on one whole binary packet (RFC 4253 section 6)
//! and take the packet's position as an argument instead of keeping a running
//! state, so that packets can be sealed and opened on several threads and
//! put back in order by sequence number.

pub mod cipher;
pub mod hostkey;
#[cfg(any(feature = "insecure-test-crypto", fuzzing))]
pub mod insecure;
pub mod kex;
pub mod provider;

pub use provider::CryptoProvider;

use std::fmt;

/// A failed cryptographic check or an unusable key. Deliberately carries no
/// detail: what failed is told by the caller's context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CryptoError;

impl fmt::Display for CryptoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("cryptographic check failed")
    }
}

impl std::error::Error for CryptoError {}

/// Where a packet stands in the stream protected by one set of keys.
///
/// The transport assigns positions in wire order; ciphers derive nonces and
/// counters from them, so sealing needs no shared mutable state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PacketPos {
    /// The SSH sequence number (RFC 4253 section 6.4): feeds MACs and chacha20-poly1305.
    pub seq: u32,
    /// Packets protected by these keys before this one: the AES-GCM invocation counter (RFC 5647 7.1).
    pub index: u64,
    /// Bytes encrypted by these keys before this packet: the AES-CTR counter offset
    /// (always a multiple of 16, since every packet is whole blocks).
    pub offset: u64,
}

/// Encrypts and authenticates outgoing packets.
pub trait Sealer: Send + Sync {
    /// Cipher block size used for padding; at least 8.
    fn block_size(&self) -> usize;
    /// Bytes of authentication tag or MAC that follow each packet.
    fn tag_len(&self) -> usize;
    /// True when the 4-byte length field is encrypted as part of the cipher
    /// blocks (classic encrypt-and-MAC), so padding must make
    /// `4 + packet_length` a multiple of the block size; false for AEAD
    /// and `-etm` MACs, where `packet_length` alone must be.
    fn length_in_blocks(&self) -> bool;
    /// Seals one packet in place. `packet` holds `uint32 packet_length ||
    /// byte padding_length || payload || padding` in plain text; `tag` has
    /// exactly `tag_len()` bytes and receives the tag or MAC.
    fn seal(&self, pos: PacketPos, packet: &mut [u8], tag: &mut [u8]);
}

/// Authenticates and decrypts incoming packets.
pub trait Opener: Send + Sync {
    /// Cipher block size; at least 8.
    fn block_size(&self) -> usize;
    /// Bytes of authentication tag or MAC after each packet.
    fn tag_len(&self) -> usize;
    /// See [`Sealer::length_in_blocks`].
    fn length_in_blocks(&self) -> bool;
    /// Bytes needed from the start of a packet to learn its length: 4 when the
    /// length is plain or separately encrypted, a whole block otherwise.
    fn length_bytes(&self) -> usize {
        if self.length_in_blocks() {
            self.block_size()
        } else {
            4
        }
    }
    /// Returns `packet_length` from the first `length_bytes()` bytes of a
    /// packet, without changing them.
    fn decrypt_length(&self, pos: PacketPos, head: &[u8]) -> Result<u32, CryptoError>;
    /// Verifies and decrypts one packet in place. `packet` is the whole packet
    /// from its length field to the end of padding, as received; on success it
    /// holds the plain text (length field included).
    fn open(&self, pos: PacketPos, packet: &mut [u8], tag: &[u8]) -> Result<(), CryptoError>;
}

/// The default provider: aws-lc-rs for every algorithm sluice implements.
pub fn aws_lc_provider() -> CryptoProvider {
    CryptoProvider {
        name: "aws-lc-rs",
        kex: kex::METHODS,
        ciphers: cipher::CIPHERS,
        macs: cipher::MACS,
        sig_algs_for_key_type: hostkey::sig_algs_for_key_type,
        verify: hostkey::verify,
    }
}

/// Source of randomness for cookies, padding and ephemeral keys; the
/// runtime hands in [`SystemRng`], fuzzing and tests may use a
/// deterministic one.
pub trait Rng: Send {
    /// Fills `buf` with random bytes.
    fn fill(&mut self, buf: &mut [u8]);
}

/// The operating system's randomness through aws-lc-rs.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemRng;

impl Rng for SystemRng {
    fn fill(&mut self, buf: &mut [u8]) {
        use aws_lc_rs::rand::SecureRandom;
        // aws-lc's DRBG only fails if the OS entropy source is gone, which the
        // process cannot recover from; padding must never be predictable.
        #[allow(clippy::expect_used)]
        aws_lc_rs::rand::SystemRandom::new()
            .fill(buf)
            .expect("system randomness unavailable");
    }
}

/// Compares secrets without leaking where they differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    aws_lc_rs::constant_time::verify_slices_are_equal(a, b).is_ok()
}
