//! In the primary's user process U: joined striping connections as its
//! monitor passes them on (stripe_join.rs), each imported into an engine
//! of its own for the striping runtime (server/conn/joined.rs).
//!
//! The monitor checked the secondary's handover against the session id
//! and user its own pre-auth monitor fixed; here the state is decoded
//! strictly again and must name this process's user.

use crate::server::conn::join_source::{JoinSource, JoinedConn, SourceError};
use sluice_proto::crypto::SystemRng;
use sluice_proto::handover::TransportState;
use sluice_proto::{Connection, ServerConfig};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Instant;

/// The user process's end of the monitor's join socket.
pub struct JoinInbox {
    fd: OwnedFd,
    /// The engine configuration a secondary is imported with (host keys
    /// proxied to the monitor, for its re-keys).
    cfg: ServerConfig,
    /// This process's user.
    user: String,
    /// TCPKeepAlive, for each secondary's socket as for the primary's.
    keepalive: bool,
}

impl JoinInbox {
    /// Joined connections for `user`'s session arrive on `fd`; their
    /// sockets get SO_KEEPALIVE when `keepalive` (TCPKeepAlive).
    pub fn new(fd: OwnedFd, cfg: ServerConfig, user: String, keepalive: bool) -> JoinInbox {
        JoinInbox {
            fd,
            cfg,
            user,
            keepalive,
        }
    }
}

impl JoinSource for JoinInbox {
    fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn receive(&mut self) -> Result<Option<JoinedConn>, SourceError> {
        // One connection that cannot be imported is dropped (its client
        // sees it close) and the next is looked at; only a broken socket
        // to the monitor is an error.
        while let Some((state, input, sock)) = super::stripe_join::receive(&self.fd)? {
            match self.import(&state) {
                Ok(conn) => {
                    self.keepalive(&sock);
                    return Ok(Some(JoinedConn { conn, sock, input }));
                }
                Err(e) => crate::log!(Error, "striping: dropped a joined connection: {e}"),
            }
        }
        Ok(None)
    }
}

/// Why a joined connection could not be imported; `Display` follows
/// "striping: dropped a joined connection: " in the log.
#[derive(Debug)]
enum ImportError {
    /// Its transport state does not decode.
    State(sluice_proto::handover::DecodeError),
    /// Its state names a user other than the session's.
    OtherUser,
    /// The engine refused the state.
    Import(sluice_proto::Error),
}

impl std::fmt::Display for ImportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ImportError::State(e) => write!(f, "its state: {e}"),
            ImportError::OtherUser => f.write_str("it names another user"),
            ImportError::Import(e) => write!(f, "importing it: {e}"),
        }
    }
}

impl std::error::Error for ImportError {}

impl JoinInbox {
    fn import(&self, state: &[u8]) -> Result<Connection, ImportError> {
        let state = TransportState::decode(state).map_err(ImportError::State)?;
        // The engine kept the name as the secondary sent it.
        let sent = state
            .user()
            .filter(|u| crate::server::auth::without_style((*u).to_owned()) == self.user)
            .ok_or(ImportError::OtherUser)?
            .to_owned();
        Connection::import_server(
            self.cfg.clone(),
            Box::new(SystemRng),
            state,
            &sent,
            Instant::now(),
        )
        .map_err(ImportError::Import)
    }

    /// TCPKeepAlive on a secondary's socket, as on the primary's.
    fn keepalive(&self, sock: &OwnedFd) {
        // A failure changes nothing.
        let _ = rustix::net::sockopt::set_socket_keepalive(sock, self.keepalive);
    }
}
