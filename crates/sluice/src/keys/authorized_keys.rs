//! authorized_keys (sshd(8) AUTHORIZED_KEYS FILE FORMAT): options, key type,
//! base64 blob, comment. The files are opened and read as the user by
//! `keys::user_file`.
//!
//! The options are parsed as sshd's `sshauthopt_parse` does: names in any
//! case, values in double quotes (`\"` for a quote), a comma between
//! options. A line whose options sshd would reject (an unknown option, a
//! missing quote, a malformed `expiry-time`, `permitopen`, `permitlisten`,
//! `environment` or `tunnel`, a repeated `command`/`from`/`principals`) is
//! skipped with a log line naming file and line. The FIDO policies
//! (`no-touch-required`, `verify-required`) are kept in [`KeyOptions`] and
//! judged against the signature's flags (server/conn/sk_policy.rs).
//!
//! A `cert-authority` line names a CA whose user certificates are accepted
//! (with `principals=` limiting the names a certificate must carry); it
//! never matches a plain key. AuthorizedPrincipalsFile lines (options, then
//! a principal name) use the same options.

use super::pattern;
use crate::log;
use std::net::IpAddr;

/// Restrictions and settings a matching line carries for the session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyOptions {
    /// `command="..."`: forced command.
    pub command: Option<String>,
    /// `environment="NAME=value"` (applied only with PermitUserEnvironment);
    /// the first value of a name wins.
    pub environment: Vec<(String, String)>,
    /// `no-pty` (or `restrict` without `pty`).
    pub no_pty: bool,
    /// `no-port-forwarding` (or `restrict` without `port-forwarding`).
    pub no_port_forwarding: bool,
    /// `no-agent-forwarding` (or `restrict` without `agent-forwarding`).
    pub no_agent_forwarding: bool,
    /// `no-X11-forwarding` (sluiced serves no X11 forwarding at all).
    pub no_x11_forwarding: bool,
    /// `no-user-rc` (sluiced runs no ~/.ssh/rc at all).
    pub no_user_rc: bool,
    /// `permitopen="host:port"` entries (`*` for any host or port).
    pub permitopen: Vec<String>,
    /// `permitlisten="[host:]port"` entries, a bare port stored as `*:port`.
    pub permitlisten: Vec<String>,
    /// `no-touch-required` (or a certificate's extension of that name): a
    /// security key's signature need not show the user's touch, unless
    /// PubkeyAuthOptions touch-required. Not carried past authentication.
    pub no_touch_required: bool,
    /// `verify-required` (or a certificate's critical option): a security
    /// key's signature must show the user was verified (PIN, biometric).
    pub verify_required: bool,
}

impl KeyOptions {
    /// The options of two keys that each met a step of AuthenticationMethods
    /// (`publickey,publickey`): every restriction of either holds. A
    /// forced command must be the same in both (None: the key is refused,
    /// logged). Where both limit forwarding to lists, only destinations in
    /// both remain; if none does, port forwarding is off. Environment
    /// settings of the first key win name by name.
    pub fn merge(mut self, other: &KeyOptions) -> Option<KeyOptions> {
        match (&self.command, &other.command) {
            (Some(a), Some(b)) if a != b => {
                log!(Error, "forced command options do not match");
                return None;
            }
            (None, Some(b)) => self.command = Some(b.clone()),
            _ => {}
        }
        for (name, value) in &other.environment {
            if !self.environment.iter().any(|(n, _)| n == name) {
                self.environment.push((name.clone(), value.clone()));
            }
        }
        self.no_pty |= other.no_pty;
        self.no_port_forwarding |= other.no_port_forwarding;
        self.no_agent_forwarding |= other.no_agent_forwarding;
        self.no_x11_forwarding |= other.no_x11_forwarding;
        self.no_user_rc |= other.no_user_rc;
        for (mine, theirs) in [
            (&mut self.permitopen, &other.permitopen),
            (&mut self.permitlisten, &other.permitlisten),
        ] {
            if mine.is_empty() {
                mine.clone_from(theirs);
            } else if !theirs.is_empty() {
                mine.retain(|p| theirs.contains(p));
                if mine.is_empty() {
                    self.no_port_forwarding = true;
                }
            }
        }
        Some(self)
    }
}

