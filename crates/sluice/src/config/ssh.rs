//! `ssh_config` for `sluice` (ssh_config(5)): `-o` options, then `-F file`
//! or ~/.ssh/config and /etc/ssh/ssh_config; `Host` and `Match` blocks,
//! `Include`, first value wins. Files are parsed at load into a tree kept as
//! text; [`ClientConfig::resolve`] walks it for one destination the way ssh
//! does (Match evaluated in order against what is set so far, a final pass
//! when `Match final` or `canonical` asks for it). Submodules: `tokens` (%h,
//! ~), `matching` (Match), `include`, `values` (checks and -G formatting),
//! `dump` (-G).

pub mod canonical;
pub mod dump;
pub mod include;
pub mod ipqos;
pub mod jump;
pub mod limits;
#[cfg(test)]
mod limits_tests;
pub mod matching;
mod resolve;
pub use resolve::ResolveError;
pub mod tokens;
pub mod values;

use super::error::{BadLine, ConfigError};
use super::split_line;
use matching::Crit;
use std::collections::HashMap;
use std::path::Path;
use tokens::Tokens;

/// Keywords sluice acts on.
pub(crate) const SUPPORTED: &[&str] = &[
    "permitremoteopen",
    "host",
    "match",
    "include",
    "hostname",
    "port",
    "user",
    "identityfile",
    "identitiesonly",
    "identityagent",
    "batchmode",
    "ciphers",
    "macs",
    "kexalgorithms",
    "hostkeyalgorithms",
    "pubkeyacceptedalgorithms",
    "pubkeyacceptedkeytypes",
    "compression",
    "compressionalgorithms",
    "compressionlevel",
    "enablehwcompression",
    "hwcompressionlibrary",
    "stricthostkeychecking",
    "userknownhostsfile",
    "globalknownhostsfile",
    "hashknownhosts",
    "loglevel",
    "rekeylimit",
    "cryptothreads",
    "connecttimeout",
    "addressfamily",
    "sendenv",
    "setenv",
    "pubkeyauthentication",
    "passwordauthentication",
    "kbdinteractiveauthentication",
    "challengeresponseauthentication",
    "preferredauthentications",
    "numberofpasswordprompts",
    "tcprcvbuf",
    "tcpsndbuf",
    "remotercvbuf",
    "remotesndbuf",
    "channelwindow",
    "channelwindowmax",
    "noneenabled",
    "noneswitch",
    "nonemacenabled",
    "kexguess",
    "requesttty",
    "escapechar",
    "connectionattempts",
    "serveraliveinterval",
    "serveralivecountmax",
    "proxyjump",
    "proxycommand",
    "remotecommand",
    "forwardagent",
    "localforward",
    "remoteforward",
    "dynamicforward",
    "exitonforwardfailure",
    "clearallforwardings",
    "gatewayports",
    "forkafterauthentication",
    "hostkeyalias",
    "controlmaster",
    "controlpath",
    "controlpersist",
    "streams",
    "keeppartial",
    "updatehostkeys",
    "bindaddress",
    "bindinterface",
    "metrics",
    "metricsinterval",
    "metricspath",
    "metricsfile",
    "ignoreunknown",
    "stdinnull",
    "sessiontype",
    "tcpkeepalive",
    "ipqos",
    "tag",
    "visualhostkey",
    "permitlocalcommand",
    "localcommand",
    "knownhostscommand",
    "nohostauthenticationforlocalhost",
    "streamlocalbindmask",
    "streamlocalbindunlink",
    "certificatefile",
    "revokedhostkeys",
    "casignaturealgorithms",
    "kbdinteractivedevices",
    "syslogfacility",
    "canonicalizehostname",
    "canonicaldomains",
    "canonicalizefallbacklocal",
    "canonicalizemaxdots",
    "checkhostip",
    "securitykeyprovider",
    "addkeystoagent",
];

/// Keywords whose every line adds values (the others: first line wins).
const REPEATABLE: &[&str] = &[
    "identityfile",
    "certificatefile",
    "sendenv",
    "localforward",
    "remoteforward",
    "dynamicforward",
];

/// Keywords whose value is the rest of the line, unsplit.
const RAW: &[&str] = &[
    "permitremoteopen",
    "proxycommand",
    "localcommand",
    "remotecommand",
    "knownhostscommand",
];

/// The text after the keyword and its separator (spaces or `=`).
fn raw_rest(line: &str) -> String {
    let l = line.trim();
    let kw_end = l
        .find(|c: char| c.is_whitespace() || c == '=')
        .unwrap_or(l.len());
    l[kw_end..]
        .trim_start_matches(|c: char| c.is_whitespace() || c == '=')
        .to_owned()
}

/// Include depth limit (ssh's READCONF_MAX_DEPTH).
const MAX_DEPTH: usize = 16;

