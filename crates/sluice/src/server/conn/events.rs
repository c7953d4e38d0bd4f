//! One connection's engine events, one method per kind: authentication
//! requests, channel opens, channel requests and closes, global requests,
//! finished key exchanges (the socket-buffer request: sockbuf.rs). conn.rs's
//! `on_event` dispatches here; the work behind a request lives with its
//! subject (requests.rs, publickey.rs, stripe.rs, server/forward.rs).

use super::{ServerConn, Session, ADMINISTRATIVELY_PROHIBITED, UNKNOWN_CHANNEL_TYPE};
use crate::log;
use crate::net::pump::ChannelFds;
use sluice_proto::msg::ChannelRequestKind;
use sluice_proto::negotiate::Algorithms;
use sluice_proto::{AuthMethodRequest, ChannelId, Connection, Event};
use std::time::Instant;

impl ServerConn {
    /// ChannelTimeout's bookkeeping sees every open and close, whoever
    /// handles the channel (agent, forwarding).
    pub(super) fn track_idle(&mut self, event: &Event) {
        match event {
            Event::ChannelOpened(id) => {
                let kind = if self.agent.is_opening(*id) {
                    Some("agent-connection")
                } else {
                    self.fwd.opening_type(*id)
                };
                if let Some(kind) = kind {
                    self.idle.opened(*id, kind, Instant::now());
                }
            }
            Event::ChannelClosed(id) => self.idle.closed(*id, Instant::now()),
            _ => {}
        }
    }

    /// A USERAUTH_REQUEST: public keys are decided here (publickey.rs),
    /// the other methods by server/auth.rs.
    pub(super) fn on_auth_request(
        &mut self,
        conn: &mut Connection,
        user: String,
        method: AuthMethodRequest,
    ) {
        let user = crate::server::auth::without_style(user);
        self.user_config(conn, &user);
        match &method {
            AuthMethodRequest::PublicKey {
                key_blob,
                signature,
                ..
            } => self.on_publickey(conn, &user, key_blob, signature.as_deref()),
            _ => {
                if let Some(info) = self.auth.on_request(conn, &self.cfg, &user, method) {
                    self.user = Some(info);
                }
            }
        }
    }

    /// A CHANNEL_OPEN: a stripe carrier, a forwarding channel, or a
    /// session (within MaxSessions, and refused after the NONE MAC or
    /// no-more-sessions).
    pub(super) fn on_channel_open_request(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        channel: ChannelId,
        channel_type: &str,
        data: &[u8],
    ) -> Result<(), crate::server::error::ServerError> {
        if channel_type == sluice_proto::stripe::CARRIER_CHANNEL {
            self.idle.forget(channel);
            super::carrier::open_carrier(conn, fds, channel, data, self.stripe_key);
            return Ok(());
        }
        // Counted once open (connected); a refusal drops it.
        self.idle.opening(channel, channel_type);
        if channel_type != "session" {
            let ctx = crate::server::forward::Ctx {
                cfg: &self.cfg,
                user: self.user.as_ref(),
                key: self.key_options.as_ref(),
            };
            if !self
                .fwd
                .open_request(&ctx, conn, fds, channel, channel_type, data)?
            {
                let _ = conn.reject_channel(channel, UNKNOWN_CHANNEL_TYPE, "unknown channel type");
            }
            return Ok(()); // a forwarding channel is answered there
        }
        match self.session_refusal(conn) {
            Some(why) => {
                let _ = conn.reject_channel(channel, ADMINISTRATIVELY_PROHIBITED, why);
            }
            None => {
                self.sessions.insert(channel, Session::default());
                conn.accept_channel(channel)?;
            }
        }
        Ok(())
    }

