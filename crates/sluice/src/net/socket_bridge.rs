//! A channel bridged to a Unix socket (agent forwarding at both ends): the
//! socket is the channel's source, a `dup` of it the sink, so the peer's
//! EOF half-closes the socket while its answer can still come back.

use super::pump::{ChanIo, ChannelFds};
use sluice_proto::{ChannelId, Connection};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;

/// Attaches `stream` to channel `id`: read from it and sent, the peer's
/// data written to it, shut down for writing after the peer's EOF, closed
/// with the channel.
pub fn attach(fds: &mut ChannelFds, id: ChannelId, stream: UnixStream) -> std::io::Result<()> {
    stream.set_nonblocking(true)?;
    // The copy is close-on-exec, as `try_clone` makes it.
    let sink = OwnedFd::from(stream.try_clone()?);
    let mut io = ChanIo::owned(Some(OwnedFd::from(stream)), None, Some(sink), None);
    io.shutdown_sink_on_eof = true;
    io.close_sink_on_eof = true;
    io.close_when_sink_fails = true;
    fds.insert(id, io);
    Ok(())
}

/// Closes the bridged channels in `ids` that are done both ways (our EOF
/// sent, the peer's EOF written out or the socket gone), as OpenSSH closes
/// a channel once its input and output are both closed; forgets channels
/// that no longer exist.
pub fn close_finished(conn: &mut Connection, fds: &ChannelFds, ids: &mut Vec<ChannelId>) {
    ids.retain(|&id| {
        let Some(info) = conn.channel_info(id) else {
            return false;
        };
        let sink_done = fds.get(id).is_none_or(|io| io.sink_closed());
        if info.open && info.eof_sent && sink_done && !info.close_sent {
            let _ = conn.close_channel(id);
        }
        true
    });
}
