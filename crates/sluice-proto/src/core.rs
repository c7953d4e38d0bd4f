//! [`Connection`]: one SSH connection as a sans-IO state machine, and the
//! dispatch of received packets to the layers. The layers add their own
//! `impl Connection` blocks in [`crate::kex`], [`crate::auth`] and
//! [`crate::connection`], one file each, in RFC order.
//!
//! Poll order for a runtime: feed input with [`Connection::handle_input`]
//! until it consumes nothing, deliver the channel data it returns, drain
//! [`Connection::poll_event`], answer what needs answering, then write what
//! [`Connection::poll_transmit`] and `send_data` append to the output buffer.

use crate::auth::AuthState;
use crate::config::{ClientConfig, Config, ServerConfig};
use crate::connection::Channels;
use crate::crypto::Rng;
use crate::error::{Error, FloodKind, Phase, Violation};
use crate::event::{ChannelId, Event};
use crate::kex::KexMachine;
use crate::msg::{self, Disconnect, DisconnectReason};
use crate::transport::recv::{Opened, Payload, RecvState};
use crate::transport::send::SendState;
use crate::transport::version::{VersionReader, VersionStep};
use crate::wire::{MsgNum, WireError, Writer};
use std::collections::VecDeque;
use std::time::Instant;

/// Control payloads (replies, adjusts) queued but not yet framed, in bytes:
/// an honest peer never gets near it; a peer that floods requests while not
/// reading, or during a key exchange, is disconnected past it.
pub(crate) const MAX_QUEUED_CONTROL: usize = 4 << 20;
/// What a queued payload costs beyond its bytes (allocation, deque slot).
const PER_PAYLOAD: usize = 64;
/// UNIMPLEMENTED answers before authentication (unknown numbers and
/// connection messages together).
pub(crate) const MAX_UNIMPLEMENTED_BEFORE_AUTH: u32 = 32;

/// Which end of the connection we are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// We connected.
    Client,
    /// We accepted.
    Server,
}

/// Channel data received, borrowed from the caller's input buffer.
#[derive(Debug, PartialEq, Eq)]
pub struct ChannelData<'a> {
    /// The channel.
    pub channel: ChannelId,
    /// `None` for CHANNEL_DATA, `Some(1)` for stderr (EXTENDED_DATA type 1).
    pub ext: Option<u32>,
    /// The bytes, decrypted in place. Report them with `consumed` once written out.
    pub data: &'a [u8],
}

/// What one call of [`Connection::handle_input`] did.
#[derive(Debug, PartialEq, Eq)]
pub struct Received<'a> {
    /// Bytes of input used; 0 when a whole packet is not there yet.
    pub consumed: usize,
    /// Channel data in the packet, if it was one.
    pub data: Option<ChannelData<'a>>,
}

/// One SSH connection, client or server.
pub struct Connection {
    pub(crate) role: Role,
    pub(crate) config: Config,
    pub(crate) server: Option<ServerConfig>,
    pub(crate) rng: Box<dyn Rng>,
    pub(crate) version_reader: VersionReader,
    pub(crate) our_version: String,
    pub(crate) peer_version: Option<String>,
    pub(crate) banner_sent: bool,
    /// A server's answer to a client whose identification line is bad,
    /// in plain text after our banner, as sshd sends it.
    pub(crate) version_refusal: bool,
    pub(crate) send: SendState,
    pub(crate) recv: RecvState,
    /// Payloads waiting to be sealed, in order.
    pub(crate) outbox: VecDeque<Vec<u8>>,
    /// Non-KEX payloads held while a key exchange is in progress.
    pub(crate) held: VecDeque<Vec<u8>>,
    pub(crate) events: VecDeque<Event>,
    pub(crate) kex: KexMachine,
    pub(crate) auth: AuthState,
    pub(crate) channels: Channels,
    pub(crate) closed: bool,
    pub(crate) last_kex_at: Option<Instant>,
    /// Open whole received packets ahead in batches.
    pub(crate) batch_open: bool,
    /// What the runtime allowed of the NONE cipher and MAC.
    pub(crate) none: crate::kex::NoneState,
    /// The latest time the runtime gave us (windows measure with it).
    pub(crate) clock: Option<Instant>,
    /// The path's round-trip time, as the runtime measured it.
    pub(crate) path_rtt: Option<std::time::Duration>,
    /// The socket's receive buffer (0: unknown), see `set_path_recv_buffer`.
    pub(crate) path_recv_buffer: u32,
    /// Bytes held outside channel windows, counted in their budget (see
    /// `set_buffered_elsewhere`).
    pub(crate) buffered_elsewhere: u64,
    /// Bytes of control payloads in `outbox` and `held` (with a per-payload
    /// overhead), capped at [`MAX_QUEUED_CONTROL`].
    pub(crate) queued_bytes: usize,
    /// Global requests and the replies owed, in order.
    pub(crate) globals: crate::connection::global::Globals,
    /// Test hook: IGNORE/DEBUG before packets (see `test_hooks`).
    #[cfg(any(feature = "test-hooks", fuzzing))]
    pub(crate) noise: bool,
    /// Server: stop consuming input at the handover point (`crate::handover`).
    pub(crate) handover: bool,
}

