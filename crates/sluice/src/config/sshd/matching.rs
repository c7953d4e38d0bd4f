//! `Match` lines of sshd_config: parsing the criteria (User, Group, Host,
//! Address, LocalAddress, LocalPort, RDomain, Invalid-User, Version, All;
//! several are ANDed, each pattern list takes `!` negation, a negated hit
//! failing the criterion) and testing them against one connection, with
//! sshd's wording for bad lines. `attr=value` is read as `attr value`, as
//! sshd does. Address lists are addr_list.rs's. A connection's routing
//! domain is, as for sshd on Linux, the VRF device its socket is bound to
//! (sluiced run under `ip vrf exec`), set once per connection process by
//! [`set_connection_rdomain`].

use super::addr_list::{self, ListMatch};
use crate::keys::pattern::{match_pattern_list, wildcard};
use std::sync::OnceLock;

/// The routing domain of this process's connection (each connection runs
/// in processes of its own), when its socket is bound to a device.
static CONNECTION_RDOMAIN: OnceLock<String> = OnceLock::new();

/// Records the connection's routing domain (the device name its socket is
/// bound to) for [`MatchContext::connection`]; the first call wins.
pub fn set_connection_rdomain(device: String) {
    let _ = CONNECTION_RDOMAIN.set(device);
}

/// The connection's routing domain, if any (`%D` of AuthorizedKeysCommand).
pub fn connection_rdomain() -> Option<&'static str> {
    CONNECTION_RDOMAIN.get().map(String::as_str)
}

/// What a connection is matched on (sshd's `connection_info`, and `-C`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MatchContext {
    /// The user name the client asked for.
    pub user: Option<String>,
    /// The user has no account here (`Match Invalid-User`, sshd 10):
    /// given by `-C` (absent: the user is taken as valid, as sshd does),
    /// None for a connection, where it is looked up only when a Match line
    /// asks (so no passwd lookup happens for configurations without it).
    pub invalid_user: Option<bool>,
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
    /// An IPv4-mapped IPv6 address is shown as its IPv4 one, as sshd does.
    pub fn connection(user: &str, peer: std::net::SocketAddr, local: std::net::SocketAddr) -> Self {
        let peer_ip = peer.ip().to_canonical().to_string();
        MatchContext {
            user: Some(user.to_owned()),
            invalid_user: None,
            host: Some(peer_ip.clone()),
            addr: Some(peer_ip),
            laddr: Some(local.ip().to_canonical().to_string()),
            lport: Some(local.port()),
            rdomain: CONNECTION_RDOMAIN.get().cloned(),
        }
    }

    /// `-C user=bob,host=h,addr=1.2.3.4,laddr=...,lport=...,rdomain=...,invalid-user`
    /// (the last as in sshd 10: the user is taken as having no account).
    pub fn parse_spec(spec: &str) -> Result<Self, TestSpecError> {
        let mut c = MatchContext {
            invalid_user: Some(false),
            ..MatchContext::default()
        };
        // sshd stops at the first empty item.
        for item in spec.split(',').take_while(|s| !s.is_empty()) {
            if item == "invalid-user" {
                c.invalid_user = Some(true);
                continue;
            }
            let bad = || TestSpecError::Invalid {
                item: item.to_owned(),
            };
            let (k, v) = item.split_once('=').ok_or_else(bad)?;
            let v = v.to_owned();
            match k {
                "user" => c.user = Some(v),
                "host" => c.host = Some(v),
                "addr" => c.addr = Some(v),
                "laddr" => c.laddr = Some(v),
                "lport" => {
                    c.lport = Some(v.parse().map_err(|_| TestSpecError::Port {
                        value: v.clone(),
                        item: item.to_owned(),
                    })?)
                }
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
    InvalidUser,
    User,
    Group,
    Host,
    Address,
    LocalAddress,
    LocalPort,
    RDomain,
    Version,
}

/// What sluiced answers to `Match Version` (sshd matches its SSH_RELEASE,
/// e.g. "OpenSSH_10.1"; sluiced is not OpenSSH, so such a pattern does not match).
fn release() -> String {
    format!("sluice_{}", env!("CARGO_PKG_VERSION"))
}

/// One `Match` line: every criterion must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Criteria(Vec<(Kind, String)>);

/// A `-C` test spec sshd refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestSpecError {
    /// An item that is not `key=value` of a known key.
    Invalid {
        /// The item.
        item: String,
    },
    /// `lport=` with other than a port.
    Port {
        /// The value.
        value: String,
        /// The item.
        item: String,
    },
}

impl std::fmt::Display for TestSpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TestSpecError::Invalid { item } => {
                write!(f, "Invalid test mode specification {item}")
            }
            TestSpecError::Port { value, item } => {
                write!(
                    f,
                    "Invalid port '{value}' in test mode specification {item}"
                )
            }
        }
    }
}

