//! A carrier channel's in-process end (`stripe-carrier-v00@sluice.dev`):
//! its pump asks it for a chunk when the carrier has window and the output
//! buffer has room, and [`StripeSender::fill`](sluice_proto::stripe::send::StripeSender::fill)
//! writes header and data straight into the packet slot; what arrives is
//! one chunk per CHANNEL_DATA, decoded into the reassembler. It closes
//! when the striped channel closes, or when its connection is withdrawn.

use super::hub::Hub;
use crate::net::pump::{ChannelEndpoint, Ext, Produced, WakeFd};
use sluice_proto::stripe::send::CarrierId;
use std::os::fd::RawFd;
use std::sync::Arc;

/// One carrier of a striped channel.
pub struct CarrierEnd {
    hub: Arc<Hub>,
    id: CarrierId,
    /// Its connection's key: a withdrawn connection's carrier closes.
    conn: u64,
    wake: Arc<WakeFd>,
}

impl CarrierEnd {
    /// A carrier of `hub` on the connection `conn` (any number unique to a
    /// connection of this process); None when that connection has a carrier
    /// for the channel already or it is closed (refuse the open).
    pub fn new(hub: &Arc<Hub>, conn: super::ConnKey) -> Option<CarrierEnd> {
        let wake = Arc::new(WakeFd::new().ok()?);
        let id = hub.add_carrier(conn.0, wake.clone())?;
        Some(CarrierEnd {
            hub: hub.clone(),
            id,
            conn: conn.0,
            wake,
        })
    }
}

impl ChannelEndpoint for CarrierEnd {
    fn on_data(&mut self, ext: Ext, data: &[u8]) -> usize {
        match ext {
            Ext::Data => self.hub.on_chunk(data),
            Ext::Stderr => {
                let mut st = self.hub.lock();
                self.hub.fail_protocol(
                    &mut st,
                    sluice_proto::stripe::StripeError::Malformed("extended data on a carrier"),
                );
            }
        }
        data.len()
    }

    fn produce(&mut self, ext: Ext, buf: &mut [u8]) -> Produced {
        if ext == Ext::Stderr {
            return Produced::Eof;
        }
        let mut st = self.hub.lock();
        if st.closed || st.failed.is_some() || Hub::is_withdrawn(&st, self.conn) {
            return Produced::WouldBlock;
        }
        match st.tx.fill(self.id, buf) {
            Some(n) => Produced::Data(n),
            None => Produced::WouldBlock,
        }
    }

    fn closing(&self) -> bool {
        // Withdrawn: closes once what it carried is acknowledged, so no
        // copy is sent again that could trail the EOF (PROTOCOL.md).
        let st = self.hub.lock();
        st.closed || (Hub::is_withdrawn(&st, self.conn) && !st.tx.carries(self.id))
    }

    fn on_close(&mut self) {
        self.hub.carrier_lost(self.id, self.conn);
    }

    fn wake_fd(&self) -> Option<RawFd> {
        Some(self.wake.raw())
    }

    fn on_wake(&mut self) {
        self.wake.clear();
    }
}
