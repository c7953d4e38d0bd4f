//! OpenSSH's algorithm list syntax (ssh_config(5) Ciphers): a plain list
//! replaces the default, `+list` appends, `-list` removes (wildcards
//! allowed), `^list` moves to the front.

use crate::keys::pattern::match_pattern_list;

/// Key and signature algorithms OpenSSH knows and sluice does not
/// implement (DSA, which OpenSSH 10 dropped too; WebAuthn signatures,
/// which only browsers make): named in a list, they are left out.
const UNIMPLEMENTED_KEY_ALGS: &[&str] = &[
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
) -> Result<Vec<String>, String> {
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
            return Err(format!("Bad SSH2 {what} spec '{spec}'."));
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
        return Err(format!(
            "{what} '{spec}': sluice does not implement {}",
            left_out.join(", ")
        ));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// OpenSSH 10.x's defaults as sshd_config(5) and ssh_config(5) print
    /// them. Only KexAlgorithms differs between the two (sshd 10.0 dropped
    /// finite-field DH from its default).
    const SSHD_KEX: &str = "mlkem768x25519-sha256,sntrup761x25519-sha512,\
sntrup761x25519-sha512@openssh.com,curve25519-sha256,curve25519-sha256@libssh.org,\
ecdh-sha2-nistp256,ecdh-sha2-nistp384,ecdh-sha2-nistp521";
    const SSH_KEX_DH: &str = "diffie-hellman-group-exchange-sha256,\
diffie-hellman-group16-sha512,diffie-hellman-group18-sha512,diffie-hellman-group14-sha256";
    const CIPHERS: &str = "chacha20-poly1305@openssh.com,aes128-gcm@openssh.com,\
aes256-gcm@openssh.com,aes128-ctr,aes192-ctr,aes256-ctr";
    const MACS: &str = "umac-64-etm@openssh.com,umac-128-etm@openssh.com,\
hmac-sha2-256-etm@openssh.com,hmac-sha2-512-etm@openssh.com,hmac-sha1-etm@openssh.com,\
umac-64@openssh.com,umac-128@openssh.com,hmac-sha2-256,hmac-sha2-512,hmac-sha1";
    /// HostKeyAlgorithms and PubkeyAcceptedAlgorithms alike.
    const KEY_ALGS: &str = "ssh-ed25519-cert-v01@openssh.com,\
ecdsa-sha2-nistp256-cert-v01@openssh.com,ecdsa-sha2-nistp384-cert-v01@openssh.com,\
ecdsa-sha2-nistp521-cert-v01@openssh.com,sk-ssh-ed25519-cert-v01@openssh.com,\
sk-ecdsa-sha2-nistp256-cert-v01@openssh.com,rsa-sha2-512-cert-v01@openssh.com,\
rsa-sha2-256-cert-v01@openssh.com,ssh-ed25519,ecdsa-sha2-nistp256,ecdsa-sha2-nistp384,\
ecdsa-sha2-nistp521,sk-ssh-ed25519@openssh.com,sk-ecdsa-sha2-nistp256@openssh.com,\
rsa-sha2-512,rsa-sha2-256";

    /// A documented list without what sluice does not implement.
    fn implemented(doc: &str) -> Vec<String> {
        doc.split(',')
            .filter(|a| !UNIMPLEMENTED_KEY_ALGS.contains(a))
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn defaults_are_openssh_10s() {
        use sluice_proto::crypto::{cipher, hostkey, kex};
        let ssh_kex = format!("{SSHD_KEX},{SSH_KEX_DH}");
        // The engine's lists: the client's defaults.
        assert_eq!(kex::DEFAULT_KEX, implemented(&ssh_kex));
        assert_eq!(kex::SERVER_DEFAULT_KEX, implemented(SSHD_KEX));
        assert_eq!(cipher::DEFAULT_CIPHERS, implemented(CIPHERS));
        assert_eq!(cipher::DEFAULT_MACS, implemented(MACS));
        assert_eq!(hostkey::DEFAULT_SIG_ALGS, implemented(KEY_ALGS));
        // sluiced's, as `sluiced -T` prints them (Ciphers: the CPU's
        // order, config/cipher_order.rs).
        let d = crate::config::sshd::ServerConfig::default();
        assert_eq!(d.kex, implemented(SSHD_KEX));
        assert_eq!(d.macs, implemented(MACS));
        assert_eq!(d.host_key_algorithms, implemented(KEY_ALGS));
        assert_eq!(d.pubkey_algorithms, implemented(KEY_ALGS));
        let mut ciphers = d.ciphers.clone();
        ciphers.sort_unstable();
        let mut doc = implemented(CIPHERS);
        doc.sort_unstable();
        assert_eq!(ciphers, doc);
        // Nothing is left out of the key lists.
        assert_eq!(hostkey::DEFAULT_SIG_ALGS.join(","), KEY_ALGS);
    }

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
            resolve("nope", &d, &s, "cipher").unwrap_err(),
            "Bad SSH2 cipher spec 'nope'."
        );
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
            .contains("sluice does not implement 3des-cbc"));
        // Names outside the default that are implemented (MACs: SHA-1,
        // MD5, UMAC) are accepted with every modifier.
        let s = ["a", "b", "c", "x", "y"];
        assert_eq!(resolve("y,x", &d, &s, "MAC").unwrap(), ["y", "x"]);
        assert_eq!(resolve("+y", &d, &s, "MAC").unwrap(), ["a", "b", "c", "y"]);
        assert_eq!(resolve("^x", &d, &s, "MAC").unwrap(), ["x", "a", "b", "c"]);
        assert_eq!(resolve("-a,x", &d, &s, "MAC").unwrap(), ["b", "c"]);
    }
}
