//! The sampling thread: a copy of a little of the payload just sent,
//! compressed alone at the levels the controller asks about, off the
//! connection's thread.
//!
//! The queue toward the thread holds one sample: one offered while the
//! thread is still busy with the last is dropped, so the thread's work is
//! bounded by what it can do and never holds the connection back. Each
//! level is compressed from a fresh stream (sluice-proto's
//! `compress::sample_len`) and timed, which gives the model its ratios
//! relative to each other on the same bytes and its costs per byte.

use super::model::Sample;
use crate::log;
use sluice_proto::transport::compress::sample_len;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError, TrySendError};
use std::thread::JoinHandle;
use std::time::Instant;

/// Bytes per sample: two of a zstd job's 16 blocks, enough for the levels
/// to differ as on the stream, little enough to cost under a millisecond.
pub(super) const SAMPLE_LEN: usize = 64 << 10;

/// A sample to compress: its bytes and the levels.
type Request = (Vec<u8>, Vec<u8>);

/// The connection's side of the sampling thread.
pub(super) struct Sampler {
    engine: String,
    /// Toward the thread, and back; None until the first sample (or when
    /// the thread could not start).
    chan: Option<(SyncSender<Request>, Receiver<Sample>)>,
    thread: Option<JoinHandle<()>>,
    /// Levels the sample being gathered is for.
    want: Option<Vec<u8>>,
    buf: Vec<u8>,
    /// The thread could not be started: no more tries.
    failed: bool,
}

impl Sampler {
    /// A sampler for the engine named `engine`; its thread starts with the
    /// first sample.
    pub(super) fn new(engine: &str) -> Self {
        Sampler {
            engine: engine.to_owned(),
            chan: None,
            thread: None,
            want: None,
            buf: Vec::new(),
            failed: false,
        }
    }

    /// Gathers the next payload bytes as a sample for `levels`.
    pub(super) fn request(&mut self, levels: Vec<u8>) {
        if self.failed || levels.is_empty() {
            return;
        }
        self.buf.clear();
        self.want = Some(levels);
    }

    /// Payload just read for sending: copied while a sample is wanted.
    pub(super) fn offer(&mut self, data: &[u8]) {
        if self.want.is_none() {
            return;
        }
        let take = SAMPLE_LEN.saturating_sub(self.buf.len()).min(data.len());
        self.buf
            .extend_from_slice(data.get(..take).unwrap_or_default());
        if self.buf.len() < SAMPLE_LEN {
            return;
        }
        let Some(levels) = self.want.take() else {
            return;
        };
        let bytes = std::mem::take(&mut self.buf);
        if let Some((tx, _)) = self.channel() {
            match tx.try_send((bytes, levels)) {
                Ok(()) | Err(TrySendError::Full(_)) => {}
                Err(TrySendError::Disconnected(_)) => self.chan = None,
            }
        }
    }

    /// A sample's figures, when one is done.
    pub(super) fn poll(&mut self) -> Option<Sample> {
        let (_, rx) = self.chan.as_ref()?;
        match rx.try_recv() {
            Ok(s) => Some(s),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => {
                self.chan = None;
                None
            }
        }
    }

    /// The channels to the thread, started now if need be.
    fn channel(&mut self) -> Option<&(SyncSender<Request>, Receiver<Sample>)> {
        if self.chan.is_none() && !self.failed {
            let (tx, rx) = sync_channel::<Request>(1);
            let (back, results) = sync_channel::<Sample>(2);
            let engine = self.engine.clone();
            let spawned = std::thread::Builder::new()
                .name("sluice-zsample".to_owned())
                .spawn(move || run(&engine, &rx, &back));
            match spawned {
                Ok(h) => {
                    self.thread = Some(h);
                    self.chan = Some((tx, results));
                }
                Err(e) => {
                    log!(
                        Debug1,
                        "compression: no sampling thread ({e}): level steered without samples"
                    );
                    self.failed = true;
                }
            }
        }
        self.chan.as_ref()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        // The thread ends when its queue closes, after at most one sample.
        self.chan = None;
        if let Some(h) = self.thread.take() {
            let _ = h.join();
        }
    }
}

/// The thread: each sample compressed at each level asked, timed.
fn run(engine: &str, rx: &Receiver<Request>, back: &SyncSender<Sample>) {
    while let Ok((bytes, levels)) = rx.recv() {
        let mut s = Sample {
            raw: bytes.len(),
            levels: Vec::with_capacity(levels.len()),
        };
        for level in levels {
            let t = Instant::now();
            if let Ok(n) = sample_len(engine, level, &bytes) {
                s.levels.push((level, n, t.elapsed().as_secs_f64()));
            }
        }
        match back.try_send(s) {
            Ok(()) | Err(TrySendError::Full(_)) => {}
            Err(TrySendError::Disconnected(_)) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_sample_comes_back_with_each_level() {
        let mut s = Sampler::new("zstd@sluice.dev");
        // Nothing wanted: nothing gathered.
        s.offer(&[1; 1000]);
        assert!(s.chan.is_none());
        s.request(vec![1, 3]);
        let text: Vec<u8> = b"sampled text, sampled text; "
            .iter()
            .cycle()
            .take(SAMPLE_LEN)
            .copied()
            .collect();
        s.offer(&text[..1000]);
        s.offer(&text[1000..]);
        let mut got = None;
        for _ in 0..500 {
            got = s.poll();
            if got.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let got = got.expect("a sample");
        assert_eq!(got.raw, SAMPLE_LEN);
        let levels: Vec<u8> = got.levels.iter().map(|l| l.0).collect();
        assert_eq!(levels, [1, 3]);
        // zstd's fast level 1 finds less of a short period than its level 3.
        assert!(
            got.levels.iter().all(|&(_, n, _)| n * 2 < SAMPLE_LEN),
            "{got:?}"
        );
    }
}
