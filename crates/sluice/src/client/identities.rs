//! The keys `sluice` offers, in OpenSSH's order: CertificateFile's
//! certificates, the agent's keys (IdentityAgent, SSH_AUTH_SOCK), then -i
//! and IdentityFile files, limited by IdentitiesOnly. Certificates
//! (PROTOCOL.certkeys) are offered as keys of their own: the agent's, a
//! certificate in a key file's `.pub` or `<identity>-cert.pub` beside it,
//! and CertificateFile's, each signed for by the key it certifies.

use crate::client::auth::LoadError;
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
    // Where each plain key can be signed with, for certificates.
    let mut sources: Vec<(Vec<u8>, Source)> = Vec::new();
    // Agent keys first, as ssh offers them; with IdentitiesOnly only those
    // that match an identity file.
    let only = r.flag("identitiesonly", false);
    let file_blobs: Vec<Vec<u8>> = files
        .iter()
        .filter_map(|f| identity::public_blob(&r.file_path(f)).ok())
        .collect();
    let agent_path = identity_agent(r);
    let use_agent = agent_path.as_deref() != Some(Path::new("none"))
        && (agent_path.is_some() || std::env::var_os("SSH_AUTH_SOCK").is_some());
    if use_agent {
        match crate::keys::agent::Agent::connect(agent_path.as_deref()) {
            Ok(agent) => {
                let agent = Arc::new(agent);
                for (blob, comment) in agent.identities().unwrap_or_default() {
                    sources.push((blob.clone(), Source::Agent(agent.clone())));
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
                        agent: Some(agent.clone()),
                    });
                }
            }
            Err(e) => log!(Debug1, "{e}"),
        }
    }
    // AddKeysToAgent: file keys go to the agent once read.
    let add = super::add_to_agent::plan(r, agent_path.clone());
    // FIDO key files sign through this library (SecurityKeyProvider).
    let sk = crate::keys::sk_file::provider_path(r.get("securitykeyprovider"));
    let mut seen = Vec::new();
    for f in files {
        let path = r.file_path(&f);
        if seen.contains(&path) {
            continue;
        }
        seen.push(path.clone());
        // ssh takes `<identity>.pub` as the identity's public key: a
        // certificate there is what it offers for the file.
        let pubcert = certificate_beside(&path);
        match identity::public_blob(&path) {
            Ok(blob)
                if pubcert.is_none() && out.iter().any(|i: &Identity| i.public_blob == blob) => {}
            Ok(blob) => {
                sources.push((blob.clone(), Source::File(path.clone(), sk.clone())));
                match pubcert {
                    Some(c) => out.extend(cert_identity(&c, &sources, batch, false)),
                    None => out.extend(file_identity(&path, blob, batch, sk.clone(), add.clone())),
                }
                // ssh's `<identity>-cert.pub`, offered after its key.
                let cert = PathBuf::from(format!("{}-cert.pub", path.display()));
                if cert.exists() {
                    out.extend(cert_identity(&cert, &sources, batch, false));
                }
            }
            Err(_) => log!(Debug1, "identity file {} not accessible", path.display()),
        }
    }
    // CertificateFile's certificates go first, as ssh offers them (before
    // agent keys and identity files): a server's MaxAuthTries would
    // otherwise end the attempt before them.
    let mut certs: Vec<Identity> = r
        .all("certificatefile")
        .iter()
        .filter_map(|c| cert_identity(&r.file_path(c), &sources, batch, true))
        .collect();
    certs.extend(out);
    certs
}

/// Where a plain key's signatures come from.
enum Source {
    /// A key file, and the FIDO middleware for a security key's.
    File(PathBuf, Option<String>),
    Agent(Arc<crate::keys::agent::Agent>),
}

/// `<path>.pub` when it holds a certificate rather than a plain key.
fn certificate_beside(path: &Path) -> Option<PathBuf> {
    let p = PathBuf::from(format!("{}.pub", path.display()));
    let text = std::fs::read_to_string(&p).ok()?;
    let ty = text.split_whitespace().next()?;
    hostkey::cert::is_cert_type(ty).then_some(p)
}

