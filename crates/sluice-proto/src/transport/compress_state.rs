//! Each direction's compression state: which engine key exchange
//! negotiated, when its stream starts and restarts, and the byte counts of
//! the `-v` summary. The rules ([`super::compress`] has them in full):
//! at NEWKEYS the negotiated engine takes over and a fresh stream starts if
//! it is immediate, or delayed with authentication done; at authentication
//! a delayed engine's stream starts. The send and receive states call these
//! at their own key switch, so a stream always begins on the first packet
//! under the new keys.

use crate::error::{Error, Violation};
use crate::transport::compress::{
    self, Activation, CompressionEngine, Compressor, Decompressor, Level,
};
use crate::transport::compress_batch::{BatchQueue, CompressJob, MAX_QUEUED, STORED_PREFIX};
use std::sync::Arc;

/// The engine of one direction across key epochs.
#[derive(Default)]
struct Schedule {
    /// Negotiated by the exchange in progress; takes over at NEWKEYS.
    next: Option<Arc<dyn CompressionEngine>>,
    /// The current epoch's engine (None: `none`).
    engine: Option<Arc<dyn CompressionEngine>>,
    /// User authentication succeeded (delayed engines may run).
    authenticated: bool,
}

impl Schedule {
    fn negotiated(
        &mut self,
        name: &str,
        registry: &[Arc<dyn CompressionEngine>],
    ) -> Result<(), Error> {
        // We offer only registered names and `none`: a peer cannot cause
        // the error.
        self.next = match name {
            compress::NONE => None,
            _ => Some(compress::find(registry, name).ok_or(Error::InvalidState(
                "negotiated an unregistered compression",
            ))?),
        };
        Ok(())
    }

    /// NEWKEYS: the engine whose stream starts now, if any.
    fn new_epoch(&mut self) -> Option<Arc<dyn CompressionEngine>> {
        self.engine = self.next.take();
        let e = self.engine.as_ref()?;
        (e.activation() == Activation::Immediate || self.authenticated).then(|| Arc::clone(e))
    }

    /// Authentication done: the delayed engine to start, if any.
    fn authenticated(&mut self) -> Option<Arc<dyn CompressionEngine>> {
        self.authenticated = true;
        self.engine
            .as_ref()
            .filter(|e| e.activation() == Activation::Delayed)
            .cloned()
    }

    /// The negotiated engine waits for authentication.
    fn delayed(&self) -> bool {
        self.next
            .as_ref()
            .or(self.engine.as_ref())
            .is_some_and(|e| e.activation() == Activation::Delayed)
    }
}

/// Raw and compressed byte counts, over all epochs.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    raw: u64,
    compressed: u64,
}

/// What the send state does with a payload it is finishing.
pub(crate) enum Staged {
    /// No compression: frame it as it is.
    Plain,
    /// Compressed into [`OutCompression::scratch`].
    Compressed,
    /// Queued for a batch.
    Queued,
    /// Framed as it is behind this prefix (a batch engine's stored form).
    Stored([u8; STORED_PREFIX]),
}

/// The outgoing direction.
#[derive(Default)]
pub(crate) struct OutCompression {
    schedule: Schedule,
    stream: Option<Compressor>,
    /// Keep batch payloads queued until the runtime flushes.
    pub(crate) hold: bool,
    queue: BatchQueue,
    scratch: Vec<u8>,
    counts: Option<Counts>,
    failed: bool,
    /// The running engine's level handle, if it has one.
    level: Option<Arc<Level>>,
    /// The running engine's wire name.
    name: Option<String>,
    /// The peer reads long stored packets.
    peer_reads_long: bool,
}

impl OutCompression {
    /// Key exchange negotiated `name` for this direction.
    pub(crate) fn negotiated(
        &mut self,
        name: &str,
        registry: &[Arc<dyn CompressionEngine>],
    ) -> Result<(), Error> {
        self.schedule.negotiated(name, registry)
    }

    /// Our NEWKEYS went out: everything before it was framed (the queue is
    /// empty, see `SendState::send`), so the old stream ends here.
    pub(crate) fn new_epoch(&mut self) {
        let e = self.schedule.new_epoch();
        self.start(e);
    }

