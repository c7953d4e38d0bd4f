//! PerSourcePenalties in the listener (sshd_config(5), OpenSSH 9.8+): how
//! a connection process tells the listener the way it ended (its exit
//! status), and the table of penalised source blocks that refuses their
//! next connections at accept.
//!
//! A penalty is charged only for a connection that ended before its user
//! authenticated. It accumulates per block (PerSourceNetBlockSize) up to
//! `max` and refuses the block once more than `min` is outstanding. The
//! table holds at most `max-sources4`/`max-sources6` blocks: when full it
//! forgets those closest to expiry (`permissive`) or refuses the whole
//! family (`deny-all`), so memory stays bounded whatever the sources.

use crate::config::sshd::per_source::Penalties;
use crate::keys::pattern::match_host_and_ip;
use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Exit status of a connection process whose LoginGraceTime ran out.
pub const EXIT_LOGIN_GRACE: i32 = 3;
/// Exit status when the pre-auth child crashed or broke the monitor's rules.
pub const EXIT_CHILD_CRASH: i32 = 4;
/// Exit status when authentication was attempted and did not succeed.
pub const EXIT_AUTH_ATTEMPTED: i32 = 5;

/// Why a source is charged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Penalty {
    /// The connection process (or its pre-auth child) crashed.
    Crash,
    /// Authentication was attempted and failed.
    AuthFail,
    /// The connection ended without an authentication attempt.
    NoAuth,
    /// LoginGraceTime ran out.
    GraceExceeded,
}

impl Penalty {
    /// sshd's reason, as its log lines say it.
    pub fn reason(self) -> &'static str {
        match self {
            Penalty::Crash => "penalty: caused crash",
            Penalty::AuthFail => "penalty: failed authentication",
            Penalty::NoAuth => "penalty: connections without attempting authentication",
            Penalty::GraceExceeded => "penalty: exceeded LoginGraceTime",
        }
    }

    fn seconds(self, p: &Penalties) -> f64 {
        match self {
            Penalty::Crash => p.crash,
            Penalty::AuthFail => p.authfail,
            Penalty::NoAuth => p.noauth,
            Penalty::GraceExceeded => p.grace_exceeded,
        }
    }

    /// The penalty for an unauthenticated connection process that ended
    /// with `status` (None: a clean exit, or a signal that is no crash,
    /// such as the administrator's SIGTERM).
    pub fn for_exit(status: std::process::ExitStatus) -> Option<Penalty> {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return is_crash(sig).then_some(Penalty::Crash);
        }
        match status.code()? {
            0 => None,
            EXIT_LOGIN_GRACE => Some(Penalty::GraceExceeded),
            EXIT_CHILD_CRASH => Some(Penalty::Crash),
            EXIT_AUTH_ATTEMPTED => Some(Penalty::AuthFail),
            _ => Some(Penalty::NoAuth),
        }
    }
}

/// Signals that mean a process crashed rather than was told to stop.
pub fn is_crash(sig: i32) -> bool {
    use rustix::process::Signal;
    [
        Signal::SEGV,
        Signal::BUS,
        Signal::TRAP,
        Signal::SYS,
        Signal::FPE,
        Signal::ILL,
        Signal::ABORT,
    ]
    .iter()
    .any(|s| s.as_raw() == sig)
}

/// `ip` with all but its first `bits` bits cleared.
pub fn mask(ip: IpAddr, (v4, v6): (u8, u8)) -> IpAddr {
    match ip {
        IpAddr::V4(a) => {
            let m = u32::MAX
                .checked_shl(32 - u32::from(v4.min(32)))
                .unwrap_or(0);
            IpAddr::V4((u32::from(a) & m).into())
        }
        IpAddr::V6(a) => {
            let m = u128::MAX
                .checked_shl(128 - u32::from(v6.min(128)))
                .unwrap_or(0);
            IpAddr::V6((u128::from(a) & m).into())
        }
    }
}

/// One penalised block.
struct Entry {
    expiry: Instant,
    active: bool,
    reason: &'static str,
}

/// The penalised blocks of one address family, by address and by expiry.
#[derive(Default)]
struct Table {
    by_addr: HashMap<IpAddr, Entry>,
    by_expiry: BTreeSet<(Instant, IpAddr)>,
}

impl Table {
    fn expire(&mut self, now: Instant) {
        while let Some(&(t, a)) = self.by_expiry.first() {
            if t >= now {
                break;
            }
            self.by_expiry.pop_first();
            self.by_addr.remove(&a);
        }
    }

