//! The SFTP channel end: the pump hands it the channel's bytes; it cuts
//! them into packets (sluice-proto's `sftp::frame`) and queues them for the
//! worker thread (serve.rs), and hands the worker's replies back, in
//! request order, as the channel's output.
//!
//! Both queues are bounded. While the request queue holds more than
//! [`REQUEST_QUEUE_BYTES`] the end takes no more bytes, so the channel's
//! window closes and the client waits: memory stays bounded whatever it
//! sends. The limit sits above what stock clients keep in flight (64
//! requests of up to 255 KiB: 16.3 MiB), so it never holds them back. The
//! worker stops while [`REPLY_QUEUE_BYTES`] of replies wait for the
//! channel (a client that reads slowly).

use super::serve::{self, Worker};

use crate::net::pump::{ChannelEndpoint, Ext, Produced};
use sluice_proto::sftp::{frame, FrameError};
use std::collections::VecDeque;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Requests waiting for the worker, in bytes, before the end stops taking
/// input (see the file doc).
pub(super) const REQUEST_QUEUE_BYTES: usize = 24 << 20;

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
    wake: OwnedFd,
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, Queues> {
        self.q.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes the pump's wake fd readable.
    pub(super) fn wake_pump(&self) {
        let one: u64 = 1;
        // SAFETY: an 8-byte write from a live u64 to our eventfd.
        unsafe {
            libc::write(
                self.wake.as_raw_fd(),
                (&one as *const u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
    }
}

/// How the SFTP session ended, for the session's exit-status.
#[derive(Clone)]
pub struct SftpExit(Arc<Shared>);

impl SftpExit {
    /// The exit status once the server ended.
    pub fn code(&self) -> Option<u32> {
        self.0.lock().exit
    }
}

/// The in-process channel end running `internal-sftp`.
pub struct SftpEndpoint {
    shared: Arc<Shared>,
    /// Bytes of a packet not yet whole.
    partial: Vec<u8>,
    /// A framing error ended the input: what comes after is discarded.
    broken: bool,
}

impl SftpEndpoint {
    /// Starts the worker thread for `worker` and returns the channel end
    /// and the handle for the session's exit status.
    pub fn start(worker: Worker) -> std::io::Result<(SftpEndpoint, SftpExit)> {
        // SAFETY: eventfd has no memory preconditions; the fd is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let shared = Arc::new(Shared {
            q: Mutex::new(Queues::default()),
            cv: Condvar::new(),
            // SAFETY: a new fd we own.
            wake: unsafe { OwnedFd::from_raw_fd(fd) },
        });
        let s = shared.clone();
        std::thread::Builder::new()
            .name("sftp".into())
            .spawn(move || serve::run(worker, &s))?;
        Ok((
            SftpEndpoint {
                shared: shared.clone(),
                partial: Vec::new(),
                broken: false,
            },
            SftpExit(shared),
        ))
    }

    /// Queues the whole packets at the front of `buf`; returns the bytes
    /// used (a packet's tail stays for the next call).
    fn queue_packets(&mut self, q: &mut Queues, buf: &[u8]) -> usize {
        let mut used = 0;
        while let Some(rest) = buf.get(used..) {
            match frame(rest) {
                Ok(Some(total)) => {
                    let body = rest.get(4..total).unwrap_or_default().to_vec();
                    q.request_bytes += body.len();
                    q.requests.push_back(body);
                    used += total;
                }
                Ok(None) => break,
                Err(e) => {
                    self.fail(q, e);
                    return buf.len();
                }
            }
        }
        used
    }

    fn fail(&mut self, q: &mut Queues, e: FrameError) {
        crate::log!(Error, "sftp: {e}; ending the session");
        // What was framed before the bad packet is still answered.
        self.broken = true;
        q.input_done = true;
        q.fatal = true;
    }
}

impl ChannelEndpoint for SftpEndpoint {
    fn on_data(&mut self, ext: Ext, data: &[u8]) -> usize {
        if ext != Ext::Data || self.broken {
            return data.len();
        }
        let shared = self.shared.clone();
        let mut q = shared.lock();
        if q.input_done || q.abort {
            return data.len();
        }
        if q.request_bytes >= REQUEST_QUEUE_BYTES {
            return 0;
        }
        let before = q.requests.len();
        if self.partial.is_empty() {
            let used = self.queue_packets(&mut q, data);
            if !self.broken {
                self.partial
                    .extend_from_slice(data.get(used..).unwrap_or_default());
            }
        } else {
            let mut buf = std::mem::take(&mut self.partial);
            buf.extend_from_slice(data);
            let used = self.queue_packets(&mut q, &buf);
            if !self.broken {
                buf.drain(..used.min(buf.len()));
                self.partial = buf;
            }
        }
        if q.requests.len() != before || self.broken {
            shared.cv.notify_all();
        }
        data.len()
    }

    fn produce(&mut self, ext: Ext, buf: &mut [u8]) -> Produced {
        if ext != Ext::Data {
            return Produced::Eof;
        }
        let mut q = self.shared.lock();
        let mut n = 0;
        while n < buf.len() {
            let off = q.reply_off;
            let Some(front) = q.replies.front() else {
                break;
            };
            let src = front.get(off..).unwrap_or_default();
            let take = src.len().min(buf.len() - n);
            if let (Some(d), Some(s)) = (buf.get_mut(n..n + take), src.get(..take)) {
                d.copy_from_slice(s);
            }
            n += take;
            if off + take >= front.len() {
                q.replies.pop_front();
                q.reply_off = 0;
            } else {
                q.reply_off = off + take;
            }
            q.reply_bytes = q.reply_bytes.saturating_sub(take);
        }
        if n > 0 {
            self.shared.cv.notify_all();
            return Produced::Data(n);
        }
        if q.exit.is_some() {
            Produced::Eof
        } else {
            Produced::WouldBlock
        }
    }

    fn on_eof(&mut self) {
        let mut q = self.shared.lock();
        q.input_done = true;
        self.shared.cv.notify_all();
    }

    fn on_close(&mut self) {
        let mut q = self.shared.lock();
        q.abort = true;
        self.shared.cv.notify_all();
    }

    fn wake_fd(&self) -> Option<RawFd> {
        Some(self.shared.wake.as_raw_fd())
    }

    fn on_wake(&mut self) {
        let mut v: u64 = 0;
        // SAFETY: an 8-byte read into a live u64 from our non-blocking eventfd.
        unsafe {
            libc::read(
                self.shared.wake.as_raw_fd(),
                (&mut v as *mut u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
    }
}
