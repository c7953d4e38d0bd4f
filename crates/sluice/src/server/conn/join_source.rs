//! What joined secondary connections of a striped session are, and where
//! they come from: the connection handler (conn.rs) watches a source, the
//! monitor's inbox (privsep/join_inbox.rs) is one, joined.rs runs them.

use sluice_proto::Connection;
use std::os::fd::{OwnedFd, RawFd};

/// Why a source broke: its own error, for the log.
pub type SourceError = Box<dyn std::error::Error + Send + Sync>;

/// A secondary connection, joined and imported.
pub struct JoinedConn {
    /// The engine, imported from the secondary's handover.
    pub conn: Connection,
    /// Its TCP socket.
    pub sock: OwnedFd,
    /// Raw bytes from the peer its pre-auth engine had not read.
    pub input: Vec<u8>,
}

/// Where joined connections come from (the monitor's join socket).
pub trait JoinSource {
    /// The descriptor to watch for readability.
    fn fd(&self) -> RawFd;
    /// The next joined connection, if one is waiting (never blocks when
    /// none is); an error means the source is broken and is dropped (and
    /// logged: the source's own error type, boxed, since the monitor's
    /// join errors sit above this module).
    fn receive(&mut self) -> Result<Option<JoinedConn>, SourceError>;
}