    /// Forgets the blocks closest to expiry until at most `max` remain.
    fn shrink_to(&mut self, max: usize) {
        while self.by_addr.len() > max {
            let Some((_, a)) = self.by_expiry.pop_first() else {
                break;
            };
            self.by_addr.remove(&a);
        }
    }
}

/// The listener's penalty state.
pub struct PenaltyBox {
    cfg: Penalties,
    bits: (u8, u8),
    exempt: Option<String>,
    v4: Table,
    v6: Table,
}

/// Seconds as a Duration, clamped (config values are finite and non-negative).
fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::from_secs(u32::MAX as u64))
}

impl PenaltyBox {
    /// Penalties `cfg` over blocks of `bits` (v4, v6), sparing `exempt`.
    pub fn new(cfg: Penalties, bits: (u8, u8), exempt: Option<String>) -> PenaltyBox {
        PenaltyBox {
            cfg,
            bits,
            exempt,
            v4: Table::default(),
            v6: Table::default(),
        }
    }

    fn exempt(&self, ip: IpAddr) -> bool {
        self.exempt
            .as_deref()
            .is_some_and(|l| match_host_and_ip(ip, None, l))
    }

    fn family(&mut self, ip: IpAddr) -> (&mut Table, usize, bool, &'static str) {
        if ip.is_ipv4() {
            let c = &self.cfg;
            (
                &mut self.v4,
                c.max_sources4 as usize,
                c.overflow4_deny_all,
                "ipv4",
            )
        } else {
            let c = &self.cfg;
            (
                &mut self.v6,
                c.max_sources6 as usize,
                c.overflow6_deny_all,
                "ipv6",
            )
        }
    }

