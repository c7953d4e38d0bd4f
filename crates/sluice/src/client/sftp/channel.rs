//! The SFTP client's channel end: the pump hands it the server's bytes,
//! it cuts them into packets and queues them for the program thread (the
//! sftp or scp logic, which may wait on the disk); the program thread's
//! framed requests leave as the channel's output. The program thread holds
//! a [`Link`]; the pump holds the [`SftpChannel`].
//!
//! Both directions are bounded: the program waits while more than
//! [`OUT_MAX`] bytes of requests are unsent, and the end takes no more
//! input while [`IN_MAX`] bytes of replies wait for the program, so the
//! channel's window closes on a server that sends what was not asked for.

use super::error::Gone;
use crate::net::pump::{ChannelEndpoint, Ext, Produced, WakeFd};
use sluice_proto::sftp::Deframer;
use std::collections::VecDeque;
use std::io::Write;
use std::os::fd::RawFd;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Unsent request bytes before the program waits: above 64 writes of
/// 255 KiB (OpenSSH's default depth), so a full pipeline never waits here.
pub const OUT_MAX: usize = 32 << 20;

/// Replies waiting for the program before the end stops taking input.
pub const IN_MAX: usize = 64 << 20;

/// Largest reply packet taken until limits@openssh.com says otherwise:
/// OpenSSH's SFTP_MAX_MSG_LENGTH.
const DEFAULT_MAX_PACKET: u32 = 256 * 1024;

/// The ceiling on a server's announced packet size (a bound on memory per
/// reply whatever it claims).
pub const MAX_PACKET_CEILING: u32 = 16 << 20;

/// Spare request buffers kept for the program thread, at most.
const FREE_MAX: usize = 16;

#[derive(Default)]
struct Queues {
    /// Framed requests, each in its own buffer (a WRITE's data is read
    /// from the file straight into it: no copy here); `out_off` bytes of
    /// the first are sent, `out_bytes` are unsent in all.
    out: VecDeque<Vec<u8>>,
    out_off: usize,
    out_bytes: usize,
    /// Sent buffers, for the program thread to fill again.
    free: Vec<Vec<u8>>,
    /// The program has nothing more to send: EOF once `out` is sent.
    out_done: bool,
    /// Reply bodies (type byte onwards), oldest first.
    incoming: VecDeque<Vec<u8>>,
    in_bytes: usize,
    /// The channel or the connection is gone, and why.
    closed: Option<Gone>,
    /// Largest reply packet accepted.
    max_packet: u32,
    /// The server's SSH identification line, once the end is attached.
    peer: Option<String>,
    /// The largest window the server has granted on the channel.
    peer_window: u32,
}

struct Shared {
    q: Mutex<Queues>,
    cv: Condvar,
    /// Makes the pump serve the end.
    wake: WakeFd,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queues> {
        self.q.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wake_pump(&self) {
        self.wake.wake();
    }
}

/// The program thread's side: send framed requests, receive reply bodies.
#[derive(Clone)]
pub struct Link(Arc<Shared>);

/// The pump's side: the session channel's in-process end.
pub struct SftpChannel {
    shared: Arc<Shared>,
    /// The reply not yet whole.
    deframer: Deframer,
}

/// A new pair of ends.
pub fn pair() -> std::io::Result<(SftpChannel, Link)> {
    let shared = Arc::new(Shared {
        q: Mutex::new(Queues {
            max_packet: DEFAULT_MAX_PACKET,
            ..Queues::default()
        }),
        cv: Condvar::new(),
        wake: WakeFd::new()?,
    });
    Ok((
        SftpChannel {
            shared: shared.clone(),
            deframer: Deframer::default(),
        },
        Link(shared),
    ))
}

impl Link {
    /// Queues framed request bytes; waits while too many are unsent. Err
    /// once the connection is gone.
    pub fn send(&self, packet: &[u8]) -> Result<(), Gone> {
        let mut buf = self.buffer();
        buf.clear();
        buf.extend_from_slice(packet);
        self.send_owned(buf)
    }

    /// A buffer for [`Link::send_owned`]: one the pump has sent, with its
    /// old bytes and length (a caller that overwrites in place need not
    /// zero it again), or a new one.
    pub fn buffer(&self) -> Vec<u8> {
        self.0.lock().free.pop().unwrap_or_default()
    }

    /// Queues one framed request (the whole buffer); waits while too many
    /// bytes are unsent. Err once the connection is gone.
    pub fn send_owned(&self, packet: Vec<u8>) -> Result<(), Gone> {
        let mut q = self.0.lock();
        loop {
            if let Some(why) = &q.closed {
                return Err(*why);
            }
            if q.out_bytes < OUT_MAX {
                break;
            }
            q = self.0.cv.wait(q).unwrap_or_else(|p| p.into_inner());
        }
        if packet.is_empty() {
            return Ok(());
        }
        q.out_bytes += packet.len();
        q.out.push_back(packet);
        drop(q);
        self.0.wake_pump();
        Ok(())
    }

