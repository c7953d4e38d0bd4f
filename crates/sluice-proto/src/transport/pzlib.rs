//! Parallel zlib: `zlib@openssh.com` and `zlib` deflated pigz-style, so any
//! peer that inflates OpenSSH's stream reads it.
//!
//! The receiver's contract (OpenSSH packet.c): one zlib stream per
//! direction and key epoch, each packet inflated on its own with
//! Z_SYNC_FLUSH, never a final block. Within it a sender may cut the
//! stream into jobs deflated independently: each job raw-deflates its
//! packets with the 32 KiB of plaintext before it as preset dictionary
//! (so back-references reach across the cut exactly as far as the
//! receiver's window does) and ends every packet with a sync flush (a byte
//! boundary, so the next job's bits can start there). The 2-byte zlib
//! header goes before the first packet of the stream. The receiver cannot
//! tell the jobs apart, and the level may change from job to job, down to
//! 0 (stored blocks: no CPU, no gain) for data that does not compress.
//!
//! A worker whose next job starts where its last one ended (one job per
//! batch, or batches off) just goes on with its stream: no reset, no
//! dictionary to load.

use crate::transport::compress::{
    Activation, CompressError, CompressionEngine, Compressor, Decompressor, Level,
};
use crate::transport::compress_batch::{BatchCompressor, CompressWorker};
use crate::transport::zlib;
use flate2::{Compress, Compression, FlushCompress};
use std::sync::Arc;

/// Deflate's window: the history each job needs.
const WINDOW: usize = 32 * 1024;
/// Raw bytes per job: large enough that the dictionary load (32 KiB) and
/// the flushes cost little, small enough to spread a batch over cores.
const JOB_LEN: usize = 512 * 1024;
/// A zlib header (RFC 1950: deflate, 32 KiB window, FCHECK valid); its
/// FLEVEL is informative only.
const HEADER: [u8; 2] = [0x78, 0x9c];

/// zlib under either name, deflated in parallel jobs.
#[derive(Debug, Clone)]
pub struct ParallelZlib {
    activation: Activation,
    level: Arc<Level>,
}

impl ParallelZlib {
    /// `zlib@openssh.com` (`Activation::Delayed`) or `zlib`, at `level`.
    pub fn new(activation: Activation, level: Arc<Level>) -> Self {
        ParallelZlib { activation, level }
    }
}

impl CompressionEngine for ParallelZlib {
    fn name(&self) -> &str {
        zlib::name(self.activation)
    }

    fn activation(&self) -> Activation {
        self.activation
    }

    fn compressor(&self) -> Compressor {
        Compressor::Batch(Box::new(Batch {
            level: self.level.clone(),
            workers: Vec::new(),
        }))
    }

    fn decompressor(&self) -> Box<dyn Decompressor> {
        zlib::inflater()
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
        WINDOW
    }

    fn job_len(&self) -> usize {
        JOB_LEN
    }

    fn workers(&mut self, n: usize) -> &mut [Box<dyn CompressWorker>] {
        while self.workers.len() < n {
            self.workers.push(Box::new(Worker {
                z: None,
                level: self.level.clone(),
                ends_at: None,
            }));
        }
        &mut self.workers
    }
}

/// Deflates jobs; keeps its deflate state between them.
struct Worker {
    z: Option<(Compress, u8)>,
    level: Arc<Level>,
    /// Raw stream offset where this worker's last job ended.
    ends_at: Option<u64>,
}

impl CompressWorker for Worker {
    fn compress(
        &mut self,
        history: &[u8],
        at: u64,
        input: &[u8],
        lens: &[usize],
        out: &mut Vec<u8>,
        ends: &mut Vec<usize>,
    ) -> Result<(), CompressError> {
        let level = self.level.get();
        // Go on with the stream when this job follows our last one at the
        // same level; otherwise start afresh from the history. (A new
        // level means a new deflate state: deflateParams would flush
        // through an output buffer this call does not own.)
        let same_level = matches!(self.z, Some((_, l)) if l == level);
        let fresh = !(same_level && at > 0 && self.ends_at == Some(at));
        if fresh {
            match self.z.as_mut() {
                Some((z, _)) if same_level => z.reset(),
                _ => {
                    let c = Compression::new(level.into());
                    self.z = Some((Compress::new_with_window_bits(c, false, 15), level));
                }
            }
        }
        let Some((z, _)) = self.z.as_mut() else {
            return Err(CompressError);
        };
        if fresh && !history.is_empty() {
            z.set_dictionary(history).map_err(|_| CompressError)?;
        }
        if at == 0 {
            out.extend_from_slice(&HEADER);
        }
        let mut from = 0usize;
        for &len in lens {
            let packet = input.get(from..from + len).ok_or(CompressError)?;
            deflate_packet(z, packet, out)?;
            ends.push(out.len());
            from += len;
        }
        self.ends_at = Some(at + input.len() as u64);
        Ok(())
    }
}

/// Appends `packet` deflated and sync-flushed (ends on a byte boundary).
fn deflate_packet(z: &mut Compress, packet: &[u8], out: &mut Vec<u8>) -> Result<(), CompressError> {
    out.reserve(packet.len() + packet.len() / 1000 + 64);
    let mut consumed = 0usize;
    loop {
        let before = z.total_in();
        let rest = packet.get(consumed..).unwrap_or_default();
        z.compress_vec(rest, out, FlushCompress::Sync)
            .map_err(|_| CompressError)?;
        consumed += (z.total_in() - before) as usize;
        // Room left in `out` means the flush is complete.
        if consumed >= packet.len() && out.len() < out.capacity() {
            return Ok(());
        }
        out.reserve(out.capacity().max(1024));
    }
}

