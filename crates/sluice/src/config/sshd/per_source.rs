//! The per-source keywords of OpenSSH 9.8+ (sshd_config(5)):
//! PerSourceMaxStartups, PerSourceNetBlockSize, PerSourcePenalties and
//! PerSourcePenaltyExemptList: how they parse (sshd's rules and words),
//! their defaults and how `-T` shows them. The listener enforces them
//! (server/listen.rs, server/penalty.rs). None of them is allowed in Match.

use super::error::SshdConfigError;
use super::line::Line;
use crate::config::error::ValueError;

/// What PerSourcePenalties says once defaults are filled in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Penalties {
    /// Seconds for a connection process that crashed.
    pub crash: f64,
    /// Seconds for a connection that tried to authenticate and failed.
    pub authfail: f64,
    /// Seconds for a connection that ended without trying to authenticate.
    pub noauth: f64,
    /// Seconds for a connection that ran out of LoginGraceTime.
    pub grace_exceeded: f64,
    /// Seconds for a connection refused by RefuseConnection (which sluiced
    /// has no keyword for: never charged, shown by `-T`).
    pub refuseconnection: f64,
    /// The most penalty a source can accumulate.
    pub max: f64,
    /// Below this much accumulated penalty a source is not refused yet.
    pub min: f64,
    /// IPv4 blocks the table holds at most.
    pub max_sources4: u32,
    /// IPv6 blocks the table holds at most.
    pub max_sources6: u32,
    /// When the IPv4 table is full: refuse every IPv4 connection (deny-all)
    /// rather than forget the penalties closest to expiry (permissive).
    pub overflow4_deny_all: bool,
    /// The same for IPv6.
    pub overflow6_deny_all: bool,
}

/// sshd's defaults (OpenSSH 10.0).
pub const DEFAULT_PENALTIES: Penalties = Penalties {
    crash: 90.0,
    authfail: 5.0,
    noauth: 1.0,
    grace_exceeded: 10.0,
    refuseconnection: 10.0,
    max: 600.0,
    min: 15.0,
    max_sources4: 65536,
    max_sources6: 65536,
    overflow4_deny_all: false,
    overflow6_deny_all: false,
};

/// PerSourcePenalties as written: sshd fills each field from the first
/// line that sets it; a field set anywhere turns penalties on, and
/// `yes`/`no` alone decide only when no field does.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PenaltySpec {
    enabled: Option<bool>,
    times: [Option<f64>; 7],
    max_sources: [Option<u32>; 2],
    deny_all: [Option<bool>; 2],
}

/// The duration fields in `-T` order, with their names.
const TIME_FIELDS: [&str; 7] = [
    "crash",
    "authfail",
    "noauth",
    "grace-exceeded",
    "refuseconnection",
    "max",
    "min",
];

impl PenaltySpec {
    /// Adds one PerSourcePenalties line (first value of each field wins).
    pub(super) fn apply(&mut self, l: &Line) -> Result<(), SshdConfigError> {
        let keyword = || l.name.clone();
        if l.args.is_empty() {
            return Err(l.err(ValueError::NothingSpecified { keyword: keyword() }));
        }
        for a in &l.args {
            if a.eq_ignore_ascii_case("yes") || a.eq_ignore_ascii_case("no") {
                if l.args.len() > 1 {
                    return Err(l.err(ValueError::NotAlone {
                        keyword: keyword(),
                        value: a.clone(),
                    }));
                }
                self.enabled.get_or_insert(a.eq_ignore_ascii_case("yes"));
                continue;
            }
            let bad = || {
                l.err(ValueError::UnsupportedKeyword {
                    keyword: keyword(),
                    value: a.clone(),
                })
            };
            let (name, value) = a.split_once(':').ok_or_else(bad)?;
            if let Some(i) = TIME_FIELDS.iter().position(|f| *f == name) {
                let secs = parse_duration(value)
                    .ok_or_else(|| l.err(ValueError::InvalidKeywordTime { keyword: keyword() }))?;
                if let Some(slot) = self.times.get_mut(i) {
                    slot.get_or_insert(secs);
                }
            } else if let Some(i) = ["max-sources4", "max-sources6"]
                .iter()
                .position(|f| *f == name)
            {
                let n = value
                    .parse::<u32>()
                    .ok()
                    .filter(|n| *n <= i32::MAX as u32)
                    .ok_or_else(|| l.err(ValueError::ValueInvalid { keyword: keyword() }))?;
                if let Some(slot) = self.max_sources.get_mut(i) {
                    slot.get_or_insert(n);
                }
            } else if let Some(i) = ["overflow", "overflow6"].iter().position(|f| *f == name) {
                let deny = match value {
                    "deny-all" => true,
                    "permissive" => false,
                    _ => return Err(bad()),
                };
                if let Some(slot) = self.deny_all.get_mut(i) {
                    slot.get_or_insert(deny);
                }
            } else {
                return Err(bad());
            }
            // A field set turns penalties on, even after an earlier `no`
            // (sshd's rule).
            self.enabled = Some(true);
        }
        Ok(())
    }

