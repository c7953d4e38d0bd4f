//! Walking the parsed configuration for one destination as ssh does: items
//! in order, Host lines against the host as typed (the host name in the
//! final pass), Match lines against what is set so far, Include keeping
//! the block's state, first value wins; then HostName's %h, and a final
//! pass when `Match final` or `canonical` asked for one.

use super::limits::{self, Limited};
use super::{local_user, matching, tokens, values, ClientConfig, Item, Resolved, REPEATABLE};
use std::collections::HashMap;
use tokens::Tokens;

/// Why the configuration could not be resolved for a destination.
#[derive(Debug)]
pub enum ResolveError {
    /// HostName's `%h` (a token it does not take).
    HostName(tokens::ExpandError),
    /// CanonicalizeHostname found no name and may not fall back.
    Canonicalize(super::canonical::Unresolved),
    /// A Match line could not be evaluated (`exec`, `localnetwork`).
    Match(matching::EvalError),
}

impl std::fmt::Display for ResolveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResolveError::HostName(e) => e.fmt(f),
            ResolveError::Canonicalize(e) => e.fmt(f),
            ResolveError::Match(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ResolveError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ResolveError::HostName(e) => Some(e),
            ResolveError::Canonicalize(e) => Some(e),
            ResolveError::Match(e) => Some(e),
        }
    }
}

impl From<tokens::ExpandError> for ResolveError {
    fn from(e: tokens::ExpandError) -> Self {
        ResolveError::HostName(e)
    }
}

impl From<super::canonical::Unresolved> for ResolveError {
    fn from(e: super::canonical::Unresolved) -> Self {
        ResolveError::Canonicalize(e)
    }
}

impl From<matching::EvalError> for ResolveError {
    fn from(e: matching::EvalError) -> Self {
        ResolveError::Match(e)
    }
}

impl ClientConfig {
    /// The effective settings for `host_arg`, the destination as typed.
    pub fn resolve(&self, host_arg: &str) -> Result<Resolved, ResolveError> {
        let mut ev = Eval {
            map: HashMap::new(),
            host_arg: host_arg.to_owned(),
            host_lines: host_arg.to_owned(),
            final_pass: false,
            want_final: false,
            local_user: local_user(),
            origins: HashMap::new(),
        };
        ev.pass(self)?;
        // After the first pass ssh fixes the host name (HostName with %h);
        // a final pass matches Host lines against it.
        let lower = host_arg.to_ascii_lowercase();
        let hostname = match ev.first("hostname") {
            Some(h) => Tokens {
                host: lower,
                ..Tokens::default()
            }
            .expand(h, tokens::HOSTNAME)?,
            None => lower,
        };
        let hostname = match self.canonicalize && canonicalize_wanted(&ev) {
            true => match super::canonical::canonicalize(&hostname, &ev.map)? {
                Some(c) => {
                    crate::log!(Debug1, "Canonicalized hostname \"{hostname}\" => \"{c}\"");
                    ev.want_final = true;
                    c
                }
                None => hostname,
            },
            false => hostname,
        };
        ev.map.insert("hostname".into(), vec![hostname.clone()]);
        if ev.want_final {
            crate::log!(Debug1, "re-parsing configuration");
            ev.final_pass = true;
            ev.host_lines = hostname;
            ev.pass(self)?;
        }
        let user = ev
            .first("user")
            .map_or_else(|| ev.local_user.clone(), str::to_owned);
        ev.map.insert("user".into(), vec![user]);
        let port = ev.port();
        ev.map.insert("port".into(), vec![port.to_string()]);
        let limited = ev.limited();
        Ok(Resolved {
            map: ev.map,
            original_host: host_arg.to_owned(),
            local_user: ev.local_user,
            limited,
        })
    }
}

/// CanonicalizeHostname: `always`, or `yes` when no proxy carries the
/// connection (a proxy resolves the name itself).
fn canonicalize_wanted(ev: &Eval) -> bool {
    let set = |k: &str| ev.first(k).is_some_and(|v| !v.eq_ignore_ascii_case("none"));
    match ev
        .first("canonicalizehostname")
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("always") => true,
        Some("yes" | "true") => !set("proxycommand") && !set("proxyjump"),
        _ => false,
    }
}

/// State of one walk over the configuration.
struct Eval {
    map: HashMap<String, Vec<String>>,
    host_arg: String,
    /// What Host lines match: the host as typed, then in the final pass
    /// the host name.
    host_lines: String,
    final_pass: bool,
    want_final: bool,
    local_user: String,
    /// Where each keyword's value was first set.
    origins: HashMap<String, (std::sync::Arc<str>, usize)>,
}

