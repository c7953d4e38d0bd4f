//! The engine's side of a handover: the handover point (server role), the
//! export of the transport state there, and the import into a fresh
//! server engine in another process.
//!
//! In handover mode ([`Connection::enable_handover`]) the engine never
//! opens packets ahead, and [`Connection::handle_input`] consumes nothing
//! while an authentication request waits for the runtime's decision or
//! once authentication succeeded. A client may pipeline its CHANNEL_OPEN
//! (or anything else) right behind the request that succeeds; those bytes
//! stay raw in the runtime's buffer, travel to the new process as they
//! are, and the importing engine reads them as the next packets.
//!
//! The runtime's part, in order: call `enable_handover` before any input;
//! answer the `AuthRequest` event (`auth_accept` on success); drain
//! `poll_transmit` and write all of it to the socket; when
//! `handover_ready` says so, `export_transport`, `encode`, and pass the
//! bytes together with every input byte read but not consumed. The new
//! process decodes, compares the session id with the one the monitor
//! signed, and calls `import_server` with the user the monitor vouches
//! for; the imported engine emits no `Authenticated` event, wants batch
//! crypto and path settings set again, and starts with no channel.

use crate::auth::AuthState;
use crate::config::ServerConfig;
use crate::core::{Connection, Role};
use crate::crypto::{PacketPos, Rng};
use crate::error::Error;
use crate::handover::{DirectionState, TransportState};
use crate::kex::handover::KexSnapshot;
use crate::kex::KexMachine;
use crate::transport::compress;
use std::time::{Duration, Instant};

impl Connection {
    /// Server: prepares this engine to hand its transport over after
    /// authentication (privilege separation). From now on it opens no
    /// packet ahead and stops consuming input at the handover point; see
    /// [`Connection::handover_ready`]. Call it before feeding any input.
    pub fn enable_handover(&mut self) -> Result<(), Error> {
        if self.role != Role::Server {
            return Err(Error::InvalidState(
                "only a server hands its transport over",
            ));
        }
        self.handover = true;
        Ok(())
    }

    /// In handover mode: an authentication decision is pending or has
    /// been made, so the packets behind it are left to the runtime's
    /// decision, or to the engine that continues the connection.
    pub(crate) fn handover_holds_input(&self) -> bool {
        self.handover && (self.auth.authenticated || self.auth.decision_pending())
    }

    /// Server in handover mode: true at the handover point, when the
    /// transport may be exported. Authentication succeeded, no key
    /// exchange runs, nothing is queued, held or waiting for its seal
    /// (call [`Connection::poll_transmit`] and write out what it appended
    /// first), no received packet is opened ahead or half read, and no
    /// channel exists.
    pub fn handover_ready(&self) -> bool {
        self.handover
            && self.auth.authenticated
            && !self.closed
            && !self.kex.in_progress()
            && self.outbox.is_empty()
            && self.held.is_empty()
            && !self.send.has_pending()
            && self.recv.is_idle()
            && self.channels.is_empty()
    }

    /// Server: exports the transport at the handover point; this engine is
    /// spent afterwards (closed: it must never seal another packet, or the
    /// sequence numbers would part). `now` measures the time since the
    /// last key exchange, for RekeyLimit's time. Refused (with a reason)
    /// before the handover point, and with immediate `zlib` compression.
    pub fn export_transport(&mut self, now: Instant) -> Result<TransportState, Error> {
        if !self.handover_ready() {
            return Err(Error::InvalidState("not at the handover point"));
        }
        let snap = self.kex.snapshot()?;
        // Immediate compression (plain `zlib`) runs streams from the first
        // NEWKEYS on; their state cannot travel (sshd no longer offers it).
        let registry = &self.config.compression_engines;
        let a = &snap.algorithms;
        for name in [&a.comp_c2s, &a.comp_s2c] {
            if compress::find(registry, name)
                .is_some_and(|e| e.activation() == compress::Activation::Immediate)
            {
                return Err(Error::InvalidState(
                    "zlib compression is active before authentication and cannot be handed over \
                     (offer zlib@openssh.com instead, as sshd does)",
                ));
            }
        }
        // zlib@openssh.com starts with USERAUTH_SUCCESS; the streams are
        // only recreated fresh on import if nothing went through them yet.
        let (out, inc) = self.compression_stats();
        if out.is_some_and(|(raw, _)| raw > 0) || inc.is_some_and(|(raw, _)| raw > 0) {
            return Err(Error::InvalidState(
                "compressed packets went out after authentication: streams cannot be handed over",
            ));
        }
        let since_kex = self
            .last_kex_at
            .map_or(Duration::ZERO, |at| now.saturating_duration_since(at));
        let state = TransportState {
            client_version: self.peer_version.clone().unwrap_or_default(),
            server_version: self.our_version.clone(),
            session_id: snap.session_id,
            algorithms: snap.algorithms,
            exchanges: snap.exchanges,
            strict: snap.strict,
            since_kex_ms: u64::try_from(since_kex.as_millis()).unwrap_or(u64::MAX),
            send: direction(snap.send_keys, self.send.position()),
            recv: direction(snap.recv_keys, self.recv.position()),
            user: self.auth.user.clone(),
        };
        state.validate().map_err(|_| {
            Error::InvalidState("the transport state is outside what a handover carries")
        })?;
        self.closed = true;
        Ok(state)
    }

