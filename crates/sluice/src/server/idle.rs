//! ChannelTimeout and UnusedConnectionTimeout, as sshd 9.2 applies them
//! after authentication (sshd_config(5)).
//!
//! Each channel has sshd's type name: `session:command`, `session:shell`
//! or `session:subsystem:NAME` once its command starts (a session's clock
//! starts there: before, it is not open for sshd either), `direct-tcpip`
//! and `direct-streamlocal@openssh.com` once connected, `forwarded-tcpip`,
//! `forwarded-streamlocal@openssh.com` and `agent-connection` once the
//! client confirmed them. The first ChannelTimeout pattern matching the
//! name gives its limit; a channel with no data either way for that long
//! is closed (the connection stays). Idleness is measured from the
//! engine's `ChannelInfo::last_data`, the clock the runtime gives it.
//!
//! The connection ends after UnusedConnectionTimeout with no channel open
//! (listeners do not count; a channel closed for idleness no longer
//! counts), counted from authentication or from the last channel's end.
//!
//! Plain data driven by the connection handler: every call takes `now`,
//! nothing here sleeps or reads a clock, so tests run on virtual time.

use crate::config::sshd::timeouts::ChannelTimeoutRule;
use crate::keys::pattern::wildcard;
use sluice_proto::{ChannelId, Connection};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// One channel the timers know of.
#[derive(Debug)]
struct Watch {
    /// sshd's name for its type (ChannelTimeout patterns match it).
    kind: String,
    /// The idle time allowed; None: never closed for idleness.
    limit: Option<Duration>,
    /// When it became open; None: not yet (a session before its command).
    since: Option<Instant>,
    /// Counted open as soon as the engine has it open (channels the
    /// client asked for that need a connect first).
    start_when_open: bool,
    /// When data last moved (or `since`), as of the last check.
    last: Option<Instant>,
    /// Closed for idleness: waiting for the peer's CLOSE, no longer open.
    abandoned: bool,
}

/// The idle timers of one connection.
#[derive(Debug, Default)]
pub struct Idle {
    rules: Vec<ChannelTimeoutRule>,
    /// UnusedConnectionTimeout; None: none.
    unused: Option<Duration>,
    /// Since when no channel has been open (None: one is, or the timer is off).
    unused_since: Option<Instant>,
    channels: BTreeMap<ChannelId, Watch>,
}

impl Idle {
    /// The timers of an authenticated connection: `rules` in order, the
    /// unused-connection limit in seconds (0: none), counted from `now`.
    pub fn start(rules: Vec<ChannelTimeoutRule>, unused_secs: u64, now: Instant) -> Self {
        let unused = (unused_secs > 0).then(|| Duration::from_secs(unused_secs));
        Idle {
            rules,
            unused,
            unused_since: unused.map(|_| now),
            channels: BTreeMap::new(),
        }
    }

    /// The limit for a channel type: the first pattern that matches
    /// (case-sensitive, as sshd's match_pattern), zero being none.
    fn limit_for(&self, kind: &str) -> Option<Duration> {
        self.rules
            .iter()
            .find(|r| wildcard(kind.as_bytes(), r.pattern.as_bytes(), |a, b| a == b))
            .map(|r| r.limit)
            .filter(|l| !l.is_zero())
    }

    /// Neither timeout is set: nothing is tracked (the loop's every turn
    /// passes here).
    fn off(&self) -> bool {
        self.rules.is_empty() && self.unused.is_none()
    }

    fn watch(&mut self, id: ChannelId, kind: &str, since: Option<Instant>, when_open: bool) {
        if self.off() {
            return;
        }
        let limit = self.limit_for(kind);
        self.channels.insert(
            id,
            Watch {
                kind: kind.to_owned(),
                limit,
                since,
                start_when_open: when_open,
                last: since,
                abandoned: false,
            },
        );
    }

    /// The client opened a channel of `kind` (`session`, `direct-tcpip`,
    /// `direct-streamlocal@openssh.com`): a session counts from its
    /// command ([`Idle::started`]), the others once the engine has them open.
    pub fn opening(&mut self, id: ChannelId, kind: &str) {
        self.watch(id, kind, None, kind != "session");
    }

    /// A channel we opened was confirmed (`forwarded-tcpip`,
    /// `forwarded-streamlocal@openssh.com`, `agent-connection`).
    pub fn opened(&mut self, id: ChannelId, kind: &str, now: Instant) {
        self.watch(id, kind, Some(now), false);
    }

    /// A session's command started: it takes that type's name and its
    /// clock starts.
    pub fn started(&mut self, id: ChannelId, kind: &str, now: Instant) {
        self.watch(id, kind, Some(now), false);
    }

    /// Never closed for idleness (a striped session: its data goes over
    /// carriers); still counts as open.
    pub fn exempt(&mut self, id: ChannelId) {
        if let Some(w) = self.channels.get_mut(&id) {
            w.limit = None;
        }
    }

    /// Not a channel the timers know (a striping carrier).
    pub fn forget(&mut self, id: ChannelId) {
        self.channels.remove(&id);
    }

    /// The channel is gone (both CLOSEs): the unused clock restarts now
    /// when it was the last one open.
    pub fn closed(&mut self, id: ChannelId, now: Instant) {
        self.channels.remove(&id);
        self.note_unused(now);
    }

