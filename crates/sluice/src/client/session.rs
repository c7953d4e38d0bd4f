//! The client's side of one connection once the transport is up: host key
//! trust, authentication (handed to client/auth.rs), and one session
//! channel running a command (or, later, a shell) wired to stdin, stdout
//! and stderr.

use super::auth::{AuthPrefs, ClientAuth};
use super::error::SessionError;
use crate::client::tty::TtySession;
use crate::log;
use crate::net::pump::{ChanIo, ChannelFds, Handler};
use sluice_proto::msg::ChannelRequestKind;
use sluice_proto::{ChannelId, Connection, Event};

pub use super::auth::Identity;

pub use super::plan::{HostKeyCheck, SessionPlan};

mod events;

/// Client-side event handling for one connection.
pub struct ClientSession {
    auth: ClientAuth,
    host_key_check: HostKeyCheck,
    plan: SessionPlan,
    channel: Option<ChannelId>,
    /// The remote command's exit status.
    pub exit_status: Option<u32>,
    /// The remote command died of a signal.
    pub exit_signal: Option<String>,
    finished: bool,
    /// The NONE re-key was asked for and has not completed yet.
    none_pending: bool,
    /// The local terminal, when a pty is asked for.
    tty: Option<TtySession>,
    /// ServerAliveInterval and ConnectTimeout's banner limit.
    pub keepalive: Option<super::keepalive::Keepalive>,
    fwd: crate::client::forward::ClientForward,
    /// -f is still to be done once forwarding is set up.
    fork_pending: bool,
    /// ControlMaster: the control socket (`-O check`, `-O exit`, passengers).
    pub mux: Option<super::mux::Master>,
    /// The master's passenger sessions (client/mux_session.rs).
    passengers: super::mux_session::Passengers,
    /// Remote forwards a control connection asked for, awaiting the server.
    mux_fwd: super::mux_forward::MuxForwards,
    /// ControlPersist (a master only).
    pub persist: Option<super::mux_client::Persist>,
    /// `-O exit`: the run ends, forwarded connections or not.
    terminated: bool,
    /// The session channel is an in-process end (sftp, scp): the run ends
    /// once our CLOSE is out (see `SftpChannel::closing`).
    own_end: bool,
    /// The fd the session's stdin is read from (0, or the escape filter's).
    stdio_source: i32,
    /// UpdateHostKeys (None: no).
    pub host_key_update: Option<super::update_host_keys::HostKeyUpdate>,
    /// Streams: the session channel striped over several connections
    /// (client/stripe.rs; None: not for this run).
    pub stripe: Option<super::stripe::ClientStripe>,
    /// Metrics, MetricsPath and `~I` (client/metrics.rs; None: none of them).
    pub metrics: Option<super::metrics::ClientMetrics>,
}

impl ClientSession {
    /// A session for `user` at `host` offering `identities` in order.
    pub fn new(
        user: String,
        host: &str,
        identities: Vec<Identity>,
        host_key_check: HostKeyCheck,
        plan: SessionPlan,
    ) -> Self {
        ClientSession {
            tty: plan.tty.clone().map(|t| TtySession::new(t, host)),
            auth: ClientAuth::new(user, host, identities),
            host_key_check,
            channel: None,
            exit_status: None,
            exit_signal: None,
            finished: false,
            none_pending: false,
            keepalive: None,
            fwd: crate::client::forward::ClientForward::new(plan.forwards.clone()),
            fork_pending: false,
            mux: None,
            passengers: Default::default(),
            mux_fwd: Default::default(),
            persist: None,
            terminated: false,
            own_end: false,
            host_key_update: None,
            stripe: None,
            metrics: None,
            stdio_source: 0,
            plan,
        }
    }

    /// PreferredAuthentications, BatchMode and the other ssh_config
    /// settings for authentication.
    pub fn set_auth_prefs(&mut self, prefs: AuthPrefs) {
        self.auth.set_prefs(prefs);
    }

    fn start_session(&mut self, conn: &mut Connection) -> Result<(), SessionError> {
        let id = conn.open_session()?;
        self.channel = Some(id);
        self.no_more_sessions(conn)
    }

    /// no-more-sessions@openssh.com, unless passengers may come (a master).
    fn no_more_sessions(&self, conn: &mut Connection) -> Result<(), SessionError> {
        match self.mux {
            Some(_) => Ok(()),
            None => no_more_sessions(conn).map_err(SessionError::Engine),
        }
    }

