//! `ssh_config` for `sluice` (ssh_config(5)): `Host` blocks, `Match all|host|
//! user`, `Include`, first value wins, `-o` options first. The parser keeps
//! every setting as text; [`Resolved`] gives the effective values for one host.

use super::split_line;
use crate::keys::pattern::match_pattern_list;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Keywords sluice acts on.
const SUPPORTED: &[&str] = &[
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
    "tcprcvbuf",
    "tcpsndbuf",
    "remotercvbuf",
    "remotesndbuf",
    "channelwindow",
    "channelwindowmax",
    "noneenabled",
    "noneswitch",
    "nonemacenabled",
    "localforward",
    "remoteforward",
    "dynamicforward",
    "exitonforwardfailure",
    "clearallforwardings",
    "gatewayports",
    "forkafterauthentication",
];

/// OpenSSH keywords accepted without effect yet.
const ACCEPTED: &[&str] = &[
    "addkeystoagent",
    "checkhostip",
    "connectionattempts",
    "serveraliveinterval",
    "serveralivecountmax",
    "bindaddress",
    "requesttty",
    "escapechar",
    "forwardagent",
    "forwardx11",
    "forwardx11trusted",
    "proxyjump",
    "proxycommand",
    "controlmaster",
    "controlpath",
    "controlpersist",
    "kbdinteractiveauthentication",
    "challengeresponseauthentication",
    "preferredauthentications",
    "numberofpasswordprompts",
    "tcpkeepalive",
    "visualhostkey",
    "updatehostkeys",
    "gssapiauthentication",
    "gssapidelegatecredentials",
    "hostbasedauthentication",
    "ipqos",
    "loglevel",
    "canonicalizehostname",
    "canonicaldomains",
    "permitlocalcommand",
    "localcommand",
    "verifyhostkeydns",
    "forwardx11timeout",
    "enablesshkeysign",
    "nohostauthenticationforlocalhost",
    "hostkeyalias",
    "tunnel",
    "tunneldevice",
    "streamlocalbindunlink",
    "securitykeyprovider",
    "pkcs11provider",
    "certificatefile",
    "revokedhostkeys",
    "fingerprinthash",
    "sessiontype",
    "stdinnull",
    "obscurekeystroketiming",
    "requiredrsasize",
    "enableescapecommandline",
    "casignaturealgorithms",
    "hostbasedacceptedalgorithms",
    "knownhostscommand",
    "tag",
    "logverbose",
    "ignoreunknown",
    "protocol",
    "sendenv",
];

const REPEATABLE: &[&str] = &[
    "localforward",
    "remoteforward",
    "dynamicforward",
    "identityfile",
    "sendenv",
    "setenv",
    "userknownhostsfile",
];

#[derive(Debug, Clone)]
struct Entry {
    /// Host patterns of the block (None: applies to all, e.g. before any Host).
    cond: Cond,
    kw: String,
    args: Vec<String>,
}

#[derive(Debug, Clone)]
enum Cond {
    All,
    Host(Vec<String>),
    Match(Vec<(String, String)>),
}

/// Parsed settings from `-o` options and config files, in order.
#[derive(Debug, Clone, Default)]
pub struct ClientConfig {
    entries: Vec<Entry>,
    /// Warnings to log at debug level.
    pub warnings: Vec<String>,
}

fn err(path: &str, n: usize, msg: &str) -> String {
    format!("{path}: line {n}: {msg}")
}

impl ClientConfig {
    /// Loads `-o` options, then `-F file` or ~/.ssh/config and /etc/ssh/ssh_config.
    pub fn load(options: &[String], file: Option<&Path>) -> Result<ClientConfig, String> {
        let mut c = ClientConfig::default();
        for o in options {
            c.add_text(o, "command-line", true)?;
        }
        match file {
            Some(f) if f == Path::new("none") => {}
            Some(f) => {
                let text = std::fs::read_to_string(f)
                    .map_err(|e| format!("Can't open user config file {}: {e}", f.display()))?;
                c.add_text(&text, &f.display().to_string(), false)?;
            }
            None => {
                let home = std::env::var("HOME").unwrap_or_default();
                for f in [
                    PathBuf::from(&home).join(".ssh/config"),
                    PathBuf::from("/etc/ssh/ssh_config"),
                ] {
                    if let Ok(text) = std::fs::read_to_string(&f) {
                        c.add_text(&text, &f.display().to_string(), false)?;
                    }
                }
            }
        }
        Ok(c)
    }

