//! authorized_keys (sshd(8) AUTHORIZED_KEYS FILE FORMAT): options, key type,
//! base64 blob, comment. A bad line is skipped with a log naming file:line.
//! The files are opened and read as the user by `keys::user_file`.

use super::pattern;
use crate::log;
use std::net::IpAddr;

/// Restrictions and settings a matching line carries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyOptions {
    /// `command="..."`: forced command.
    pub command: Option<String>,
    /// `environment="NAME=value"` (applied only with PermitUserEnvironment).
    pub environment: Vec<(String, String)>,
    /// `no-pty` (or `restrict` without `pty`).
    pub no_pty: bool,
    /// `no-port-forwarding`.
    pub no_port_forwarding: bool,
    /// `no-agent-forwarding`.
    pub no_agent_forwarding: bool,
    /// `no-X11-forwarding`.
    pub no_x11_forwarding: bool,
    /// `no-user-rc`.
    pub no_user_rc: bool,
    /// `permitopen="host:port"` entries.
    pub permitopen: Vec<String>,
}

/// Splits the options field at unquoted commas; returns (options, rest of line).
fn split_options(line: &str) -> Option<(Vec<String>, &str)> {
    let mut opts = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' if quoted => {
                if let Some((_, n)) = chars.next() {
                    if n != '"' {
                        cur.push('\\');
                    }
                    cur.push(n);
                }
            }
            '"' => quoted = !quoted,
            ',' if !quoted => opts.push(std::mem::take(&mut cur)),
            ' ' | '\t' if !quoted => {
                opts.push(cur);
                return Some((opts, line.get(i..)?.trim_start()));
            }
            _ => cur.push(c),
        }
    }
    None
}

fn is_key_type(s: &str) -> bool {
    s.starts_with("ssh-") || s.starts_with("ecdsa-sha2-") || s.starts_with("sk-")
}

/// One parsed line: (options, key blob).
fn parse_line(line: &str) -> Result<Option<(Vec<String>, Vec<u8>)>, String> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let first = line.split_whitespace().next().unwrap_or_default();
    let (opts, rest) = if is_key_type(first) {
        (Vec::new(), line)
    } else {
        split_options(line).ok_or("bad options")?
    };
    let mut f = rest.split_whitespace();
    let ty = f.next().ok_or("missing key type")?;
    let b64 = f.next().ok_or("missing key")?;
    let key = ssh_key::PublicKey::from_openssh(&format!("{ty} {b64}"))
        .map_err(|e| format!("bad key: {e}"))?;
    Ok(Some((opts, key.to_bytes().map_err(|e| e.to_string())?)))
}

/// Applies option words; None when the line must not be used here.
fn apply(opts: &[String], addr: IpAddr, host: Option<&str>, now_unix: u64) -> Option<KeyOptions> {
    let mut k = KeyOptions::default();
    for o in opts {
        let (name, value) = match o.split_once('=') {
            Some((n, v)) => (n.to_ascii_lowercase(), Some(v.to_owned())),
            None => (o.to_ascii_lowercase(), None),
        };
        match (name.as_str(), value) {
            ("command", Some(v)) => k.command = Some(v),
            ("environment", Some(v)) => {
                if let Some((n, val)) = v.split_once('=') {
                    k.environment.push((n.to_owned(), val.to_owned()));
                }
            }
            ("from", Some(v)) => {
                if !pattern::match_host_and_ip(addr, host, &v) {
                    log!(
                        Info,
                        "Authentication tried with key from disallowed address {addr}"
                    );
                    return None;
                }
            }
            ("expiry-time", Some(v)) => {
                if expiry_passed(&v, now_unix) {
                    log!(Info, "key expired at {v}");
                    return None;
                }
            }
            ("cert-authority", None) => return None,
            ("restrict", None) => {
                k.no_pty = true;
                k.no_port_forwarding = true;
                k.no_agent_forwarding = true;
                k.no_x11_forwarding = true;
                k.no_user_rc = true;
            }
            ("no-pty", None) => k.no_pty = true,
            ("pty", None) => k.no_pty = false,
            ("no-port-forwarding", None) => k.no_port_forwarding = true,
            ("port-forwarding", None) => k.no_port_forwarding = false,
            ("no-agent-forwarding", None) => k.no_agent_forwarding = true,
            ("agent-forwarding", None) => k.no_agent_forwarding = false,
            ("no-x11-forwarding", None) => k.no_x11_forwarding = true,
            ("x11-forwarding", None) => k.no_x11_forwarding = false,
            ("no-user-rc", None) => k.no_user_rc = true,
            ("user-rc", None) => k.no_user_rc = false,
            ("permitopen", Some(v)) => k.permitopen.push(v),
            ("no-touch-required" | "verify-required", None)
            | ("principals" | "permitlisten" | "tunnel", Some(_)) => {}
            _ => {
                log!(Debug1, "authorized_keys: bad option '{o}'");
                return None;
            }
        }
    }
    Some(k)
}

