//! The connection protocol (RFC 4254): channels, their windows and requests,
//! and global requests. Channel data has a hand-written fast path in
//! [`data`]; the rest is here.

pub mod channel;
pub mod data;
pub mod global;
pub mod window;

pub(crate) use channel::{Channel, ChannelState, Channels};
use window::RecvWindow;

use crate::core::Connection;
use crate::error::{Error, Phase, Violation};
use crate::event::{ChannelId, Event};
use crate::msg::{self, ChannelRequestKind};
use crate::wire::{MsgNum, WireError};

/// RFC 4254 5.1 reason: resource shortage.
const RESOURCE_SHORTAGE: u32 = 4;

/// Receive window of a channel with a pty: OpenSSH's 2 MiB. Typing needs
/// no more, and a smaller window bounds what a runaway command buffers.
const INTERACTIVE_WINDOW: u32 = 2 * 1024 * 1024;

/// Largest window advertised to stock OpenSSH by default: no cap. HPN-SSH
/// clamps to 15 MiB for OpenSSH 8.9-9.x, whose throughput it saw collapse
/// with windows of 16 MiB or more; with Debian's 9.2 as the sender, a window
/// grown to 128 MiB moved 512 MiB over 240 ms in 10.3 s against 14.2 s with
/// the clamp, and the same 4.7 s at 10 ms (BENCHMARKS.md), so the cap stays
/// a setting (`Config::stock_openssh_window_max`) and is off.
pub(crate) const STOCK_OPENSSH_WINDOW_MAX: u32 = u32::MAX;

/// The least receive window a new channel gets when the connection's
/// budget is spent: one full packet, so it still moves.
pub(crate) const MIN_CHANNEL_WINDOW: u32 = 256 * 1024;

/// Window a bulk channel starts with toward stock OpenSSH: its own 2 MiB,
/// grown from there only as the path needs (see `window`). OpenSSH queues
/// up to a whole window of packets in its own output buffer when the
/// socket is slower than its crypto, and pays for it: as the sender over a
/// 1 Gbit/s path at 0 ms, Debian's 9.2 moved 1 GiB in 10.5-11.0 s into a
/// 16 MiB window against 9.35-9.4 s into one starting at 2 MiB. sluice's
/// own sender keeps at most 1 MiB sealed ahead, so toward sluice the
/// window starts at `Config::window`.
const STOCK_OPENSSH_WINDOW_START: u32 = 2 * 1024 * 1024;

