//! The ssh_config keywords sluice parses but does not act on, and what it
//! does about each (issue 43: never accepted and ignored). Every keyword
//! the parser takes is either in `SUPPORTED` (config/ssh.rs: acted on, a
//! test shows it) or here with one of three answers:
//!
//! - `Refuse`: a value other than the inert ones stops sluice before it
//!   connects, naming the file and line (the user asked for something whose
//!   absence would change what the connection does or trusts);
//! - `Warn`: ssh itself goes on without the feature when it is not
//!   available (no X11 display, no Kerberos ticket, no agent), so sluice
//!   goes on too but says so on stderr, once, with the file and line;
//! - `Inert`: the keyword only matters to another one that is itself
//!   refused or warned of (ForwardX11Timeout without X11), so any value is
//!   taken and `-G` prints it.
//!
//! The check runs on the settings resolved for the destination, so a line
//! in a `Host` block that does not apply says nothing. `IgnoreUnknown`
//! patterns silence these as they silence unknown keywords.

/// What sluice does with a keyword it does not implement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// Stop before connecting.
    Refuse,
    /// Go on, saying what is not done.
    Warn,
    /// Any value: it only matters to a refused or warned keyword.
    Inert,
}

/// One keyword's limit: values that match what sluice does anyway, the
/// answer for any other, and why (said in the message and in the man page).
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    /// The keyword, lower case.
    pub kw: &'static str,
    /// Values (lower case) that ask for nothing sluice lacks.
    pub inert: &'static [&'static str],
    /// What any other value gets.
    pub how: How,
    /// Why, in the message and the man page.
    pub why: &'static str,
}

impl Limit {
    /// Whether ssh would have used the feature here: without an X display
    /// or a Kerberos ticket ssh says nothing (Debian's own ssh_config turns
    /// GSSAPIAuthentication on for every host), so neither does sluice
    /// unless the command line asked.
    pub fn would_matter(&self) -> bool {
        match self.kw {
            "forwardx11" => std::env::var_os("DISPLAY").is_some_and(|d| !d.is_empty()),
            "gssapiauthentication" | "gssapikeyexchange" => kerberos_ticket(),
            _ => true,
        }
    }
}

/// A Kerberos credential cache as libkrb5 finds it by default.
fn kerberos_ticket() -> bool {
    if std::env::var_os("KRB5CCNAME").is_some_and(|v| !v.is_empty()) {
        return true;
    }
    let uid = rustix::process::getuid().as_raw();
    std::path::Path::new(&format!("/tmp/krb5cc_{uid}")).exists()
}

const NO: &[&str] = &["no", "false"];

