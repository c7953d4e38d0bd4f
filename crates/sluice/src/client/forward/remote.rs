//! `-R`: the server's answers to our forward requests ("Allocated port N",
//! ExitOnForwardFailure) and the forwarded-* channels it opens, connected
//! to the local target before they are confirmed.

use super::{
    ClientForward, ForwardError, RemoteOutcome, RemoteRefusal, ADMINISTRATIVELY_PROHIBITED,
    CONNECT_FAILED,
};
use crate::client::forward_spec::{Endpoint, Forward};
use crate::log;
use crate::net::fwdsock::{self, Connecting};
use crate::net::pump::ChannelFds;
use sluice_proto::wire::Reader;
use sluice_proto::{ChannelId, Connection};
use std::os::fd::OwnedFd;

impl ClientForward {
    /// The server opens a forwarded-* channel for a `-R` listener.
    pub fn on_open_request(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        id: ChannelId,
        channel_type: &str,
        data: &[u8],
    ) -> Result<(), ForwardError> {
        let mut r = Reader::new(data);
        let listen = match channel_type {
            "forwarded-tcpip" => {
                let (Ok(_addr), Ok(port)) = (r.utf8(), r.u32()) else {
                    return self.refuse(conn, id, "malformed forwarded-tcpip");
                };
                self.remote_target(|i, f| match &f.listen {
                    Endpoint::Tcp { port: p, .. } => {
                        u32::from(*p) == port
                            || self.allocated.get(&i).map(|a| u32::from(*a)) == Some(port)
                    }
                    Endpoint::Unix(_) => false,
                })
            }
            "forwarded-streamlocal@openssh.com" => {
                let Ok(path) = r.utf8() else {
                    return self.refuse(conn, id, "malformed forwarded-streamlocal");
                };
                self.remote_target(|_, f| f.listen == Endpoint::Unix(path.to_owned()))
            }
            _ => None,
        };
        let Some(target) = listen else {
            log!(
                Info,
                "WARNING: Server requests {channel_type} for an unknown listener"
            );
            return self.refuse(conn, id, "open failed");
        };
        let Some(target) = target else {
            // A remote SOCKS forward: the request comes over the channel.
            if channel_type != "forwarded-tcpip" {
                return self.refuse(conn, id, "not a TCP channel");
            }
            return self.socks_channel(conn, fds, id);
        };
        match target {
            Endpoint::Tcp { host, port } => {
                let host = host.unwrap_or_else(|| "localhost".into());
                log!(Debug1, "{channel_type}: connecting to {host} port {port}");
                self.connecting.push((id, Connecting::start(&host, port)));
            }
            Endpoint::Unix(path) => match fwdsock::connect_unix(&path) {
                Ok(s) => self.accept(conn, fds, id, s)?,
                Err(e) => {
                    let why = crate::io_error::describe_io_error(&e);
                    log!(Info, "connect to {path}: {why}");
                    conn.reject_channel(id, CONNECT_FAILED, &why)?;
                }
            },
        }
        Ok(())
    }

    /// The listener's destination: None for an unknown listener,
    /// Some(None) for a remote SOCKS forward.
    fn remote_target(&self, pick: impl Fn(usize, &Forward) -> bool) -> Option<Option<Endpoint>> {
        let (_, f) = self
            .plan
            .remote
            .iter()
            .enumerate()
            .find(|(i, f)| !self.cancelled.contains(i) && pick(*i, f))?;
        Some(f.connect.clone())
    }

    /// A forwarded-tcpip channel of a remote SOCKS forward: bound to a
    /// socketpair whose other end a thread serves (remote_socks.rs).
    fn socks_channel(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        id: ChannelId,
    ) -> Result<(), ForwardError> {
        let (ours, theirs) = match std::os::unix::net::UnixStream::pair() {
            Ok(p) => p,
            Err(e) => {
                log!(Error, "remote SOCKS forward: socketpair: {e}");
                return conn
                    .reject_channel(id, CONNECT_FAILED, "socketpair failed")
                    .map_err(ForwardError::from);
            }
        };
        if let Err(e) = ours.set_nonblocking(true) {
            log!(Error, "remote SOCKS forward: {e}");
            return self.refuse(conn, id, "socketpair failed");
        }
        super::remote_socks::serve(theirs, self.plan.permit_remote_open.clone());
        self.accept(conn, fds, id, OwnedFd::from(ours))
    }

    fn refuse(
        &mut self,
        conn: &mut Connection,
        id: ChannelId,
        why: &str,
    ) -> Result<(), ForwardError> {
        log!(Debug1, "refusing channel {}: {why}", id.0);
        conn.reject_channel(id, ADMINISTRATIVELY_PROHIBITED, "open failed")
            .map_err(ForwardError::from)
    }

    pub(super) fn accept(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        id: ChannelId,
        sock: OwnedFd,
    ) -> Result<(), ForwardError> {
        fwdsock::accept_connected(conn, fds, &mut self.channels, id, sock)
            .map_err(ForwardError::Socket)
    }

    /// The server's answer to the oldest remote forward request; for one
    /// added while running, the outcome for whoever asked.
    pub fn on_global_reply(
        &mut self,
        success: bool,
        data: &[u8],
    ) -> Result<Option<RemoteOutcome>, ForwardError> {
        let Some(i) = self.remote_pending.pop_front() else {
            return Ok(None);
        };
        let Some(f) = self.plan.remote.get(i) else {
            return Ok(None);
        };
        let asked = self.tickets.remove(&i);
        let target = f
            .connect
            .as_ref()
            .map(|c| c.to_string())
            .unwrap_or_default();
        let listen = match &f.listen {
            Endpoint::Tcp { port, .. } => format!("port {port}"),
            Endpoint::Unix(p) => format!("path {p}"),
        };
        let outcome = |result| Ok(asked.then_some(RemoteOutcome { ticket: i, result }));
        if !success {
            self.cancelled.insert(i);
            if asked {
                return outcome(Err(RemoteRefusal::Failed { listen }));
            }
            if self.plan.exit_on_failure {
                return Err(ForwardError::RemoteRefused { listen });
            }
            log!(
                Info,
                "Warning: remote port forwarding failed for listen {listen}"
            );
            return Ok(None);
        }
        if let Endpoint::Tcp { port: 0, .. } = f.listen {
            match Reader::new(data)
                .u32()
                .ok()
                .and_then(|p| u16::try_from(p).ok())
            {
                Some(p) if p != 0 => {
                    log!(Info, "Allocated port {p} for remote forward to {target}");
                    self.allocated.insert(i, p);
                    return outcome(Ok(Some(p)));
                }
                _ => {
                    log!(
                        Error,
                        "Invalid allocated port for remote forward to {target}"
                    );
                    return outcome(Err(RemoteRefusal::InvalidPort));
                }
            }
        }
        log!(
            Debug1,
            "remote forward success for: listen {listen}, connect {target}"
        );
        outcome(Ok(None))
    }
}
