//! Secondary connections of a striped session in the user's process
//! (PROTOCOL.md "Channel striping"): each arrives from the monitor already
//! authenticated by its join proof (privsep/stripe_join.rs), as an engine
//! imported from its handover, with its socket and unread input, and runs
//! here, as the user, for as long as this process lives.
//!
//! [`on_joined`] runs it in a pump of its own on its own thread (its
//! crypto on another core). It serves carriers only: a
//! `stripe-carrier-v00@sluice.dev` open for a striped channel of this
//! session is accepted (conn/carrier.rs), every other channel is refused
//! (ADMINISTRATIVELY_PROHIBITED), every global or channel request answered
//! with failure.

use super::join_source::{JoinSource, JoinedConn};
use super::{ServerConn, ADMINISTRATIVELY_PROHIBITED};
use crate::log;
use crate::net::pump::{ChannelFds, Handler, Pump};
use crate::net::stripe::ConnKey;
use sluice_proto::{Connection, Event};
use std::os::fd::AsRawFd;

/// Runs a joined secondary connection on a thread of its own; it ends when
/// its peer or this process does.
pub fn on_joined(j: JoinedConn) {
    let spawned = std::thread::Builder::new()
        .name("stripe-secondary".into())
        .spawn(move || serve(j));
    if let Err(e) = spawned {
        log!(Error, "striping: no thread for a secondary connection: {e}");
    }
}

fn serve(j: JoinedConn) {
    let JoinedConn {
        mut conn,
        sock,
        input,
    } = j;
    let sock = std::net::TcpStream::from(sock);
    let peer = sock
        .peer_addr()
        .unwrap_or(crate::server::privsep::UNKNOWN_ADDR);
    let _ = sock.set_nonblocking(true);
    let _ = sock.set_nodelay(true);
    log!(
        Verbose,
        "striping: secondary connection from {} port {} joined",
        peer.ip(),
        peer.port()
    );
    let mut pump = Pump::new(sock.as_raw_fd());
    pump.preload_input(&input);
    let mut handler = Secondary {
        key: ConnKey::next(),
    };
    let r = pump.run(&mut conn, &mut handler);
    crate::server::privsep::log_end(r, "stripe secondary ", peer);
}

/// A secondary's events: carriers only.
struct Secondary {
    /// This connection, for "one carrier per connection".
    key: ConnKey,
}

impl Handler for Secondary {
    type Error = crate::server::error::ServerError;

    fn on_event(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        event: Event,
    ) -> Result<(), crate::server::error::ServerError> {
        match event {
            Event::ChannelOpenRequest {
                channel,
                channel_type,
                data,
                ..
            } => {
                if channel_type == sluice_proto::stripe::CARRIER_CHANNEL {
                    super::carrier::open_carrier(conn, fds, channel, &data, self.key);
                } else {
                    log!(
                        Verbose,
                        "striping: refused a {channel_type} channel on a secondary connection"
                    );
                    let _ = conn.reject_channel(
                        channel,
                        ADMINISTRATIVELY_PROHIBITED,
                        "a secondary connection carries striped data only",
                    );
                }
            }
            Event::GlobalRequest { want_reply, .. } => {
                if want_reply {
                    conn.answer_global(false, &[]);
                }
            }
            Event::ChannelRequest {
                channel,
                want_reply: true,
                ..
            } => {
                let _ = conn.channel_reply(channel, false);
            }
            _ => {}
        }
        Ok(())
    }

    fn finished(&self) -> bool {
        false
    }
}

impl ServerConn {
    /// Joined connections of this (primary's) session arrive from `src`.
    pub fn set_join_source(&mut self, src: Box<dyn JoinSource>) {
        self.joins = Some(src);
    }

    /// The join source's descriptor, for the pump to wake on.
    pub(super) fn watch_joins(&self, out: &mut Vec<libc::pollfd>) {
        if let Some(src) = &self.joins {
            out.push(libc::pollfd {
                fd: src.fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
    }

    /// Starts every joined connection waiting; a broken source is logged
    /// and dropped (the primary carries on alone).
    pub(super) fn poll_joins(&mut self) {
        while let Some(src) = self.joins.as_mut() {
            match src.receive() {
                Ok(Some(j)) => on_joined(j),
                Ok(None) => return,
                Err(e) => {
                    log!(Error, "striping: joined connections: {e}");
                    self.joins = None;
                }
            }
        }
    }
}
