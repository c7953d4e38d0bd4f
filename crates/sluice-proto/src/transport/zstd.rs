//! `zstd@sluice.dev`: Zstandard between sluice peers (PROTOCOL.md).
//!
//! Delayed like `zlib@openssh.com` (from user authentication on, afresh at
//! every later NEWKEYS). Per direction and key epoch the sender writes a
//! zstd stream: frames (RFC 8878) with each packet ended by a flush
//! (`ZSTD_e_flush`), so the receiver decodes every packet whole. The
//! window is fixed at 2^[`WINDOW_LOG`] bytes and the receiver refuses
//! frames that ask for more, so its memory is bounded whatever the sender
//! does. The level follows the connection's level handle (the same one
//! the runtime steers for zlib); zstd fixes a frame's level at its start,
//! so a new level ends the frame at a packet boundary and starts another
//! (the receiver decodes concatenated frames).
//!
//! Offered only beside the zlib names: a stock peer does not know it, and
//! negotiation falls back to what both know.

use crate::error::Violation;
use crate::transport::compress::{
    Activation, CompressError, CompressionEngine, Compressor, Decompressor, Level,
    SequentialCompressor,
};
use std::sync::Arc;
use zstd::stream::raw::{CParameter, DParameter, Decoder, Encoder, InBuffer, Operation, OutBuffer};

/// The wire name.
pub const NAME: &str = "zstd@sluice.dev";
/// log2 of the window both ends use (4 MiB).
pub const WINDOW_LOG: u32 = 22;

/// The zstd engine, steered by a connection's level handle.
#[derive(Debug, Clone)]
pub struct ZstdEngine {
    level: Arc<Level>,
}

impl ZstdEngine {
    /// An engine whose streams follow `level` (0-9, mapped by [`zstd_level`]).
    pub fn new(level: Arc<Level>) -> Self {
        ZstdEngine { level }
    }
}

/// Our 0-9 scale in zstd's: 0 is zstd's fastest negative level (close to
/// storing), 1-9 are zstd's 1-9 (zstd 1 is faster than deflate 1 and
/// compresses better).
pub fn zstd_level(level: u8) -> i32 {
    match level {
        0 => -7,
        l => i32::from(l.min(9)),
    }
}

impl CompressionEngine for ZstdEngine {
    fn name(&self) -> &str {
        NAME
    }

    fn activation(&self) -> Activation {
        Activation::Delayed
    }

    fn compressor(&self) -> Compressor {
        Compressor::Sequential(Box::new(ZstdOut {
            z: None,
            level: self.level.clone(),
        }))
    }

    fn decompressor(&self) -> Box<dyn Decompressor> {
        Box::new(ZstdIn { z: None })
    }

    fn level(&self) -> Option<Arc<Level>> {
        Some(self.level.clone())
    }
}

/// The outgoing stream: an encoder and the level its frame was started at.
struct ZstdOut {
    z: Option<(Encoder<'static>, u8)>,
    level: Arc<Level>,
}

fn encoder(level: u8) -> std::io::Result<Encoder<'static>> {
    let mut e = Encoder::new(zstd_level(level))?;
    e.set_parameter(CParameter::WindowLog(WINDOW_LOG))?;
    // No checksum: the transport's MAC covers every packet.
    e.set_parameter(CParameter::ChecksumFlag(false))?;
    Ok(e)
}

impl SequentialCompressor for ZstdOut {
    fn compress(&mut self, payload: &[u8], out: &mut Vec<u8>) -> Result<(), CompressError> {
        let level = self.level.get();
        if let Some((e, l)) = self.z.as_mut() {
            if *l != level {
                // End this frame here; the next starts at the new level.
                end_frame(e, out)?;
                self.z = None;
            }
        }
        if self.z.is_none() {
            self.z = Some((encoder(level).map_err(|_| CompressError)?, level));
        }
        let Some((e, _)) = self.z.as_mut() else {
            return Err(CompressError);
        };
        let mut input = InBuffer::around(payload);
        while input.pos() < payload.len() {
            out.reserve(payload.len() - input.pos() + 1024);
            let mut o = OutBuffer::around_pos(out, out.len());
            e.run(&mut input, &mut o).map_err(|_| CompressError)?;
        }
        loop {
            out.reserve(1024 + payload.len() / 8);
            let mut o = OutBuffer::around_pos(out, out.len());
            let left = e.flush(&mut o).map_err(|_| CompressError)?;
            if left == 0 {
                return Ok(());
            }
        }
    }
}

