//! `zstd@sluice.dev`: Zstandard between sluice peers (PROTOCOL.md).
//!
//! Delayed like `zlib@openssh.com` (from user authentication on, afresh at
//! every later NEWKEYS). Per direction and key epoch the sender writes a
//! zstd stream: frames (RFC 8878) back to back, each packet ended by a
//! flush (`ZSTD_e_flush`), so the receiver decodes every packet whole. The
//! window is fixed at 2^[`WINDOW_LOG`] bytes and the receiver refuses
//! frames that ask for more, so its memory is bounded whatever the sender
//! does.
//!
//! The sender works in batches on several threads, as parallel zlib does
//! (`pzlib.rs`): a job either goes on with the frame its worker left open
//! (the job right after its own, at the same level) or starts a new frame,
//! closing the open one with an empty last block (three bytes any worker
//! can write, since a flush leaves the frame on a block boundary). zstd
//! fixes a frame's level at its start, so a new level is a new frame too.
//! Level 0 is "off": frames of raw blocks written here, a copy and no
//! compression work, so data that does not compress costs next to nothing
//! while it stays on the wire as zstd.
//!
//! Offered only beside the zlib names: a stock peer does not know it, and
//! negotiation falls back to what both know.

use crate::error::Violation;
use crate::transport::compress::{
    Activation, CompressError, CompressionEngine, Compressor, Decompressor, Level,
};
use crate::transport::compress_batch::{BatchCompressor, CompressWorker};
use std::sync::Arc;
use zstd::stream::raw::{CParameter, DParameter, Decoder, Encoder, InBuffer, Operation, OutBuffer};

/// The wire name.
pub const NAME: &str = "zstd@sluice.dev";
/// log2 of the window both ends use (4 MiB).
pub const WINDOW_LOG: u32 = 22;
/// Raw bytes per job: zstd runs at about 0.5 GB/s a core at its level 1,
/// so a job is a millisecond or two of one core's work.
const JOB_LEN: usize = 1 << 20;
/// zstd's largest block (RFC 8878 3.1.1.2.4): raw blocks are cut to it.
const MAX_BLOCK: usize = 128 * 1024;
/// A frame header (RFC 8878 3.1.1.1): magic, a descriptor with no content
/// size, checksum or dictionary, and a window descriptor of 2^22 bytes.
const FRAME_HEADER: [u8; 6] = [0x28, 0xb5, 0x2f, 0xfd, 0x00, ((WINDOW_LOG - 10) << 3) as u8];
/// An empty raw block marked last: ends the open frame.
const END_FRAME: [u8; 3] = [0x01, 0x00, 0x00];

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

/// Our 0-9 scale in zstd's for levels 1-9 (0 is raw blocks, no zstd
/// work): a fast negative level first, for links where zstd's level 1
/// would be the limit, then zstd's own levels.
pub fn zstd_level(level: u8) -> i32 {
    match level {
        0 | 1 => -4,
        2 => 1,
        3 => 2,
        4 => 3,
        5 => 4,
        6 => 6,
        7 => 8,
        8 => 10,
        _ => 12,
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
        Compressor::Batch(Box::new(Batch {
            level: self.level.clone(),
            workers: Vec::new(),
        }))
    }

    fn decompressor(&self) -> Box<dyn Decompressor> {
        Box::new(ZstdIn { z: None })
    }

    fn level(&self) -> Option<Arc<Level>> {
        Some(self.level.clone())
    }
}

/// One outgoing stream's workers.
struct Batch {
    level: Arc<Level>,
    workers: Vec<Box<dyn CompressWorker>>,
}

impl BatchCompressor for Batch {
    fn history_len(&self) -> usize {
        0
    }

    fn job_len(&self) -> usize {
        JOB_LEN
    }

