//! What one client run does after authentication ([`SessionPlan`]) and
//! how it judges the host key, apart from the session that carries it out
//! (client/session.rs), so that what only reads the plan (a passenger,
//! striping) does not depend on the session.

use crate::client::tty::TtyPlan;

/// The server's verdict on the host key, given by the runtime.
pub type HostKeyCheck =
    Box<dyn FnMut(&str, &[u8]) -> Result<(), crate::client::error::HostKeyError>>;

/// What the session does after authentication.
pub struct SessionPlan {
    /// The remote command; None asks for a shell.
    pub command: Option<Vec<u8>>,
    /// The command names a subsystem (`-s`).
    pub subsystem: bool,
    /// Environment to send (SendEnv / SetEnv).
    pub env: Vec<(String, Vec<u8>)>,
    /// Wire the channel to fds 0, 1, 2.
    pub stdio: bool,
    /// HPN-SSH's NoneSwitch: after authentication, re-key asking for the
    /// NONE cipher, and with `Some(true)` the NONE MAC too. The runtime
    /// leaves it None for interactive sessions.
    pub none_switch: Option<bool>,
    /// RemoteRcvBuf, RemoteSndBuf: socket buffers (bytes, 0 = don't ask)
    /// the server is asked to set for this connection after authentication.
    pub remote_bufs: (u64, u64),
    /// Ask for a pty (client/tty.rs decides).
    pub tty: Option<TtyPlan>,
    /// ForwardAgent: asked for on the session, agent channels bridged.
    pub agent: crate::client::agent_forward::AgentForward,
    /// Port forwarding (-L, -R, -D, -W; client/forward.rs).
    pub forwards: crate::client::forward::ForwardPlan,
    /// No session channel (-N, -W).
    pub no_session: bool,
    /// -f: go to the background after authentication (after the remote
    /// forwards are confirmed with ExitOnForwardFailure).
    pub fork_after_auth: bool,
    /// The session channel's in-process end (the sftp and scp clients)
    /// instead of fds 0-2; `stdio` is false with it.
    pub channel_end: Option<Box<dyn crate::net::pump::ChannelEndpoint>>,
    /// LocalCommand (PermitLocalCommand yes), run once authenticated.
    pub local_command: Option<String>,
}

impl SessionPlan {
    /// A session running `command` (None: a shell) on the channel wired to
    /// fds 0, 1 and 2, without a pty, forwarding or environment.
    pub fn exec(command: Option<Vec<u8>>) -> Self {
        SessionPlan {
            command,
            subsystem: false,
            env: Vec::new(),
            stdio: true,
            none_switch: None,
            remote_bufs: (0, 0),
            tty: None,
            agent: Default::default(),
            forwards: Default::default(),
            no_session: false,
            fork_after_auth: false,
            channel_end: None,
            local_command: None,
        }
    }
}