/// What a line's options field says: the session's settings, and the
/// conditions the line itself is under.
#[derive(Debug, Default)]
struct LineOptions {
    opts: KeyOptions,
    /// `from="pattern-list"`.
    from: Option<String>,
    /// `expiry-time=`: the earliest, in seconds since the epoch.
    expiry: Option<i64>,
    /// `cert-authority`: the key is a CA for user certificates.
    cert_authority: bool,
    /// `principals="name,..."`: names a certificate must carry one of.
    principals: Option<String>,
}

/// sshd's SSH_AUTHOPT_ENV_MAX.
const ENV_MAX: usize = 1024;

/// A flag option at the start of `s` (`name`, or `no-name` when it can be
/// negated) followed by the end, a comma or a blank: whether it is the
/// positive form, and what follows it.
fn flag<'a>(s: &'a str, name: &str, negatable: bool) -> Option<(bool, &'a str)> {
    let (positive, t) = match s.get(..3) {
        Some(p) if negatable && p.eq_ignore_ascii_case("no-") => (false, &s[3..]),
        _ => (true, s),
    };
    let head = t.get(..name.len())?;
    if !head.eq_ignore_ascii_case(name) {
        return None;
    }
    let rest = &t[name.len()..];
    matches!(rest.bytes().next(), None | Some(b',' | b' ' | b'\t')).then_some((positive, rest))
}

/// `name=` at the start of `s`: what follows the `=`.
fn valued<'a>(s: &'a str, name: &str) -> Option<&'a str> {
    let head = s.get(..name.len())?;
    if !head.eq_ignore_ascii_case(name) {
        return None;
    }
    s[name.len()..].strip_prefix('=')
}

/// Why sshd's sshauthopt_parse rejects an options field; `Display` gives
/// its reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionError {
    /// A value that does not start with `"`.
    MissingStartQuote,
    /// A value whose quote is not closed.
    MissingEndQuote,
    /// `permitopen`/`permitlisten` with a bad host part.
    PermissionHostname,
    /// `permitopen`/`permitlisten` with a bad port part.
    PermissionPort,
    /// `command`, `principals` or `from` given twice (the option's name).
    Multiple(&'static str),
    /// `expiry-time` that is no time.
    ExpiryTime,
    /// More `environment` options than sshd takes.
    TooManyEnvironment,
    /// `environment` that is not `NAME=value` with a valid name.
    Environment,
    /// `tunnel` that is neither `any` nor a device number.
    TunDevice,
    /// An option sshd does not know.
    Unknown,
}

impl std::fmt::Display for OptionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OptionError::MissingStartQuote => f.write_str("missing start quote"),
            OptionError::MissingEndQuote => f.write_str("missing end quote"),
            OptionError::PermissionHostname => f.write_str("invalid permission hostname"),
            OptionError::PermissionPort => f.write_str("invalid permission port"),
            OptionError::Multiple(name) => write!(f, "multiple \"{name}\" clauses"),
            OptionError::ExpiryTime => f.write_str("invalid expires time"),
            OptionError::TooManyEnvironment => f.write_str("too many environment strings"),
            OptionError::Environment => f.write_str("invalid environment string"),
            OptionError::TunDevice => f.write_str("invalid tun device"),
            OptionError::Unknown => f.write_str("unknown key option"),
        }
    }
}

impl std::error::Error for OptionError {}

/// A double-quoted value (`\"` stands for a quote): the value and the rest.
fn dequote(s: &str) -> Result<(String, &str), OptionError> {
    let body = s.strip_prefix('"').ok_or(OptionError::MissingStartQuote)?;
    let mut out = String::new();
    let mut it = body.char_indices();
    while let Some((i, c)) = it.next() {
        match c {
            '"' => return Ok((out, &body[i + 1..])),
            '\\' if body[i + 1..].starts_with('"') => {
                out.push('"');
                it.next();
            }
            c => out.push(c),
        }
    }
    Err(OptionError::MissingEndQuote)
}

