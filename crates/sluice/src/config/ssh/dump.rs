//! `sluice -G`: the effective configuration in `ssh -G`'s order, names and
//! formatting (OpenSSH 9.2's dump_client_config), then sluice's own keywords.

use super::{jump, tokens, values, Resolved};
use std::fmt::Write;

/// Why `-G` cannot print the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DumpError {
    /// A path, command or forwarding with a bad token or variable.
    Expand(tokens::ExpandError),
    /// IPQoS.
    IpQos(super::ipqos::BadIpQos),
    /// ProxyJump.
    ProxyJump(jump::InvalidProxyJump),
}

impl std::fmt::Display for DumpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DumpError::Expand(e) => e.fmt(f),
            DumpError::IpQos(e) => e.fmt(f),
            DumpError::ProxyJump(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for DumpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DumpError::Expand(e) => Some(e),
            DumpError::IpQos(e) => Some(e),
            DumpError::ProxyJump(e) => Some(e),
        }
    }
}

impl From<tokens::ExpandError> for DumpError {
    fn from(e: tokens::ExpandError) -> Self {
        DumpError::Expand(e)
    }
}

impl From<super::ipqos::BadIpQos> for DumpError {
    fn from(e: super::ipqos::BadIpQos) -> Self {
        DumpError::IpQos(e)
    }
}

impl From<jump::InvalidProxyJump> for DumpError {
    fn from(e: jump::InvalidProxyJump) -> Self {
        DumpError::ProxyJump(e)
    }
}

/// Debian's GSSAPI key exchange list (printed for the keyword's sake).
const GSS_KEX: &str = "gss-group14-sha256-,gss-group16-sha512-,gss-nistp256-sha256-,gss-curve25519-sha256-,gss-group14-sha1-,gss-gex-sha1-";

/// What -G needs beyond the configuration: `host_arg` as typed, the
/// algorithm lists sluice will offer, and sluice's own settings.
pub struct DumpInput<'a> {
    /// `-i` files (before IdentityFile lines).
    pub identities: &'a [String],
    /// `ciphers`, `macs`, `kexalgorithms`, `hostkeyalgorithms`, ... as offered.
    pub algorithms: &'a [(&'a str, String)],
    /// sluice-only keywords and their effective values, printed last.
    pub sluice: &'a [(&'a str, String)],
}

/// The -G text.
pub fn dump(r: &Resolved, input: &DumpInput<'_>) -> Result<String, DumpError> {
    let mut d = Dump {
        r,
        input,
        t: r.tokens(),
        o: String::new(),
    };
    d.line("host", &r.original_host);
    d.line("user", r.user());
    d.line("hostname", r.hostname());
    d.line("port", &r.port().to_string());
    d.flags();
    d.strings()?;
    d.forwards()?;
    d.identities();
    d.known_hosts()?;
    d.rest()?;
    d.proxy()?;
    for (k, v) in input.sluice {
        d.line(k, v);
    }
    Ok(d.o)
}

/// The -G text being written and what it is written from.
struct Dump<'a> {
    r: &'a Resolved,
    input: &'a DumpInput<'a>,
    t: tokens::Tokens,
    o: String,
}

