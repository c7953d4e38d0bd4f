//! ServerAliveInterval / ServerAliveCountMax and ConnectTimeout's banner
//! limit. As ssh: when nothing arrived from the server for the interval, a
//! `keepalive@openssh.com` global request with want_reply goes out; a whole
//! message from the server resets the count (bytes alone do not: a stream
//! corrupted in a length field keeps bringing the replies' bytes while no
//! message ever completes); after CountMax unanswered requests the client
//! gives up with "Timeout, server HOST not responding." (exit 255).

use sluice_proto::Connection;
use std::time::{Duration, Instant};

/// Why the client gave up waiting for the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Timeout {
    /// ConnectTimeout passed before the server's banner.
    Banner {
        /// The host as given.
        host: String,
        /// Its port.
        port: u16,
    },
    /// ServerAliveCountMax keepalives went unanswered.
    ServerAlive {
        /// The host as given.
        host: String,
    },
}

impl std::fmt::Display for Timeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Timeout::Banner { host, port } => write!(
                f,
                "Connection timed out during banner exchange\nConnection to {host} port {port} timed out"
            ),
            Timeout::ServerAlive { host } => write!(f, "Timeout, server {host} not responding."),
        }
    }
}

impl std::error::Error for Timeout {}

/// Timers of one client connection.
pub struct Keepalive {
    host: String,
    port: u16,
    interval: Option<Duration>,
    count_max: u32,
    /// Unanswered keepalives since the last message.
    sent: u32,
    /// When the next check is due.
    due: Instant,
    /// ConnectTimeout: the server's banner must arrive by then.
    banner_deadline: Option<Instant>,
}

impl Keepalive {
    /// `interval` None or zero: no keepalives; `banner` is ConnectTimeout.
    pub fn new(
        host: &str,
        port: u16,
        interval: Option<Duration>,
        count_max: u32,
        banner: Option<Duration>,
    ) -> Self {
        let now = Instant::now();
        let interval = interval.filter(|d| !d.is_zero());
        Keepalive {
            host: host.to_owned(),
            port,
            interval,
            count_max,
            sent: 0,
            due: now + interval.unwrap_or(Duration::from_secs(3600)),
            banner_deadline: banner.map(|b| now + b),
        }
    }

    /// Bytes came from the server: the next check is an interval away.
    pub fn input(&mut self, now: Instant) {
        if let Some(i) = self.interval {
            self.due = now + i;
        }
    }

    /// A message from the server was decoded: it is alive.
    pub fn message(&mut self) {
        self.sent = 0;
    }

    /// Runs the timers; an error ends the connection with its message.
    pub fn tick(&mut self, conn: &mut Connection) -> Result<(), Timeout> {
        let now = Instant::now();
        if let Some(d) = self.banner_deadline {
            if conn.peer_version().is_some() {
                self.banner_deadline = None;
            } else if now >= d {
                return Err(Timeout::Banner {
                    host: self.host.clone(),
                    port: self.port,
                });
            }
        }
        let Some(i) = self.interval else {
            return Ok(());
        };
        if now < self.due {
            return Ok(());
        }
        self.due = now + i;
        if self.sent >= self.count_max {
            return Err(Timeout::ServerAlive {
                host: self.host.clone(),
            });
        }
        // Global requests need authentication (as in ssh, whose keepalives
        // start in the session loop); before it ConnectTimeout bounds the wait.
        if conn
            .global_request("keepalive@openssh.com", true, &[])
            .is_ok()
        {
            self.sent += 1;
            crate::log!(
                Debug1,
                "sent keepalive@openssh.com ({}/{})",
                self.sent,
                self.count_max
            );
        }
        Ok(())
    }

    /// How soon `tick` must run.
    pub fn next(&self) -> Option<Duration> {
        let now = Instant::now();
        let mut t = self
            .interval
            .map(|_| self.due.saturating_duration_since(now));
        if let Some(d) = self.banner_deadline {
            let b = d.saturating_duration_since(now);
            t = Some(t.map_or(b, |x| x.min(b)));
        }
        t.map(|d| d.max(Duration::from_millis(1)))
    }
}