    /// The penalties in force; None for `PerSourcePenalties no`.
    pub fn resolve(&self) -> Option<Penalties> {
        if self.enabled == Some(false) {
            return None;
        }
        let d = DEFAULT_PENALTIES;
        let t = |i: usize, def: f64| self.times.get(i).copied().flatten().unwrap_or(def);
        Some(Penalties {
            crash: t(0, d.crash),
            authfail: t(1, d.authfail),
            noauth: t(2, d.noauth),
            grace_exceeded: t(3, d.grace_exceeded),
            refuseconnection: t(4, d.refuseconnection),
            max: t(5, d.max),
            min: t(6, d.min),
            max_sources4: self.max_sources[0].unwrap_or(d.max_sources4),
            max_sources6: self.max_sources[1].unwrap_or(d.max_sources6),
            overflow4_deny_all: self.deny_all[0].unwrap_or(d.overflow4_deny_all),
            overflow6_deny_all: self.deny_all[1].unwrap_or(d.overflow6_deny_all),
        })
    }

    /// The `-T` line's value, as sshd prints it (`%f` seconds).
    pub fn dump(&self) -> String {
        let Some(p) = self.resolve() else {
            return "no".into();
        };
        let mode = |deny: bool| if deny { "deny-all" } else { "permissive" };
        let times = [
            p.crash,
            p.authfail,
            p.noauth,
            p.grace_exceeded,
            p.refuseconnection,
            p.max,
            p.min,
        ];
        let mut s: Vec<String> = TIME_FIELDS
            .iter()
            .zip(times)
            .map(|(n, v)| format!("{n}:{v:.6}"))
            .collect();
        s.push(format!("max-sources4:{}", p.max_sources4));
        s.push(format!("max-sources6:{}", p.max_sources6));
        s.push(format!("overflow:{}", mode(p.overflow4_deny_all)));
        s.push(format!("overflow6:{}", mode(p.overflow6_deny_all)));
        s.join(" ")
    }
}

/// sshd's time format with fractions (convtime_double): `90`, `1.5s`,
/// `1m30s`; units s, m, h, d, w.
pub fn parse_duration(v: &str) -> Option<f64> {
    let mut total = 0.0;
    let mut num = String::new();
    for c in v.chars() {
        if c.is_ascii_digit() || c == '.' {
            num.push(c);
            continue;
        }
        let n: f64 = num.parse().ok()?;
        num.clear();
        total += n * match c.to_ascii_lowercase() {
            's' => 1.0,
            'm' => 60.0,
            'h' => 3600.0,
            'd' => 86400.0,
            'w' => 604_800.0,
            _ => return None,
        };
    }
    if !num.is_empty() {
        total += num.parse::<f64>().ok()?;
    } else if v.is_empty() {
        return None;
    }
    total.is_finite().then_some(total)
}

/// PerSourceMaxStartups: a count, or `none` (no limit).
pub(super) fn max_startups(l: &Line, v: &str) -> Result<Option<u32>, SshdConfigError> {
    if v == "none" {
        return Ok(None);
    }
    v.parse::<u32>()
        .ok()
        .filter(|n| *n <= i32::MAX as u32)
        .map(Some)
        .ok_or_else(|| {
            l.err(ValueError::IntegerValueInvalid {
                keyword: l.name.clone(),
            })
        })
}

