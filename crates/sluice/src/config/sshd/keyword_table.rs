//! The keywords of sshd_config by name: which exist, which sluiced acts
//! on, refuses or warns of, which sshd allows inside a Match block or may
//! repeat, and the aliases. The reader (lines.rs), the loader (mod.rs),
//! the values (keywords.rs) and the manual page check (cli/manpages.rs)
//! share it.

/// Keywords sshd allows inside a Match block (sshd_config(5), 9.2).
pub(super) const MATCH_ALLOWED: &[&str] = &[
    "acceptenv",
    "allowagentforwarding",
    "allowgroups",
    "allowstreamlocalforwarding",
    "allowtcpforwarding",
    "allowusers",
    "authenticationmethods",
    "authorizedkeyscommand",
    "authorizedkeyscommanduser",
    "authorizedkeysfile",
    "authorizedprincipalscommand",
    "authorizedprincipalscommanduser",
    "authorizedprincipalsfile",
    "banner",
    "casignaturealgorithms",
    "channeltimeout",
    "chrootdirectory",
    "clientalivecountmax",
    "clientaliveinterval",
    "denygroups",
    "denyusers",
    "disableforwarding",
    "exposeauthinfo",
    "forcecommand",
    "gatewayports",
    "gssapiauthentication",
    "hostbasedacceptedalgorithms",
    "hostbasedacceptedkeytypes",
    "hostbasedauthentication",
    "hostbasedusesnamefrompacketonly",
    "ignorerhosts",
    "include",
    "ipqos",
    "kbdinteractiveauthentication",
    "challengeresponseauthentication",
    "kerberosauthentication",
    "loglevel",
    "maxauthtries",
    "maxsessions",
    "maxstreams",
    "pamservicename",
    "passwordauthentication",
    "permitemptypasswords",
    "permitlisten",
    "permitopen",
    "permitrootlogin",
    "permittty",
    "permittunnel",
    "permituserrc",
    "pubkeyacceptedalgorithms",
    "pubkeyacceptedkeytypes",
    "pubkeyauthentication",
    "pubkeyauthoptions",
    "rekeylimit",
    // Ours: applied by the monitor with the connection's configuration.
    "remotebufmax",
    "revokedkeys",
    "rdomain",
    "setenv",
    "streamlocalbindmask",
    "streamlocalbindunlink",
    "trustedusercakeys",
    "unusedconnectiontimeout",
    "x11displayoffset",
    "x11forwarding",
    "x11uselocalhost",
];

/// OpenSSH keywords sluiced does not act on, with the value `sshd -T`
/// shows when unset (None: not shown unless set). Their values are kept as
/// written so `-T` reads like sshd's. Each is either harmless whatever its
/// value (README.md, "sshd_config keywords sluiced ignores": features
/// sluiced never offers, so nothing is let in that the setting would keep
/// out), or accepted only at the value that means "off" (keywords.rs's
/// `unsupported`):
/// any other value stops `sluiced -t` and startup.
pub(crate) const OTHER: &[(&str, Option<&str>)] = &[
    ("x11displayoffset", Some("10")),
    ("ignorerhosts", Some("yes")),
    ("ignoreuserknownhosts", Some("no")),
    ("hostbasedauthentication", Some("no")),
    ("hostbasedusesnamefrompacketonly", Some("no")),
    ("kerberosauthentication", Some("no")),
    ("kerberosorlocalpasswd", Some("yes")),
    ("kerberosticketcleanup", Some("yes")),
    ("gssapiauthentication", Some("no")),
    ("gssapicleanupcredentials", Some("yes")),
    ("gssapikeyexchange", Some("no")),
    ("gssapistrictacceptorcheck", Some("yes")),
    ("gssapistorecredentialsonrekey", Some("no")),
    ("gssapikexalgorithms", Some("gss-group14-sha256-,gss-group16-sha512-,gss-nistp256-sha256-,gss-curve25519-sha256-,gss-group14-sha1-,gss-gex-sha1-")),
    ("x11uselocalhost", Some("yes")),
    ("permituserrc", Some("yes")),
    ("usedns", Some("no")),
    ("fingerprinthash", Some("SHA256")),
    ("modulifile", Some("/etc/ssh/moduli")),
    ("xauthlocation", Some("/usr/bin/xauth")),
    ("versionaddendum", Some("none")),
    ("hostbasedacceptedalgorithms", Some("ssh-ed25519-cert-v01@openssh.com,ecdsa-sha2-nistp256-cert-v01@openssh.com,ecdsa-sha2-nistp384-cert-v01@openssh.com,ecdsa-sha2-nistp521-cert-v01@openssh.com,sk-ssh-ed25519-cert-v01@openssh.com,sk-ecdsa-sha2-nistp256-cert-v01@openssh.com,rsa-sha2-512-cert-v01@openssh.com,rsa-sha2-256-cert-v01@openssh.com,ssh-ed25519,ecdsa-sha2-nistp256,ecdsa-sha2-nistp384,ecdsa-sha2-nistp521,sk-ssh-ed25519@openssh.com,sk-ecdsa-sha2-nistp256@openssh.com,rsa-sha2-512,rsa-sha2-256")),
    ("permittunnel", Some("no")),
    ("ipqos", Some("lowdelay throughput")),
    ("rdomain", None),
    ("debianbanner", None),
    ("logverbose", None),
];