    /// Opens the session right behind a signed publickey request, before
    /// its answer (PROTOCOL.md, "Sent early"): to servers known to take it,
    /// and not when the NONE re-key must come first.
    fn open_early(&mut self, conn: &mut Connection) -> Result<(), SessionError> {
        let known = conn
            .peer_version()
            .is_some_and(|v| v.starts_with("SSH-2.0-OpenSSH_") || v.starts_with("SSH-2.0-sluice"));
        if conn.early_open_possible()
            && self.channel.is_none()
            && known
            && !self.plan.no_session
            && self.plan.none_switch.is_none()
        {
            log!(
                Debug1,
                "Opening the session ahead of the authentication answer"
            );
            self.channel = Some(conn.open_session_early()?);
        }
        Ok(())
    }

    /// NoneSwitch, once: after the session's requests are queued, so they
    /// go under the keys that protect them (sluiced refuses sessions opened
    /// after a NONE MAC switch), and the data that follows under NONE (the
    /// engine holds it until the re-key is done).
    fn switch_to_none(&mut self, conn: &mut Connection) {
        let Some(mac) = self.plan.none_switch.take() else {
            return;
        };
        log!(Debug1, "Requesting none rekeying...");
        match conn.switch_to_none(mac) {
            Ok(()) => self.none_pending = true,
            Err(e) => log!(Debug1, "NONE cipher switch not possible: {e}"),
        }
    }

    fn on_opened(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        id: ChannelId,
    ) -> Result<(), SessionError> {
        // auth-agent-req, then pty-req, as ssh orders them; stdin may go
        // through the escape filter from now on.
        self.plan
            .agent
            .request(conn, id)
            .map_err(SessionError::Engine)?;
        let source = match self.tty.as_mut() {
            Some(t) => t.start(conn, id).map_err(SessionError::Tty)?,
            None => 0,
        };
        for (name, value) in &self.plan.env {
            let req = ChannelRequestKind::Env {
                name: name.clone(),
                value: value.clone(),
            };
            conn.channel_request(id, req, false)?;
        }
        let req = match &self.plan.command {
            Some(cmd) if self.plan.subsystem => ChannelRequestKind::Subsystem {
                name: String::from_utf8_lossy(cmd).into_owned(),
            },
            Some(cmd) => {
                log!(Debug1, "Sending command: {}", String::from_utf8_lossy(cmd));
                ChannelRequestKind::Exec {
                    command: cmd.clone(),
                }
            }
            None => ChannelRequestKind::Shell,
        };
        // The stripe request goes before exec; the channel's ends wait for
        // its answer (no data before it).
        let held = match self.stripe.as_mut() {
            Some(st) => st
                .on_session_opened(conn, fds, id)
                .map_err(SessionError::Stripe)?,
            None => false,
        };
        conn.channel_request(id, req, true)?;
        self.switch_to_none(conn);
        if held {
            self.stdio_source = source;
            return Ok(());
        }
        self.attach_stdio(conn, fds, id, source);
        Ok(())
    }

    /// The session's exec, subsystem or shell was refused.
    fn request_failed(&self) -> SessionError {
        let what = if self.plan.subsystem {
            "subsystem"
        } else if self.plan.command.is_some() {
            "exec"
        } else {
            "shell"
        };
        SessionError::RequestFailed { what }
    }

    /// The session channel's ordinary ends: the in-process end, or fds 0-2.
    fn attach_stdio(
        &mut self,
        conn: &Connection,
        fds: &mut ChannelFds,
        id: ChannelId,
        source: i32,
    ) {
        if let Some(mut end) = self.plan.channel_end.take() {
            end.on_attach(conn.peer_version().unwrap_or_default());
            self.own_end = true;
            fds.insert(id, ChanIo::in_process(end));
        } else if self.plan.stdio {
            let mut io = ChanIo::borrowed(Some(source), None, Some(1), Some(2));
            io.close_when_sink_fails = true;
            fds.insert(id, io);
        }
    }
}

impl Handler for ClientSession {
    type Error = SessionError;

