//! Why sluiced's forwarding failed: the errors that end the connection
//! (ForwardError) and the refusals of a listener the client asked for
//! (ListenError), worded as sshd logs them.

use crate::server::forward_policy as policy;

/// Why a forwarding step could not go on: the connection ends with it.
#[derive(Debug)]
pub enum ForwardError {
    /// The engine refused a channel message (a reject, a confirmation).
    Protocol(sluice_proto::Error),
    /// A forwarding channel's socket could not be joined to its channel.
    Channel(crate::net::fwdsock::FwdError),
}

impl std::fmt::Display for ForwardError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ForwardError::Protocol(e) => write!(f, "{e}"),
            ForwardError::Channel(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ForwardError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ForwardError::Protocol(e) => Some(e),
            ForwardError::Channel(e) => Some(e),
        }
    }
}

impl From<sluice_proto::Error> for ForwardError {
    fn from(e: sluice_proto::Error) -> Self {
        ForwardError::Protocol(e)
    }
}

/// Why a tcpip-forward or streamlocal-forward request was refused;
/// `Display` is the line logged at INFO.
#[derive(Debug)]
pub enum ListenError {
    /// Before authentication.
    NotAuthenticated,
    /// The connection holds as many listeners as it may already.
    TooManyListeners {
        /// The most it may hold.
        max: usize,
    },
    /// The request's data does not parse.
    Malformed {
        /// streamlocal-forward (true) or tcpip-forward.
        unix: bool,
    },
    /// Policy refuses a streamlocal remote forward.
    StreamlocalRefused {
        /// The socket's path.
        path: String,
        /// The policy's reason.
        why: policy::Refusal,
    },
    /// The socket could not be bound.
    StreamlocalBind {
        /// The socket's path.
        path: String,
        /// Why.
        err: std::io::Error,
    },
    /// A port past 65535.
    BadPort(u32),
    /// Port 0 without want-reply: the client could never learn the port.
    PortZeroNoReply,
    /// Policy refuses a remote port forward.
    Refused {
        /// The listen host as asked.
        host: String,
        /// The port.
        port: u16,
        /// The policy's reason.
        why: policy::Refusal,
    },
    /// The listen host did not resolve.
    Resolve {
        /// The listen host as asked.
        host: String,
        /// Why.
        err: std::io::Error,
    },
    /// AddressFamily allows none of the host's addresses.
    NoAddressAllowed {
        /// The listen host as asked.
        host: String,
        /// AddressFamily's value.
        family: String,
    },
    /// Listening failed (net/fwdsock.rs's text).
    Listen {
        /// The port.
        port: u16,
        /// Why.
        why: String,
    },
}

impl std::fmt::Display for ListenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListenError::NotAuthenticated => f.write_str("forward request before authentication"),
            ListenError::TooManyListeners { max } => {
                write!(f, "refused remote forward: more than {max} listeners")
            }
            ListenError::Malformed { unix: true } => {
                f.write_str("malformed streamlocal-forward request")
            }
            ListenError::Malformed { unix: false } => {
                f.write_str("malformed tcpip-forward request")
            }
            ListenError::StreamlocalRefused { path, why } => {
                write!(f, "refused streamlocal remote forward: path {path}: {why}")
            }
            ListenError::StreamlocalBind { path, err } => {
                write!(f, "streamlocal remote forward: bind {path}: {err}")
            }
            ListenError::BadPort(port) => write!(f, "tcpip-forward: bad port {port}"),
            ListenError::PortZeroNoReply => {
                f.write_str("refused remote port forward: port 0 without want-reply")
            }
            ListenError::Refused { host, port, why } => write!(
                f,
                "refused remote port forward: listen host {host} port {port}: {why}"
            ),
            ListenError::Resolve { host, err } => write!(f, "remote forward: {host}: {err}"),
            ListenError::NoAddressAllowed { host, family } => write!(
                f,
                "remote forward: {host}: no address allowed by AddressFamily {family}"
            ),
            ListenError::Listen { port, why } => {
                write!(f, "remote forward for listen port {port}: {why}")
            }
        }
    }
}

impl std::error::Error for ListenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ListenError::StreamlocalBind { err, .. } | ListenError::Resolve { err, .. } => {
                Some(err)
            }
            _ => None,
        }
    }
}
