//! ClientAliveInterval / ClientAliveCountMax, as sshd: once authenticated,
//! every interval the server sends `keepalive@openssh.com` with want_reply
//! through the encrypted channel; any reply resets the count, and when more
//! than CountMax probes in a row went unanswered the client is declared
//! gone ("Timeout, client not responding from ...").

use sluice_proto::Connection;
use std::time::{Duration, Instant};

/// The keepalive timer of one connection.
pub struct ClientAlive {
    interval: Duration,
    count_max: u32,
    unanswered: u32,
    next: Option<Instant>,
}

impl ClientAlive {
    /// `interval_secs` 0 turns it off.
    pub fn new(interval_secs: u64, count_max: u32) -> Self {
        ClientAlive {
            interval: Duration::from_secs(interval_secs),
            count_max,
            unanswered: 0,
            next: None,
        }
    }

    /// Starts the timer (after authentication) with the user's settings.
    pub fn start(&mut self, interval_secs: u64, count_max: u32) {
        *self = ClientAlive::new(interval_secs, count_max);
        if !self.interval.is_zero() {
            self.next = Some(Instant::now() + self.interval);
        }
    }

    /// The client answered a probe (or any global request reply came back).
    pub fn on_reply(&mut self) {
        self.unanswered = 0;
    }

    /// How long until the next check, for the loop's timeout.
    pub fn wait(&self) -> Option<Duration> {
        self.next
            .map(|t| t.saturating_duration_since(Instant::now()))
    }

    /// Sends a probe when due; false when the client stopped answering.
    pub fn tick(&mut self, conn: &mut Connection) -> bool {
        let Some(next) = self.next else {
            return true;
        };
        let now = Instant::now();
        if now < next {
            return true;
        }
        self.next = Some(now + self.interval);
        self.unanswered += 1;
        if self.unanswered > self.count_max {
            return false;
        }
        crate::log!(Debug2, "client_alive_check: sending keepalive@openssh.com");
        let _ = conn.global_request("keepalive@openssh.com", true, &[]);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_by_default() {
        let k = ClientAlive::new(0, 3);
        assert!(k.wait().is_none());
        let mut k = ClientAlive::new(0, 3);
        k.start(0, 3);
        assert!(k.wait().is_none());
        k.start(5, 3);
        assert!(k.wait().is_some_and(|d| d <= Duration::from_secs(5)));
    }
}