    /// User authentication succeeded.
    pub(crate) fn authenticated(&mut self) {
        if self.stream.is_none() {
            let e = self.schedule.authenticated();
            self.start(e);
        } else {
            self.schedule.authenticated = true;
        }
    }

    fn start(&mut self, engine: Option<Arc<dyn CompressionEngine>>) {
        self.queue.reset();
        self.level = engine.as_ref().and_then(|e| e.level());
        self.name = engine.as_ref().map(|e| e.name().to_owned());
        self.stream = engine.map(|e| e.compressor());
        if self.stream.is_some() {
            self.counts.get_or_insert_with(Counts::default);
        }
    }

    /// Our outgoing engine is delayed and has not started: a packet sent
    /// now would go out uncompressed where the peer may already expect
    /// compression (see `Connection::early_open_possible`).
    pub(crate) fn waits_for_auth(&self) -> bool {
        self.stream.is_none() && self.schedule.delayed()
    }

    /// A packet sent while [`OutCompression::waits_for_auth`]: the
    /// delayed engine's self-contained form of it (see
    /// [`CompressionEngine::before_auth_form`]), if the engine has one.
    pub(crate) fn before_auth_form(&self, payload: &[u8]) -> Option<Vec<u8>> {
        if !self.waits_for_auth() {
            return None;
        }
        let e = self
            .schedule
            .next
            .as_ref()
            .or(self.schedule.engine.as_ref())?;
        let mut out = Vec::new();
        e.before_auth_form(payload, &mut out).then_some(out)
    }

    /// Compresses or queues `payload` as the stream's shape asks; with
    /// `can_store` (room for a prefix in front of it) a batch engine may
    /// take it in its stored form instead.
    pub(crate) fn stage(&mut self, payload: &[u8], can_store: bool) -> Staged {
        match self.stream.as_mut() {
            None => Staged::Plain,
            Some(Compressor::Sequential(c)) => {
                self.scratch.clear();
                if c.compress(payload, &mut self.scratch).is_err() {
                    self.failed = true;
                }
                if let Some(n) = self.counts.as_mut() {
                    n.raw += payload.len() as u64;
                    n.compressed += self.scratch.len() as u64;
                }
                Staged::Compressed
            }
            Some(Compressor::Batch(engine)) => {
                let mut prefix = [0u8; STORED_PREFIX];
                let stored = match self.queue.at() {
                    Some(at) if can_store => engine.stored(at, payload.len(), &mut prefix),
                    _ => false,
                };
                if stored {
                    self.queue.advance(payload.len());
                    if let Some(n) = self.counts.as_mut() {
                        n.raw += payload.len() as u64;
                        n.compressed += (payload.len() + STORED_PREFIX) as u64;
                    }
                    return Staged::Stored(prefix);
                }
                self.queue.push(payload);
                Staged::Queued
            }
        }
    }

    /// The largest payload the running engine's stored form takes, if it
    /// has one: its long form while the peer reads that, nothing is queued
    /// (so the next packet is stored at once, not compressed) and the
    /// engine would store anyway.
    pub(crate) fn stored_max(&self) -> Option<usize> {
        match self.stream.as_ref() {
            Some(Compressor::Batch(engine)) => engine
                .stored_long()
                .filter(|_| self.peer_reads_long && self.queue.is_empty())
                .or(engine.stored_max()),
            _ => None,
        }
    }

    /// What the peer listed in its KEXINIT: it reads stored packets longer
    /// than the engine's block (`zstd.rs` `LONG_STORED`).
    pub(crate) fn set_peer_reads_long(&mut self, yes: bool) {
        self.peer_reads_long = yes;
    }

    /// The last payload compressed by [`OutCompression::stage`].
    pub(crate) fn scratch(&self) -> &[u8] {
        &self.scratch
    }

    /// Queued payloads should be flushed now rather than held.
    pub(crate) fn flush_due(&self) -> bool {
        !self.hold || self.queue.queued() >= MAX_QUEUED
    }

    pub(crate) fn has_queued(&self) -> bool {
        !self.queue.is_empty()
    }

    /// A stream runs: payloads grow on the wire when they do not compress.
    pub(crate) fn active(&self) -> bool {
        self.stream.is_some()
    }

    /// The running stream's level handle.
    pub(crate) fn level(&self) -> Option<Arc<Level>> {
        self.level.clone()
    }

