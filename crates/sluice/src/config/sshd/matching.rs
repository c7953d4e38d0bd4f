//! `Match` lines of sshd_config: parsing the criteria (User, Group, Host,
//! LocalAddress, LocalPort, Address, RDomain, All; several are ANDed, each
//! takes a pattern list with `!` negation) and testing them against one
//! connection, with sshd's wording for bad lines.

use crate::keys::pattern::{match_pattern, match_pattern_list};
use std::net::IpAddr;

/// What a connection is matched on (sshd's `connection_info`, and `-C`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MatchContext {
    /// The user name the client asked for.
    pub user: Option<String>,
    /// The client's host name (its address unless UseDNS resolves it).
    pub host: Option<String>,
    /// The client's address.
    pub addr: Option<String>,
    /// The address the connection arrived on.
    pub laddr: Option<String>,
    /// The port the connection arrived on.
    pub lport: Option<u16>,
    /// The routing domain (none on Linux unless given with -C).
    pub rdomain: Option<String>,
}

impl MatchContext {
    /// A connection from `peer` to `local` for `user` (host = the address, as with UseDNS no).
    pub fn connection(user: &str, peer: std::net::SocketAddr, local: std::net::SocketAddr) -> Self {
        MatchContext {
            user: Some(user.to_owned()),
            host: Some(peer.ip().to_string()),
            addr: Some(peer.ip().to_string()),
            laddr: Some(local.ip().to_string()),
            lport: Some(local.port()),
            rdomain: None,
        }
    }

    /// `-C user=bob,host=h,addr=1.2.3.4,laddr=...,lport=...,rdomain=...`.
    pub fn parse_spec(spec: &str) -> Result<Self, String> {
        let mut c = MatchContext::default();
        for item in spec.split(',').filter(|s| !s.is_empty()) {
            let bad = || format!("Invalid test mode specification {item}");
            let (k, v) = item.split_once('=').ok_or_else(bad)?;
            let v = v.to_owned();
            match k {
                "user" => c.user = Some(v),
                "host" => c.host = Some(v),
                "addr" => c.addr = Some(v),
                "laddr" => c.laddr = Some(v),
                "lport" => c.lport = Some(v.parse().map_err(|_| bad())?),
                "rdomain" => c.rdomain = Some(v),
                _ => return Err(bad()),
            }
        }
        Ok(c)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    All,
    User,
    Group,
    Host,
    Address,
    LocalAddress,
    LocalPort,
    RDomain,
}

/// One `Match` line: every criterion must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Criteria(Vec<(Kind, String)>);

impl Criteria {
    /// Parses the arguments of `Match`; errors in sshd's words (the caller
    /// adds "FILE line N: Bad Match condition" where sshd does).
    pub(super) fn parse(args: &[String]) -> Result<Criteria, (String, bool)> {
        let mut v = Vec::new();
        let mut it = args.iter();
        while let Some(attr) = it.next() {
            let kind = match attr.to_ascii_lowercase().as_str() {
                "all" => Kind::All,
                "user" => Kind::User,
                "group" => Kind::Group,
                "host" => Kind::Host,
                "address" => Kind::Address,
                "localaddress" => Kind::LocalAddress,
                "localport" => Kind::LocalPort,
                "rdomain" => Kind::RDomain,
                _ => return Err((format!("Unsupported Match attribute {attr}"), true)),
            };
            if kind == Kind::All {
                if args.len() != 1 {
                    return Err((
                        "'all' cannot be combined with other Match attributes".into(),
                        true,
                    ));
                }
                v.push((kind, String::new()));
                continue;
            }
            let Some(arg) = it.next().filter(|a| !a.is_empty()) else {
                return Err((format!("Missing Match criteria for {attr}"), true));
            };
            match kind {
                Kind::Address | Kind::LocalAddress if !valid_addr_list(arg) => {
                    return Err((format!("Invalid Match address argument '{arg}'"), false));
                }
                Kind::LocalPort if arg.parse::<u16>().map_or(true, |p| p == 0) => {
                    return Err((format!("Invalid LocalPort '{arg}' on Match line"), false));
                }
                _ => {}
            }
            v.push((kind, arg.clone()));
        }
        if v.is_empty() {
            return Err(("One or more attributes required for Match".into(), true));
        }
        Ok(Criteria(v))
    }

    /// Uses `LocalPort`, which `sshd -T -C` insists on having in the spec.
    pub(super) fn uses_local_port(&self) -> bool {
        self.0.iter().any(|(k, _)| *k == Kind::LocalPort)
    }