fn end_frame(e: &mut Encoder<'static>, out: &mut Vec<u8>) -> Result<(), CompressError> {
    loop {
        out.reserve(1024);
        let mut o = OutBuffer::around_pos(out, out.len());
        if e.finish(&mut o, true).map_err(|_| CompressError)? == 0 {
            return Ok(());
        }
    }
}

/// The incoming stream.
struct ZstdIn {
    z: Option<Decoder<'static>>,
}

impl Decompressor for ZstdIn {
    /// Decodes into `out`, never past `limit + 1` bytes: a packet that
    /// would inflate further (a bomb) is refused after one packet's worth.
    fn decompress(
        &mut self,
        compressed: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<(), Violation> {
        out.clear();
        if self.z.is_none() {
            let mut d = Decoder::new().map_err(|_| Violation::BadCompression)?;
            d.set_parameter(DParameter::WindowLogMax(WINDOW_LOG))
                .map_err(|_| Violation::BadCompression)?;
            self.z = Some(d);
        }
        let Some(d) = self.z.as_mut() else {
            return Err(Violation::BadCompression);
        };
        let cap = limit.saturating_add(1);
        let mut input = InBuffer::around(compressed);
        let mut size = compressed.len().saturating_mul(4).max(1024).min(cap);
        let mut filled = 0usize;
        loop {
            out.resize(size, 0);
            let before = (input.pos(), filled);
            // The output is a slice of `size` bytes: the decoder cannot
            // write past it, whatever the frame claims.
            let mut o = OutBuffer::around_pos(out.as_mut_slice(), filled);
            let r = d.run(&mut input, &mut o);
            filled = o.pos();
            drop(o);
            out.truncate(filled);
            r.map_err(|_| Violation::BadCompression)?;
            if filled > limit {
                return Err(Violation::BadCompression);
            }
            if input.pos() >= compressed.len() && filled < size {
                return Ok(());
            }
            if filled == size {
                if size >= cap {
                    return Err(Violation::BadCompression);
                }
                size = size.saturating_mul(2).min(cap);
            } else if (input.pos(), filled) == before {
                return Err(Violation::BadCompression);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(level: &Arc<Level>) -> (Box<dyn SequentialCompressor>, Box<dyn Decompressor>) {
        let e = ZstdEngine::new(level.clone());
        let Compressor::Sequential(c) = e.compressor() else {
            unreachable!("zstd is sequential")
        };
        (c, e.decompressor())
    }

    #[test]
    fn packets_round_trip_across_level_changes() {
        let level = Level::new(1);
        let (mut c, mut d) = pair(&level);
        let (mut z, mut back) = (Vec::new(), Vec::new());
        let mut total = (0, 0);
        for i in 0..60u32 {
            level.set([1, 3, 0, 6][(i / 15) as usize]);
            let msg: Vec<u8> = (0..(i * 4099) as usize)
                .map(|j| b"zstd between sluice peers "[(j + i as usize) % 26])
                .collect();
            z.clear();
            c.compress(&msg, &mut z).unwrap();
            d.decompress(&z, &mut back, 1 << 20).unwrap();
            assert_eq!(back, msg, "packet {i}");
            total = (total.0 + msg.len(), total.1 + z.len());
        }
        assert!(total.1 * 20 < total.0, "{total:?}");
    }

    #[test]
    fn bomb_is_bounded() {
        let level = Level::new(3);
        let (mut c, mut d) = pair(&level);
        let mut z = Vec::new();
        c.compress(&vec![0u8; 1 << 20], &mut z).unwrap();
        let mut out = Vec::new();
        assert_eq!(
            d.decompress(&z, &mut out, 1000),
            Err(Violation::BadCompression)
        );
        assert!(out.len() <= 1001, "{}", out.len());
        let (_, mut d) = pair(&level);
        assert!(d
            .decompress(b"not zstd at all", &mut Vec::new(), 1000)
            .is_err());
    }

    /// A frame asking for a window larger than agreed is refused.
    #[test]
    fn large_window_refused() {
        let mut e = Encoder::new(3).unwrap();
        e.set_parameter(CParameter::WindowLog(WINDOW_LOG + 2))
            .unwrap();
        // A frame whose header declares the large window (unknown size).
        let data = vec![7u8; 64 << 10];
        let mut z = Vec::new();
        let mut input = InBuffer::around(&data);
        z.reserve(1 << 20);
        let mut o = OutBuffer::around_pos(&mut z, 0);
        e.run(&mut input, &mut o).unwrap();
        while e.flush(&mut o).unwrap() > 0 {}
        drop(o);
        let (_, mut d) = pair(&Level::new(1));
        assert!(d.decompress(&z, &mut Vec::new(), 1 << 20).is_err());
    }
}