impl Connection {
    /// Handles messages 80-100 except channel data.
    pub(crate) fn handle_connection(&mut self, num: MsgNum, payload: &[u8]) -> Result<(), Error> {
        let bad = |e: WireError| Error::Protocol(Violation::Malformed(num, e));
        match num {
            MsgNum::GLOBAL_REQUEST | MsgNum::REQUEST_SUCCESS | MsgNum::REQUEST_FAILURE => {
                self.handle_global(num, payload)?;
            }
            MsgNum::CHANNEL_OPEN => self.on_channel_open(num, payload)?,
            MsgNum::CHANNEL_OPEN_CONFIRMATION => self.on_open_confirmation(num, payload)?,
            MsgNum::CHANNEL_OPEN_FAILURE => self.on_open_failure(num, payload)?,
            MsgNum::CHANNEL_WINDOW_ADJUST => {
                let a = msg::ChannelWindowAdjust::decode(payload).map_err(bad)?;
                let ch = self.open_channel_mut(a.recipient_channel)?;
                // RFC 4254 5.2: the window may not exceed 2^32-1; clamp.
                ch.send_window = ch.send_window.saturating_add(a.bytes_to_add);
                self.events
                    .push_back(Event::ChannelWindow(ChannelId(a.recipient_channel)));
            }
            MsgNum::CHANNEL_EOF => {
                let e = msg::ChannelEof::decode(payload).map_err(bad)?;
                self.open_channel_mut(e.recipient_channel)?.eof_received = true;
                self.events
                    .push_back(Event::ChannelEof(ChannelId(e.recipient_channel)));
            }
            MsgNum::CHANNEL_CLOSE => self.on_channel_close(num, payload)?,
            MsgNum::CHANNEL_REQUEST => {
                let r = msg::ChannelRequest::decode(payload).map_err(bad)?;
                let ch = self.open_channel_mut(r.recipient_channel)?;
                if matches!(r.request, ChannelRequestKind::PtyReq { .. }) {
                    ch.recv.shrink_to(INTERACTIVE_WINDOW);
                }
                self.events.push_back(Event::ChannelRequest {
                    channel: ChannelId(r.recipient_channel),
                    want_reply: r.want_reply,
                    request: r.request,
                });
            }
            MsgNum::CHANNEL_SUCCESS | MsgNum::CHANNEL_FAILURE => {
                let id = if num == MsgNum::CHANNEL_SUCCESS {
                    msg::ChannelSuccess::decode(payload)
                        .map_err(bad)?
                        .recipient_channel
                } else {
                    msg::ChannelFailure::decode(payload)
                        .map_err(bad)?
                        .recipient_channel
                };
                self.open_channel_mut(id)?;
                let success = num == MsgNum::CHANNEL_SUCCESS;
                self.events.push_back(Event::ChannelReply {
                    channel: ChannelId(id),
                    success,
                });
            }
            _ => {
                return Err(Violation::UnexpectedMessage {
                    num,
                    state: Phase::Connection,
                }
                .into())
            }
        }
        Ok(())
    }

    /// CHANNEL_OPEN: a channel the peer opens, for the runtime to accept or refuse.
    fn on_channel_open(&mut self, num: MsgNum, payload: &[u8]) -> Result<(), Error> {
        let bad = |e: WireError| Error::Protocol(Violation::Malformed(num, e));
        let o = msg::ChannelOpen::decode(payload).map_err(bad)?;
        let Some(id) = self.channels.alloc() else {
            let f = msg::ChannelOpenFailure {
                recipient_channel: o.sender_channel,
                reason_code: RESOURCE_SHORTAGE,
                description: "too many channels".into(),
                language: String::new(),
            };
            self.queue_with(|p| f.encode(p));
            return Ok(());
        };
        let ch = Channel::new(
            ChannelState::PeerOpening,
            o.sender_channel,
            o.initial_window,
            o.max_packet,
            self.recv_window(),
        );
        self.channels.insert(id, ch);
        self.events.push_back(Event::ChannelOpenRequest {
            channel: id,
            channel_type: o.channel_type,
            data: o.data,
        });
        Ok(())
    }

    /// Our open accepted.
    fn on_open_confirmation(&mut self, num: MsgNum, payload: &[u8]) -> Result<(), Error> {
        let bad = |e: WireError| Error::Protocol(Violation::Malformed(num, e));
        let c = msg::ChannelOpenConfirmation::decode(payload).map_err(bad)?;
        self.early_open_answered(c.recipient_channel);
        let ch = self.channel_mut(c.recipient_channel)?;
        if ch.state != ChannelState::Opening {
            return Err(Violation::ChannelNotOpening {
                num,
                channel: c.recipient_channel,
            }
            .into());
        }
        ch.state = ChannelState::Open;
        ch.remote = c.sender_channel;
        ch.send_window = c.initial_window;
        ch.send_max_packet = c.max_packet;
        self.events
            .push_back(Event::ChannelOpened(ChannelId(c.recipient_channel)));
        Ok(())
    }

    /// Our open refused.
    fn on_open_failure(&mut self, num: MsgNum, payload: &[u8]) -> Result<(), Error> {
        let bad = |e: WireError| Error::Protocol(Violation::Malformed(num, e));
        let f = msg::ChannelOpenFailure::decode(payload).map_err(bad)?;
        self.early_open_answered(f.recipient_channel);
        if self.channel_mut(f.recipient_channel)?.state != ChannelState::Opening {
            return Err(Violation::ChannelNotOpening {
                num,
                channel: f.recipient_channel,
            }
            .into());
        }
        self.channels.free(ChannelId(f.recipient_channel));
        self.events.push_back(Event::ChannelOpenFailed {
            channel: ChannelId(f.recipient_channel),
            reason: f.reason_code,
            description: f.description,
        });
        Ok(())
    }

