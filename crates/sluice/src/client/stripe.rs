//! The client's side of channel striping (PROTOCOL.md, "Channel
//! striping"): `Streams N|auto` for a plain `sluice host command` (no pty,
//! no in-process end). After authentication on the primary it asks for a
//! grant and, granted (from sluiced: without waiting for the answer), it
//! stripes the session channel before `exec`, with the carrier on the
//! primary, its first acknowledgement and (toward sluiced) the stream's
//! first bytes as plain data right behind the request (no round trip
//! more than an unstriped channel's, either way), and
//! dials the secondaries, each in its own
//! thread with a pump of its own: same address, the primary's host key
//! required, joined with the grant's token, one carrier each. A grant
//! refused, a join failed or a secondary lost leaves the transfer on what
//! remains; chunks left with no carrier fail it loudly (exit 255).
//!
//! `Streams auto` stripes where one connection may fall short. When one
//! socket's buffer cannot cover the path at 1 Gbit/s, it asks for a grant
//! of [`AUTO_MAX`](crate::client::streams_auto::AUTO_MAX) connections, starts with [`AUTO_STREAMS`](auto::AUTO_STREAMS) and adds the
//! rest in steps while each raises the rate the channel moves
//! (streams_auto.rs). On a long path one socket can cover, it stripes the
//! channel over the primary alone and watches the primary's TCP for loss
//! (segments sent again or arriving out of order, after a warm-up): one
//! loss-bound connection moves a fraction of what several do, so a loss
//! seen while it moves little per round trip ([`AUTO_LOSS_INFLIGHT`](auto::AUTO_LOSS_INFLIGHT))
//! opens [`AUTO_STREAMS`](auto::AUTO_STREAMS) at once, weighed against the lone connection's
//! average since the watch began, and the steps go on from there. A step
//! that did not help is given
//! back (its carriers close; their chunks go again on the others) and no
//! more are added. Short paths keep one plain connection: a loss there is
//! repaired within a few milliseconds.

use crate::client::dial::Dial;
use crate::client::options::ClientOptions;
use crate::client::plan::SessionPlan;
use crate::client::streams::Streams;
use crate::client::streams_auto::LOOK_EVERY;
use crate::client::stripe_error::StripingError;
use crate::client::stripe_secondary::{Dialler, Secondary};
use crate::log;
use crate::net::pump::{ChanFd, ChanIo, ChannelFds};
use crate::net::stripe::{self, CarrierEnd, ConnKey, Hub, Stderr, StripedEnd};
use sluice_proto::msg::ChannelRequestKind;
use sluice_proto::stripe::codec::{CarrierOpen, StripeGrant, StripeWanted};
use sluice_proto::stripe::token::Joiner;
use sluice_proto::stripe::{ACK_REQUEST, CARRIER_CHANNEL, PLAIN_MAX, STRIPE_REQUEST};
use sluice_proto::{ChannelId, Config, Connection};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use auto::{auto_counts, AutoSteer, Look};

mod auto;

/// Where striping stands on the primary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Not asked (yet), or not for this run.
    Idle,
    /// The grant request is out; its reply is the next global reply.
    AskingGrant,
    /// The channel's `stripe-v00` request is out; its reply is the
    /// channel's next reply.
    AskingChannel,
    /// The channel is striped.
    Striped,
    /// Declined somewhere: the channel is an ordinary one.
    Off,
}

/// Striping for one client run.
pub struct ClientStripe {
    streams: Streams,
    phase: Phase,
    dial: Dial,
    proto: Config,
    user: String,
    /// The primary's host key blob: every secondary must show the same.
    host_key: Option<Vec<u8>>,
    grant: Option<StripeGrant>,
    /// The grant's answer is still to come.
    grant_pending: bool,
    hub: Option<Arc<Hub>>,
    channel: Option<ChannelId>,
    /// The carrier on the primary.
    carrier: Option<ChannelId>,
    key: ConnKey,
    output: Option<JoinHandle<()>>,
    /// Connections (the primary included) to open at first and to ask the
    /// server for, once decided.
    counts: Option<(u32, u32)>,
    /// What secondaries need to be dialled, once striped.
    dialler: Option<Dialler>,
    /// `auto`'s measurement; None: not steering (fixed, or settled).
    steer: Option<AutoSteer>,
    /// The primary's socket, for `auto`'s loss watch.
    primary_fd: Option<RawFd>,
    /// The stream's first bytes go as plain data ahead of the answer: the
    /// channel's ends were set with the request.
    plain: bool,
}