/// A `permitopen`/`permitlisten` value checked as sshd's handle_permit:
/// `host:port` (or `[v6]:port`, `host/port`), port 1-65535 or `*`; a bare
/// port for permitlisten means any host. Stored as `host:port`.
fn permission(v: &str, bare_port: bool) -> Result<String, OptionError> {
    let v = if bare_port && !v.contains(':') {
        format!("*:{v}")
    } else {
        v.to_owned()
    };
    let (host, port) = if v.starts_with('[') {
        let end = v.find(']').ok_or(OptionError::PermissionHostname)?;
        match v[end + 1..].chars().next() {
            Some(':' | '/') => (&v[..=end], Some(&v[end + 2..])),
            None => (&v[..], None),
            Some(_) => return Err(OptionError::PermissionHostname),
        }
    } else {
        match v.find([':', '/']) {
            Some(i) => (&v[..i], Some(&v[i + 1..])),
            None => (&v[..], None),
        }
    };
    if host.len() >= 1025 {
        return Err(OptionError::PermissionHostname);
    }
    match port {
        Some(p) if p == "*" || p.parse::<u16>().is_ok_and(|n| n > 0) => Ok(format!("{host}:{p}")),
        _ => Err(OptionError::PermissionPort),
    }
}

/// `tunnel=`: `any` or a device number (sshd's a2tun).
fn tun_device(v: &str) -> bool {
    v.eq_ignore_ascii_case("any")
        || (!v.is_empty()
            && v.bytes().all(|b| b.is_ascii_digit())
            && v.parse::<i64>().is_ok_and(|n| n <= i64::from(i32::MAX) - 2))
}

