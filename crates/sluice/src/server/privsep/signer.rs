//! Host keys across the privilege boundary. In the sandboxed pre-auth
//! child and the user's post-auth process a host key is a [`ProxySigner`]:
//! its public half is known, `sign()` asks the monitor. The monitor's side
//! is [`KeyHolder`]: it signs only what looks like an exchange hash (a
//! hash output's length) with a key and algorithm that exist, and takes
//! the first thing it signs as the connection's session id (RFC 4253 7.2:
//! the first exchange hash), as sshd's monitor does; it checks the
//! publickey signatures and the handover against that id, never the
//! child's word. After authentication it also signs host key proofs
//! (`hostkeys-prove-00@openssh.com`, OpenSSH PROTOCOL 2.5), over data it
//! builds itself from that session id and its own key.

use super::wire::{self, Msg, WireError};
use sluice_proto::crypto::hostkey::{self, Signer};
use sluice_proto::crypto::CryptoError;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex};

/// The child's end of the monitor socket, shared by its host key proxies
/// and other requests; requests are made one at a time.
pub struct Link {
    fd: OwnedFd,
    lock: Mutex<()>,
}

impl Link {
    /// Wraps the child's end of the socketpair.
    pub fn new(fd: OwnedFd) -> Arc<Link> {
        Arc::new(Link {
            fd,
            lock: Mutex::new(()),
        })
    }

    /// Sends `m` and waits for the monitor's answer.
    pub fn request(&self, m: &Msg) -> Result<Msg, WireError> {
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        wire::send(&self.fd, m)?;
        wire::recv(&self.fd, -1)?.ok_or(WireError::Closed)
    }

    /// As [`Link::request`], with the descriptors that came with the answer.
    pub fn request_fds(&self, m: &Msg) -> Result<(Msg, Vec<OwnedFd>), WireError> {
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        wire::send(&self.fd, m)?;
        wire::recv_fds(&self.fd, -1)?.ok_or(WireError::Closed)
    }

    /// Sends `m` with no answer expected.
    pub fn tell(&self, m: &Msg) -> Result<(), WireError> {
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        wire::send(&self.fd, m)
    }

    /// Waits for the next message from the monitor.
    pub fn next(&self) -> Result<Msg, WireError> {
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        wire::recv(&self.fd, -1)?.ok_or(WireError::Closed)
    }

    /// The descriptor (for the log sink).
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        self.fd.as_raw_fd()
    }
}

/// A host key whose private half stays in the monitor.
pub struct ProxySigner {
    link: Arc<Link>,
    index: u32,
    blob: Vec<u8>,
}

impl ProxySigner {
    /// Host key number `index` of the monitor, with public blob `blob`.
    pub fn new(link: Arc<Link>, index: u32, blob: Vec<u8>) -> Self {
        ProxySigner { link, index, blob }
    }
}

impl Signer for ProxySigner {
    fn public_blob(&self) -> Vec<u8> {
        self.blob.clone()
    }

    fn sig_algs(&self) -> Vec<&'static str> {
        hostkey::blob_key_type(&self.blob)
            .map(|t| hostkey::sig_algs_for_key_type(t).to_vec())
            .unwrap_or_default()
    }

    fn sign(&self, sig_alg: &str, data: &[u8]) -> Result<Vec<u8>, CryptoError> {
        let req = Msg::Sign {
            key: self.index,
            alg: sig_alg.to_owned(),
            data: data.to_vec(),
        };
        match self.link.request(&req) {
            Ok(Msg::Signature(sig)) if !sig.is_empty() => Ok(sig),
            _ => Err(CryptoError),
        }
    }
}

/// Why the monitor refused to sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignRefusal {
    /// No host key with that number.
    NoSuchKey,
    /// The algorithm does not belong to the key.
    WrongAlgorithm,
    /// The data is not a hash output's length.
    NotAHash,
    /// A host key proof before any key exchange.
    NoSession,
    /// The key failed to sign.
    Failed,
}

impl std::fmt::Display for SignRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SignRefusal::NoSuchKey => "sign request for a host key that does not exist",
            SignRefusal::WrongAlgorithm => "sign request with an algorithm the key has not",
            SignRefusal::NotAHash => "sign request for data that is not an exchange hash",
            SignRefusal::NoSession => "host key proof requested before a key exchange",
            SignRefusal::Failed => "host key signing failed",
        })
    }
}

/// The monitor's host keys and the session id they fixed.
pub struct KeyHolder {
    keys: Vec<Arc<dyn Signer>>,
    session_id: Option<Vec<u8>>,
}