/// `YYYYMMDD[HHMM[SS]]` in UTC, compared to now.
fn expiry_passed(v: &str, now_unix: u64) -> bool {
    let d: Vec<u64> = [(0, 4), (4, 6), (6, 8), (8, 10), (10, 12), (12, 14)]
        .iter()
        .map(|&(a, b)| v.get(a..b).and_then(|s| s.parse().ok()).unwrap_or(0))
        .collect();
    let (y, m, day) = (d[0], d[1].max(1), d[2].max(1));
    // Days from 1970-01-01 (civil-from-days inverse, Howard Hinnant's algorithm).
    let (y2, m2) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y2 / 400;
    let yoe = y2 - era * 400;
    let doy = (153 * m2 + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).saturating_sub(719_468);
    let t = days * 86400 + d[3] * 3600 + d[4] * 60 + d[5];
    now_unix >= t
}

/// Looks for `key_blob` in the files' contents (name, bytes: read by
/// `keys::user_file`); returns its options if a usable line matches.
pub fn find_key(
    files: &[(std::path::PathBuf, Vec<u8>)],
    key_blob: &[u8],
    addr: IpAddr,
    host: Option<&str>,
    now_unix: u64,
) -> Option<KeyOptions> {
    for (f, bytes) in files {
        let text = String::from_utf8_lossy(bytes);
        for (n, line) in text.lines().enumerate() {
            match parse_line(line) {
                Ok(Some((opts, blob))) if blob == key_blob => {
                    log!(Debug1, "{}:{}: matching key found", f.display(), n + 1);
                    if let Some(k) = apply(&opts, addr, host, now_unix) {
                        return Some(k);
                    }
                }
                Ok(_) => {}
                Err(e) => log!(Debug1, "{}:{}: skipping line: {e}", f.display(), n + 1),
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_with_quoted_commas() {
        let (o, rest) =
            split_options(r#"command="echo a,b \"q\"",no-pty ssh-ed25519 AAAA x"#).unwrap();
        assert_eq!(
            o,
            vec![r#"command=echo a,b "q""#.to_owned(), "no-pty".to_owned()]
        );
        assert!(rest.starts_with("ssh-ed25519"));
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let k = apply(&o, a, None, 0).unwrap();
        assert_eq!(k.command.as_deref(), Some(r#"echo a,b "q""#));
        assert!(k.no_pty);
        assert!(apply(&["from=\"10.0.0.0/8\"".replace('"', "")], a, None, 0).is_none());
        let r = apply(&["restrict".into(), "pty".into()], a, None, 0).unwrap();
        assert!(!r.no_pty && r.no_port_forwarding);
    }

    #[test]
    fn expiry() {
        assert!(expiry_passed("19700102", 86400));
        assert!(!expiry_passed("20990101", 1_700_000_000));
        assert!(expiry_passed("20230101", 1_700_000_000));
    }
}
