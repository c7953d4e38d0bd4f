//! The set of fds the loop sleeps on, and what their readiness means.
//!
//! The socket is polled for input while the input buffer has room and for
//! output while sealed bytes wait. A channel's sources are polled only
//! while the peer's window and our output buffer have room for what they
//! would produce (otherwise poll would wake us for data we cannot send),
//! its sinks only while bytes wait for them, an in-process end's wake fd
//! always. The handler adds its own fds (listeners, signal pipe, terminal).

use super::channels::ChannelFds;
use super::handler::Handler;
use crate::sys::fdio;
use sluice_proto::Connection;
use std::time::{Duration, Instant};

/// What the loop's socket side wants from poll.
pub(crate) struct SockInterest {
    /// The socket.
    pub(crate) fd: std::os::fd::RawFd,
    /// Read from it (the input buffer has room and no EOF yet).
    pub(crate) read: bool,
    /// Write to it (sealed output waits).
    pub(crate) write: bool,
    /// The output buffer can take more channel data.
    pub(crate) room: bool,
    /// Run the next turn at once (an in-process end moved bytes).
    pub(crate) again: bool,
    /// Input waits behind a sink until then at most: wake by then.
    pub(crate) hold_until: Option<Instant>,
}

fn pollfd(fd: std::os::fd::RawFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

/// Builds the poll set, sleeps until something is ready or a timer (the
/// engine's, or the handler's tick) is due, and marks the channel sources
/// and in-process ends that became ready.
pub(crate) fn wait<E>(
    sock: SockInterest,
    fds: &mut ChannelFds,
    conn: &Connection,
    handler: &dyn Handler<Error = E>,
) -> std::io::Result<()> {
    let mut pfds = Vec::with_capacity(8);
    let mut sock_events = 0;
    if sock.read {
        sock_events |= libc::POLLIN;
    }
    if sock.write {
        sock_events |= libc::POLLOUT;
    }
    pfds.push(pollfd(sock.fd, sock_events));
    for id in fds.ids() {
        let Some(io) = fds.get_mut(id) else { continue };
        let can_send = sock.room && conn.send_capacity(id) > 0;
        let (outgoing, incoming) = io.streams_mut();
        for s in outgoing.iter().flatten() {
            if let (Some(fd), false, true) = (s.raw_fd(), s.eof, can_send) {
                pfds.push(pollfd(fd, libc::POLLIN));
            }
        }
        for s in incoming.iter().flatten() {
            if let (Some(fd), false) = (s.raw_fd(), s.pending.is_empty()) {
                pfds.push(pollfd(fd, libc::POLLOUT));
            }
        }
        if let Some(fd) = io.wake_fd() {
            pfds.push(pollfd(fd, libc::POLLIN));
        }
    }
    handler.watch_fds(&mut pfds);
    let now = Instant::now();
    let mut timeout = conn
        .poll_timeout()
        .map(|t| t.saturating_duration_since(now));
    if let Some(t) = handler.tick_interval() {
        timeout = Some(timeout.map_or(t, |x| x.min(t)));
    }
    if let Some(until) = sock.hold_until {
        let t = until.saturating_duration_since(now);
        timeout = Some(timeout.map_or(t, |x| x.min(t)));
    }
    if sock.again {
        timeout = Some(Duration::ZERO);
    }
    let ms = timeout.map_or(-1, |d| d.as_millis().min(60_000) as i32);
    fdio::poll(&mut pfds, ms)?;
    for p in pfds
        .iter()
        .filter(|p| p.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0)
    {
        for id in fds.ids() {
            let Some(io) = fds.get_mut(id) else { continue };
            let (outgoing, _) = io.streams_mut();
            for s in outgoing.iter_mut().flatten() {
                if s.raw_fd() == Some(p.fd) {
                    s.ready = true;
                }
            }
            if io.wake_fd() == Some(p.fd) {
                io.woken();
            }
        }
    }
    Ok(())
}
