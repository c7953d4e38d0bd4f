//! The keys `sluice` offers, in OpenSSH's order: -i and IdentityFile
//! files, then the agent's (IdentityAgent, SSH_AUTH_SOCK), limited by
//! IdentitiesOnly.

use super::app::expand;
use crate::client::session::Identity;
use crate::config::ssh::Resolved;
use crate::keys::identity;
use crate::log;
use sluice_proto::crypto::hostkey;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The keys to offer: agent keys, then `cli_files` (`-i`) and
/// IdentityFile's (ssh's defaults when there are none).
pub(super) fn identities(cli_files: &[String], r: &Resolved) -> Vec<Identity> {
    let batch = r.flag("batchmode", false);
    let mut files: Vec<String> = cli_files.to_vec();
    files.extend(r.all("identityfile").iter().cloned());
    if files.is_empty() {
        files = [
            "id_rsa",
            "id_ecdsa",
            "id_ecdsa_sk",
            "id_ed25519",
            "id_ed25519_sk",
            "id_xmss",
            "id_dsa",
        ]
        .iter()
        .map(|f| format!("~/.ssh/{f}"))
        .collect();
    }
    let mut out = Vec::new();
    // Agent keys first, as ssh offers them; with IdentitiesOnly only those
    // that match an identity file.
    let only = r.flag("identitiesonly", false);
    let file_blobs: Vec<Vec<u8>> = files
        .iter()
        .filter_map(|f| identity::public_blob(&expand(f, r)).ok())
        .collect();
    let agent_path = identity_agent(r);
    let use_agent = agent_path.as_deref() != Some(Path::new("none"))
        && (agent_path.is_some() || std::env::var_os("SSH_AUTH_SOCK").is_some());
    if use_agent {
        match crate::keys::agent::Agent::connect(agent_path.as_deref()) {
            Ok(agent) => {
                let agent = Arc::new(agent);
                for (blob, comment) in agent.identities().unwrap_or_default() {
                    let sig_algs = hostkey::sig_algs_for_key_type(
                        hostkey::blob_key_type(&blob).unwrap_or_default(),
                    )
                    .to_vec();
                    if sig_algs.is_empty() || (only && !file_blobs.contains(&blob)) {
                        continue;
                    }
                    let key: Arc<dyn hostkey::Signer> = Arc::new(crate::keys::agent::AgentKey {
                        agent: agent.clone(),
                        blob: blob.clone(),
                    });
                    out.push(Identity {
                        label: format!("{comment} (agent)"),
                        public_blob: blob,
                        sig_algs,
                        load: Box::new(move || Ok(key.clone())),
                        in_memory: false, // the agent may ask to confirm
                    });
                }
            }
            Err(e) => log!(Debug1, "{e}"),
        }
    }
    let mut seen = Vec::new();
    for f in files {
        let path = expand(&f, r);
        if seen.contains(&path) {
            continue;
        }
        seen.push(path.clone());
        match identity::public_blob(&path) {
            Ok(blob) if out.iter().any(|i: &Identity| i.public_blob == blob) => {}
            Ok(blob) => out.extend(file_identity(&path, blob, batch)),
            Err(_) => log!(Debug1, "identity file {} not accessible", path.display()),
        }
    }
    out
}

/// One key file (its public half `blob` already read) as an identity to
/// offer; the private key is read when the server accepts the public one
/// (`batch`: never ask for a passphrase). None for an unsupported type.
fn file_identity(path: &Path, blob: Vec<u8>, batch: bool) -> Option<Identity> {
    let key_type = hostkey::blob_key_type(&blob).unwrap_or_default().to_owned();
    let sig_algs = hostkey::sig_algs_for_key_type(&key_type).to_vec();
    if sig_algs.is_empty() {
        log!(
            Debug1,
            "Skipping {} key {}: not supported",
            key_type,
            path.display()
        );
        return None;
    }
    log!(Debug1, "identity file {} type {}", path.display(), key_type);
    let p = path.to_owned();
    let in_memory = identity::is_unencrypted(path);
    let load = Box::new(move || {
        let mut ask = |p: &Path| {
            if batch {
                None
            } else {
                identity::prompt_passphrase(p)
            }
        };
        identity::load(&p, &mut ask).map(|k| Arc::new(k) as Arc<dyn hostkey::Signer>)
    });
    Some(Identity {
        label: format!("{} {}", path.display(), key_type),
        public_blob: blob,
        sig_algs,
        load,
        in_memory,
    })
}

/// A key file as an identity to offer, for a program that names its key
/// directly (`sluice demo`); None when the file cannot be read or its type
/// is not supported.
pub fn from_file(path: &Path, batch: bool) -> Option<Identity> {
    let blob = identity::public_blob(path).ok()?;
    file_identity(path, blob, batch)
}

/// IdentityAgent: `none`, a socket path (`~` and `%` tokens), or
/// `SSH_AUTH_SOCK` / `$VAR` naming an environment variable; None means
/// SSH_AUTH_SOCK.
pub(super) fn identity_agent(r: &Resolved) -> Option<PathBuf> {
    let v = r.get("identityagent")?;
    let var = match v.strip_prefix('$') {
        Some(var) => var.trim_start_matches('{').trim_end_matches('}'),
        None if v == "SSH_AUTH_SOCK" => v,
        None => return Some(expand(v, r)),
    };
    // An unset variable: no agent (ssh skips it too).
    Some(std::env::var_os(var).map_or_else(|| PathBuf::from("none"), PathBuf::from))
}