impl Connection {
    pub(crate) fn new(
        role: Role,
        config: Config,
        server: Option<ServerConfig>,
        rng: Box<dyn Rng>,
    ) -> Self {
        let our_version = config.version.clone();
        Connection {
            role,
            config,
            server,
            rng,
            version_reader: VersionReader::default(),
            our_version,
            peer_version: None,
            banner_sent: false,
            version_refusal: false,
            send: SendState::new(),
            recv: RecvState::new(),
            outbox: VecDeque::new(),
            held: VecDeque::new(),
            events: VecDeque::new(),
            kex: KexMachine::default(),
            auth: AuthState::default(),
            channels: Channels::default(),
            closed: false,
            last_kex_at: None,
            batch_open: false,
            none: crate::kex::NoneState::default(),
            clock: None,
            path_rtt: None,
            path_recv_buffer: 0,
            buffered_elsewhere: 0,
            queued_bytes: 0,
            globals: Default::default(),
            #[cfg(any(feature = "test-hooks", fuzzing))]
            noise: false,
            handover: false,
        }
    }

    /// A client connection; its banner and KEXINIT are ready to send at once.
    pub fn client(config: ClientConfig, rng: Box<dyn Rng>) -> Self {
        let mut c = Connection::new(Role::Client, config.common, None, rng);
        c.send_kexinit();
        c
    }

    /// A server connection; its banner and KEXINIT are ready to send at once.
    pub fn server(config: ServerConfig, rng: Box<dyn Rng>) -> Self {
        let common = config.common.clone();
        let mut c = Connection::new(Role::Server, common, Some(config), rng);
        c.send_kexinit();
        c
    }

    /// Which end we are.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The peer's identification line, once received.
    pub fn peer_version(&self) -> Option<&str> {
        self.peer_version.as_deref()
    }

    /// The session identifier (the first exchange hash), once known.
    pub fn session_id(&self) -> Option<&[u8]> {
        self.kex.session_id.as_deref()
    }

    /// True once the connection has ended (DISCONNECT sent or received).
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Raw and compressed byte counts of each direction (outgoing, incoming)
    /// as `(raw, compressed)`, when compression was used.
    #[allow(clippy::type_complexity)]
    pub fn compression_stats(&self) -> (Option<(u64, u64)>, Option<(u64, u64)>) {
        (self.send.compression.stats(), self.recv.compression.stats())
    }

