//! The channels' other ends by channel ([`ChannelFds`]), and the receive
//! window feedback: bytes a sink took are reported to the engine, and a
//! window that grew is logged.

use super::channel::ChanIo;
use sluice_proto::{ChannelId, Connection};
use std::collections::BTreeMap;

/// The other ends of the channels, by channel.
#[derive(Debug, Default)]
pub struct ChannelFds {
    map: BTreeMap<ChannelId, ChanIo>,
}

impl ChannelFds {
    /// Attaches an end to a channel.
    pub fn insert(&mut self, id: ChannelId, io: ChanIo) {
        self.map.insert(id, io);
    }

    /// The channel's end.
    pub fn get(&self, id: ChannelId) -> Option<&ChanIo> {
        self.map.get(&id)
    }

    /// The channel's end, mutably.
    pub fn get_mut(&mut self, id: ChannelId) -> Option<&mut ChanIo> {
        self.map.get_mut(&id)
    }

    /// Detaches a channel's end, closing the fds it owns.
    pub fn remove(&mut self, id: ChannelId) {
        self.map.remove(&id);
    }

    /// Received data waits for a sink on some channel.
    pub(crate) fn any_sink_pending(&self) -> bool {
        self.map.values().any(|io| !io.sinks_drained())
    }

    /// Until when received input waits in the socket rather than being
    /// copied behind a sink that is taking bytes (the earliest such sink's
    /// hold; see `Stream::holding`). None: input is handled now.
    pub(crate) fn input_hold(&self, now: std::time::Instant) -> Option<std::time::Instant> {
        // One channel (a bulk transfer) holds up to a second: only the
        // connection's own messages wait behind it. With others, 100 ms
        // at most: a slow sink must not set the pace of every channel.
        let cap = std::time::Duration::from_millis(if self.map.len() > 1 { 100 } else { 1000 });
        self.map
            .values()
            .filter_map(|io| io.holding(now, cap))
            .min()
    }

    /// The channels with an end attached.
    pub fn ids(&self) -> Vec<ChannelId> {
        self.map.keys().copied().collect()
    }
}

/// Tells the engine `n` bytes were written out; logs when that grew the
/// channel's window (it doubles while the path needs more, see the engine's
/// `connection::window`).
pub(crate) fn consumed_on(conn: &mut Connection, fds: &mut ChannelFds, id: ChannelId, n: usize) {
    conn.consumed(id, n);
    let (Some(io), Some(info)) = (fds.get_mut(id), conn.channel_info(id)) else {
        return;
    };
    if info.recv_window != io.recv_window {
        crate::net::metrics::tally::note_recv_window(info.recv_window);
        if io.recv_window != 0 {
            crate::log!(
                Debug1,
                "channel {}: receive window {} -> {} bytes (path RTT {:?})",
                id.0,
                io.recv_window,
                info.recv_window,
                conn.path_rtt()
            );
        }
        io.recv_window = info.recv_window;
    }
}
