//! Checking values at load (ssh's error words) and formatting them as
//! `ssh -G` prints them: yes/no flags, multi-state keywords printed by
//! their first name (`yes` shows as `true`), times in seconds, ports.

use crate::config::error::ValueError;

/// yes/no keywords ssh prints as `yes`/`no`.
pub const FLAGS: &[&str] = &[
    "batchmode",
    "canonicalizefallbacklocal",
    "checkhostip",
    "enablehwcompression",
    "enablesshkeysign",
    "clearallforwardings",
    "exitonforwardfailure",
    "forwardx11",
    "forwardx11trusted",
    "gatewayports",
    "gssapiauthentication",
    "gssapikeyexchange",
    "gssapidelegatecredentials",
    "gssapitrustdns",
    "gssapirenewalforcesrekey",
    "hashknownhosts",
    "hostbasedauthentication",
    "identitiesonly",
    "kbdinteractiveauthentication",
    "challengeresponseauthentication",
    "nohostauthenticationforlocalhost",
    "passwordauthentication",
    "permitlocalcommand",
    "proxyusefdpass",
    "stdinnull",
    "forkafterauthentication",
    "streamlocalbindunlink",
    "tcpkeepalive",
    "visualhostkey",
    "enableescapecommandline",
    "metrics",
];

/// Multi-state keywords: accepted words and what -G prints for each.
const MULTI: &[(&str, &[(&str, &str)])] = &[
    (
        "addressfamily",
        &[("inet", "inet"), ("inet6", "inet6"), ("any", "any")],
    ),
    (
        "canonicalizehostname",
        &[
            ("yes", "true"),
            ("true", "true"),
            ("no", "false"),
            ("false", "false"),
            ("always", "always"),
        ],
    ),
    // `auto` is sluice's own (README, "Compression").
    (
        "compression",
        &[
            ("yes", "yes"),
            ("true", "yes"),
            ("no", "no"),
            ("false", "no"),
            ("auto", "auto"),
        ],
    ),
    (
        "controlmaster",
        &[
            ("yes", "true"),
            ("true", "true"),
            ("no", "false"),
            ("false", "false"),
            ("auto", "auto"),
            ("ask", "ask"),
            ("autoask", "autoask"),
        ],
    ),
    (
        "pubkeyauthentication",
        &[
            ("yes", "true"),
            ("true", "true"),
            ("no", "false"),
            ("false", "false"),
            ("host-bound", "host-bound"),
            ("unbound", "unbound"),
        ],
    ),
    (
        "requesttty",
        &[
            ("yes", "true"),
            ("true", "true"),
            ("no", "false"),
            ("false", "false"),
            ("force", "force"),
            ("auto", "auto"),
        ],
    ),
    (
        "sessiontype",
        &[
            ("none", "none"),
            ("subsystem", "subsystem"),
            ("default", "default"),
        ],
    ),
    (
        "stricthostkeychecking",
        &[
            ("yes", "true"),
            ("true", "true"),
            ("no", "false"),
            ("false", "false"),
            ("off", "false"),
            ("ask", "ask"),
            ("accept-new", "accept-new"),
        ],
    ),
    (
        "tunnel",
        &[
            ("yes", "point-to-point"),
            ("true", "point-to-point"),
            ("point-to-point", "point-to-point"),
            ("ethernet", "ethernet"),
            ("no", "false"),
            ("false", "false"),
        ],
    ),
    (
        "verifyhostkeydns",
        &[
            ("yes", "true"),
            ("true", "true"),
            ("no", "false"),
            ("false", "false"),
            ("ask", "ask"),
        ],
    ),
    (
        "updatehostkeys",
        &[
            ("yes", "true"),
            ("true", "true"),
            ("no", "false"),
            ("false", "false"),
            ("ask", "ask"),
        ],
    ),
];

/// Time keywords (printed in seconds).
const TIMES: &[&str] = &[
    "connecttimeout",
    "serveraliveinterval",
    "forwardx11timeout",
    "metricsinterval",
];
/// Integer keywords.
const INTS: &[&str] = &[
    "connectionattempts",
    "serveralivecountmax",
    "numberofpasswordprompts",
    "canonicalizemaxdots",
    "requiredrsasize",
];

/// A port number or service name (`ssh`), as a2port does.
pub fn port(v: &str) -> Option<u16> {
    if let Ok(n) = v.parse::<u16>() {
        return (n > 0).then_some(n);
    }
    let name = std::ffi::CString::new(v).ok()?;
    crate::sys::netdb::tcp_port(&name)
}