/// sshd's valid_env_name: letters, digits and `_`, not empty.
fn env_name_ok(n: &str) -> bool {
    !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The options field of a line (everything before the key type), checked
/// as sshd's sshauthopt_parse; the error is sshd's reason.
fn parse_options(mut s: &str) -> Result<LineOptions, OptionError> {
    let mut l = LineOptions::default();
    let k = &mut l.opts;
    loop {
        if let Some((_, r)) = flag(s, "restrict", false) {
            k.no_pty = true;
            k.no_port_forwarding = true;
            k.no_agent_forwarding = true;
            k.no_x11_forwarding = true;
            k.no_user_rc = true;
            s = r;
        } else if let Some((_, r)) = flag(s, "cert-authority", false) {
            l.cert_authority = true;
            s = r;
        } else if let Some((on, r)) = flag(s, "port-forwarding", true) {
            k.no_port_forwarding = !on;
            s = r;
        } else if let Some((on, r)) = flag(s, "agent-forwarding", true) {
            k.no_agent_forwarding = !on;
            s = r;
        } else if let Some((on, r)) = flag(s, "x11-forwarding", true) {
            k.no_x11_forwarding = !on;
            s = r;
        } else if let Some((on, r)) = flag(s, "touch-required", true) {
            k.no_touch_required = !on;
            s = r;
        } else if let Some((on, r)) = flag(s, "verify-required", true) {
            k.verify_required = on;
            s = r;
        } else if let Some((on, r)) = flag(s, "pty", true) {
            k.no_pty = !on;
            s = r;
        } else if let Some((on, r)) = flag(s, "user-rc", true) {
            k.no_user_rc = !on;
            s = r;
        } else if let Some(r) = valued(s, "command") {
            if k.command.is_some() {
                return Err(OptionError::Multiple("command"));
            }
            let (v, r) = dequote(r)?;
            k.command = Some(v);
            s = r;
        } else if let Some(r) = valued(s, "principals") {
            if l.principals.is_some() {
                return Err(OptionError::Multiple("principals"));
            }
            let (v, r) = dequote(r)?;
            l.principals = Some(v);
            s = r;
        } else if let Some(r) = valued(s, "from") {
            if l.from.is_some() {
                return Err(OptionError::Multiple("from"));
            }
            let (v, r) = dequote(r)?;
            l.from = Some(v);
            s = r;
        } else if let Some(r) = valued(s, "expiry-time") {
            let (v, r) = dequote(r)?;
            let t = parse_absolute_time(&v).ok_or(OptionError::ExpiryTime)?;
            l.expiry = Some(l.expiry.map_or(t, |e| e.min(t)));
            s = r;
        } else if let Some(r) = valued(s, "environment") {
            if k.environment.len() > ENV_MAX {
                return Err(OptionError::TooManyEnvironment);
            }
            let (v, r) = dequote(r)?;
            let (name, value) = v.split_once('=').ok_or(OptionError::Environment)?;
            if !env_name_ok(name) {
                return Err(OptionError::Environment);
            }
            if !k.environment.iter().any(|(n, _)| n == name) {
                k.environment.push((name.to_owned(), value.to_owned()));
            }
            s = r;
        } else if let Some(r) = valued(s, "permitopen") {
            let (v, r) = dequote(r)?;
            k.permitopen.push(permission(&v, false)?);
            s = r;
        } else if let Some(r) = valued(s, "permitlisten") {
            let (v, r) = dequote(r)?;
            k.permitlisten.push(permission(&v, true)?);
            s = r;
        } else if let Some(r) = valued(s, "tunnel") {
            let (v, r) = dequote(r)?;
            if !tun_device(&v) {
                return Err(OptionError::TunDevice);
            }
            s = r;
        }
        match s.bytes().next() {
            None | Some(b' ' | b'\t') => return Ok(l),
            // sshd's "unexpected end-of-options" needs a line without a
            // key, which is skipped anyway; `no-pty, ssh-ed25519 ...` is fine.
            Some(b',') => s = &s[1..],
            Some(_) => return Err(OptionError::Unknown),
        }
    }
}

/// `YYYYMMDD[Z]` or `YYYYMMDDHHMM[SS][Z]` (sshd's parse_absolute_time): in
/// the system time zone, or UTC with `Z` (or `UTC`); None when malformed.
fn parse_absolute_time(v: &str) -> Option<i64> {
    let (digits, utc) = if let Some(d) = v.strip_suffix(['Z', 'z']).filter(|d| !d.is_empty()) {
        (d, true)
    } else if let Some(d) = v
        .len()
        .checked_sub(3)
        .filter(|&i| i > 0 && v.is_char_boundary(i) && v[i..].eq_ignore_ascii_case("UTC"))
        .map(|i| &v[..i])
    {
        (d, true)
    } else {
        (v, false)
    };
    if !matches!(digits.len(), 8 | 12 | 14) || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let field = |a: usize, b: usize| digits.get(a..b).map_or(Some(0), |s| s.parse::<i32>().ok());
    let (year, mon, day) = (field(0, 4)?, field(4, 6)?, field(6, 8)?);
    let (hour, min, sec) = (field(8, 10)?, field(10, 12)?, field(12, 14)?);
    if !(1..=12).contains(&mon) || !(1..=31).contains(&day) || hour > 23 || min > 59 || sec > 60 {
        return None;
    }
    let civil = crate::sys::time::Civil {
        year,
        mon,
        day,
        hour,
        min,
        sec,
    };
    let t = if utc {
        crate::sys::time::timegm(&civil)
    } else {
        crate::sys::time::mktime(&civil)
    };
    (t > 0).then_some(t)
}

/// sshd's sshkey_advance_past_options: the options end at the first blank
/// outside quotes; None for an unterminated quote.
fn split_options(line: &str) -> Option<(&str, &str)> {
    let mut quoted = false;
    let mut it = line.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        match c {
            '\\' if it.peek().is_some_and(|&(_, n)| n == '"') => {
                it.next();
            }
            '"' => quoted = !quoted,
            ' ' | '\t' if !quoted => return Some((&line[..i], line[i..].trim_start())),
            _ => {}
        }
    }
    (!quoted).then_some((line, ""))
}