/// PerSourceNetBlockSize `v4[:v6]`: prefix lengths that group addresses.
pub(super) fn net_block_size(
    l: &Line,
    v: &str,
    v6_default: u8,
) -> Result<(u8, u8), SshdConfigError> {
    let bad = || {
        l.err(ValueError::InvalidSpec {
            keyword: l.name.clone(),
        })
    };
    let (a, b) = match v.split_once(':') {
        Some((a, b)) => (a, Some(b)),
        None => (v, None),
    };
    let v4 = a.parse::<u8>().ok().filter(|n| *n <= 32).ok_or_else(bad)?;
    let v6 = match b {
        Some(b) => b.parse::<u8>().ok().filter(|n| *n <= 128).ok_or_else(bad)?,
        None => v6_default,
    };
    Ok((v4, v6))
}

/// PerSourcePenaltyExemptList: addresses or CIDR blocks, comma-separated,
/// `!` negating; checked now so a typo cannot silently exempt nobody.
pub(super) fn exempt_list(l: &Line, v: &str) -> Result<String, SshdConfigError> {
    let ok = v.split(',').all(|e| {
        let e = e.strip_prefix('!').unwrap_or(e);
        let (addr, len) = match e.split_once('/') {
            Some((a, n)) => (a, Some(n)),
            None => (e, None),
        };
        let Ok(ip) = addr.parse::<std::net::IpAddr>() else {
            return false;
        };
        let max = if ip.is_ipv4() { 32 } else { 128 };
        len.is_none_or(|n| n.parse::<u8>().is_ok_and(|n| n <= max))
    });
    if ok {
        Ok(v.to_owned())
    } else {
        Err(l.err(ValueError::InvalidList {
            keyword: l.name.clone(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(args: &[&str]) -> Line {
        Line {
            file: "f".into(),
            n: 1,
            kw: "persourcepenalties".into(),
            name: "PerSourcePenalties".into(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            raw: args.join(" "),
            conds: Vec::new(),
        }
    }

    #[test]
    fn penalties_parse_merge_and_dump() {
        let mut s = PenaltySpec::default();
        assert_eq!(s.resolve(), Some(DEFAULT_PENALTIES));
        assert_eq!(
            s.dump(),
            "crash:90.000000 authfail:5.000000 noauth:1.000000 grace-exceeded:10.000000 \
             refuseconnection:10.000000 max:600.000000 min:15.000000 max-sources4:65536 \
             max-sources6:65536 overflow:permissive overflow6:permissive"
        );
        s.apply(&line(&["authfail:1m", "overflow:deny-all"]))
            .unwrap();
        s.apply(&line(&["authfail:2", "noauth:0.5s"])).unwrap();
        let p = s.resolve().unwrap();
        assert_eq!(
            (p.authfail, p.noauth, p.overflow4_deny_all),
            (60.0, 0.5, true)
        );
        let mut off = PenaltySpec::default();
        off.apply(&line(&["no"])).unwrap();
        assert_eq!(off.resolve(), None);
        assert_eq!(off.dump(), "no");
        let value_error = |r: Result<(), SshdConfigError>| match r {
            Err(SshdConfigError::Line {
                error: super::super::error::LineError::Value(e),
                ..
            }) => e,
            other => panic!("{other:?}"),
        };
        assert!(matches!(
            value_error(off.apply(&line(&["no", "crash:1"]))),
            ValueError::NotAlone { value, .. } if value == "no"
        ));
        assert!(matches!(
            value_error(off.apply(&line(&["bogus:1"]))),
            ValueError::UnsupportedKeyword { .. }
        ));
        assert_eq!(
            value_error(off.apply(&line(&["crash:x"]))),
            ValueError::InvalidKeywordTime {
                keyword: "PerSourcePenalties".into()
            }
        );
        assert_eq!(
            off.apply(&line(&["overflow:maybe"]))
                .unwrap_err()
                .to_string(),
            "f line 1: unsupported PerSourcePenalties keyword overflow:maybe"
        );
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90"), Some(90.0));
        assert_eq!(parse_duration("1m30s"), Some(90.0));
        assert_eq!(parse_duration("1.5s"), Some(1.5));
        assert_eq!(parse_duration(""), None);
        assert_eq!(parse_duration("5x"), None);
    }
}