/// Keywords sluiced does not implement, the one value it accepts (the
/// value that turns the feature off), and what is missing. Any other value
/// is refused at startup: the server must not run without what the
/// administrator asked for.
pub(crate) const UNSUPPORTED: &[(&str, &str, &str)] = &[
    (
        "usedns",
        "no",
        "sluiced does not look up client host names (Match Host, from= and AllowUsers see addresses only)",
    ),
    ("rdomain", "none", "sluiced does not use routing domains"),
];

/// Old keywords sshd still reads and ignores.
pub(crate) const DEPRECATED: &[&str] = &[
    "protocol",
    "keyregenerationinterval",
    "serverkeybits",
    "rsaauthentication",
    "rhostsrsaauthentication",
    "uselogin",
    "useprivilegeseparation",
    "verifyreversemapping",
    "reversemappingcheck",
    "dsaauthentication",
    "pamauthenticationviakbdint",
    "skeyauthentication",
];

/// Keywords that accumulate over lines instead of first-wins.
pub(super) const REPEATABLE: &[&str] = &[
    "persourcepenalties", // first value wins per field (per_source.rs)
    "port",
    "listenaddress",
    "hostkey",
    "hostcertificate",
    "subsystem",
    "acceptenv",
    "allowusers",
    "denyusers",
    "allowgroups",
    "denygroups",
];

/// Keywords handled in `apply` (besides OTHER and DEPRECATED).
pub(crate) const OWN: &[&str] = &[
    "port",
    "listenaddress",
    "hostkey",
    "authorizedkeysfile",
    "permitrootlogin",
    "pubkeyauthentication",
    "passwordauthentication",
    "strictmodes",
    "pidfile",
    "subsystem",
    "acceptenv",
    "allowusers",
    "denyusers",
    "loglevel",
    "maxsessions",
    "maxauthtries",
    "maxstartups",
    "logingracetime",
    "ciphers",
    "macs",
    "kexalgorithms",
    "hostkeyalgorithms",
    "pubkeyacceptedalgorithms",
    "pubkeyacceptedkeytypes",
    "compression",
    "enablehwcompression",
    "hwcompressionlibrary",
    "rekeylimit",
    "cryptothreads",
    "forcecommand",
    "chrootdirectory",
    "banner",
    "tcprcvbuf",
    "tcpsndbuf",
    "channelwindow",
    "channelwindowmax",
    "remotebufmax",
    "maxforwardchannels",
    "maxstreams",
    "noneenabled",
    "nonemacenabled",
    "usepam",
    "pamservicename",
    "kbdinteractiveauthentication",
    "challengeresponseauthentication",
    "permitemptypasswords",
    "allowgroups",
    "denygroups",
    "allowtcpforwarding",
    "allowstreamlocalforwarding",
    "allowagentforwarding",
    "disableforwarding",
    "gatewayports",
    "permitopen",
    "permitlisten",
    "streamlocalbindunlink",
    "permittty",
    "x11forwarding",
    "printmotd",
    "printlastlog",
    "permituserenvironment",
    "exposeauthinfo",
    "setenv",
    "clientaliveinterval",
    "clientalivecountmax",
    "channeltimeout",
    "unusedconnectiontimeout",
    "authorizedkeyscommand",
    "authorizedkeyscommanduser",
    "authorizedprincipalscommand",
    "authorizedprincipalscommanduser",
    "syslogfacility",
    "include",
    "hostbasedacceptedkeytypes",
    "moduli",
    "addressfamily",
    "requiredrsasize",
    "streamlocalbindmask",
    "tcpkeepalive",
    "authenticationmethods",
    "revokedkeys",
    "trustedusercakeys",
    "authorizedprincipalsfile",
    "hostcertificate",
    "casignaturealgorithms",
    "persourcemaxstartups",
    "persourcenetblocksize",
    "persourcepenalties",
    "persourcepenaltyexemptlist",
    "pubkeyauthoptions",
    "hostkeyagent",
    "securitykeyprovider",
];

/// A keyword sshd_config knows.
pub(crate) fn known(kw: &str) -> bool {
    OWN.contains(&kw) || DEPRECATED.contains(&kw) || OTHER.iter().any(|(k, _)| *k == kw)
}

/// Allowed inside a Match block.
pub(super) fn match_allowed(kw: &str) -> bool {
    MATCH_ALLOWED.contains(&kw)
}

/// "Deprecated" or "Unsupported" for keywords sluiced ignores.
pub(super) fn warning(kw: &str) -> Option<&'static str> {
    if DEPRECATED.contains(&kw) {
        Some("Deprecated")
    } else if OTHER.iter().any(|(k, _)| *k == kw) || kw == "hostbasedacceptedkeytypes" {
        Some("Unsupported")
    } else {
        None
    }
}

/// The keyword an alias stands for.
pub(crate) fn canonical(kw: &str) -> &str {
    match kw {
        "challengeresponseauthentication" => "kbdinteractiveauthentication",
        "pubkeyacceptedkeytypes" => "pubkeyacceptedalgorithms",
        "hostbasedacceptedkeytypes" => "hostbasedacceptedalgorithms",
        "moduli" => "modulifile",
        k => k,
    }
}
