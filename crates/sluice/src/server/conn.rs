//! One accepted connection inside its own process: the server's event
//! handling. Public-key decisions are in `conn/publickey.rs`, session
//! requests and the commands they run in `conn/requests.rs`; passwords in
//! `server/auth.rs`, forwarding in `server/forward.rs`.
//!
//! Under privilege separation (server/privsep/) this runs in the post-auth
//! process, as the user already: commands, ptys, forwarding sockets and
//! signals all carry the user's credentials. Run as root (the handler is
//! also usable in one process), each command drops to the user's uid/gid
//! in the child before it runs anything of theirs.

use crate::config::sshd::ServerConfig as Sshd;
use crate::keys::authorized_keys::KeyOptions;
use crate::log;
use crate::net::pump::{ChannelFds, Handler};
use crate::server::agent_forward::ServerAgent;
use crate::server::auth::ServerAuth;
use crate::server::child::SessionChild;
use crate::server::error::ServerError;
use crate::server::idle::Idle;
use crate::server::keepalive::ClientAlive;
use crate::server::pty::Pty;
use crate::server::session::{self, ExitResult, UserInfo};
use sluice_proto::msg::ChannelRequestKind;
use sluice_proto::{ChannelId, Connection, Event};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

mod carrier;
mod events;
mod hostkeys;
pub mod join_source;
pub mod joined;
mod path_info;
pub(crate) mod publickey;
mod requests;
pub(crate) mod sk_policy;
pub(crate) mod sockbuf;
mod stripe;

/// RFC 4254 5.1 reason codes.
const ADMINISTRATIVELY_PROHIBITED: u32 = 1;
const UNKNOWN_CHANNEL_TYPE: u32 = 3;

/// A session channel and the command behind it.
#[derive(Default)]
struct Session {
    env: Vec<(OsString, OsString)>,
    /// The command, signalled only while it exists (server/child.rs).
    child: Option<SessionChild>,
    exit: Option<ExitResult>,
    done: bool,
    /// The pty from a pty-req; the shell or command runs on it.
    pty: Option<Pty>,
    /// `internal-sftp` runs on the channel in this process (server/sftp).
    sftp: Option<crate::server::sftp::SftpExit>,
    /// The channel is striped (`stripe-v00@sluice.dev`): its data goes
    /// through this hub and the carriers (server/conn/stripe.rs).
    stripe: Option<std::sync::Arc<crate::net::stripe::Hub>>,
    /// Its stripe request was refused: the client's first acknowledgement,
    /// sent behind the request (PROTOCOL.md), is dropped.
    stripe_refused: bool,
    /// Closed for idleness (ChannelTimeout): its command is left running,
    /// as sshd leaves it, rather than hung up at the channel's close.
    abandoned: bool,
}

/// Server-side event handling for one connection.
pub struct ServerConn {
    /// The configuration in force for this connection (Match blocks applied once the user is known).
    cfg: Sshd,
    /// The startup configuration, re-evaluated for each user asked for.
    base: Sshd,
    /// The user `cfg` was computed for.
    match_user: Option<String>,
    /// ClientAliveInterval probes.
    alive: ClientAlive,
    /// ChannelTimeout and UnusedConnectionTimeout (server/idle.rs).
    idle: Idle,
    /// Commands of sessions closed for idleness, reaped when they end.
    orphans: Vec<SessionChild>,
    peer: SocketAddr,
    local: SocketAddr,
    user: Option<UserInfo>,
    key_options: Option<KeyOptions>,
    sessions: BTreeMap<ChannelId, Session>,
    /// Called once when authentication succeeds (MaxStartups accounting).
    on_auth: Option<Box<dyn FnOnce()>>,
    /// The connection's TCP socket, for the client's RemoteRcvBuf request.
    sock: Option<std::os::fd::RawFd>,
    /// What the client's RemoteRcvBuf / RemoteSndBuf asked for and got
    /// (reported by `path-info-v00@sluice.dev`).
    remote_bufs: Option<(u64, u64)>,
    /// Login policy, password and keyboard-interactive checks.
    auth: ServerAuth,
    /// Agent forwarding: the listening socket and its channels.
    agent: ServerAgent,
    /// The client sent no-more-sessions@openssh.com.
    no_more_sessions: bool,
    /// Port forwarding (server/forward.rs).
    fwd: crate::server::forward::ServerForward,
    /// LoginGraceTime even when a call blocks the loop (server/grace.rs).
    grace: Option<crate::server::grace::GraceTimer>,
    /// Under privilege separation, what the user's process cannot do
    /// itself goes to the monitor (RemoteRcvBuf past the sysctl cap, ptys).
    monitor: Option<Box<dyn MonitorRequests>>,
    /// ExposeAuthInfo's text from the monitor, and its file once a session
    /// needed it (server/auth_info.rs).
    auth_info: String,
    /// PAM's environment for sessions (UsePAM; set by the monitor).
    pam_env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    auth_info_file: Option<crate::server::auth_info::AuthInfoFile>,
    /// The host keys' public blobs, in the monitor's order: announced
    /// after authentication, proved on request (server/conn/hostkeys.rs).
    host_keys: Vec<Vec<u8>>,
    /// A striped session's joined connections arrive here (conn/joined.rs).
    joins: Option<Box<dyn join_source::JoinSource>>,
    /// This connection, for "one carrier per connection" (net/stripe).
    stripe_key: crate::net::stripe::ConnKey,
}

