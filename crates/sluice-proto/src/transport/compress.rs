//! The compression slot (RFC 4253 section 6.2): what a compression method
//! must provide to plug into the packet layer, and the registry of methods
//! by wire name.
//!
//! A method is a [`CompressionEngine`] registered in
//! [`Config::compression_engines`](crate::Config::compression_engines), in
//! preference order. The KEXINIT name-lists come from that registry (plus
//! `none`, always offered), so the names a runtime offers, prints for
//! `-Q compression` and accepts are one list. Key exchange only reports the
//! names it negotiated; the transport's per-direction state
//! (`transport/compress_state.rs`) looks them up here and decides when a
//! stream starts:
//!
//! - an [`Activation::Immediate`] method (`zlib`) from the NEWKEYS that
//!   switches to it;
//! - an [`Activation::Delayed`] one (`zlib@openssh.com`, OpenSSH PROTOCOL
//!   1.3) from user authentication on: the server after sending
//!   USERAUTH_SUCCESS, the client after receiving it;
//! - afresh at every later NEWKEYS while it stays negotiated (and, for a
//!   delayed method, authentication is done): "the compression context is
//!   initialized after each key exchange" (RFC 4253 6.2), as OpenSSH does.
//!
//! An engine makes one stream per direction per key epoch. Outgoing it is a
//! [`SequentialCompressor`] (one payload at a time, straight into the send
//! state's buffer) or a [`BatchCompressor`], whose packets the send state
//! queues and hands to the runtime as
//! [`CompressJob`](super::compress_batch::CompressJob)s to run on worker
//! threads, the way sealing is handed out (see [`super::compress_batch`]).
//! Incoming it is a [`Decompressor`] that inflates one packet into a buffer
//! bounded by the largest payload: a packet that would inflate further is a
//! [`Violation::BadCompression`], never an allocation.
//!
//! The engine of today's methods is [`super::zlib`]. Byte counts for the
//! `-v` summary are kept by the transport, so every engine has them.

use crate::error::Violation;
use crate::transport::compress_batch::BatchCompressor;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

/// The wire name of "no compression", always offered.
pub const NONE: &str = "none";

/// When a negotiated method starts compressing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// From the NEWKEYS that switches to it (RFC 4253 6.2 `zlib`).
    Immediate,
    /// Once user authentication succeeded (`zlib@openssh.com`).
    Delayed,
}

/// A compression method: its wire name, when it starts, and fresh streams.
pub trait CompressionEngine: Send + Sync {
    /// The name in KEXINIT, e.g. `zlib@openssh.com`.
    fn name(&self) -> &str;
    /// When a negotiated stream starts.
    fn activation(&self) -> Activation;
    /// A new outgoing stream (at each key epoch where it is active).
    fn compressor(&self) -> Compressor;
    /// A new incoming stream.
    fn decompressor(&self) -> Box<dyn Decompressor>;
    /// The handle through which a runtime steers the outgoing level
    /// (`Compression auto`), for engines whose level can change mid-stream.
    fn level(&self) -> Option<Arc<Level>> {
        None
    }
    /// A delayed engine's form for a packet sent before the client knows
    /// whether authentication succeeded (the early CHANNEL_OPEN): appends
    /// to `out` bytes that a receiver whose stream started reads as exactly
    /// `payload`, leaving its stream as if none had gone through, and that
    /// a receiver without the stream reads as a message it answers with
    /// UNIMPLEMENTED (number 80 or more). False (the default): none.
    fn before_auth_form(&self, _payload: &[u8], _out: &mut Vec<u8>) -> bool {
        false
    }
}

/// An outgoing stream, in one of the two shapes the send state drives.
pub enum Compressor {
    /// Compresses each payload as it is framed.
    Sequential(Box<dyn SequentialCompressor>),
    /// Compresses queued payloads as jobs, possibly on several threads.
    Batch(Box<dyn BatchCompressor>),
}