    /// Why a new session channel is refused (the text the client sees),
    /// or None.
    fn session_refusal(&self, conn: &Connection) -> Option<&'static str> {
        if conn.none_mac_active() {
            // Its requests (exec, subsystem, env) could be changed
            // on the wire undetected.
            log!(
                Info,
                "Refusing a session from {} port {}: the NONE MAC is in use, so its requests would not be integrity-protected",
                self.peer.ip(),
                self.peer.port()
            );
            Some("no new sessions after the NONE MAC switch")
        } else if self.no_more_sessions {
            log!(
                Info,
                "Refusing a session from {} port {}: the client sent no-more-sessions@openssh.com (possible attack)",
                self.peer.ip(),
                self.peer.port()
            );
            Some("no more sessions")
        } else if self.sessions.len() >= self.cfg.max_sessions as usize {
            Some("too many sessions")
        } else {
            None
        }
    }

    /// A CHANNEL_REQUEST: striping's own, else a session request
    /// (requests.rs); a started command holds the channel's CLOSE behind
    /// its exit status.
    pub(super) fn on_channel_request(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        channel: ChannelId,
        want_reply: bool,
        request: ChannelRequestKind,
    ) -> Result<(), crate::server::error::ServerError> {
        if let ChannelRequestKind::Other { name, data } = &request {
            if self.stripe_request(conn, channel, name, data, want_reply)? {
                return Ok(());
            }
        }
        // sshd's names for a running session (ChannelTimeout).
        let kind = match &request {
            ChannelRequestKind::Exec { .. } => Some("session:command".to_owned()),
            ChannelRequestKind::Shell => Some("session:shell".to_owned()),
            ChannelRequestKind::Subsystem { name } => Some(format!("session:subsystem:{name}")),
            _ => None,
        };
        let ok = self.on_request(conn, fds, channel, request);
        if let Some(kind) = kind.filter(|_| ok) {
            self.idle.started(channel, &kind, Instant::now());
            // The exit status goes before our CLOSE, even when the
            // client closes first (sshd's order).
            conn.hold_close(channel);
        }
        if want_reply {
            conn.channel_reply(channel, ok)?;
        }
        Ok(())
    }

    /// A channel is gone: a session's command is hung up unless it ended
    /// or was abandoned for idleness, and its pty goes back to the monitor.
    pub(super) fn on_channel_closed(&mut self, id: ChannelId) {
        self.fwd.on_closed(id);
        let Some(mut s) = self.sessions.remove(&id) else {
            return;
        };
        if s.abandoned {
            self.orphans
                .extend(s.child.take().filter(|_| s.exit.is_none()));
        }
        if let Some(c) = s.child.as_mut() {
            if s.exit.is_none() {
                c.signal("HUP");
                let _ = c.wait();
            }
        }
        // Its pty goes back: the monitor writes the logout
        // and counts it no longer against MaxSessions.
        if let (Some(p), Some(m)) = (s.pty.take(), self.monitor.as_mut()) {
            let tty = p.name().to_owned();
            drop(p);
            m.pty_released(&tty);
        }
    }

    /// A GLOBAL_REQUEST: no-more-sessions, host-key proofs, path info,
    /// striping grants, else forwarding (server/forward.rs) or a refusal.
    pub(super) fn on_global_request(
        &mut self,
        conn: &mut Connection,
        name: &str,
        want_reply: bool,
        data: &[u8],
    ) {
        log!(
            Debug1,
            "server_input_global_request: rtype {name} want_reply {want_reply}"
        );
        if name == "no-more-sessions@openssh.com" {
            self.no_more_sessions = true;
            log!(Debug1, "no more sessions on this connection");
        }
        if name == sluice_proto::msg::HOSTKEYS_PROVE {
            let proofs = self.prove_host_keys(conn, data);
            if want_reply {
                match proofs {
                    Some(p) => conn.answer_global(true, &p),
                    None => conn.answer_global(false, &[]),
                }
            }
            return;
        }
        if name == sluice_proto::msg::PATH_INFO_REQUEST {
            self.answer_path_info(conn, data, want_reply);
            return;
        }
        if name == sluice_proto::stripe::STRIPE_REQUEST {
            self.stripe_grant(conn, data, want_reply);
            return;
        }
        let ctx = crate::server::forward::Ctx {
            cfg: &self.cfg,
            user: self.user.as_ref(),
            key: self.key_options.as_ref(),
        };
        let forwarding = self.fwd.global_request(&ctx, conn, name, want_reply, data);
        if !forwarding && want_reply {
            conn.answer_global(false, &[]);
        }
    }

    /// A key exchange finished: logged, with warnings when a re-key
    /// switched to the NONE cipher or MAC.
    pub(super) fn on_kex_done(&self, conn: &Connection, initial: bool, algorithms: &Algorithms) {
        log!(
            Debug1,
            "kex: client->server cipher: {} MAC: {} compression: {}",
            algorithms.cipher_c2s,
            algorithms.mac_c2s,
            algorithms.comp_c2s
        );
        if !initial && conn.none_active() {
            log!(
                Info,
                "WARNING: NONE cipher in use from {} port {} (MAC: {})",
                self.peer.ip(),
                self.peer.port(),
                algorithms.mac_c2s
            );
        }
        if !initial && conn.none_mac_active() {
            log!(
                Info,
                "WARNING: NONE MAC in use from {} port {}: channel requests from now on are not integrity-protected; new session channels are refused",
                self.peer.ip(),
                self.peer.port()
            );
        }
    }
}