/// Checks a keyword's arguments; the error is ssh's (after "FILE line N: ").
pub fn check(kw: &str, args: &[String]) -> Result<(), ValueError> {
    let unsupported = || ValueError::UnsupportedOption {
        value: args.first().cloned().unwrap_or_default(),
    };
    let v = args.first().map(String::as_str).unwrap_or_default();
    let low = v.to_ascii_lowercase();
    if FLAGS.contains(&kw) && super::super::yes_no(v).is_none() {
        return Err(unsupported());
    }
    if let Some((_, words)) = MULTI.iter().find(|(k, _)| *k == kw) {
        if !words.iter().any(|(w, _)| *w == low) {
            return Err(unsupported());
        }
    }
    if TIMES.contains(&kw) && low != "none" && super::super::parse_time(v).is_none() {
        return Err(ValueError::InvalidTime);
    }
    if INTS.contains(&kw) && v.parse::<u32>().is_err() {
        return Err(ValueError::InvalidInteger {
            value: v.to_owned(),
        });
    }
    if kw == "syslogfacility"
        && !matches!(
            low.as_str(),
            "daemon"
                | "user"
                | "auth"
                | "authpriv"
                | "local0"
                | "local1"
                | "local2"
                | "local3"
                | "local4"
                | "local5"
                | "local6"
                | "local7"
        )
    {
        return Err(ValueError::LogFacility {
            value: v.to_owned(),
        });
    }
    if kw == "ipqos" {
        super::ipqos::parse(&args.join(" "))?;
    }
    if kw == "port" && port(v).is_none() {
        return Err(ValueError::BadPort {
            value: v.to_owned(),
        });
    }
    Ok(())
}

/// A single-valued keyword as -G prints it.
pub fn show(kw: &str, v: &str) -> String {
    let low = v.to_ascii_lowercase();
    if FLAGS.contains(&kw) {
        return match super::super::yes_no(v) {
            Some(true) => "yes".into(),
            _ => "no".into(),
        };
    }
    if let Some((_, words)) = MULTI.iter().find(|(k, _)| *k == kw) {
        return words
            .iter()
            .find(|(w, _)| *w == low)
            .map_or_else(|| v.to_owned(), |(_, s)| (*s).to_owned());
    }
    if TIMES.contains(&kw) {
        return super::super::parse_time(v).map_or_else(|| v.to_owned(), |t| t.to_string());
    }
    match kw {
        "port" => port(v).map_or_else(|| v.to_owned(), |p| p.to_string()),
        "loglevel" | "fingerprinthash" | "syslogfacility" => v.to_ascii_uppercase(),
        "forwardagent" => match super::super::yes_no(v) {
            Some(true) => "yes".into(),
            Some(false) => "no".into(),
            None => v.to_owned(),
        },
        "addkeystoagent" => match (super::super::yes_no(v), super::super::parse_time(v)) {
            (Some(true), _) => "true".into(),
            (Some(false), _) => "false".into(),
            (None, Some(t)) => t.to_string(),
            _ => low,
        },
        "controlpersist" => match (super::super::yes_no(v), super::super::parse_time(v)) {
            (Some(true), _) => "yes".into(),
            (Some(false), _) => "no".into(),
            (None, Some(0)) => "yes".into(),
            (None, Some(t)) => t.to_string(),
            _ => v.to_owned(),
        },
        "escapechar" => match v.as_bytes() {
            [b'^', c] => format!("\\^{}", *c as char),
            _ => v.to_owned(),
        },
        _ => v.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_and_shows_like_ssh() {
        assert_eq!(
            check("batchmode", &["maybe".into()])
                .unwrap_err()
                .to_string(),
            "unsupported option \"maybe\"."
        );
        assert_eq!(
            check("port", &["abc".into()]).unwrap_err().to_string(),
            "Bad port 'abc'."
        );
        assert_eq!(
            check("connecttimeout", &["x".into()])
                .unwrap_err()
                .to_string(),
            "invalid time value."
        );
        assert_eq!(
            check("connecttimeout", &["x".into()]),
            Err(ValueError::InvalidTime)
        );
        assert!(matches!(
            check("ipqos", &["af99".into()]),
            Err(ValueError::IpQos(_))
        ));
        assert!(matches!(
            check("connectionattempts", &["many".into()]),
            Err(ValueError::InvalidInteger { value }) if value == "many"
        ));
        assert!(check("stricthostkeychecking", &["accept-new".into()]).is_ok());
        assert_eq!(show("stricthostkeychecking", "yes"), "true");
        assert_eq!(show("stricthostkeychecking", "off"), "false");
        assert_eq!(show("batchmode", "true"), "yes");
        assert_eq!(show("tunnel", "yes"), "point-to-point");
        assert_eq!(show("serveraliveinterval", "1m"), "60");
        assert_eq!(show("port", "ssh"), "22");
        assert_eq!(show("loglevel", "debug3"), "DEBUG3");
        assert_eq!(show("addkeystoagent", "1h"), "3600");
        assert_eq!(show("controlpersist", "10m"), "600");
        assert_eq!(show("escapechar", "^A"), "\\^A");
    }
}
