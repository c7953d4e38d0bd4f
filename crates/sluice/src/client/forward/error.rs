//! Why a forwarding failed, by kind; `Display` keeps ssh's wording (what
//! `-L`/`-R`/`-D`/`-W`, `-f` and `-O forward` print).

use crate::net::fwdsock::FwdError;
use sluice_proto::Error as EngineError;

/// A forwarding that failed in a way that ends the run or a request.
#[derive(Debug)]
pub enum ForwardError {
    /// The engine refused a request of ours (a channel open or reply, a
    /// global request).
    Engine(EngineError),
    /// A `-L`/`-D` listener failed with ExitOnForwardFailure.
    LocalListen,
    /// A listener asked through the master (`-O forward`) failed.
    AddLocal,
    /// The listen address did not resolve.
    Resolve(std::io::Error),
    /// No listening socket could be bound.
    ListenTcp(FwdError),
    /// A Unix-domain listener could not be bound.
    ListenUnix {
        /// Its path.
        path: String,
        /// Why.
        error: std::io::Error,
    },
    /// A system call on a listener or forwarded socket.
    Io(std::io::Error),
    /// A forwarded socket could not be bound to its channel.
    Socket(FwdError),
    /// The `-W` channel was refused.
    StdioFailed,
    /// A `-R` listener was refused with ExitOnForwardFailure.
    RemoteRefused {
        /// "port N" or "path P".
        listen: String,
    },
    /// `-O cancel` of a remote forward that is not there.
    NotForwarded,
    /// `-O cancel` of a local forward that is not there.
    NotFound,
    /// `-f`: fork(2) failed.
    Fork(std::io::Error),
}

impl std::fmt::Display for ForwardError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ForwardError::Engine(e) => write!(f, "{e}"),
            ForwardError::LocalListen => f.write_str("Could not request local forwarding."),
            ForwardError::AddLocal => f.write_str("Port forwarding failed"),
            ForwardError::Resolve(e) => write!(f, "getaddrinfo: {e}"),
            ForwardError::ListenTcp(e) => write!(f, "channel_setup_fwd_listener_tcpip: {e}"),
            ForwardError::ListenUnix { path, error } => {
                write!(f, "{path}: {}", crate::io_error::describe_io_error(error))
            }
            ForwardError::Io(e) => write!(f, "{e}"),
            ForwardError::Socket(e) => write!(f, "{e}"),
            ForwardError::StdioFailed => f.write_str("stdio forwarding failed"),
            ForwardError::RemoteRefused { listen } => {
                write!(
                    f,
                    "Error: remote port forwarding failed for listen {listen}"
                )
            }
            ForwardError::NotForwarded => f.write_str("port not forwarded"),
            ForwardError::NotFound => f.write_str("port not found"),
            ForwardError::Fork(e) => write!(f, "fork: {e}"),
        }
    }
}

impl std::error::Error for ForwardError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ForwardError::Engine(e) => Some(e),
            ForwardError::ListenUnix { error: e, .. }
            | ForwardError::Io(e)
            | ForwardError::Fork(e) => Some(e),
            _ => None,
        }
    }
}

impl From<EngineError> for ForwardError {
    fn from(e: EngineError) -> Self {
        ForwardError::Engine(e)
    }
}

/// Why the server refused a remote forward asked while running (the
/// text a `-O forward` passenger prints).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteRefusal {
    /// The server said no.
    Failed {
        /// "port N" or "path P".
        listen: String,
    },
    /// The server's reply to `-R 0:...` named no usable port.
    InvalidPort,
}

impl std::fmt::Display for RemoteRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RemoteRefusal::Failed { listen } => {
                write!(f, "remote port forwarding failed for listen {listen}")
            }
            RemoteRefusal::InvalidPort => f.write_str("invalid allocated port"),
        }
    }
}
