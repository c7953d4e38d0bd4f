//! A FIDO key file made by `ssh-keygen -t ed25519-sk|ecdsa-sk` (PROTOCOL.u2f:
//! the public key, application, flags and the authenticator's key handle;
//! no private key) as a [`Signer`]: each signature is asked of the
//! authenticator through the middleware library (keys/sk_provider.rs) and
//! laid out as PROTOCOL.u2f's signature blob, then checked against the
//! public key before it is sent, so a library that answers in another
//! layout is caught here with a message rather than by the server.

use super::sk_provider::{SkProvider, ALG_ECDSA, ALG_ED25519};
use sluice_proto::crypto::hostkey::{self, sk, Signer};
use sluice_proto::crypto::CryptoError;
use sluice_proto::wire::Writer;
use ssh_key::private::KeypairData;
use ssh_key::PrivateKey;
use std::sync::{Arc, Mutex};

/// Where to find the middleware: SecurityKeyProvider's value, else
/// SSH_SK_PROVIDER, as ssh; None for `internal` (or unset), which sluice
/// does not have.
pub fn provider_path(configured: Option<&str>) -> Option<String> {
    let env = std::env::var("SSH_SK_PROVIDER").ok();
    let v = match configured {
        Some(v) if v.starts_with('$') => std::env::var(&v[1..]).ok(),
        Some(v) => Some(v.to_owned()),
        None => env,
    }?;
    (!v.is_empty() && v != "internal").then_some(v)
}

/// The message when a FIDO key file is named and no library is.
pub fn no_provider(path: &std::path::Path) -> String {
    format!(
        "{}: a FIDO security key needs a middleware library: set SecurityKeyProvider \
         (or SSH_SK_PROVIDER) to its path (e.g. libsk-libfido2.so), or add the key to \
         ssh-agent (ssh-add) and let sluice use the agent; sluice has no built-in \
         (\"internal\") FIDO support",
        path.display()
    )
}

/// One security key, signed with through a provider.
pub struct SkKeyFile {
    provider: Arc<SkProvider>,
    blob: Vec<u8>,
    key_type: &'static str,
    application: String,
    key_handle: Vec<u8>,
    flags: u8,
    /// One signature at a time: an authenticator serves one request.
    busy: Mutex<()>,
    /// What a failure is logged as: ssh's words for a login, sshd's for
    /// a host key.
    failure: &'static str,
}

impl SkKeyFile {
    /// From a decrypted key file; None when it is not a security key.
    pub fn from_key(key: &PrivateKey, provider: Arc<SkProvider>) -> Option<SkKeyFile> {
        let blob = key.public_key().to_bytes().ok()?;
        let (key_type, application, key_handle, flags) = match key.key_data() {
            KeypairData::SkEd25519(k) => (
                sk::SK_ED25519,
                k.public().application().to_owned(),
                k.key_handle().to_vec(),
                k.flags(),
            ),
            KeypairData::SkEcdsaSha2NistP256(k) => (
                sk::SK_ECDSA,
                k.public().application().to_owned(),
                k.key_handle().to_vec(),
                k.flags(),
            ),
            _ => return None,
        };
        Some(SkKeyFile {
            provider,
            blob,
            key_type,
            application,
            key_handle,
            flags,
            busy: Mutex::new(()),
            failure: "sign_and_send_pubkey: signing failed",
        })
    }
}

impl SkKeyFile {
    /// Whether the key asks for a touch on each signature.
    pub fn wants_user_presence(&self) -> bool {
        self.flags & sk::FLAG_USER_PRESENT != 0
    }

    /// The key as a server's host key: its signatures asked without a
    /// touch (nobody stands by a server to touch it, so sshd signs host
    /// keys that way) and failures logged in sshd's words.
    pub fn as_host_key(mut self) -> Self {
        self.flags &= !sk::FLAG_USER_PRESENT;
        self.failure = "sshd_hostkey_sign: sshkey_sign failed";
        self
    }
}

impl Signer for SkKeyFile {
    fn public_blob(&self) -> Vec<u8> {
        self.blob.clone()
    }

    fn sig_algs(&self) -> Vec<&'static str> {
        vec![self.key_type]
    }

    fn sign(&self, sig_alg: &str, data: &[u8]) -> Result<Vec<u8>, CryptoError> {
        if sig_alg != self.key_type {
            return Err(CryptoError);
        }
        let _one = self.busy.lock().map_err(|_| CryptoError)?;
        let alg = if self.key_type == sk::SK_ED25519 {
            ALG_ED25519
        } else {
            ALG_ECDSA
        };
        if self.flags & sk::FLAG_USER_PRESENT != 0 {
            crate::log!(Info, "Confirm user presence for key {}", self.key_type);
        }
        let out = self
            .provider
            .sign(alg, data, &self.application, &self.key_handle, self.flags)
            .map_err(|e| {
                crate::log!(Error, "{}: {e}", self.failure);
                CryptoError
            })?;
        let mut blob = Vec::new();
        let mut w = Writer::new(&mut blob);
        w.utf8(self.key_type);
        if alg == ALG_ED25519 {
            w.string(&out.sig_r);
        } else {
            w.nested(|inner| {
                inner.mpint_unsigned(&out.sig_r).mpint_unsigned(&out.sig_s);
            });
        }
        w.u8(out.flags).u32(out.counter);
        if hostkey::verify(self.key_type, &self.blob, &blob, data).is_err() {
            crate::log!(
                Error,
                "the security key provider's signature does not verify: is it an sk-api version 10 library?"
            );
            return Err(CryptoError);
        }
        Ok(blob)
    }
}