const fn refuse(kw: &'static str, inert: &'static [&'static str], why: &'static str) -> Limit {
    Limit {
        kw,
        inert,
        how: How::Refuse,
        why,
    }
}

const fn warn(kw: &'static str, inert: &'static [&'static str], why: &'static str) -> Limit {
    Limit {
        kw,
        inert,
        how: How::Warn,
        why,
    }
}

const fn inert(kw: &'static str, why: &'static str) -> Limit {
    Limit {
        kw,
        inert: &[],
        how: How::Inert,
        why,
    }
}

/// The table (lower-case keywords).
pub(crate) const LIMITS: &[Limit] = &[
    warn("canonicalizepermittedcnames", &["none"], "CNAMEs are not followed: a name is canonical under the first CanonicalDomains suffix it resolves with"),
    warn("enableescapecommandline", NO, "the ~C command line is not offered; give forwardings on the command line"),
    warn("forwardx11", NO, "X11 forwarding is not supported by sluice (-X, -Y, ForwardX11): not requested"),
    inert("forwardx11trusted", "used only by ForwardX11"),
    inert("forwardx11timeout", "used only by ForwardX11"),
    inert("xauthlocation", "used only by ForwardX11"),
    warn("gssapiauthentication", NO, "GSSAPI authentication is not supported by sluice (-K, GSSAPIAuthentication): not tried"),
    warn("gssapikeyexchange", NO, "GSSAPI key exchange is not supported by sluice"),
    inert("gssapidelegatecredentials", "used only by GSSAPIAuthentication"),
    inert("gssapitrustdns", "used only by GSSAPIAuthentication"),
    inert("gssapirenewalforcesrekey", "used only by GSSAPIKeyExchange"),
    inert("gssapikexalgorithms", "used only by GSSAPIKeyExchange"),
    inert("gssapiclientidentity", "used only by GSSAPIAuthentication"),
    inert("gssapiserveridentity", "used only by GSSAPIAuthentication"),
    warn("hostbasedauthentication", NO, "hostbased authentication is not supported by sluice: not tried"),
    inert("hostbasedacceptedalgorithms", "used only by HostbasedAuthentication"),
    inert("enablesshkeysign", "used only by HostbasedAuthentication"),
    warn("pkcs11provider", &["none"], "PKCS#11 tokens are not supported by sluice (-I, PKCS11Provider): its keys are not offered; load them into ssh-agent with ssh-add -s"),
    warn("tunnel", NO, "tun/tap forwarding is not supported by sluice (-w, Tunnel): not requested"),
    inert("tunneldevice", "used only by Tunnel"),
    warn("verifyhostkeydns", NO, "SSHFP records are not looked up; the host key is checked against known_hosts"),
    warn("obscurekeystroketiming", NO, "keystroke timing is not obscured"),
    warn("fingerprinthash", &["sha256"], "fingerprints are shown as SHA256"),
    warn("logverbose", &["none"], "LogVerbose is not supported; use -v"),
    refuse("proxyusefdpass", NO, "a ProxyCommand's descriptor is not received; the command must relay the connection on its standard input and output"),
    warn("requiredrsasize", &[], "RSA keys under 2048 bits are refused whatever it says; a larger minimum is not enforced"),
    refuse("protocol", &["2"], "sluice speaks SSH-2 only"),
];

/// The limit on `kw`, if it has one.
pub fn limit(kw: &str) -> Option<&'static Limit> {
    LIMITS.iter().find(|l| l.kw == kw)
}

/// What a resolved keyword's value calls for: None when it is inert, else
/// the limit that speaks.
pub fn applies(kw: &str, value: &str) -> Option<&'static Limit> {
    let l = limit(kw)?;
    let v = value.to_ascii_lowercase();
    // aws-lc-rs verifies no RSA key under 2048 bits, so any size up to that
    // is already required.
    if kw == "requiredrsasize" && v.parse::<u32>().is_ok_and(|n| n <= 2048) {
        return None;
    }
    (l.how != How::Inert && !l.inert.contains(&v.as_str())).then_some(l)
}

/// The message for a line: ssh's "unsupported option" words, the reason,
/// and the way out.
pub fn message(l: &Limit, file: &str, line: usize, value: &str) -> String {
    let at = if file == "command-line" {
        "command-line".to_owned()
    } else {
        format!("{file} line {line}")
    };
    let inert = l.inert.first().copied().unwrap_or("no");
    match l.how {
        How::Refuse => format!(
            "{at}: unsupported option \"{} {value}\": {}. Remove it, set it to {inert}, or add \
             \"IgnoreUnknown {}\" above it.",
            l.kw, l.why, l.kw
        ),
        _ => format!("{at}: unsupported option \"{} {value}\": {}.", l.kw, l.why),
    }
}

/// A keyword in effect for the destination that sluice refuses or warns of.
#[derive(Debug, Clone)]
pub struct Limited {
    /// The keyword's limit.
    pub limit: &'static Limit,
    /// Set by `-o` or a flag (then a warning is always said aloud).
    pub command_line: bool,
    /// What to say, with the file and line.
    pub message: String,
}

/// Says what the destination's settings ask for that sluice lacks: a
/// refusal is the error returned; a warning goes to stderr when the
/// command line asked or ssh would have used the feature here, else to -v.
pub fn report(limited: &[Limited]) -> Result<(), Refused> {
    if let Some(r) = limited.iter().find(|l| l.limit.how == How::Refuse) {
        return Err(Refused(r.clone()));
    }
    for l in limited {
        if l.command_line || l.limit.would_matter() {
            crate::log!(Info, "Warning: {}", l.message);
        } else {
            crate::log!(Debug1, "{}", l.message);
        }
    }
    Ok(())
}

/// A keyword in effect that sluice refuses: it stops before connecting.
/// `Display` is the message (file, line, why, the way out).
#[derive(Debug, Clone)]
pub struct Refused(pub Limited);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl std::error::Error for Refused {}