/// One line of a configuration file, kept for evaluation.
#[derive(Debug, Clone)]
enum Item {
    Set {
        kw: String,
        args: Vec<String>,
        /// Where the line is (file, line; 0 for the command line), for
        /// what limits.rs says of it.
        at: (std::sync::Arc<str>, usize),
    },
    Host(Vec<String>),
    Match(Vec<(bool, Crit)>),
    /// The files an Include named, in order.
    Include(Vec<Vec<Item>>),
}

/// Parsed `-o` options and configuration files, in order.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `-o` options (always active).
    cmdline: Vec<Item>,
    /// One item list per top-level file.
    files: Vec<Vec<Item>>,
    /// Warnings to log at debug level.
    pub warnings: Vec<String>,
    /// The first IgnoreUnknown value read: unknown keywords matching it
    /// are skipped, as ssh does.
    ignore_unknown: Option<String>,
    /// CanonicalizeHostname may look names up (not for `-G`, as ssh).
    pub canonicalize: bool,
}

fn err(path: &str, n: usize, msg: &str) -> String {
    format!("{path}: line {n}: {msg}")
}

/// ssh's refusal of a bad line: the file is given up.
fn bad(path: &str, n: usize, error: impl Into<BadLine>) -> ConfigError {
    ConfigError::Bad {
        file: path.to_owned(),
        line: n,
        error: error.into(),
    }
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            cmdline: Vec::new(),
            files: Vec::new(),
            warnings: Vec::new(),
            ignore_unknown: None,
            canonicalize: true,
        }
    }
}

impl ClientConfig {
    /// Loads `-o` options, then `-F file` or ~/.ssh/config and /etc/ssh/ssh_config.
    pub fn load(options: &[String], file: Option<&Path>) -> Result<ClientConfig, ConfigError> {
        let mut c = ClientConfig::default();
        for o in options {
            let items = c.parse_text(o, "command-line", true, true, 0)?;
            c.cmdline.extend(items);
        }
        match file {
            Some(f) if f == Path::new("none") => {}
            Some(f) => {
                let text = std::fs::read_to_string(f).map_err(|e| ConfigError::Open {
                    file: f.display().to_string(),
                    error: e.to_string(),
                })?;
                let items = c.parse_text(&text, &f.display().to_string(), false, true, 0)?;
                c.files.push(items);
            }
            None => {
                let user = tokens::tilde("~/.ssh/config").unwrap_or_default();
                for (f, user_file) in [(user.as_str(), true), ("/etc/ssh/ssh_config", false)] {
                    if let Ok(text) = std::fs::read_to_string(f) {
                        let items = c.parse_text(&text, f, false, user_file, 0)?;
                        c.files.push(items);
                    }
                }
            }
        }
        Ok(c)
    }

    /// For the fuzz target (fuzz/fuzz_targets/ssh_config.rs): `text` as a
    /// user's ssh_config, from memory. `Include` lines still read the files
    /// they name (the fuzz target leaves them out).
    #[doc(hidden)]
    pub fn from_text(text: &str) -> Result<ClientConfig, ConfigError> {
        let mut c = ClientConfig::default();
        let items = c.parse_text(text, "ssh_config", false, true, 0)?;
        c.files.push(items);
        Ok(c)
    }

    /// Adds a file's text (tests, and `load`).
    #[cfg(test)]
    fn add_text(&mut self, text: &str, path: &str) -> Result<(), ConfigError> {
        let items = self.parse_text(text, path, false, true, 0)?;
        self.files.push(items);
        Ok(())
    }

