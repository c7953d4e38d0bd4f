//! The default algorithm lists against OpenSSH 10.x's manual pages: the
//! engine's (the client's defaults) and sluiced's (`sluiced -T`). Beside
//! both algorithms.rs and sshd/, which it reads, so neither imports the other.

use super::algorithms::UNIMPLEMENTED_KEY_ALGS;

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
