//! Channel window accounting (RFC 4254 5.2) and the policy deciding when to
//! send WINDOW_ADJUST. Plain data, so the runtime can tune the policy and
//! tests can check it without a connection.
//!
//! Receive side invariant: `available + delivered + consumed == max`, where
//! `available` is what the peer may still send, `delivered` is data handed
//! to the runtime but not yet written out, and `consumed` is data written out
//! but not yet re-granted. Only consumed data is granted back, so a slow
//! consumer is never overrun.

/// Receive window of one channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecvWindow {
    /// Bytes the peer may still send.
    pub available: u32,
    /// The window's full size.
    pub max: u32,
    /// Bytes handed to the runtime, not yet reported consumed.
    pub delivered: u32,
    /// Bytes consumed and not yet granted back.
    pub consumed: u32,
}

impl RecvWindow {
    /// A window of `max` bytes, all available.
    pub fn new(max: u32) -> Self {
        RecvWindow {
            available: max,
            max,
            delivered: 0,
            consumed: 0,
        }
    }

    /// Accounts for `n` received bytes; false if they exceed the window.
    pub fn receive(&mut self, n: u32) -> bool {
        match self.available.checked_sub(n) {
            Some(a) => {
                self.available = a;
                self.delivered += n;
                true
            }
            None => false,
        }
    }

    /// The runtime wrote out `n` bytes; returns the adjust to send, if due.
    pub fn consume(&mut self, n: u32) -> Option<u32> {
        let n = n.min(self.delivered);
        self.delivered -= n;
        self.consumed += n;
        // Re-grant in large steps: a quarter of the window keeps the sender
        // streaming with few adjust messages.
        if self.consumed >= (self.max / 4).max(1) {
            let add = self.consumed;
            self.available = self.available.saturating_add(add);
            self.consumed = 0;
            Some(add)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_grants_more_than_max() {
        let mut w = RecvWindow::new(1000);
        assert!(w.receive(600));
        assert!(!w.receive(401));
        assert_eq!(w.consume(100), None);
        assert_eq!(w.consume(500), Some(600));
        assert_eq!(w.available, 1000);
        assert!(w.receive(1000));
        assert!(!w.receive(1));
        assert_eq!(w.available + w.delivered + w.consumed, w.max);
    }

    #[test]
    fn consuming_more_than_delivered_is_clamped() {
        let mut w = RecvWindow::new(100);
        assert!(w.receive(10));
        assert_eq!(w.consume(1000), None);
        assert_eq!(w.available + w.delivered + w.consumed, 100);
    }
}
