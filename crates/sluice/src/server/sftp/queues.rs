//! What the SFTP channel end (endpoint.rs) and the worker thread
//! (serve.rs) share: the request and reply queues under one lock, the
//! worker's condition variable and the pump's wake-up.

use crate::net::pump::WakeFd;
use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};

/// Replies waiting for the channel, in bytes, before the worker waits.
pub(super) const REPLY_QUEUE_BYTES: usize = 24 << 20;

/// What the end and the worker share.
#[derive(Default)]
pub(super) struct Queues {
    /// Packet bodies (type byte onwards), oldest first.
    pub(super) requests: VecDeque<Vec<u8>>,
    pub(super) request_bytes: usize,
    /// Framed replies, oldest first; `reply_off` bytes of the first are sent.
    pub(super) replies: VecDeque<Vec<u8>>,
    pub(super) reply_off: usize,
    pub(super) reply_bytes: usize,
    /// No more requests come (the peer's EOF, or a packet that could not be
    /// framed): the worker ends after the queue.
    pub(super) input_done: bool,
    /// The channel is gone: the worker ends now.
    pub(super) abort: bool,
    /// The input could not be framed: the exit status is 255.
    pub(super) fatal: bool,
    /// The worker ended, with this exit status (sftp-server's: 0, or 255
    /// after a fatal protocol error).
    pub(super) exit: Option<u32>,
}

/// The queues, the worker's wake-up and the eventfd that wakes the pump.
pub(super) struct Shared {
    pub(super) q: Mutex<Queues>,
    pub(super) cv: Condvar,
    pub(super) wake: WakeFd,
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, Queues> {
        self.q.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes the pump's wake fd readable.
    pub(super) fn wake_pump(&self) {
        self.wake.wake();
    }
}
