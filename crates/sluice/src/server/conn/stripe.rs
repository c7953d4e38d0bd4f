//! The user's process's side of channel striping (`stripe-v00@sluice.dev`,
//! PROTOCOL.md "Channel striping"): the client's global request on the
//! primary goes to the monitor, which draws the join secret and keeps the
//! admission (privsep/stripe.rs); this process only relays the answer. A
//! session channel striped before its command starts gets a hub
//! (net/stripe) between the command's pipes and the carriers, which the
//! client opens on this connection and on the secondaries (`joined.rs`).

use crate::log;
use crate::net::pump::{ChanFd, ChanIo};
use crate::net::stripe::{self, Hub, Stderr, StripedEnd};
use crate::server::conn::ServerConn;
use crate::server::error::StripeRequestError;
use sluice_proto::msg::DisconnectReason;
use sluice_proto::stripe::codec::{check_stripe_channel_request, StripeWanted};
use sluice_proto::stripe::{ACK_REQUEST, STRIPE_REQUEST};
use sluice_proto::{ChannelId, Connection};
use std::os::fd::OwnedFd;
use std::sync::Arc;

impl ServerConn {
    /// Answers the client's `stripe-v00@sluice.dev` global request with
    /// `data` (secondaries wanted): the monitor's grant, or REQUEST_FAILURE
    /// (MaxStreams 1, a second request, no monitor to keep the grant).
    /// Malformed data ends the connection with a protocol error.
    pub(super) fn stripe_grant(&mut self, conn: &mut Connection, data: &[u8], want_reply: bool) {
        let wanted = match StripeWanted::decode(data) {
            Ok(w) => w.secondaries,
            Err(e) => {
                log!(Error, "stripe request from {}: {e}", self.peer.ip());
                conn.disconnect(DisconnectReason::PROTOCOL_ERROR, &e.to_string());
                return;
            }
        };
        // Without a monitor nothing could admit a secondary later.
        let grant = self.monitor.as_mut().and_then(|m| m.stripe_grant(wanted));
        log!(
            Debug1,
            "stripe request: {wanted} secondaries wanted, {}",
            if grant.is_some() {
                "granted"
            } else {
                "declined"
            }
        );
        if want_reply {
            match grant {
                Some(g) => conn.answer_global(true, &g),
                None => conn.answer_global(false, &[]),
            }
        }
    }
}

impl ServerConn {
    /// The striping channel requests: `stripe-v00@sluice.dev` on a session
    /// before its command (CHANNEL_SUCCESS, then the first acknowledgement
    /// from `tick`), `stripe-ack-v00@sluice.dev` on a striped one. Returns
    /// whether `name` was one of them (answered here).
    pub(super) fn stripe_request(
        &mut self,
        conn: &mut Connection,
        id: ChannelId,
        name: &str,
        data: &[u8],
        want_reply: bool,
    ) -> Result<bool, StripeRequestError> {
        if name == ACK_REQUEST {
            let (hub, refused) = self
                .sessions
                .get(&id)
                .map_or((None, false), |s| (s.stripe.clone(), s.stripe_refused));
            match hub {
                // The client's first acknowledgement goes right behind its
                // request, before our answer: dropped with the request.
                None if refused => {}
                Some(h) => {
                    if let Err(err) = stripe::handle_ack(&h, data) {
                        conn.disconnect(DisconnectReason::PROTOCOL_ERROR, &err.to_string());
                        return Err(StripeRequestError::Ack { channel: id.0, err });
                    }
                }
                None => {
                    let e = StripeRequestError::NotStriped;
                    conn.disconnect(DisconnectReason::PROTOCOL_ERROR, &e.to_string());
                    return Err(e);
                }
            }
            if want_reply {
                let _ = conn.channel_reply(id, false);
            }
            return Ok(true);
        }
        if name != STRIPE_REQUEST {
            return Ok(false);
        }
        if let Err(e) = check_stripe_channel_request(data) {
            conn.disconnect(DisconnectReason::PROTOCOL_ERROR, &e.to_string());
            return Err(StripeRequestError::Request(e));
        }
        let allowed = self.cfg.max_streams > 1;
        let primary = self.stripe_key;
        let hub = match self.sessions.get_mut(&id) {
            Some(s)
                if allowed
                    && s.stripe.is_none()
                    && s.child.is_none()
                    && s.sftp.is_none()
                    && s.pty.is_none() =>
            {
                match Hub::new(id.0) {
                    Ok(h) => {
                        h.set_primary(primary);
                        s.stripe = Some(h.clone());
                        Some(h)
                    }
                    Err(e) => {
                        log!(Error, "striping channel {}: {e}", id.0);
                        None
                    }
                }
            }
            _ => None,
        };
        if let (None, Some(s)) = (&hub, self.sessions.get_mut(&id)) {
            s.stripe_refused = true;
        }
        log!(
            Debug1,
            "channel {}: stripe request {}",
            id.0,
            if hub.is_some() { "accepted" } else { "refused" }
        );
        if let Some(h) = &hub {
            stripe::register(h);
        }
        if want_reply {
            conn.channel_reply(id, hub.is_some())
                .map_err(StripeRequestError::Protocol)?;
        }
        Ok(true)
    }
}

/// The striped channel's ends for a command just started: its stdout read
/// into the hub's sender, its stdin written from the reassembler, its
/// stderr relayed on the channel; the channel itself gets a [`StripedEnd`].
pub(super) fn attach(hub: &Arc<Hub>, child: &mut std::process::Child) -> std::io::Result<ChanIo> {
    let missing = || std::io::Error::other("the command has no pipes");
    let out = child.stdout.take().map(OwnedFd::from).ok_or_else(missing)?;
    let inp = child.stdin.take().map(OwnedFd::from).ok_or_else(missing)?;
    match child.stderr.take().map(OwnedFd::from) {
        Some(err) => {
            stripe::spawn_stderr(hub, ChanFd::Owned(err))?;
        }
        None => hub.no_stderr(),
    }
    stripe::spawn_input(hub, ChanFd::Owned(out))?;
    stripe::spawn_output(hub, ChanFd::Owned(inp))?;
    Ok(ChanIo::in_process(Box::new(StripedEnd::new(
        hub,
        Stderr::Source,
    ))))
}
