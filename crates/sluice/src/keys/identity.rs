//! Private key files (OpenSSH's format; OpenSSL's PEM through pem_key):
//! loading (with a passphrase prompt for encrypted keys), conversion to the
//! engine's key pairs, fingerprints.

use super::error::{KeyError, LoadError};
use super::pem_key::PemError;
use crate::log;
use sluice_proto::crypto::hostkey::{KeyPair, Signer};
use ssh_key::private::KeypairData;
use ssh_key::{HashAlg, PrivateKey, PublicKey};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use zeroize::Zeroizing;

/// `SHA256:` fingerprint of a public key blob, as `ssh-keygen -l` prints it.
pub fn fingerprint_sha256(blob: &[u8]) -> String {
    match PublicKey::from_bytes(blob) {
        Ok(k) => k.fingerprint(HashAlg::Sha256).to_string(),
        Err(_) => "SHA256:?".to_owned(),
    }
}

/// Converts a decrypted ssh-key private key to an engine key pair.
pub fn to_keypair(key: &PrivateKey) -> Result<KeyPair, KeyError> {
    let bad = KeyError::Unusable;
    match key.key_data() {
        KeypairData::Ed25519(k) => KeyPair::from_ed25519_seed(&k.private.to_bytes()).map_err(bad),
        KeypairData::Ecdsa(k) => {
            let curve = match k.curve() {
                ssh_key::EcdsaCurve::NistP256 => "nistp256",
                ssh_key::EcdsaCurve::NistP384 => "nistp384",
                ssh_key::EcdsaCurve::NistP521 => "nistp521",
            };
            KeyPair::from_ecdsa(curve, k.private_key_bytes(), k.public_key_bytes()).map_err(bad)
        }
        KeypairData::Rsa(k) => {
            let b = |m: &ssh_key::Mpint| m.as_positive_bytes().unwrap_or_default().to_vec();
            KeyPair::from_rsa(
                &b(&k.public.n),
                &b(&k.public.e),
                &b(&k.private.d),
                &b(&k.private.iqmp),
                &b(&k.private.p),
                &b(&k.private.q),
            )
            .map_err(bad)
        }
        other => Err(KeyError::UnsupportedType(
            other
                .algorithm()
                .map_or("unknown".into(), |a| a.to_string()),
        )),
    }
}

/// The public key blob of a key file: from `path.pub` if it exists, else
/// from the private key file's public part (readable without a passphrase).
pub fn public_blob(path: &Path) -> Result<Vec<u8>, KeyError> {
    let pubpath = path.with_file_name(format!(
        "{}.pub",
        path.file_name().map_or("".into(), |n| n.to_string_lossy())
    ));
    if let Ok(k) = PublicKey::read_openssh_file(&pubpath) {
        return Ok(k.to_bytes()?);
    }
    if let Some(k) = pem(path) {
        return k.map(|k| k.public_blob());
    }
    match super::ecdsa_pad::read_file(path) {
        Ok(key) => Ok(key.public_key().to_bytes()?),
        // `-i key.pub`: a public key names its private half held elsewhere
        // (the agent, a security key), as ssh's sshkey_load_public reads it.
        Err(e) => match PublicKey::read_openssh_file(path) {
            Ok(k) => Ok(k.to_bytes()?),
            Err(_) => Err(KeyError::Unreadable {
                path: path.to_owned(),
                error: e,
            }),
        },
    }
}

/// True when the private key file loads without a passphrase.
pub fn is_unencrypted(path: &Path) -> bool {
    if let Some(k) = pem(path) {
        return k.is_ok();
    }
    super::ecdsa_pad::read_file(path).is_ok_and(|k| !k.is_encrypted())
}

/// The key of a file in one of OpenSSL's PEM formats (None: some other
/// file, e.g. OpenSSH's own format), without a passphrase.
fn pem(path: &Path) -> Option<Result<KeyPair, KeyError>> {
    let key = pem_with(path, None)?;
    Some(key.map_err(|e| load_error(path, LoadError::Pem(e))))
}

