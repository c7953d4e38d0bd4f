//! sluiced's answer to `path-info-v00@sluice.dev` (PROTOCOL.md, "Path
//! figures"): this process's figures of the connection (TCP_INFO, socket
//! buffers and the kernel's caps, CPU time, where its loop waited), so the
//! client's `Metrics` summary can say what limited a transfer from both
//! ends. The engine only passes the request on after authentication, so
//! this runs in the post-auth process, as the user, on its loop's thread.

use super::ServerConn;
use crate::net::metrics::{system, Snapshot};
use crate::net::sockbuf::Buf;
use sluice_proto::Connection;

impl ServerConn {
    /// Answers the request: declined when it carries data (a later version
    /// of it, which would have its own name anyway).
    pub(super) fn answer_path_info(&self, conn: &mut Connection, data: &[u8], want_reply: bool) {
        if !want_reply {
            return;
        }
        if !data.is_empty() {
            conn.answer_global(false, &[]);
            return;
        }
        let snap = Snapshot::take(self.sock, self.buffers_asked());
        conn.answer_global(true, &snap.to_wire().encode());
    }

    /// The socket buffer sizes this connection's socket was given on
    /// purpose (0: left to autotuning): the client's RemoteRcvBuf and
    /// RemoteSndBuf where granted, else TcpRcvBuf and TcpSndBuf (or the
    /// automatic size) that the listener set.
    fn buffers_asked(&self) -> (u64, u64) {
        // The automatic size from the caps read before any chroot.
        let configured = |n: u64, b: Buf| match n {
            0 => system::auto_size(b),
            n => n,
        };
        let (rcv, snd) = self.remote_bufs.unwrap_or((0, 0));
        (
            if rcv > 0 {
                rcv
            } else {
                configured(self.base.tcp_rcvbuf, Buf::Recv)
            },
            if snd > 0 {
                snd
            } else {
                configured(self.base.tcp_sndbuf, Buf::Send)
            },
        )
    }
}
