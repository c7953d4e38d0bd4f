//! Why a striped channel (Streams, client/stripe.rs) failed, and why a
//! secondary connection was dropped; `Display` keeps the logged wording.

use crate::net::stripe::{Failure, TickError};
use sluice_proto::stripe::StripeError;

/// A striped transfer that cannot go on (the run ends with this).
#[derive(Debug)]
pub enum StripingError {
    /// The engine refused a request of ours.
    Engine(sluice_proto::Error),
    /// The server's grant did not decode.
    Grant(StripeError),
    /// The channel's hub could not be made.
    Hub(std::io::Error),
    /// A reader or writer thread could not start.
    Thread(std::io::Error),
    /// The session channel closed while striping was being set up.
    ChannelGone,
    /// The stripe request was answered with no hub set up.
    HubGone,
    /// The server refused the carrier on the primary connection.
    CarrierRefused {
        /// Our number for the striped channel.
        channel: u32,
        /// The server's description.
        description: String,
    },
    /// An acknowledgement on a channel that is not striped.
    AckUnstriped,
    /// An acknowledgement that broke the protocol.
    Ack {
        /// Our number for the channel.
        channel: u32,
        /// What was wrong.
        error: StripeError,
    },
    /// The hub gave up (the peer broke the protocol, or data stranded on a
    /// lost connection).
    Failed(Failure),
    /// The due acknowledgement found the transfer failed.
    Tick(TickError),
    /// The connection ended first: the hub's account of the transfer
    /// (its failure, or what was sent, acknowledged and received).
    Unfinished(String),
    /// The session ended before the striped output was all written.
    Incomplete {
        /// Our number for the channel.
        channel: u32,
        /// Bytes received.
        received: u64,
        /// Bytes the server acknowledged.
        acked: u64,
    },
}

impl std::fmt::Display for StripingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StripingError::Engine(e) => write!(f, "{e}"),
            StripingError::Grant(e) => write!(f, "stripe grant: {e}"),
            StripingError::Hub(e) => write!(f, "striping: {e}"),
            StripingError::Thread(e) => write!(f, "striping: cannot start a thread: {e}"),
            StripingError::ChannelGone => f.write_str("striping: the session channel is gone"),
            StripingError::HubGone => f.write_str("striping: the channel's hub is gone"),
            StripingError::CarrierRefused {
                channel,
                description,
            } => write!(
                f,
                "channel {channel}: the server refused the striped channel's carrier: {description}"
            ),
            StripingError::AckUnstriped => {
                f.write_str("striping: acknowledgement on a channel that is not striped")
            }
            StripingError::Ack { channel, error } => write!(f, "channel {channel}: {error}"),
            StripingError::Failed(e) => write!(f, "{e}"),
            StripingError::Tick(e) => write!(f, "{e}"),
            StripingError::Unfinished(t) => f.write_str(t),
            StripingError::Incomplete {
                channel,
                received,
                acked,
            } => write!(
                f,
                "channel {channel}: striped transfer incomplete: {received} bytes received, {acked} acknowledged by the server"
            ),
        }
    }
}

impl std::error::Error for StripingError {}

impl From<sluice_proto::Error> for StripingError {
    fn from(e: sluice_proto::Error) -> Self {
        StripingError::Engine(e)
    }
}

/// Why a secondary connection was dropped (logged; the transfer goes on
/// over the others).
#[derive(Debug)]
pub enum SecondaryError {
    /// Its server showed another host key than the primary's.
    OtherHostKey {
        /// The secondary's number.
        n: u32,
    },
    /// The engine refused the join or the carrier.
    Engine {
        /// The secondary's number.
        n: u32,
        /// Why.
        error: sluice_proto::Error,
    },
    /// The server refused the join.
    JoinRefused {
        /// The secondary's number.
        n: u32,
    },
    /// The server refused the carrier.
    CarrierRefused {
        /// The secondary's number.
        n: u32,
        /// The server's description.
        description: String,
    },
}

impl std::fmt::Display for SecondaryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecondaryError::OtherHostKey { n } => write!(
                f,
                "secondary {n}: the server showed another host key than the primary's: dropped"
            ),
            SecondaryError::Engine { n, error } => write!(f, "secondary {n}: {error}"),
            SecondaryError::JoinRefused { n } => write!(
                f,
                "secondary {n}: the server refused the join (its sluiced may not admit secondaries yet)"
            ),
            SecondaryError::CarrierRefused { n, description } => {
                write!(f, "secondary {n}: carrier refused: {description}")
            }
        }
    }
}

impl std::error::Error for SecondaryError {}