    /// Whether a connection from `ip` may proceed; the reason if not.
    pub fn check(&mut self, ip: IpAddr, now: Instant) -> Result<(), &'static str> {
        if self.exempt(ip) {
            return Ok(());
        }
        let key = mask(ip, self.bits);
        let (t, max, deny_all, _) = self.family(ip);
        t.expire(now);
        if deny_all && t.by_addr.len() >= max {
            return Err("too many penalised addresses");
        }
        match t.by_addr.get(&key) {
            Some(e) if e.active && e.expiry >= now => Err(e.reason),
            _ => Ok(()),
        }
    }

    /// Charges `ip`'s block for `kind`, logging as sshd does.
    pub fn penalise(&mut self, ip: IpAddr, kind: Penalty, now: Instant) {
        if self.exempt(ip) {
            crate::log!(Debug3, "address {ip} is exempt from penalties");
            return;
        }
        let (add, min, max_secs) = (kind.seconds(&self.cfg), self.cfg.min, self.cfg.max);
        if add <= 0.0 {
            return;
        }
        let key = mask(ip, self.bits);
        let bits = if ip.is_ipv4() {
            self.bits.0
        } else {
            self.bits.1
        };
        let block = format!("{key}/{bits}");
        let reason = kind.reason();
        let (t, max, deny_all, fam) = self.family(ip);
        t.expire(now);
        if let Some(e) = t.by_addr.get_mut(&key) {
            // Accumulate, up to `max` from now.
            t.by_expiry.remove(&(e.expiry, key));
            e.expiry = (e.expiry + secs(add)).min(now + secs(max_secs));
            e.reason = reason;
            let left = e.expiry.saturating_duration_since(now).as_secs_f64();
            if !e.active && left > min {
                e.active = true;
                crate::log!(
                    Info,
                    "{block}: activating {fam} penalty of {left:.3} seconds for {reason}"
                );
            }
            t.by_expiry.insert((e.expiry, key));
            return;
        }
        if deny_all && t.by_addr.len() >= max {
            crate::log!(
                Verbose,
                "{fam} penalty table full, cannot penalise {block} for {reason}"
            );
            return;
        }
        let active = add > min;
        let expiry = now + secs(add);
        t.by_addr.insert(
            key,
            Entry {
                expiry,
                active,
                reason,
            },
        );
        t.by_expiry.insert((expiry, key));
        let what = if active { "active" } else { "deferred" };
        let line = format!("{fam}: new {block} {what} penalty of {add:.3} seconds for {reason}");
        if active {
            crate::log!(Info, "{line}");
        } else {
            crate::log!(Verbose, "{line}");
        }
        // Permissive overflow: forget those closest to expiry.
        t.shrink_to(max);
    }

    /// Blocks held (IPv4, IPv6).
    pub fn len(&self) -> (usize, usize) {
        (self.v4.by_addr.len(), self.v6.by_addr.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::sshd::per_source::DEFAULT_PENALTIES;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn accumulates_activates_and_expires() {
        let mut b = PenaltyBox::new(DEFAULT_PENALTIES, (32, 128), None);
        let t0 = Instant::now();
        let a = ip("192.0.2.7");
        // 5 s each; active once more than 15 s are outstanding.
        for _ in 0..3 {
            b.penalise(a, Penalty::AuthFail, t0);
            assert_eq!(b.check(a, t0), Ok(()));
        }
        b.penalise(a, Penalty::AuthFail, t0);
        assert_eq!(b.check(a, t0), Err("penalty: failed authentication"));
        assert_eq!(b.check(ip("192.0.2.8"), t0), Ok(()));
        assert_eq!(b.check(a, t0 + Duration::from_secs(21)), Ok(()));
        assert_eq!(b.len(), (0, 0));
        // A crash (90 s) is active at once; capped at max.
        for _ in 0..10 {
            b.penalise(a, Penalty::Crash, t0);
        }
        assert!(b.check(a, t0 + Duration::from_secs(599)).is_err());
        assert!(b.check(a, t0 + Duration::from_secs(601)).is_ok());
    }

    #[test]
    fn blocks_exemptions_and_overflow() {
        let mut cfg = DEFAULT_PENALTIES;
        cfg.max_sources4 = 2;
        let mut b = PenaltyBox::new(cfg, (24, 64), Some("10.9.0.0/16,!10.9.9.9".into()));
        let t0 = Instant::now();
        b.penalise(ip("192.0.2.1"), Penalty::Crash, t0);
        assert!(b.check(ip("192.0.2.200"), t0).is_err(), "same /24");
        b.penalise(ip("10.9.1.1"), Penalty::Crash, t0);
        assert!(b.check(ip("10.9.1.1"), t0).is_ok(), "exempt");
        let t1 = t0 + Duration::from_secs(1);
        b.penalise(ip("10.9.9.9"), Penalty::Crash, t1);
        assert!(b.check(ip("10.9.9.9"), t1).is_err(), "negated in the list");
        // Permissive: a third block pushes out the one closest to expiry.
        b.penalise(
            ip("198.51.100.1"),
            Penalty::Crash,
            t1 + Duration::from_secs(1),
        );
        assert_eq!(b.len(), (2, 0));
        assert!(b.check(ip("192.0.2.1"), t1).is_ok());
        assert!(b.check(ip("10.9.9.9"), t1).is_err());
        // deny-all: a full table refuses the whole family.
        cfg.overflow4_deny_all = true;
        let mut d = PenaltyBox::new(cfg, (32, 128), None);
        d.penalise(ip("192.0.2.1"), Penalty::NoAuth, t0);
        d.penalise(ip("192.0.2.2"), Penalty::NoAuth, t0);
        assert_eq!(
            d.check(ip("203.0.113.5"), t0),
            Err("too many penalised addresses")
        );
        assert!(d.check(ip("2001:db8::1"), t0).is_ok());
    }

    #[test]
    fn exit_status_to_penalty() {
        use std::os::unix::process::ExitStatusExt;
        use std::process::ExitStatus;
        let code = |c: i32| ExitStatus::from_raw(c << 8);
        assert_eq!(Penalty::for_exit(code(0)), None);
        assert_eq!(Penalty::for_exit(code(255)), Some(Penalty::NoAuth));
        assert_eq!(Penalty::for_exit(code(5)), Some(Penalty::AuthFail));
        assert_eq!(Penalty::for_exit(code(3)), Some(Penalty::GraceExceeded));
        assert_eq!(Penalty::for_exit(code(4)), Some(Penalty::Crash));
        assert_eq!(
            Penalty::for_exit(ExitStatus::from_raw(rustix::process::Signal::SEGV.as_raw())),
            Some(Penalty::Crash)
        );
        assert_eq!(
            Penalty::for_exit(ExitStatus::from_raw(rustix::process::Signal::TERM.as_raw())),
            None
        );
        assert_eq!(mask(ip("192.0.2.77"), (24, 64)), ip("192.0.2.0"));
        assert_eq!(mask(ip("192.0.2.77"), (0, 64)), ip("0.0.0.0"));
        assert_eq!(
            mask(ip("2001:db8:1:2:3::4"), (24, 64)),
            ip("2001:db8:1:2::")
        );
    }
}