impl Eval {
    /// What limits.rs says of the values in effect, in keyword order;
    /// IgnoreUnknown's patterns silence a keyword.
    fn limited(&self) -> Vec<Limited> {
        let ignore = self.first("ignoreunknown").unwrap_or_default();
        let mut out: Vec<Limited> = self
            .map
            .iter()
            .filter_map(|(kw, vals)| {
                let v = vals.first()?;
                let l = limits::applies(kw, v)?;
                if crate::keys::pattern::match_pattern_list(kw, ignore) == Some(true) {
                    return None;
                }
                let (file, line) = self
                    .origins
                    .get(kw)
                    .cloned()
                    .unwrap_or(("command-line".into(), 0));
                Some(Limited {
                    limit: l,
                    command_line: &*file == "command-line",
                    message: limits::message(l, &file, line, v),
                })
            })
            .collect();
        out.sort_by_key(|l| l.limit.kw);
        out
    }

    fn first(&self, kw: &str) -> Option<&str> {
        self.map.get(kw).and_then(|v| v.first()).map(String::as_str)
    }

    fn port(&self) -> u16 {
        self.first("port").and_then(values::port).unwrap_or(22)
    }

    /// Tokens as they stand now (Match exec, Match host).
    fn tokens(&self) -> Tokens {
        let host = match (self.final_pass, self.first("hostname")) {
            (true, Some(h)) => h.to_owned(),
            (false, Some(h)) => h.replace("%h", &self.host_arg),
            (_, None) => self.host_arg.clone(),
        };
        Tokens {
            original_host: self.host_arg.clone(),
            host,
            port: self.port(),
            remote_user: self
                .first("user")
                .map_or_else(|| self.local_user.clone(), str::to_owned),
            local_user: self.local_user.clone(),
            home: tokens::home_dir(),
            host_key_alias: self.first("hostkeyalias").map(str::to_owned),
        }
    }

    fn pass(&mut self, cfg: &ClientConfig) -> Result<(), ResolveError> {
        let mut active = true;
        self.walk(&cfg.cmdline, &mut active, false)?;
        for f in &cfg.files {
            let mut active = true;
            self.walk(f, &mut active, false)?;
        }
        Ok(())
    }

    fn walk(&mut self, items: &[Item], active: &mut bool, never: bool) -> Result<(), ResolveError> {
        for it in items {
            match it {
                Item::Host(pats) => {
                    *active = !never && matching::exact_list(&self.host_lines, &pats.join(","));
                }
                Item::Match(crits) => {
                    *active = !never && {
                        let t = self.tokens();
                        let tag = self.first("tag").unwrap_or_default().to_owned();
                        let mut want = self.want_final;
                        let mut st = matching::MatchState {
                            tokens: &t,
                            final_pass: self.final_pass,
                            want_final: &mut want,
                            tag: &tag,
                        };
                        let r = matching::eval(crits, &mut st)?;
                        self.want_final = want;
                        r
                    };
                }
                Item::Include(files) => {
                    let outer = *active;
                    for f in files {
                        self.walk(f, active, never || !outer)?;
                        *active = outer;
                    }
                }
                Item::Set { kw, args, at } if *active && !never => {
                    if !self.map.contains_key(kw.as_str()) {
                        self.origins.insert(kw.clone(), at.clone());
                    }
                    self.apply(kw, args)
                }
                Item::Set { .. } => {}
            }
        }
        Ok(())
    }

    fn apply(&mut self, kw: &str, args: &[String]) {
        // ProxyJump and ProxyCommand compete: the first one set wins.
        let rival = match kw {
            "proxyjump" => Some("proxycommand"),
            "proxycommand" => Some("proxyjump"),
            _ => None,
        };
        if rival.is_some_and(|r| self.map.contains_key(r)) {
            return;
        }
        if kw.ends_with("forward") {
            // One value per line: `LocalForward 8080 host:80` is one spec.
            self.map
                .entry(kw.to_owned())
                .or_default()
                .push(args.join(" "));
        } else if REPEATABLE.contains(&kw) {
            let v = self.map.entry(kw.to_owned()).or_default();
            // SendEnv/SetEnv take several per line; one value per word.
            v.extend(args.iter().cloned());
        } else if kw == "setenv" {
            // As ssh: the first line wins, and in it the first value of a name.
            let mut seen = Vec::new();
            let unique = args
                .iter()
                .filter(|a| {
                    let name = a.split_once('=').map_or(a.as_str(), |(n, _)| n);
                    !seen.contains(&name.to_owned()) && {
                        seen.push(name.to_owned());
                        true
                    }
                })
                .cloned()
                .collect();
            self.map.entry(kw.to_owned()).or_insert(unique);
        } else {
            self.map
                .entry(kw.to_owned())
                .or_insert_with(|| args.to_vec());
        }
    }
}
