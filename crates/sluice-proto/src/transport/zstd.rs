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

use crate::transport::compress::{
    Activation, CompressError, CompressionEngine, Compressor, Decompressor, Level,
};
use crate::transport::compress_batch::{BatchCompressor, CompressWorker, STORED_PREFIX};
use crate::transport::zstd_in::ZstdIn;
use std::sync::Arc;
use zstd::stream::raw::{CParameter, Encoder, InBuffer, Operation, OutBuffer};

/// The wire name.
pub const NAME: &str = "zstd@sluice.dev";
/// log2 of the window both ends use (4 MiB).
pub const WINDOW_LOG: u32 = 22;
/// Raw bytes per job: zstd runs at about 0.5 GB/s a core at its level 1,
/// so a job is a millisecond or two of one core's work.
const JOB_LEN: usize = 1 << 20;
/// zstd's largest block (RFC 8878 3.1.1.2.4): raw blocks are cut to it.
pub(crate) const MAX_BLOCK: usize = 128 * 1024;
/// A frame header (RFC 8878 3.1.1.1): magic, a descriptor with no content
/// size, checksum or dictionary, and a window descriptor of 2^22 bytes.
const FRAME_HEADER: [u8; 6] = [0x28, 0xb5, 0x2f, 0xfd, 0x00, ((WINDOW_LOG - 10) << 3) as u8];
/// An empty raw block marked last: ends the open frame.
pub(crate) const END_FRAME: [u8; 3] = [0x01, 0x00, 0x00];
/// The header of a stored packets' frame: raw blocks only, so its window
/// descriptor says 128 KiB (the least that allows full blocks), which no
/// frame libzstd writes for us has; the receiver reads these itself
/// (`zstd_in.rs`).
pub(crate) const RAW_FRAME_HEADER: [u8; 6] = [0x28, 0xb5, 0x2f, 0xfd, 0x00, (17 - 10) << 3];

/// The pseudo-name a sluice peer lists right after [`NAME`] in its KEXINIT
/// to say that it reads stored packets of any length up to the packet
/// limit, one raw block each, beyond zstd's 128 KiB block (PROTOCOL.md). It
/// is never chosen (negotiation skips it, and [`NAME`] comes first wherever
/// it is listed).
pub const LONG_STORED: &str = "zstd-long-stored-v00@sluice.dev";
/// The longest stored payload such a peer takes: a data packet's whole
/// room. Half as many packets as at [`MAX_BLOCK`] is what makes level 0 as
/// cheap as no compression on loopback (a packet costs reads, writes and
/// wakeups at each end, whatever its length).
pub(crate) const LONG_MAX: usize = crate::transport::MAX_PACKET_LEN - 1024;

/// An empty skippable frame (RFC 8878 3.1.2): magic 0x184D2A50, size 0.
pub(crate) const SKIPPABLE_EMPTY: [u8; 8] = [0x50, 0x2a, 0x4d, 0x18, 0, 0, 0, 0];

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
            stored_end: None,
        }))
    }

    fn decompressor(&self) -> Box<dyn Decompressor> {
        Box::new(ZstdIn::default())
    }

    /// An empty skippable frame (its first byte, 0x50, is message 80 to a
    /// reader without the stream), then a whole raw-only frame: the stream
    /// is back between frames afterwards (PROTOCOL.md).
    fn before_auth_form(&self, payload: &[u8], out: &mut Vec<u8>) -> bool {
        out.extend_from_slice(&SKIPPABLE_EMPTY);
        out.extend_from_slice(&RAW_FRAME_HEADER);
        if payload.is_empty() {
            out.extend_from_slice(&END_FRAME);
            return true;
        }
        let blocks = payload.len().div_ceil(MAX_BLOCK);
        for (i, block) in payload.chunks(MAX_BLOCK).enumerate() {
            // Raw block header: last on the final one, size in bits 3-23.
            let h = ((block.len() as u32) << 3) | u32::from(i + 1 == blocks);
            out.extend_from_slice(&h.to_le_bytes()[..3]);
            out.extend_from_slice(block);
        }
        true
    }

    fn level(&self) -> Option<Arc<Level>> {
        Some(self.level.clone())
    }
}

