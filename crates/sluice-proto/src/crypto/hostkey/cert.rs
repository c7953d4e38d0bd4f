//! OpenSSH certificates at the protocol level (PROTOCOL.certkeys): the
//! `*-cert-v01@openssh.com` key types and signature algorithm names, the
//! certified public key inside a certificate blob (what a signature made
//! with a certificate is checked against), and [`CertSigner`], which signs
//! with a private key while presenting its certificate.
//!
//! Whether a certificate is to be trusted (its CA, signature, principals,
//! validity, options) is the runtime's decision, not the engine's: here a
//! certificate is only a wrapper around a public key.

use super::Signer;
use crate::crypto::CryptoError;
use crate::wire::{Reader, Writer};
use std::sync::Arc;

/// Certificate signature algorithms, in OpenSSH's default order, then the
/// SHA-1 one that only a configuration naming it enables.
pub const CERT_SIG_ALGS: &[&str] = &[
    "ssh-ed25519-cert-v01@openssh.com",
    "ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "ecdsa-sha2-nistp384-cert-v01@openssh.com",
    "ecdsa-sha2-nistp521-cert-v01@openssh.com",
    "sk-ssh-ed25519-cert-v01@openssh.com",
    "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "rsa-sha2-512-cert-v01@openssh.com",
    "rsa-sha2-256-cert-v01@openssh.com",
    "ssh-rsa-cert-v01@openssh.com",
];

/// Certificate key types (the names in certificate blobs).
pub const CERT_KEY_TYPES: &[&str] = &[
    "ssh-ed25519-cert-v01@openssh.com",
    "ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "ecdsa-sha2-nistp384-cert-v01@openssh.com",
    "ecdsa-sha2-nistp521-cert-v01@openssh.com",
    "sk-ssh-ed25519-cert-v01@openssh.com",
    "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "ssh-rsa-cert-v01@openssh.com",
];

/// The plain key type a certificate key type certifies
/// (`ssh-ed25519-cert-v01@openssh.com` -> `ssh-ed25519`); None for other
/// names.
pub fn plain_key_type(cert_type: &str) -> Option<&'static str> {
    Some(match cert_type {
        "ssh-ed25519-cert-v01@openssh.com" => "ssh-ed25519",
        "ecdsa-sha2-nistp256-cert-v01@openssh.com" => "ecdsa-sha2-nistp256",
        "ecdsa-sha2-nistp384-cert-v01@openssh.com" => "ecdsa-sha2-nistp384",
        "ecdsa-sha2-nistp521-cert-v01@openssh.com" => "ecdsa-sha2-nistp521",
        "sk-ssh-ed25519-cert-v01@openssh.com" => "sk-ssh-ed25519@openssh.com",
        "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com" => "sk-ecdsa-sha2-nistp256@openssh.com",
        "ssh-rsa-cert-v01@openssh.com" => "ssh-rsa",
        _ => return None,
    })
}

/// How many length-prefixed public fields a plain key type has after its
/// name (ed25519: pk; ecdsa: curve, Q; rsa: e, n; security keys: those
/// and the application): what a certificate holds after its nonce.
pub fn public_field_count(plain_type: &str) -> usize {
    match plain_type {
        "ssh-ed25519" => 1,
        "sk-ecdsa-sha2-nistp256@openssh.com" => 3,
        _ => 2,
    }
}

/// Whether a key type name is a certificate type.
pub fn is_cert_type(key_type: &str) -> bool {
    key_type.ends_with("-cert-v01@openssh.com")
}

/// The signature algorithm a certificate algorithm signs with
/// (`rsa-sha2-256-cert-v01@openssh.com` -> `rsa-sha2-256`): the name in
/// the signature blob. None for other names.
pub fn plain_sig_alg(cert_alg: &str) -> Option<&'static str> {
    Some(match cert_alg {
        "rsa-sha2-512-cert-v01@openssh.com" => "rsa-sha2-512",
        "rsa-sha2-256-cert-v01@openssh.com" => "rsa-sha2-256",
        other => plain_key_type(other)?,
    })
}