/// What the user's process asks the privsep monitor for (privsep/postauth.rs).
pub trait MonitorRequests {
    /// RemoteRcvBuf / RemoteSndBuf: the sizes in force, or none.
    fn sockbuf(&mut self, rcvbuf: u64, sndbuf: u64) -> Option<(u64, u64)>;
    /// A pty whose slave the monitor already gave to the user.
    fn pty(&mut self) -> Result<crate::server::pty::PtyPair, crate::server::pty::PtyError>;
    /// Host key `index`'s `hostkeys-prove-00@openssh.com` signature.
    fn prove_host_key(
        &mut self,
        index: u32,
        alg: &str,
    ) -> Result<Vec<u8>, crate::server::privsep::error::PrivsepError>;
    /// A striping grant for `wanted` secondaries: the REQUEST_SUCCESS
    /// data, or none (declined).
    fn stripe_grant(&mut self, wanted: u32) -> Option<zeroize::Zeroizing<Vec<u8>>>;
    /// The session on pty `tty` (one [`MonitorRequests::pty`] gave) ended.
    fn pty_released(&mut self, tty: &str);
}

impl ServerConn {
    /// Handles a connection from `peer` to `local` under `cfg`.
    pub fn new(
        cfg: Sshd,
        peer: SocketAddr,
        local: SocketAddr,
        on_auth: Option<Box<dyn FnOnce()>>,
    ) -> Self {
        let grace =
            crate::server::grace::arm_for_connection(cfg.login_grace_time, peer.ip(), peer.port());
        Self::build(cfg, peer, local, on_auth, grace)
    }

    /// The post-auth process of privilege separation: `user` authenticated
    /// in the monitor, which vouches for it and for `key_options`; `cfg` is
    /// the startup configuration, `matched` the same with `user`'s Match
    /// blocks applied (by the caller, while `Match Group` can still read
    /// /etc/group: before a ChrootDirectory hides it).
    /// Call [`ServerConn::authenticated_on`] with the imported engine next.
    pub fn authenticated(
        cfg: Sshd,
        matched: Sshd,
        peer: SocketAddr,
        local: SocketAddr,
        user: UserInfo,
        key_options: Option<KeyOptions>,
        monitor: Box<dyn MonitorRequests>,
    ) -> Self {
        let mut s = Self::build(cfg, peer, local, None, None);
        s.cfg = matched;
        s.match_user = Some(user.name.clone());
        s.user = Some(user);
        s.key_options = key_options;
        s.monitor = Some(monitor);
        s
    }

    /// ExposeAuthInfo's text, as the monitor recorded it (empty: none).
    pub fn set_auth_info(&mut self, text: String) {
        self.auth_info = text;
    }

    /// PAM's environment, from the monitor's open session (UsePAM).
    pub fn set_pam_env(&mut self, env: Vec<(std::ffi::OsString, std::ffi::OsString)>) {
        self.pam_env = env;
    }