    /// The running engine's wire name.
    pub(crate) fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Raw bytes queued for the next batch.
    pub(crate) fn queued(&self) -> usize {
        self.queue.queued()
    }

    /// Compresses the queue as one batch through `run`, then hands each
    /// packet (raw length, compressed bytes) to `frame` in order.
    pub(crate) fn flush(
        &mut self,
        run: &mut dyn FnMut(&mut [CompressJob<'_>]),
        frame: &mut dyn FnMut(&[u8]),
    ) {
        let Some(Compressor::Batch(engine)) = self.stream.as_mut() else {
            return;
        };
        if self.queue.is_empty() {
            return;
        }
        if self.queue.compress(engine.as_mut(), run).is_err() {
            // Nothing of the batch goes out; the connection closes.
            self.failed = true;
            self.queue.reset();
            return;
        }
        for (raw, bytes) in self.queue.packets() {
            if let Some(n) = self.counts.as_mut() {
                n.raw += raw as u64;
                n.compressed += bytes.len() as u64;
            }
            frame(bytes);
        }
        self.queue.finish(engine.history_len());
    }

    /// The compressor failed since the last call.
    pub(crate) fn take_failure(&mut self) -> bool {
        std::mem::take(&mut self.failed)
    }

    /// `(raw, compressed)` once a stream has run.
    pub(crate) fn stats(&self) -> Option<(u64, u64)> {
        self.counts.map(|n| (n.raw, n.compressed))
    }
}

/// Where an incoming packet's payload is after [`InCompression::decompress`].
pub(crate) enum Inflated {
    /// No stream runs: the packet's payload as it came.
    Plain,
    /// In the `out` buffer given.
    Scratch,
    /// This range of the compressed bytes (a stored packet).
    Within(std::ops::Range<usize>),
}

/// The incoming direction.
#[derive(Default)]
pub(crate) struct InCompression {
    schedule: Schedule,
    stream: Option<Box<dyn Decompressor>>,
    counts: Option<Counts>,
}

impl InCompression {
    /// Key exchange negotiated `name` for this direction.
    pub(crate) fn negotiated(
        &mut self,
        name: &str,
        registry: &[Arc<dyn CompressionEngine>],
    ) -> Result<(), Error> {
        self.schedule.negotiated(name, registry)
    }

    /// The peer's NEWKEYS arrived.
    pub(crate) fn new_epoch(&mut self) {
        let e = self.schedule.new_epoch();
        self.start(e);
    }

    /// User authentication succeeded.
    pub(crate) fn authenticated(&mut self) {
        if self.stream.is_none() {
            let e = self.schedule.authenticated();
            self.start(e);
        } else {
            self.schedule.authenticated = true;
        }
    }

    fn start(&mut self, engine: Option<Arc<dyn CompressionEngine>>) {
        self.stream = engine.map(|e| e.decompressor());
        if self.stream.is_some() {
            self.counts.get_or_insert_with(Counts::default);
        }
    }

    /// Inflates `compressed` when a stream runs, into `out` or, for a
    /// stored packet, nowhere (the payload is a range of `compressed`). At
    /// most `limit` bytes come out: the engine promises it and this checks it.
    pub(crate) fn decompress(
        &mut self,
        compressed: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<Inflated, Violation> {
        let Some(d) = self.stream.as_mut() else {
            return Ok(Inflated::Plain);
        };
        let (inflated, len) = match d.in_place(compressed, limit)? {
            Some(r) if r.end <= compressed.len() && r.start <= r.end => {
                let len = r.len();
                (Inflated::Within(r), len)
            }
            Some(_) => return Err(Violation::BadCompression),
            None => {
                d.decompress(compressed, out, limit)?;
                (Inflated::Scratch, out.len())
            }
        };
        if len > limit {
            return Err(Violation::BadCompression);
        }
        if let Some(n) = self.counts.as_mut() {
            n.raw += len as u64;
            n.compressed += compressed.len() as u64;
        }
        Ok(inflated)
    }

    /// `(raw, compressed)` once a stream has run.
    pub(crate) fn stats(&self) -> Option<(u64, u64)> {
        self.counts.map(|n| (n.raw, n.compressed))
    }
}
