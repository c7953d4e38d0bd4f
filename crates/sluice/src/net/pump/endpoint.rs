//! The other end of a channel when it is not a file descriptor: an
//! in-process consumer and producer of the channel's bytes (an SFTP server
//! or client living in the loop's thread, one stripe of a multi-connection
//! transfer, a test's echo).
//!
//! The pump moves bytes for it exactly as for an fd: received data is
//! offered to [`ChannelEndpoint::on_data`] straight from the decrypted
//! input, what it does not take waits in the channel's pending buffer and
//! is offered again, and the engine's window reopens only by what the
//! endpoint took, so a consumer that stops closes the peer's window. Bytes
//! to send are written by [`ChannelEndpoint::produce`] into the packet slot
//! in the output buffer, where they are sealed in place: no copy and no
//! allocation per packet.
//!
//! Fd-backed ends (commands, ptys, sockets, our stdio) do not go through
//! this trait: they keep the zero-copy read(2) into the slot (`stream.rs`).

use super::stream::{Ext, Read, Stream};
use std::os::fd::RawFd;

/// What [`ChannelEndpoint::produce`] put in the slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Produced {
    /// This many bytes at the start of the buffer are to be sent (more
    /// than 0; 0 counts as `WouldBlock`).
    Data(usize),
    /// Nothing to send now. The pump asks again after it next hands the
    /// endpoint data, after the endpoint's wake fd fired, or on a later
    /// turn of the loop; it does not spin on it.
    WouldBlock,
    /// This stream is finished; once both streams are, the pump sends
    /// CHANNEL_EOF (RFC 4254 5.3).
    Eof,
}

/// An in-process channel end. Every call is made from the pump's thread,
/// never blocks it, and must not block.
///
/// Readiness: the pump serves an endpoint on every turn of its loop and
/// runs another turn at once while the endpoint moved bytes either way, so
/// an endpoint driven only by these calls (a request/response server)
/// needs nothing more. One fed from elsewhere (a worker thread, another
/// connection) gives a [`wake_fd`](ChannelEndpoint::wake_fd) it makes
/// readable when it has something to send or room to take more.
///
/// Closing: [`on_eof`](ChannelEndpoint::on_eof) says the peer sends no
/// more; [`Produced::Eof`] on both streams sends our EOF;
/// [`closing`](ChannelEndpoint::closing) asks the pump to close the
/// channel; [`on_close`](ChannelEndpoint::on_close) says it is closed (or
/// the connection ended) and nothing more will be called.
pub trait ChannelEndpoint {
    /// The endpoint is attached to its channel on a connection to a peer
    /// that identified as `peer_version` (its SSH identification line).
    fn on_attach(&mut self, _peer_version: &str) {}

    /// The peer's window for this channel reached `window` bytes, the most
    /// it has let us send at once so far (a stock sshd grants 2 MiB to a
    /// session and never more: what one connection may have in flight).
    fn on_peer_window(&mut self, _window: u32) {}

    /// The peer sent `data` on stream `ext`. Returns how many bytes from the
    /// front were taken (at most `data.len()`); the rest is offered again
    /// later, and the peer's window reopens only by what was taken.
    fn on_data(&mut self, ext: Ext, data: &[u8]) -> usize;

    /// Fills the front of `buf` (the packet slot, at most the peer's window
    /// and packet size) with bytes to send on stream `ext`. An endpoint that
    /// never writes stderr returns `Eof` for [`Ext::Stderr`].
    fn produce(&mut self, ext: Ext, buf: &mut [u8]) -> Produced;

    /// The peer sent EOF and everything it sent before was taken.
    fn on_eof(&mut self) {}

    /// The endpoint is done (or gave up): the pump closes the channel.
    fn closing(&self) -> bool {
        false
    }

    /// The channel is closed; the endpoint is dropped next.
    fn on_close(&mut self) {}

    /// An fd the pump polls for reading to wake up for this endpoint.
    fn wake_fd(&self) -> Option<RawFd> {
        None
    }

    /// The wake fd was readable: clear it (read the eventfd or pipe).
    fn on_wake(&mut self) {}
}

/// A channel's in-process end, told when it goes (the channel closed, or
/// the connection ended).
pub(crate) struct InProcess(pub(crate) Box<dyn ChannelEndpoint>);

impl InProcess {
    /// The endpoint.
    pub(crate) fn get(&mut self) -> &mut dyn ChannelEndpoint {
        self.0.as_mut()
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        self.0.on_close();
    }
}

/// Offers `data` to the endpoint behind the incoming stream: taken at once
/// if it can, the rest queued behind anything already waiting. Returns the
/// bytes taken now.
pub(crate) fn deliver(
    ep: &mut dyn ChannelEndpoint,
    s: &mut Stream,
    ext: Ext,
    data: &[u8],
) -> usize {
    if !s.pending.is_empty() {
        s.pending.extend(data);
        return 0;
    }
    let n = ep.on_data(ext, data).min(data.len());
    s.pending.extend(data.get(n..).unwrap_or_default());
    n
}

/// Offers the stream's waiting bytes again until the endpoint takes no
/// more; returns the bytes taken.
pub(crate) fn drain(ep: &mut dyn ChannelEndpoint, s: &mut Stream, ext: Ext) -> usize {
    let mut taken = 0;
    while !s.pending.is_empty() {
        let n = ep
            .on_data(ext, s.pending.bytes())
            .min(s.pending.bytes().len());
        if n == 0 {
            break;
        }
        s.pending.advance(n);
        taken += n;
    }
    taken
}

/// Lets the endpoint fill the packet slot that starts at the end of `out`
/// with up to `max` bytes. The slot is zeroed first (a memset within the
/// output buffer's capacity: no allocation) so the endpoint gets a plain
/// `&mut [u8]`; the engine truncates it to what was produced.
pub(crate) fn produce_into(
    ep: &mut dyn ChannelEndpoint,
    s: &mut Stream,
    ext: Ext,
    out: &mut Vec<u8>,
    max: usize,
) -> Read {
    let at = out.len();
    out.resize(at + max, 0);
    let buf = out.get_mut(at..).unwrap_or_default();
    match ep.produce(ext, buf) {
        Produced::Data(n) if n > 0 => Read::Data(n.min(max)),
        Produced::Data(_) | Produced::WouldBlock => {
            s.ready = false;
            Read::Blocked
        }
        Produced::Eof => {
            s.eof = true;
            Read::Eof
        }
    }
}

/// An eventfd through which another thread wakes the pump for an
/// endpoint ([`ChannelEndpoint::wake_fd`]).
pub struct WakeFd(std::os::fd::OwnedFd);

impl WakeFd {
    /// A new, non-blocking, close-on-exec eventfd.
    pub fn new() -> std::io::Result<WakeFd> {
        use rustix::event::{eventfd, EventfdFlags};
        Ok(WakeFd(eventfd(
            0,
            EventfdFlags::NONBLOCK | EventfdFlags::CLOEXEC,
        )?))
    }

    /// Makes the fd readable (from any thread). A full counter (2^64 - 2
    /// wakes unread) already is.
    pub fn wake(&self) {
        let _ = rustix::io::write(&self.0, &1u64.to_ne_bytes());
    }

    /// Clears it ([`ChannelEndpoint::on_wake`]); nothing to read is fine.
    pub fn clear(&self) {
        let mut v = [0u8; 8];
        let _ = rustix::io::read(&self.0, &mut v);
    }

    /// The fd, for polling.
    pub fn raw(&self) -> RawFd {
        use std::os::fd::AsRawFd;
        self.0.as_raw_fd()
    }
}