    /// The next reply body, waiting for it; Err once the connection is
    /// gone and nothing is left.
    pub fn recv(&self) -> Result<Vec<u8>, Gone> {
        let mut q = self.0.lock();
        loop {
            if let Some(b) = q.incoming.pop_front() {
                let was_full = q.in_bytes >= IN_MAX;
                q.in_bytes = q.in_bytes.saturating_sub(b.len());
                drop(q);
                if was_full {
                    self.0.wake_pump();
                }
                return Ok(b);
            }
            if let Some(why) = &q.closed {
                return Err(*why);
            }
            q = self.0.cv.wait(q).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// The server's SSH identification line, waiting until the end is
    /// attached to its channel; None if the connection ended first.
    pub fn peer_version(&self) -> Option<String> {
        let mut q = self.0.lock();
        loop {
            if let Some(v) = &q.peer {
                return Some(v.clone());
            }
            if q.closed.is_some() {
                return None;
            }
            q = self.0.cv.wait(q).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// The largest window the server has granted on the channel so far (0
    /// before any): what one connection may have in flight toward a server
    /// that keeps its window at that size, as OpenSSH's sshd does.
    pub fn peer_window(&self) -> u32 {
        self.0.lock().peer_window
    }

    /// Nothing more will be sent: the channel's EOF follows the last byte.
    pub fn finish(&self) {
        self.0.lock().out_done = true;
        self.0.wake_pump();
    }

    /// Replies up to `max` bytes are taken from now on (the server's
    /// limits@openssh.com, within [`MAX_PACKET_CEILING`]).
    pub fn set_max_packet(&self, max: u32) {
        self.0.lock().max_packet = max.clamp(DEFAULT_MAX_PACKET, MAX_PACKET_CEILING);
    }

    /// The connection ended ("Connection closed" for the program's error).
    pub fn close(&self) {
        let mut q = self.0.lock();
        if q.closed.is_none() {
            q.closed = Some(Gone::Closed);
        }
        self.0.cv.notify_all();
    }
}

impl SftpChannel {
    fn fail(&mut self, q: &mut Queues, why: Gone) {
        crate::log!(Error, "sftp: {why}");
        q.closed = Some(why);
        self.shared.cv.notify_all();
    }
}

impl ChannelEndpoint for SftpChannel {
    fn on_attach(&mut self, peer_version: &str) {
        self.shared.lock().peer = Some(peer_version.to_owned());
        self.shared.cv.notify_all();
    }

    fn on_peer_window(&mut self, window: u32) {
        self.shared.lock().peer_window = window;
    }

    fn on_data(&mut self, ext: Ext, data: &[u8]) -> usize {
        if ext == Ext::Stderr {
            // The server's stderr (sftp-server's complaints), as ssh shows it.
            let _ = std::io::stderr().write_all(data);
            return data.len();
        }
        let shared = self.shared.clone();
        let mut q = shared.lock();
        if q.closed.is_some() {
            return data.len();
        }
        if q.in_bytes >= IN_MAX {
            return 0;
        }
        let before = q.incoming.len();
        let max = q.max_packet;
        let queued = self.deframer.feed(data, max, &mut |body| {
            q.in_bytes += body.len();
            q.incoming.push_back(body);
        });
        if let Err(e) = queued {
            self.fail(&mut q, Gone::BadFrame(e));
        }
        if q.incoming.len() != before {
            shared.cv.notify_all();
        }
        data.len()
    }

    fn produce(&mut self, ext: Ext, buf: &mut [u8]) -> Produced {
        if ext != Ext::Data {
            return Produced::Eof;
        }
        let mut guard = self.shared.lock();
        let q = &mut *guard;
        let mut n = 0;
        while n < buf.len() {
            let Some(front) = q.out.front() else { break };
            let src = front.get(q.out_off..).unwrap_or_default();
            let k = src.len().min(buf.len() - n);
            if let (Some(d), Some(s)) = (buf.get_mut(n..n + k), src.get(..k)) {
                d.copy_from_slice(s);
            }
            n += k;
            q.out_off += k;
            q.out_bytes -= k;
            if q.out_off >= front.len() {
                q.out_off = 0;
                if let Some(done) = q.out.pop_front() {
                    if q.free.len() < FREE_MAX {
                        q.free.push(done);
                    }
                }
            }
        }
        if n > 0 {
            self.shared.cv.notify_all();
            return Produced::Data(n);
        }
        if q.out_done || q.closed.is_some() {
            Produced::Eof
        } else {
            Produced::WouldBlock
        }
    }

    /// The program finished and all it queued went out: the channel closes
    /// right behind our EOF. The program had the answer to every request
    /// before it finished, so the server's exit status and CLOSE are not
    /// waited for (`ClientSession` ends the run once our CLOSE is out): a
    /// round trip less at the end of every sftp and scp run.
    fn closing(&self) -> bool {
        let q = self.shared.lock();
        q.out_done && q.out.is_empty()
    }

    fn on_eof(&mut self) {
        let mut q = self.shared.lock();
        if q.closed.is_none() {
            q.closed = Some(Gone::Closed);
        }
        self.shared.cv.notify_all();
    }

    fn on_close(&mut self) {
        self.on_eof();
    }

    fn wake_fd(&self) -> Option<RawFd> {
        Some(self.shared.wake.raw())
    }

    fn on_wake(&mut self) {
        self.shared.wake.clear();
    }
}

// No Drop that closes the link: when the connection fails before the
// channel opens, this end is dropped inside `connect` before its error is
// printed, and the program would print "Connection closed" first. The one
// who ran the connection closes the link after saying why (sftp/mod.rs).