/// `Load key "PATH": REASON`.
fn load_error(path: &Path, reason: LoadError) -> KeyError {
    KeyError::Load {
        path: path.to_owned(),
        reason,
    }
}

fn pem_with(path: &Path, pass: Option<&[u8]>) -> Option<Result<KeyPair, PemError>> {
    let text = Zeroizing::new(std::fs::read_to_string(path).ok()?);
    super::pem_key::parse(&text, pass)
}

/// Loads a private key, refusing one readable by others as ssh does, and
/// asking `passphrase` (up to three times) for an encrypted one.
pub fn load(
    path: &Path,
    passphrase: &mut dyn FnMut(&Path) -> Option<Zeroizing<String>>,
) -> Result<KeyPair, KeyError> {
    let meta = std::fs::metadata(path).map_err(|e| load_error(path, LoadError::Io(e)))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 && unsafe_owner_ok(&meta) {
        return Err(KeyError::Unprotected {
            path: path.to_owned(),
            mode,
        });
    }
    match pem_with(path, None) {
        None => {}
        Some(Err(PemError::NeedPassphrase)) => {
            for _ in 0..3 {
                let Some(pass) = passphrase(path) else { break };
                match pem_with(path, Some(pass.as_bytes())) {
                    Some(Err(PemError::WrongPassphrase)) => {
                        log!(Info, "Bad passphrase, try again for {}", path.display())
                    }
                    Some(r) => return r.map_err(|e| load_error(path, LoadError::Pem(e))),
                    None => break,
                }
            }
            return Err(load_error(path, LoadError::Passphrase));
        }
        Some(r) => return r.map_err(|e| load_error(path, LoadError::Pem(e))),
    }
    let key =
        super::ecdsa_pad::read_file(path).map_err(|e| load_error(path, LoadError::Format(e)))?;
    if !key.is_encrypted() {
        return to_keypair(&key);
    }
    for _ in 0..3 {
        let Some(pass) = passphrase(path) else { break };
        match super::ecdsa_pad::decrypt(&key, pass.as_bytes()) {
            Ok(k) => return to_keypair(&k),
            Err(_) => log!(Info, "Bad passphrase, try again for {}", path.display()),
        }
    }
    Err(load_error(path, LoadError::Passphrase))
}

/// [`load`] for any key a client can sign with: a FIDO key file (see
/// keys/sk_file.rs) signs through the middleware library at `sk_provider`
/// (SecurityKeyProvider, SSH_SK_PROVIDER; None: there is none, and the
/// error says what to do), any other key as [`load`] reads it.
pub fn load_signer(
    path: &Path,
    passphrase: &mut dyn FnMut(&Path) -> Option<Zeroizing<String>>,
    sk_provider: Option<&str>,
) -> Result<std::sync::Arc<dyn Signer>, KeyError> {
    let key_type = public_blob(path)
        .ok()
        .and_then(|b| sluice_proto::crypto::hostkey::blob_key_type(&b).map(str::to_owned));
    if !key_type.is_some_and(|t| sluice_proto::crypto::hostkey::sk::is_sk_type(&t)) {
        return load(path, passphrase).map(|k| std::sync::Arc::new(k) as _);
    }
    // ssh says these at its error level: the key cannot be used at all.
    let Some(provider) = sk_provider else {
        log!(Error, "{}", super::sk_file::no_provider(path));
        return Err(KeyError::NoSkProvider(path.to_owned()));
    };
    let key =
        super::ecdsa_pad::read_file(path).map_err(|e| load_error(path, LoadError::Format(e)))?;
    let key = if key.is_encrypted() {
        let mut plain = None;
        for _ in 0..3 {
            let Some(pass) = passphrase(path) else { break };
            match super::ecdsa_pad::decrypt(&key, pass.as_bytes()) {
                Ok(k) => {
                    plain = Some(k);
                    break;
                }
                Err(_) => log!(Info, "Bad passphrase, try again for {}", path.display()),
            }
        }
        plain.ok_or_else(|| load_error(path, LoadError::Passphrase))?
    } else {
        key
    };
    let provider = super::sk_provider::SkProvider::load(provider).map_err(|error| {
        log!(Error, "{error}");
        KeyError::SkProviderUnusable {
            path: path.to_owned(),
            error,
        }
    })?;
    let provider = std::sync::Arc::new(provider);
    super::sk_file::SkKeyFile::from_key(&key, provider)
        .map(|k| std::sync::Arc::new(k) as _)
        .ok_or_else(|| load_error(path, LoadError::NotSecurityKey))
}

