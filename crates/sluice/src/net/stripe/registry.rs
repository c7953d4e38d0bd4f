//! The striped channels of this process by their number on the primary,
//! so that a carrier opened on any connection of the session (the server's
//! secondaries arrive in their own threads) finds its channel. A process
//! serves one session (sluiced's post-auth process, or one client run), so
//! the channel number is the key. Entries go when their hub is dropped.

use super::hub::Hub;
use std::sync::{Arc, Mutex, Weak};

static CHANNELS: Mutex<Vec<(u32, Weak<Hub>)>> = Mutex::new(Vec::new());

/// Makes `hub` findable by its channel number.
pub fn register(hub: &Arc<Hub>) {
    let mut m = CHANNELS.lock().unwrap_or_else(|p| p.into_inner());
    m.retain(|(_, w)| w.strong_count() > 0);
    m.push((hub.channel(), Arc::downgrade(hub)));
}

/// The open striped channel numbered `channel`.
pub fn find(channel: u32) -> Option<Arc<Hub>> {
    let m = CHANNELS.lock().unwrap_or_else(|p| p.into_inner());
    m.iter()
        .filter(|(c, _)| *c == channel)
        .find_map(|(_, w)| w.upgrade())
        .filter(|h| !h.is_closed())
}
