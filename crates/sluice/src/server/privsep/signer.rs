//! Host keys across the privilege boundary. In the sandboxed pre-auth
//! child and the user's post-auth process a host key is a [`ProxySigner`]:
//! its public half is known, signing asks the monitor. The monitor's side
//! is [`KeyHolder`]: it signs only key exchange hashes it computes itself,
//! from a transcript the child sends (RFC 4253 8: V_C, V_S, I_C, I_S, K_S,
//! the method's values, K) and that it checks first: two KEXINITs, its
//! own host key as K_S, and the version strings of the connection's first
//! exchange for every later one (re-keys). The first hash it signs is the
//! connection's session id (RFC 4253 7.2), as sshd's monitor takes it; it
//! checks the publickey signatures and the handover against that id,
//! never the child's word. After authentication it also signs host key
//! proofs (`hostkeys-prove-00@openssh.com`, OpenSSH PROTOCOL 2.5), over
//! data it builds itself from that session id and its own key. How often
//! each may be asked, and when, is policy.rs's.

use super::datagram;
use super::error::PrivsepError;
pub use super::error::SignRefusal;
use super::wire::{Msg, WireError};
use sluice_proto::crypto::hostkey::{self, Signer};
use sluice_proto::crypto::kex::HashAlg;
use sluice_proto::crypto::CryptoError;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex};
use zeroize::Zeroizing;

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
        datagram::send(&self.fd, m)?;
        datagram::recv(&self.fd, -1)?.ok_or(WireError::Closed)
    }

    /// As [`Link::request`], with the descriptors that came with the answer.
    pub fn request_fds(&self, m: &Msg) -> Result<(Msg, Vec<OwnedFd>), WireError> {
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        datagram::send(&self.fd, m)?;
        datagram::recv_fds(&self.fd, -1)?.ok_or(WireError::Closed)
    }

    /// Sends `m` with no answer expected.
    pub fn tell(&self, m: &Msg) -> Result<(), WireError> {
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        datagram::send(&self.fd, m)
    }

    /// Waits for the next message from the monitor.
    pub fn next(&self) -> Result<Msg, WireError> {
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        datagram::recv(&self.fd, -1)?.ok_or(WireError::Closed)
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

    /// Nothing but key exchanges is signed with a host key here (the
    /// proofs go through [`ProxySigner::prove`]); the monitor has no
    /// request for raw data.
    fn sign(&self, _sig_alg: &str, _data: &[u8]) -> Result<Vec<u8>, CryptoError> {
        Err(CryptoError)
    }

    fn sign_exchange(
        &self,
        sig_alg: &str,
        hash: HashAlg,
        transcript: &[u8],
    ) -> Result<Vec<u8>, CryptoError> {
        let req = Msg::SignExchange {
            key: self.index,
            alg: sig_alg.to_owned(),
            hash: hash_code(hash),
            transcript: Zeroizing::new(transcript.to_vec()),
        };
        match self.link.request(&req) {
            Ok(Msg::Signature(sig)) if !sig.is_empty() => Ok(sig),
            _ => Err(CryptoError),
        }
    }
}

/// The wire's number for a key exchange hash.
pub fn hash_code(h: HashAlg) -> u8 {
    match h {
        HashAlg::Sha1 => 1,
        HashAlg::Sha256 => 2,
        HashAlg::Sha384 => 3,
        HashAlg::Sha512 => 4,
    }
}

fn hash_from_code(c: u8) -> Option<HashAlg> {
    Some(match c {
        1 => HashAlg::Sha1,
        2 => HashAlg::Sha256,
        3 => HashAlg::Sha384,
        4 => HashAlg::Sha512,
        _ => return None,
    })
}

/// The monitor's host keys and the session id they fixed.
pub struct KeyHolder {
    keys: Vec<Arc<dyn Signer>>,
    session_id: Option<Vec<u8>>,
    /// The public blob of the key that signed the first exchange (K_S),
    /// which hostbound publickey requests must name.
    session_host_key: Option<Vec<u8>>,
    /// V_C and V_S of the first exchange: every later one must have them.
    versions: Option<(Vec<u8>, Vec<u8>)>,
    /// Exchange hashes signed so far.
    signed: u32,
    /// The SHA-1 RSA names, signed only when HostKeyAlgorithms names them:
    /// a hostile child must not get a SHA-1 signature the configuration
    /// does not offer.
    sha1_allowed: Vec<&'static str>,
}