    fn on_event(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        event: Event,
    ) -> Result<(), SessionError> {
        if let Some(k) = &mut self.keepalive {
            k.message();
        }
        if self.passengers.active()
            && self
                .passengers
                .on_event(conn, fds, &event, &self.plan.agent)
                .map_err(SessionError::Mux)?
        {
            return Ok(());
        }
        if let (Event::ChannelReply { success, .. }, Some(t)) = (&event, self.tty.as_mut()) {
            if t.on_reply(*success).map_err(SessionError::Tty)? {
                return Ok(());
            }
        }
        match event {
            Event::HostKey {
                algorithm,
                key_blob,
            } => self.on_host_key(conn, &algorithm, &key_blob)?,
            Event::KexDone {
                initial,
                algorithms,
            } => self.on_kex_done(conn, initial, &algorithms),
            Event::AuthReady
            | Event::AuthFailure { .. }
            | Event::AuthPkOk { .. }
            | Event::AuthInfoRequest { .. }
            | Event::AuthPasswdChangeReq { .. }
            | Event::ServiceAccepted
            | Event::ServerSigAlgs => {
                self.auth
                    .on_event(conn, &event)
                    .map_err(SessionError::Auth)?;
                self.open_early(conn)?;
            }
            // As ssh: straight to stderr (not the -E log), unless LogLevel is below INFO (-q).
            Event::AuthBanner(text) if crate::log::enabled(crate::log::Level::Info) => {
                crate::err!("{text}")
            }
            Event::Authenticated { .. } => self.on_authenticated(conn)?,
            Event::SockBufReply(reply) => on_sockbuf_reply(reply),
            Event::PathInfoReply(figures) => {
                if let Some(m) = self.metrics.as_mut() {
                    m.on_reply(figures);
                }
            }
            Event::ChannelOpened(id) => self.on_channel_opened(conn, fds, id)?,
            Event::ChannelOpenFailed {
                channel,
                reason,
                description,
            } => self.on_channel_open_failed(channel, reason, &description)?,
            Event::GlobalReply {
                request,
                success,
                data,
            } => self.on_global_reply(&request, success, &data)?,
            Event::ChannelReply { channel, success }
                if Some(channel) == self.channel && self.stripe.is_some() =>
            {
                self.on_session_reply(conn, fds, channel, success)?
            }
            Event::ChannelReply { success: false, .. } => return Err(self.request_failed()),
            Event::ChannelRequest {
                channel,
                want_reply,
                request,
            } => self.on_channel_request(conn, channel, want_reply, request)?,
            Event::ChannelOpenRequest {
                channel,
                channel_type,
                ..
            } if channel_type == crate::client::agent_forward::CHANNEL => {
                self.plan.agent.on_open(conn, fds, channel);
            }
            Event::ChannelOpenRequest {
                channel,
                channel_type,
                data,
            } => {
                self.fwd
                    .on_open_request(conn, fds, channel, &channel_type, &data)
                    .map_err(SessionError::Forwarding)?;
            }
            Event::ChannelEof(id) => {
                if let Some(st) = self.stripe.as_mut() {
                    st.on_eof(id);
                }
            }
            Event::ChannelClosed(id) => self.on_channel_closed(conn, id),
            Event::Debug(m) => log!(Info, "Remote: {m}"),
            Event::HostKeysProof(signatures) => {
                if let Some(u) = &mut self.host_key_update {
                    u.on_proof(conn, signatures);
                }
            }
            Event::GlobalRequest {
                name,
                want_reply,
                data,
            } => self.on_global_request(conn, &name, want_reply, &data)?,
            _ => {}
        }
        Ok(())
    }

    fn tick(&mut self, conn: &mut Connection, fds: &mut ChannelFds) -> Result<(), SessionError> {
        if let Some(k) = &mut self.keepalive {
            k.tick(conn).map_err(SessionError::Timeout)?;
        }
        if let Some(m) = &mut self.mux {
            m.tick();
            let new = m.take_sessions();
            if !new.is_empty() {
                self.passengers.open(conn, new);
            }
            for ask in m.take_forwards() {
                self.mux_fwd.apply(&mut self.fwd, conn, ask);
            }
            // As ssh's master after `-O stop`: with no session of its own,
            // it ends once nothing is open any more (its last passenger
            // gone, no listener, no forwarded connection).
            let idle = self.channel.is_none()
                && !self.passengers.active()
                && !self.fwd.busy()
                && !self.fwd.has_listeners();
            if !m.listening() && idle && !self.finished {
                log!(Debug1, "multiplex: stopped, and nothing is open: exiting");
                self.finished = true;
                self.exit_status.get_or_insert(0);
            }
            if m.terminate && !self.terminated {
                // As ssh's master on `-O exit`: the connection ends now.
                self.terminated = true;
                self.finished = true;
                if self.channel.is_none() {
                    self.exit_status = Some(0);
                }
            }
        }
        if let Some(t) = self.tty.as_mut() {
            if t.tick(conn) {
                // `~.`: ssh's exit status 255.
                self.finished = true;
                self.exit_status = None;
                self.exit_signal = None;
                return Ok(());
            }
        }
        if self.tty.as_mut().is_some_and(|t| t.take_info_request()) {
            if let Some(m) = self.metrics.as_mut() {
                m.on_info_escape(conn);
            }
        }
        self.fwd.tick(conn, fds).map_err(SessionError::Forwarding)?;
        self.passengers.tick(conn, fds);
        if let Some(p) = self.persist.as_mut() {
            let ready = !self.plan.forwards.exit_on_failure || self.fwd.setup_done();
            if p.pending && ready {
                p.detach().map_err(SessionError::Mux)?;
            }
            let busy = self.passengers.active() || self.fwd.busy();
            if p.expired(busy, std::time::Instant::now()) {
                log!(Debug1, "ControlPersist timeout expired");
                self.finished = true;
                self.terminated = true;
                self.exit_status = Some(0);
            }
        }
        if let Some(st) = self.stripe.as_mut() {
            st.tick(conn).map_err(SessionError::Stripe)?;
        }
        if let Some(m) = self.metrics.as_mut() {
            let window = self
                .channel
                .and_then(|id| conn.channel_info(id))
                .map(|i| i.send_window);
            m.tick(window);
        }
        if self.fork_pending && (!self.plan.forwards.exit_on_failure || self.fwd.setup_done()) {
            self.fork_pending = false;
            crate::client::forward::go_background().map_err(SessionError::Forwarding)?;
        }
        // Once the remote side has sent EOF and our output is written, and it
        // closed, we are done; close our end when the peer sent its exit status
        // and EOF and all its output is written (OpenSSH's order).
        self.plan.agent.tick(conn, fds);
        if let Some(id) = self.channel {
            let drained = fds.get(id).is_none_or(|io| io.sinks_drained());
            if let Some(info) = conn.channel_info(id) {
                if info.eof_received && drained && self.exit_status.is_some() && !info.close_sent {
                    let _ = conn.close_channel(id);
                }
                if self.own_end && info.close_sent {
                    self.finished = true;
                }
            }
        }
        Ok(())
    }

