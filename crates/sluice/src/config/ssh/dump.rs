//! `sluice -G`: the effective configuration in `ssh -G`'s order, names and
//! formatting (OpenSSH 9.2's dump_client_config), then sluice's own keywords.

use super::{jump, tokens, values, Resolved};
use std::fmt::Write;

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
pub fn dump(r: &Resolved, input: &DumpInput<'_>) -> Result<String, String> {
    let mut o = String::new();
    let t = r.tokens();
    let mut line = |k: &str, v: &str| {
        let _ = writeln!(o, "{k} {v}");
    };
    let get = |k: &str, d: &str| {
        r.get(k)
            .map_or_else(|| d.to_owned(), |v| values::show(k, v))
    };
    let alg = |k: &str| {
        input
            .algorithms
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    line("host", &r.original_host);
    line("user", r.user());
    line("hostname", r.hostname());
    line("port", &r.port().to_string());
    let update_default = update_host_keys_default(r);
    for (k, d) in [
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
    ] {
        // KbdInteractiveAuthentication's old name sets it too.
        let v = if k == "kbdinteractiveauthentication" && r.get(k).is_none() {
            r.get("challengeresponseauthentication")
                .map_or_else(|| d.to_owned(), |v| values::show(k, v))
        } else {
            get(k, d)
        };
        line(k, &v);
    }
    let opt = |k: &str| r.get(k).map(|v| values::show(k, v));
    let path = |k: &str| -> Result<Option<String>, String> {
        match r.get(k) {
            Some(v) if v.eq_ignore_ascii_case("none") && k == "controlpath" => Ok(None),
            Some(v) if v == "none" || v == "SSH_AUTH_SOCK" => Ok(Some(v.to_owned())),
            Some(v) => t.path(v, tokens::FILE).map(Some),
            None => Ok(None),
        }
    };
    let mut strings: Vec<(&str, Option<String>)> = vec![
        ("bindaddress", opt("bindaddress")),
        ("bindinterface", opt("bindinterface")),
        ("ciphers", Some(alg("ciphers"))),
        ("controlpath", path("controlpath")?),
        ("hostkeyalgorithms", Some(alg("hostkeyalgorithms"))),
        ("hostkeyalias", opt("hostkeyalias")),
        (
            "hostbasedacceptedalgorithms",
            Some(alg("hostbasedacceptedalgorithms")),
        ),
        ("identityagent", path("identityagent")?),
        ("ignoreunknown", opt("ignoreunknown")),
        ("kbdinteractivedevices", opt("kbdinteractivedevices")),
        ("kexalgorithms", Some(alg("kexalgorithms"))),
        ("casignaturealgorithms", Some(alg("casignaturealgorithms"))),
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
        ("loglevel", Some(get("loglevel", "INFO"))),
        ("macs", Some(alg("macs"))),
        ("pkcs11provider", opt("pkcs11provider")),
        (
            "securitykeyprovider",
            Some(get("securitykeyprovider", "internal")),
        ),
        ("preferredauthentications", opt("preferredauthentications")),
        (
            "pubkeyacceptedalgorithms",
            Some(alg("pubkeyacceptedalgorithms")),
        ),
        ("revokedhostkeys", opt("revokedhostkeys")),
        (
            "xauthlocation",
            Some(get("xauthlocation", "/usr/bin/xauth")),
        ),
        ("knownhostscommand", opt("knownhostscommand")),
        ("tag", opt("tag")),
    ];
    for (k, v) in strings.drain(..) {
        if let Some(v) = v {
            line(k, &v);
        }
    }
    for v in r.all("dynamicforward") {
        line("dynamicforward", &bracket(v));
    }
    for k in ["localforward", "remoteforward"] {
        for v in r.all(k) {
            line(k, &forward(v, &t)?);
        }
    }
    let mut ids: Vec<String> = input.identities.to_vec();
    ids.extend(r.all("identityfile").iter().cloned());
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
        line("identityfile", i);
    }
    let oneline = |k: &str, d: &str| match r.all(k) {
        [] => d.to_owned(),
        v => v.join(" "),
    };
    line("canonicaldomains", &oneline("canonicaldomains", "none"));
    for c in r.all("certificatefile") {
        line("certificatefile", c);
    }
    line(
        "globalknownhostsfile",
        &oneline(
            "globalknownhostsfile",
            "/etc/ssh/ssh_known_hosts /etc/ssh/ssh_known_hosts2",
        ),
    );
    let ukh = match r.all("userknownhostsfile") {
        [] => vec![
            "~/.ssh/known_hosts".to_owned(),
            "~/.ssh/known_hosts2".to_owned(),
        ],
        v => v.to_vec(),
    };
    let ukh: Result<Vec<String>, String> = ukh
        .iter()
        .map(|f| {
            if f == "none" {
                Ok(f.clone())
            } else {
                t.path(f, tokens::FILE)
            }
        })
        .collect();
    line("userknownhostsfile", &ukh?.join(" "));
    for k in ["sendenv", "setenv"] {
        for v in r.all(k) {
            line(k, v);
        }
    }
    line("logverbose", &oneline("logverbose", "none"));
    line("permitremoteopen", &oneline("permitremoteopen", "any"));
    line("addkeystoagent", &get("addkeystoagent", "false"));
    let fwd_agent = match r.get("forwardagent") {
        Some(v) if crate::config::yes_no(v).is_none() => t.path(v, tokens::FILE)?,
        _ => get("forwardagent", "no"),
    };
    line("forwardagent", &fwd_agent);
    line(
        "connecttimeout",
        &r.get("connecttimeout")
            .filter(|v| !v.eq_ignore_ascii_case("none"))
            .map_or_else(|| "none".to_owned(), |v| values::show("connecttimeout", v)),
    );
    line("tunneldevice", &get("tunneldevice", "any:any"));
    line(
        "canonicalizePermittedcnames",
        &oneline("canonicalizepermittedcnames", "none"),
    );
    line("controlpersist", &get("controlpersist", "no"));
    line("escapechar", &get("escapechar", "~"));
    let q = match r.all("ipqos") {
        [] => crate::config::ssh::ipqos::DEFAULT,
        v => crate::config::ssh::ipqos::parse(&v.join(" "))?,
    };
    let name = crate::config::ssh::ipqos::name;
    line(
        "ipqos",
        &format!("{} {}", name(q.interactive), name(q.bulk)),
    );
    let (bytes, secs) = super::super::parse_rekey_limit(r.all("rekeylimit")).unwrap_or((0, 0));
    line("rekeylimit", &format!("{bytes} {secs}"));
    line("streamlocalbindmask", &get("streamlocalbindmask", "0177"));
    line("syslogfacility", &get("syslogfacility", "USER"));
    match (r.get("proxyjump"), r.all("proxycommand")) {
        (Some(j), _) => {
            if let Some(j) = jump::parse(j)? {
                line("proxyjump", &j.show());
            }
        }
        (None, []) => {}
        (None, [w]) if w.eq_ignore_ascii_case("none") => {}
        (None, words) => line("proxycommand", &words.join(" ")),
    }
    for (k, v) in input.sluice {
        line(k, v);
    }
    Ok(o)
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
fn forward(spec: &str, t: &tokens::Tokens) -> Result<String, String> {
    let mut words = spec
        .split_whitespace()
        .map(|w| {
            if w.contains('/') {
                return t.expand_env(w, tokens::FILE);
            }
            Ok(bracket(w))
        })
        .collect::<Result<Vec<String>, String>>()?;
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