    fn any_open(&self) -> bool {
        self.channels
            .values()
            .any(|w| w.since.is_some() && !w.abandoned)
    }

    fn note_unused(&mut self, now: Instant) {
        if self.unused.is_none() {
            return;
        }
        if self.any_open() {
            self.unused_since = None;
        } else if self.unused_since.is_none() {
            self.unused_since = Some(now);
        }
    }

    /// Channels idle past their limit, each with its limit, now marked
    /// closed for idleness: the caller sends EOF and CLOSE and lets go of
    /// what is behind them. Channels the engine no longer has are dropped.
    pub fn expired(&mut self, conn: &Connection, now: Instant) -> Vec<(ChannelId, Duration)> {
        let mut out = Vec::new();
        if self.channels.is_empty() && self.unused.is_none() {
            return out;
        }
        self.channels.retain(|id, w| {
            let Some(info) = conn.channel_info(*id) else {
                return false; // refused, or closed without our seeing it
            };
            if w.abandoned {
                return true;
            }
            if w.since.is_none() && w.start_when_open && info.open {
                w.since = Some(now);
            }
            let Some(since) = w.since else {
                return true;
            };
            let last = info.last_data.map_or(since, |d| d.max(since));
            w.last = Some(last);
            if let Some(limit) = w.limit {
                if now.saturating_duration_since(last) >= limit {
                    w.abandoned = true;
                    out.push((*id, limit));
                }
            }
            true
        });
        self.note_unused(now);
        out
    }

    /// The connection has had no open channel for UnusedConnectionTimeout.
    pub fn connection_unused(&self, now: Instant) -> bool {
        match (self.unused, self.unused_since) {
            (Some(limit), Some(since)) => now.saturating_duration_since(since) >= limit,
            _ => false,
        }
    }

    /// How long until the next deadline, as of the last check (data since
    /// then only moves a deadline later: the wake-up is early, not late).
    pub fn wait(&self, now: Instant) -> Option<Duration> {
        let channels = self.channels.values().filter_map(|w| {
            let (limit, last) = (w.limit?, w.last?);
            (!w.abandoned).then(|| deadline_in(last, limit, now))
        });
        let unused = match (self.unused, self.unused_since) {
            (Some(limit), Some(since)) => Some(deadline_in(since, limit, now)),
            _ => None,
        };
        channels.chain(unused).min()
    }

    /// The type name a channel is known by, for log lines.
    pub fn kind(&self, id: ChannelId) -> Option<&str> {
        self.channels.get(&id).map(|w| w.kind.as_str())
    }
}

/// How long from `now` until `limit` after `from` (a limit past what the
/// clock can hold is as good as never).
fn deadline_in(from: Instant, limit: Duration, now: Instant) -> Duration {
    from.checked_add(limit)
        .map_or(Duration::MAX, |d| d.saturating_duration_since(now))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(v: &[&str]) -> Vec<ChannelTimeoutRule> {
        let v: Vec<String> = v.iter().map(|s| (*s).to_owned()).collect();
        crate::config::sshd::timeouts::channel_timeout_rules(&v)
    }

    #[test]
    fn first_matching_pattern_wins_and_zero_is_none() {
        let i = Idle::start(
            rules(&["session:subsystem:sftp=0", "session:*=5", "*=60"]),
            0,
            Instant::now(),
        );
        assert_eq!(i.limit_for("session:subsystem:sftp"), None);
        assert_eq!(i.limit_for("session:command"), Some(Duration::from_secs(5)));
        assert_eq!(i.limit_for("direct-tcpip"), Some(Duration::from_secs(60)));
        // sshd 9.2 labels a running session session:command, which a bare
        // "session" pattern does not match; nor is matching case-blind.
        let i = Idle::start(rules(&["session=3", "Direct-tcpip=3"]), 0, Instant::now());
        assert_eq!(i.limit_for("session:command"), None);
        assert_eq!(i.limit_for("direct-tcpip"), None);
    }

    #[test]
    fn unused_connection_counts_from_auth_and_from_the_last_close() {
        let t0 = Instant::now();
        let mut i = Idle::start(Vec::new(), 2, t0);
        assert!(!i.connection_unused(t0 + Duration::from_millis(1900)));
        assert!(i.connection_unused(t0 + Duration::from_secs(2)));
        assert_eq!(
            i.wait(t0 + Duration::from_secs(1)),
            Some(Duration::from_secs(1))
        );
        // A session counts once its command runs, until it closes.
        let id = ChannelId(0);
        i.opening(id, "session");
        i.started(id, "session:command", t0 + Duration::from_secs(1));
        i.note_unused(t0 + Duration::from_secs(1));
        assert!(!i.connection_unused(t0 + Duration::from_secs(10)));
        assert_eq!(i.wait(t0), None);
        i.closed(id, t0 + Duration::from_secs(10));
        assert!(!i.connection_unused(t0 + Duration::from_secs(11)));
        assert!(i.connection_unused(t0 + Duration::from_secs(12)));
    }

    #[test]
    fn off_by_default() {
        let i = Idle::default();
        assert_eq!(i.wait(Instant::now()), None);
        assert!(!i.connection_unused(Instant::now() + Duration::from_secs(1 << 20)));
    }
}