    /// SSH_USER_AUTH's file, made at the first session that needs it.
    fn auth_info_path(&mut self) -> Option<std::path::PathBuf> {
        if !self.cfg.expose_auth_info || self.auth_info.is_empty() {
            return None;
        }
        if self.auth_info_file.is_none() {
            match crate::server::auth_info::AuthInfoFile::create(&self.auth_info) {
                Ok(f) => self.auth_info_file = Some(f),
                Err(e) => {
                    log!(Error, "ExposeAuthInfo: creating its file in /tmp: {e}");
                    self.auth_info.clear(); // said once
                    return None;
                }
            }
        }
        self.auth_info_file.as_ref().map(|f| f.path().to_path_buf())
    }

    /// The host keys' public blobs, in the monitor's order.
    pub fn set_host_keys(&mut self, blobs: Vec<Vec<u8>>) {
        self.host_keys = blobs;
    }

    /// What authentication success starts, for an engine imported already
    /// authenticated (no `Authenticated` event comes from it); the host
    /// keys are announced (OpenSSH's `hostkeys-00@openssh.com`).
    pub fn authenticated_on(&mut self, conn: &mut Connection) {
        self.on_authenticated(conn);
        self.announce_host_keys(conn);
    }

    fn build(
        cfg: Sshd,
        peer: SocketAddr,
        local: SocketAddr,
        on_auth: Option<Box<dyn FnOnce()>>,
        grace: Option<crate::server::grace::GraceTimer>,
    ) -> Self {
        ServerConn {
            monitor: None,
            auth_info: String::new(),
            pam_env: Vec::new(),
            auth_info_file: None,
            host_keys: Vec::new(),
            joins: None,
            grace,
            base: cfg.clone(),
            match_user: None,
            alive: ClientAlive::new(0, 0),
            idle: Idle::default(),
            orphans: Vec::new(),
            cfg,
            peer,
            local,
            user: None,
            key_options: None,
            sessions: BTreeMap::new(),
            on_auth,
            sock: None,
            remote_bufs: None,
            auth: ServerAuth::new(peer),
            agent: ServerAgent::default(),
            no_more_sessions: false,
            fwd: Default::default(),
            stripe_key: crate::net::stripe::ConnKey::next(),
        }
    }
}

impl ServerConn {
    /// The first request for a user (or for another user) picks the Match
    /// blocks that apply; the engine learns the user's auth policy.
    fn user_config(&mut self, conn: &mut Connection, user: &str) {
        if self.match_user.as_deref() == Some(user) {
            return;
        }
        let ctx = crate::config::sshd::MatchContext::connection(user, self.peer, self.local);
        self.cfg = self.base.for_connection(&ctx);
        self.match_user = Some(user.to_owned());
        let banner = self
            .cfg
            .banner
            .as_ref()
            .and_then(|p| crate::server::auth::read_banner(p));
        conn.set_auth_policy(self.cfg.auth_methods(), self.cfg.max_auth_tries, banner);
    }

    /// Authentication succeeded: no more grace timer, keepalives start, the
    /// listener learns (MaxStartups), `none` may be offered on re-keys.
    fn on_authenticated(&mut self, conn: &mut Connection) {
        self.grace = None;
        self.alive.start(
            self.cfg.client_alive_interval,
            self.cfg.client_alive_count_max,
        );
        self.idle = Idle::start(
            self.cfg.channel_timeouts(),
            self.cfg.unused_connection_timeout,
            Instant::now(),
        );
        if let Some(f) = self.on_auth.take() {
            f();
        }
        if self.cfg.none_enabled {
            // The client's next re-key may now select `none` (listed
            // last in our KEXINIT); see PROTOCOL.md.
            match conn.allow_none(self.cfg.none_mac_enabled) {
                Ok(()) => log!(
                    Debug1,
                    "NONE cipher{} allowed after authentication",
                    if self.cfg.none_mac_enabled {
                        " and MAC"
                    } else {
                        ""
                    }
                ),
                Err(e) => log!(Error, "NONE cipher: {e}"),
            }
        }
    }

    /// The user name asked for (authenticated or not), for log lines.
    pub fn user_name(&self) -> Option<&str> {
        self.match_user.as_deref()
    }

    /// "Timeout, client not responding from user bob ADDR port P".
    fn client_gone(&self) -> ServerError {
        ServerError::ClientTimeout {
            user: self.user_name().map(str::to_owned),
            peer: self.peer,
        }
    }