fn is_key_type(s: &str) -> bool {
    s.starts_with("ssh-") || s.starts_with("ecdsa-sha2-") || s.starts_with("sk-")
}

/// Why a line is not used.
#[derive(Debug, PartialEq, Eq)]
enum Skip {
    /// No key type after the options (logged at debug level).
    NoKeyType,
    /// No key after the type (logged at debug level).
    NoKey,
    /// A key ssh-key cannot read (logged at debug level).
    BadKey(ssh_key::Error),
    /// A key ssh-key reads but cannot encode as a blob.
    Encode(ssh_key::Error),
    /// An options field with an unterminated quote (logged).
    OptionString,
    /// Options sshd rejects, or that sluiced cannot honour (logged).
    Options(OptionError),
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Skip::NoKeyType => f.write_str("missing key type"),
            Skip::NoKey => f.write_str("missing key"),
            Skip::BadKey(e) => write!(f, "bad key: {e}"),
            Skip::Encode(e) => e.fmt(f),
            Skip::OptionString => f.write_str("invalid key option string"),
            Skip::Options(e) => write!(f, "bad key options: {e}"),
        }
    }
}

impl Skip {
    /// Not a key line sshd would read: logged at debug level only.
    fn no_key(&self) -> bool {
        !matches!(self, Skip::OptionString | Skip::Options(_))
    }
}

/// One line: its options and key blob; None for blank lines and comments.
fn parse_line(line: &str) -> Result<Option<(LineOptions, Vec<u8>)>, Skip> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let first = line.split_whitespace().next().unwrap_or_default();
    let (opts, rest) = if is_key_type(first) {
        ("", line)
    } else {
        split_options(line).ok_or(Skip::OptionString)?
    };
    let mut f = rest.split_whitespace();
    let ty = f.next().ok_or(Skip::NoKeyType)?;
    let b64 = f.next().ok_or(Skip::NoKey)?;
    let key = ssh_key::PublicKey::from_openssh(&format!("{ty} {b64}")).map_err(Skip::BadKey)?;
    let blob = key.to_bytes().map_err(Skip::Encode)?;
    let parsed = if opts.is_empty() {
        LineOptions::default()
    } else {
        parse_options(opts).map_err(Skip::Options)?
    };
    Ok(Some((parsed, blob)))
}

/// The line's own conditions: `from=` (against `addr`, or `host`) and
/// `expiry-time=`; a refusal is logged at `loc`, in sshd's words.
fn line_usable(
    l: &LineOptions,
    user: &str,
    addr: IpAddr,
    host: Option<&str>,
    now_unix: u64,
    loc: &str,
) -> bool {
    if let Some(from) = &l.from {
        if !pattern::match_host_and_ip(addr, host, from) {
            let host = host.map_or_else(|| addr.to_string(), str::to_owned);
            log!(
                Info,
                "{loc}: Authentication tried for {user} with correct key but not from a permitted host (host={host}, ip={addr}, required={from})."
            );
            return false;
        }
    }
    if let Some(t) = l.expiry {
        if i64::try_from(now_unix).unwrap_or(i64::MAX) > t {
            log!(Info, "{loc}: key refused: entry expired");
            return false;
        }
    }
    true
}

/// The usable lines of the files, in order, with their location.
fn lines(
    files: &[(std::path::PathBuf, Vec<u8>)],
) -> impl Iterator<Item = (String, LineOptions, Vec<u8>)> + '_ {
    files.iter().flat_map(|(f, bytes)| {
        let text = String::from_utf8_lossy(bytes).into_owned();
        let f = f.clone();
        text.lines()
            .enumerate()
            .filter_map(|(n, line)| {
                let loc = format!("{}:{}", f.display(), n + 1);
                match parse_line(line) {
                    Ok(Some((l, blob))) => Some((loc, l, blob)),
                    Ok(None) => None,
                    Err(e) if e.no_key() => {
                        log!(Debug1, "{loc}: skipping line: {e}");
                        None
                    }
                    Err(e) => {
                        log!(Info, "{loc}: {e}");
                        None
                    }
                }
            })
            .collect::<Vec<_>>()
    })
}