/// True if the file is ours (ssh only complains about our own keys' modes).
fn unsafe_owner_ok(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    meta.uid() == rustix::process::getuid().as_raw()
}

/// Asks for a passphrase on /dev/tty with echo off, as ssh does.
pub fn prompt_passphrase(path: &Path) -> Option<Zeroizing<String>> {
    use rustix::termios::{tcgetattr, tcsetattr, LocalModes, OptionalActions};
    use std::io::{BufRead, Write};
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .ok()?;
    let saved = tcgetattr(&tty).ok();
    if let Some(saved) = &saved {
        let mut t = saved.clone();
        t.local_modes &= !LocalModes::ECHO;
        let _ = tcsetattr(&tty, OptionalActions::Now, &t);
    }
    let _ = write!(&tty, "Enter passphrase for key '{}': ", path.display());
    let mut line = Zeroizing::new(String::new());
    let r = std::io::BufReader::new(&tty).read_line(&mut line);
    if let Some(saved) = &saved {
        let _ = tcsetattr(&tty, OptionalActions::Now, saved);
    }
    let _ = writeln!(&tty);
    r.ok()?;
    let trimmed = Zeroizing::new(line.trim_end_matches(['\n', '\r']).to_owned());
    Some(trimmed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// An encrypted PEM key (ssh-keygen -m PEM -N "sluice test") asks for
    /// its passphrase as an encrypted OpenSSH key does: three tries.
    #[test]
    fn an_encrypted_pem_key_asks_for_its_passphrase() {
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/src/keys/testdata/pem_rsa_enc");
        let path = std::env::temp_dir().join(format!("sluice-identity-{}", std::process::id()));
        std::fs::copy(src, &path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(!is_unencrypted(&path));
        let mut tries = 0;
        let r = load(&path, &mut |_| {
            tries += 1;
            Some(Zeroizing::new(
                if tries < 3 { "no" } else { "sluice test" }.to_owned(),
            ))
        });
        assert_eq!(tries, 3);
        let key = r.unwrap();
        let want = std::fs::read_to_string(format!("{src}.pub")).unwrap();
        let want = super::super::known_hosts::base64_decode(want.split(' ').nth(1).unwrap());
        assert_eq!(Some(key.public_blob()), want);
        let e = load(&path, &mut |_| Some(Zeroizing::new("no".to_owned()))).unwrap_err();
        assert!(
            matches!(
                &e,
                KeyError::Load {
                    reason: LoadError::Passphrase,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "Load key \"{}\": incorrect passphrase supplied to decrypt private key",
                path.display()
            )
        );
        let e = load(&path, &mut |_| None).unwrap_err();
        assert!(matches!(
            e,
            KeyError::Load {
                reason: LoadError::Passphrase,
                ..
            }
        ));
        // Readable by others: refused with ssh's warning.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = load(&path, &mut |_| None).unwrap_err();
        assert!(
            matches!(e, KeyError::Unprotected { mode: 0o644, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("Permissions 0644 for '"));
        std::fs::remove_file(&path).unwrap();
        let e = load(&path, &mut |_| None).unwrap_err();
        assert!(matches!(
            e,
            KeyError::Load {
                reason: LoadError::Io(_),
                ..
            }
        ));
    }
}
