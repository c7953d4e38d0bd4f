//! OpenSSH's algorithm list syntax (ssh_config(5) Ciphers): a plain list
//! replaces the default, `+list` appends, `-list` removes (wildcards
//! allowed), `^list` moves to the front.

use crate::keys::pattern::match_pattern_list;

/// Key and signature algorithms OpenSSH knows and sluice does not
/// implement (DSA, which OpenSSH 10 dropped too; WebAuthn signatures,
/// which only browsers make): named in a list, they are left out.
pub(super) const UNIMPLEMENTED_KEY_ALGS: &[&str] = &[
    "ssh-dss",
    "ssh-dss-cert-v01@openssh.com",
    "webauthn-sk-ecdsa-sha2-nistp256@openssh.com",
];

/// Ciphers OpenSSH 9.2 knows and sluice does not implement (CBC modes):
/// named in a list, they are left out too, so an sshd_config written for
/// OpenSSH keeps working with what sluice has.
const UNIMPLEMENTED_TRANSPORT_ALGS: &[&str] = &[
    "3des-cbc",
    "aes128-cbc",
    "aes192-cbc",
    "aes256-cbc",
    "rijndael-cbc@lysator.liu.se",
];

/// Resolves `spec` against `default`, allowing only names in `supported`.
/// `what` names the keyword for errors (`cipher`, `MAC`, `KexAlgorithms`).
pub fn resolve(
    spec: &str,
    default: &[&str],
    supported: &[&str],
    what: &str,
) -> Result<Vec<String>, AlgorithmError> {
    let own = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let mut list = own(default);
    if let Some(rest) = spec.strip_prefix('-') {
        list.retain(|a| match_pattern_list(a, rest) != Some(true));
        return Ok(list);
    }
    let (mode, rest) = match spec.chars().next() {
        Some('+') => ('+', &spec[1..]),
        Some('^') => ('^', &spec[1..]),
        _ => (' ', spec),
    };
    let mut named = Vec::new();
    let mut left_out = Vec::new();
    for n in rest.split(',').filter(|n| !n.is_empty()) {
        let hits: Vec<&str> = supported
            .iter()
            .copied()
            .filter(|s| match_pattern_list(s, n) == Some(true))
            .collect();
        // A wildcard that matches nothing we implement adds nothing (as
        // `ssh-rsa*` in OpenSSH's regress configs), and so does an
        // algorithm OpenSSH knows that sluice does not implement: leaving
        // one out can only offer less. An unknown name is an error.
        let openssh_only =
            UNIMPLEMENTED_KEY_ALGS.contains(&n) || UNIMPLEMENTED_TRANSPORT_ALGS.contains(&n);
        if hits.is_empty() && !n.contains(['*', '?']) && !openssh_only {
            return Err(AlgorithmError::BadSpec {
                what: what.to_owned(),
                spec: spec.to_owned(),
            });
        }
        if hits.is_empty() && UNIMPLEMENTED_TRANSPORT_ALGS.contains(&n) {
            left_out.push(n);
        }
        for h in hits {
            if !named.iter().any(|x: &String| x == h) {
                named.push(h.to_owned());
            }
        }
    }
    // A list of only such names would leave nothing to negotiate: say so
    // now rather than fail every key exchange.
    if mode == ' ' && named.is_empty() && !left_out.is_empty() {
        return Err(AlgorithmError::Unimplemented {
            what: what.to_owned(),
            spec: spec.to_owned(),
            names: left_out.into_iter().map(str::to_owned).collect(),
        });
    }
    Ok(match mode {
        '+' => {
            list.extend(named.into_iter().filter(|n| !default.contains(&n.as_str())));
            list
        }
        '^' => {
            list.retain(|a| !named.contains(a));
            named.extend(list);
            named
        }
        _ => named,
    })
}

/// An algorithm list that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlgorithmError {
    /// A name neither implemented nor known to OpenSSH:
    /// `Bad SSH2 WHAT spec 'SPEC'.`
    BadSpec {
        /// The keyword's name in the message (`cipher`, `Mac`, ...).
        what: String,
        /// The list as written.
        spec: String,
    },
    /// Only names OpenSSH has and sluice does not, leaving nothing to
    /// negotiate: `WHAT 'SPEC': sluice does not implement NAMES`.
    Unimplemented {
        /// The keyword's name in the message.
        what: String,
        /// The list as written.
        spec: String,
        /// The names left out.
        names: Vec<String>,
    },
}

impl std::fmt::Display for AlgorithmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AlgorithmError::BadSpec { what, spec } => write!(f, "Bad SSH2 {what} spec '{spec}'."),
            AlgorithmError::Unimplemented { what, spec, names } => write!(
                f,
                "{what} '{spec}': sluice does not implement {}",
                names.join(", ")
            ),
        }
    }
}

impl std::error::Error for AlgorithmError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modifiers() {
        let d = ["a", "b", "c"];
        let s = ["a", "b", "c", "x"];
        assert_eq!(resolve("x,a", &d, &s, "cipher").unwrap(), ["x", "a"]);
        assert_eq!(
            resolve("+x", &d, &s, "cipher").unwrap(),
            ["a", "b", "c", "x"]
        );
        assert_eq!(resolve("-b*", &d, &s, "cipher").unwrap(), ["a", "c"]);
        assert_eq!(resolve("^c", &d, &s, "cipher").unwrap(), ["c", "a", "b"]);
        assert_eq!(
            resolve("nope", &d, &s, "cipher").unwrap_err().to_string(),
            "Bad SSH2 cipher spec 'nope'."
        );
        assert!(matches!(
            resolve("nope", &d, &s, "cipher"),
            Err(AlgorithmError::BadSpec { .. })
        ));
        assert_eq!(resolve("a,zz*", &d, &s, "cipher").unwrap(), ["a"]);
        assert_eq!(resolve("ssh-dss,b", &d, &s, "key").unwrap(), ["b"]);
        // OpenSSH's names sluice does not implement are left out; unknown
        // ones are still errors.
        assert_eq!(
            resolve("aes128-cbc,a,3des-cbc", &d, &s, "cipher").unwrap(),
            ["a"]
        );
        assert!(resolve("diffie-hellman-group99-sha1,a", &d, &s, "KexAlgorithms").is_err());
        assert!(resolve("3des-cbc", &d, &s, "cipher")
            .unwrap_err()
            .to_string()
            .contains("sluice does not implement 3des-cbc"));
        assert!(matches!(
            resolve("3des-cbc", &d, &s, "cipher"),
            Err(AlgorithmError::Unimplemented { names, .. }) if names == ["3des-cbc"]
        ));
        // Names outside the default that are implemented (MACs: SHA-1,
        // MD5, UMAC) are accepted with every modifier.
        let s = ["a", "b", "c", "x", "y"];
        assert_eq!(resolve("y,x", &d, &s, "MAC").unwrap(), ["y", "x"]);
        assert_eq!(resolve("+y", &d, &s, "MAC").unwrap(), ["a", "b", "c", "y"]);
        assert_eq!(resolve("^x", &d, &s, "MAC").unwrap(), ["x", "a", "b", "c"]);
        assert_eq!(resolve("-a,x", &d, &s, "MAC").unwrap(), ["b", "c"]);
    }
}
