//! What the client's session (client/session.rs) does for each kind of
//! event its `on_event` hands on: host key, key exchange done, channel
//! opened or refused, authenticated, replies, requests, closes.

use super::ClientSession;
use crate::client::error::SessionError;
use crate::log;
use crate::net::pump::ChannelFds;
use sluice_proto::msg::ChannelRequestKind;
use sluice_proto::negotiate::Algorithms;
use sluice_proto::{ChannelId, Connection};

/// One method per kind of event `on_event` hands on (the order of its match
/// arms decides which one an event reaches).
impl ClientSession {
    pub(super) fn on_host_key(
        &mut self,
        conn: &mut Connection,
        algorithm: &str,
        key_blob: &[u8],
    ) -> Result<(), SessionError> {
        if let Some(st) = self.stripe.as_mut() {
            st.on_host_key(key_blob);
        }
        match (self.host_key_check)(algorithm, key_blob) {
            Ok(()) => {
                conn.accept_host_key();
                Ok(())
            }
            Err(e) => {
                conn.reject_host_key();
                Err(SessionError::HostKey(e))
            }
        }
    }

    pub(super) fn on_kex_done(
        &mut self,
        conn: &Connection,
        initial: bool,
        algorithms: &Algorithms,
    ) {
        if initial {
            if let Some(u) = &mut self.host_key_update {
                u.set_kex_alg(&algorithms.host_key);
            }
            log!(Debug1, "kex: algorithm: {}", algorithms.kex);
            log!(Debug1, "kex: host key algorithm: {}", algorithms.host_key);
            match conn.kex_guess_stood() {
                Some(true) => log!(Debug1, "kex: the server took our KEX guess"),
                Some(false) => log!(
                    Debug1,
                    "kex: the server dropped our KEX guess (its first method or host key algorithm differs from ours); one more round trip"
                ),
                None => {}
            }
        }
        if let Some(m) = self.metrics.as_mut() {
            m.on_kex_done(algorithms);
        }
        // Every exchange, as ssh does: a re-key may change them (NONE).
        for (way, cipher, mac, comp) in [
            (
                "client->server",
                &algorithms.cipher_c2s,
                &algorithms.mac_c2s,
                &algorithms.comp_c2s,
            ),
            (
                "server->client",
                &algorithms.cipher_s2c,
                &algorithms.mac_s2c,
                &algorithms.comp_s2c,
            ),
        ] {
            let mac = if mac.is_empty() {
                "<implicit>"
            } else {
                mac.as_str()
            };
            log!(
                Debug1,
                "kex: {way} cipher: {cipher} MAC: {mac} compression: {comp}"
            );
        }
        // ssh's lines for each exchange (scripts count re-keys by them).
        log!(Debug1, "SSH2_MSG_NEWKEYS sent");
        log!(Debug1, "SSH2_MSG_NEWKEYS received");
        if !initial {
            log!(Debug1, "rekey completed");
            if std::mem::take(&mut self.none_pending) {
                report_none(conn, algorithms);
            }
        }
    }

    /// Our session channel, a striped connection's or a forwarding's.
    pub(super) fn on_channel_opened(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        id: ChannelId,
    ) -> Result<(), SessionError> {
        if Some(id) == self.channel {
            return self.on_opened(conn, fds, id);
        }
        if !self.stripe.as_mut().is_some_and(|st| st.on_opened(fds, id)) {
            self.fwd.on_opened(fds, id);
        }
        Ok(())
    }

    pub(super) fn on_channel_open_failed(
        &mut self,
        channel: ChannelId,
        reason: u32,
        description: &str,
    ) -> Result<(), SessionError> {
        if Some(channel) == self.channel {
            return Err(SessionError::ChannelOpenFailed {
                description: description.to_owned(),
            });
        }
        let striped = match self.stripe.as_mut() {
            Some(st) => st
                .on_open_failed(channel, description)
                .map_err(SessionError::Stripe)?,
            None => false,
        };
        if !striped {
            self.fwd
                .on_open_failed(channel, reason, description)
                .map_err(SessionError::Forwarding)?;
        }
        Ok(())
    }

    pub(super) fn on_authenticated(&mut self, conn: &mut Connection) -> Result<(), SessionError> {
        log!(Debug1, "Authentication succeeded ({}).", self.auth.method());
        if let Some(cmd) = self.plan.local_command.take() {
            crate::client::local_command::run(&cmd);
        }
        if self.plan.no_session {
            self.switch_to_none(conn);
        }
        let (rcv, snd) = self.plan.remote_bufs;
        if rcv > 0 || snd > 0 {
            log!(
                Debug1,
                "Requesting remote socket buffers: receive {rcv}, send {snd}"
            );
            conn.request_sockbuf(rcv, snd)?;
        }
        if let Some(st) = self.stripe.as_mut() {
            // Before anything else that gets a global reply.
            st.on_authenticated(conn).map_err(SessionError::Stripe)?;
        }
        self.fwd.start(conn).map_err(SessionError::Forwarding)?;
        if let Some(m) = self.metrics.as_mut() {
            m.on_authenticated(conn);
        }
        self.fork_pending = self.plan.fork_after_auth;
        if let Some(p) = self.persist.as_mut() {
            p.pending = true;
        }
        if self.channel.is_some() {
            self.no_more_sessions(conn)?; // opened early; it stands now
        } else if !self.plan.no_session {
            self.start_session(conn)?;
        }
        Ok(())
    }