/// One outgoing stream's workers.
struct Batch {
    level: Arc<Level>,
    workers: Vec<Box<dyn CompressWorker>>,
    /// Where the last stored packet ended in the raw stream: its frame is
    /// open while nothing else came after it.
    stored_end: Option<u64>,
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

    fn stored_max(&self) -> Option<usize> {
        Some(MAX_BLOCK)
    }

    fn stored_long(&self) -> Option<usize> {
        (self.level.get() == 0).then_some(LONG_MAX)
    }

    /// At level 0, a packet is one raw block of a raw-only frame: inside
    /// the frame three empty blocks pad the prefix to its fixed length;
    /// after a compressed frame the prefix ends that frame first; at the
    /// stream's start an empty block follows the frame header. A packet
    /// longer than [`MAX_BLOCK`] (given only to a peer that reads long
    /// ones) is stored whatever the level: compressed, data that does not
    /// compress could outgrow the packet limit.
    fn stored(&mut self, at: u64, len: usize, prefix: &mut [u8; STORED_PREFIX]) -> bool {
        if len == 0 || len > LONG_MAX || (len <= MAX_BLOCK && self.level.get() != 0) {
            return false;
        }
        let h = ((len as u32) << 3).to_le_bytes();
        let (lead, block) = prefix.split_at_mut(STORED_PREFIX - 3);
        block.copy_from_slice(&h[..3]);
        if self.stored_end == Some(at) {
            lead.fill(0);
        } else {
            // A new raw-only frame: its header padded with zeros at the
            // stream's start, after the end of the open frame otherwise.
            let (head, tail): (&[u8], &[u8]) = if at == 0 {
                (&RAW_FRAME_HEADER, &[0; 3])
            } else {
                (&END_FRAME, &RAW_FRAME_HEADER)
            };
            for (d, s) in lead.iter_mut().zip(head.iter().chain(tail)) {
                *d = *s;
            }
        }
        self.stored_end = Some(at + len as u64);
        true
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

/// The size `sample` compresses to as one zstd frame alone at `level`
/// (our 0-9 scale, see [`zstd_level`]): a level controller's measure of a
/// level on the bytes it sends (`compress::sample_len`).
pub(crate) fn sample_len(level: u8, sample: &[u8]) -> Result<usize, CompressError> {
    zstd::bulk::compress(sample, zstd_level(level))
        .map(|z| z.len())
        .map_err(|_| CompressError)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Violation;
    use crate::transport::compress::Decompressor;
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

    /// Stored packets (level 0, nothing queued) between batches at other
    /// levels: the receiver takes their payloads in place, reads the rest
    /// as usual, and plain libzstd reads the same bytes as one valid stream.
    #[test]
    fn stored_packets_read_in_place_and_by_libzstd() {
        let level = Level::new(0);
        let Compressor::Batch(mut batch) = ZstdEngine::new(level.clone()).compressor() else {
            unreachable!("zstd runs in batches")
        };
        let mut q = BatchQueue::default();
        let (mut wire, mut sent) = (Vec::new(), Vec::new());
        let script = [
            (0, true),
            (0, true),
            (3, false),
            (0, true),
            (0, false),
            (0, true),
        ];
        let script = script
            .iter()
            .chain(&[(5, false), (5, false), (0, true), (1, false)]);
        for (r, &(l, store)) in script.enumerate() {
            level.set(l);
            let packets: Vec<Vec<u8>> = (0..3)
                .map(|i| text(1 + (i * 7919 + r * 33_331) % MAX_BLOCK, r * 10 + i))
                .collect();
            if store {
                for p in packets {
                    let mut prefix = [0u8; STORED_PREFIX];
                    assert!(batch.stored(q.at().unwrap(), p.len(), &mut prefix));
                    q.advance(p.len());
                    wire.push(([&prefix[..], &p].concat(), true));
                    sent.push(p);
                }
            } else {
                packets.iter().for_each(|p| q.push(p));
                q.compress(batch.as_mut(), &mut |jobs| {
                    jobs.iter_mut().rev().for_each(|j| j.run())
                })
                .unwrap();
                wire.extend(q.packets().map(|(_, b)| (b.to_vec(), false)));
                q.finish(batch.history_len());
                sent.extend(packets);
            }
        }
        level.set(2);
        let mut prefix = [0u8; STORED_PREFIX];
        assert!(
            !batch.stored(q.at().unwrap(), 10, &mut prefix),
            "level 2 compresses"
        );
        let mut d = ZstdIn::default();
        let mut back = Vec::new();
        for (i, ((z, stored), p)) in wire.iter().zip(&sent).enumerate() {
            match d.in_place(z, 256 << 10).unwrap() {
                Some(r) => assert!(*stored && z[r] == p[..], "packet {i}"),
                None => {
                    assert!(!stored, "packet {i} should be in place");
                    d.decompress(z, &mut back, 256 << 10).unwrap();
                    assert!(back == *p, "packet {i}");
                }
            }
        }
        // Without the in-place path, packet by packet.
        let mut d = ZstdIn::default();
        for (i, ((z, _), p)) in wire.iter().zip(&sent).enumerate() {
            d.decompress(z, &mut back, 256 << 10).unwrap();
            assert!(back == *p, "packet {i}");
        }
        // libzstd on the whole stream, the last frame closed.
        let mut stream: Vec<u8> = wire.iter().flat_map(|(z, _)| z.clone()).collect();
        stream.extend_from_slice(&END_FRAME);
        assert!(zstd::stream::decode_all(&stream[..]).unwrap() == sent.concat());
    }

    /// The before-authentication form: read as exactly the packet by the
    /// receiver (in place refused, decompress takes it), which then reads
    /// the ordinary stream that follows; libzstd reads the same bytes as
    /// one valid stream; and to a reader without the stream its first byte
    /// is message 80.
    #[test]
    fn before_auth_form_is_one_whole_frame_ahead_of_the_stream() {
        let level = Level::new(3);
        let e = ZstdEngine::new(level);
        for first in [Vec::new(), text(60, 1), text(MAX_BLOCK + 5, 2)] {
            let mut wire = Vec::new();
            assert!(e.before_auth_form(&first, &mut wire));
            assert_eq!(wire[0], 80);
            let Compressor::Batch(mut batch) = e.compressor() else {
                unreachable!("zstd runs in batches")
            };
            let mut q = BatchQueue::default();
            let next = [text(5000, 3), text(70, 4)];
            next.iter().for_each(|p| q.push(p));
            q.compress(batch.as_mut(), &mut |jobs| {
                jobs.iter_mut().for_each(|j| j.run())
            })
            .unwrap();
            let rest: Vec<Vec<u8>> = q.packets().map(|(_, b)| b.to_vec()).collect();
            let mut d = ZstdIn::default();
            assert!(d.in_place(&wire, 256 << 10).unwrap().is_none());
            let mut back = Vec::new();
            d.decompress(&wire, &mut back, 256 << 10).unwrap();
            assert!(back == first);
            for (z, p) in rest.iter().zip(&next) {
                d.decompress(z, &mut back, 256 << 10).unwrap();
                assert!(back == *p);
            }
            let mut stream = [wire, rest.concat()].concat();
            stream.extend_from_slice(&END_FRAME);
            let all = [first, next.concat()].concat();
            assert!(zstd::stream::decode_all(&stream[..]).unwrap() == all);
        }
    }

    /// A stored prefix that does not fit the receiver's state is refused.
    #[test]
    fn stray_stored_prefix_refused() {
        let mut d = ZstdIn::default();
        let mut z = vec![0u8; 9];
        z.extend_from_slice(&((5u32 << 3).to_le_bytes()[..3]));
        z.extend_from_slice(b"hello");
        // Empty blocks with no frame open: not in place, and not zstd.
        assert_eq!(d.in_place(&z, 1000), Ok(None));
        assert!(d.decompress(&z, &mut Vec::new(), 1000).is_err());
        let mut d = ZstdIn::default();
        let mut z = [&END_FRAME[..], &RAW_FRAME_HEADER].concat();
        z.extend_from_slice(&((5u32 << 3).to_le_bytes()[..3]));
        z.extend_from_slice(b"hello");
        // Ends a frame that never began.
        assert!(d.in_place(&z, 1000).is_err());
        // A compressed block inside a raw-only frame.
        let mut d = ZstdIn::default();
        let mut z = RAW_FRAME_HEADER.to_vec();
        z.extend_from_slice(&(((5u32 << 3) | 4).to_le_bytes()[..3]));
        z.extend_from_slice(b"hello");
        assert!(d.decompress(&z, &mut Vec::new(), 1000).is_err());
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
