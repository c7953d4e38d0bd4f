//! RemoteRcvBuf / RemoteSndBuf (`sockbuf-v00@sluice.dev`, PROTOCOL.md):
//! the client asks for socket buffer sizes on the server's side of the
//! connection; this caps and sets them, here or, under privilege
//! separation, in the monitor (which may go past the sysctl caps).

use super::ServerConn;
use crate::config::sshd::ServerConfig as Sshd;
use crate::log;
use sluice_proto::Connection;
use std::net::SocketAddr;

impl ServerConn {
    /// Answers the request with the sizes in force; what the kernel
    /// holds for the client counts against this connection's buffering.
    pub(super) fn on_sockbuf_request(&mut self, conn: &mut Connection, rcvbuf: u64, sndbuf: u64) {
        let granted = self.remote_sockbuf(rcvbuf, sndbuf);
        if let Some((r, w)) = granted {
            // Only the sizes asked for count as set on purpose.
            self.remote_bufs = Some((
                if rcvbuf > 0 { r } else { 0 },
                if sndbuf > 0 { w } else { 0 },
            ));
            // What the client had the kernel hold for it is part
            // of what this connection may make us buffer.
            conn.set_buffered_elsewhere(r.saturating_add(w));
        }
        conn.answer_sockbuf(granted);
    }

    /// The client's RemoteRcvBuf / RemoteSndBuf (`sockbuf-v00@sluice.dev`):
    /// each size asked for is capped as RemoteBufMax says (by default the
    /// sysctl maxima; past them, forced as root, only up to a RemoteBufMax
    /// the administrator set) and set; 0 leaves a buffer alone. Declined
    /// when RemoteBufMax is 0 or the connection is not a TCP socket.
    fn remote_sockbuf(&mut self, rcvbuf: u64, sndbuf: u64) -> Option<(u64, u64)> {
        if let Some(m) = self.monitor.as_mut() {
            return m.sockbuf(rcvbuf, sndbuf);
        }
        remote_sockbuf(&self.cfg, self.sock, self.peer, rcvbuf, sndbuf)
    }
}

/// RemoteRcvBuf / RemoteSndBuf on `sock` under `cfg` for a client at
/// `peer` (see [`ServerConn::remote_sockbuf`]); the privsep monitor calls
/// it on its own copy of the socket.
pub(crate) fn remote_sockbuf(
    cfg: &Sshd,
    sock: Option<std::os::fd::RawFd>,
    peer: SocketAddr,
    rcvbuf: u64,
    sndbuf: u64,
) -> Option<(u64, u64)> {
    use crate::net::sockbuf::{self, Buf, RemoteMax};
    let max = cfg.remote_buf_max;
    let fd = sock.filter(|_| max != RemoteMax::Bytes(0))?;
    let mut granted = [0u64; 2];
    for (i, (b, asked)) in [(Buf::Recv, rcvbuf), (Buf::Send, sndbuf)]
        .into_iter()
        .enumerate()
    {
        let what = &b.keyword()[3..];
        let plan = (asked > 0)
            .then(|| sockbuf::remote_plan(b, asked, max, sockbuf::sysctl_max(b)))
            .flatten();
        if let Some(plan) = plan {
            if let Some((sysctl, cap)) = plan.clamped_by {
                log!(
                    Debug1,
                    "Remote{what} from {}: asked {asked}, clamped to {sysctl} = {cap}; raise it with sysctl -w {sysctl}={asked}, or set RemoteBufMax",
                    peer.ip()
                );
            }
            let g = sockbuf::set_planned(fd, b, &plan);
            log!(
                Verbose,
                "Remote{what} from {}: asked {asked}, granted {} (RemoteBufMax {max})",
                peer.ip(),
                g.granted
            );
            if let Some(a) = g.advice.filter(|_| plan.force) {
                log!(Info, "{a}");
            }
        }
        granted[i] = sockbuf::get(fd, b)?;
    }
    Some((granted[0], granted[1]))
}
