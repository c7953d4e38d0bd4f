//! The user's process's side of a striping grant (`stripe-v00@sluice.dev`,
//! PROTOCOL.md "Channel striping"): the client's global request on the
//! primary goes to the monitor, which draws the join secret and keeps the
//! admission (privsep/stripe.rs); this process only relays the answer.

use crate::log;
use crate::server::conn::ServerConn;
use sluice_proto::msg::DisconnectReason;
use sluice_proto::stripe::codec::StripeWanted;
use sluice_proto::Connection;

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
