//! `Match` lines (ssh_config(5)): `all`, `canonical`, `final`, `exec`,
//! `host`, `originalhost`, `user`, `localuser`, `tagged` (the Tag keyword
//! or -P) and `localnetwork` (a CIDR list against the addresses of this
//! machine's interfaces), each negated by a leading `!`; all criteria
//! must hold. Parsed at load, evaluated in file order
//! against what the configuration has set so far, as ssh does.

use super::tokens::{self, Tokens};
use crate::keys::pattern::match_pattern_list;

/// One criterion of a Match line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Crit {
    /// `all`.
    All,
    /// `canonical` and `final`: true only in the final pass.
    Canonical,
    /// `final` (asks for a final pass).
    Final,
    /// `exec "command"`: true when the command exits 0.
    Exec(String),
    /// `host patterns`: the target host name (after HostName).
    Host(String),
    /// `originalhost patterns`: the host as typed.
    OriginalHost(String),
    /// `user patterns`: the remote user.
    User(String),
    /// `localuser patterns`.
    LocalUser(String),
    /// `tagged patterns`: the Tag keyword's value (or `-P`).
    Tagged(String),
    /// `localnetwork cidr-list`: any local interface address in it.
    LocalNetwork(String),
}

/// Parses a Match line's arguments into (negated, criterion) pairs; the
/// errors are ssh's.
pub fn parse(args: &[String]) -> Result<Vec<(bool, Crit)>, MatchError> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (neg, name) = match a.strip_prefix('!') {
            Some(n) => (true, n),
            None => (false, a.as_str()),
        };
        let lname = name.to_ascii_lowercase();
        let crit = match lname.as_str() {
            "all" => {
                let others = args.iter().any(|x| {
                    let x = x.trim_start_matches('!').to_ascii_lowercase();
                    !matches!(x.as_str(), "all" | "canonical" | "final")
                });
                if others {
                    return Err(MatchError::AllCombined { arg: a.clone() });
                }
                Crit::All
            }
            "canonical" => Crit::Canonical,
            "final" => Crit::Final,
            "exec" | "host" | "originalhost" | "user" | "localuser" | "tagged" | "localnetwork" => {
                let v = it
                    .next()
                    .ok_or_else(|| MatchError::MissingCriteria {
                        name: name.to_owned(),
                    })?
                    .clone();
                match lname.as_str() {
                    "exec" => Crit::Exec(v),
                    "host" => Crit::Host(v),
                    "originalhost" => Crit::OriginalHost(v),
                    "user" => Crit::User(v),
                    "tagged" => Crit::Tagged(v),
                    "localnetwork" => {
                        if !crate::keys::cert::cidr_list_ok(&v) || v.contains('*') {
                            return Err(MatchError::LocalNetwork { list: v });
                        }
                        Crit::LocalNetwork(v)
                    }
                    _ => Crit::LocalUser(v),
                }
            }
            _ => {
                return Err(MatchError::Unsupported {
                    name: name.to_owned(),
                })
            }
        };
        out.push((neg, crit));
    }
    if out.is_empty() {
        return Err(MatchError::NoAttributes);
    }
    Ok(out)
}

/// What a Match line is evaluated against.
pub struct MatchState<'a> {
    /// Tokens so far (host after HostName, remote user, port, ...).
    pub tokens: &'a Tokens,
    /// The final pass (after HostName; `canonical` and `final` hold).
    pub final_pass: bool,
    /// Set when a `final` criterion is seen in the first pass.
    pub want_final: &'a mut bool,
    /// The Tag set so far ("" when none).
    pub tag: &'a str,
}

/// True when all criteria hold. `exec` runs only if everything before it
/// held, as in ssh; a command that cannot start is an error.
pub fn eval(crits: &[(bool, Crit)], st: &mut MatchState<'_>) -> Result<bool, EvalError> {
    let t = st.tokens;
    let mut result = true;
    for (neg, c) in crits {
        let hit = match c {
            Crit::All => true,
            Crit::Canonical => st.final_pass,
            Crit::Final => {
                *st.want_final = true;
                st.final_pass
            }
            Crit::Host(p) => match_pattern_list(&t.host.to_ascii_lowercase(), p) == Some(true),
            Crit::OriginalHost(p) => match_pattern_list(&t.original_host, p) == Some(true),
            Crit::User(p) => exact_list(&t.remote_user, p),
            Crit::LocalUser(p) => exact_list(&t.local_user, p),
            Crit::Tagged(p) => match_pattern_list(st.tag, p) == Some(true),
            Crit::LocalNetwork(list) => crate::net::local_addr::interface_addrs(None)
                .map_err(|e| EvalError::Interfaces(e.to_string()))?
                .into_iter()
                .any(|a| crate::keys::pattern::match_host_and_ip(a, None, list)),
            Crit::Exec(cmd) => {
                let cmd = t.expand(cmd, tokens::FILE)?;
                if !result {
                    crate::log!(Debug3, "skipped exec \"{cmd}\"");
                    continue;
                }
                run_exec(&cmd)?
            }
        };
        if hit == *neg {
            result = false;
        }
    }
    Ok(result)
}

/// A pattern list matched case-sensitively (Host lines, `Match user`), as
/// ssh's match_pattern_list without lower-casing.
pub fn exact_list(s: &str, list: &str) -> bool {
    fn one(s: &[u8], p: &[u8]) -> bool {
        crate::keys::pattern::wildcard(s, p, |a, b| a == b)
    }
    let mut hit = false;
    for p in list.split(',').filter(|p| !p.is_empty()) {
        match p.strip_prefix('!') {
            Some(n) if one(s.as_bytes(), n.as_bytes()) => return false,
            Some(_) => {}
            None => hit |= one(s.as_bytes(), p.as_bytes()),
        }
    }
    hit
}