    /// UnusedConnectionTimeout passed: "terminating inactive connection
    /// from user bob ADDR port P".
    fn connection_unused(&self) -> ServerError {
        ServerError::InactiveConnection {
            user: self.user_name().map(str::to_owned),
            peer: self.peer,
        }
    }

    /// The client closed a running session's channel: its ends go (the
    /// command sees EOF and EPIPE); our CLOSE follows its exit status
    /// (tick), as sshd's does, or comes now when no command of ours runs
    /// there (internal-sftp, or the status already sent).
    fn on_close_held(&mut self, conn: &mut Connection, fds: &mut ChannelFds, id: ChannelId) {
        fds.remove(id);
        let Some(s) = self.sessions.get_mut(&id) else {
            let _ = conn.close_channel(id);
            return;
        };
        if s.done || s.child.is_none() {
            let _ = conn.close_channel(id);
            return;
        }
        if let Some(c) = s.child.as_mut() {
            match c.try_wait() {
                Ok(Some(status)) => s.exit = Some(session::exit_result(status)),
                // As sshd: the command is left to end by itself (its
                // output and input are gone); its status goes, then CLOSE.
                Ok(None) => log!(
                    Debug1,
                    "channel {}: closed by the client; CLOSE waits for the command's exit",
                    id.0
                ),
                Err(_) => {
                    let _ = conn.close_channel(id);
                }
            }
        }
    }

    /// ChannelTimeout: the channel had no data for `limit`. As sshd's
    /// forced close: what it holds is dropped, its ends closed, EOF and
    /// CLOSE sent; a session's command keeps running (sshd_config(5):
    /// "terminating an inactive session does not guarantee to remove all
    /// resources"), without its exit status, the channel being gone.
    fn close_idle(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        id: ChannelId,
        limit: Duration,
    ) {
        log!(
            Verbose,
            "channel {}: closing after {} seconds of inactivity",
            id.0,
            limit.as_secs()
        );
        fds.remove(id);
        let _ = conn.send_eof(id);
        let _ = conn.close_channel(id);
        if let Some(s) = self.sessions.get_mut(&id) {
            s.done = true;
            s.abandoned = true;
        }
    }

    /// The TCP socket RemoteRcvBuf requests apply to; sets TCPKeepAlive on it.
    pub fn set_socket(&mut self, fd: std::os::fd::RawFd) {
        self.sock = Some(fd);
        // TCPKeepAlive (default yes): the kernel notices a peer gone for good.
        let on = libc::c_int::from(self.cfg.tcp_keep_alive);
        // A failure (not a TCP socket, as with a relayed -i) changes nothing.
        crate::sys::fdio::set_int_opt(fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE, on);
    }
}

impl Handler for ServerConn {
    type Error = ServerError;

    fn on_event(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        event: Event,
    ) -> Result<(), ServerError> {
        self.track_idle(&event);
        if self.agent.on_event(conn, fds, &event) {
            return Ok(());
        }
        match event {
            Event::AuthRequest { user, method } => self.on_auth_request(conn, user, method),
            Event::AuthInfoResponse { answers } => {
                if let Some(info) = self.auth.on_info_response(conn, &self.cfg, answers) {
                    self.user = Some(info);
                }
            }
            Event::Authenticated { .. } => self.on_authenticated(conn),
            Event::ChannelOpenRequest {
                channel,
                channel_type,
                data,
            } => {
                return Ok(self.on_channel_open_request(
                    conn,
                    fds,
                    channel,
                    &channel_type,
                    &data,
                )?)
            }
            Event::ChannelRequest {
                channel,
                want_reply,
                request,
            } => return self.on_channel_request(conn, fds, channel, want_reply, request),
            Event::ChannelOpened(id) => {
                self.fwd.on_open_result(fds, id, true);
            }
            Event::ChannelOpenFailed { channel, .. } => {
                self.fwd.on_open_result(fds, channel, false);
            }
            Event::ChannelEof(id) => {
                if let Some(h) = self.sessions.get(&id).and_then(|s| s.stripe.as_ref()) {
                    h.on_peer_eof();
                }
            }
            Event::ChannelCloseHeld(id) => self.on_close_held(conn, fds, id),
            Event::ChannelClosed(id) => self.on_channel_closed(id),
            Event::GlobalRequest {
                name,
                want_reply,
                data,
            } => self.on_global_request(conn, &name, want_reply, &data),
            Event::GlobalReply { .. } => self.alive.on_reply(),
            Event::SockBufRequest { rcvbuf, sndbuf } => {
                self.on_sockbuf_request(conn, rcvbuf, sndbuf)
            }
            Event::KexDone {
                initial,
                algorithms,
            } => self.on_kex_done(conn, initial, &algorithms),
            _ => {}
        }
        Ok(())
    }