impl std::error::Error for TestSpecError {}

/// Why a Match line was refused, in sshd's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatchError {
    /// An unknown criterion.
    Unsupported {
        /// The criterion as written.
        attr: String,
    },
    /// `All` with other criteria.
    AllCombined,
    /// A criterion without its patterns.
    MissingCriteria {
        /// The criterion as written.
        attr: String,
    },
    /// `Address` with a bad list.
    Address {
        /// The list.
        arg: String,
    },
    /// `LocalAddress` with a bad list.
    LocalAddress {
        /// The list.
        arg: String,
    },
    /// `LocalPort` with other than a port.
    LocalPort {
        /// The value.
        arg: String,
    },
    /// `Match` alone.
    NoAttributes,
}

impl MatchError {
    /// Whether sshd follows the message with "FILE line N: Bad Match
    /// condition" (else " at line N" is appended).
    pub(super) fn bad_condition(&self) -> bool {
        !matches!(
            self,
            MatchError::Address { .. } | MatchError::LocalAddress { .. }
        )
    }
}

impl std::fmt::Display for MatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MatchError::Unsupported { attr } => write!(f, "Unsupported Match attribute {attr}"),
            MatchError::AllCombined => {
                f.write_str("'all' cannot be combined with other Match attributes")
            }
            MatchError::MissingCriteria { attr } => write!(f, "Missing Match criteria for {attr}"),
            MatchError::Address { arg } => write!(f, "Invalid Match address argument '{arg}'"),
            MatchError::LocalAddress { arg } => {
                write!(f, "Invalid Match localaddress argument '{arg}'")
            }
            MatchError::LocalPort { arg } => write!(f, "Invalid LocalPort '{arg}' on Match line"),
            MatchError::NoAttributes => f.write_str("One or more attributes required for Match"),
        }
    }
}

impl std::error::Error for MatchError {}

impl Criteria {
    /// Parses the arguments of `Match`; errors in sshd's words.
    pub(super) fn parse(args: &[String]) -> Result<Criteria, MatchError> {
        // `User=bob` is `User bob`, as sshd's tokenizer has it.
        let mut words: Vec<String> = Vec::new();
        for a in args {
            match a.split_once('=') {
                Some((k, v)) if !k.is_empty() => {
                    words.push(k.to_owned());
                    if !v.is_empty() {
                        words.push(v.to_owned());
                    }
                }
                _ => words.push(a.clone()),
            }
        }
        let mut v = Vec::new();
        let mut it = words.iter();
        while let Some(attr) = it.next() {
            let kind = match attr.to_ascii_lowercase().as_str() {
                "all" => Kind::All,
                "invalid-user" => Kind::InvalidUser,
                "user" => Kind::User,
                "group" => Kind::Group,
                "host" => Kind::Host,
                "address" => Kind::Address,
                "localaddress" => Kind::LocalAddress,
                "localport" => Kind::LocalPort,
                "version" => Kind::Version,
                "rdomain" => Kind::RDomain,
                _ => return Err(MatchError::Unsupported { attr: attr.clone() }),
            };
            if kind == Kind::All {
                if words.len() != 1 {
                    return Err(MatchError::AllCombined);
                }
                v.push((kind, String::new()));
                continue;
            }
            if kind == Kind::InvalidUser {
                v.push((kind, String::new()));
                continue;
            }
            let Some(arg) = it.next().filter(|a| !a.is_empty()) else {
                return Err(MatchError::MissingCriteria { attr: attr.clone() });
            };
            match kind {
                Kind::Address if !addr_list::valid(arg) => {
                    return Err(MatchError::Address { arg: arg.clone() });
                }
                Kind::LocalAddress if !addr_list::valid(arg) => {
                    return Err(MatchError::LocalAddress { arg: arg.clone() });
                }
                // sshd's a2port: 0 is accepted (and never matches).
                Kind::LocalPort if arg.parse::<u16>().is_err() => {
                    return Err(MatchError::LocalPort { arg: arg.clone() });
                }
                _ => {}
            }
            v.push((kind, arg.clone()));
        }
        if v.is_empty() {
            return Err(MatchError::NoAttributes);
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
                Kind::InvalidUser => c.invalid_user.unwrap_or_else(|| {
                    c.user
                        .as_deref()
                        .is_some_and(|u| crate::users::by_name(u).is_none())
                }),
                Kind::User => c.user.as_deref().is_some_and(|u| exact_list(u, arg)),
                Kind::Group => c.user.as_deref().is_some_and(|u| group_match(u, arg)),
                Kind::Host => c
                    .host
                    .as_deref()
                    .is_some_and(|h| match_pattern_list(h, arg) == Some(true)),
                Kind::Address => c.addr.as_deref().is_some_and(|a| addr_hit(a, arg)),
                Kind::LocalAddress => c.laddr.as_deref().is_some_and(|a| addr_hit(a, arg)),
                Kind::LocalPort => c.lport.is_some_and(|p| arg.parse() == Ok(p)),
                Kind::RDomain => c.rdomain.as_deref().is_some_and(|r| exact_list(r, arg)),
                Kind::Version => exact_list(&release(), arg),
            }
        })
    }
}

