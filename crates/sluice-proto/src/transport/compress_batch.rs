//! Batch compression: the seam through which a runtime compresses a run of
//! outgoing packets on several threads, as it seals them
//! ([`super::batch`]).
//!
//! Compression changes a packet's length, so a packet cannot be framed
//! (padded, numbered, placed in the output) before it is compressed. With a
//! [`BatchCompressor`] the send state therefore queues raw payloads in wire
//! order, and at a flush splits them into jobs of whole packets, each given
//! the raw stream just before it as history (deflate's 32 KiB window: a
//! pigz-style zlib raw-deflates each job with that as preset dictionary and
//! ends each packet with a sync flush, so the jobs' outputs join into one
//! valid stream). The runtime gets the jobs as [`CompressJob`]s and may run
//! them anywhere; the engine runs whatever it left undone before framing, so
//! nothing is ever sent uncompressed or out of order. Then each packet's
//! output is framed in order, exactly as if it had been compressed alone.
//!
//! A flush happens when the runtime asks ([`Connection::compress_batch`]),
//! before any control packet (so key changes and sequence numbers fall
//! where they would without batching), at `poll_transmit`, and when the
//! queue holds [`MAX_QUEUED`] bytes. Without
//! [`Connection::set_batch_compression`] every packet is flushed at once,
//! as one job run inline.

use crate::core::Connection;
use crate::error::Error;
use crate::transport::compress::CompressError;
use std::ops::Range;

/// Raw bytes queued before the send state flushes by itself, whatever the
/// runtime does: bounds the memory a batch takes (16 full-size packets).
pub const MAX_QUEUED: usize = 4 << 20;

/// The batch shape of an outgoing stream.
pub trait BatchCompressor: Send {
    /// Raw bytes of the stream before a job's first packet that its worker
    /// needs (deflate: the 32 KiB window); the send state keeps that much.
    fn history_len(&self) -> usize;
    /// About how many raw bytes one job should cover; packets are never split.
    fn job_len(&self) -> usize;
    /// At least `n` independent workers, one per job of a batch.
    fn workers(&mut self, n: usize) -> &mut [Box<dyn CompressWorker>];
    /// The largest payload [`BatchCompressor::stored`] can take: data slots
    /// are cut to it, so packets stay eligible. None (the default): the
    /// engine has no stored form.
    fn stored_max(&self) -> Option<usize> {
        None
    }
    /// A larger limit than [`BatchCompressor::stored_max`] for a peer that
    /// reads long stored packets, while the stored form is what the engine
    /// would use now (its level is 0); [`BatchCompressor::stored`] then
    /// takes packets up to it. None (the default): no such form.
    fn stored_long(&self) -> Option<usize> {
        None
    }
    /// Zero-copy framing while the engine would not compress anyway (its
    /// level is 0): the next packet of the stream, `len` raw bytes after
    /// `at` raw bytes of it, goes on the wire as [`STORED_PREFIX`] bytes the
    /// engine writes to `prefix`, then the payload unchanged. Called only
    /// with nothing queued, so the packet is the stream's next. False: the
    /// packet is queued and compressed as usual.
    fn stored(&mut self, _at: u64, _len: usize, _prefix: &mut [u8; STORED_PREFIX]) -> bool {
        false
    }
}

/// Bytes in front of a stored packet's payload (see
/// [`BatchCompressor::stored`]); a data slot leaves room for them.
pub const STORED_PREFIX: usize = 12;

/// Compresses the packets of one job; runs on any thread.
pub trait CompressWorker: Send {
    /// Compresses the packets whose payloads lie back to back in `input`,
    /// `lens` giving their lengths in order. `history` is the raw stream
    /// just before them (up to `history_len` bytes), `at` how many raw bytes
    /// of this stream came before them (0: the stream starts here). Appends
    /// each packet's compressed form to `out` and pushes where it ends in
    /// `out` to `ends`: one entry per packet, each packet decodable by the
    /// peer right after the previous one.
    fn compress(
        &mut self,
        history: &[u8],
        at: u64,
        input: &[u8],
        lens: &[usize],
        out: &mut Vec<u8>,
        ends: &mut Vec<usize>,
    ) -> Result<(), CompressError>;
}

/// One job's output, kept between batches for its buffers.
#[derive(Default)]
pub(crate) struct JobOutput {
    bytes: Vec<u8>,
    ends: Vec<usize>,
    done: bool,
    ok: bool,
}

