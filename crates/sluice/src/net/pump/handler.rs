//! The pump's contract with the client or server above it: [`Handler`]
//! decides what to do with the engine's events and attaches channel ends;
//! the pump does all the I/O. [`PumpError`] says why a run stopped early.

use super::channels::ChannelFds;
use sluice_proto::{Connection, Event};
use std::time::{Duration, Instant};

/// What the client or server does with events; the pump does the I/O.
pub trait Handler {
    /// Why the handler gave up: its own kinds, handed back to whoever runs
    /// the pump as [`PumpError::Handler`].
    type Error;
    /// An event from the engine.
    fn on_event(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        event: Event,
    ) -> Result<(), Self::Error>;
    /// Runs once per loop turn (reap children, send exit status, ...).
    fn tick(&mut self, conn: &mut Connection, fds: &mut ChannelFds) -> Result<(), Self::Error> {
        let _ = (conn, fds);
        Ok(())
    }
    /// The work is done; the pump flushes output and returns.
    fn finished(&self) -> bool;
    /// How soon `tick` wants to run again while nothing else happens.
    fn tick_interval(&self) -> Option<Duration> {
        None
    }
    /// Extra fds to wake the loop for (listening sockets, a signal pipe,
    /// the terminal), with their poll events; `tick` runs after every
    /// wake-up and does the non-blocking work on them.
    fn watch_fds(&self, out: &mut Vec<libc::pollfd>) {
        let _ = out;
    }
    /// Bytes arrived from the peer (keepalive timers).
    fn input_received(&mut self, now: Instant) {
        let _ = now;
    }
}

/// Why the pump stopped early; `E` is the handler's error type.
#[derive(Debug)]
pub enum PumpError<E = String> {
    /// The engine reported an error (protocol violation, peer disconnect).
    Protocol(sluice_proto::Error),
    /// A system call on the socket failed, or the peer stopped reading.
    Io(PumpIo),
    /// The handler gave up.
    Handler(E),
    /// The peer closed the TCP connection.
    PeerClosed,
    /// The TCP connection was reset (RST): the peer or the path went away.
    PeerReset,
}

/// The pump's own I/O failures.
#[derive(Debug)]
pub enum PumpIo {
    /// poll(2) failed.
    Poll(std::io::Error),
    /// Reading the socket failed (other than a reset).
    Read(std::io::Error),
    /// Writing the socket failed (other than a reset or a closed peer).
    Write(std::io::Error),
    /// More output queued than the peer reads (bytes, and the limit).
    Unread {
        /// Bytes queued and not sent.
        unsent: usize,
        /// The most the pump keeps.
        limit: usize,
    },
}

impl std::fmt::Display for PumpIo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PumpIo::Poll(e) => write!(f, "poll: {e}"),
            PumpIo::Read(e) => write!(f, "read from socket: {e}"),
            PumpIo::Write(e) => write!(f, "write to socket: {e}"),
            PumpIo::Unread { unsent, limit } => write!(
                f,
                "{} MiB of output the peer does not read (limit {} MiB): closing",
                unsent >> 20,
                limit >> 20
            ),
        }
    }
}

impl<E> PumpError<E> {
    /// The same error with the handler's part turned into another type
    /// (the rest of the kinds as they are).
    pub fn map_handler<F>(self, f: impl FnOnce(E) -> F) -> PumpError<F> {
        match self {
            PumpError::Protocol(e) => PumpError::Protocol(e),
            PumpError::Io(e) => PumpError::Io(e),
            PumpError::Handler(e) => PumpError::Handler(f(e)),
            PumpError::PeerClosed => PumpError::PeerClosed,
            PumpError::PeerReset => PumpError::PeerReset,
        }
    }
}

impl<E: std::fmt::Display> std::fmt::Display for PumpError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PumpError::Protocol(e) => write!(f, "{e}"),
            PumpError::Io(e) => write!(f, "{e}"),
            PumpError::Handler(e) => write!(f, "{e}"),
            PumpError::PeerClosed => f.write_str("Connection closed by remote host"),
            PumpError::PeerReset => f.write_str("Connection reset by remote host"),
        }
    }
}