    fn finished(&self) -> bool {
        // As ssh: forwarded connections still open keep the client running
        // (unless a control client asked the master to exit).
        // A host key proof asked for is awaited a moment, so a short
        // command does not end the run before known_hosts is updated.
        let proving = self
            .host_key_update
            .as_ref()
            .is_some_and(|u| u.awaiting_proof());
        // So is the server's last word for the Metrics summary.
        let measuring = self.metrics.as_ref().is_some_and(|m| m.awaiting());
        // A master also waits for its passengers.
        self.finished
            && (self.terminated || (!self.fwd.busy() && !self.passengers.active()))
            && !proving
            && !measuring
    }

    fn watch_fds(&self, out: &mut Vec<libc::pollfd>) {
        self.fwd.watch_fds(out);
        if let Some(m) = &self.mux {
            m.watch_fds(out);
        }
        self.passengers.watch_fds(out);
        if let Some(t) = &self.tty {
            t.watch_fds(out);
        }
    }

    fn tick_interval(&self) -> Option<std::time::Duration> {
        let keepalive = self.keepalive.as_ref().and_then(|k| k.next());
        let proof = self
            .host_key_update
            .as_ref()
            .filter(|u| u.awaiting_proof())
            .map(|_| std::time::Duration::from_millis(100));
        let steer = self.stripe.as_ref().and_then(|s| s.tick_interval());
        let metrics = self.metrics.as_ref().and_then(|m| m.tick_interval());
        let sizes = self
            .passengers
            .any_tty()
            .then_some(super::mux_session::SIZE_CHECK);
        let persist = self.persist.as_ref().and_then(|p| p.tick_interval());
        [
            self.fwd.tick_interval(),
            keepalive,
            proof,
            steer,
            metrics,
            sizes,
            persist,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn input_received(&mut self, now: std::time::Instant) {
        if let Some(k) = &mut self.keepalive {
            k.input(now);
        }
    }
}

/// The answer to RemoteRcvBuf/RemoteSndBuf (sluice's own request).
fn on_sockbuf_reply(reply: Option<(u64, u64)>) {
    match reply {
        Some((rcv, snd)) => log!(
            Debug1,
            "Remote socket buffers now: receive {rcv}, send {snd}"
        ),
        None => log!(
            Info,
            "RemoteRcvBuf/RemoteSndBuf: the server declined (not sluiced, or its RemoteBufMax is 0); its buffers stay as they are"
        ),
    }
}

impl ClientSession {
    /// The session channel closed normally (as opposed to an early failure).
    pub fn finished_cleanly(&self) -> bool {
        self.finished
    }
}

/// We open no other session on this connection (no ControlMaster): tell
/// the server, as ssh does after opening its session (or right after
/// authentication with -N), so a hijacked connection cannot get a shell.
/// Only to peers known to take it (ssh's rule: OpenSSH; and sluiced).
pub fn no_more_sessions(conn: &mut Connection) -> Result<(), sluice_proto::Error> {
    if conn
        .peer_version()
        .is_some_and(|v| v.starts_with("SSH-2.0-OpenSSH") || v.starts_with("SSH-2.0-sluice"))
    {
        log!(Debug1, "Requesting no-more-sessions@openssh.com");
        conn.global_request("no-more-sessions@openssh.com", false, &[])?;
    }
    Ok(())
}
