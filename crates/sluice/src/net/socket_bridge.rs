//! A channel bridged to a Unix socket (agent forwarding at both ends): the
//! socket is the channel's source, a `dup` of it the sink, so the peer's
//! EOF half-closes the socket while its answer can still come back.

use super::pump::{ChanIo, ChannelFds};
use sluice_proto::{ChannelId, Connection};
use std::os::fd::{IntoRawFd, RawFd};
use std::os::unix::net::UnixStream;

/// Attaches `stream` to channel `id`: read from it and sent, the peer's
/// data written to it, shut down for writing after the peer's EOF, closed
/// with the channel.
pub fn attach(fds: &mut ChannelFds, id: ChannelId, stream: UnixStream) -> std::io::Result<()> {
    stream.set_nonblocking(true)?;
    let fd: RawFd = stream.into_raw_fd();
    // SAFETY: duplicating an fd we own; the copy is close-on-exec.
    let sink = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if sink < 0 {
        let e = std::io::Error::last_os_error();
        super::fdio::close(fd);
        return Err(e);
    }
    let mut io = ChanIo::new(Some(fd), None, Some(sink), None);
    io.shutdown_sink_on_eof = true;
    io.close_sink_on_eof = true;
    io.close_when_sink_fails = true;
    io.owned = true;
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
        let sink_done = fds.get(id).is_none_or(|io| io.sink.is_none());
        if info.open && info.eof_sent && sink_done && !info.close_sent {
            let _ = conn.close_channel(id);
        }
        true
    });
}
