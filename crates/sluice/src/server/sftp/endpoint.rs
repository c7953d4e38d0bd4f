//! The SFTP channel end: the pump hands it the channel's bytes; it cuts
//! them into packets (sluice-proto's `sftp::Deframer`) and queues them for the
//! worker thread (serve.rs), and hands the worker's replies back, in
//! request order, as the channel's output.
//!
//! Both queues are bounded. While the request queue holds more than
//! [`REQUEST_QUEUE_BYTES`] the end takes no more bytes, so the channel's
//! window closes and the client waits: memory stays bounded whatever it
//! sends. The limit sits above what stock clients keep in flight (64
//! requests of up to 255 KiB: 16.3 MiB), so it never holds them back. The
//! worker stops while `REPLY_QUEUE_BYTES` (queues.rs) of replies wait for the
//! channel (a client that reads slowly).

use super::handles::Worker;
use super::queues::{Queues, Shared};
use super::serve;

use crate::net::pump::{ChannelEndpoint, Ext, Produced, WakeFd};
use sluice_proto::sftp::{Deframer, FrameError, MAX_PACKET};
use std::os::fd::RawFd;
use std::sync::{Arc, Condvar, Mutex};

/// Requests waiting for the worker, in bytes, before the end stops taking
/// input (see the file doc).
pub(super) const REQUEST_QUEUE_BYTES: usize = 24 << 20;

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
    /// The packet not yet whole.
    deframer: Deframer,
    /// A framing error ended the input: what comes after is discarded.
    broken: bool,
}

impl SftpEndpoint {
    /// Starts the worker thread for `worker` and returns the channel end
    /// and the handle for the session's exit status.
    pub fn start(worker: Worker) -> std::io::Result<(SftpEndpoint, SftpExit)> {
        let shared = Arc::new(Shared {
            q: Mutex::new(Queues::default()),
            cv: Condvar::new(),
            wake: WakeFd::new()?,
        });
        let s = shared.clone();
        std::thread::Builder::new()
            .name("sftp".into())
            .spawn(move || serve::run(worker, &s))?;
        Ok((
            SftpEndpoint {
                shared: shared.clone(),
                deframer: Deframer::default(),
                broken: false,
            },
            SftpExit(shared),
        ))
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
        let queued = self.deframer.feed(data, MAX_PACKET, &mut |body| {
            q.request_bytes += body.len();
            q.requests.push_back(body);
        });
        if let Err(e) = queued {
            self.fail(&mut q, e);
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
        Some(self.shared.wake.raw())
    }

    fn on_wake(&mut self) {
        self.shared.wake.clear();
    }
}