    /// CHANNEL_CLOSE: answered with ours unless the runtime holds it.
    fn on_channel_close(&mut self, num: MsgNum, payload: &[u8]) -> Result<(), Error> {
        let bad = |e: WireError| Error::Protocol(Violation::Malformed(num, e));
        let c = msg::ChannelClose::decode(payload).map_err(bad)?;
        let id = ChannelId(c.recipient_channel);
        let ch = self.open_channel_mut(c.recipient_channel)?;
        ch.close_received = true;
        if ch.hold_close && !ch.close_sent {
            // The runtime answers with close_channel once it has
            // said what is left; nothing more is read or sent.
            self.events.push_back(Event::ChannelCloseHeld(id));
            return Ok(());
        }
        if !ch.close_sent {
            ch.close_sent = true;
            let remote = ch.remote;
            self.queue_with(|p| {
                msg::ChannelClose {
                    recipient_channel: remote,
                }
                .encode(p)
            });
        }
        self.channels.free(id);
        self.events.push_back(Event::ChannelClosed(id));
        Ok(())
    }

    /// What the connection's window budget (`Config::windows_max`) has
    /// left for windows to grow by.
    fn window_room(&self) -> u32 {
        let left = self
            .config
            .windows_max
            .saturating_sub(self.buffered_elsewhere)
            .saturating_sub(self.channels.windows_total());
        u32::try_from(left).unwrap_or(u32::MAX)
    }

    /// A new channel's receive window: the configured start and cap, the
    /// start within what the budget has left (never under
    /// [`MIN_CHANNEL_WINDOW`]); toward stock OpenSSH it starts at OpenSSH's
    /// 2 MiB and stays under `stock_openssh_window_max`.
    fn recv_window(&self) -> RecvWindow {
        let (mut start, mut cap) = (self.config.window, self.config.window_max);
        start = start.min(self.window_room().max(MIN_CHANNEL_WINDOW));
        let stock_openssh = self.peer_version.as_deref().is_some_and(|v| {
            v.starts_with("SSH-2.0-OpenSSH_") && !v.to_ascii_lowercase().contains("hpn")
        });
        if stock_openssh {
            let clamp = self.config.stock_openssh_window_max;
            start = start.min(clamp).min(STOCK_OPENSSH_WINDOW_START);
            cap = cap.min(clamp);
        }
        RecvWindow::growing(start, cap)
    }

    pub(crate) fn channel_mut(&mut self, id: u32) -> Result<&mut Channel, Error> {
        self.channels
            .get_mut(ChannelId(id))
            .ok_or(Error::Protocol(Violation::UnknownChannel(id)))
    }

    /// A channel that is open and not closed by the peer.
    pub(crate) fn open_channel_mut(&mut self, id: u32) -> Result<&mut Channel, Error> {
        let ch = self.channel_mut(id)?;
        if ch.state != ChannelState::Open || ch.close_received {
            return Err(Violation::UnknownChannel(id).into());
        }
        Ok(ch)
    }

    fn local(&mut self, id: ChannelId) -> Result<&mut Channel, Error> {
        self.channels
            .get_mut(id)
            .ok_or(Error::InvalidState("no such channel"))
    }

    /// Client: opens a session channel (RFC 4254 6.1).
    pub fn open_session(&mut self) -> Result<ChannelId, Error> {
        self.open_channel("session", &[])
    }