    fn workers(&mut self, n: usize) -> &mut [Box<dyn CompressWorker>] {
        while self.workers.len() < n {
            self.workers.push(Box::new(Worker {
                z: None,
                level: self.level.clone(),
                open: None,
            }));
        }
        &mut self.workers
    }
}

/// Compresses jobs; keeps its encoder between them.
struct Worker {
    z: Option<Encoder<'static>>,
    level: Arc<Level>,
    /// The frame this worker left open: (raw offset where it ended, level).
    open: Option<(u64, u8)>,
}

fn encoder(level: u8) -> std::io::Result<Encoder<'static>> {
    let mut e = Encoder::new(zstd_level(level))?;
    e.set_parameter(CParameter::WindowLog(WINDOW_LOG))?;
    // No checksum: the transport's MAC covers every packet.
    e.set_parameter(CParameter::ChecksumFlag(false))?;
    Ok(e)
}

impl CompressWorker for Worker {
    fn compress(
        &mut self,
        _history: &[u8],
        at: u64,
        input: &[u8],
        lens: &[usize],
        out: &mut Vec<u8>,
        ends: &mut Vec<usize>,
    ) -> Result<(), CompressError> {
        let level = self.level.get();
        let go_on = self.open == Some((at, level));
        if !go_on {
            // Every job leaves its frame open; a stream's first has none
            // before it.
            if at > 0 {
                out.extend_from_slice(&END_FRAME);
            }
            if level == 0 {
                out.extend_from_slice(&FRAME_HEADER);
            } else {
                let e = match self.z.as_mut() {
                    Some(e) => {
                        e.reinit().map_err(|_| CompressError)?;
                        e
                    }
                    None => self.z.insert(encoder(level).map_err(|_| CompressError)?),
                };
                e.set_parameter(CParameter::CompressionLevel(zstd_level(level)))
                    .map_err(|_| CompressError)?;
            }
        }
        let mut from = 0usize;
        for &len in lens {
            let packet = input.get(from..from + len).ok_or(CompressError)?;
            if level == 0 {
                raw_blocks(packet, out);
            } else {
                let e = self.z.as_mut().ok_or(CompressError)?;
                compress_packet(e, packet, out)?;
            }
            ends.push(out.len());
            from += len;
        }
        self.open = Some((at + input.len() as u64, level));
        Ok(())
    }
}

/// Appends `packet` as raw blocks of the open frame (none for an empty one).
fn raw_blocks(packet: &[u8], out: &mut Vec<u8>) {
    out.reserve(packet.len() + 3 * (packet.len() / MAX_BLOCK + 1));
    for block in packet.chunks(MAX_BLOCK) {
        // Block header: last = 0, type = raw (0), size in bits 3-23.
        let h = (block.len() as u32) << 3;
        out.extend_from_slice(&h.to_le_bytes()[..3]);
        out.extend_from_slice(block);
    }
}

