//! OpenSSH pattern lists (ssh_config(5) PATTERNS): `*` and `?` wildcards,
//! comma-separated lists, `!` negation; and CIDR address lists for `from=`.

use std::net::IpAddr;

/// Matches `s` against one wildcard pattern (case-insensitive, as host names are).
pub fn match_pattern(s: &str, pat: &str) -> bool {
    wildcard(s.as_bytes(), pat.as_bytes(), |a, b| {
        a.eq_ignore_ascii_case(&b)
    })
}

/// `*` (any run) and `?` (one byte) matching with `eq` for the other bytes.
/// Greedy with one backtrack point (the last `*`): at most
/// `s.len() * pat.len()` steps, never exponential, so a pattern of many
/// stars in a file or from= option cannot stall the process (the
/// recursive form this replaces took minutes on ~100 stars).
pub fn wildcard(s: &[u8], pat: &[u8], eq: impl Fn(u8, u8) -> bool) -> bool {
    let (mut si, mut pi) = (0, 0);
    // After the last star seen: where the pattern resumes, and the next
    // starting point in `s` to try for it.
    let mut star: Option<(usize, usize)> = None;
    while let Some(&b) = s.get(si) {
        match pat.get(pi) {
            Some(b'*') => {
                pi += 1;
                star = Some((pi, si));
            }
            Some(&c) if c == b'?' || eq(c, b) => {
                pi += 1;
                si += 1;
            }
            _ => match star {
                Some((p, from)) => {
                    // The star takes one byte more.
                    pi = p;
                    si = from + 1;
                    star = Some((p, from + 1));
                }
                None => return false,
            },
        }
    }
    pat.get(pi..).unwrap_or_default().iter().all(|&c| c == b'*')
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

    /// The recursive definition the matcher must agree with.
    fn reference(s: &[u8], p: &[u8]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some((b'*', rest)) => (0..=s.len()).any(|i| reference(&s[i..], rest)),
            Some((b'?', rest)) => !s.is_empty() && reference(&s[1..], rest),
            Some((c, rest)) => s.first() == Some(c) && reference(&s[1..], rest),
        }
    }

    #[test]
    fn wildcard_agrees_with_the_recursive_definition() {
        let words = ["", "a", "ab", "aab", "abab", "abcab", "ba", "aaa", "xyz"];
        let pats = [
            "", "*", "**", "a", "a*", "*a", "*b", "a*b", "*ab*", "?", "??", "a?b", "*?*", "a**b",
            "*a*b*", "?*?", "ab*ab", "*x*", "b*a",
        ];
        for w in words {
            for p in pats {
                assert_eq!(
                    wildcard(w.as_bytes(), p.as_bytes(), |a, b| a == b),
                    reference(w.as_bytes(), p.as_bytes()),
                    "{w:?} against {p:?}"
                );
            }
        }
    }

    /// Found by the known_hosts and ssh_config fuzz targets: a pattern of
    /// ~120 stars took minutes (exponential backtracking).
    #[test]
    fn many_stars_match_quickly() {
        let t = std::time::Instant::now();
        let pat = format!("ho{}st.example", "*".repeat(200));
        assert!(!match_pattern(&"h".repeat(300), &pat));
        assert!(match_pattern("host.example", &pat));
        assert!(!wildcard(
            &[b'a'; 400],
            format!("{}b", "*".repeat(200)).as_bytes(),
            |a, b| a == b
        ));
        assert!(
            t.elapsed() < std::time::Duration::from_secs(1),
            "{:?}",
            t.elapsed()
        );
    }
}