    /// Opens a channel of any type (`direct-tcpip`, `forwarded-tcpip`,
    /// `auth-agent@openssh.com`, ...) with its type-specific data; the
    /// answer comes as [`Event::ChannelOpened`] or [`Event::ChannelOpenFailed`].
    pub fn open_channel(&mut self, channel_type: &str, data: &[u8]) -> Result<ChannelId, Error> {
        if !self.auth.authenticated {
            return Err(Error::InvalidState("channel open before authentication"));
        }
        let (id, p) = self.new_channel_open(channel_type, data)?;
        self.queue(p);
        Ok(id)
    }

    /// A channel in state Opening and its CHANNEL_OPEN, not yet queued.
    pub(crate) fn new_channel_open(
        &mut self,
        channel_type: &str,
        data: &[u8],
    ) -> Result<(ChannelId, Vec<u8>), Error> {
        let id = self
            .channels
            .alloc()
            .ok_or(Error::InvalidState("too many channels"))?;
        self.channels.insert(
            id,
            Channel::new(ChannelState::Opening, 0, 0, 0, self.recv_window()),
        );
        let o = msg::ChannelOpen {
            channel_type: channel_type.into(),
            sender_channel: id.0,
            initial_window: self.recv_window().max,
            max_packet: self.config.max_packet,
            data: data.to_vec(),
        };
        let mut p = Vec::new();
        o.encode(&mut p);
        Ok((id, p))
    }

    /// Confirms a channel the peer asked to open.
    pub fn accept_channel(&mut self, id: ChannelId) -> Result<(), Error> {
        let max_packet = self.config.max_packet;
        let ch = self.local(id)?;
        let window = ch.recv.max;
        if ch.state != ChannelState::PeerOpening {
            return Err(Error::InvalidState("channel is not waiting to be accepted"));
        }
        ch.state = ChannelState::Open;
        let c = msg::ChannelOpenConfirmation {
            recipient_channel: ch.remote,
            sender_channel: id.0,
            initial_window: window,
            max_packet,
            data: Vec::new(),
        };
        self.queue_with(|p| c.encode(p));
        Ok(())
    }

    /// Refuses a channel the peer asked to open.
    pub fn reject_channel(
        &mut self,
        id: ChannelId,
        reason: u32,
        description: &str,
    ) -> Result<(), Error> {
        let ch = self.local(id)?;
        if ch.state != ChannelState::PeerOpening {
            return Err(Error::InvalidState("channel is not waiting to be accepted"));
        }
        let f = msg::ChannelOpenFailure {
            recipient_channel: ch.remote,
            reason_code: reason,
            description: description.to_owned(),
            language: String::new(),
        };
        self.channels.free(id);
        self.queue_with(|p| f.encode(p));
        Ok(())
    }

    /// Sends a channel request (exec, env, exit-status, ...).
    pub fn channel_request(
        &mut self,
        id: ChannelId,
        request: ChannelRequestKind,
        want_reply: bool,
    ) -> Result<(), Error> {
        let ch = self.local(id)?;
        if ch.state != ChannelState::Open || ch.close_sent {
            return Err(Error::InvalidState("channel not open"));
        }
        if matches!(request, ChannelRequestKind::PtyReq { .. }) {
            ch.recv.shrink_to(INTERACTIVE_WINDOW);
        }
        let r = msg::ChannelRequest {
            recipient_channel: ch.remote,
            want_reply,
            request,
        };
        self.queue_with(|p| r.encode(p));
        Ok(())
    }

    /// Answers a peer's channel request that wanted a reply.
    pub fn channel_reply(&mut self, id: ChannelId, success: bool) -> Result<(), Error> {
        let ch = self.local(id)?;
        if ch.close_sent {
            return Ok(());
        }
        let remote = ch.remote;
        self.queue_with(|p| {
            if success {
                msg::ChannelSuccess {
                    recipient_channel: remote,
                }
                .encode(p)
            } else {
                msg::ChannelFailure {
                    recipient_channel: remote,
                }
                .encode(p)
            }
        });
        Ok(())
    }

