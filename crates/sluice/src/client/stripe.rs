//! The client's side of channel striping (PROTOCOL.md, "Channel
//! striping"): `Streams N|auto` for a plain `sluice host command` (no pty,
//! no in-process end). After authentication on the primary it asks for a
//! grant; granted, it stripes the session channel before `exec`, opens a
//! carrier on the primary, and dials the secondaries, each in its own
//! thread with a pump of its own: same address, the primary's host key
//! required, joined with the grant's token, one carrier each. A grant
//! refused, a join failed or a secondary lost leaves the transfer on what
//! remains; chunks left with no carrier fail it loudly (exit 255).
//!
//! `Streams auto` stripes when one socket's buffer cannot cover the path
//! at 1 Gbit/s: it asks for a grant of [`AUTO_MAX`] connections, starts
//! with [`AUTO_STREAMS`] and adds the rest in steps while each raises the
//! rate the channel moves (streams_auto.rs); connections of a step that
//! did not help stay (a carrier is not taken back), but no more are added.
//! Where one socket covers the path it keeps one connection and no grant
//! is asked: with raised buffers, a second connection tried and kept cost
//! 14-17% against one at 100 ms and 23-25% at 240 ms (BENCHMARKS.md).

use crate::client::sftp::parallel::Streams;
use crate::client::streams_auto::{self, Steer, Step, AUTO_MAX};
use crate::client::{ClientOptions, Dial};
use crate::log;
use crate::net::crypto_pool::CryptoThreads;
use crate::net::pump::{ChanFd, ChanIo, ChannelFds, Handler, Pump};
use crate::net::stripe::{self, CarrierEnd, ConnKey, Hub, Stderr, StripedEnd};
use sluice_proto::crypto::SystemRng;
use sluice_proto::msg::ChannelRequestKind;
use sluice_proto::stripe::codec::{CarrierOpen, StripeGrant, StripeWanted};
use sluice_proto::stripe::token::Joiner;
use sluice_proto::stripe::{ACK_REQUEST, CARRIER_CHANNEL, STRIPE_REQUEST};
use sluice_proto::{ChannelId, ClientConfig, Config, Connection, Event};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Connections `Streams auto` starts with on a long path.
const AUTO_STREAMS: u32 = 4;
/// Round trips in one of `auto`'s measurements (and in the warm-up before
/// it, while new connections' TCP windows open), at least a second.
const AUTO_PERIOD_RTTS: u32 = 10;

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
}

/// Everything a secondary is dialled with, kept for `auto`'s later steps.
struct Dialler {
    joiner: Arc<Mutex<Joiner>>,
    host_key: Vec<u8>,
    remote: u32,
    /// Secondaries the grant allows, and dialled so far.
    allowed: u32,
    dialled: u32,
    counts: Arc<Counts>,
}

/// Secondaries coming up and up, counted by their threads.
#[derive(Default)]
struct Counts {
    /// Dialled, carrier not open yet (and not failed).
    pending: AtomicU32,
    /// With a carrier open.
    live: AtomicU32,
}

/// `Streams auto` steering a striped channel.
struct AutoSteer {
    steer: Steer,
    /// When the last step's connections were all up (warm-up from there).
    up_since: Option<Instant>,
}