/// Appends `packet` compressed and flushed (ends on a block boundary).
fn compress_packet(
    e: &mut Encoder<'static>,
    packet: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), CompressError> {
    let mut input = InBuffer::around(packet);
    while input.pos() < packet.len() {
        out.reserve(packet.len() - input.pos() + 1024);
        let mut o = OutBuffer::around_pos(out, out.len());
        e.run(&mut input, &mut o).map_err(|_| CompressError)?;
    }
    loop {
        out.reserve(1024 + packet.len() / 8);
        let mut o = OutBuffer::around_pos(out, out.len());
        if e.flush(&mut o).map_err(|_| CompressError)? == 0 {
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
    use crate::transport::compress_batch::BatchQueue;

    /// Compresses `rounds` of packets as batches (jobs run in reverse
    /// order, as threads might finish them), levels changing between
    /// rounds; returns the wire form of every packet in order.
    fn batches(level: &Arc<Level>, rounds: &[(u8, Vec<Vec<u8>>)]) -> Vec<Vec<u8>> {
        let engine = ZstdEngine::new(level.clone());
        let Compressor::Batch(mut batch) = engine.compressor() else {
            unreachable!("zstd runs in batches")
        };
        let mut q = BatchQueue::default();
        let mut wire = Vec::new();
        for (l, packets) in rounds {
            level.set(*l);
            for p in packets {
                q.push(p);
            }
            q.compress(batch.as_mut(), &mut |jobs| {
                for j in jobs.iter_mut().rev() {
                    j.run();
                }
            })
            .unwrap();
            wire.extend(q.packets().map(|(_, b)| b.to_vec()));
            q.finish(batch.history_len());
        }
        wire
    }

    fn text(n: usize, seed: usize) -> Vec<u8> {
        (0..n)
            .map(|j| b"zstd between sluice peers, in batches "[(j + seed) % 38])
            .collect()
    }

    fn random(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn jobs_and_levels_join_into_one_stream() {
        let level = Level::new(1);
        let mut rounds = Vec::new();
        for (r, l) in [2u8, 0, 0, 5, 1, 0, 9, 2].into_iter().enumerate() {
            let n = 1 + (r * 13) % 70;
            let packets = (0..n)
                .map(|i| {
                    let len = 1 + (i * 7919 + r * 31) % 200_000;
                    if (i + r) % 4 == 0 {
                        random(len, (r * 100 + i) as u64)
                    } else {
                        text(len, i)
                    }
                })
                .collect();
            rounds.push((l, packets));
        }
        let wire = batches(&level, &rounds);
        let sent: Vec<&Vec<u8>> = rounds.iter().flat_map(|(_, p)| p).collect();
        assert_eq!(wire.len(), sent.len());
        let mut d = ZstdEngine::new(level).decompressor();
        let mut back = Vec::new();
        for (i, (z, p)) in wire.iter().zip(&sent).enumerate() {
            d.decompress(z, &mut back, 256 << 10).unwrap();
            assert!(back == **p, "packet {i}");
        }
    }

    /// Level 0 is a copy: raw blocks, a few bytes over the payload.
    #[test]
    fn level_zero_is_raw_blocks() {
        let level = Level::new(0);
        let packets: Vec<Vec<u8>> = (0..8).map(|i| text(300_000, i)).collect();
        let wire = batches(&level, &[(0, packets.clone())]);
        let raw: usize = packets.iter().map(Vec::len).sum();
        let z: usize = wire.iter().map(Vec::len).sum();
        assert!(z > raw && z < raw + 200, "{z} for {raw}");
        let mut d = ZstdEngine::new(level).decompressor();
        let mut back = Vec::new();
        for (z, p) in wire.iter().zip(&packets) {
            d.decompress(z, &mut back, 1 << 20).unwrap();
            assert!(back == *p);
        }
    }

    /// One packet at a time goes on with the worker's frame: it compresses
    /// as one stream would.
    #[test]
    fn packet_at_a_time_keeps_the_frame() {
        let level = Level::new(2);
        let rounds: Vec<(u8, Vec<Vec<u8>>)> = (0..200).map(|i| (2, vec![text(1000, i)])).collect();
        let wire = batches(&level, &rounds);
        let z: usize = wire.iter().map(Vec::len).sum();
        assert!(z * 20 < 200 * 1000, "{z}");
    }

    #[test]
    fn bomb_is_bounded() {
        let level = Level::new(4);
        let wire = batches(&level, &[(4, vec![vec![0u8; 1 << 20]])]);
        let mut d = ZstdEngine::new(level.clone()).decompressor();
        let mut out = Vec::new();
        assert_eq!(
            d.decompress(&wire[0], &mut out, 1000),
            Err(Violation::BadCompression)
        );
        assert!(out.len() <= 1001, "{}", out.len());
        let mut d = ZstdEngine::new(level).decompressor();
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
        let mut d = ZstdEngine::new(Level::new(1)).decompressor();
        assert!(d.decompress(&z, &mut Vec::new(), 1 << 20).is_err());
    }
}