/// Compresses one payload at a time, in order.
pub trait SequentialCompressor: Send {
    /// Appends the compressed form of `payload` to `out`, ended so the peer
    /// can decode the packet whole (zlib: a partial flush).
    fn compress(&mut self, payload: &[u8], out: &mut Vec<u8>) -> Result<(), CompressError>;
}

/// Inflates one packet's payload at a time, in order.
pub trait Decompressor: Send {
    /// Replaces the contents of `out` with the payload inflated from
    /// `compressed`. Must not write more than `limit + 1` bytes to `out`:
    /// more than `limit` bytes of payload is [`Violation::BadCompression`],
    /// as is anything that does not decode.
    fn decompress(
        &mut self,
        compressed: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<(), Violation>;

    /// A packet whose payload lies unchanged inside `compressed` (an engine's
    /// stored form, see [`super::compress_batch::BatchCompressor::stored`]):
    /// takes it as the next packet of the stream and returns where the
    /// payload is, at most `limit` bytes, with no copy. None (the default):
    /// the packet goes to [`Decompressor::decompress`], untouched by this call.
    fn in_place(
        &mut self,
        _compressed: &[u8],
        _limit: usize,
    ) -> Result<Option<std::ops::Range<usize>>, Violation> {
        Ok(None)
    }
}

/// An outgoing stream's level (0-9), shared between a connection's
/// controller and its engine (changes apply from the engine's next job or
/// frame; see [`CompressionEngine::level`]).
#[derive(Debug)]
pub struct Level(AtomicU8);

impl Level {
    /// Starts at `level` (0-9).
    pub fn new(level: u8) -> Arc<Level> {
        Arc::new(Level(AtomicU8::new(level.min(9))))
    }

    /// Sets the level for jobs that start from now on.
    pub fn set(&self, level: u8) {
        self.0.store(level.min(9), Ordering::Relaxed);
    }

    /// The current level.
    pub fn get(&self) -> u8 {
        self.0.load(Ordering::Relaxed)
    }
}

/// The compressor failed (never expected from deflate on valid state). The
/// connection closes: the peer could not decode anything after this packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressError;

impl std::fmt::Display for CompressError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("compression failed")
    }
}

impl std::error::Error for CompressError {}

/// The level a connection's outgoing zlib stream starts at: fast, so a
/// fast link is not held back; a runtime raises it while the link, not
/// the CPU, is the limit (see [`CompressionEngine::level`]).
pub const START_LEVEL: u8 = 1;

/// Every engine sluice-proto implements, preferred first: `zstd@sluice.dev`
/// (between sluice peers), `zlib@openssh.com` then `zlib`, deflated in parallel jobs ([`super::pzlib`]) under one
/// level handle (a connection has one outgoing stream at a time). Call it
/// once per connection. The runtime derives its lists from this one.
pub fn default_engines() -> Vec<Arc<dyn CompressionEngine>> {
    use super::pzlib::ParallelZlib;
    let level = Level::new(START_LEVEL);
    vec![
        Arc::new(super::zstd::ZstdEngine::new(level.clone())),
        Arc::new(ParallelZlib::new(Activation::Delayed, level.clone())),
        Arc::new(ParallelZlib::new(Activation::Immediate, level)),
    ]
}

/// The size `sample` compresses to alone, from a fresh stream, at `level`
/// (0-9, as [`Level`]) of the engine named `name`: what a runtime's level
/// controller measures the levels by, on the same bytes. Level 0 is the
/// engine's stored form (the sample's own size). Pure: no clock, no
/// threads; an engine without such a form (or `none`) is an error.
pub fn sample_len(name: &str, level: u8, sample: &[u8]) -> Result<usize, CompressError> {
    if level == 0 {
        return Ok(sample.len());
    }
    if name == super::zstd::NAME {
        super::zstd::sample_len(level, sample)
    } else if is_openssh_name(name) {
        super::pzlib::sample_len(level, sample)
    } else {
        Err(CompressError)
    }
}