fn addr_hit(addr: &str, list: &str) -> bool {
    addr_list::matches(addr, list) == ListMatch::Yes
}

/// sshd's pattern list for users, groups and versions: case-sensitive, a
/// negated hit wins. Some(true) hit, Some(false) negated, None neither.
fn exact(s: &str, patterns: &str) -> Option<bool> {
    let mut hit = None;
    for p in patterns.split(',') {
        let (neg, p) = match p.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, p),
        };
        if wildcard(s.as_bytes(), p.as_bytes(), |a, b| a == b) {
            if neg {
                return Some(false);
            }
            hit = Some(true);
        }
    }
    hit
}

fn exact_list(s: &str, patterns: &str) -> bool {
    exact(s, patterns) == Some(true)
}

/// Any of the user's groups matches and none is excluded by a `!` pattern.
fn group_match(user: &str, patterns: &str) -> bool {
    let groups = user_groups(user);
    let mut found = false;
    for g in &groups {
        match exact(g, patterns) {
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
        assert!(matches!(
            Criteria::parse(&["Address".into(), "1.2.3.4/40".into()]),
            Err(MatchError::Address { .. })
        ));
        assert!(
            crit("Address 192.168.0.0/16,!192.168.30.0/24,10.0.0.0/8,host.example.com")
                .matches(Some(&MatchContext::parse_spec("addr=192.168.0.1").unwrap()))
        );
        assert!(!crit("User Bob").matches(Some(&c)));
        assert!(crit("user=bob").matches(Some(&c)));
        assert!(!crit("LocalPort 0").matches(Some(&c)));
        assert!(!crit("RDomain vrf0").matches(Some(&c)));
        let vrf = MatchContext::parse_spec("rdomain=vrf0").unwrap();
        assert!(crit("RDomain vrf*,!vrf1").matches(Some(&vrf)));
        let ghost = MatchContext::parse_spec("user=nobody-here,invalid-user").unwrap();
        assert!(crit("Invalid-User").matches(Some(&ghost)));
        assert!(!crit("Invalid-User").matches(Some(&c)));
        assert!(!crit("Invalid-User").matches(None));
        assert!(crit("Version sluice_*").matches(Some(&c)));
        assert!(!crit("Version OpenSSH_*").matches(Some(&c)));
        assert_eq!(
            Criteria::parse(&["All".into(), "User".into(), "x".into()]),
            Err(MatchError::AllCombined)
        );
        assert!(matches!(
            Criteria::parse(&["User".into()]),
            Err(MatchError::MissingCriteria { .. })
        ));
        assert_eq!(
            MatchContext::parse_spec("foo=1"),
            Err(TestSpecError::Invalid {
                item: "foo=1".into()
            })
        );
        assert_eq!(
            MatchContext::parse_spec("lport=x").unwrap_err().to_string(),
            "Invalid port 'x' in test mode specification lport=x"
        );
        let root = MatchContext::parse_spec("user=root").unwrap();
        assert!(crit("Group root").matches(Some(&root)));
        assert!(!crit("Group root,!root").matches(Some(&root)));
    }
}