/// A run of consecutive packets to compress: hand to any thread and call
/// [`CompressJob::run`].
pub struct CompressJob<'a> {
    worker: &'a mut dyn CompressWorker,
    history: &'a [u8],
    at: u64,
    input: &'a [u8],
    lens: &'a [usize],
    out: &'a mut JobOutput,
}

impl CompressJob<'_> {
    /// Does the work; a second call does nothing.
    pub fn run(&mut self) {
        let o = &mut *self.out;
        if o.done {
            return;
        }
        o.bytes.clear();
        o.ends.clear();
        let r = self.worker.compress(
            self.history,
            self.at,
            self.input,
            self.lens,
            &mut o.bytes,
            &mut o.ends,
        );
        // A worker's account of its packets is checked, not trusted.
        let ends_fit = o.ends.len() == self.lens.len()
            && o.ends.windows(2).all(|w| w.first() <= w.get(1))
            && o.ends.last().is_none_or(|&e| e <= o.bytes.len());
        o.ok = r.is_ok() && ends_fit;
        o.done = true;
    }

    /// Raw bytes the job covers, for balancing work between threads.
    pub fn len(&self) -> usize {
        self.input.len()
    }

    /// True for a job over no bytes.
    pub fn is_empty(&self) -> bool {
        self.input.is_empty()
    }

    /// Packets in the job.
    pub fn packets(&self) -> usize {
        self.lens.len()
    }
}

/// Payloads waiting for a batch stream, with the history before them.
#[derive(Default)]
pub(crate) struct BatchQueue {
    /// The last `history` raw bytes already compressed, then the queued payloads.
    raw: Vec<u8>,
    history: usize,
    lens: Vec<usize>,
    /// Raw bytes of this stream compressed before `raw[history..]`.
    at: u64,
    /// Each job's packets (indices into `lens`) in the last batch.
    plan: Vec<Range<usize>>,
    outputs: Vec<JobOutput>,
}

impl BatchQueue {
    /// Queues one payload.
    pub(crate) fn push(&mut self, payload: &[u8]) {
        self.raw.extend_from_slice(payload);
        self.lens.push(payload.len());
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lens.is_empty()
    }

    /// Raw bytes of this stream before the next packet, with nothing queued.
    pub(crate) fn at(&self) -> Option<u64> {
        self.is_empty().then_some(self.at)
    }

    /// A packet of `len` raw bytes went out stored, outside the queue.
    pub(crate) fn advance(&mut self, len: usize) {
        self.at += len as u64;
        // A stored packet is raw history too; engines that keep history
        // (deflate's window) have no stored form, so none is kept.
        let keep = self.history;
        self.raw.drain(..keep);
        self.history = 0;
    }

    /// Raw bytes queued.
    pub(crate) fn queued(&self) -> usize {
        self.raw.len() - self.history
    }

