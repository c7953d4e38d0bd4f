//! Why the server's side of a connection gave up: the post-auth handler's
//! error (server/conn.rs), handed back by the pump as
//! `PumpError::Handler`; `log_end` (server/privsep/mod.rs) matches on the
//! kind. `Display` is sshd's log line.

use crate::server::forward::ForwardError;
use crate::server::privsep::error::PrivsepError;
use sluice_proto::stripe::StripeError;
use std::net::SocketAddr;

/// A connection the server gave up on.
#[derive(Debug)]
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
    /// The privsep link to the monitor failed (the pre-auth child's
    /// handler).
    Privsep(PrivsepError),
    /// A forwarding step failed.
    Forward(ForwardError),
    /// A striping channel request broke the protocol.
    Stripe(StripeRequestError),
    /// The engine refused what the handler asked of it.
    Protocol(sluice_proto::Error),
    /// A striped channel failed (net/stripe): logged at ERROR with the
    /// connection's address.
    StripeFailed(crate::net::stripe::TickError),
}

impl From<PrivsepError> for ServerError {
    fn from(e: PrivsepError) -> Self {
        ServerError::Privsep(e)
    }
}

impl From<ForwardError> for ServerError {
    fn from(e: ForwardError) -> Self {
        ServerError::Forward(e)
    }
}

impl From<StripeRequestError> for ServerError {
    fn from(e: StripeRequestError) -> Self {
        ServerError::Stripe(e)
    }
}

impl From<sluice_proto::Error> for ServerError {
    fn from(e: sluice_proto::Error) -> Self {
        ServerError::Protocol(e)
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
            ServerError::Privsep(e) => write!(f, "{e}"),
            ServerError::Forward(e) => write!(f, "{e}"),
            ServerError::Stripe(e) => write!(f, "{e}"),
            ServerError::Protocol(e) => write!(f, "{e}"),
            ServerError::StripeFailed(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ServerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServerError::Privsep(e) => Some(e),
            ServerError::Forward(e) => Some(e),
            ServerError::Stripe(e) => Some(e),
            ServerError::Protocol(e) => Some(e),
            _ => None,
        }
    }
}

/// Why a striping channel request (server/conn/stripe.rs) ends the
/// connection; the client was disconnected with the same text.
#[derive(Debug)]
pub enum StripeRequestError {
    /// A bad acknowledgement on a striped channel.
    Ack {
        /// The channel's number.
        channel: u32,
        /// What was wrong with it.
        err: StripeError,
    },
    /// An acknowledgement on a channel that is not striped.
    NotStriped,
    /// A malformed stripe request.
    Request(StripeError),
    /// The engine refused the reply.
    Protocol(sluice_proto::Error),
}

impl std::fmt::Display for StripeRequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StripeRequestError::Ack { channel, err } => write!(f, "channel {channel}: {err}"),
            StripeRequestError::NotStriped => {
                f.write_str("striping: acknowledgement on a channel that is not striped")
            }
            StripeRequestError::Request(e) => write!(f, "{e}"),
            StripeRequestError::Protocol(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for StripeRequestError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StripeRequestError::Ack { err, .. } | StripeRequestError::Request(err) => Some(err),
            StripeRequestError::Protocol(e) => Some(e),
            StripeRequestError::NotStriped => None,
        }
    }
}

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

    #[test]
    fn sub_errors_keep_their_kind_and_wording() {
        let e = ServerError::from(StripeRequestError::NotStriped);
        assert!(matches!(
            e,
            ServerError::Stripe(StripeRequestError::NotStriped)
        ));
        assert_eq!(
            e.to_string(),
            "striping: acknowledgement on a channel that is not striped"
        );
        let e = ServerError::from(PrivsepError::UnexpectedMessage);
        assert!(matches!(
            e,
            ServerError::Privsep(PrivsepError::UnexpectedMessage)
        ));
        assert_eq!(e.to_string(), "unexpected message from the monitor");
        let e = ServerError::from(ForwardError::Channel(
            crate::net::fwdsock::FwdError::Listen { port: 22 },
        ));
        assert!(matches!(e, ServerError::Forward(ForwardError::Channel(_))));
        assert_eq!(e.to_string(), "cannot listen to port: 22");
    }
}
