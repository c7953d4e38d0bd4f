//! Forwarding specifications as ssh parses them (`-L`, `-R`, `-D`,
//! LocalForward, RemoteForward, DynamicForward): colon-separated fields, a
//! field in `[...]` taken literally (IPv6 addresses), a field with a `/` a
//! Unix socket path, `\` escaping the next character.

use super::setting_error::SettingError;

/// One end of a forward.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A TCP address; `host` None means the default bind address.
    Tcp {
        /// Host or address (`*` and empty mean every address).
        host: Option<String>,
        /// Port (0 = let the listener pick, remote forwards only).
        port: u16,
    },
    /// A Unix-domain socket path.
    Unix(String),
}

/// A parsed forward.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forward {
    /// Where connections are accepted.
    pub listen: Endpoint,
    /// Where they go; None for SOCKS (dynamic).
    pub connect: Option<Endpoint>,
}

/// Which option the spec came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `-L`, LocalForward.
    Local,
    /// `-R`, RemoteForward.
    Remote,
    /// `-D`, DynamicForward.
    Dynamic,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Local => "local",
            Kind::Remote => "remote",
            Kind::Dynamic => "dynamic",
        }
    }
}

struct Field {
    arg: String,
    is_path: bool,
}

/// Splits off one field; None at the end or on a malformed bracket.
fn next_field(s: &mut &str) -> Option<Result<Field, ()>> {
    if s.is_empty() {
        return None;
    }
    if let Some(rest) = s.strip_prefix('[') {
        let Some(end) = rest.find(']') else {
            return Some(Err(()));
        };
        let (inner, after) = rest.split_at(end);
        let after = &after[1..];
        let after = match after.strip_prefix(':') {
            Some(a) => a,
            None if after.is_empty() => after,
            None => return Some(Err(())),
        };
        *s = after;
        return Some(Ok(Field {
            arg: inner.to_owned(),
            is_path: inner.contains('/'),
        }));
    }
    let mut arg = String::new();
    let mut is_path = false;
    let mut chars = s.char_indices();
    let mut rest = "";
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, n)) => {
                    if n == '/' {
                        is_path = true;
                    }
                    arg.push(n)
                }
                None => return Some(Err(())),
            },
            '/' => {
                is_path = true;
                arg.push(c);
            }
            ':' => {
                rest = &s[i + 1..];
                *s = rest;
                return Some(Ok(Field { arg, is_path }));
            }
            _ => arg.push(c),
        }
    }
    *s = rest;
    Some(Ok(Field { arg, is_path }))
}

fn port(s: &str) -> Option<u16> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Parses a spec; the error is ssh's message.
pub fn parse(spec: &str, kind: Kind) -> Result<Forward, SettingError> {
    let bad = || SettingError::BadForward {
        kind: kind.name(),
        spec: spec.to_owned(),
    };
    let mut s = spec.trim_start();
    let mut f: Vec<Field> = Vec::new();
    while f.len() < 4 {
        match next_field(&mut s) {
            None => break,
            Some(Ok(x)) => f.push(x),
            Some(Err(())) => return Err(bad()),
        }
    }
    if !s.is_empty() {
        return Err(bad());
    }
    let tcp = |host: Option<&Field>, p: &Field| -> Result<Endpoint, SettingError> {
        Ok(Endpoint::Tcp {
            host: host.map(|h| h.arg.clone()),
            port: port(&p.arg).ok_or_else(bad)?,
        })
    };
    let unix = |p: &Field| Endpoint::Unix(p.arg.clone());
    let fwd = match (kind, f.as_slice()) {
        (Kind::Dynamic, [p]) if !p.is_path => Forward {
            listen: tcp(None, p)?,
            connect: None,
        },
        (Kind::Dynamic, [h, p]) if !p.is_path => Forward {
            listen: tcp(Some(h), p)?,
            connect: None,
        },
        (Kind::Dynamic, _) => return Err(bad()),
        (_, [a, b]) if a.is_path && b.is_path => Forward {
            listen: unix(a),
            connect: Some(unix(b)),
        },
        (_, [p, path]) if path.is_path => Forward {
            listen: tcp(None, p)?,
            connect: Some(unix(path)),
        },
        (_, [a, h, p]) if a.is_path => Forward {
            listen: unix(a),
            connect: Some(tcp(Some(h), p)?),
        },
        (_, [b, p, path]) if path.is_path => Forward {
            listen: tcp(Some(b), p)?,
            connect: Some(unix(path)),
        },
        (_, [p, h, hp]) => Forward {
            listen: tcp(None, p)?,
            connect: Some(tcp(Some(h), hp)?),
        },
        (_, [b, p, h, hp]) => Forward {
            listen: tcp(Some(b), p)?,
            connect: Some(tcp(Some(h), hp)?),
        },
        // `-R [bind:]port` alone: the server's listener is a SOCKS proxy
        // served by us (client/forward/remote_socks.rs).
        (Kind::Remote, [p]) if !p.is_path => Forward {
            listen: tcp(None, p)?,
            connect: None,
        },
        (Kind::Remote, [h, p]) if !h.is_path && !p.is_path => Forward {
            listen: tcp(Some(h), p)?,
            connect: None,
        },
        _ => return Err(bad()),
    };
    if let Some(Endpoint::Tcp { port: 0, .. }) = &fwd.connect {
        return Err(bad());
    }
    if let Endpoint::Tcp { port: 0, .. } = &fwd.listen {
        if kind != Kind::Remote {
            return Err(bad());
        }
    }
    if let Some(Endpoint::Tcp { host: Some(h), .. }) = &fwd.connect {
        if h.is_empty() || h.len() >= 1025 {
            return Err(bad());
        }
    }
    Ok(fwd)
}