/// The SHA-1 RSA signature names.
const SHA1_RSA: [&str; 2] = ["ssh-rsa", "ssh-rsa-cert-v01@openssh.com"];

impl KeyHolder {
    /// The monitor's loaded host keys.
    pub fn new(keys: Vec<Arc<dyn Signer>>) -> Self {
        KeyHolder {
            keys,
            session_id: None,
            session_host_key: None,
            versions: None,
            signed: 0,
            sha1_allowed: Vec::new(),
        }
    }

    /// Allows the SHA-1 RSA names among `configured` (HostKeyAlgorithms).
    pub fn with_host_key_algorithms(mut self, configured: &[String]) -> Self {
        self.sha1_allowed = SHA1_RSA
            .into_iter()
            .filter(|n| configured.iter().any(|c| c == n))
            .collect();
        self
    }

    /// Whether `alg` may be signed with `key`.
    fn may_sign(&self, key: &dyn Signer, alg: &str) -> bool {
        key.sig_algs().contains(&alg)
            && (!SHA1_RSA.contains(&alg) || self.sha1_allowed.contains(&alg))
    }

    /// How many exchange hashes were signed (tests: a refused request
    /// signed nothing).
    pub fn signed(&self) -> u32 {
        self.signed
    }

    /// The number of host keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// No host key at all.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Public blobs, in index order.
    pub fn public_blobs(&self) -> Vec<Vec<u8>> {
        self.keys.iter().map(|k| k.public_blob()).collect()
    }

    /// The session id: the first exchange hash signed.
    pub fn session_id(&self) -> Option<&[u8]> {
        self.session_id.as_deref()
    }

    /// The host key (K_S) of the first exchange signed.
    pub fn session_host_key(&self) -> Option<&[u8]> {
        self.session_host_key.as_deref()
    }

    /// Signs the hash of `transcript` with key `index` after the checks in
    /// the module doc; the first one fixes the session id.
    pub fn sign_exchange(
        &mut self,
        index: u32,
        alg: &str,
        hash: u8,
        transcript: &[u8],
    ) -> Result<Vec<u8>, SignRefusal> {
        let key = self
            .keys
            .get(index as usize)
            .ok_or(SignRefusal::NoSuchKey)?;
        if !self.may_sign(key.as_ref(), alg) {
            return Err(SignRefusal::WrongAlgorithm);
        }
        let hash = hash_from_code(hash).ok_or(SignRefusal::BadHash)?;
        let versions =
            exchange_versions(transcript, &key.public_blob()).ok_or(SignRefusal::NotAnExchange)?;
        if self.versions.as_ref().is_some_and(|v| *v != versions) {
            return Err(SignRefusal::NotAnExchange);
        }
        let h = hash.digest(transcript);
        let sig = key.sign(alg, &h).map_err(|_| SignRefusal::Failed)?;
        if self.session_id.is_none() {
            self.session_id = Some(h);
            self.session_host_key = Some(key.public_blob());
            self.versions = Some(versions);
        }
        self.signed += 1;
        Ok(sig)
    }
}