/// The engines of `engines` that start only after user authentication: what
/// a server offers, so nothing is inflated for an unauthenticated peer
/// (sshd's `Compression yes`).
pub fn after_auth_only(engines: &[Arc<dyn CompressionEngine>]) -> Vec<Arc<dyn CompressionEngine>> {
    engines
        .iter()
        .filter(|e| e.activation() == Activation::Delayed)
        .cloned()
        .collect()
}

/// The KEXINIT name-list for `engines`: `none` first, or last when
/// `prefer` (ssh's `Compression yes`: the client's order decides).
pub fn offered_names(engines: &[Arc<dyn CompressionEngine>], prefer: bool) -> Vec<String> {
    let mut names: Vec<String> = Vec::with_capacity(engines.len() + 1);
    for e in engines {
        if e.name() != NONE && !names.iter().any(|n| n == e.name()) {
            names.push(e.name().to_owned());
        }
    }
    if prefer {
        names.push(NONE.to_owned());
    } else {
        names.insert(0, NONE.to_owned());
    }
    names
}

/// The KEXINIT name-list for one direction under `Compression auto`. What
/// we `send`: every engine before `none` (our sender is adaptive and
/// parallel whatever the name). What we receive: engines only a sluice
/// peer knows before `none`, the names stock OpenSSH knows after it, so a
/// stock peer's sender (one deflate stream at level 6, the reason `ssh -C`
/// slows fast links) is never asked to compress.
pub fn auto_names(engines: &[Arc<dyn CompressionEngine>], send: bool) -> Vec<String> {
    let mut names = offered_names(engines, true);
    if !send {
        names.retain(|n| n != NONE);
        let at = names
            .iter()
            .position(|n| is_openssh_name(n))
            .unwrap_or(names.len());
        names.insert(at, NONE.to_owned());
    }
    names
}

/// The compression names stock OpenSSH implements.
pub fn is_openssh_name(name: &str) -> bool {
    matches!(name, "zlib" | "zlib@openssh.com")
}

/// The engine registered as `name`; None for `none` or a name not registered.
pub fn find(
    engines: &[Arc<dyn CompressionEngine>],
    name: &str,
) -> Option<Arc<dyn CompressionEngine>> {
    engines.iter().find(|e| e.name() == name).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_compresses_what_we_send_and_only_sluice_senders_toward_us() {
        let all = after_auth_only(&default_engines());
        assert_eq!(
            auto_names(&all, true),
            ["zstd@sluice.dev", "zlib@openssh.com", "none"]
        );
        assert_eq!(
            auto_names(&all, false),
            ["zstd@sluice.dev", "none", "zlib@openssh.com"]
        );
    }

    #[test]
    fn samples_compress_alone_at_each_level() {
        let text: Vec<u8> = b"a sample of text that repeats itself, "
            .iter()
            .cycle()
            .take(64 << 10)
            .copied()
            .collect();
        for name in ["zstd@sluice.dev", "zlib@openssh.com", "zlib"] {
            assert_eq!(sample_len(name, 0, &text), Ok(text.len()));
            for level in 1..=9 {
                let n = sample_len(name, level, &text).unwrap();
                assert!(n > 0 && n * 20 < text.len(), "{name} {level}: {n}");
            }
            assert_eq!(sample_len(name, 1, &[]).map(|n| n < 16), Ok(true));
        }
        assert_eq!(sample_len("none", 1, &text), Err(CompressError));
    }

    #[test]
    fn names_come_from_the_registry() {
        let all = default_engines();
        assert_eq!(
            offered_names(&all, false),
            ["none", "zstd@sluice.dev", "zlib@openssh.com", "zlib"]
        );
        assert_eq!(
            offered_names(&all, true),
            ["zstd@sluice.dev", "zlib@openssh.com", "zlib", "none"]
        );
        assert_eq!(
            offered_names(&after_auth_only(&all), false),
            ["none", "zstd@sluice.dev", "zlib@openssh.com"]
        );
        assert_eq!(offered_names(&[], true), ["none"]);
        assert_eq!(
            find(&all, "zlib").map(|e| e.activation()),
            Some(Activation::Immediate)
        );
        assert!(find(&all, "none").is_none());
    }
}
