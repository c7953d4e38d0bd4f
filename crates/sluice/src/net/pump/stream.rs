//! One direction of bytes between a channel and its other end: stdout,
//! stderr, stdin, a socket's read or write side, or an in-process stream.
//! A channel has two outgoing streams (CHANNEL_DATA and EXTENDED_DATA 1,
//! read and sent) and two incoming ones (the peer's data, written out),
//! indexed by [`Ext`] rather than kept in parallel fields.
//!
//! The stream holds the fd (owned or lent, see [`ChanFd`]), whether poll
//! said it is readable, whether it reached end of file, and for incoming
//! streams the bytes the sink has not taken yet. Where the bytes go for an
//! in-process stream is the endpoint's business (`endpoint.rs`); this file
//! does the fd side: reads straight into a packet slot, writes with the
//! rest kept pending.

use super::pending::Pending;
use crate::sys::fdio;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// Which of a channel's two streams each way: `Data` is CHANNEL_DATA,
/// `Stderr` is CHANNEL_EXTENDED_DATA (type 1 when we send; any type the
/// peer sends, as OpenSSH treats them all as stderr). RFC 4254 5.2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ext {
    /// CHANNEL_DATA.
    Data = 0,
    /// CHANNEL_EXTENDED_DATA, SSH_EXTENDED_DATA_STDERR.
    Stderr = 1,
}

impl Ext {
    /// Both streams, in the order the loop serves them.
    pub const BOTH: [Ext; 2] = [Ext::Data, Ext::Stderr];

    /// The engine's data type code: None for data, Some(1) for stderr.
    pub fn code(self) -> Option<u32> {
        match self {
            Ext::Data => None,
            Ext::Stderr => Some(1),
        }
    }

    /// The stream an engine data type code goes to.
    pub fn of(code: Option<u32>) -> Ext {
        match code {
            None => Ext::Data,
            Some(_) => Ext::Stderr,
        }
    }

    /// Index into a channel's stream pair.
    pub(crate) fn idx(self) -> usize {
        self as usize
    }
}

/// An fd behind a channel stream: ours (closed when the stream goes), or
/// lent to us (our own stdin/stdout/stderr, never closed).
#[derive(Debug)]
pub enum ChanFd {
    /// Closed when dropped.
    Owned(OwnedFd),
    /// Someone else's; left open.
    Borrowed(RawFd),
}

impl ChanFd {
    /// The fd number.
    pub fn raw(&self) -> RawFd {
        match self {
            ChanFd::Owned(fd) => fd.as_raw_fd(),
            ChanFd::Borrowed(fd) => *fd,
        }
    }
}

/// What a write to a sink did.
pub(crate) enum Wrote {
    /// Took this many bytes (0 when it would block).
    Took(usize),
    /// The reader went away (EPIPE) or the write failed (ENOSPC, EIO...).
    Failed(std::io::Error),
}

/// What reading a source into a packet slot did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Read {
    /// This many bytes (more than 0) were appended.
    Data(usize),
    /// Nothing now; poll (or the endpoint's wake-up) says when.
    Blocked,
    /// No more data will come (end of file, or a read error).
    Eof,
}

/// One direction of a channel's bytes.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    /// The fd; None for an in-process stream.
    fd: Option<ChanFd>,
    /// poll said readable; cleared when a read would block. A new fd
    /// stream waits for poll's word before the first read.
    pub(crate) ready: bool,
    /// End of file reached (outgoing streams).
    pub(crate) eof: bool,
    /// Received bytes the sink has not taken yet (incoming streams).
    pub(crate) pending: Pending,
    /// When pending bytes began: the sink did not take a whole packet
    /// (incoming streams).
    pub(crate) hold_from: Option<Instant>,
    /// When the sink last took bytes (incoming streams).
    pub(crate) took_at: Option<Instant>,
}

impl Stream {
    /// A stream over `fd`.
    pub(crate) fn fd(fd: ChanFd) -> Stream {
        Stream {
            fd: Some(fd),
            ..Stream::default()
        }
    }

