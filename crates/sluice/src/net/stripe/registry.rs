//! The striped channels of this process by their number on the primary,
//! so that a carrier opened on any connection of the session (the server's
//! secondaries arrive in their own threads) finds its channel. A process
//! serves one session (sluiced's post-auth process, or one client run), so
//! the channel number is the key. Entries go when their hub is dropped.

use super::hub::Hub;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

static CHANNELS: Mutex<Vec<(u32, Weak<Hub>)>> = Mutex::new(Vec::new());
static NEXT_CONN: AtomicU64 = AtomicU64::new(1);

/// A number unique to one connection of this process (a carrier's
/// connection, for "at most one carrier per connection").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnKey(pub u64);

impl ConnKey {
    /// A fresh one.
    pub fn next() -> ConnKey {
        ConnKey(NEXT_CONN.fetch_add(1, Ordering::Relaxed))
    }
}

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
