//! Where a host key signs from, in sshd's order: its private key file
//! (OpenSSH's or OpenSSL's format); for a FIDO key file (`sk-*`, PROTOCOL.u2f),
//! the authenticator through the SecurityKeyProvider library
//! (keys/sk_provider.rs), asked without a touch as sshd asks; else, when only
//! the public half is readable (the HostKey file itself a public key, or its
//! `.pub`), the ssh-agent HostKeyAgent names (keys/agent.rs's client:
//! SSH_AGENTC_SIGN_REQUEST with the rsa-sha2 flags).
//!
//! Only the monitor uses these (and the listener's startup check, in a child
//! of its own): a pre-auth child is forked before any of them is opened, so
//! it never holds the agent's socket or the library.

use super::agent::{Agent, AgentError, AgentKey};
use super::error::{KeyError, LoadError};
use super::identity;
use super::sk_file::{self, SkKeyFile};
use super::sk_provider::{SkError, SkProvider};
use crate::log;
use sluice_proto::crypto::hostkey::{self, sk, Signer};
use sluice_proto::crypto::CryptoError;
use ssh_key::PublicKey;
use std::path::Path;
use std::sync::Arc;

/// The agent and the library, opened once for all of a configuration's
/// host keys.
pub(super) struct Sources {
    agent: Option<AgentHold>,
    /// SecurityKeyProvider resolved (None: "internal", which sluiced lacks).
    provider_path: Option<String>,
    /// The library, loaded at the first FIDO key.
    provider: Option<Result<Arc<SkProvider>, SkError>>,
}

/// HostKeyAgent's agent and the public keys it held when asked.
struct AgentHold {
    /// The socket as configured, for messages.
    sock: String,
    conn: Result<(Arc<Agent>, Vec<Vec<u8>>), Arc<AgentError>>,
}

impl Sources {
    /// For HostKeyAgent `agent` (a socket, or `SSH_AUTH_SOCK` for the
    /// environment's; None: none) and SecurityKeyProvider `sk_provider`
    /// (None: unset, "internal"). A configured agent that cannot be
    /// reached is logged now, as sshd does, and named again by each key
    /// that needed it.
    pub(super) fn new(agent: Option<&str>, sk_provider: Option<&str>) -> Sources {
        let agent = agent.map(|sock| {
            let conn = connect(sock).map_err(Arc::new);
            if let Err(e) = &conn {
                log!(Error, "Could not connect to agent \"{sock}\": {e}");
            }
            AgentHold {
                sock: sock.to_owned(),
                conn,
            }
        });
        Sources {
            agent,
            provider_path: sk_file::provider_path(Some(sk_provider.unwrap_or("internal"))),
            provider: None,
        }
    }

    /// The signer for HostKey `path`, or why there is none (the caller
    /// says "Unable to load host key").
    pub(super) fn signer(&mut self, path: &Path) -> Result<Arc<dyn Signer>, KeyError> {
        let as_public = read_public(path);
        let public = as_public
            .clone()
            .or_else(|| identity::public_blob(path).ok());
        let mut private_error = None;
        if as_public.is_none() && path.exists() {
            let is_sk = public
                .as_deref()
                .and_then(hostkey::blob_key_type)
                .is_some_and(sk::is_sk_type);
            let private = if is_sk {
                self.sk_key(path)
            } else {
                let mut no_pass = |_: &Path| None;
                identity::load(path, &mut no_pass).map(|k| Arc::new(k) as Arc<dyn Signer>)
            };
            match private {
                Ok(k) => return Ok(k),
                Err(e) if self.agent.is_none() => return Err(e),
                Err(e) => private_error = Some(e),
            }
        }
        let Some(blob) = public else {
            return Err(private_error.unwrap_or_else(|| KeyError::Load {
                path: path.to_owned(),
                reason: LoadError::Missing,
            }));
        };
        // A type sluiced cannot sign with (DSA) is refused as its file is.
        let key_type = hostkey::blob_key_type(&blob).unwrap_or("unknown");
        if hostkey::sig_algs_for_key_type(key_type).is_empty() {
            return Err(KeyError::UnsupportedType(key_type.to_owned()));
        }
        let Some(hold) = &self.agent else {
            return Err(KeyError::PublicOnly);
        };
        let (agent, held) = hold
            .conn
            .as_ref()
            .map_err(|e| KeyError::AgentUnreachable(e.clone()))?;
        if !held.contains(&blob) {
            if let Some(e) = private_error {
                log!(Debug1, "{e}");
            }
            return Err(KeyError::NotInAgent {
                sock: hold.sock.clone(),
                key_type: hostkey::blob_key_type(&blob).unwrap_or("?").to_owned(),
                fingerprint: identity::fingerprint_sha256(&blob),
            });
        }
        log!(Debug1, "will rely on agent for hostkey {}", path.display());
        Ok(Arc::new(AgentHostKey {
            key: AgentKey {
                agent: agent.clone(),
                blob,
            },
            sock: hold.sock.clone(),
        }))
    }