/// (V_C, V_S) of a key exchange transcript whose K_S is `host_key`: both
/// version strings SSH-2.0 ones, I_C and I_S KEXINITs, the method's
/// values and K after them. None for anything else.
fn exchange_versions(t: &[u8], host_key: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut r = sluice_proto::wire::Reader::new(t);
    let v_c = r.string().ok()?;
    let v_s = r.string().ok()?;
    let i_c = r.string().ok()?;
    let i_s = r.string().ok()?;
    let k_s = r.string().ok()?;
    // RFC 4253 4.2: "SSH-protoversion-softwareversion", at most 255
    // bytes with CR LF, no CR or LF inside.
    let version = |v: &[u8]| {
        (v.starts_with(b"SSH-2.0-") || v.starts_with(b"SSH-1.99-"))
            && v.len() <= 253
            && !v.iter().any(|b| *b == b'\r' || *b == b'\n')
    };
    // A KEXINIT: its number, the 16-byte cookie, ten name-lists, a
    // boolean and a reserved u32 (at least 17 + 40 + 5 bytes).
    let kexinit = |i: &[u8]| i.first() == Some(&20) && i.len() >= 62;
    let ok = version(v_c)
        && version(v_s)
        && kexinit(i_c)
        && kexinit(i_s)
        && k_s == host_key
        && exchange_values(r.remaining());
    ok.then(|| (v_c.to_vec(), v_s.to_vec()))
}

/// What follows K_S in a transcript, exactly: Q_C, Q_S and K (RFC 5656 4,
/// RFC 8731, the hybrid methods: three strings or mpints), or a group
/// exchange's min, n, max, p, g, e, f and K (RFC 4419 3).
fn exchange_values(rest: &[u8]) -> bool {
    let strings = |mut r: sluice_proto::wire::Reader<'_>, n: usize| {
        (0..n).all(|_| r.string().is_ok_and(|s| !s.is_empty())) && r.is_empty()
    };
    let plain = strings(sluice_proto::wire::Reader::new(rest), 3);
    let gex = {
        let mut r = sluice_proto::wire::Reader::new(rest);
        r.u32().is_ok() && r.u32().is_ok() && r.u32().is_ok() && strings(r, 5)
    };
    plain || gex
}