    /// Server: a connection continuing the transport `state` exported by
    /// another engine, authenticated as `user`, ready for
    /// [`Connection::handle_input`] with the raw bytes the exporter left
    /// unconsumed. `user` comes from whoever vouches for authentication
    /// (the monitor), never from the state: a state naming another user is
    /// refused. `config` brings host keys (later re-keys sign with them),
    /// limits and windows; `now` restarts RekeyLimit's clock.
    pub fn import_server(
        config: ServerConfig,
        rng: Box<dyn Rng>,
        state: TransportState,
        user: &str,
        now: Instant,
    ) -> Result<Connection, Error> {
        state
            .validate()
            .map_err(|_| Error::InvalidState("the transport state does not hold together"))?;
        if state.user.as_deref().is_some_and(|u| u != user) {
            return Err(Error::InvalidState(
                "the transport state names another user than the one authenticated",
            ));
        }
        let common = config.common.clone();
        let mut c = Connection::new(Role::Server, common, Some(config), rng);
        let sealer = state.send.keys.sealer(&c.config.provider)?;
        let opener = state.recv.keys.opener(&c.config.provider)?;
        let registry = &c.config.compression_engines;
        c.send
            .compression
            .negotiated(&state.algorithms.comp_s2c, registry)?;
        c.recv
            .compression
            .negotiated(&state.algorithms.comp_c2s, registry)?;
        c.send
            .compression
            .set_peer_reads_long(state.algorithms.peer_reads_long_stored);
        // The epoch of the keys in force: its engine takes over now (a
        // delayed one starts below, authentication being done).
        c.send.compression.new_epoch();
        c.recv.compression.new_epoch();
        c.our_version = state.server_version;
        c.peer_version = Some(state.client_version);
        c.banner_sent = true;
        c.send
            .resume(sealer, position(&state.send), state.send.bytes);
        c.recv
            .resume(opener, position(&state.recv), state.recv.bytes);
        let since = Duration::from_millis(state.since_kex_ms);
        c.last_kex_at = Some(now.checked_sub(since).unwrap_or(now));
        c.clock = Some(now);
        c.auth = AuthState::authenticated_as(user.to_owned());
        c.kex = KexMachine::restored(KexSnapshot {
            session_id: state.session_id,
            algorithms: state.algorithms,
            exchanges: state.exchanges,
            strict: state.strict,
            send_keys: state.send.keys,
            recv_keys: state.recv.keys,
        });
        // zlib@openssh.com: fresh streams from here on, as the exporter's
        // were when it stopped (nothing went through them).
        c.start_delayed_compression();
        Ok(c)
    }
}

fn direction(keys: crate::handover::KeyMaterial, (pos, bytes): (PacketPos, u64)) -> DirectionState {
    DirectionState {
        keys,
        seq: pos.seq,
        index: pos.index,
        offset: pos.offset,
        bytes,
    }
}

fn position(d: &DirectionState) -> PacketPos {
    PacketPos {
        seq: d.seq,
        index: d.index,
        offset: d.offset,
    }
}