impl ClientStripe {
    /// Striping for this run, when it may apply: a command on fds 0-2
    /// without a pty, `Streams` other than 1, no ProxyCommand (a -v line
    /// says why not).
    pub fn plan(opts: &ClientOptions, plan: &SessionPlan) -> Option<ClientStripe> {
        let plain = plan.stdio
            && plan.tty.is_none()
            && plan.channel_end.is_none()
            && plan.command.is_some()
            && !plan.subsystem
            && !plan.no_session
            && plan.none_switch.is_none();
        if !plain || opts.streams == Streams::Fixed(1) {
            return None;
        }
        if opts.proxy_command.is_some() {
            log!(
                Debug1,
                "Streams {}: one connection (secondaries are not dialled through a ProxyCommand or ProxyJump)",
                opts.streams
            );
            return None;
        }
        Some(ClientStripe {
            streams: opts.streams,
            phase: Phase::Idle,
            dial: Dial::of(opts),
            proto: opts.proto.clone(),
            user: opts.user.clone(),
            host_key: None,
            grant: None,
            grant_pending: false,
            hub: None,
            channel: None,
            carrier: None,
            key: ConnKey::next(),
            output: None,
            counts: None,
            dialler: None,
            steer: None,
            primary_fd: None,
            plain: false,
        })
    }

    /// The primary's socket (set again if the client reconnects).
    pub fn set_primary_fd(&mut self, fd: RawFd) {
        self.primary_fd = Some(fd);
    }

    /// The primary's host key as the key exchange showed it.
    pub fn on_host_key(&mut self, blob: &[u8]) {
        if self.host_key.is_none() {
            self.host_key = Some(blob.to_vec());
        }
    }

    /// How many connections to open at first and to ask for (decided once;
    /// `auto` from the path).
    fn counts(&mut self, conn: &Connection) -> (u32, u32) {
        let streams = self.streams;
        *self.counts.get_or_insert_with(|| match streams {
            Streams::Fixed(n) => (n as u32, n as u32),
            Streams::Auto => auto_counts(conn),
        })
    }

    /// After authentication: asks for the grant (before anything else
    /// that could get a global reply), or decides against striping.
    pub fn on_authenticated(&mut self, conn: &mut Connection) -> Result<(), StripingError> {
        let total = self.counts(conn).1;
        if total <= 1 {
            self.phase = Phase::Off;
            return Ok(());
        }
        let wanted = StripeWanted {
            secondaries: (total - 1).min(sluice_proto::stripe::MAX_SECONDARIES),
        };
        log!(
            Debug1,
            "Streams {}: asking the server for {} secondary connections",
            self.streams,
            wanted.secondaries
        );
        conn.global_request(STRIPE_REQUEST, true, &wanted.encode())?;
        self.phase = Phase::AskingGrant;
        self.grant_pending = true;
        Ok(())
    }

    /// A global reply: ours while the grant is asked for (returns true).
    pub fn on_global_reply(&mut self, success: bool, data: &[u8]) -> Result<bool, StripingError> {
        if !self.grant_pending {
            return Ok(false);
        }
        self.grant_pending = false;
        if !success {
            if self.phase == Phase::AskingGrant {
                self.phase = Phase::Off;
            }
            log!(
                Debug1,
                "Striping declined by the server (not sluiced, or its MaxStreams is 1): one connection"
            );
            return Ok(true);
        }
        let g = StripeGrant::decode(data).map_err(StripingError::Grant)?;
        log!(
            Debug1,
            "Striping granted: up to {} secondary connections",
            g.allowed
        );
        self.grant = Some(g);
        if self.phase == Phase::AskingGrant {
            self.phase = Phase::Idle;
        }
        Ok(true)
    }

    /// On the session channel's open, before `exec`: asks to stripe it
    /// when granted, or, from sluiced, while the grant's answer is still
    /// on its way (the server answers the grant first). The hub, its first
    /// acknowledgement and the carrier on the primary go right behind the
    /// request (PROTOCOL.md): the server's data moves as soon as it has
    /// accepted, with no round trip of ours in between. Toward sluiced our
    /// first bytes go too, as plain data on the channel, so the channel's
    /// ends are set here. Returns true when the session must not attach
    /// its ordinary ends (set here, or after the answer).
    pub fn on_session_opened(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        id: ChannelId,
    ) -> Result<bool, StripingError> {
        let sluiced = conn
            .peer_version()
            .is_some_and(|v| v.starts_with("SSH-2.0-sluice"));
        let ask = match self.phase {
            Phase::Idle => self.grant.is_some(),
            Phase::AskingGrant => sluiced,
            _ => false,
        };
        if !ask {
            return Ok(false);
        }
        let req = ChannelRequestKind::Other {
            name: STRIPE_REQUEST.into(),
            data: Vec::new(),
        };
        conn.channel_request(id, req, true)?;
        self.channel = Some(id);
        self.phase = Phase::AskingChannel;
        let hub = Hub::new(id.0).map_err(StripingError::Hub)?;
        hub.set_primary(self.key);
        hub.no_stderr();
        let remote = conn
            .channel_info(id)
            .map(|i| i.remote)
            .ok_or(StripingError::ChannelGone)?;
        let open = CarrierOpen {
            striped_channel: remote,
        }
        .encode();
        self.carrier = Some(conn.open_channel(CARRIER_CHANNEL, &open)?);
        if sluiced {
            // The stream's first bytes go at once as plain data on the
            // channel (PROTOCOL.md): an upload waits no round trip for the
            // answer and the carrier. Refused, they were ordinary data.
            hub.allow_plain(PLAIN_MAX);
            fds.insert(
                id,
                ChanIo::in_process(Box::new(StripedEnd::new(&hub, Stderr::Sink(2)))),
            );
            stripe::spawn_input(&hub, ChanFd::Borrowed(0)).map_err(StripingError::Thread)?;
            self.plain = true;
        }
        self.hub = Some(hub);
        Ok(true)
    }