impl Dump<'_> {
    fn line(&mut self, k: &str, v: &str) {
        let _ = writeln!(self.o, "{k} {v}");
    }

    /// The value as -G shows it, or `d` when unset.
    fn get(&self, k: &str, d: &str) -> String {
        self.r
            .get(k)
            .map_or_else(|| d.to_owned(), |v| values::show(k, v))
    }

    /// The algorithm list sluice will offer for `k`.
    fn alg(&self, k: &str) -> String {
        self.input
            .algorithms
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    }

    fn opt(&self, k: &str) -> Option<String> {
        self.r.get(k).map(|v| values::show(k, v))
    }

    /// A socket path with tokens expanded; `none` and `SSH_AUTH_SOCK` as
    /// written, ControlPath none not at all.
    fn path(&self, k: &str) -> Result<Option<String>, DumpError> {
        match self.r.get(k) {
            Some(v) if v.eq_ignore_ascii_case("none") && k == "controlpath" => Ok(None),
            Some(v) if v == "none" || v == "SSH_AUTH_SOCK" => Ok(Some(v.to_owned())),
            Some(v) => Ok(Some(self.t.path(v, tokens::FILE)?)),
            None => Ok(None),
        }
    }

    /// Every value of a repeatable keyword on one line, or `d`.
    fn oneline(&self, k: &str, d: &str) -> String {
        match self.r.all(k) {
            [] => d.to_owned(),
            v => v.join(" "),
        }
    }

    /// The flags and numbers ssh prints first, with their defaults.
    fn flags(&mut self) {
        for (k, d) in flag_defaults(self.r) {
            // KbdInteractiveAuthentication's old name sets it too.
            let v = if k == "kbdinteractiveauthentication" && self.r.get(k).is_none() {
                self.r
                    .get("challengeresponseauthentication")
                    .map_or_else(|| d.to_owned(), |v| values::show(k, v))
            } else {
                self.get(k, d)
            };
            self.line(k, &v);
        }
    }

    /// The string options, printed only when set (algorithms always).
    fn strings(&mut self) -> Result<(), DumpError> {
        let (r, t) = (self.r, &self.t);
        let strings: Vec<(&str, Option<String>)> = vec![
            ("bindaddress", self.opt("bindaddress")),
            ("bindinterface", self.opt("bindinterface")),
            ("ciphers", Some(self.alg("ciphers"))),
            ("controlpath", self.path("controlpath")?),
            ("hostkeyalgorithms", Some(self.alg("hostkeyalgorithms"))),
            ("hostkeyalias", self.opt("hostkeyalias")),
            (
                "hostbasedacceptedalgorithms",
                Some(self.alg("hostbasedacceptedalgorithms")),
            ),
            ("identityagent", self.path("identityagent")?),
            ("ignoreunknown", self.opt("ignoreunknown")),
            ("kbdinteractivedevices", self.opt("kbdinteractivedevices")),
            ("kexalgorithms", Some(self.alg("kexalgorithms"))),
            (
                "casignaturealgorithms",
                Some(self.alg("casignaturealgorithms")),
            ),
            (
                "localcommand",
                r.all("localcommand")
                    .first()
                    .map(|_| r.all("localcommand").join(" ")),
            ),
            (
                "remotecommand",
                match r.all("remotecommand") {
                    [] => None,
                    words => Some(t.expand(&words.join(" "), tokens::FILE)?),
                },
            ),
            ("loglevel", Some(self.get("loglevel", "INFO"))),
            ("macs", Some(self.alg("macs"))),
            ("pkcs11provider", self.opt("pkcs11provider")),
            (
                "securitykeyprovider",
                Some(self.get("securitykeyprovider", "internal")),
            ),
            (
                "preferredauthentications",
                self.opt("preferredauthentications"),
            ),
            (
                "pubkeyacceptedalgorithms",
                Some(self.alg("pubkeyacceptedalgorithms")),
            ),
            ("revokedhostkeys", self.opt("revokedhostkeys")),
            (
                "xauthlocation",
                Some(self.get("xauthlocation", "/usr/bin/xauth")),
            ),
            ("knownhostscommand", self.opt("knownhostscommand")),
            ("tag", self.opt("tag")),
        ];
        for (k, v) in strings {
            if let Some(v) = v {
                self.line(k, &v);
            }
        }
        Ok(())
    }

    /// DynamicForward, LocalForward, RemoteForward.
    fn forwards(&mut self) -> Result<(), DumpError> {
        let r = self.r;
        for v in r.all("dynamicforward") {
            self.line("dynamicforward", &bracket(v));
        }
        for k in ["localforward", "remoteforward"] {
            for v in r.all(k) {
                let shown = forward(v, &self.t)?;
                self.line(k, &shown);
            }
        }
        Ok(())
    }

    /// `-i` files, then IdentityFile lines, else ssh's default list.
    fn identities(&mut self) {
        let mut ids: Vec<String> = self.input.identities.to_vec();
        ids.extend(self.r.all("identityfile").iter().cloned());
        if ids.is_empty() {
            ids = [
                "id_rsa",
                "id_ecdsa",
                "id_ecdsa_sk",
                "id_ed25519",
                "id_ed25519_sk",
                "id_xmss",
                "id_dsa",
            ]
            .map(|f| format!("~/.ssh/{f}"))
            .to_vec();
        }
        for i in &ids {
            self.line("identityfile", i);
        }
    }

    /// CanonicalDomains, CertificateFile and the known-hosts files.
    fn known_hosts(&mut self) -> Result<(), DumpError> {
        let r = self.r;
        let domains = self.oneline("canonicaldomains", "none");
        self.line("canonicaldomains", &domains);
        for c in r.all("certificatefile") {
            self.line("certificatefile", c);
        }
        let global = self.oneline(
            "globalknownhostsfile",
            "/etc/ssh/ssh_known_hosts /etc/ssh/ssh_known_hosts2",
        );
        self.line("globalknownhostsfile", &global);
        let ukh = match r.all("userknownhostsfile") {
            [] => vec![
                "~/.ssh/known_hosts".to_owned(),
                "~/.ssh/known_hosts2".to_owned(),
            ],
            v => v.to_vec(),
        };
        let ukh: Result<Vec<String>, tokens::ExpandError> = ukh
            .iter()
            .map(|f| {
                if f == "none" {
                    Ok(f.clone())
                } else {
                    self.t.path(f, tokens::FILE)
                }
            })
            .collect();
        self.line("userknownhostsfile", &ukh?.join(" "));
        Ok(())
    }

    /// The environment, agent, timeouts, escape, QoS and rekeying lines,
    /// in ssh's order.
    fn rest(&mut self) -> Result<(), DumpError> {
        let r = self.r;
        for k in ["sendenv", "setenv"] {
            for v in r.all(k) {
                self.line(k, v);
            }
        }
        let mut shown: Vec<(&str, String)> = vec![
            ("logverbose", self.oneline("logverbose", "none")),
            ("permitremoteopen", self.oneline("permitremoteopen", "any")),
            ("addkeystoagent", self.get("addkeystoagent", "false")),
        ];
        let fwd_agent = match r.get("forwardagent") {
            Some(v) if crate::config::yes_no(v).is_none() => self.t.path(v, tokens::FILE)?,
            _ => self.get("forwardagent", "no"),
        };
        shown.push(("forwardagent", fwd_agent));
        shown.push((
            "connecttimeout",
            r.get("connecttimeout")
                .filter(|v| !v.eq_ignore_ascii_case("none"))
                .map_or_else(|| "none".to_owned(), |v| values::show("connecttimeout", v)),
        ));
        shown.push(("tunneldevice", self.get("tunneldevice", "any:any")));
        shown.push((
            "canonicalizePermittedcnames",
            self.oneline("canonicalizepermittedcnames", "none"),
        ));
        shown.push(("controlpersist", self.get("controlpersist", "no")));
        shown.push(("escapechar", self.get("escapechar", "~")));
        let q = match r.all("ipqos") {
            [] => crate::config::ssh::ipqos::DEFAULT,
            v => crate::config::ssh::ipqos::parse(&v.join(" "))?,
        };
        let name = crate::config::ssh::ipqos::name;
        shown.push(("ipqos", format!("{} {}", name(q.interactive), name(q.bulk))));
        let (bytes, secs) = super::super::parse_rekey_limit(r.all("rekeylimit")).unwrap_or((0, 0));
        shown.push(("rekeylimit", format!("{bytes} {secs}")));
        shown.push((
            "streamlocalbindmask",
            self.get("streamlocalbindmask", "0177"),
        ));
        shown.push(("syslogfacility", self.get("syslogfacility", "USER")));
        for (k, v) in shown {
            self.line(k, &v);
        }
        Ok(())
    }

    /// ProxyJump, else ProxyCommand unless none.
    fn proxy(&mut self) -> Result<(), DumpError> {
        match (self.r.get("proxyjump"), self.r.all("proxycommand")) {
            (Some(j), _) => {
                if let Some(j) = jump::parse(j)? {
                    self.line("proxyjump", &j.show());
                }
            }
            (None, []) => {}
            (None, [w]) if w.eq_ignore_ascii_case("none") => {}
            (None, words) => {
                let cmd = words.join(" ");
                self.line("proxycommand", &cmd);
            }
        }
        Ok(())
    }
}