impl KeyHolder {
    /// The monitor's loaded host keys.
    pub fn new(keys: Vec<Arc<dyn Signer>>) -> Self {
        KeyHolder {
            keys,
            session_id: None,
        }
    }

    /// Public blobs, in index order.
    pub fn public_blobs(&self) -> Vec<Vec<u8>> {
        self.keys.iter().map(|k| k.public_blob()).collect()
    }

    /// The session id: the first exchange hash signed.
    pub fn session_id(&self) -> Option<&[u8]> {
        self.session_id.as_deref()
    }

    /// Signs `data` with key `index` after the checks in the module doc.
    pub fn sign(&mut self, index: u32, alg: &str, data: &[u8]) -> Result<Vec<u8>, SignRefusal> {
        let key = self
            .keys
            .get(index as usize)
            .ok_or(SignRefusal::NoSuchKey)?;
        if !key.sig_algs().contains(&alg) {
            return Err(SignRefusal::WrongAlgorithm);
        }
        // SHA-1 (the legacy DH methods a configuration names), SHA-256,
        // SHA-384, SHA-512 outputs: what every KEX method's exchange hash is.
        if ![20, 32, 48, 64].contains(&data.len()) {
            return Err(SignRefusal::NotAHash);
        }
        let sig = key.sign(alg, data).map_err(|_| SignRefusal::Failed)?;
        if self.session_id.is_none() {
            self.session_id = Some(data.to_vec());
        }
        Ok(sig)
    }
}

impl KeyHolder {
    /// Signs key `index`'s proof of possession for this session.
    pub fn prove(&self, index: u32, alg: &str) -> Result<Vec<u8>, SignRefusal> {
        let key = self
            .keys
            .get(index as usize)
            .ok_or(SignRefusal::NoSuchKey)?;
        if !key.sig_algs().contains(&alg) {
            return Err(SignRefusal::WrongAlgorithm);
        }
        let sid = self.session_id.as_deref().ok_or(SignRefusal::NoSession)?;
        let data = sluice_proto::msg::prove_signed_data(sid, &key.public_blob());
        key.sign(alg, &data).map_err(|_| SignRefusal::Failed)
    }
}

impl ProxySigner {
    /// This key's proof of possession for the session, signed by the
    /// monitor (post-auth process only).
    pub fn prove(link: &Link, index: u32, alg: &str) -> Result<Vec<u8>, String> {
        let req = Msg::ProveHostKey {
            key: index,
            alg: alg.to_owned(),
        };
        match link.request(&req) {
            Ok(Msg::Signature(sig)) if !sig.is_empty() => Ok(sig),
            Ok(_) => Err("unexpected answer from the monitor".into()),
            Err(e) => Err(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_proto::crypto::hostkey::KeyPair;

    #[test]
    fn signs_only_exchange_hashes_and_fixes_the_session_id() {
        let key: Arc<dyn Signer> = Arc::new(KeyPair::generate_ed25519().unwrap());
        let mut h = KeyHolder::new(vec![key]);
        assert_eq!(
            h.sign(1, "ssh-ed25519", &[0; 32]),
            Err(SignRefusal::NoSuchKey)
        );
        assert_eq!(
            h.sign(0, "rsa-sha2-256", &[0; 32]),
            Err(SignRefusal::WrongAlgorithm)
        );
        for n in [0, 19, 31, 33, 100] {
            assert_eq!(
                h.sign(0, "ssh-ed25519", &vec![0; n]),
                Err(SignRefusal::NotAHash)
            );
        }
        assert!(h.session_id().is_none(), "refusals fix nothing");
        assert_eq!(h.prove(0, "ssh-ed25519"), Err(SignRefusal::NoSession));
        h.sign(0, "ssh-ed25519", &[1; 32]).unwrap();
        h.sign(0, "ssh-ed25519", &[2; 64]).unwrap();
        assert_eq!(h.session_id(), Some(&[1u8; 32][..]));
        // A proof is over the monitor's session id and key, nothing else.
        let sig = h.prove(0, "ssh-ed25519").unwrap();
        let blob = h.public_blobs().remove(0);
        let data = sluice_proto::msg::prove_signed_data(&[1; 32], &blob);
        assert!(hostkey::verify_hostkeys_proof("ssh-ed25519", &blob, &sig, &data).is_ok());
        assert_eq!(h.prove(1, "ssh-ed25519"), Err(SignRefusal::NoSuchKey));
        assert_eq!(h.prove(0, "rsa-sha2-512"), Err(SignRefusal::WrongAlgorithm));
    }
}