impl ClientStripe {
    /// Striping for this run, when it may apply: a command on fds 0-2
    /// without a pty, `Streams` other than 1, no ProxyCommand (a -v line
    /// says why not).
    pub fn plan(opts: &ClientOptions, plan: &super::SessionPlan) -> Option<ClientStripe> {
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
            dial: super::Dial::of(opts),
            proto: opts.proto.clone(),
            user: opts.user.clone(),
            host_key: None,
            grant: None,
            hub: None,
            channel: None,
            carrier: None,
            key: ConnKey::next(),
            output: None,
            counts: None,
            dialler: None,
            steer: None,
        })
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

    /// Whether striping will be asked for: then the session is not opened
    /// ahead of the authentication answer (its channel waits for the grant).
    pub fn wanted(&mut self, conn: &Connection) -> bool {
        self.counts(conn).1 > 1
    }

    /// After authentication: asks for the grant (before anything else
    /// that could get a global reply), or decides against striping.
    pub fn on_authenticated(&mut self, conn: &mut Connection) -> Result<(), String> {
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
        conn.global_request(STRIPE_REQUEST, true, &wanted.encode())
            .map_err(|e| e.to_string())?;
        self.phase = Phase::AskingGrant;
        Ok(())
    }

    /// A global reply: ours while the grant is asked for (returns true).
    pub fn on_global_reply(&mut self, success: bool, data: &[u8]) -> Result<bool, String> {
        if self.phase != Phase::AskingGrant {
            return Ok(false);
        }
        self.phase = Phase::Off;
        if !success {
            log!(
                Debug1,
                "Striping declined by the server (not sluiced, or its MaxStreams is 1): one connection"
            );
            return Ok(true);
        }
        let g = StripeGrant::decode(data).map_err(|e| format!("stripe grant: {e}"))?;
        log!(
            Debug1,
            "Striping granted: up to {} secondary connections",
            g.allowed
        );
        self.grant = Some(g);
        self.phase = Phase::Idle;
        Ok(true)
    }

    /// On the session channel's open, before `exec`: asks to stripe it
    /// when granted. Returns true when the channel's ends wait for the
    /// answer (no data before it).
    pub fn on_session_opened(
        &mut self,
        conn: &mut Connection,
        id: ChannelId,
    ) -> Result<bool, String> {
        if self.grant.is_none() || self.phase != Phase::Idle {
            return Ok(false);
        }
        let req = ChannelRequestKind::Other {
            name: STRIPE_REQUEST.into(),
            data: Vec::new(),
        };
        conn.channel_request(id, req, true)
            .map_err(|e| e.to_string())?;
        self.channel = Some(id);
        self.phase = Phase::AskingChannel;
        Ok(true)
    }

    /// A reply on the session channel: ours while the stripe request is
    /// out (returns Some(whether the channel is striped)).
    pub fn on_channel_reply(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        success: bool,
    ) -> Result<Option<bool>, String> {
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
            self.phase = Phase::Off;
            return Ok(Some(false));
        }
        self.phase = Phase::Striped;
        let hub = Hub::new(id.0).map_err(|e| format!("striping: {e}"))?;
        hub.no_stderr();
        fds.insert(
            id,
            ChanIo::in_process(Box::new(StripedEnd::new(&hub, Stderr::Sink(2)))),
        );
        let spawn = |e: std::io::Error| format!("striping: cannot start a thread: {e}");
        stripe::spawn_input(&hub, ChanFd::Borrowed(0)).map_err(spawn)?;
        self.output = Some(stripe::spawn_output(&hub, ChanFd::Borrowed(1)).map_err(spawn)?);
        let remote = conn
            .channel_info(id)
            .map(|i| i.remote)
            .ok_or("striping: the session channel is gone")?;
        let open = CarrierOpen {
            striped_channel: remote,
        }
        .encode();
        self.carrier = Some(
            conn.open_channel(CARRIER_CHANNEL, &open)
                .map_err(|e| e.to_string())?,
        );
        self.hub = Some(hub);
        if let (Some(g), Some(sid), Some(blob)) =
            (self.grant.take(), conn.session_id(), self.host_key.clone())
        {
            let first = self.counts(conn).0.saturating_sub(1).min(g.allowed);
            log!(
                Debug1,
                "channel {}: striped; dialling {first} secondary connections ({} granted)",
                id.0,
                g.allowed
            );
            self.dialler = Some(Dialler {
                joiner: Arc::new(Mutex::new(Joiner::new(&g, sid))),
                host_key: blob,
                remote,
                allowed: g.allowed,
                dialled: 0,
                counts: Arc::default(),
            });
            self.dial(first);
            if self.streams == Streams::Auto && first < g.allowed {
                let rtt = conn.path_rtt().unwrap_or_default();
                let period = (rtt * AUTO_PERIOD_RTTS).max(Duration::from_secs(1));
                self.steer = Some(AutoSteer {
                    steer: Steer::new(Instant::now(), 0, period),
                    up_since: None,
                });
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
            let s = Secondary {
                n,
                user: self.user.clone(),
                host_key: d.host_key.clone(),
                joiner: d.joiner.clone(),
                hub: hub.clone(),
                remote: d.remote,
                key: ConnKey::next(),
                done: false,
                counts: d.counts.clone(),
                live: false,
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
        let now = Instant::now();
        let (acked, received) = hub.progress();
        let moved = acked + received;
        if d.counts.pending.load(Ordering::Relaxed) > 0 || moved == 0 {
            // Connections still coming up, or nothing flowing yet.
            a.up_since = None;
            a.steer.mark(now, moved);
            return;
        }
        let up = *a.up_since.get_or_insert(now);
        if now.duration_since(up) < a.steer.period() {
            // Warm-up: the new connections' TCP windows are still opening.
            a.steer.mark(now, moved);
            return;
        }
        let live = 1 + d.counts.live.load(Ordering::Relaxed) as usize;
        let room = (d.allowed - d.dialled) as usize;
        match a.steer.decide(now, moved, live) {
            Step::Wait => {}
            Step::Add(k) if room > 0 => {
                a.up_since = None;
                self.dial(k.min(room) as u32);
            }
            Step::Add(_) => {
                log!(
                    Debug1,
                    "Streams auto: the server's grant allows no more connections"
                );
                self.steer = None;
            }
            Step::GiveBack(k) => {
                log!(
                    Debug1,
                    "Streams auto: the last {k} connection(s) stay (a carrier is not taken back); no more are added"
                );
                self.steer = None;
            }
            Step::Settle => self.steer = None,
        }
    }

    /// How soon the primary's loop should turn for `auto`'s measurements.
    pub fn tick_interval(&self) -> Option<Duration> {
        self.steer.as_ref().map(|_| Duration::from_millis(100))
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
    pub fn on_open_failed(&mut self, id: ChannelId, description: &str) -> Result<bool, String> {
        if self.carrier != Some(id) {
            return Ok(false);
        }
        Err(format!(
            "channel {}: the server refused the striped channel's carrier: {description}",
            self.channel.map_or(0, |c| c.0)
        ))
    }

    /// A channel request: the server's acknowledgement on the striped
    /// channel (true: taken).
    pub fn on_request(
        &mut self,
        id: ChannelId,
        request: &ChannelRequestKind,
    ) -> Result<bool, String> {
        let ChannelRequestKind::Other { name, data } = request else {
            return Ok(false);
        };
        if name != ACK_REQUEST || self.channel != Some(id) {
            return Ok(false);
        }
        let Some(hub) = &self.hub else {
            return Err("striping: acknowledgement on a channel that is not striped".into());
        };
        stripe::handle_ack(hub, data).map_err(|e| format!("channel {}: {e}", id.0))?;
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
    pub fn tick(&mut self, conn: &mut Connection) -> Result<(), String> {
        self.steer();
        match (&self.hub, self.channel) {
            (Some(h), Some(id)) => stripe::tick(h, conn, id),
            _ => Ok(()),
        }
    }

    /// Why the striped transfer failed or stopped short, if it did: said
    /// instead of the connection's end when the server gave up first.
    pub fn failure_text(&self) -> Option<String> {
        self.hub.as_ref()?.incomplete()
    }

    /// After the session ended: waits until the striped output is all
    /// written; an incomplete one is an error, never a success.
    pub fn finish(&mut self) -> Result<(), String> {
        let Some(hub) = &self.hub else {
            return Ok(());
        };
        if let Some(t) = self.output.take() {
            let _ = t.join();
        }
        if let Some(f) = hub.failure() {
            return Err(match f {
                stripe::Failure::Protocol(t) | stripe::Failure::Stranded(t) => t,
            });
        }
        if !hub.output_done() {
            let (acked, received) = hub.progress();
            return Err(format!(
                "channel {}: striped transfer incomplete: {received} bytes received, {acked} acknowledged by the server",
                hub.channel()
            ));
        }
        Ok(())
    }
}

/// `Streams auto`'s counts: when the path's bandwidth-delay product (at
/// [`streams_auto::ASSUMED_RATE`]) exceeds what one socket may buffer, a grant of
/// [`AUTO_MAX`] asked and [`AUTO_STREAMS`] to start with (measurements add
/// the rest); else one connection and no grant.
fn auto_counts(conn: &Connection) -> (u32, u32) {
    let Some(rtt) = conn.path_rtt() else {
        log!(
            Debug1,
            "Streams auto: no path RTT measured yet: one connection"
        );
        return (1, 1);
    };
    let (bdp, cap) = streams_auto::bdp_and_cap(rtt);
    let stripe = bdp > cap;
    log!(
        Debug1,
        "Streams auto: RTT {:?}, bandwidth-delay product at 1 Gbit/s {} against one socket's send buffer cap {}: {}",
        rtt,
        crate::net::sockbuf::human(bdp),
        crate::net::sockbuf::human(cap),
        if stripe {
            format!("starting with {AUTO_STREAMS} connections, up to {AUTO_MAX} while each step helps")
        } else {
            "one connection".to_owned()
        }
    );
    if stripe {
        (AUTO_STREAMS, AUTO_MAX as u32)
    } else {
        (1, 1)
    }
}

/// One secondary connection: dial, key exchange showing the primary's host
/// key, join, one carrier.
struct Secondary {
    n: u32,
    user: String,
    host_key: Vec<u8>,
    joiner: Arc<Mutex<Joiner>>,
    hub: Arc<Hub>,
    remote: u32,
    key: ConnKey,
    done: bool,
    counts: Arc<Counts>,
    /// Its carrier is open (counted live).
    live: bool,
}

impl Secondary {
    fn run(mut self, dial: &Dial, proto: Config) {
        let n = self.n;
        let sock = match dial.connect() {
            Ok(s) => s,
            Err(e) => {
                log!(Debug1, "secondary {n}: {e}; going on without it");
                return;
            }
        };
        let mut conn = Connection::client(ClientConfig { common: proto }, Box::new(SystemRng));
        let mut pump = Pump::new(std::os::fd::AsRawFd::as_raw_fd(&sock));
        pump.set_crypto_threads(&mut conn, CryptoThreads::Fixed(1));
        match pump.run(&mut conn, &mut self) {
            Ok(()) => log!(Debug1, "secondary {n}: closed"),
            Err(e) => log!(Debug1, "{e}; going on without it"),
        }
    }
}

impl Drop for Secondary {
    /// Counted out however its thread ends.
    fn drop(&mut self) {
        let c = if self.live {
            &self.counts.live
        } else {
            &self.counts.pending
        };
        c.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Handler for Secondary {
    fn on_event(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        event: Event,
    ) -> Result<(), String> {
        let n = self.n;
        match event {
            Event::HostKey { key_blob, .. } => {
                if key_blob == self.host_key {
                    conn.accept_host_key();
                } else {
                    conn.reject_host_key();
                    return Err(format!(
                        "secondary {n}: the server showed another host key than the primary's: dropped"
                    ));
                }
            }
            Event::AuthReady => {
                let mut j = self.joiner.lock().unwrap_or_else(|p| p.into_inner());
                let number = conn
                    .auth_stripe_join(&self.user, &mut j)
                    .map_err(|e| format!("secondary {n}: {e}"))?;
                log!(Debug1, "secondary {n}: joining as number {number}");
            }
            Event::AuthFailure { .. } => {
                return Err(format!(
                    "secondary {n}: the server refused the join (its sluiced may not admit secondaries yet)"
                ));
            }
            Event::Authenticated { .. } => {
                let open = CarrierOpen {
                    striped_channel: self.remote,
                }
                .encode();
                conn.open_channel(CARRIER_CHANNEL, &open)
                    .map_err(|e| e.to_string())?;
            }
            Event::ChannelOpened(id) => match CarrierEnd::new(&self.hub, self.key) {
                Some(end) => {
                    log!(Debug1, "secondary {n}: carrier open");
                    fds.insert(id, ChanIo::in_process(Box::new(end)));
                    if !self.live {
                        self.live = true;
                        self.counts.pending.fetch_sub(1, Ordering::Relaxed);
                        self.counts.live.fetch_add(1, Ordering::Relaxed);
                    }
                }
                None => {
                    let _ = conn.close_channel(id);
                    self.done = true;
                }
            },
            Event::ChannelOpenFailed { description, .. } => {
                return Err(format!("secondary {n}: carrier refused: {description}"));
            }
            Event::ChannelClosed(_) => self.done = true,
            Event::GlobalRequest {
                want_reply: true, ..
            } => conn.answer_global(false, &[]),
            _ => {}
        }
        Ok(())
    }

    fn tick_interval(&self) -> Option<Duration> {
        None
    }

    fn finished(&self) -> bool {
        self.done
    }
}