/// The flags and numbers of -G's first block and their defaults (some
/// depend on other settings, as in ssh).
fn flag_defaults(r: &Resolved) -> Vec<(&'static str, &'static str)> {
    let update_default = update_host_keys_default(r);
    vec![
        ("addressfamily", "any"),
        ("batchmode", "no"),
        ("canonicalizefallbacklocal", "yes"),
        ("canonicalizehostname", "false"),
        ("checkhostip", "no"),
        ("compression", "auto"),
        ("controlmaster", "false"),
        ("enablesshkeysign", "no"),
        ("clearallforwardings", "no"),
        ("exitonforwardfailure", "no"),
        ("fingerprinthash", "SHA256"),
        ("forwardx11", "no"),
        ("forwardx11trusted", "yes"),
        ("gatewayports", "no"),
        ("gssapiauthentication", "no"),
        ("gssapikeyexchange", "no"),
        ("gssapidelegatecredentials", "no"),
        ("gssapitrustdns", "no"),
        ("gssapirenewalforcesrekey", "no"),
        ("gssapikexalgorithms", GSS_KEX),
        ("hashknownhosts", "no"),
        ("hostbasedauthentication", "no"),
        ("identitiesonly", "no"),
        ("kbdinteractiveauthentication", "yes"),
        ("nohostauthenticationforlocalhost", "no"),
        ("passwordauthentication", "yes"),
        ("permitlocalcommand", "no"),
        ("proxyusefdpass", "no"),
        ("pubkeyauthentication", "true"),
        ("requesttty", "auto"),
        ("sessiontype", "default"),
        ("stdinnull", "no"),
        ("forkafterauthentication", "no"),
        ("streamlocalbindunlink", "no"),
        ("stricthostkeychecking", "ask"),
        ("tcpkeepalive", "yes"),
        ("tunnel", "false"),
        ("verifyhostkeydns", "false"),
        ("visualhostkey", "no"),
        (
            "updatehostkeys",
            if update_default { "true" } else { "false" },
        ),
        ("enableescapecommandline", "no"),
        ("canonicalizemaxdots", "1"),
        ("connectionattempts", "1"),
        ("forwardx11timeout", "1200"),
        ("numberofpasswordprompts", "3"),
        ("serveralivecountmax", "3"),
        // ssh: in batch mode the default is five minutes.
        (
            "serveraliveinterval",
            if r.flag("batchmode", false) {
                "300"
            } else {
                "0"
            },
        ),
        ("requiredrsasize", "1024"),
    ]
}

