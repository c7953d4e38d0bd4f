//! One channel's state (RFC 4254 5) and the table of channels.

use crate::connection::window::RecvWindow;
use crate::event::ChannelId;
use std::time::Instant;

/// Most channels one connection may have open at once.
const MAX_CHANNELS: usize = 1024;

/// Where a channel stands in its open handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChannelState {
    /// We sent CHANNEL_OPEN and wait for the answer.
    Opening,
    /// The peer asked to open it; the runtime has not answered.
    PeerOpening,
    /// Open both ways.
    Open,
}

/// One channel.
#[derive(Debug)]
pub(crate) struct Channel {
    pub(crate) state: ChannelState,
    /// The peer's number for the channel.
    pub(crate) remote: u32,
    /// Bytes we may still send.
    pub(crate) send_window: u32,
    /// Largest data payload the peer accepts.
    pub(crate) send_max_packet: u32,
    pub(crate) recv: RecvWindow,
    pub(crate) eof_sent: bool,
    pub(crate) eof_received: bool,
    pub(crate) close_sent: bool,
    pub(crate) close_received: bool,
    /// The peer's CLOSE is answered by the runtime's [`close_channel`]
    /// rather than at once, so what it still has to say (a session's
    /// exit-status) goes first, as sshd does.
    ///
    /// [`close_channel`]: crate::Connection::close_channel
    pub(crate) hold_close: bool,
    /// When channel data last went either way (the runtime's clock).
    pub(crate) last_data: Option<Instant>,
}

/// What the runtime may ask about a channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelInfo {
    /// Open both ways.
    pub open: bool,
    /// Bytes we may send now.
    pub send_window: u32,
    /// Largest data payload the peer accepts.
    pub send_max_packet: u32,
    /// Bytes the peer may still send us.
    pub recv_available: u32,
    /// Our receive window's current full size.
    pub recv_window: u32,
    /// We sent EOF.
    pub eof_sent: bool,
    /// The peer sent EOF.
    pub eof_received: bool,
    /// We sent CLOSE.
    pub close_sent: bool,
    /// The peer sent CLOSE, which waits for ours (a held close).
    pub close_received: bool,
    /// The peer's number for the channel (a striping carrier names the
    /// striped channel by it).
    pub remote: u32,
    /// When channel data (either way, stderr included) was last received
    /// or sealed, by the clock the runtime gives `handle_input` and
    /// `data_slot`; None: never. What sshd's ChannelTimeout measures
    /// idleness from.
    pub last_data: Option<Instant>,
}

impl Channel {
    pub(crate) fn new(
        state: ChannelState,
        remote: u32,
        send_window: u32,
        send_max_packet: u32,
        recv: RecvWindow,
    ) -> Self {
        Channel {
            state,
            remote,
            send_window,
            send_max_packet,
            recv,
            eof_sent: false,
            eof_received: false,
            close_sent: false,
            close_received: false,
            hold_close: false,
            last_data: None,
        }
    }

    pub(crate) fn info(&self) -> ChannelInfo {
        ChannelInfo {
            open: self.state == ChannelState::Open,
            send_window: self.send_window,
            send_max_packet: self.send_max_packet,
            recv_available: self.recv.available,
            recv_window: self.recv.max,
            eof_sent: self.eof_sent,
            eof_received: self.eof_received,
            close_sent: self.close_sent,
            close_received: self.close_received,
            remote: self.remote,
            last_data: self.last_data,
        }
    }
}

/// The channels of one connection, by local number.
#[derive(Debug, Default)]
pub(crate) struct Channels {
    slots: Vec<Option<Channel>>,
    /// The receive windows of all channels together (kept as they change,
    /// so the budget check costs nothing per packet).
    windows: u64,
}

impl Channels {
    /// A free local number, if fewer than the maximum are in use.
    pub(crate) fn alloc(&mut self) -> Option<ChannelId> {
        if let Some(i) = self.slots.iter().position(Option::is_none) {
            return Some(ChannelId(i as u32));
        }
        if self.slots.len() >= MAX_CHANNELS {
            return None;
        }
        self.slots.push(None);
        Some(ChannelId((self.slots.len() - 1) as u32))
    }

    /// No channel is open or being opened.
    pub(crate) fn is_empty(&self) -> bool {
        self.slots.iter().all(Option::is_none)
    }

    pub(crate) fn insert(&mut self, id: ChannelId, ch: Channel) {
        if let Some(slot) = self.slots.get_mut(id.0 as usize) {
            self.windows += u64::from(ch.recv.max);
            if let Some(old) = slot.replace(ch) {
                self.windows = self.windows.saturating_sub(u64::from(old.recv.max));
            }
        }
    }

    pub(crate) fn get(&self, id: ChannelId) -> Option<&Channel> {
        self.slots.get(id.0 as usize).and_then(Option::as_ref)
    }

    pub(crate) fn get_mut(&mut self, id: ChannelId) -> Option<&mut Channel> {
        self.slots.get_mut(id.0 as usize).and_then(Option::as_mut)
    }

    /// The receive windows of all channels together: what the peer may
    /// have us buffer at once.
    pub(crate) fn windows_total(&self) -> u64 {
        self.windows
    }

    /// A channel's receive window went from `before` to `after` bytes.
    pub(crate) fn window_resized(&mut self, before: u32, after: u32) {
        self.windows = self.windows.saturating_sub(u64::from(before)) + u64::from(after);
    }

    pub(crate) fn free(&mut self, id: ChannelId) {
        if let Some(old) = self.slots.get_mut(id.0 as usize).and_then(Option::take) {
            self.windows = self.windows.saturating_sub(u64::from(old.recv.max));
        }
    }
}