    /// Compresses everything queued: offers the jobs to `run`, then runs
    /// those it left. Afterwards [`BatchQueue::packets`] yields the output.
    pub(crate) fn compress(
        &mut self,
        engine: &mut dyn BatchCompressor,
        run: &mut dyn FnMut(&mut [CompressJob<'_>]),
    ) -> Result<(), CompressError> {
        let job_len = engine.job_len().max(1);
        self.plan.clear();
        let (mut first, mut bytes) = (0, 0);
        for (i, len) in self.lens.iter().enumerate() {
            bytes += len;
            if bytes >= job_len {
                self.plan.push(first..i + 1);
                (first, bytes) = (i + 1, 0);
            }
        }
        if first < self.lens.len() {
            self.plan.push(first..self.lens.len());
        }
        if self.outputs.len() < self.plan.len() {
            self.outputs
                .resize_with(self.plan.len(), JobOutput::default);
        }
        let history_len = engine.history_len();
        let workers = engine.workers(self.plan.len());
        if workers.len() < self.plan.len() {
            return Err(CompressError);
        }
        let mut jobs = Vec::with_capacity(self.plan.len());
        let mut start = self.history;
        let mut outputs = self.outputs.iter_mut();
        for (packets, worker) in self.plan.iter().zip(workers.iter_mut()) {
            let lens = self.lens.get(packets.clone()).unwrap_or_default();
            let end = start + lens.iter().sum::<usize>();
            let (Some(input), Some(history), Some(out)) = (
                self.raw.get(start..end),
                self.raw.get(start.saturating_sub(history_len)..start),
                outputs.next(),
            ) else {
                return Err(CompressError);
            };
            out.done = false;
            jobs.push(CompressJob {
                worker: worker.as_mut(),
                history,
                at: self.at + (start - self.history) as u64,
                input,
                lens,
                out,
            });
            start = end;
        }
        if jobs.len() > 1 {
            run(&mut jobs);
        }
        jobs.iter_mut().for_each(CompressJob::run);
        drop(jobs);
        let jobs_done = self.outputs.get(..self.plan.len()).unwrap_or_default();
        if jobs_done.iter().all(|o| o.ok) {
            Ok(())
        } else {
            Err(CompressError)
        }
    }

    /// The last batch's packets in order: (raw length, compressed bytes).
    pub(crate) fn packets(&self) -> impl Iterator<Item = (usize, &[u8])> + '_ {
        self.plan
            .iter()
            .zip(&self.outputs)
            .flat_map(move |(packets, o)| {
                let lens = self.lens.get(packets.clone()).unwrap_or_default();
                lens.iter().enumerate().map(move |(k, &raw)| {
                    let from = k
                        .checked_sub(1)
                        .and_then(|p| o.ends.get(p))
                        .copied()
                        .unwrap_or(0);
                    let to = o.ends.get(k).copied().unwrap_or(from);
                    (raw, o.bytes.get(from..to).unwrap_or_default())
                })
            })
    }

    /// Forgets the batch, keeping `history_len` raw bytes for the next one.
    pub(crate) fn finish(&mut self, history_len: usize) {
        self.at += self.queued() as u64;
        let keep = history_len.min(self.raw.len());
        self.raw.drain(..self.raw.len() - keep);
        self.history = keep;
        self.lens.clear();
        self.plan.clear();
    }

    /// A new stream: no history, nothing queued.
    pub(crate) fn reset(&mut self) {
        self.raw.clear();
        self.history = 0;
        self.lens.clear();
        self.plan.clear();
        self.at = 0;
    }
}

/// The runtime's side of batch compression.
impl Connection {
    /// Turns batch compression on or off. When on and the negotiated engine
    /// is batch-capable, packets framed by `send_data`/`finish_data_slot`
    /// are queued raw and reach `out` only at [`Connection::compress_batch`]
    /// (or the next control packet or `poll_transmit`); the runtime calls
    /// `compress_batch` before `seal_batch`. Without a batch-capable engine
    /// this changes nothing.
    pub fn set_batch_compression(&mut self, on: bool) {
        self.send.compression.hold = on;
    }

    /// Compresses the queued packets, offering them to `run` as jobs (which
    /// may run them on other threads), runs the jobs `run` left undone, and
    /// frames the packets into `out` in order (sealed, or waiting for
    /// `seal_batch` with batch crypto on).
    pub fn compress_batch(
        &mut self,
        out: &mut Vec<u8>,
        run: &mut dyn FnMut(&mut [CompressJob<'_>]),
    ) {
        self.send.compress_pending(out, self.rng.as_mut(), run);
        self.check_compression();
    }

    /// True while packets wait for [`Connection::compress_batch`].
    pub fn has_uncompressed(&self) -> bool {
        self.send.compression.has_queued()
    }

    /// The outgoing stream's level handle, when its engine has one
    /// (`CompressionEngine::level`): a runtime steers it from what it
    /// measures. None while nothing is compressed.
    pub fn compression_level(&self) -> Option<std::sync::Arc<crate::transport::compress::Level>> {
        self.send.compression.level()
    }

    /// The wire name of the engine compressing what we send, once it runs.
    pub fn outgoing_compression(&self) -> Option<&str> {
        self.send.compression.name()
    }

    /// Raw payload bytes waiting for [`Connection::compress_batch`]: a
    /// runtime counts them with its unsent output, so a batch is cut
    /// before the send state flushes it inline at [`MAX_QUEUED`].
    pub fn uncompressed_len(&self) -> usize {
        self.send.compression.queued()
    }

    /// Closes the connection when our compressor failed: the peer could not
    /// decode anything after it.
    pub(crate) fn check_compression(&mut self) {
        if self.send.compression.take_failure() {
            let _ = self.fail(Error::InvalidState("compression failed"));
        }
    }
}
