//! Why a client run failed, by kind; `Display` gives the line `sluice`
//! prints, worded as OpenSSH's `ssh` words it (tests compare the two).

pub use crate::client::setting_error::SettingError;
use crate::config::error::ConfigError;
use crate::net::pump::PumpError;

/// A client run that ended without a remote exit status.
#[derive(Debug)]
pub enum ClientError {
    /// A bad setting: ssh_config or a command-line value, or options that
    /// cannot go together ("Cannot execute command-line and remote command.").
    Config(SettingError),
    /// An ssh_config file (or `-o` option) ssh would refuse, with its line.
    ConfigFile(ConfigError),
    /// The server could not be reached: name resolution, connect(2), the
    /// ProxyCommand. Messages start with `ssh:` as ssh's; `sluice:` is shown.
    Connect(ConnectError),
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
            ClientError::Config(e) => write!(f, "{e}"),
            ClientError::Session(e) => write!(f, "{e}"),
            ClientError::ConfigFile(e) => write!(f, "{e}"),
            ClientError::Connect(e) => f.write_str(&e.to_string().replacen("ssh:", "sluice:", 1)),
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

/// Why the server's host key was refused; `Display` is ssh's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostKeyError {
    /// Revoked (known_hosts `@revoked`, RevokedHostKeys, a revoked CA).
    Revoked {
        /// The key type as shown (`ED25519`).
        shown: String,
        /// The host as known_hosts names it.
        name: String,
    },
    /// known_hosts lists another key for the host.
    Changed {
        /// The host as known_hosts names it.
        name: String,
        /// The key type as shown.
        shown: String,
        /// The key's SHA256 fingerprint.
        fp: String,
        /// The file with the other key.
        file: std::path::PathBuf,
        /// Its line.
        line: usize,
    },
    /// No key known and StrictHostKeyChecking yes.
    UnknownStrict {
        /// The key type as shown.
        shown: String,
        /// The host as known_hosts names it.
        name: String,
    },
    /// No key known and nobody to ask (BatchMode), or the user said no.
    NotVerified,
    /// CheckHostIP: the address has another key and checking is strict.
    AddressChangedStrict,
}

impl std::fmt::Display for HostKeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostKeyError::Revoked { shown, name } => write!(
                f,
                "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n@       WARNING: REVOKED HOST KEY DETECTED!               @\n@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\nThe {shown} host key for {name} is marked as revoked.\nHost key verification failed."
            ),
            HostKeyError::Changed {
                name,
                shown,
                fp,
                file,
                line,
            } => f.write_str(&crate::keys::known_hosts::changed_warning(
                name, shown, fp, file, *line,
            )),
            HostKeyError::UnknownStrict { shown, name } => write!(
                f,
                "No {shown} host key is known for {name} and you have requested strict checking.\nHost key verification failed."
            ),
            HostKeyError::NotVerified => f.write_str("Host key verification failed."),
            HostKeyError::AddressChangedStrict => f.write_str(
                "Exiting, you have requested strict checking.\nHost key verification failed.",
            ),
        }
    }
}

impl std::error::Error for HostKeyError {}