    fn parse_text(
        &mut self,
        text: &str,
        path: &str,
        cmdline: bool,
        user_file: bool,
        depth: usize,
    ) -> Result<Vec<Item>, ConfigError> {
        let mut items = Vec::new();
        let file: std::sync::Arc<str> = path.into();
        for (i, line) in text.lines().enumerate() {
            let n = if cmdline { 0 } else { i + 1 };
            let Some((kw, args)) = split_line(line).map_err(|error| ConfigError::Syntax {
                file: path.to_owned(),
                line: n,
                error,
            })?
            else {
                continue;
            };
            match kw.as_str() {
                "host" if !cmdline => items.push(Item::Host(args)),
                "match" if !cmdline => {
                    let crit =
                        matching::parse(&args).map_err(|e| bad(path, n, BadLine::Match(e)))?;
                    items.push(Item::Match(crit));
                }
                "include" if cmdline => return Err(ConfigError::IncludeOnCommandLine),
                "include" => {
                    if depth >= MAX_DEPTH {
                        return Err(ConfigError::IncludeDepth {
                            file: path.to_owned(),
                            line: n,
                        });
                    }
                    let mut files = Vec::new();
                    for a in &args {
                        let found = include::expand(a, user_file)
                            .map_err(|e| bad(path, n, BadLine::Include(e)))?;
                        for f in found {
                            match std::fs::read_to_string(&f) {
                                Ok(t) => files.push(self.parse_text(
                                    &t,
                                    &f,
                                    false,
                                    user_file,
                                    depth + 1,
                                )?),
                                Err(e) => self.warnings.push(format!("{path} line {n}: {f}: {e}")),
                            }
                        }
                    }
                    items.push(Item::Include(files));
                }
                k if SUPPORTED.contains(&k) || limits::limit(k).is_some() => {
                    if args.is_empty() {
                        return Err(bad(path, n, BadLine::MissingArgument));
                    }
                    values::check(k, &args).map_err(|e| bad(path, n, e))?;
                    // Commands keep the rest of the line as written (quotes too).
                    let args = if RAW.contains(&k) {
                        vec![raw_rest(line)]
                    } else {
                        args
                    };
                    if k == "ignoreunknown" && self.ignore_unknown.is_none() {
                        self.ignore_unknown = Some(args.join(","));
                    }
                    items.push(Item::Set {
                        kw,
                        args,
                        at: (file.clone(), n),
                    });
                }
                k if self.ignore_unknown.as_deref().is_some_and(|p| {
                    crate::keys::pattern::match_pattern_list(k, p) == Some(true)
                }) =>
                {
                    self.warnings
                        .push(err(path, n, &format!("Ignored unknown option \"{k}\"")));
                }
                _ => return Err(bad(path, n, BadLine::UnknownKeyword(kw))),
            }
        }
        Ok(items)
    }
}

/// The local user's name: $USER, else the password database, else root.
pub fn local_user() -> String {
    if let Ok(u) = std::env::var("USER") {
        if !u.is_empty() {
            return u;
        }
    }
    if let Some(u) = crate::users::current() {
        if !u.name.is_empty() {
            return u.name;
        }
    }
    "root".into()
}

/// Effective settings for one destination: `hostname`, `user` and `port`
/// are always set (HostName expanded, defaults filled in).
#[derive(Debug, Clone, Default)]
pub struct Resolved {
    map: HashMap<String, Vec<String>>,
    /// The destination as typed (%n).
    pub original_host: String,
    /// The local user (%u).
    pub local_user: String,
    /// Keywords in effect that sluice refuses or warns of (limits.rs).
    pub limited: Vec<limits::Limited>,
}

impl Resolved {
    /// First value of a keyword.
    pub fn get(&self, kw: &str) -> Option<&str> {
        self.map.get(kw).and_then(|v| v.first()).map(String::as_str)
    }
    /// All values of a keyword.
    pub fn all(&self, kw: &str) -> &[String] {
        self.map.get(kw).map_or(&[], Vec::as_slice)
    }
    /// A yes/no keyword with its default.
    pub fn flag(&self, kw: &str, default: bool) -> bool {
        self.get(kw).and_then(super::yes_no).unwrap_or(default)
    }
    /// Sets a value unless the config already has one.
    pub fn set_default(&mut self, kw: &str, v: &str) {
        self.map
            .entry(kw.to_owned())
            .or_insert_with(|| vec![v.to_owned()]);
    }
    /// Sets a value, replacing what the config had.
    pub fn set(&mut self, kw: &str, v: &str) {
        self.map.insert(kw.to_owned(), vec![v.to_owned()]);
    }
    /// The host name to connect to (HostName, %h expanded).
    pub fn hostname(&self) -> &str {
        self.get("hostname").unwrap_or_default()
    }
    /// The port.
    pub fn port(&self) -> u16 {
        self.get("port").and_then(values::port).unwrap_or(22)
    }
    /// The remote user.
    pub fn user(&self) -> &str {
        self.get("user").unwrap_or_default()
    }
    /// Token values for this destination.
    pub fn tokens(&self) -> Tokens {
        Tokens {
            original_host: self.original_host.clone(),
            host: self.hostname().to_owned(),
            port: self.port(),
            remote_user: self.user().to_owned(),
            local_user: self.local_user.clone(),
            home: tokens::home_dir(),
            host_key_alias: self.get("hostkeyalias").map(str::to_owned),
        }
    }
    /// A file-name keyword's value with `~` and tokens expanded.
    pub fn path(&self, kw: &str) -> Result<Option<String>, tokens::ExpandError> {
        self.get(kw)
            .map(|v| self.tokens().path(v, tokens::FILE))
            .transpose()
    }
    /// `~` and the file-name tokens (%d %u %h %r %p %C ...), as ssh expands
    /// IdentityFile and IdentityAgent; a bad token is logged and the name kept.
    pub fn file_path(&self, s: &str) -> std::path::PathBuf {
        match self.tokens().path(s, tokens::FILE) {
            Ok(p) => std::path::PathBuf::from(p),
            Err(e) => {
                crate::log!(Info, "{s}: {e}");
                std::path::PathBuf::from(s)
            }
        }
    }
}

#[cfg(test)]
mod tests;
