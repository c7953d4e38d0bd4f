//! The pump's contract with the client or server above it: [`Handler`]
//! decides what to do with the engine's events and attaches channel ends;
//! the pump does all the I/O. [`PumpError`] says why a run stopped early.

use super::channels::ChannelFds;
use sluice_proto::{Connection, Event};
use std::time::{Duration, Instant};

/// What the client or server does with events; the pump does the I/O.
pub trait Handler {
    /// An event from the engine.
    fn on_event(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        event: Event,
    ) -> Result<(), String>;
    /// Runs once per loop turn (reap children, send exit status, ...).
    fn tick(&mut self, conn: &mut Connection, fds: &mut ChannelFds) -> Result<(), String> {
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

/// Why the pump stopped early.
#[derive(Debug)]
pub enum PumpError {
    /// The engine reported an error (protocol violation, peer disconnect).
    Protocol(sluice_proto::Error),
    /// A system call failed.
    Io(String),
    /// The handler gave up.
    Handler(String),
    /// The peer closed the TCP connection.
    PeerClosed,
    /// The TCP connection was reset (RST): the peer or the path went away.
    PeerReset,
}

impl std::fmt::Display for PumpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PumpError::Protocol(e) => write!(f, "{e}"),
            PumpError::Io(e) | PumpError::Handler(e) => f.write_str(e),
            PumpError::PeerClosed => f.write_str("Connection closed by remote host"),
            PumpError::PeerReset => f.write_str("Connection reset by remote host"),
        }
    }
}
