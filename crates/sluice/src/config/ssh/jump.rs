//! ProxyJump / -J: `[user@]host[:port]` or `ssh://[user@]host[:port]`
//! hops separated by commas. As ssh does, the last hop is the jump host and
//! the ones before it (`extra`) are handed on to the proxy's own `-J`.

/// A parsed ProxyJump value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Jump {
    /// Hops before the last, as given (passed on with -J).
    pub extra: Option<String>,
    /// The last hop's user.
    pub user: Option<String>,
    /// The last hop.
    pub host: String,
    /// Its port.
    pub port: Option<u16>,
}

fn hop(s: &str) -> Option<(Option<String>, String, Option<u16>)> {
    let s = s
        .strip_prefix("ssh://")
        .map_or(s, |r| r.trim_end_matches('/'));
    let (user, rest) = match s.rsplit_once('@') {
        Some((u, r)) if !u.is_empty() => (Some(u.to_owned()), r),
        Some(_) => return None,
        None => (None, s),
    };
    let (host, port) = if let Some(r) = rest.strip_prefix('[') {
        let (h, tail) = r.split_once(']')?;
        match tail {
            "" => (h, None),
            t => (h, Some(t.strip_prefix(':')?)),
        }
    } else {
        match rest.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h, Some(p)),
            _ => (rest, None),
        }
    };
    if host.is_empty() || host.contains(|c: char| c.is_whitespace() || c == '/') {
        return None;
    }
    let port = match port {
        Some(p) => Some(super::values::port(p)?),
        None => None,
    };
    Some((user, host.to_owned(), port))
}

/// Parses a ProxyJump value; None for `none`. Errors name the value.
pub fn parse(v: &str) -> Result<Option<Jump>, InvalidProxyJump> {
    if v.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let bad = || InvalidProxyJump {
        value: v.to_owned(),
    };
    let (extra, last) = match v.rsplit_once(',') {
        Some((e, l)) => (Some(e), l),
        None => (None, v),
    };
    if let Some(e) = extra {
        for h in e.split(',') {
            hop(h).ok_or_else(bad)?;
        }
    }
    let (user, host, port) = hop(last).ok_or_else(bad)?;
    Ok(Some(Jump {
        extra: extra.map(str::to_owned),
        user,
        host,
        port,
    }))
}

impl Jump {
    /// As `ssh -G` prints it: numeric hosts in brackets.
    pub fn show(&self) -> String {
        let numeric =
            self.host.contains(':') || self.host.chars().all(|c| c.is_ascii_digit() || c == '.');
        let host = if numeric {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        format!(
            "{}{}{}{host}{}",
            self.extra
                .as_deref()
                .map_or(String::new(), |e| format!("{e},")),
            self.user.as_deref().unwrap_or_default(),
            if self.user.is_some() { "@" } else { "" },
            self.port.map_or(String::new(), |p| format!(":{p}")),
        )
    }

    /// The ProxyCommand ssh builds for it: this program again with -W to
    /// the target (%h and %p, expanded later like any ProxyCommand), the
    /// earlier hops with -J, and -F and -v passed on.
    pub fn proxy_command(&self, program: &str, config: Option<&str>, verbose: u8) -> String {
        let mut c = shell_quote(program);
        if let Some(u) = &self.user {
            c.push_str(&format!(" -l {}", shell_quote(u)));
        }
        if let Some(p) = self.port {
            c.push_str(&format!(" -p {p}"));
        }
        if let Some(e) = &self.extra {
            c.push_str(&format!(" -J {}", shell_quote(e)));
        }
        if let Some(f) = config {
            c.push_str(&format!(" -F {}", shell_quote(f)));
        }
        if verbose > 0 {
            c.push_str(&format!(" -{}", "v".repeat(usize::from(verbose.min(3)))));
        }
        c.push_str(&format!(" -W '[%h]:%p' {}", shell_quote(&self.host)));
        c
    }
}

/// Quotes a word for sh when it needs it.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./-_[]".contains(c))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// A ProxyJump value that does not parse: `Invalid ProxyJump "V"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidProxyJump {
    /// The value.
    pub value: String,
}

impl std::fmt::Display for InvalidProxyJump {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Invalid ProxyJump \"{}\"", self.value)
    }
}

impl std::error::Error for InvalidProxyJump {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_show_and_command() {
        let j = parse("u@j1:2200,j2").unwrap().unwrap();
        assert_eq!(j.extra.as_deref(), Some("u@j1:2200"));
        assert_eq!(
            (j.user.as_deref(), j.host.as_str(), j.port),
            (None, "j2", None)
        );
        assert_eq!(j.show(), "u@j1:2200,j2");
        assert_eq!(
            parse("10.0.0.1:22").unwrap().unwrap().show(),
            "[10.0.0.1]:22"
        );
        assert_eq!(parse("u@[::1]:23").unwrap().unwrap().show(), "u@[::1]:23");
        assert_eq!(parse("ssh://u@h:24").unwrap().unwrap().show(), "u@h:24");
        assert_eq!(parse("none").unwrap(), None);
        assert_eq!(parse("a,"), Err(InvalidProxyJump { value: "a,".into() }));
        assert!(parse("h:notaport").is_err());
        let one = parse("alice@jump:2222").unwrap().unwrap();
        assert_eq!(
            one.proxy_command("/usr/bin/sluice", None, 0),
            "/usr/bin/sluice -l alice -p 2222 -W '[%h]:%p' jump"
        );
        let two = parse("a@j1,b@j2:23").unwrap().unwrap();
        assert_eq!(
            two.proxy_command("/bin/sluice", Some("/tmp/my cfg"), 2),
            "/bin/sluice -l b -p 23 -J a@j1 -F '/tmp/my cfg' -vv -W '[%h]:%p' j2"
        );
    }
}
