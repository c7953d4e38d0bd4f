//! Why a client run failed, by kind; `Display` gives the line `sluice`
//! prints, worded as OpenSSH's `ssh` words it (tests compare the two).

use crate::config::error::ConfigError;
use crate::net::pump::PumpError;

/// A client run that ended without a remote exit status.
#[derive(Debug)]
pub enum ClientError {
    /// A bad setting: ssh_config or a command-line value, or options that
    /// cannot go together ("Cannot execute command-line and remote command.").
    Config(String),
    /// An ssh_config file (or `-o` option) ssh would refuse, with its line.
    ConfigFile(ConfigError),
    /// The server could not be reached: name resolution, connect(2), the
    /// ProxyCommand. Messages start with `ssh:` as ssh's; `sluice:` is shown.
    Connect(String),
    /// Our side gave up on an established connection: host key refused,
    /// authentication failed, a request refused, ServerAlive timeout.
    Session(SessionError),
    /// The connection failed under us: protocol violation, the server's
    /// disconnect, TCP closed, a system call.
    Connection(PumpError),
}

impl ClientError {
    /// The process exit code for this error: 255, as ssh's.
    pub fn exit_code(&self) -> i32 {
        255
    }
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Config(m) => f.write_str(m),
            ClientError::Session(e) => write!(f, "{e}"),
            ClientError::ConfigFile(e) => write!(f, "{e}"),
            ClientError::Connect(m) => f.write_str(&m.replacen("ssh:", "sluice:", 1)),
            ClientError::Connection(PumpError::Protocol(
                sluice_proto::Error::PeerDisconnected { description, .. },
            )) => write!(f, "Received disconnect from remote host: {description}"),
            // As ssh's packet.c (its "Bad packet length %u." then the fatal
            // error), for a length over the maximum or not in whole blocks.
            ClientError::Connection(PumpError::Protocol(sluice_proto::Error::Protocol(
                sluice_proto::Violation::BadPacketLength(n),
            ))) => write!(f, "Bad packet length {n}.\nsluice: Connection corrupted"),
            ClientError::Connection(PumpError::PeerClosed) => {
                f.write_str("Connection closed by remote host")
            }
            ClientError::Connection(PumpError::PeerReset) => {
                f.write_str("Connection reset by remote host")
            }
            ClientError::Connection(e) => write!(f, "sluice: {e}"),
        }
    }
}

impl std::error::Error for ClientError {}

/// Why the client's side of a connection gave up (the session handler's
/// error, client/session.rs), by what failed; each carries ssh's message.
#[derive(Debug)]
pub enum SessionError {
    /// The server's host key was refused (known_hosts, StrictHostKeyChecking,
    /// a revoked key, a refused certificate).
    HostKey(String),
    /// Authentication ended without success.
    Auth(String),
    /// The server refused to open the session channel.
    ChannelOpenFailed {
        /// The server's description.
        description: String,
    },
    /// The session's exec, subsystem or shell request was refused.
    RequestFailed {
        /// "exec", "subsystem" or "shell".
        what: &'static str,
    },
    /// ServerAliveCountMax probes went unanswered, or ConnectTimeout passed
    /// before the server's banner.
    Timeout(String),
    /// A forwarding (-L, -R, -D, -W, the agent) failed with
    /// ExitOnForwardFailure, or -f could not go to the background.
    Forwarding(String),
    /// Streams: the striped channel failed.
    Stripe(String),
    /// Connection sharing: the master's passengers or ControlPersist.
    Mux(String),
    /// The local terminal (-t): raw mode, the pty request.
    Tty(String),
    /// UpdateHostKeys: the server's hostkeys message ended the connection.
    HostKeys(String),
    /// The engine refused a request of ours.
    Engine(sluice_proto::Error),
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionError::HostKey(m)
            | SessionError::Auth(m)
            | SessionError::Timeout(m)
            | SessionError::Forwarding(m)
            | SessionError::Stripe(m)
            | SessionError::Mux(m)
            | SessionError::Tty(m)
            | SessionError::HostKeys(m) => f.write_str(m),
            SessionError::ChannelOpenFailed { description } => {
                write!(f, "channel 0: open failed: {description}")
            }
            SessionError::RequestFailed { what } => {
                write!(f, "{what} request failed on channel 0")
            }
            SessionError::Engine(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SessionError {}

impl From<sluice_proto::Error> for SessionError {
    fn from(e: sluice_proto::Error) -> Self {
        SessionError::Engine(e)
    }
}

impl From<ConfigError> for ClientError {
    fn from(e: ConfigError) -> Self {
        ClientError::ConfigFile(e)
    }
}

/// Settings are checked with String errors in config/ (ssh's messages);
/// at the client's boundary they become [`ClientError::Config`].
impl From<String> for ClientError {
    fn from(m: String) -> Self {
        ClientError::Config(m)
    }
}