/// Forwarding specs as -G prints them: `8080 [localhost]:80`.
/// UpdateHostKeys when not configured (ssh_config(5)): yes unless
/// UserKnownHostsFile is overridden or VerifyHostKeyDNS is on.
pub fn update_host_keys_default(r: &Resolved) -> bool {
    let ukh = r.get("userknownhostsfile");
    let dns = r
        .get("verifyhostkeydns")
        .map(|v| values::show("verifyhostkeydns", v));
    (ukh.is_none() || ukh == Some("~/.ssh/known_hosts"))
        && dns.as_deref().is_none_or(|d| d == "false")
}

/// One LocalForward/RemoteForward line as ssh -G prints it: `host:port`
/// as `[host]:port`, a bare port as it is, Unix socket paths with `${VAR}`
/// and tokens expanded, a dynamic RemoteForward with ssh's `[socks]:0`.
fn forward(spec: &str, t: &tokens::Tokens) -> Result<String, tokens::ExpandError> {
    let mut words = spec
        .split_whitespace()
        .map(|w| {
            if w.contains('/') {
                return t.expand_env(w, tokens::FILE);
            }
            Ok(bracket(w))
        })
        .collect::<Result<Vec<String>, tokens::ExpandError>>()?;
    if words.len() == 1 {
        words.push("[socks]:0".into());
    }
    Ok(words.join(" "))
}

/// `host:port` as ssh -G prints it, `[host]:port`; a bare port as it is.
fn bracket(w: &str) -> String {
    match w.rsplit_once(':') {
        Some((h, p)) if !h.starts_with('[') => format!("[{h}]:{p}"),
        _ => w.to_owned(),
    }
}