/// For the fuzz target (fuzz/fuzz_targets/authorized_keys.rs): one line
/// through the parser and its own conditions (`from=`, `expiry-time=`) for
/// a client at `addr` at `now_unix`; the options if the line is usable.
#[doc(hidden)]
pub fn check_line(line: &str, addr: IpAddr, now_unix: u64) -> Option<KeyOptions> {
    let (l, _blob) = parse_line(line).ok()??;
    line_usable(&l, "fuzz", addr, Some("fuzz.example"), now_unix, "fuzz:1").then_some(l.opts)
}

/// Looks for `key_blob` in the files' contents (name, bytes: read by
/// `keys::user_file`) for `user`; returns its options if a usable line matches. A
/// matching line refused by its `from=` or `expiry-time=` does not end the
/// search, as in sshd. `cert-authority` lines never match a plain key.
pub fn find_key(
    files: &[(std::path::PathBuf, Vec<u8>)],
    key_blob: &[u8],
    user: &str,
    addr: IpAddr,
    host: Option<&str>,
    now_unix: u64,
) -> Option<KeyOptions> {
    for (loc, l, blob) in lines(files) {
        if blob != key_blob {
            continue;
        }
        if l.cert_authority {
            log!(
                Debug1,
                "{loc}: key is a certificate authority, not a user key"
            );
            continue;
        }
        log!(Debug1, "{loc}: matching key found");
        if line_usable(&l, user, addr, host, now_unix, &loc) {
            return Some(l.opts);
        }
    }
    None
}

/// A `cert-authority` line for the CA key `ca_blob` that accepts a
/// certificate with `cert_principals` for `user`: the line's options and
/// where it is. Without `principals=` the user name must be among the
/// certificate's principals (or the certificate name none: sshd does not
/// require a principal list here); with it, one of the certificate's
/// principals must be in that list.
pub fn find_cert_authority(
    files: &[(std::path::PathBuf, Vec<u8>)],
    ca_blob: &[u8],
    cert_principals: &[String],
    user: &str,
    addr: IpAddr,
    now_unix: u64,
) -> Option<(KeyOptions, String)> {
    for (loc, l, blob) in lines(files) {
        if blob != ca_blob || !l.cert_authority {
            continue;
        }
        log!(Debug1, "{loc}: matching CA found");
        let ok = match &l.principals {
            Some(list) => cert_principals
                .iter()
                .any(|p| list.split(',').any(|n| n == p)),
            None => cert_principals.is_empty() || cert_principals.iter().any(|p| p == user),
        };
        if !ok {
            log!(
                Info,
                "{loc}: Certificate does not contain an authorized principal"
            );
            continue;
        }
        if line_usable(&l, user, addr, None, now_unix, &loc) {
            return Some((l.opts, loc));
        }
    }
    None
}