    /// The next event, if any.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Events wait to be polled. Sending can queue one too (a key
    /// exchange completes when our NEWKEYS goes out after the peer's
    /// arrived): a runtime that sleeps after transmitting checks this first.
    #[must_use]
    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// Processes input from the peer: at most one line or packet per call.
    ///
    /// Returns how much input was used (0: need more bytes) and, for
    /// channel data, the decrypted bytes borrowed from `input`. On error a
    /// DISCONNECT is queued for [`Connection::poll_transmit`] and the
    /// connection is closed.
    pub fn handle_input<'a>(
        &'a mut self,
        now: Instant,
        input: &'a mut [u8],
    ) -> Result<Received<'a>, Error> {
        if self.closed {
            return Err(Error::Closed);
        }
        self.clock = Some(now);
        if self.handover_holds_input() {
            return Ok(Received {
                consumed: 0,
                data: None,
            });
        }
        match self.input_inner(now, input) {
            Ok((consumed, Some((channel, ext, range, in_scratch)))) => {
                let src: &'a [u8] = if in_scratch {
                    &self.recv.scratch
                } else {
                    input
                };
                let data = src.get(range).unwrap_or_default();
                Ok(Received {
                    consumed,
                    data: Some(ChannelData { channel, ext, data }),
                })
            }
            Ok((consumed, None)) => Ok(Received {
                consumed,
                data: None,
            }),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Ends the connection after an error: queues a DISCONNECT for protocol
    /// violations and marks the connection closed.
    pub(crate) fn fail(&mut self, e: Error) -> Error {
        let bad_line = matches!(
            &e,
            Error::Protocol(Violation::BadVersion(_) | Violation::VersionTooLong)
        );
        if bad_line && self.role == Role::Server && self.peer_version.is_none() {
            // No packet can be read by a peer that sent no identification:
            // sshd answers in plain text, and so do we.
            self.outbox.clear();
            self.version_refusal = true;
        } else if let Error::Protocol(v) = &e {
            self.queue_disconnect(v.reason_code(), &v.to_string());
        }
        self.closed = true;
        e
    }

    /// Sends DISCONNECT and closes: for the runtime giving up (auth exhausted, user abort).
    pub fn disconnect(&mut self, reason: DisconnectReason, description: &str) {
        if !self.closed {
            self.queue_disconnect(reason.0, description);
            self.closed = true;
        }
    }

    fn queue_disconnect(&mut self, reason: u32, description: &str) {
        let mut p = Vec::new();
        Disconnect {
            reason_code: reason,
            description: description.to_owned(),
            language: String::new(),
        }
        .encode(&mut p);
        // DISCONNECT may go out even in the middle of a key exchange.
        self.outbox.push_back(p);
    }

    #[allow(clippy::type_complexity)]
    fn input_inner(
        &mut self,
        now: Instant,
        input: &mut [u8],
    ) -> Result<
        (
            usize,
            Option<(ChannelId, Option<u32>, std::ops::Range<usize>, bool)>,
        ),
        Error,
    > {
        if self.peer_version.is_none() {
            let allow = self.role == Role::Client;
            return match self.version_reader.step(input, allow)? {
                VersionStep::NeedMore => Ok((0, None)),
                VersionStep::Skipped(n) => Ok((n, None)),
                VersionStep::Done(v, n) => {
                    self.peer_version = Some(v);
                    Ok((n, None))
                }
            };
        }
        let (consumed, payload, seq) = match self.recv.open(input)? {
            Opened::NeedMore => return Ok((0, None)),
            Opened::Packet {
                consumed,
                payload,
                seq,
            } => (consumed, payload, seq),
        };
        // The payload is either in `input` or in the receive scratch buffer;
        // take the scratch out while dispatching so `self` stays borrowable.
        let scratch = std::mem::take(&mut self.recv.scratch);
        let (p, base, in_scratch) = match &payload {
            Payload::Input(r) => (input.get(r.clone()).unwrap_or_default(), r.start, false),
            Payload::Scratch => (scratch.as_slice(), 0, true),
        };
        let res = self.dispatch(now, p, seq);
        self.recv.scratch = scratch;
        let data =
            res?.map(|(ch, ext, sub)| (ch, ext, base + sub.start..base + sub.end, in_scratch));
        self.maybe_rekey(now);
        Ok((consumed, data))
    }

    /// Handles one payload; for channel data returns the data's range within it.
    #[allow(clippy::type_complexity)]
    fn dispatch(
        &mut self,
        now: Instant,
        payload: &[u8],
        seq: u32,
    ) -> Result<Option<(ChannelId, Option<u32>, std::ops::Range<usize>)>, Error> {
        let num = msg::msg_num(payload).ok_or(Violation::EmptyPayload)?;
        if self.kex.in_initial_strict_kex() && !num.is_kex() {
            return Err(Violation::StrictKex(num).into());
        }
        if self.kex.first_kexinit_pending() && num != MsgNum::KEXINIT && self.kex.strict_offered {
            // A strict-KEX peer's first packet must be KEXINIT; we cannot yet know
            // if the peer is strict, so only transport-generic noise is tolerated.
            if !(1..=4).contains(&num.0) {
                return Err(Violation::UnexpectedMessage {
                    num,
                    state: Phase::BeforeKexInit,
                }
                .into());
            }
        }
        let bad = |e: WireError| Error::Protocol(Violation::Malformed(num, e));
        match num {
            MsgNum::DISCONNECT => {
                let d = msg::Disconnect::decode(payload).map_err(bad)?;
                self.closed = true;
                Err(Error::PeerDisconnected {
                    reason: d.reason_code,
                    description: d.description,
                })
            }
            MsgNum::IGNORE => Ok(None),
            MsgNum::UNIMPLEMENTED => {
                if let Some(seq) = crate::auth::early_open::unimplemented_seq(payload) {
                    self.on_unimplemented(seq);
                }
                Ok(None)
            }
            MsgNum::DEBUG => {
                let d = msg::Debug::decode(payload).map_err(bad)?;
                if d.always_display {
                    self.events.push_back(Event::Debug(d.message));
                }
                Ok(None)
            }
            n if n.0 >= 80 && self.unimplemented_before_auth(seq)? => Ok(None),
            MsgNum::CHANNEL_DATA | MsgNum::CHANNEL_EXTENDED_DATA => {
                self.require_authenticated(num)?;
                self.handle_channel_data(payload).map(Some)
            }
            n if n.is_kex() => {
                self.handle_kex(now, n, payload, seq)?;
                Ok(None)
            }
            n if (50..=79).contains(&n.0)
                || n == MsgNum::SERVICE_REQUEST
                || n == MsgNum::SERVICE_ACCEPT
                || n == MsgNum::EXT_INFO =>
            {
                self.handle_auth(n, payload)?;
                Ok(None)
            }
            n if (80..=127).contains(&n.0) => {
                self.require_authenticated(n)?;
                self.handle_connection(n, payload)?;
                Ok(None)
            }
            _ => {
                // Unknown numbers: a stranger gets a few answers, then the
                // door (sshd answers each; the queue caps bound it there).
                if !self.auth.authenticated {
                    self.auth.early_unimplemented += 1;
                    if self.auth.early_unimplemented > MAX_UNIMPLEMENTED_BEFORE_AUTH {
                        return Err(Violation::Flood(FloodKind::UnknownBeforeAuth).into());
                    }
                }
                let mut p = Vec::new();
                Writer::new(&mut p).u8(MsgNum::UNIMPLEMENTED.0).u32(seq);
                self.queue(p);
                Ok(None)
            }
        }
    }

    fn require_authenticated(&self, num: MsgNum) -> Result<(), Error> {
        if self.auth.authenticated {
            Ok(())
        } else {
            Err(Violation::UnexpectedMessage {
                num,
                state: Phase::BeforeAuthentication,
            }
            .into())
        }
    }

    /// Queues a payload for sealing, holding non-KEX payloads while a key
    /// exchange is in progress (RFC 4253 7.1).
    pub(crate) fn queue(&mut self, payload: Vec<u8>) {
        let kex_msg = msg::msg_num(&payload).is_some_and(|n| n.is_kex() || n == MsgNum::DISCONNECT);
        let held = self.kex.sending_blocked() && !kex_msg;
        let queue = if held {
            &mut self.held
        } else {
            &mut self.outbox
        };
        queue.push_back(payload);
        // Replies pile up only when the peer asks faster than they go out
        // (during a key exchange, or while the runtime cannot write): past
        // the cap the connection ends, as sshd's buffers end it.
        self.queued_bytes += queue.back().map_or(0, Vec::len) + PER_PAYLOAD;
        if self.queued_bytes > MAX_QUEUED_CONTROL && !self.closed {
            let what = if held {
                FloodKind::HeldDuringKex
            } else {
                FloodKind::QueuedForSending
            };
            let _ = self.fail(Violation::Flood(what).into());
        }
    }

    /// Appends every queued control packet, sealed, to `out`.
    pub fn poll_transmit(&mut self, now: Instant, out: &mut Vec<u8>) {
        self.clock = Some(now);
        self.transmit_queued(now, out);
        // Everything in `out` must be compressed and sealed before the
        // runtime writes it.
        self.send
            .compress_pending(out, self.rng.as_mut(), &mut |_| {});
        self.check_compression();
        self.send.seal_pending(out, &mut |_| {});
    }

    /// Frames queued control packets into `out`; with batch crypto on they
    /// may still wait for their seal.
    pub(crate) fn transmit_queued(&mut self, now: Instant, out: &mut Vec<u8>) {
        if !self.banner_sent {
            out.extend_from_slice(self.our_version.as_bytes());
            out.extend_from_slice(b"\r\n");
            self.banner_sent = true;
        }
        if std::mem::take(&mut self.version_refusal) {
            out.extend_from_slice(b"Invalid SSH identification string.\r\n");
            return;
        }
        self.maybe_rekey(now);
        while let Some(p) = self.outbox.pop_front() {
            self.queued_bytes = self.queued_bytes.saturating_sub(p.len() + PER_PAYLOAD);
            // EXT_INFO must follow NEWKEYS directly (RFC 8308 2.4).
            if msg::msg_num(&p) != Some(MsgNum::EXT_INFO) {
                self.noise_before_packet(out);
            }
            match self.early_open_wire_form(&p) {
                Some(w) => self.send.send(&w, out, self.rng.as_mut()),
                None => self.send.send(&p, out, self.rng.as_mut()),
            }
            self.after_sent(&p);
        }
    }

    /// Bookkeeping after a payload went out: key and compression switches.
    fn after_sent(&mut self, payload: &[u8]) {
        match msg::msg_num(payload) {
            Some(MsgNum::NEWKEYS) => self.newkeys_sent(),
            Some(MsgNum::USERAUTH_SUCCESS) => self.start_delayed_compression(),
            Some(MsgNum::CHANNEL_OPEN) if self.auth.early_open.is_some() => {
                self.early_open_sent(payload)
            }
            _ => {}
        }
    }

    /// When the engine next needs [`Connection::handle_timeout`] (re-key by time).
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let t = self.config.rekey_time?;
        self.last_kex_at.map(|at| at + t)
    }

    /// Lets time-based work happen (a re-key whose time has come).
    pub fn handle_timeout(&mut self, now: Instant) {
        self.maybe_rekey(now);
    }

    /// Starts a re-key now unless one is already running. An engine in
    /// handover mode leaves re-keys to the one continuing the connection:
    /// one it started could not finish while it holds the input.
    pub fn rekey(&mut self) {
        if !self.kex.in_progress()
            && self.kex.session_id.is_some()
            && !self.closed
            && !self.handover
        {
            self.send_kexinit();
        }
    }

    fn maybe_rekey(&mut self, now: Instant) {
        if self.poll_timeout().is_some_and(|t| now >= t) {
            self.rekey();
        } else {
            self.rekey_if_bytes_due();
        }
    }

    /// Starts a re-key when either direction passed `RekeyLimit` bytes.
    pub(crate) fn rekey_if_bytes_due(&mut self) {
        let limit = self.config.rekey_bytes;
        let bytes_due = limit > 0 && (self.send.bytes >= limit || self.recv.bytes >= limit);
        if bytes_due || packets_due(self.send.packets(), self.recv.packets()) {
            self.rekey();
        }
    }

    /// Encodes `f`'s message and queues it.
    pub(crate) fn queue_with(&mut self, f: impl FnOnce(&mut Vec<u8>)) {
        let mut p = Vec::new();
        f(&mut p);
        self.queue(p);
    }
}

/// Packets under one set of keys before a re-key, whatever RekeyLimit says:
/// RFC 4344 3.1 asks for one before 2^32 (the sequence number, which is
/// the nonce of umac and chacha20-poly1305, would repeat); OpenSSH re-keys
/// at 2^31, and so do we.
const MAX_PACKETS_PER_KEY: u64 = 1 << 31;

fn packets_due(sent: u64, received: u64) -> bool {
    sent >= MAX_PACKETS_PER_KEY || received >= MAX_PACKETS_PER_KEY
}

#[cfg(test)]
mod rekey_packet_tests {
    #[test]
    fn packets_due_at_two_to_the_31() {
        assert!(!super::packets_due(0, 0));
        assert!(!super::packets_due((1 << 31) - 1, (1 << 31) - 1));
        assert!(super::packets_due(1 << 31, 0));
        assert!(super::packets_due(0, 1 << 31));
    }
}