    fn add_text(&mut self, text: &str, path: &str, cmdline: bool) -> Result<(), String> {
        let mut cond = Cond::All;
        for (i, line) in text.lines().enumerate() {
            let n = if cmdline { 0 } else { i + 1 };
            let Some((kw, args)) = split_line(line).map_err(|e| err(path, n, &e))? else {
                continue;
            };
            match kw.as_str() {
                "host" if !cmdline => cond = Cond::Host(args),
                "match" if !cmdline => {
                    let mut crit = Vec::new();
                    let mut it = args.into_iter();
                    while let Some(k) = it.next() {
                        let k = k.to_ascii_lowercase();
                        if k == "all" {
                            continue;
                        }
                        if !matches!(k.as_str(), "host" | "originalhost" | "user" | "localuser") {
                            return Err(err(path, n, &format!("Unsupported Match attribute {k}")));
                        }
                        let v = it
                            .next()
                            .ok_or_else(|| err(path, n, "Missing Match criteria"))?;
                        crit.push((k, v));
                    }
                    cond = Cond::Match(crit);
                }
                "include" => {
                    for a in &args {
                        let home = std::env::var("HOME").unwrap_or_default();
                        let p = if a.starts_with('/') {
                            PathBuf::from(a)
                        } else {
                            PathBuf::from(&home).join(".ssh").join(a)
                        };
                        if let Ok(t) = std::fs::read_to_string(&p) {
                            self.add_text(&t, &p.display().to_string(), false)?;
                        }
                    }
                }
                k if SUPPORTED.contains(&k) || ACCEPTED.contains(&k) => {
                    if args.is_empty() {
                        return Err(err(path, n, "missing argument."));
                    }
                    if !SUPPORTED.contains(&k) {
                        self.warnings
                            .push(err(path, n, &format!("Unsupported option \"{k}\"")));
                    }
                    self.entries.push(Entry {
                        cond: cond.clone(),
                        kw,
                        args,
                    });
                }
                _ => {
                    return Err(format!(
                        "{}\n{path}: terminating, 1 bad configuration options",
                        err(path, n, &format!("Bad configuration option: {kw}"))
                    ))
                }
            }
        }
        Ok(())
    }

    /// The effective settings for `host` as typed by the user.
    pub fn resolve(&self, host: &str, user: &str) -> Resolved {
        let mut map: HashMap<String, Vec<String>> = HashMap::new();
        for e in &self.entries {
            let applies = match &e.cond {
                Cond::All => true,
                Cond::Host(pats) => match_pattern_list(host, &pats.join(",")) == Some(true),
                Cond::Match(crit) => crit.iter().all(|(k, v)| {
                    let subject = match k.as_str() {
                        "user" => user.to_owned(),
                        "localuser" => std::env::var("USER").unwrap_or_default(),
                        _ => host.to_owned(),
                    };
                    match_pattern_list(&subject, v) == Some(true)
                }),
            };
            if !applies {
                continue;
            }
            if e.kw.ends_with("forward") {
                // One value per line: `LocalForward 8080 host:80` is one spec.
                map.entry(e.kw.clone()).or_default().push(e.args.join(" "));
            } else if REPEATABLE.contains(&e.kw.as_str()) {
                map.entry(e.kw.clone())
                    .or_default()
                    .extend(e.args.iter().cloned());
            } else {
                map.entry(e.kw.clone()).or_insert_with(|| e.args.clone());
            }
        }
        Resolved { map }
    }
}

/// Effective settings for one destination.
#[derive(Debug, Clone, Default)]
pub struct Resolved {
    map: HashMap<String, Vec<String>>,
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
    /// Sets a value unless the config already has one (command-line flags
    /// like -p and -l go through here after -o, before files).
    pub fn set_default(&mut self, kw: &str, v: &str) {
        self.map
            .entry(kw.to_owned())
            .or_insert_with(|| vec![v.to_owned()]);
    }
    /// Sets a value, replacing what the config had (normalised for `-G`).
    pub fn set(&mut self, kw: &str, v: &str) {
        self.map.insert(kw.to_owned(), vec![v.to_owned()]);
    }
    /// Lines for `-G`, sorted.
    pub fn dump(&self) -> String {
        let mut keys: Vec<_> = self.map.keys().collect();
        keys.sort();
        keys.iter()
            .map(|k| format!("{k} {}\n", self.map[*k].join(" ")))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_blocks_first_wins_and_options_precede() {
        let mut c = ClientConfig::load(&["Port=2200".into()], Some(Path::new("none"))).unwrap();
        c.add_text("Host db* !db1\n  User dba\nHost *\n  User other\n  Port 22\n  IdentityFile ~/a\n  IdentityFile ~/b\n", "cfg", false).unwrap();
        let r = c.resolve("db2", "me");
        assert_eq!(r.get("user"), Some("dba"));
        assert_eq!(r.get("port"), Some("2200"));
        assert_eq!(r.all("identityfile"), ["~/a", "~/b"]);
        assert_eq!(c.resolve("db1", "me").get("user"), Some("other"));
        let e = c.clone().add_text("Bogus 1\n", "cfg", false).unwrap_err();
        assert!(e.starts_with("cfg: line 1: Bad configuration option: bogus"));
    }
}
