//! The striped channel itself, on the primary: its data travels on
//! carriers, except the client's first bytes, which may go on it as plain
//! data before the first chunk (and all of them if the server refused to
//! stripe); CHANNEL_DATA on it from the server is a protocol error. Its
//! in-process end ([`StripedEnd`]) sends
//! CHANNEL_EOF once the local source ended and every byte sent is
//! acknowledged or on the primary's carrier ahead of it, so EOF, exit
//! status and close follow all of the data;
//! stderr stays on it as extended data. [`tick`] sends the due
//! acknowledgement and reports a failure; [`handle_ack`] takes the peer's.

use super::hub::{Failure, Hub};
use crate::net::pump::{ChannelEndpoint, Ext, Produced};
use crate::sys::fdio;
use sluice_proto::msg::{ChannelRequestKind, DisconnectReason};
use sluice_proto::stripe::codec::Ack;
use sluice_proto::stripe::{StripeError, ACK_REQUEST};
use sluice_proto::{ChannelId, Connection};
use std::os::fd::RawFd;
use std::sync::Arc;

/// Why the striped run ended, as [`tick`] finds it: the transfer's
/// failure on the striped channel `channel`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TickError {
    /// The striped channel.
    pub channel: ChannelId,
    /// How it failed.
    pub failure: Failure,
}

impl std::fmt::Display for TickError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.failure {
            Failure::Protocol(e) => write!(f, "channel {}: {e}", self.channel.0),
            stranded => stranded.fmt(f),
        }
    }
}

impl std::error::Error for TickError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.failure)
    }
}

/// Where the striped channel's stderr comes from or goes to.
pub enum Stderr {
    /// The client: the peer's extended data is written to this fd.
    Sink(RawFd),
    /// The server: the command's stderr, read by a local thread into the hub.
    Source,
}

/// The striped channel's in-process end on the primary.
pub struct StripedEnd {
    hub: Arc<Hub>,
    stderr: Stderr,
}

impl StripedEnd {
    /// The end for `hub`'s channel.
    pub fn new(hub: &Arc<Hub>, stderr: Stderr) -> StripedEnd {
        StripedEnd {
            hub: hub.clone(),
            stderr,
        }
    }
}

impl ChannelEndpoint for StripedEnd {
    fn on_data(&mut self, ext: Ext, data: &[u8]) -> usize {
        match (ext, &self.stderr) {
            // The server: the client's first bytes, before its first chunk.
            (Ext::Data, Stderr::Source) => {
                self.hub.on_plain(data);
                data.len()
            }
            (Ext::Data, Stderr::Sink(_)) => {
                let mut st = self.hub.lock();
                self.hub.fail_protocol(
                    &mut st,
                    StripeError::Malformed("CHANNEL_DATA on a striped channel"),
                );
                data.len()
            }
            (Ext::Stderr, Stderr::Sink(fd)) => match fdio::write_some(*fd, data) {
                Ok(n) => n,
                Err(e) if fdio::would_block(&e) => 0,
                Err(_) => data.len(),
            },
            (Ext::Stderr, Stderr::Source) => data.len(),
        }
    }

    fn produce(&mut self, ext: Ext, buf: &mut [u8]) -> Produced {
        let mut st = self.hub.lock();
        match ext {
            Ext::Data if st.failed.is_some() => Produced::WouldBlock,
            Ext::Data => {
                if let Some(n) = st.tx.fill_plain(buf) {
                    if st.plain_only {
                        // Sent is delivered: room for the local reader.
                        self.hub.notify_local();
                    }
                    Produced::Data(n)
                } else if Hub::eof_may_go(&st) {
                    Produced::Eof
                } else {
                    Produced::WouldBlock
                }
            }
            Ext::Stderr => {
                if matches!(self.stderr, Stderr::Sink(_)) {
                    return Produced::Eof;
                }
                let n = buf.len().min(st.stderr.len());
                for (d, s) in buf.iter_mut().zip(st.stderr.drain(..n)) {
                    *d = s;
                }
                if n > 0 {
                    self.hub.notify_local();
                    Produced::Data(n)
                } else if st.stderr_eof {
                    Produced::Eof
                } else {
                    Produced::WouldBlock
                }
            }
        }
    }

    fn on_close(&mut self) {
        self.hub.close();
    }

    fn wake_fd(&self) -> Option<RawFd> {
        Some(self.hub.primary_fd())
    }

    fn on_wake(&mut self) {
        self.hub.clear_primary();
    }
}

/// The peer's `stripe-ack-v00@sluice.dev` on the striped channel: room in
/// the sender, chunks dropped. A bad one is the peer's protocol error.
pub fn handle_ack(hub: &Hub, data: &[u8]) -> Result<(), StripeError> {
    let mut st = hub.lock();
    let r = Ack::decode(data).and_then(|a| st.tx.on_ack(a));
    if let Err(e) = r {
        hub.fail_protocol(&mut st, e);
        return Err(e);
    }
    // Room for the local reader, a limit for the carriers, maybe the end.
    hub.wake_all(&st);
    Ok(())
}

/// Once per turn of the primary's loop: sends the acknowledgement that is
/// due; a failure ends the run (a protocol error disconnects first).
pub fn tick(hub: &Hub, conn: &mut Connection, id: ChannelId) -> Result<(), TickError> {
    let (ack, failed) = {
        let mut st = hub.lock();
        let ack = st.ack_due.take().filter(|_| !st.plain_only);
        (ack, st.failed.clone())
    };
    if let Some(a) = ack {
        let req = ChannelRequestKind::Other {
            name: ACK_REQUEST.into(),
            data: a.encode(),
        };
        let _ = conn.channel_request(id, req, false);
    }
    match failed {
        None => Ok(()),
        Some(failure) => {
            if let Failure::Protocol(e) = &failure {
                conn.disconnect(DisconnectReason::PROTOCOL_ERROR, &e.to_string());
            }
            Err(TickError {
                channel: id,
                failure,
            })
        }
    }
}