impl KeyHolder {
    /// Signs key `index`'s proof of possession for this session.
    pub fn prove(&self, index: u32, alg: &str) -> Result<Vec<u8>, SignRefusal> {
        let key = self
            .keys
            .get(index as usize)
            .ok_or(SignRefusal::NoSuchKey)?;
        if !self.may_sign(key.as_ref(), alg) {
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
    pub fn prove(link: &Link, index: u32, alg: &str) -> Result<Vec<u8>, PrivsepError> {
        let req = Msg::ProveHostKey {
            key: index,
            alg: alg.to_owned(),
        };
        match link.request(&req) {
            Ok(Msg::Signature(sig)) if !sig.is_empty() => Ok(sig),
            Ok(_) => Err(PrivsepError::UnexpectedAnswer),
            Err(e) => Err(PrivsepError::Wire(e)),
        }
    }
}

/// A transcript as an engine builds it, with client version `v_c` and
/// host key `k_s` (`q` varies the values), for tests.
#[cfg(test)]
pub(crate) fn test_transcript(v_c: &str, k_s: &[u8], q: u8) -> Vec<u8> {
    tests::transcript(v_c, k_s, q)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_proto::crypto::hostkey::KeyPair;
    use sluice_proto::wire::Writer;

    pub(super) fn transcript(v_c: &str, k_s: &[u8], q: u8) -> Vec<u8> {
        let kexinit = [vec![20u8], vec![q; 16], vec![0; 45]].concat();
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf);
        w.utf8(v_c)
            .utf8("SSH-2.0-sluice_0.1")
            .string(&kexinit)
            .string(&kexinit)
            .string(k_s)
            .string(&[q; 32])
            .string(&[q; 32])
            .string(&[1; 33]);
        buf
    }

    #[test]
    fn signs_only_exchanges_of_this_connection_and_fixes_the_session_id() {
        let key: Arc<dyn Signer> = Arc::new(KeyPair::generate_ed25519().unwrap());
        let blob = key.public_blob();
        let mut h = KeyHolder::new(vec![key]);
        let t = transcript("SSH-2.0-OpenSSH_9.2", &blob, 1);
        let sign = |h: &mut KeyHolder, i, alg, hash, t: &[u8]| h.sign_exchange(i, alg, hash, t);
        assert_eq!(
            sign(&mut h, 1, "ssh-ed25519", 2, &t),
            Err(SignRefusal::NoSuchKey)
        );
        assert_eq!(
            sign(&mut h, 0, "rsa-sha2-256", 2, &t),
            Err(SignRefusal::WrongAlgorithm)
        );
        assert_eq!(
            sign(&mut h, 0, "ssh-ed25519", 9, &t),
            Err(SignRefusal::BadHash)
        );
        // Not a transcript: a bare hash (what an attacker wants signed),
        // another host key, cut short, no KEXINITs.
        let other = KeyPair::generate_ed25519().unwrap().public_blob();
        let not_kexinit = {
            let mut b = t.clone();
            b[4 + 19 + 4 + 18 + 4] = 21;
            b
        };
        for bad in [
            vec![7u8; 32],
            transcript("SSH-2.0-OpenSSH_9.2", &other, 1),
            t[..t.len() - 38].to_vec(),
            transcript("SSH-1.5-old", &blob, 1),
            not_kexinit,
        ] {
            assert_eq!(
                sign(&mut h, 0, "ssh-ed25519", 2, &bad),
                Err(SignRefusal::NotAnExchange)
            );
        }
        assert!(h.session_id().is_none(), "refusals fix nothing");
        assert_eq!(h.signed(), 0);
        assert_eq!(h.prove(0, "ssh-ed25519"), Err(SignRefusal::NoSession));
        let sig = sign(&mut h, 0, "ssh-ed25519", 2, &t).unwrap();
        let sid = HashAlg::Sha256.digest(&t);
        assert!(hostkey::verify("ssh-ed25519", &blob, &sig, &sid).is_ok());
        assert_eq!(h.session_id(), Some(&sid[..]));
        // A re-key: same versions, new values; another client version is
        // another connection's exchange.
        let t2 = transcript("SSH-2.0-OpenSSH_9.2", &blob, 2);
        sign(&mut h, 0, "ssh-ed25519", 4, &t2).unwrap();
        assert_eq!(h.session_id(), Some(&sid[..]));
        let elsewhere = transcript("SSH-2.0-PuTTY_0.81", &blob, 3);
        assert_eq!(
            sign(&mut h, 0, "ssh-ed25519", 2, &elsewhere),
            Err(SignRefusal::NotAnExchange)
        );
        assert_eq!(h.signed(), 2);
        // A proof is over the monitor's session id and key, nothing else.
        let sig = h.prove(0, "ssh-ed25519").unwrap();
        let data = sluice_proto::msg::prove_signed_data(&sid, &blob);
        assert!(hostkey::verify_hostkeys_proof("ssh-ed25519", &blob, &sig, &data).is_ok());
        assert_eq!(h.prove(1, "ssh-ed25519"), Err(SignRefusal::NoSuchKey));
        assert_eq!(h.prove(0, "rsa-sha2-512"), Err(SignRefusal::WrongAlgorithm));
    }

    /// SHA-1 RSA host signatures only when HostKeyAlgorithms names them.
    #[test]
    fn ssh_rsa_only_when_configured() {
        let dir = std::env::temp_dir().join(format!("sluice-signer-rsa-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rsa");
        let made = std::process::Command::new("ssh-keygen")
            .args(["-q", "-N", "", "-t", "rsa", "-b", "2048", "-f"])
            .arg(&path)
            .status()
            .is_ok_and(|s| s.success());
        if !made {
            return;
        }
        let files = crate::keys::host_keys::HostKeyFiles {
            paths: vec![path],
            ..Default::default()
        };
        let keys = crate::keys::host_keys::load(&files).unwrap();
        let blob = keys[0].public_blob();
        let t = transcript("SSH-2.0-OpenSSH_9.2", &blob, 1);
        let mut h = KeyHolder::new(keys.clone());
        assert_eq!(
            h.sign_exchange(0, "ssh-rsa", 1, &t),
            Err(SignRefusal::WrongAlgorithm)
        );
        assert!(h.sign_exchange(0, "rsa-sha2-256", 2, &t).is_ok());
        let mut h = KeyHolder::new(keys)
            .with_host_key_algorithms(&["rsa-sha2-512".into(), "ssh-rsa".into()]);
        assert!(h.sign_exchange(0, "ssh-rsa", 1, &t).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
