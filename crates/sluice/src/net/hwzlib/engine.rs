//! `zlib@openssh.com` and `zlib` (RFC 4253 6.2, OpenSSH PROTOCOL 1.3)
//! through a loaded zlib-API library ([`super::loader`]): one zlib stream
//! per direction and key epoch, each packet ended with a sync flush, so the
//! wire is a plain zlib stream any peer's inflate reads. Sequential: a
//! hardware engine is fed one stream, in order.
//!
//! Level 1: IBM Z's DFLTCC deflates in hardware only at level 1 unless the
//! library was built otherwise (its default `DFLTCC_LEVEL_MASK` is 0x2);
//! NX and QAT ignore the level; a software stand-in is fastest there.
//!
//! Inflating is bounded exactly as the software engine is: output grows in
//! steps into the caller's buffer and never past `limit + 1` bytes, so a
//! packet that inflates past the packet limit is
//! [`Violation::BadCompression`] (a clean disconnect), whatever the library.

use super::loader::{
    LoadError, SelfTestError, ZStream, ZlibLibrary, Z_BUF_ERROR, Z_OK, Z_STREAM_END, Z_SYNC_FLUSH,
};
use crate::log;
use sluice_proto::error::Violation;
use sluice_proto::transport::compress::{
    Activation, CompressError, CompressionEngine, Compressor, Decompressor, SequentialCompressor,
};
use sluice_proto::transport::zlib::ZlibEngine;
use std::ffi::{c_int, c_uint};
use std::sync::Arc;

/// The deflate level asked of the library (see the module doc).
const HW_LEVEL: c_int = 1;

/// zlib through a loaded library, under either wire name.
pub struct HwZlibEngine {
    lib: Arc<ZlibLibrary>,
    activation: Activation,
}

impl HwZlibEngine {
    /// The engine for `activation` (`zlib` or `zlib@openssh.com`).
    pub fn new(lib: Arc<ZlibLibrary>, activation: Activation) -> Self {
        HwZlibEngine { lib, activation }
    }

    /// The software engine of the same name: the fallback when the library
    /// cannot start a stream (the wire is the same zlib either way).
    fn software(&self) -> ZlibEngine {
        match self.activation {
            Activation::Immediate => ZlibEngine::immediate(),
            Activation::Delayed => ZlibEngine::delayed(),
        }
    }
}

impl CompressionEngine for HwZlibEngine {
    fn name(&self) -> &str {
        match self.activation {
            Activation::Immediate => "zlib",
            Activation::Delayed => "zlib@openssh.com",
        }
    }

    fn activation(&self) -> Activation {
        self.activation
    }

    fn compressor(&self) -> Compressor {
        Compressor::Sequential(Box::new(HwDeflate {
            engine: self.clone(),
            state: Started::NotYet,
        }))
    }

    fn decompressor(&self) -> Box<dyn Decompressor> {
        Box::new(HwInflate {
            engine: self.clone(),
            state: Started::NotYet,
        })
    }
}

impl Clone for HwZlibEngine {
    fn clone(&self) -> Self {
        HwZlibEngine {
            lib: self.lib.clone(),
            activation: self.activation,
        }
    }
}

/// A stream's state. The library is first called on the stream's first
/// packet, not when the transport sets the stream up: a server sets up the
/// delayed streams in its sandboxed pre-auth process as USERAUTH_SUCCESS
/// goes out, and hands the connection over before any packet is compressed,
/// so a hardware library never runs (opens devices, maps queues) there.
/// Until the first packet nothing is on the wire, so a library that cannot
/// start a stream is replaced by software zlib without the peer noticing.
enum Started<H, S> {
    NotYet,
    Hardware(H),
    Software(S),
}

/// An outgoing stream.
struct HwDeflate {
    engine: HwZlibEngine,
    state: Started<Deflater, Box<dyn SequentialCompressor>>,
}

impl SequentialCompressor for HwDeflate {
    fn compress(&mut self, payload: &[u8], out: &mut Vec<u8>) -> Result<(), CompressError> {
        let e = &self.engine;
        if matches!(self.state, Started::NotYet) {
            self.state = match Deflater::new(&e.lib) {
                Ok(d) => {
                    log!(Debug1, "{}: deflating through {}", e.name(), e.lib.file);
                    Started::Hardware(d)
                }
                Err(rc) => {
                    log!(
                        Info,
                        "EnableHwCompression: deflateInit2_ of {} returned {rc}; this stream uses software zlib",
                        e.lib.file
                    );
                    match e.software().compressor() {
                        Compressor::Sequential(c) => Started::Software(c),
                        Compressor::Batch(_) => return Err(CompressError),
                    }
                }
            };
        }
        match &mut self.state {
            Started::Hardware(d) => d.run(&e.lib, payload, out).map_err(|()| CompressError),
            Started::Software(c) => c.compress(payload, out),
            Started::NotYet => Err(CompressError),
        }
    }
}