    /// Reaps commands; after a command exited and its output reached EOF,
    /// sends exit-status (or exit-signal) and closes the channel.
    fn tick(&mut self, conn: &mut Connection, fds: &mut ChannelFds) -> Result<(), ServerError> {
        if !self.alive.tick(conn) {
            return Err(self.client_gone());
        }
        if let Some(info) = self.auth.tick(conn, &self.cfg, self.user.is_some()) {
            self.user = Some(info);
        }
        self.agent.tick(conn, fds);
        self.poll_joins();
        self.fwd
            .tick(conn, fds, self.cfg.max_forward_channels as usize)?;
        let now = Instant::now();
        for (id, s) in &self.sessions {
            if s.stripe.is_some() {
                self.idle.exempt(*id);
            }
        }
        for (id, limit) in self.idle.expired(conn, now) {
            self.close_idle(conn, fds, id, limit);
        }
        if self.idle.connection_unused(now) {
            return Err(self.connection_unused());
        }
        self.orphans
            .retain_mut(|c| !matches!(c.try_wait(), Ok(Some(_)) | Err(_)));
        for (id, s) in self.sessions.iter_mut() {
            if let Some(h) = &s.stripe {
                crate::net::stripe::tick(h, conn, *id).map_err(ServerError::StripeFailed)?;
            }
            if s.done {
                continue;
            }
            if s.exit.is_none() {
                if let Some(code) = s.sftp.as_ref().and_then(|e| e.code()) {
                    s.exit = Some(ExitResult::Status(code));
                }
                if let Some(child) = s.child.as_mut() {
                    if let Ok(Some(status)) = child.try_wait() {
                        s.exit = Some(session::exit_result(status));
                    }
                }
            }
            let Some(exit) = &s.exit else { continue };
            if !fds.get(*id).is_none_or(|io| io.sources_done()) {
                continue;
            }
            let req = match exit {
                ExitResult::Status(code) => ChannelRequestKind::ExitStatus { status: *code },
                ExitResult::Signal { name, core_dumped } => ChannelRequestKind::ExitSignal {
                    signal: name.clone(),
                    core_dumped: *core_dumped,
                    message: String::new(),
                    language: String::new(),
                },
            };
            let _ = conn.send_eof(*id);
            let _ = conn.channel_request(*id, req, false);
            let _ = conn.close_channel(*id);
            s.done = true;
        }
        Ok(())
    }

    fn finished(&self) -> bool {
        false
    }

    fn watch_fds(&self, out: &mut Vec<libc::pollfd>) {
        self.agent.watch_fds(out);
        self.fwd.watch_fds(out);
        self.watch_joins(out);
        // A command's exit wakes the loop through its pidfd: the exit
        // status goes out at once, not at the next reap tick.
        for s in self.sessions.values().filter(|s| s.exit.is_none()) {
            if let Some(fd) = s.child.as_ref().and_then(SessionChild::exit_fd) {
                out.push(libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                });
            }
        }
    }

    fn tick_interval(&self) -> Option<Duration> {
        // Without a pidfd (kernels before 5.3) exits are polled for; an
        // internal-sftp session's end is too.
        let reap = self
            .sessions
            .values()
            .any(|s| {
                !s.done
                    && (s.sftp.is_some() || s.child.as_ref().is_some_and(|c| c.exit_fd().is_none()))
            })
            .then_some(Duration::from_millis(20));
        let auth = self.auth.tick_interval(&self.cfg, self.user.is_some());
        let idle = self.idle.wait(Instant::now());
        [
            reap,
            self.alive.wait(),
            auth,
            self.fwd.tick_interval(),
            idle,
        ]
        .into_iter()
        .flatten()
        .min()
    }
}