/// The certificate algorithm of a plain signature algorithm, the inverse of
/// [`plain_sig_alg`].
pub fn cert_sig_alg(plain_alg: &str) -> Option<&'static str> {
    CERT_SIG_ALGS
        .iter()
        .copied()
        .find(|c| plain_sig_alg(c) == Some(plain_alg))
}

/// Signature algorithms a certificate key type can make.
pub(super) fn sig_algs_for_cert_type(cert_type: &str) -> &'static [&'static str] {
    match cert_type {
        "ssh-ed25519-cert-v01@openssh.com" => &["ssh-ed25519-cert-v01@openssh.com"],
        "ecdsa-sha2-nistp256-cert-v01@openssh.com" => &["ecdsa-sha2-nistp256-cert-v01@openssh.com"],
        "ecdsa-sha2-nistp384-cert-v01@openssh.com" => &["ecdsa-sha2-nistp384-cert-v01@openssh.com"],
        "ecdsa-sha2-nistp521-cert-v01@openssh.com" => &["ecdsa-sha2-nistp521-cert-v01@openssh.com"],
        "sk-ssh-ed25519-cert-v01@openssh.com" => &["sk-ssh-ed25519-cert-v01@openssh.com"],
        "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com" => {
            &["sk-ecdsa-sha2-nistp256-cert-v01@openssh.com"]
        }
        "ssh-rsa-cert-v01@openssh.com" => &[
            "rsa-sha2-512-cert-v01@openssh.com",
            "rsa-sha2-256-cert-v01@openssh.com",
            "ssh-rsa-cert-v01@openssh.com",
        ],
        _ => &[],
    }
}

/// The certified public key of a certificate blob, as a plain key blob
/// (RFC 4253 6.6): the type's public fields, which follow the nonce
/// (PROTOCOL.certkeys). The rest of the certificate is not read here.
pub fn plain_blob(cert_blob: &[u8]) -> Result<Vec<u8>, CryptoError> {
    let mut r = Reader::new(cert_blob);
    let cert_type = r.utf8().map_err(|_| CryptoError)?;
    let plain = plain_key_type(cert_type).ok_or(CryptoError)?;
    let _nonce = r.string().map_err(|_| CryptoError)?;
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out);
    w.utf8(plain);
    // ed25519: string pk; ecdsa: string curve, string Q; rsa: mpint e, mpint n;
    // a security key's string application after those. Each is one
    // length-prefixed field on the wire, copied as it stands.
    for _ in 0..public_field_count(plain) {
        let f = r.string().map_err(|_| CryptoError)?;
        w.string(f);
    }
    Ok(out)
}

/// A private key that presents its certificate: the public blob is the
/// certificate, the algorithms are the certificate algorithms, and each
/// signature is the key's own under the plain algorithm (PROTOCOL.certkeys:
/// the signature is made with the certified key).
pub struct CertSigner {
    key: Arc<dyn Signer>,
    cert: Vec<u8>,
    algs: Vec<&'static str>,
}

impl CertSigner {
    /// `key` with its certificate `cert_blob`; fails when the certificate
    /// does not certify that key.
    pub fn new(key: Arc<dyn Signer>, cert_blob: Vec<u8>) -> Result<CertSigner, CryptoError> {
        if plain_blob(&cert_blob)? != key.public_blob() {
            return Err(CryptoError);
        }
        let cert_type = super::blob_key_type(&cert_blob).ok_or(CryptoError)?;
        let key_algs = key.sig_algs();
        let algs = sig_algs_for_cert_type(cert_type)
            .iter()
            .copied()
            .filter(|a| plain_sig_alg(a).is_some_and(|p| key_algs.contains(&p)))
            .collect();
        Ok(CertSigner {
            key,
            cert: cert_blob,
            algs,
        })
    }
}

impl Signer for CertSigner {
    fn public_blob(&self) -> Vec<u8> {
        self.cert.clone()
    }

    fn sig_algs(&self) -> Vec<&'static str> {
        self.algs.clone()
    }

    fn sign(&self, sig_alg: &str, data: &[u8]) -> Result<Vec<u8>, CryptoError> {
        if !self.algs.contains(&sig_alg) {
            return Err(CryptoError);
        }
        self.key
            .sign(plain_sig_alg(sig_alg).ok_or(CryptoError)?, data)
    }
}