/// A certificate file as an identity, signed for by the key it certifies
/// (a key file or an agent key in `sources`); None when it cannot be read,
/// is already offered, or no key for it is at hand (`explicit`:
/// CertificateFile, whose problems are worth a line at the default level).
fn cert_identity(
    path: &Path,
    sources: &[(Vec<u8>, Source)],
    batch: bool,
    explicit: bool,
) -> Option<Identity> {
    let level = if explicit {
        crate::log::Level::Info
    } else {
        crate::log::Level::Debug1
    };
    let parsed = std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|t| crate::keys::cert::Cert::parse_openssh(&t).map_err(|e| e.to_string()));
    let (cert, blob) = match parsed {
        Ok(c) => c,
        Err(e) => {
            crate::log::write(level, format_args!("certificate {}: {e}", path.display()));
            return None;
        }
    };
    if cert.is_host() {
        crate::log::write(
            level,
            format_args!(
                "certificate {}: a host certificate, not offered",
                path.display()
            ),
        );
        return None;
    }
    let Some((_, source)) = sources.iter().find(|(b, _)| *b == cert.plain) else {
        crate::log::write(
            level,
            format_args!(
                "certificate {}: no identity or agent key for it",
                path.display()
            ),
        );
        return None;
    };
    let sig_algs = hostkey::sig_algs_for_key_type(hostkey::blob_key_type(&blob)?).to_vec();
    // The label as ssh shows it: the file without `.pub`, type, fingerprint.
    let shown = path.display().to_string();
    let label = format!(
        "{} {} {}",
        shown.strip_suffix(".pub").unwrap_or(&shown),
        cert.type_name(),
        cert.fingerprint()
    );
    log!(Debug1, "certificate file {shown} type {}", cert.type_name());
    let cert_blob = blob.clone();
    let (load, in_memory): (
        Box<dyn FnMut() -> Result<Arc<dyn hostkey::Signer>, LoadError>>,
        bool,
    ) = match source {
        Source::File(p, sk) => {
            let p = p.clone();
            let sk = sk.clone();
            let in_memory = identity::is_unencrypted(&p);
            let load = Box::new(move || {
                let mut ask = |p: &Path| {
                    if batch {
                        None
                    } else {
                        identity::prompt_passphrase(p)
                    }
                };
                let key =
                    identity::load_signer(&p, &mut ask, sk.as_deref()).map_err(LoadError::Key)?;
                certified(key, &cert_blob)
            });
            (load, in_memory)
        }
        Source::Agent(agent) => {
            let key: Arc<dyn hostkey::Signer> = Arc::new(crate::keys::agent::AgentKey {
                agent: agent.clone(),
                blob: cert.plain.clone(),
            });
            (Box::new(move || certified(key.clone(), &cert_blob)), false)
        }
    };
    let agent = match source {
        Source::Agent(a) => Some(a.clone()),
        Source::File(..) => None,
    };
    Some(Identity {
        label,
        public_blob: blob,
        sig_algs,
        load,
        in_memory,
        agent,
    })
}

/// `key` presenting the certificate `cert_blob`.
fn certified(
    key: Arc<dyn hostkey::Signer>,
    cert_blob: &[u8],
) -> Result<Arc<dyn hostkey::Signer>, LoadError> {
    hostkey::CertSigner::new(key, cert_blob.to_vec())
        .map(|c| Arc::new(c) as Arc<dyn hostkey::Signer>)
        .map_err(|_| LoadError::CertMismatch)
}

/// One key file (its public half `blob` already read) as an identity to
/// offer; the private key is read when the server accepts the public one
/// (`batch`: never ask for a passphrase). None for an unsupported type.
fn file_identity(
    path: &Path,
    blob: Vec<u8>,
    batch: bool,
    sk: Option<String>,
    add: Option<super::add_to_agent::AddToAgent>,
) -> Option<Identity> {
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
        // The passphrase that worked, for AddKeysToAgent.
        let mut given: Option<zeroize::Zeroizing<String>> = None;
        let mut ask = |p: &Path| {
            if batch {
                None
            } else {
                let pass = identity::prompt_passphrase(p);
                given.clone_from(&pass);
                pass
            }
        };
        let key = identity::load_signer(&p, &mut ask, sk.as_deref()).map_err(LoadError::Key)?;
        if let Some(a) = &add {
            a.add(&p, given.as_ref().map(|g| g.as_bytes()));
        }
        Ok(key)
    });
    Some(Identity {
        label: format!("{} {}", path.display(), key_type),
        public_blob: blob,
        sig_algs,
        load,
        in_memory,
        agent: None,
    })
}

/// A key file as an identity to offer, for a program that names its key
/// directly (`sluice demo`); None when the file cannot be read or its type
/// is not supported.
pub fn from_file(path: &Path, batch: bool) -> Option<Identity> {
    let blob = identity::public_blob(path).ok()?;
    file_identity(
        path,
        blob,
        batch,
        crate::keys::sk_file::provider_path(None),
        None,
    )
}

/// IdentityAgent: `none`, a socket path (`~` and `%` tokens), or
/// `SSH_AUTH_SOCK` / `$VAR` naming an environment variable; None means
/// SSH_AUTH_SOCK.
pub(super) fn identity_agent(r: &Resolved) -> Option<PathBuf> {
    let v = r.get("identityagent")?;
    let var = match v.strip_prefix('$') {
        Some(var) => var.trim_start_matches('{').trim_end_matches('}'),
        None if v == "SSH_AUTH_SOCK" => v,
        None => return Some(r.file_path(v)),
    };
    // An unset variable: no agent (ssh skips it too).
    Some(std::env::var_os(var).map_or_else(|| PathBuf::from("none"), PathBuf::from))
}