    /// A stream whose bytes come from or go to an in-process endpoint.
    pub(crate) fn in_process() -> Stream {
        Stream::default()
    }

    /// The fd number, if the stream has one.
    pub(crate) fn raw_fd(&self) -> Option<RawFd> {
        self.fd.as_ref().map(ChanFd::raw)
    }

    /// Reads up to `max` bytes from the fd appended to `out` (the packet
    /// slot), recording EOF and would-block.
    pub(crate) fn read_fd(&mut self, fd: RawFd, out: &mut Vec<u8>, max: usize) -> Read {
        match fdio::read_append(fd, out, max) {
            Ok(0) => {
                self.eof = true;
                Read::Eof
            }
            Ok(n) => Read::Data(n),
            Err(e) if fdio::would_block(&e) => {
                self.ready = false;
                Read::Blocked
            }
            Err(_) => {
                self.eof = true;
                Read::Eof
            }
        }
    }

    /// Writes `data` to the fd once, without blocking.
    pub(crate) fn write_fd(fd: RawFd, data: &[u8]) -> Wrote {
        match fdio::write_some(fd, data) {
            Ok(n) => Wrote::Took(n),
            Err(e) if fdio::would_block(&e) => Wrote::Took(0),
            Err(e) => Wrote::Failed(e),
        }
    }

    /// The sink of an fd stream took part of a packet and the rest waits:
    /// more received data is better left in the socket than copied behind
    /// it, while the sink goes on taking (some within `IDLE`; a pipe whose
    /// reader keeps up does) and for `cap` from the partial write at most
    /// (a slow sink must not make the other channels, or the connection's
    /// own messages, wait longer). Returns until when.
    pub(crate) fn holding(&self, now: Instant, cap: Duration) -> Option<Instant> {
        const IDLE: Duration = Duration::from_millis(20);
        let until = (self.took_at? + IDLE).min(self.hold_from? + cap);
        (self.fd.is_some() && !self.pending.is_empty() && now < until).then_some(until)
    }

    /// Writes pending bytes to the fd until it would block. Returns the
    /// bytes taken off the pending buffer (written, or dropped on a
    /// failure) and the write's error, if it failed.
    pub(crate) fn drain_fd(&mut self, fd: RawFd) -> (usize, Option<std::io::Error>) {
        let mut taken = 0;
        while !self.pending.is_empty() {
            match fdio::write_parts(fd, self.pending.slices()) {
                Ok(n) => {
                    self.pending.advance(n);
                    taken += n;
                }
                Err(e) if fdio::would_block(&e) => break,
                Err(e) => {
                    // The reader went away (EPIPE), or the sink cannot
                    // take more (ENOSPC): drop what it will never get.
                    taken += self.pending.clear();
                    return (taken, Some(e));
                }
            }
        }
        if taken > 0 {
            self.took_at = Some(Instant::now());
        }
        (taken, None)
    }

    /// Writes every pending byte, waiting for a slow sink (a terminal, a
    /// pipe into a busy program) so no received byte is lost when the
    /// channel closes; stops only if the sink fails.
    /// A write error drops what waits and is returned: the caller decides
    /// whether it lost data the reader wanted (a full disk) or not (EPIPE).
    pub(crate) fn drain_fd_blocking(&mut self, fd: RawFd) -> std::io::Result<()> {
        while !self.pending.is_empty() {
            match fdio::write_parts(fd, self.pending.slices()) {
                Ok(n) => self.pending.advance(n),
                Err(e) if fdio::would_block(&e) => {
                    let mut p = [libc::pollfd {
                        fd,
                        events: libc::POLLOUT,
                        revents: 0,
                    }];
                    let _ = fdio::poll(&mut p, 1000);
                }
                Err(e) => {
                    self.pending.clear();
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Shuts down the write side of a socket sink (the far end sees EOF
    /// while it can still send to us).
    pub(crate) fn shutdown_write(&self) {
        if let Some(fd) = self.raw_fd() {
            fdio::shutdown_write(fd);
        }
    }
}