    /// A FIDO key file signing through the library, without a touch.
    fn sk_key(&mut self, path: &Path) -> Result<Arc<dyn Signer>, KeyError> {
        let provider = self.provider(path)?;
        let load = |reason| KeyError::Load {
            path: path.to_owned(),
            reason,
        };
        let key = super::ecdsa_pad::read_file(path).map_err(|e| load(LoadError::Format(e)))?;
        if key.is_encrypted() {
            return Err(load(LoadError::HostKeyPassphrase));
        }
        let k =
            SkKeyFile::from_key(&key, provider).ok_or_else(|| load(LoadError::NotSecurityKey))?;
        if k.wants_user_presence() {
            log!(
                Debug1,
                "host key {} requires user presence, ignoring",
                path.display()
            );
        }
        Ok(Arc::new(k.as_host_key()))
    }

    /// SecurityKeyProvider's library, loaded once.
    fn provider(&mut self, path: &Path) -> Result<Arc<SkProvider>, KeyError> {
        let Some(lib) = &self.provider_path else {
            return Err(KeyError::NoHostSkProvider(path.to_owned()));
        };
        Ok(self
            .provider
            .get_or_insert_with(|| SkProvider::load(lib).map(Arc::new))
            .clone()?)
    }
}

/// `sock` as HostKeyAgent has it: `SSH_AUTH_SOCK` is the environment's.
fn connect(sock: &str) -> Result<(Arc<Agent>, Vec<Vec<u8>>), AgentError> {
    let agent = if sock == "SSH_AUTH_SOCK" {
        Agent::connect(None)?
    } else {
        Agent::connect(Some(Path::new(sock)))?
    };
    let held = agent.identities()?.into_iter().map(|(b, _)| b).collect();
    Ok((Arc::new(agent), held))
}

/// The blob of `path` read as a public key file (`ssh-ed25519 AAAA...`).
fn read_public(path: &Path) -> Option<Vec<u8>> {
    PublicKey::read_openssh_file(path).ok()?.to_bytes().ok()
}

/// A host key held by the agent; a refusal is logged with the socket and
/// the key, since the connection that needed it ends.
struct AgentHostKey {
    key: AgentKey,
    sock: String,
}

impl Signer for AgentHostKey {
    fn public_blob(&self) -> Vec<u8> {
        self.key.public_blob()
    }

    fn sig_algs(&self) -> Vec<&'static str> {
        self.key.sig_algs()
    }

    fn sign(&self, sig_alg: &str, data: &[u8]) -> Result<Vec<u8>, CryptoError> {
        self.key.sign(sig_alg, data).inspect_err(|_| {
            log!(
                Error,
                "HostKeyAgent \"{}\": the agent did not sign with host key {} ({sig_alg}): is it still running and holding the key?",
                self.sock,
                identity::fingerprint_sha256(&self.key.blob)
            )
        })
    }
}