/// A config line's value (`LocalForward 8080 host:80`): the two words
/// joined by a colon, as ssh's readconf does.
pub fn from_config(value: &str, kind: Kind) -> Result<Forward, SettingError> {
    let words: Vec<&str> = value.split_whitespace().collect();
    match (kind, words.as_slice()) {
        (Kind::Dynamic | Kind::Remote, [one]) => parse(one, kind),
        (Kind::Local | Kind::Remote, [a, b]) => parse(&format!("{a}:{b}"), kind),
        _ => Err(SettingError::BadForward {
            kind: kind.name(),
            spec: value.to_owned(),
        }),
    }
}

impl std::fmt::Display for Endpoint {
    /// As ssh prints targets: `host:port` or the path.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Tcp { host, port } => write!(f, "{}:{port}", host.as_deref().unwrap_or("")),
            Endpoint::Unix(p) => f.write_str(p),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(h: Option<&str>, p: u16) -> Endpoint {
        Endpoint::Tcp {
            host: h.map(String::from),
            port: p,
        }
    }

    #[test]
    fn local_forms() {
        let f = parse("8080:localhost:80", Kind::Local).unwrap();
        assert_eq!(f.listen, tcp(None, 8080));
        assert_eq!(f.connect, Some(tcp(Some("localhost"), 80)));
        let f = parse("*:8080:[::1]:80", Kind::Local).unwrap();
        assert_eq!(f.listen, tcp(Some("*"), 8080));
        assert_eq!(f.connect, Some(tcp(Some("::1"), 80)));
        let f = parse("[::1]:8080:10.0.0.1:22", Kind::Local).unwrap();
        assert_eq!(f.listen, tcp(Some("::1"), 8080));
        let f = parse("8080:/run/x.sock", Kind::Local).unwrap();
        assert_eq!(f.connect, Some(Endpoint::Unix("/run/x.sock".into())));
        let f = parse("127.0.0.1:8080:/run/x.sock", Kind::Local).unwrap();
        assert_eq!(f.listen, tcp(Some("127.0.0.1"), 8080));
        let f = parse("/tmp/l.sock:host:22", Kind::Local).unwrap();
        assert_eq!(f.listen, Endpoint::Unix("/tmp/l.sock".into()));
        assert_eq!(f.connect, Some(tcp(Some("host"), 22)));
        let f = parse("/tmp/a:/tmp/b", Kind::Local).unwrap();
        assert_eq!(f.connect, Some(Endpoint::Unix("/tmp/b".into())));
        let f = parse(":8080:h:1", Kind::Local).unwrap();
        assert_eq!(f.listen, tcp(Some(""), 8080));
    }

    #[test]
    fn refusals() {
        for s in [
            "8080",
            "0:h:80",
            "8080:h:0",
            "x:h:80",
            "8080:h:99999",
            "[::1:8080:h:80",
            "[::1]x:8080:h:80",
            "1:2:3:4:5",
            "",
        ] {
            let e = parse(s, Kind::Local).unwrap_err();
            assert!(matches!(&e, SettingError::BadForward { kind: "local", spec } if spec == s));
            assert_eq!(
                e.to_string(),
                format!("Bad local forwarding specification '{s}'")
            );
        }
        assert!(parse("8080", Kind::Local).is_err());
        assert!(parse("/x", Kind::Remote).is_err());
        assert!(parse("/x", Kind::Dynamic).is_err());
        assert!(parse("1:2:3", Kind::Dynamic).is_err());
    }

    #[test]
    fn remote_and_dynamic() {
        let f = parse("0:127.0.0.1:22", Kind::Remote).unwrap();
        assert_eq!(f.listen, tcp(None, 0));
        let f = parse("/tmp/r.sock:/tmp/l.sock", Kind::Remote).unwrap();
        assert_eq!(f.listen, Endpoint::Unix("/tmp/r.sock".into()));
        let f = parse("1080", Kind::Dynamic).unwrap();
        assert_eq!((f.listen, f.connect), (tcp(None, 1080), None));
        // `-R [bind:]port`: a remote SOCKS proxy.
        let f = parse("8080", Kind::Remote).unwrap();
        assert_eq!((f.listen, f.connect), (tcp(None, 8080), None));
        let f = parse("127.0.0.1:8080", Kind::Remote).unwrap();
        assert_eq!(f.connect, None);
        let f = parse("[::1]:1080", Kind::Dynamic).unwrap();
        assert_eq!(f.listen, tcp(Some("::1"), 1080));
        let f = from_config("8080 host:80", Kind::Local).unwrap();
        assert_eq!(f.connect, Some(tcp(Some("host"), 80)));
        assert!(from_config("8080", Kind::Local).is_err());
        let f = parse("a\\:b/c:h:1", Kind::Local).unwrap();
        assert_eq!(f.listen, Endpoint::Unix("a:b/c".into()));
    }
}