/// AuthorizedPrincipalsFile (sshd_config(5)): the first line naming one of
/// `cert_principals` (options may come first, as in authorized_keys) whose
/// conditions hold; its options and where it is.
pub fn find_principal(
    files: &[(std::path::PathBuf, Vec<u8>)],
    cert_principals: &[String],
    user: &str,
    addr: IpAddr,
    now_unix: u64,
) -> Option<(KeyOptions, String)> {
    for (f, bytes) in files {
        let text = String::from_utf8_lossy(bytes);
        for (n, line) in text.lines().enumerate() {
            let loc = format!("{}:{}", f.display(), n + 1);
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            // One word is a name; more, and the first is options.
            let (opts, name) = match split_options(line) {
                Some((o, rest)) if !rest.is_empty() => (Some(o), rest),
                Some((name, _)) => (None, name),
                None => {
                    log!(
                        Info,
                        "{loc}: bad principals line: invalid key option string"
                    );
                    continue;
                }
            };
            if !cert_principals.iter().any(|p| p == name) {
                continue;
            }
            let l = match opts.map(parse_options).transpose() {
                Ok(l) => l.unwrap_or_default(),
                Err(e) => {
                    log!(Info, "{loc}: bad principals line options: {e}");
                    continue;
                }
            };
            if l.cert_authority || l.principals.is_some() {
                log!(
                    Info,
                    "{loc}: option not allowed in a principals file, line skipped"
                );
                continue;
            }
            log!(Debug1, "{loc}: matched principal \"{name}\"");
            if line_usable(&l, user, addr, None, now_unix, &loc) {
                return Some((l.opts, loc));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(s: &str) -> Result<KeyOptions, OptionError> {
        parse_options(s).map(|l| l.opts)
    }

    #[test]
    fn options_with_quoted_commas() {
        let (o, rest) =
            split_options(r#"command="echo a,b \"q\" c",no-pty ssh-ed25519 AAAA x"#).unwrap();
        assert!(rest.starts_with("ssh-ed25519"));
        let k = opts(o).unwrap();
        assert_eq!(k.command.as_deref(), Some(r#"echo a,b "q" c"#));
        assert!(k.no_pty);
        let r = opts("restrict,pty").unwrap();
        assert!(!r.no_pty && r.no_port_forwarding && r.no_agent_forwarding && r.no_user_rc);
        let r = opts("RESTRICT,Port-Forwarding").unwrap();
        assert!(r.no_pty && !r.no_port_forwarding);
        assert!(split_options(r#"command="x ssh-ed25519 AAAA"#).is_none());
        assert!(!opts("no-pty,").unwrap().no_port_forwarding);
    }

    #[test]
    fn bad_options_as_sshd() {
        for (o, why) in [
            ("nonsense", "unknown key option"),
            ("pty=\"yes\"", "unknown key option"),
            ("command=echo", "missing start quote"),
            (r#"command="a",command="b""#, "multiple \"command\" clauses"),
            (r#"from="a",from="b""#, "multiple \"from\" clauses"),
            (r#"expiry-time="2099""#, "invalid expires time"),
            (r#"expiry-time="00000000""#, "invalid expires time"),
            (r#"expiry-time="20991301""#, "invalid expires time"),
            (r#"expiry-time="2099010x""#, "invalid expires time"),
            (r#"environment="NOEQUALS""#, "invalid environment string"),
            (r#"environment="A-B=1""#, "invalid environment string"),
            (r#"permitopen="host""#, "invalid permission port"),
            (r#"permitopen="host:0""#, "invalid permission port"),
            (r#"permitlisten="none""#, "invalid permission port"),
            (r#"permitlisten="[::1""#, "invalid permission hostname"),
            (r#"tunnel="x""#, "invalid tun device"),
            ("no-restrict", "unknown key option"),
            ("ptyx", "unknown key option"),
        ] {
            assert_eq!(opts(o).unwrap_err().to_string(), why, "{o}");
        }
        assert!(matches!(
            opts(r#"from="a",from="b""#),
            Err(OptionError::Multiple("from"))
        ));
        assert!(matches!(opts("ptyx"), Err(OptionError::Unknown)));
        assert!(matches!(
            parse_line(r#"command="x ssh-ed25519 AAAA"#),
            Err(Skip::OptionString)
        ));
        let kp = sluice_proto::crypto::hostkey::KeyPair::generate_ed25519().unwrap();
        let blob = sluice_proto::crypto::hostkey::Signer::public_blob(&kp);
        let key = ssh_key::PublicKey::from_bytes(&blob)
            .unwrap()
            .to_openssh()
            .unwrap();
        let e = parse_line(&format!("no-pty,tunnel=\"x\" {key}")).unwrap_err();
        assert_eq!(e, Skip::Options(OptionError::TunDevice));
        assert_eq!(e.to_string(), "bad key options: invalid tun device");
        assert!(matches!(
            parse_line("ssh-ed25519 AAAA"),
            Err(Skip::BadKey(_))
        ));
        let e = parse_line("ssh-ed25519").unwrap_err();
        assert!(e.no_key() && e == Skip::NoKey, "{e}");
        assert_eq!(e.to_string(), "missing key");
    }

    #[test]
    fn values() {
        let k = opts(r#"permitlisten="8080",permitlisten="127.0.0.1:9",permitopen="[::1]:22",permitopen="h/*",environment="A=1",environment="A=2",tunnel="any",tunnel="3""#).unwrap();
        assert_eq!(k.permitlisten, ["*:8080", "127.0.0.1:9"]);
        assert_eq!(k.permitopen, ["[::1]:22", "h:*"]);
        assert_eq!(k.environment, [("A".to_owned(), "1".to_owned())]);
        let l = parse_options(r#"expiry-time="20990101Z",expiry-time="19990101Z""#).unwrap();
        assert_eq!(l.expiry, Some(915_148_800));
        assert!(parse_options("cert-authority").unwrap().cert_authority);
        assert_eq!(
            parse_options(r#"principals="a,b""#)
                .unwrap()
                .principals
                .as_deref(),
            Some("a,b")
        );
        assert!(
            parse_options("no-touch-required")
                .unwrap()
                .opts
                .no_touch_required
        );
        assert!(
            parse_options("verify-required")
                .unwrap()
                .opts
                .verify_required
        );
        let plain = parse_options("touch-required").unwrap().opts;
        assert!(!plain.no_touch_required && !plain.verify_required);
    }

    #[test]
    fn absolute_times() {
        assert_eq!(parse_absolute_time("19700102Z"), Some(86400));
        assert_eq!(parse_absolute_time("197001020001Z"), Some(86460));
        assert_eq!(parse_absolute_time("19700102000101UTC"), Some(86461));
        assert_eq!(parse_absolute_time("20230101Z"), Some(1_672_531_200));
        for bad in [
            "",
            "Z",
            "2023",
            "202301011",
            "20230101000",
            "2023010100000Z0",
            "+0230101",
        ] {
            assert_eq!(parse_absolute_time(bad), None, "{bad}");
        }
    }

    #[test]
    fn lines_and_expiry() {
        let kp = sluice_proto::crypto::hostkey::KeyPair::generate_ed25519().unwrap();
        let blob = sluice_proto::crypto::hostkey::Signer::public_blob(&kp);
        let b64 = ssh_key::PublicKey::from_bytes(&blob)
            .unwrap()
            .to_openssh()
            .unwrap();
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let find = |text: String, now: u64| {
            find_key(
                &[("ak".into(), text.into_bytes())],
                &blob,
                "bob",
                a,
                None,
                now,
            )
        };
        assert!(find(format!("{b64}\n"), 0).is_some());
        assert!(find(format!("expiry-time=\"20230101Z\" {b64}\n"), 1_672_531_200).is_some());
        assert!(find(format!("expiry-time=\"20230101Z\" {b64}\n"), 1_672_531_201).is_none());
        assert!(find(format!("expiry-time=\"0000\" {b64}\n"), 0).is_none());
        assert!(find(format!("from=\"10.0.0.0/8\" {b64}\n"), 0).is_none());
        assert!(
            find(format!("from=\"10.0.0.0/8\" {b64}\nno-pty {b64}\n"), 0).is_some_and(|k| k.no_pty)
        );
        assert!(find(format!("cert-authority {b64}\n"), 0).is_none());
        assert!(find(format!("principals=\"a\" {b64}\n"), 0).is_some());
        // FIDO policies are kept for the signature's check.
        assert!(find(format!("verify-required {b64}\n"), 0).is_some_and(|k| k.verify_required));
    }
}
