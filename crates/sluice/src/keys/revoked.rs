//! RevokedKeys (sshd_config(5)) and RevokedHostKeys (ssh_config(5)): a
//! file of public keys, one per line, as OpenSSH's sshkey_in_file reads it
//! (blank lines, comments and lines that are no key are skipped), or a
//! binary KRL (`ssh-keygen -k`, keys/krl.rs), told apart by its magic. A
//! file that cannot be read or parsed is an error, which denies every key
//! as in sshd and ssh. Also the plain key lists of TrustedUserCAKeys.

use super::cert::Cert;
use super::krl::{Krl, KrlError};
use std::path::Path;

/// Why a key file or revocation list is unusable (every key is then
/// refused).
#[derive(Debug)]
pub enum RevokedError {
    /// The file cannot be read; shown in OpenSSH's words.
    Read(std::io::Error),
    /// TrustedUserCAKeys names a KRL, which lists no keys to trust.
    KrlNotTrust,
    /// The KRL does not parse.
    Krl(KrlError),
}

impl std::fmt::Display for RevokedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RevokedError::Read(e) => f.write_str(&crate::io_error::describe_io_error(e)),
            RevokedError::KrlNotTrust => {
                f.write_str("a binary KRL lists revocations, not keys to trust")
            }
            RevokedError::Krl(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for RevokedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RevokedError::Read(e) => Some(e),
            RevokedError::Krl(e) => Some(e),
            RevokedError::KrlNotTrust => None,
        }
    }
}

impl From<KrlError> for RevokedError {
    fn from(e: KrlError) -> RevokedError {
        RevokedError::Krl(e)
    }
}

/// The first bytes of a binary key revocation list.
pub const KRL_MAGIC: &[u8] = super::krl::MAGIC;

/// Whether the file at `path` is a binary KRL (false when it cannot be read).
pub fn is_krl(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head == KRL_MAGIC)
}

/// Whether `key_blob` is listed in a file of keys (TrustedUserCAKeys); Err
/// when the file cannot be read or is a KRL (which lists no trust).
pub fn contains(path: &Path, key_blob: &[u8]) -> Result<bool, RevokedError> {
    let bytes = std::fs::read(path).map_err(RevokedError::Read)?;
    if bytes.starts_with(KRL_MAGIC) {
        return Err(RevokedError::KrlNotTrust);
    }
    Ok(listed(&String::from_utf8_lossy(&bytes), key_blob))
}

/// Whether a revocation file (key list or KRL) revokes the key `blob`, or
/// for a certificate `cert` (its blob's parse) the certificate itself (KRL
/// serial or key ID under its CA). The caller checks a certificate's plain
/// key and CA key as keys too. Err: the file is unusable; refuse the key.
pub fn is_revoked(path: &Path, blob: &[u8], cert: Option<&Cert>) -> Result<bool, RevokedError> {
    let bytes = std::fs::read(path).map_err(RevokedError::Read)?;
    if !bytes.starts_with(KRL_MAGIC) {
        return Ok(listed(&String::from_utf8_lossy(&bytes), blob));
    }
    let krl = Krl::parse(&bytes)?;
    Ok(krl.key_revoked(blob)
        || cert.is_some_and(|c| krl.cert_revoked(&c.ca, c.serial(), c.key_id())))
}

/// A RevokedKeys file that is a KRL must parse (checked at startup, so a
/// broken one is found then, not as every key refused).
pub fn check_krl(path: &Path) -> Result<(), KrlError> {
    match std::fs::read(path) {
        Ok(b) if b.starts_with(KRL_MAGIC) => Krl::parse(&b).map(|_| ()),
        _ => Ok(()),
    }
}

/// `key_blob` is one of the keys in `text`.
fn listed(text: &str, key_blob: &[u8]) -> bool {
    text.lines().any(|line| {
        let mut f = line.split_whitespace();
        let (Some(ty), Some(b64)) = (f.next(), f.next()) else {
            return false;
        };
        if ty.starts_with('#') {
            return false;
        }
        // The blob itself, so certificate lines match too (ssh-key 0.6
        // cannot read most certificates, see keys/cert.rs).
        super::known_hosts::base64_decode(b64).is_some_and(|b| b == key_blob)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::key_type::sshd_key_type;

    #[test]
    fn plain_key_lists() {
        let kp = sluice_proto::crypto::hostkey::KeyPair::generate_ed25519().unwrap();
        let blob = sluice_proto::crypto::hostkey::Signer::public_blob(&kp);
        let line = ssh_key::PublicKey::from_bytes(&blob)
            .unwrap()
            .to_openssh()
            .unwrap();
        let other = sluice_proto::crypto::hostkey::KeyPair::generate_ed25519().unwrap();
        let other = sluice_proto::crypto::hostkey::Signer::public_blob(&other);
        let text = format!("# revoked\n\nnot a key\n  {line} old laptop\n");
        assert!(listed(&text, &blob));
        assert!(!listed(&text, &other));
        assert!(!listed(&format!("#{line}\n"), &blob));
        assert_eq!(sshd_key_type(&blob), "ED25519");
        let dir = std::env::temp_dir().join(format!("sluice-krl-{}", std::process::id()));
        std::fs::write(&dir, [KRL_MAGIC, b"rest"].concat()).unwrap();
        assert!(is_krl(&dir));
        assert!(matches!(
            contains(&dir, &blob),
            Err(RevokedError::KrlNotTrust)
        ));
        assert!(matches!(
            is_revoked(&dir, &blob, None),
            Err(RevokedError::Krl(KrlError::Version(_)))
        ));
        assert!(matches!(check_krl(&dir), Err(KrlError::Version(_))));
        std::fs::write(&dir, &text).unwrap();
        assert!(!is_krl(&dir));
        assert!(matches!(contains(&dir, &blob), Ok(true)));
        std::fs::remove_file(&dir).unwrap();
        let e = contains(&dir, &blob).unwrap_err();
        assert!(matches!(&e, RevokedError::Read(io) if io.kind() == std::io::ErrorKind::NotFound));
        assert_eq!(e.to_string(), "No such file or directory");
    }
}