    /// A reply on the session channel: ours while the stripe request is
    /// out (returns Some(whether the channel's ends are set: striped, or
    /// refused after plain data went)).
    pub fn on_channel_reply(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        success: bool,
    ) -> Result<Option<bool>, StripingError> {
        if self.phase != Phase::AskingChannel {
            return Ok(None);
        }
        let Some(id) = self.channel else {
            return Ok(None);
        };
        if !success {
            log!(
                Debug1,
                "channel {}: stripe request refused: one connection",
                id.0
            );
            // The carrier sent behind the request is refused in turn.
            self.phase = Phase::Off;
            if self.plain {
                // Our first bytes went as the channel's ordinary data: the
                // rest follows them the same way, and the server's data
                // goes straight to stdout and stderr.
                if let Some(h) = &self.hub {
                    h.plain_only();
                }
                log!(
                    Debug1,
                    "channel {}: the stream's first bytes went as plain data; it goes on as an ordinary channel",
                    id.0
                );
                if let Some(io) = fds.get_mut(id) {
                    io.route_incoming_to(1, 2);
                }
                return Ok(Some(true));
            }
            self.hub = None;
            return Ok(Some(false));
        }
        self.phase = Phase::Striped;
        let hub = self.hub.clone().ok_or(StripingError::HubGone)?;
        let spawn = StripingError::Thread;
        if !self.plain {
            fds.insert(
                id,
                ChanIo::in_process(Box::new(StripedEnd::new(&hub, Stderr::Sink(2)))),
            );
            stripe::spawn_input(&hub, ChanFd::Borrowed(0)).map_err(spawn)?;
        }
        self.output = Some(stripe::spawn_output(&hub, ChanFd::Borrowed(1)).map_err(spawn)?);
        let remote = conn
            .channel_info(id)
            .map(|i| i.remote)
            .ok_or(StripingError::ChannelGone)?;
        if let (Some(g), Some(sid), Some(blob)) =
            (self.grant.take(), conn.session_id(), self.host_key.clone())
        {
            let first = self.counts(conn).0.saturating_sub(1).min(g.allowed);
            // Auto on a path one socket covers: the primary alone until a
            // loss shows.
            let gated = self.streams == Streams::Auto && first == 0;
            if gated {
                log!(
                    Debug1,
                    "channel {}: striped over this connection alone; more ({} granted) if it loses segments",
                    id.0,
                    g.allowed
                );
            } else {
                log!(
                    Debug1,
                    "channel {}: striped; dialling {first} secondary connections ({} granted)",
                    id.0,
                    g.allowed
                );
            }
            self.dialler = Some(Dialler {
                joiner: Arc::new(Mutex::new(Joiner::new(&g, sid))),
                host_key: blob,
                remote,
                allowed: g.allowed,
                dialled: 0,
                counts: Arc::default(),
                keys: Vec::new(),
                moved: Vec::new(),
            });
            self.dial(first);
            if self.streams == Streams::Auto && first < g.allowed {
                let rtt = conn.path_rtt().unwrap_or_default();
                self.steer = Some(AutoSteer::new(rtt, gated, self.primary_fd));
            }
        }
        Ok(Some(true))
    }

