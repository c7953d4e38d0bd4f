//! CanonicalizeHostname (ssh_config(5)): a short name is tried under each
//! CanonicalDomains suffix, as a fully qualified name (`name.suffix.`),
//! and the first that resolves becomes the host name; the configuration is
//! then read again for it (resolve.rs's final pass, where `Match canonical`
//! holds). Names with more than CanonicalizeMaxDots dots (default 1) and
//! address literals are left alone; a name ending in `.` is already
//! canonical. When no suffix resolves, CanonicalizeFallbackLocal (default
//! yes) keeps the name as typed, else it is an error.

use std::collections::HashMap;
use std::net::ToSocketAddrs;

/// The canonical name for `host`, None to keep it, or ssh's error.
pub fn canonicalize(
    host: &str,
    map: &HashMap<String, Vec<String>>,
) -> Result<Option<String>, Unresolved> {
    let first = |k: &str| map.get(k).and_then(|v| v.first()).map(String::as_str);
    if host.parse::<std::net::IpAddr>().is_ok() {
        return Ok(None);
    }
    if let Some(stripped) = host.strip_suffix('.') {
        crate::log!(
            Debug1,
            "Canonicalized DNS aliased hostname \"{host}\" => \"{stripped}\""
        );
        return Ok(Some(stripped.to_owned()));
    }
    let max_dots = first("canonicalizemaxdots")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(1);
    let dots = host.matches('.').count();
    if dots > max_dots {
        crate::log!(Debug2, "not canonicalizing {host} with {dots} dots");
        return Ok(None);
    }
    let domains: Vec<&str> = map
        .get("canonicaldomains")
        .map(|v| v.iter().map(String::as_str).collect())
        .unwrap_or_default();
    for d in &domains {
        let d = d.trim_end_matches('.');
        let fqdn = format!("{host}.{d}.");
        match (fqdn.as_str(), 0u16)
            .to_socket_addrs()
            .map(|mut a| a.next())
        {
            Ok(Some(_)) => {
                return Ok(Some(format!("{host}.{d}").to_ascii_lowercase()));
            }
            Ok(None) => {}
            Err(e) => crate::log!(Debug1, "Could not resolve hostname {fqdn}: {e}"),
        }
    }
    let fallback = first("canonicalizefallbacklocal")
        .and_then(crate::config::yes_no)
        .unwrap_or(true);
    if fallback || domains.is_empty() {
        crate::log!(Debug2, "host {host} not found in any suffix");
        Ok(None)
    } else {
        Err(Unresolved {
            host: host.to_owned(),
        })
    }
}

/// No CanonicalDomains suffix resolved and CanonicalizeFallbackLocal is
/// off: `Could not resolve host "HOST"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unresolved {
    /// The name as it stood.
    pub host: String,
}

impl std::fmt::Display for Unresolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Could not resolve host \"{}\"", self.host)
    }
}

impl std::error::Error for Unresolved {}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(kv: &[(&str, &[&str])]) -> HashMap<String, Vec<String>> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
            .collect()
    }

    #[test]
    fn left_alone_fully_qualified_or_failing() {
        let m = map(&[("canonicaldomains", &["invalid"])]);
        assert_eq!(canonicalize("10.0.0.1", &m).unwrap(), None);
        assert_eq!(canonicalize("a.b.c", &m).unwrap(), None);
        assert_eq!(
            canonicalize("web.example.com.", &m).unwrap(),
            Some("web.example.com".into())
        );
        assert_eq!(canonicalize("nosuchhost", &m).unwrap(), None);
        let strict = map(&[
            ("canonicaldomains", &["invalid"]),
            ("canonicalizefallbacklocal", &["no"]),
        ]);
        assert_eq!(
            canonicalize("nosuchhost", &strict).unwrap_err().to_string(),
            "Could not resolve host \"nosuchhost\""
        );
    }
}