impl Drop for HwDeflate {
    fn drop(&mut self) {
        if let Started::Hardware(d) = &mut self.state {
            d.end(&self.engine.lib);
        }
    }
}

/// An incoming stream.
struct HwInflate {
    engine: HwZlibEngine,
    state: Started<Inflater, Box<dyn Decompressor>>,
}

impl Decompressor for HwInflate {
    fn decompress(
        &mut self,
        compressed: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<(), Violation> {
        let e = &self.engine;
        if matches!(self.state, Started::NotYet) {
            self.state = match Inflater::new(&e.lib) {
                Ok(i) => {
                    log!(Debug1, "{}: inflating through {}", e.name(), e.lib.file);
                    Started::Hardware(i)
                }
                Err(rc) => {
                    log!(
                        Info,
                        "EnableHwCompression: inflateInit2_ of {} returned {rc}; this stream uses software zlib",
                        e.lib.file
                    );
                    Started::Software(e.software().decompressor())
                }
            };
        }
        match &mut self.state {
            Started::Hardware(i) => i
                .run(&e.lib, compressed, out, limit)
                .map_err(|()| Violation::BadCompression),
            Started::Software(d) => d.decompress(compressed, out, limit),
            Started::NotYet => Err(Violation::BadCompression),
        }
    }
}

impl Drop for HwInflate {
    fn drop(&mut self) {
        if let Started::Hardware(i) = &mut self.state {
            i.end(&self.engine.lib);
        }
    }
}

/// A deflate stream of a library (the library is passed to each call, so
/// the loader's self-test can use it before there is an `Arc`).
pub(super) struct Deflater {
    z: Box<ZStream>,
    live: bool,
}

// SAFETY: the z_stream is owned by this value alone and zlib-API streams
// have no thread affinity; the pointers in it are only the library's state
// (the caller's buffers are cleared after each call).
unsafe impl Send for Deflater {}

impl Deflater {
    /// A new stream; Err is the library's return code.
    pub(super) fn new(lib: &ZlibLibrary) -> Result<Deflater, c_int> {
        let mut z = ZStream::new();
        match lib.deflate_init(&mut z, HW_LEVEL) {
            Z_OK => Ok(Deflater { z, live: true }),
            rc => Err(rc),
        }
    }

    /// Appends `payload` deflated and sync-flushed to `out`.
    pub(super) fn run(
        &mut self,
        lib: &ZlibLibrary,
        payload: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), ()> {
        let avail_in = c_uint::try_from(payload.len()).map_err(|_| ())?;
        let z = &mut *self.z;
        z.next_in = payload.as_ptr();
        z.avail_in = avail_in;
        let mut room = payload.len() + payload.len() / 1000 + 64;
        let r = loop {
            out.reserve(room);
            let len = out.len();
            let avail = c_uint::try_from(out.capacity() - len).unwrap_or(c_uint::MAX);
            // The spare capacity of `out` (from `len` on) holds `avail` bytes.
            z.next_out = out.spare_capacity_mut().as_mut_ptr().cast();
            z.avail_out = avail;
            let in_before = z.avail_in;
            // SAFETY: an initialised stream; next_in/next_out as set above.
            let rc = unsafe { lib.deflate(z, Z_SYNC_FLUSH) };
            let produced = (avail - z.avail_out) as usize;
            // SAFETY: deflate wrote `produced` bytes into the spare capacity.
            unsafe { out.set_len(len + produced) };
            match rc {
                // Room left after a flush means the flush is complete.
                Z_OK if z.avail_out > 0 && z.avail_in == 0 => break Ok(()),
                // Room and input left, nothing done: the library is stuck
                // (never zlib itself); stop rather than grow `out` forever.
                Z_OK if z.avail_out > 0 && produced == 0 && z.avail_in == in_before => {
                    break Err(())
                }
                Z_OK => {}
                // Nothing to do (an empty payload right after a flush).
                Z_BUF_ERROR if z.avail_in == 0 && z.avail_out > 0 => break Ok(()),
                _ => break Err(()),
            }
            room = out.capacity().max(1024);
        };
        z.clear_buffers();
        r
    }

