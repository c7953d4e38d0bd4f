//! A number for each connection of this process, so a hub (hub.rs) keeps
//! at most one carrier per connection and the registry finds channels.

use std::sync::atomic::{AtomicU64, Ordering};

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