    /// Each reply to its request's owner (a keepalive's is only a sign of
    /// life, counted in `on_event`).
    pub(super) fn on_global_reply(
        &mut self,
        request: &str,
        success: bool,
        data: &[u8],
    ) -> Result<(), SessionError> {
        match request {
            sluice_proto::stripe::STRIPE_REQUEST => {
                if let Some(st) = self.stripe.as_mut() {
                    st.on_global_reply(success, data)
                        .map_err(SessionError::Stripe)?;
                }
            }
            "tcpip-forward" | "streamlocal-forward@openssh.com" => {
                if let Some(o) = self
                    .fwd
                    .on_global_reply(success, data)
                    .map_err(SessionError::Forwarding)?
                {
                    self.mux_fwd.on_outcome(o);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The reply to the session's exec/shell request when it may be striped.
    pub(super) fn on_session_reply(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        channel: ChannelId,
        success: bool,
    ) -> Result<(), SessionError> {
        let striped = match self.stripe.as_mut() {
            Some(st) => st
                .on_channel_reply(conn, fds, success)
                .map_err(SessionError::Stripe)?,
            None => None,
        };
        match striped {
            Some(true) => {}
            Some(false) => {
                let source = self.stdio_source;
                self.attach_stdio(conn, fds, channel, source);
            }
            None if !success => return Err(self.request_failed()),
            None => {}
        }
        Ok(())
    }

    pub(super) fn on_channel_request(
        &mut self,
        conn: &mut Connection,
        channel: ChannelId,
        want_reply: bool,
        request: ChannelRequestKind,
    ) -> Result<(), SessionError> {
        if let Some(st) = self.stripe.as_mut() {
            if st
                .on_request(channel, &request)
                .map_err(SessionError::Stripe)?
            {
                return Ok(());
            }
        }
        match request {
            ChannelRequestKind::ExitStatus { status } => self.exit_status = Some(status),
            ChannelRequestKind::ExitSignal {
                signal, message, ..
            } => {
                if !message.is_empty() {
                    crate::errln!("{message}");
                }
                self.exit_signal = Some(signal);
            }
            _ => {}
        }
        if want_reply {
            let _ = conn.channel_reply(channel, false);
        }
        Ok(())
    }

    pub(super) fn on_channel_closed(&mut self, conn: &mut Connection, id: ChannelId) {
        if Some(id) == self.channel {
            self.finished = true;
            if let Some(t) = self.tty.as_mut() {
                t.finish();
            }
            if let Some(m) = self.metrics.as_mut() {
                m.on_session_closed(conn);
            }
        }
        self.fwd.on_closed(id);
        if self.plan.no_session && self.fwd.stdio_finished() {
            self.exit_status = Some(0);
            self.finished = true;
        }
    }

    /// hostkeys-00@openssh.com for UpdateHostKeys; everything else
    /// (keepalive@openssh.com from ClientAliveInterval, ...) is answered
    /// FAILURE as ssh does for what it ignores.
    pub(super) fn on_global_request(
        &mut self,
        conn: &mut Connection,
        name: &str,
        want_reply: bool,
        data: &[u8],
    ) -> Result<(), SessionError> {
        log!(
            Debug1,
            "client_input_global_request: rtype {name} want_reply {want_reply}"
        );
        let mut ok = false;
        if name == sluice_proto::msg::HOSTKEYS {
            if let Some(u) = &mut self.host_key_update {
                u.on_hostkeys(conn, data).map_err(SessionError::HostKeys)?;
                ok = true;
            }
        }
        if want_reply {
            conn.answer_global(ok, &[]);
        }
        Ok(())
    }
}

/// After the NONE re-key: HPN-SSH's warnings on stderr whatever the log
/// level (scripts filter them), or at -v why the session stays encrypted.
pub(super) fn report_none(conn: &Connection, a: &Algorithms) {
    use std::io::Write;
    if conn.none_active() {
        let mut err = std::io::stderr();
        let _ = writeln!(err, "WARNING: ENABLED NONE CIPHER!!!");
        if a.mac_c2s == "none" || a.mac_s2c == "none" {
            let _ = writeln!(err, "WARNING: ENABLED NONE MAC");
            log!(
                Debug1,
                "NONE MAC: channel requests from now on are not integrity-protected; the server refuses new session channels"
            );
        }
    } else {
        log!(
            Debug1,
            "NONE cipher declined by the server: the session stays encrypted with {}",
            a.cipher_c2s
        );
    }
}