    /// deflateEnd, once.
    pub(super) fn end(&mut self, lib: &ZlibLibrary) {
        if std::mem::take(&mut self.live) {
            lib.deflate_end(&mut self.z);
        }
    }
}

/// An inflate stream of a library.
pub(super) struct Inflater {
    z: Box<ZStream>,
    live: bool,
}

// SAFETY: as for Deflater.
unsafe impl Send for Inflater {}

impl Inflater {
    /// A new stream; Err is the library's return code.
    pub(super) fn new(lib: &ZlibLibrary) -> Result<Inflater, c_int> {
        let mut z = ZStream::new();
        match lib.inflate_init(&mut z) {
            Z_OK => Ok(Inflater { z, live: true }),
            rc => Err(rc),
        }
    }

    /// Replaces `out` with `input` inflated; Err when it does not decode or
    /// would pass `limit` bytes. Never writes more than `limit + 1` bytes.
    pub(super) fn run(
        &mut self,
        lib: &ZlibLibrary,
        input: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<(), ()> {
        out.clear();
        let avail_in = c_uint::try_from(input.len()).map_err(|_| ())?;
        let cap = limit.saturating_add(1);
        let mut size = input.len().saturating_mul(4).max(1024).min(cap);
        let z = &mut *self.z;
        z.next_in = input.as_ptr();
        z.avail_in = avail_in;
        let r = loop {
            let len = out.len();
            out.reserve(size - len);
            let avail = c_uint::try_from(size - len).unwrap_or(c_uint::MAX);
            // `out` has at least `size - len` bytes of spare capacity, from `len` on.
            z.next_out = out.spare_capacity_mut().as_mut_ptr().cast();
            z.avail_out = avail;
            let in_before = z.avail_in;
            // SAFETY: an initialised stream; next_in/next_out as set above.
            let rc = unsafe { lib.inflate(z, Z_SYNC_FLUSH) };
            let produced = (avail - z.avail_out) as usize;
            // SAFETY: inflate wrote `produced` bytes into the spare capacity.
            unsafe { out.set_len(len + produced) };
            if !matches!(rc, Z_OK | Z_BUF_ERROR | Z_STREAM_END) || out.len() > limit {
                break Err(());
            }
            if rc == Z_STREAM_END {
                break Ok(());
            }
            if z.avail_out > 0 {
                // Room left: all the input gave is out.
                if z.avail_in == 0 || rc == Z_BUF_ERROR {
                    break Ok(());
                }
                if produced == 0 && z.avail_in == in_before {
                    break Err(()); // no progress with input and room: broken
                }
                continue;
            }
            size = size.saturating_add(size).min(cap);
        };
        z.clear_buffers();
        r
    }

    /// inflateEnd, once.
    pub(super) fn end(&mut self, lib: &ZlibLibrary) {
        if std::mem::take(&mut self.live) {
            lib.inflate_end(&mut self.z);
        }
    }
}

impl ZlibLibrary {
    /// Opens `name` (a path, or a soname the dynamic loader searches for),
    /// resolves the zlib functions and checks one round trip. Here, not in
    /// loader.rs, because the check runs this file's Deflater and Inflater.
    pub fn load(name: &str) -> Result<ZlibLibrary, LoadError> {
        let lib = Self::open(name)?;
        lib.self_test().map_err(LoadError::SelfTest)?;
        Ok(lib)
    }

