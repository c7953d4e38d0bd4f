//! OpenSSH pattern lists (ssh_config(5) PATTERNS): `*` and `?` wildcards,
//! comma-separated lists, `!` negation; and CIDR address lists for `from=`.

use std::net::IpAddr;

/// Matches `s` against one wildcard pattern (case-insensitive, as host names are).
pub fn match_pattern(s: &str, pat: &str) -> bool {
    fn rec(s: &[u8], p: &[u8]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some((b'*', rest)) => (0..=s.len()).any(|i| rec(s.get(i..).unwrap_or_default(), rest)),
            Some((b'?', rest)) => !s.is_empty() && rec(s.get(1..).unwrap_or_default(), rest),
            Some((c, rest)) => {
                s.first().is_some_and(|x| x.eq_ignore_ascii_case(c))
                    && rec(s.get(1..).unwrap_or_default(), rest)
            }
        }
    }
    rec(s.as_bytes(), pat.as_bytes())
}

/// Matches `s` against a comma-separated list: Some(true) on a positive
/// match, Some(false) if a negated pattern matched (which wins), None if nothing matched.
pub fn match_pattern_list(s: &str, list: &str) -> Option<bool> {
    let mut result = None;
    for p in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if let Some(neg) = p.strip_prefix('!') {
            if match_pattern(s, neg) {
                return Some(false);
            }
        } else if match_pattern(s, p) {
            result = Some(true);
        }
    }
    result
}

/// True if `addr` is inside `net/bits`.
fn in_cidr(addr: IpAddr, net: IpAddr, bits: u32) -> bool {
    match (addr, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) if bits <= 32 => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) if bits <= 128 => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// `from=` semantics: each entry is a wildcard pattern (matched against the
/// address and the host name) or a CIDR block; negation wins.
pub fn match_host_and_ip(addr: IpAddr, host: Option<&str>, list: &str) -> bool {
    let ip = addr.to_string();
    let mut ok = false;
    for p in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (neg, p) = match p.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, p),
        };
        let hit = match p.split_once('/') {
            Some((net, bits)) => match (net.parse::<IpAddr>(), bits.parse::<u32>()) {
                (Ok(n), Ok(b)) => in_cidr(addr, n, b),
                _ => false,
            },
            None => match_pattern(&ip, p) || host.is_some_and(|h| match_pattern(h, p)),
        };
        if hit && neg {
            return false;
        }
        ok |= hit;
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_lists_and_cidr() {
        assert!(match_pattern("host.example.com", "*.example.com"));
        assert!(match_pattern("a1", "a?"));
        assert!(!match_pattern("a12", "a?"));
        assert_eq!(match_pattern_list("db1", "db*,!db1"), Some(false));
        assert_eq!(match_pattern_list("db2", "db*,!db1"), Some(true));
        assert_eq!(match_pattern_list("web", "db*"), None);
        let a: IpAddr = "10.1.2.3".parse().unwrap();
        assert!(match_host_and_ip(a, None, "10.0.0.0/8"));
        assert!(!match_host_and_ip(a, None, "10.0.0.0/8,!10.1.2.3"));
        assert!(match_host_and_ip("::1".parse().unwrap(), None, "::1/128"));
        assert!(match_host_and_ip(a, Some("box.lan"), "*.lan"));
    }
}