/// The size `sample` raw-deflates to alone at `level` (fresh state, no
/// dictionary, one final flush): a level controller's measure of a level
/// on the bytes it sends (`compress::sample_len`).
pub(crate) fn sample_len(level: u8, sample: &[u8]) -> Result<usize, CompressError> {
    let mut z = Compress::new(Compression::new(level.min(9).into()), false);
    let mut out = Vec::with_capacity(sample.len() + sample.len() / 1000 + 64);
    loop {
        let rest = sample.get(z.total_in() as usize..).unwrap_or_default();
        let status = z
            .compress_vec(rest, &mut out, FlushCompress::Finish)
            .map_err(|_| CompressError)?;
        if status == flate2::Status::StreamEnd {
            return Ok(out.len());
        }
        out.reserve(out.capacity().max(1024));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::compress_batch::BatchQueue;

    /// Checks one stream of this engine against zlib's own inflate (test aid).
    fn inflate_all(packets: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, crate::error::Violation> {
        let mut d = zlib::inflater();
        packets
            .iter()
            .map(|p| {
                let mut out = Vec::new();
                d.decompress(p, &mut out, 1 << 20).map(|()| out)
            })
            .collect()
    }

    fn corpus(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|j| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if (j / 4096) % 3 == 0 {
                    x as u8
                } else {
                    b"the quick brown fox jumps over the lazy sluice "[(j + (x as usize % 3)) % 47]
                }
            })
            .collect()
    }

    /// Batches of many jobs, levels changing between batches, run in
    /// shuffled order: one stream that zlib inflates packet by packet.
    #[test]
    fn jobs_join_into_one_stream() {
        let level = Level::new(6);
        let engine = ParallelZlib::new(Activation::Delayed, level.clone());
        let Compressor::Batch(mut batch) = engine.compressor() else {
            unreachable!()
        };
        let mut q = BatchQueue::default();
        let mut sent = Vec::new();
        let mut wire = Vec::new();
        for round in 0..6u64 {
            level.set([6, 1, 0, 9, 3, 6][round as usize]);
            let n_packets = 1 + (round as usize * 7) % 40;
            for i in 0..n_packets {
                let p = corpus(
                    1 + (i * 7919 + round as usize * 31) % 70_000,
                    round * 100 + i as u64,
                );
                q.push(&p);
                sent.push(p);
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
        assert_eq!(wire.len(), sent.len());
        assert_eq!(inflate_all(&wire).unwrap(), sent);
        let raw: usize = sent.iter().map(Vec::len).sum();
        let z: usize = wire.iter().map(Vec::len).sum();
        // A third of the corpus is random, and one batch was stored (level 0).
        assert!(z * 10 < raw * 7, "compressed {z} of {raw}");
    }

    /// One packet at a time (batches off) continues the stream in place.
    #[test]
    fn packet_at_a_time() {
        let engine = ParallelZlib::new(Activation::Immediate, Level::new(6));
        let Compressor::Batch(mut batch) = engine.compressor() else {
            unreachable!()
        };
        let mut q = BatchQueue::default();
        let (mut sent, mut wire) = (Vec::new(), Vec::new());
        for i in 0..200u64 {
            let p = corpus(1 + (i as usize * 131) % 3000, i);
            q.push(&p);
            q.compress(batch.as_mut(), &mut |_| {}).unwrap();
            wire.extend(q.packets().map(|(_, b)| b.to_vec()));
            q.finish(batch.history_len());
            sent.push(p);
        }
        assert_eq!(inflate_all(&wire).unwrap(), sent);
    }

    /// Not a test: deflate speed and ratio per level on a file, one thread,
    /// jobs of [`JOB_LEN`] each started from its dictionary as on several
    /// workers (`PZLIB_CORPUS=/path cargo test --release -p sluice-proto
    /// pzlib_levels -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn pzlib_levels() {
        let Ok(path) = std::env::var("PZLIB_CORPUS") else {
            return;
        };
        let data = std::fs::read(path).unwrap();
        let data = data.get(..data.len().min(64 << 20)).unwrap_or_default();
        const PACKET: usize = 32 * 1024;
        for level in [0u8, 1, 2, 3, 4, 6] {
            let mut w = Worker {
                z: None,
                level: Level::new(level),
                ends_at: None,
            };
            let (mut out, mut ends, mut total) = (Vec::new(), Vec::new(), 0usize);
            let t = std::time::Instant::now();
            for (i, job) in data.chunks(JOB_LEN).enumerate() {
                let start = i * JOB_LEN;
                let hist = data
                    .get(start.saturating_sub(WINDOW)..start)
                    .unwrap_or_default();
                let lens: Vec<usize> = job.chunks(PACKET).map(<[u8]>::len).collect();
                out.clear();
                ends.clear();
                w.ends_at = None;
                w.compress(hist, start as u64, job, &lens, &mut out, &mut ends)
                    .unwrap();
                total += out.len();
            }
            let s = t.elapsed().as_secs_f64();
            println!(
                "level {level}: {:.0} MB/s in, ratio {:.2}",
                data.len() as f64 / s / 1e6,
                data.len() as f64 / total as f64
            );
        }
    }
}