    /// One packet through the library both ways, with the SSH flush: a
    /// library that loads but cannot do that is not used.
    fn self_test(&self) -> Result<(), SelfTestError> {
        let msg: Vec<u8> = (0..4096u32)
            .map(|i| b"sluice hw deflate "[(i % 18) as usize])
            .collect();
        let mut z = Vec::new();
        let mut back = Vec::new();
        let mut d = Deflater::new(self).map_err(SelfTestError::DeflateInit)?;
        let mut i = Inflater::new(self).map_err(SelfTestError::InflateInit)?;
        for _ in 0..2 {
            z.clear();
            d.run(self, &msg, &mut z)
                .map_err(|()| SelfTestError::Deflate)?;
            i.run(self, &z, &mut back, msg.len())
                .map_err(|()| SelfTestError::Inflate)?;
            if back != msg {
                return Err(SelfTestError::Mismatch);
            }
        }
        d.end(self);
        i.end(self);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! The stream contract against the system's libz.so.1 standing in for
    //! a hardware library (the loader and the engine do not know the
    //! difference), and against sluice-proto's software zlib both ways.
    use super::*;
    use sluice_proto::transport::compress::Compressor;

    /// Debian's zlib, the stand-in; None (test skipped) where it is absent.
    fn stand_in() -> Option<Arc<ZlibLibrary>> {
        let p = "/lib/x86_64-linux-gnu/libz.so.1";
        let name = if std::path::Path::new(p).exists() {
            p
        } else {
            "libz.so.1"
        };
        ZlibLibrary::load(name).ok().map(Arc::new)
    }

    fn streams(
        e: &dyn CompressionEngine,
    ) -> (Box<dyn SequentialCompressor>, Box<dyn Decompressor>) {
        let Compressor::Sequential(c) = e.compressor() else {
            panic!("sequential engine expected")
        };
        (c, e.decompressor())
    }

    fn text(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|j| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if (j / 512) % 4 == 3 {
                    x as u8
                } else {
                    b"hardware deflate stream "[(x % 24) as usize]
                }
            })
            .collect()
    }

    #[test]
    fn round_trips_with_software_zlib_both_ways() {
        let Some(lib) = stand_in() else { return };
        let hw = HwZlibEngine::new(lib, Activation::Delayed);
        let sw = ZlibEngine::delayed();
        assert_eq!(hw.name(), "zlib@openssh.com");
        let (mut hw_c, mut hw_d) = streams(&hw);
        let (mut sw_c, mut sw_d) = streams(&sw);
        let (mut z, mut back) = (Vec::new(), Vec::new());
        for i in 0..60u64 {
            let msg = text([1, 5, 300, 4000, 32_768, 200_000][(i % 6) as usize], i);
            // hardware deflates, software inflates
            z.clear();
            hw_c.compress(&msg, &mut z).unwrap();
            sw_d.decompress(&z, &mut back, 256 << 10).unwrap();
            assert_eq!(back, msg, "hw -> sw packet {i}");
            // software deflates, hardware inflates
            z.clear();
            sw_c.compress(&msg, &mut z).unwrap();
            hw_d.decompress(&z, &mut back, 256 << 10).unwrap();
            assert_eq!(back, msg, "sw -> hw packet {i}");
        }
    }

    #[test]
    fn bomb_is_a_violation_and_bounded() {
        let Some(lib) = stand_in() else { return };
        let hw = HwZlibEngine::new(lib, Activation::Immediate);
        assert_eq!(hw.name(), "zlib");
        // A crafted packet: 4 MiB of zeros deflate to a few KiB.
        let (mut c, _) = streams(&ZlibEngine::immediate());
        let mut z = Vec::new();
        c.compress(&vec![0u8; 4 << 20], &mut z).unwrap();
        assert!(z.len() < 64 << 10, "{}", z.len());
        let mut d = hw.decompressor();
        let mut out = Vec::new();
        let limit = 256 << 10;
        assert_eq!(
            d.decompress(&z, &mut out, limit),
            Err(Violation::BadCompression)
        );
        assert!(out.len() <= limit + 1, "{}", out.len());
        assert!(out.capacity() <= 2 * (limit + 1), "{}", out.capacity());
        // Exactly the limit still inflates.
        let (mut c, _) = streams(&ZlibEngine::immediate());
        let mut d = hw.decompressor();
        z.clear();
        c.compress(&vec![7u8; limit], &mut z).unwrap();
        d.decompress(&z, &mut out, limit).unwrap();
        assert_eq!(out.len(), limit);
    }

    #[test]
    fn streams_set_up_and_dropped_unused() {
        // What a server's pre-auth process does: set up, never use.
        let Some(lib) = stand_in() else { return };
        let hw = HwZlibEngine::new(lib, Activation::Delayed);
        for _ in 0..100 {
            drop(streams(&hw));
        }
    }

    #[test]
    fn garbage_is_a_violation() {
        let Some(lib) = stand_in() else { return };
        let hw = HwZlibEngine::new(lib, Activation::Delayed);
        let mut out = Vec::new();
        for junk in [&b"garbage!"[..], &[0x78, 0x01, 0xff, 0xff, 0xff][..]] {
            assert_eq!(
                hw.decompressor().decompress(junk, &mut out, 1000),
                Err(Violation::BadCompression)
            );
        }
        // An empty packet inflates to nothing.
        hw.decompressor().decompress(&[], &mut out, 1000).unwrap();
        assert!(out.is_empty());
    }
}