/// Why the server could not be reached; `Display` as ssh's (`ssh: ...`).
#[derive(Debug)]
pub enum ConnectError {
    /// The host name did not resolve.
    Resolve {
        /// As given.
        host: String,
        /// The resolver's reason.
        error: std::io::Error,
    },
    /// It resolved, but to no address of the family asked for (-4/-6).
    NoAddress {
        /// As given.
        host: String,
    },
    /// Every address refused or timed out; the last one's reason.
    Connect {
        /// As given.
        host: String,
        /// The port.
        port: u16,
        /// The last attempt's reason.
        error: std::io::Error,
    },
    /// BindAddress / BindInterface could not be used.
    Bind(crate::net::local_addr::LocalAddrError),
    /// A system call on the new socket (non-blocking mode, dup).
    Socket {
        /// Which call: "sluice: socket", "dup", "proxy socket", "socketpair", "fork".
        what: &'static str,
        /// Why.
        error: std::io::Error,
    },
    /// The ProxyCommand could not be started.
    ProxySpawn {
        /// The shell that runs it.
        shell: String,
        /// Why.
        error: std::io::Error,
    },
    /// The ProxyCommand's process came without its pipes.
    ProxyPipes,
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::Resolve { host, error } => {
                write!(f, "ssh: Could not resolve hostname {host}: {error}")
            }
            ConnectError::NoAddress { host } => write!(
                f,
                "ssh: Could not resolve hostname {host}: no address of the requested family"
            ),
            ConnectError::Connect { host, port, error } => write!(
                f,
                "ssh: connect to host {host} port {port}: {}",
                crate::io_error::describe_io_error(error)
            ),
            ConnectError::Bind(e) => write!(f, "ssh: {e}"),
            ConnectError::Socket { what, error } => write!(f, "{what}: {error}"),
            ConnectError::ProxySpawn { shell, error } => {
                write!(f, "proxy command {shell}: {error}")
            }
            ConnectError::ProxyPipes => f.write_str("proxy command: no pipes"),
        }
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConnectError::Resolve { error, .. }
            | ConnectError::Connect { error, .. }
            | ConnectError::Socket { error, .. }
            | ConnectError::ProxySpawn { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// Why the client's side of a connection gave up (the session handler's
/// error, client/session.rs), by what failed; each carries ssh's message.
#[derive(Debug)]
pub enum SessionError {
    /// The server's host key was refused (known_hosts, StrictHostKeyChecking,
    /// a revoked key, a refused certificate).
    HostKey(HostKeyError),
    /// Authentication ended without success.
    Auth(crate::client::auth::AuthError),
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
    Timeout(crate::client::keepalive::Timeout),
    /// A forwarding (-L, -R, -D, -W, the agent) failed with
    /// ExitOnForwardFailure, or -f could not go to the background.
    Forwarding(crate::client::forward::ForwardError),
    /// Streams: the striped channel failed.
    Stripe(crate::client::stripe_error::StripingError),
    /// Connection sharing: the master's passengers or ControlPersist.
    Mux(crate::client::mux_error::MuxError),
    /// The local terminal (-t): raw mode, the pty request.
    Tty(crate::client::tty::TtyError),
    /// UpdateHostKeys: the server's hostkeys message ended the connection.
    HostKeys(crate::client::update_host_keys::HostKeysError),
    /// The engine refused a request of ours.
    Engine(sluice_proto::Error),
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionError::HostKey(e) => write!(f, "{e}"),
            SessionError::Mux(e) => write!(f, "{e}"),
            SessionError::ChannelOpenFailed { description } => {
                write!(f, "channel 0: open failed: {description}")
            }
            SessionError::RequestFailed { what } => {
                write!(f, "{what} request failed on channel 0")
            }
            SessionError::Engine(e) => write!(f, "{e}"),
            SessionError::Forwarding(e) => write!(f, "{e}"),
            SessionError::Tty(e) => write!(f, "{e}"),
            SessionError::HostKeys(e) => write!(f, "{e}"),
            SessionError::Timeout(e) => write!(f, "{e}"),
            SessionError::Auth(e) => write!(f, "{e}"),
            SessionError::Stripe(e) => write!(f, "{e}"),
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

impl From<SettingError> for ClientError {
    fn from(e: SettingError) -> Self {
        ClientError::Config(e)
    }
}

/// config/'s value errors are settings refused (through [`SettingError`]).
macro_rules! setting {
    ($($ty:ty),* $(,)?) => {$(
        impl From<$ty> for ClientError {
            fn from(e: $ty) -> Self {
                ClientError::Config(SettingError::from(e))
            }
        }
    )*};
}

setting! {
    crate::config::error::ValueError,
    crate::config::algorithms::AlgorithmError,
    crate::config::ssh::tokens::ExpandError,
    crate::config::ssh::ResolveError,
    crate::config::ssh::ipqos::BadIpQos,
    crate::config::ssh::jump::InvalidProxyJump,
    crate::config::ssh::dump::DumpError,
    crate::config::ssh::limits::Refused,
}
