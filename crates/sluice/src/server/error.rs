//! Why the server's side of a connection gave up: the post-auth handler's
//! error (server/conn.rs), handed back by the pump as
//! `PumpError::Handler`; `log_end` (server/privsep/mod.rs) matches on the
//! kind. `Display` is sshd's log line.

use std::net::SocketAddr;

/// A connection the server gave up on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerError {
    /// ClientAliveCountMax probes went unanswered (sshd logs it at INFO:
    /// a vanished client is routine, not an error).
    ClientTimeout {
        /// The user asked for, if any was.
        user: Option<String>,
        /// The client's address.
        peer: SocketAddr,
    },
    /// UnusedConnectionTimeout passed with no channel open (INFO too).
    InactiveConnection {
        /// The user logged in.
        user: Option<String>,
        /// The client's address.
        peer: SocketAddr,
    },
    /// Anything else that ended the connection (logged at ERROR with the
    /// connection's address): sshd's message.
    Failed(String),
}

/// The connection's handlers check their steps with String messages; at the
/// handler's boundary they are [`ServerError::Failed`].
impl From<String> for ServerError {
    fn from(m: String) -> Self {
        ServerError::Failed(m)
    }
}

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerError::ClientTimeout { user, peer } => write!(
                f,
                "Timeout, client not responding from user {} {} port {}",
                user.as_deref().unwrap_or("(unknown)"),
                peer.ip(),
                peer.port()
            ),
            ServerError::InactiveConnection { user, peer } => write!(
                f,
                "terminating inactive connection from user {} {} port {}",
                user.as_deref().unwrap_or("(unknown)"),
                peer.ip(),
                peer.port()
            ),
            ServerError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ServerError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sshd_wording() {
        let peer: SocketAddr = "192.0.2.1:5555".parse().expect("addr");
        let e = ServerError::ClientTimeout {
            user: Some("bob".into()),
            peer,
        };
        assert_eq!(
            e.to_string(),
            "Timeout, client not responding from user bob 192.0.2.1 port 5555"
        );
        let e = ServerError::ClientTimeout { user: None, peer };
        assert!(e.to_string().contains("user (unknown) 192.0.2.1"));
        let e = ServerError::InactiveConnection {
            user: Some("bob".into()),
            peer,
        };
        assert_eq!(
            e.to_string(),
            "terminating inactive connection from user bob 192.0.2.1 port 5555"
        );
    }
}