/// `Match exec`: the command through the shell, stdio detached from ours
/// except stderr; true on exit status 0.
fn run_exec(cmd: &str) -> Result<bool, EvalError> {
    let shell = std::env::var("SHELL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "/bin/sh".into());
    crate::log!(Debug1, "Executing command: '{cmd}'");
    let st = std::process::Command::new(&shell)
        .arg("-c")
        .arg(cmd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|error| EvalError::Exec {
            cmd: cmd.to_owned(),
            shell,
            error,
        })?;
    Ok(st.success())
}

/// A Match line ssh refuses, in ssh's words (printed before
/// "FILE line N: Bad Match condition").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatchError {
    /// `all` with criteria other than `canonical` and `final`.
    AllCombined {
        /// The `all` word as written (`!` kept).
        arg: String,
    },
    /// A criterion at the end of the line without its patterns.
    MissingCriteria {
        /// The criterion as written.
        name: String,
    },
    /// `localnetwork` with a list that is not CIDR blocks.
    LocalNetwork {
        /// The list.
        list: String,
    },
    /// An unknown criterion.
    Unsupported {
        /// The criterion as written.
        name: String,
    },
    /// `Match` alone.
    NoAttributes,
}

impl std::fmt::Display for MatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MatchError::AllCombined { arg } => {
                write!(f, "'{arg}' cannot be combined with other Match attributes")
            }
            MatchError::MissingCriteria { name } => {
                write!(f, "Missing Match criteria for {name}")
            }
            MatchError::LocalNetwork { list } => {
                write!(f, "Invalid Match localnetwork list \"{list}\"")
            }
            MatchError::Unsupported { name } => write!(f, "Unsupported Match attribute {name}"),
            MatchError::NoAttributes => f.write_str("One or more attributes required for Match"),
        }
    }
}

impl std::error::Error for MatchError {}

/// A Match line that cannot be evaluated.
#[derive(Debug)]
pub enum EvalError {
    /// The interfaces' addresses (`localnetwork`) cannot be listed: the
    /// lower layer's text.
    Interfaces(String),
    /// `exec`'s command has a bad token.
    Token(super::tokens::ExpandError),
    /// `exec`'s shell cannot start: `match exec 'CMD' error: SHELL: ERROR`.
    Exec {
        /// The command, tokens expanded.
        cmd: String,
        /// The shell.
        shell: String,
        /// Why it did not start.
        error: std::io::Error,
    },
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EvalError::Interfaces(e) => f.write_str(e),
            EvalError::Token(e) => e.fmt(f),
            EvalError::Exec { cmd, shell, error } => {
                write!(f, "match exec '{cmd}' error: {shell}: {error}")
            }
        }
    }
}

impl std::error::Error for EvalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EvalError::Interfaces(_) => None,
            EvalError::Token(e) => Some(e),
            EvalError::Exec { error, .. } => Some(error),
        }
    }
}

impl From<super::tokens::ExpandError> for EvalError {
    fn from(e: super::tokens::ExpandError) -> Self {
        EvalError::Token(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Vec<(bool, Crit)>, MatchError> {
        parse(&s.split_whitespace().map(String::from).collect::<Vec<_>>())
    }

    #[test]
    fn parse_and_eval() {
        assert_eq!(p("all").unwrap(), [(false, Crit::All)]);
        assert_eq!(p("canonical all").unwrap().len(), 2);
        assert!(p("all host x")
            .unwrap_err()
            .to_string()
            .contains("cannot be combined"));
        assert_eq!(
            p("host").unwrap_err().to_string(),
            "Missing Match criteria for host"
        );
        assert_eq!(
            p("foo bar").unwrap_err().to_string(),
            "Unsupported Match attribute foo"
        );
        assert!(matches!(
            p("foo bar"),
            Err(MatchError::Unsupported { name }) if name == "foo"
        ));
        assert_eq!(p(""), Err(MatchError::NoAttributes));
        let t = Tokens {
            original_host: "web".into(),
            host: "web.example.com".into(),
            port: 22,
            remote_user: "bob".into(),
            local_user: "me".into(),
            home: "/".into(),
            host_key_alias: None,
        };
        let mut want = false;
        let mut st = MatchState {
            tokens: &t,
            final_pass: false,
            want_final: &mut want,
            tag: "prod",
        };
        let mut ev = |s: &str| eval(&p(s).unwrap(), &mut st).unwrap();
        assert!(ev("host *.example.com user bob"));
        assert!(!ev("host *.example.com !user bob"));
        assert!(ev("originalhost web !localuser root"));
        assert!(!ev("host web"));
        assert!(ev("exec true"));
        assert!(!ev("exec false"));
        assert!(ev("!exec false"));
        assert!(!ev("host nomatch exec /nonexistent-so-never-run"));
        assert!(!ev("final"));
        assert!(!ev("canonical"));
        assert!(ev("tagged prod"));
        assert!(ev("tagged p*,!dev"));
        assert!(!ev("tagged dev"));
        assert!(ev("localnetwork 127.0.0.0/8"));
        assert!(!ev("localnetwork 240.0.0.0/8"));
        assert!(ev("!localnetwork 240.0.0.0/8"));
        assert!(matches!(
            p("localnetwork 10.*"),
            Err(MatchError::LocalNetwork { .. })
        ));
        assert!(want);
    }
}
