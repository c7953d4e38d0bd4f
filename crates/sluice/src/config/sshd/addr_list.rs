//! Address lists as sshd reads them for `Match Address` and `Match
//! LocalAddress` (OpenSSH's addrmatch.c, behaviour only): a comma list
//! whose entries are CIDR blocks of either family, plain addresses, or
//! anything else taken as a wildcard pattern against the address text
//! (so a host name is accepted and simply never matches an address). A
//! `!` entry that matches makes the whole list fail. What sshd refuses
//! when it loads the file is refused here too: an empty entry, a prefix
//! length too long for its family, or a block with host bits set
//! (`192.168.1.1/24`).

use crate::keys::pattern::wildcard;
use std::net::{IpAddr, Ipv4Addr};

/// How a list came out for one address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ListMatch {
    /// A positive entry matched and no negated one did.
    Yes,
    /// Nothing matched, or the address is not an address.
    No,
    /// A negated entry matched: the criterion fails whatever else matched.
    Negated,
}

/// One entry, parsed.
enum Entry<'a> {
    /// `addr[/bits]`, host bits clear.
    Block(IpAddr, u32),
    /// Anything else: matched as a wildcard pattern on the address text.
    Pattern(&'a str),
}

/// An address as sshd's addr_pton reads it: IPv6 text, or IPv4 in any of
/// inet_aton's forms (`10.1` is 10.0.0.1, as getaddrinfo takes it), an
/// IPv4-mapped IPv6 address standing for its IPv4 one (sshd normalises
/// the peer's address so).
pub(super) fn parse_addr(s: &str) -> Option<IpAddr> {
    if let Some(v4) = inet_aton(s) {
        return Some(IpAddr::V4(v4));
    }
    let a: IpAddr = s.parse().ok()?;
    Some(a.to_canonical())
}

/// inet_aton(3): one to four parts, each decimal, octal (leading 0) or
/// hex (0x); the last part fills the bytes that remain.
fn inet_aton(s: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut nums = Vec::with_capacity(parts.len());
    for p in &parts {
        let n = if let Some(h) = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
            u32::from_str_radix(h, 16).ok()?
        } else if p.len() > 1 && p.starts_with('0') {
            u32::from_str_radix(p, 8).ok()?
        } else if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) {
            p.parse().ok()?
        } else {
            return None;
        };
        nums.push(n);
    }
    let (last, head) = nums.split_last()?;
    let mut v: u32 = 0;
    for (i, n) in head.iter().enumerate() {
        if *n > 255 {
            return None;
        }
        v |= n << (24 - 8 * i);
    }
    let room = 32 - 8 * head.len() as u32;
    if room < 32 && *last >> room != 0 {
        return None;
    }
    Some(Ipv4Addr::from(v | last))
}

/// Parses one entry (without its `!`); Err is sshd's "inconsistent mask".
fn entry(e: &str) -> Result<Entry<'_>, ()> {
    let (net, bits) = match e.split_once('/') {
        Some((n, b)) => {
            // sshd: digits only and at most 128, else not CIDR at all.
            if b.is_empty() || !b.bytes().all(|c| c.is_ascii_digit()) || b.len() > 3 {
                return Ok(Entry::Pattern(e));
            }
            match b.parse::<u32>() {
                Ok(v) if v <= 128 => (n, Some(v)),
                _ => return Ok(Entry::Pattern(e)),
            }
        }
        None => (e, None),
    };
    // sshd copies the entry into a 64-byte buffer first; longer is a pattern.
    if e.len() >= 64 {
        return Ok(Entry::Pattern(e));
    }
    let Some(addr) = parse_addr(net) else {
        return Ok(Entry::Pattern(e));
    };
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let bits = bits.unwrap_or(max);
    if bits > max || masked(addr, bits) != addr {
        return Err(());
    }
    Ok(Entry::Block(addr, bits))
}

/// `addr` with all but its first `bits` bits cleared.
fn masked(addr: IpAddr, bits: u32) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let m = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            IpAddr::V4((u32::from(a) & m).into())
        }
        IpAddr::V6(a) => {
            let m = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            IpAddr::V6((u128::from(a) & m).into())
        }
    }
}

/// The entries with their negation flag; None when one is empty (`a,,b`,
/// a trailing comma, a lone `!`), which sshd refuses.
fn entries(list: &str) -> Option<Vec<(bool, &str)>> {
    list.split(',')
        .map(|p| {
            let (neg, e) = match p.strip_prefix('!') {
                Some(rest) => (true, rest),
                None => (false, p),
            };
            (!e.is_empty()).then_some((neg, e))
        })
        .collect()
}

/// Whether sshd would load this list (its check with no address).
pub(super) fn valid(list: &str) -> bool {
    entries(list).is_some_and(|v| v.iter().all(|(_, e)| entry(e).is_ok()))
}

/// Tests `addr` against `list` (already checked with [`valid`]).
pub(super) fn matches(addr: &str, list: &str) -> ListMatch {
    let Some(a) = parse_addr(addr) else {
        // sshd: an address it cannot parse matches nothing, not even a pattern.
        return ListMatch::No;
    };
    let mut hit = false;
    for (neg, e) in entries(list).unwrap_or_default() {
        let found = match entry(e) {
            Ok(Entry::Block(net, bits)) => net.is_ipv4() == a.is_ipv4() && masked(a, bits) == net,
            Ok(Entry::Pattern(p)) => wildcard(addr.as_bytes(), p.as_bytes(), |x, y| x == y),
            Err(()) => false,
        };
        if found {
            if neg {
                return ListMatch::Negated;
            }
            hit = true;
        }
    }
    if hit {
        ListMatch::Yes
    } else {
        ListMatch::No
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_as_sshd_reads_them() {
        let l = "192.168.0.0/16,!192.168.30.0/24,10.0.0.0/8,host.example.com";
        assert!(valid(l));
        assert_eq!(matches("192.168.0.1", l), ListMatch::Yes);
        assert_eq!(matches("192.168.30.5", l), ListMatch::Negated);
        assert_eq!(matches("10.9.9.9", l), ListMatch::Yes);
        assert_eq!(matches("172.16.0.1", l), ListMatch::No);
        assert_eq!(matches("::ffff:192.168.0.1", l), ListMatch::Yes);
        let v6 = "2001:db8::/32,!2001:db8::1";
        assert_eq!(matches("2001:db8::2", v6), ListMatch::Yes);
        assert_eq!(matches("2001:db8::1", v6), ListMatch::Negated);
        assert_eq!(matches("10.0.0.1", v6), ListMatch::No);
        assert_eq!(matches("10.1.2.3", "10.1.*"), ListMatch::Yes);
        assert_eq!(matches("10.0.0.1", "10.1"), ListMatch::Yes);
        assert_eq!(matches("foo", "10.0.0.0/8,*"), ListMatch::No);
        assert_eq!(matches("1.1.1.1", "!10.0.0.0/8"), ListMatch::No);
        for bad in ["1.2.3.4/40", "192.168.1.1/24", "1.2.3.0/24,", "a,,b", "!"] {
            assert!(!valid(bad), "{bad}");
        }
        // Not CIDR to sshd, hence a pattern that never matches.
        assert!(valid("1.2.3.4/200"));
        assert_eq!(matches("1.2.3.4", "1.2.3.4/200"), ListMatch::No);
        assert!(valid("::1/129"));
    }
}