    /// Sends EOF on a channel (once).
    pub fn send_eof(&mut self, id: ChannelId) -> Result<(), Error> {
        let ch = self.local(id)?;
        if ch.eof_sent || ch.close_sent || ch.state != ChannelState::Open {
            return Ok(());
        }
        ch.eof_sent = true;
        let remote = ch.remote;
        self.queue_with(|p| {
            msg::ChannelEof {
                recipient_channel: remote,
            }
            .encode(p)
        });
        Ok(())
    }

    /// Closes a channel (once); [`Event::ChannelClosed`] follows the peer's
    /// CLOSE, or comes now when the peer's was held ([`Connection::hold_close`]).
    pub fn close_channel(&mut self, id: ChannelId) -> Result<(), Error> {
        let ch = self.local(id)?;
        if ch.close_sent || ch.state != ChannelState::Open {
            return Ok(());
        }
        ch.close_sent = true;
        let remote = ch.remote;
        let answered = ch.close_received;
        self.queue_with(|p| {
            msg::ChannelClose {
                recipient_channel: remote,
            }
            .encode(p)
        });
        if answered {
            self.channels.free(id);
            self.events.push_back(Event::ChannelClosed(id));
        }
        Ok(())
    }

    /// From now on the peer's CLOSE on `id` waits for ours: an
    /// [`Event::ChannelCloseHeld`] says it came, and [`close_channel`]
    /// answers it after what is left to send (sshd sends a session's
    /// exit-status before answering a client's CLOSE; a client that closes
    /// right after the command's EOF still gets the status).
    ///
    /// [`close_channel`]: Connection::close_channel
    pub fn hold_close(&mut self, id: ChannelId) {
        if let Some(ch) = self.channels.get_mut(id) {
            ch.hold_close = true;
        }
    }

    /// The runtime wrote out `n` bytes received on the channel; the window
    /// is re-granted to the peer when due.
    pub fn consumed(&mut self, id: ChannelId, n: usize) {
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        let room = self.window_room();
        let Some(ch) = self.channels.get_mut(id) else {
            return;
        };
        let before = ch.recv.max;
        let add = ch
            .recv
            .consume_within(n, self.clock, self.path_rtt, self.path_recv_buffer, room);
        let after = ch.recv.max;
        let adjust_to = (!ch.close_sent && !ch.close_received).then_some(ch.remote);
        self.channels.window_resized(before, after);
        if let (Some(add), Some(remote)) = (add, adjust_to) {
            self.queue_with(|p| {
                msg::ChannelWindowAdjust {
                    recipient_channel: remote,
                    bytes_to_add: add,
                }
                .encode(p)
            });
        }
    }

    /// The path's round-trip time as the runtime measures it (TCP_INFO):
    /// with it, bulk channel windows grow to the bandwidth-delay product.
    pub fn set_path_rtt(&mut self, rtt: std::time::Duration) {
        self.path_rtt = (!rtt.is_zero()).then_some(rtt);
    }

    /// The connection's socket receive buffer as the kernel reports it
    /// (SO_RCVBUF, autotuned): bulk channel windows never stay below it.
    pub fn set_path_recv_buffer(&mut self, bytes: u64) {
        self.path_recv_buffer = u32::try_from(bytes).unwrap_or(u32::MAX);
    }

    /// Memory the runtime holds for this connection outside the channel
    /// windows (sluiced: the socket buffers a client's RemoteRcvBuf and
    /// RemoteSndBuf were granted): counted in the window budget
    /// (`Config::windows_max`), so windows grow only within what is left.
    pub fn set_buffered_elsewhere(&mut self, bytes: u64) {
        self.buffered_elsewhere = bytes;
    }

    /// The round-trip time last given to [`Connection::set_path_rtt`].
    pub fn path_rtt(&self) -> Option<std::time::Duration> {
        self.path_rtt
    }

    /// Facts about a channel for the runtime.
    pub fn channel_info(&self, id: ChannelId) -> Option<crate::connection::channel::ChannelInfo> {
        self.channels.get(id).map(Channel::info)
    }
}