    /// Whether the line applies. `None` is the configuration at startup
    /// (before any connection), where only `Match All` applies; in a
    /// context, a criterion whose field is missing does not match.
    pub(super) fn matches(&self, ctx: Option<&MatchContext>) -> bool {
        self.0.iter().all(|(kind, arg)| {
            let Some(c) = ctx else {
                return *kind == Kind::All;
            };
            match kind {
                Kind::All => true,
                Kind::User => c.user.as_deref().is_some_and(|u| list(u, arg)),
                Kind::Group => c.user.as_deref().is_some_and(|u| group_match(u, arg)),
                Kind::Host => c.host.as_deref().is_some_and(|h| list(h, arg)),
                Kind::Address => c.addr.as_deref().is_some_and(|a| addr_list(a, arg)),
                Kind::LocalAddress => c.laddr.as_deref().is_some_and(|a| addr_list(a, arg)),
                Kind::LocalPort => c.lport.is_some_and(|p| arg.parse() == Ok(p)),
                Kind::RDomain => c.rdomain.as_deref().is_some_and(|r| list(r, arg)),
            }
        })
    }
}

/// A positive match and no negated one.
fn list(s: &str, patterns: &str) -> bool {
    match_pattern_list(s, patterns) == Some(true)
}

/// Any of the user's groups matches and none is excluded by a `!` pattern.
fn group_match(user: &str, patterns: &str) -> bool {
    let groups = user_groups(user);
    let mut found = false;
    for g in &groups {
        match match_pattern_list(g, patterns) {
            Some(false) => return false,
            Some(true) => found = true,
            None => {}
        }
    }
    found
}

/// The names of a user's groups (primary and supplementary); empty for an unknown user.
fn user_groups(user: &str) -> Vec<String> {
    crate::users::by_name(user).map_or_else(Vec::new, |u| crate::users::group_names(&u))
}

/// One entry of an address list: a wildcard pattern or `addr[/bits]`.
fn addr_entry(addr: &str, entry: &str) -> Option<bool> {
    if entry.contains(['*', '?']) {
        return Some(match_pattern(addr, entry));
    }
    let (net, bits) = match entry.split_once('/') {
        Some((n, b)) => (n, Some(b.parse::<u32>().ok()?)),
        None => (entry, None),
    };
    let net: IpAddr = net.parse().ok()?;
    let max = if net.is_ipv4() { 32 } else { 128 };
    let bits = bits.unwrap_or(max);
    if bits > max {
        return None;
    }
    let Ok(a) = addr.parse::<IpAddr>() else {
        return Some(false);
    };
    Some(match (a, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let m = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(a) & m == u32::from(n) & m
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let m = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(a) & m == u128::from(n) & m
        }
        _ => false,
    })
}

fn entries(patterns: &str) -> impl Iterator<Item = (bool, &str)> {
    patterns
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| match p.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, p),
        })
}

fn valid_addr_list(patterns: &str) -> bool {
    entries(patterns).all(|(_, e)| addr_entry("0.0.0.0", e).is_some())
}

/// sshd's addr_match_list: CIDR blocks or wildcards, a negated hit wins.
fn addr_list(addr: &str, patterns: &str) -> bool {
    let mut hit = false;
    for (neg, e) in entries(patterns) {
        if addr_entry(addr, e) == Some(true) {
            if neg {
                return false;
            }
            hit = true;
        }
    }
    hit
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crit(s: &str) -> Criteria {
        let v: Vec<String> = s.split_whitespace().map(String::from).collect();
        Criteria::parse(&v).unwrap()
    }

    #[test]
    fn criteria() {
        let c = MatchContext::parse_spec("user=bob,addr=10.1.2.3,lport=22").unwrap();
        assert!(crit("User bob Address 10.0.0.0/8").matches(Some(&c)));
        assert!(!crit("User bob Address 10.0.0.0/8,!10.1.2.3").matches(Some(&c)));
        assert!(!crit("User alice,b*").matches(None));
        assert!(crit("User alice,b*").matches(Some(&c)));
        assert!(!crit("User *,!bob").matches(Some(&c)));
        assert!(crit("LocalPort 22").matches(Some(&c)));
        assert!(!crit("Host x").matches(Some(&c)));
        assert!(crit("All").matches(None));
        assert!(crit("Address 10.1.*").matches(Some(&c)));
        assert!(Criteria::parse(&["Address".into(), "1.2.3.4/40".into()]).is_err());
        assert!(Criteria::parse(&["All".into(), "User".into(), "x".into()]).is_err());
        assert!(Criteria::parse(&["User".into()]).is_err());
        assert!(MatchContext::parse_spec("foo=1").is_err());
        let root = MatchContext::parse_spec("user=root").unwrap();
        assert!(crit("Group root").matches(Some(&root)));
        assert!(!crit("Group root,!root").matches(Some(&root)));
    }
}