    /// Dials `k` more secondaries, each on its own thread.
    fn dial(&mut self, k: u32) {
        let (Some(d), Some(hub)) = (self.dialler.as_mut(), self.hub.as_ref()) else {
            return;
        };
        for _ in 0..k.min(d.allowed - d.dialled) {
            d.dialled += 1;
            let n = d.dialled;
            let key = ConnKey::next();
            d.keys.push(key);
            let moved = Arc::new(AtomicU64::new(0));
            d.moved.push(moved.clone());
            let s = Secondary {
                n,
                user: self.user.clone(),
                host_key: d.host_key.clone(),
                joiner: d.joiner.clone(),
                hub: hub.clone(),
                remote: d.remote,
                key,
                done: false,
                counts: d.counts.clone(),
                live: false,
                sock: None,
                moved,
                sampled: None,
            };
            d.counts.pending.fetch_add(1, Ordering::Relaxed);
            let (dial, proto) = (self.dial.clone(), self.proto.clone());
            let r = std::thread::Builder::new()
                .name(format!("stripe-{n}"))
                .spawn(move || s.run(&dial, proto));
            if let Err(e) = r {
                // The secondary was dropped with its closure: counted out.
                log!(Debug1, "secondary {n}: cannot start its thread: {e}");
            }
        }
    }

    /// `Streams auto`: once the last step's connections are up and warm,
    /// measures the channel's rate and adds connections while it helps.
    fn steer(&mut self) {
        let (Some(a), Some(d), Some(hub)) = (self.steer.as_mut(), &self.dialler, &self.hub) else {
            return;
        };
        match a.look(self.primary_fd, d, hub) {
            Look::Go => {}
            Look::Dial(k) => self.dial(k),
            Look::Stop => self.steer = None,
        }
    }

    /// How soon the primary's loop should turn for `auto`'s measurements.
    pub fn tick_interval(&self) -> Option<Duration> {
        self.steer.as_ref().map(|_| LOOK_EVERY)
    }

    /// The carrier on the primary opened (true) or not ours (false).
    pub fn on_opened(&mut self, fds: &mut ChannelFds, id: ChannelId) -> bool {
        if self.carrier != Some(id) {
            return false;
        }
        if let Some(end) = self.hub.as_ref().and_then(|h| CarrierEnd::new(h, self.key)) {
            fds.insert(id, ChanIo::in_process(Box::new(end)));
        }
        true
    }

    /// The carrier on the primary was refused: the transfer cannot start.
    pub fn on_open_failed(
        &mut self,
        id: ChannelId,
        description: &str,
    ) -> Result<bool, StripingError> {
        if self.carrier != Some(id) {
            return Ok(false);
        }
        if self.phase == Phase::Off {
            // Sent behind a stripe request that was refused: expected.
            return Ok(true);
        }
        Err(StripingError::CarrierRefused {
            channel: self.channel.map_or(0, |c| c.0),
            description: description.to_owned(),
        })
    }

    /// A channel request: the server's acknowledgement on the striped
    /// channel (true: taken).
    pub fn on_request(
        &mut self,
        id: ChannelId,
        request: &ChannelRequestKind,
    ) -> Result<bool, StripingError> {
        let ChannelRequestKind::Other { name, data } = request else {
            return Ok(false);
        };
        if name != ACK_REQUEST || self.channel != Some(id) {
            return Ok(false);
        }
        let Some(hub) = &self.hub else {
            return Err(StripingError::AckUnstriped);
        };
        stripe::handle_ack(hub, data).map_err(|error| StripingError::Ack {
            channel: id.0,
            error,
        })?;
        Ok(true)
    }

    /// The server's EOF on the striped channel.
    pub fn on_eof(&mut self, id: ChannelId) {
        if let (Some(h), true) = (&self.hub, self.channel == Some(id)) {
            h.on_peer_eof();
        }
    }

    /// Once per loop turn: `auto`'s steering, the due acknowledgement; a
    /// failure ends the run.
    pub fn tick(&mut self, conn: &mut Connection) -> Result<(), StripingError> {
        self.steer();
        match (&self.hub, self.channel) {
            (Some(h), Some(id)) => stripe::tick(h, conn, id).map_err(StripingError::Tick),
            _ => Ok(()),
        }
    }

    /// Connections the channel went over: the primary and every
    /// secondary dialled (for the `Metrics` summary).
    pub fn connections(&self) -> u32 {
        1 + self.dialler.as_ref().map_or(0, |d| d.dialled)
    }

    /// Why the striped transfer failed or stopped short, if it did: said
    /// instead of the connection's end when the server gave up first.
    pub fn failure_text(&self) -> Option<StripingError> {
        self.hub
            .as_ref()?
            .incomplete()
            .map(StripingError::Unfinished)
    }

    /// After the session ended: waits until the striped output is all
    /// written; an incomplete one is an error, never a success.
    pub fn finish(&mut self) -> Result<(), StripingError> {
        let Some(hub) = &self.hub else {
            return Ok(());
        };
        if let Some(t) = self.output.take() {
            let _ = t.join();
        }
        if let Some(f) = hub.failure() {
            return Err(StripingError::Failed(f));
        }
        if !hub.output_done() {
            let (acked, received) = hub.progress();
            return Err(StripingError::Incomplete {
                channel: hub.channel(),
                received,
                acked,
            });
        }
        Ok(())
    }
}
