//! The server's host keys, and throwaway key files for `sluice demo` and tests.

use super::identity;
use crate::log;
use sluice_proto::crypto::hostkey::{KeyPair, Signer};
use ssh_key::private::{Ed25519Keypair, KeypairData};
use ssh_key::{LineEnding, PrivateKey};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Loads every host key that can be read; none at all is an error.
pub fn load(paths: &[PathBuf]) -> Result<Vec<Arc<dyn Signer>>, String> {
    let mut keys: Vec<Arc<dyn Signer>> = Vec::new();
    for p in paths {
        let mut no_pass = |_: &Path| None;
        match identity::load(p, &mut no_pass) {
            Ok(k) => keys.push(Arc::new(k)),
            Err(e) => log!(Error, "Unable to load host key: {} ({e})", p.display()),
        }
    }
    if keys.is_empty() {
        return Err("sluiced: no hostkeys available -- exiting.".to_owned());
    }
    Ok(keys)
}

/// Writes a fresh Ed25519 key in OpenSSH format (0600) and its `.pub` (0644).
pub fn generate_ed25519_file(path: &Path, comment: &str) -> Result<(), String> {
    let kp = KeyPair::generate_ed25519().map_err(|_| "key generation failed".to_owned())?;
    let seed = kp.ed25519_seed().ok_or("key generation failed")?;
    let key = PrivateKey::new(
        KeypairData::Ed25519(Ed25519Keypair::from_seed(&seed)),
        comment,
    )
    .map_err(|e| e.to_string())?;
    let text = key.to_openssh(LineEnding::LF).map_err(|e| e.to_string())?;
    write_mode(path, text.as_bytes(), 0o600)?;
    let public = key.public_key().to_openssh().map_err(|e| e.to_string())?;
    let pubpath = PathBuf::from(format!("{}.pub", path.display()));
    write_mode(&pubpath, format!("{public}\n").as_bytes(), 0o644)
}

fn write_mode(path: &Path, data: &[u8], mode: u32) -> Result<(), String> {
    std::fs::write(path, data).map_err(|e| format!("writing {}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("chmod {}: {e}", path.display()))
}
