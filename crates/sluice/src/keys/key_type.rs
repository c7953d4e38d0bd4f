//! sshd's names of key types in log lines, shared by certificates
//! (cert.rs), revocation and the client's and server's messages.

/// sshd's name of a key's type in log lines (sshkey_type).
pub fn sshd_key_type(key_blob: &[u8]) -> &'static str {
    match sluice_proto::crypto::hostkey::blob_key_type(key_blob).unwrap_or_default() {
        "ssh-ed25519" => "ED25519",
        "ssh-rsa" => "RSA",
        t if t.starts_with("ecdsa-sha2-") => "ECDSA",
        "sk-ssh-ed25519@openssh.com" => "ED25519-SK",
        "sk-ecdsa-sha2-nistp256@openssh.com" => "ECDSA-SK",
        _ => "unknown",
    }
}
