//! A secondary connection of a striped session, once joined (PROTOCOL.md,
//! "Channel striping", "Joining"): handed to the primary's post-auth
//! process with its transport state, socket and unread input, it runs in a
//! pump of its own on its own thread (its crypto on another core) and
//! serves carriers only: a `stripe-carrier-v00@sluice.dev` open for a
//! striped channel of this session is accepted, every other channel is
//! refused (ADMINISTRATIVELY_PROHIBITED), every global or channel request
//! answered with failure. It ends with its connection or with the primary.

use crate::log;
use crate::net::pump::{ChannelFds, Handler, Pump};
use crate::net::stripe::ConnKey;
use sluice_proto::{Connection, Event};
use std::os::fd::{AsRawFd, OwnedFd};

/// A joined secondary connection, as the join hands it over.
pub struct JoinedConn {
    /// The engine, carrying on from the secondary's authentication.
    pub conn: Connection,
    /// Its TCP socket (non-blocking).
    pub sock: OwnedFd,
    /// Bytes read from the socket that the engine has not consumed yet.
    pub input: Vec<u8>,
}

/// Serves a joined secondary's carriers on a thread of its own.
pub fn on_joined(joined: JoinedConn) {
    let spawned = std::thread::Builder::new()
        .name("stripe-secondary".into())
        .spawn(move || {
            let JoinedConn {
                mut conn,
                sock,
                input,
            } = joined;
            let mut pump = Pump::new(sock.as_raw_fd());
            pump.preload_input(&input);
            let mut handler = Secondary {
                key: ConnKey::next(),
            };
            match pump.run(&mut conn, &mut handler) {
                Ok(()) => log!(Debug1, "secondary connection closed"),
                Err(e) => log!(Debug1, "secondary connection ended: {e}"),
            }
            drop(sock);
        });
    if let Err(e) = spawned {
        log!(Error, "secondary connection: cannot start its thread: {e}");
    }
}

/// A secondary's events: carriers only.
struct Secondary {
    key: ConnKey,
}

impl Handler for Secondary {
    fn on_event(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        event: Event,
    ) -> Result<(), String> {
        match event {
            Event::ChannelOpenRequest {
                channel,
                channel_type,
                data,
            } => {
                if channel_type == sluice_proto::stripe::CARRIER_CHANNEL {
                    super::stripe::open_carrier(conn, fds, channel, &data, self.key);
                } else {
                    let _ = conn.reject_channel(
                        channel,
                        1, // ADMINISTRATIVELY_PROHIBITED
                        "a secondary connection carries striped data only",
                    );
                }
            }
            Event::GlobalRequest {
                want_reply: true, ..
            } => conn.answer_global(false, &[]),
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
