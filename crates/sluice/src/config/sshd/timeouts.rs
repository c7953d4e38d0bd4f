//! ChannelTimeout and UnusedConnectionTimeout (sshd_config(5), OpenSSH
//! 9.2): their values read and checked as sshd reads them, and the rules a
//! connection runs with. What they do at run time is server/idle.rs.

use super::error::SshdConfigError;
use super::line::Line;
use crate::config::error::ValueError;
use crate::config::parse_time;
use std::time::Duration;

/// One `type=interval` pair: the channel type pattern and its limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelTimeoutRule {
    /// A channel type, with sshd's wildcards (`*`, `?`).
    pub pattern: String,
    /// Idle time allowed; zero: never closed for idleness.
    pub limit: Duration,
}

/// A time in sshd's format, at most INT_MAX seconds as its convtime
/// allows (a larger one is invalid, not wrapped or saturated).
fn interval(v: &str) -> Option<u64> {
    parse_time(v).filter(|s| *s <= i32::MAX as u64)
}

/// `type=interval`: a type before the first `=`, not empty, and a time
/// after it in sshd's format (`90`, `5m`, `1h30m`; not empty).
fn rule(arg: &str) -> Option<ChannelTimeoutRule> {
    let (pattern, value) = arg.split_once('=')?;
    if pattern.is_empty() || value.is_empty() {
        return None;
    }
    Some(ChannelTimeoutRule {
        pattern: pattern.to_owned(),
        limit: Duration::from_secs(interval(value)?),
    })
}

/// ChannelTimeout's arguments, as written (what `-T` prints); `none` alone
/// is the empty list. sshd 9.2 accepts `none` as the last of several
/// pairs at startup and then fails every connection ("internal error:
/// bad timeout none"): refused here instead, where it can be fixed.
pub(super) fn channel_timeout(l: &Line) -> Result<Vec<String>, SshdConfigError> {
    if l.args.len() == 1 && l.args.first().is_some_and(|a| a == "none") {
        return Ok(Vec::new());
    }
    for a in &l.args {
        if a == "none" {
            return Err(l.err(ValueError::NotAlone {
                keyword: l.name.clone(),
                value: a.clone(),
            }));
        }
        if rule(a).is_none() {
            return Err(l.err(ValueError::InvalidChannelTimeout { value: a.clone() }));
        }
    }
    Ok(l.args.clone())
}

/// UnusedConnectionTimeout in seconds: `none` or 0 is never.
pub(super) fn unused_connection_timeout(l: &Line) -> Result<u64, SshdConfigError> {
    if l.args.len() > 1 {
        return Err(l.err(ValueError::ExtraArguments {
            keyword: l.name.clone(),
        }));
    }
    match l.args.first().map(String::as_str) {
        Some("none") => Ok(0),
        Some(v) => interval(v).ok_or_else(|| l.err(ValueError::InvalidTime)),
        None => Err(l.err(ValueError::NoArgument {
            keyword: l.name.clone(),
        })),
    }
}

/// The rules of a checked ChannelTimeout list, in order: the first whose
/// pattern matches a channel's type gives its limit.
pub fn channel_timeout_rules(args: &[String]) -> Vec<ChannelTimeoutRule> {
    args.iter().filter_map(|a| rule(a)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_as_sshd_reads_them() {
        let r = rule("session:*=5m").expect("valid");
        assert_eq!(r.pattern, "session:*");
        assert_eq!(r.limit, Duration::from_secs(300));
        assert_eq!(rule("a=1h30m").map(|r| r.limit.as_secs()), Some(5400));
        assert_eq!(rule("A=3S").map(|r| r.limit.as_secs()), Some(3));
        assert_eq!(rule("x=0").map(|r| r.limit.as_secs()), Some(0));
        assert_eq!(
            rule("a=2147483647").map(|r| r.limit.as_secs()),
            Some(2147483647)
        );
        for bad in [
            "session",
            "=5",
            "a=",
            "a=b=3",
            "a=-1",
            "a=abc",
            "none",
            "a=2147483648",
        ] {
            assert!(rule(bad).is_none(), "{bad}");
        }
        let rules = channel_timeout_rules(&["direct-tcpip=2".into(), "*=1m".into()]);
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[1].pattern, "*");
    }
}
