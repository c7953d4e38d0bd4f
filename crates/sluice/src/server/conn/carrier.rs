//! A `stripe-carrier-v00@sluice.dev` channel open, on the primary
//! connection (conn.rs) or a joined secondary (joined.rs): the carrier
//! joins its striped channel's hub (net/stripe) or is refused.

use crate::log;
use crate::net::pump::{ChanIo, ChannelFds};
use crate::net::stripe::{self, CarrierEnd, ConnKey};
use sluice_proto::msg::DisconnectReason;
use sluice_proto::stripe::codec::CarrierOpen;
use sluice_proto::{ChannelId, Connection};

/// RFC 4254 5.1's reason for a carrier refused.
const ADMINISTRATIVELY_PROHIBITED: u32 = 1;

/// A `stripe-carrier-v00@sluice.dev` open on connection `key` (the primary
/// or a secondary of this session): accepted for a striped channel that is
/// open and has no carrier on this connection yet, refused otherwise.
pub(super) fn open_carrier(
    conn: &mut Connection,
    fds: &mut ChannelFds,
    channel: ChannelId,
    data: &[u8],
    key: ConnKey,
) {
    let end = match CarrierOpen::decode(data) {
        Ok(o) => stripe::find(o.striped_channel).and_then(|h| CarrierEnd::new(&h, key)),
        Err(e) => {
            conn.disconnect(DisconnectReason::PROTOCOL_ERROR, &e.to_string());
            return;
        }
    };
    match end {
        Some(end) => {
            if conn.accept_channel(channel).is_ok() {
                log!(Debug1, "carrier channel {} open", channel.0);
                fds.insert(channel, ChanIo::in_process(Box::new(end)));
            }
        }
        None => {
            let _ = conn.reject_channel(
                channel,
                ADMINISTRATIVELY_PROHIBITED,
                "no striped channel for this carrier",
            );
        }
    }
}
