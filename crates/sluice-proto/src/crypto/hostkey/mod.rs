//! Public-key signatures for host keys and user keys: key and signature
//! blobs (RFC 4253 section 6.6), `ssh-ed25519` (RFC 8709),
//! `ecdsa-sha2-nistp256/384/521` (RFC 5656 section 3) and `rsa-sha2-256`,
//! `rsa-sha2-512` over `ssh-rsa` keys (RFC 8332), `ssh-rsa` (SHA-1, RFC 4253
//! 6.6) only where a configuration names it, FIDO security keys
//! (PROTOCOL.u2f; see [`sk`]), and OpenSSH certificates of those keys
//! (PROTOCOL.certkeys; see [`cert`]).
//!
//! Verification parses peer blobs strictly (no trailing bytes). Private keys
//! live in [`KeyPair`]; reading key files is the runtime's job.

mod bignum;
pub mod cert;
mod keypair;
mod rsa_sha1;
pub mod sk;
#[cfg(test)]
mod tests;

pub use cert::CertSigner;
pub use keypair::KeyPair;

use super::CryptoError;
use crate::wire::Reader;
use aws_lc_rs::signature::{self, RsaParameters, RsaPublicKeyComponents, UnparsedPublicKey};

/// Signature algorithms we accept and offer, in OpenSSH 10's default order
/// restricted to those we implement: certificates first.
pub const DEFAULT_SIG_ALGS: &[&str] = &[
    "ssh-ed25519-cert-v01@openssh.com",
    "ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "ecdsa-sha2-nistp384-cert-v01@openssh.com",
    "ecdsa-sha2-nistp521-cert-v01@openssh.com",
    "sk-ssh-ed25519-cert-v01@openssh.com",
    "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "rsa-sha2-512-cert-v01@openssh.com",
    "rsa-sha2-256-cert-v01@openssh.com",
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
    "rsa-sha2-512",
    "rsa-sha2-256",
];

/// Every signature algorithm implemented: [`DEFAULT_SIG_ALGS`] and the
/// SHA-1 RSA ones, which OpenSSH 8.8 dropped from its defaults and which a
/// configuration may add back (`PubkeyAcceptedAlgorithms +ssh-rsa`,
/// `HostKeyAlgorithms +ssh-rsa`) for old peers.
pub const ALL_SIG_ALGS: &[&str] = &[
    "ssh-ed25519-cert-v01@openssh.com",
    "ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "ecdsa-sha2-nistp384-cert-v01@openssh.com",
    "ecdsa-sha2-nistp521-cert-v01@openssh.com",
    "sk-ssh-ed25519-cert-v01@openssh.com",
    "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "rsa-sha2-512-cert-v01@openssh.com",
    "rsa-sha2-256-cert-v01@openssh.com",
    "ssh-rsa-cert-v01@openssh.com",
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
    "rsa-sha2-512",
    "rsa-sha2-256",
    "ssh-rsa",
];

/// The plain (not certificate) algorithms of [`DEFAULT_SIG_ALGS`]: what
/// `server-sig-algs` lists and a CA may sign certificates with.
pub const PLAIN_SIG_ALGS: &[&str] = &[
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "rsa-sha2-512",
    "rsa-sha2-256",
];

/// The key type name at the start of a public key blob (`ssh-ed25519`,
/// `ecdsa-sha2-nistp256`, `ssh-rsa`, ...), or None if malformed.
pub fn blob_key_type(blob: &[u8]) -> Option<&str> {
    Reader::new(blob).utf8().ok()
}

/// Signature algorithms a key type can produce (`ssh-rsa` gives
/// `rsa-sha2-512`, `rsa-sha2-256`, then `ssh-rsa` (SHA-1), which every
/// list a configuration does not extend leaves out; others give their own
/// name; certificate types give the certificate algorithms).
pub fn sig_algs_for_key_type(key_type: &str) -> &'static [&'static str] {
    match key_type {
        "ssh-ed25519" => &["ssh-ed25519"],
        "ecdsa-sha2-nistp256" => &["ecdsa-sha2-nistp256"],
        "ecdsa-sha2-nistp384" => &["ecdsa-sha2-nistp384"],
        "ecdsa-sha2-nistp521" => &["ecdsa-sha2-nistp521"],
        "ssh-rsa" => &["rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"],
        sk::SK_ED25519 => &[sk::SK_ED25519],
        sk::SK_ECDSA => &[sk::SK_ECDSA],
        other => cert::sig_algs_for_cert_type(other),
    }
}

/// The NIST curves of `ecdsa-sha2-*` (RFC 5656 section 10.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EcCurve {
    P256,
    P384,
    P521,
}

impl EcCurve {
    /// The curve of a key type or signature algorithm name.
    fn by_key_type(name: &str) -> Option<EcCurve> {
        Some(match name {
            "ecdsa-sha2-nistp256" => EcCurve::P256,
            "ecdsa-sha2-nistp384" => EcCurve::P384,
            "ecdsa-sha2-nistp521" => EcCurve::P521,
            _ => return None,
        })
    }

    /// The curve of an identifier (`nistp256`, ...).
    fn by_id(id: &str) -> Option<EcCurve> {
        [EcCurve::P256, EcCurve::P384, EcCurve::P521]
            .into_iter()
            .find(|c| c.id() == id)
    }

    /// The key type and signature algorithm name.
    fn key_type(self) -> &'static str {
        match self {
            EcCurve::P256 => "ecdsa-sha2-nistp256",
            EcCurve::P384 => "ecdsa-sha2-nistp384",
            EcCurve::P521 => "ecdsa-sha2-nistp521",
        }
    }

    /// The curve identifier inside key blobs.
    fn id(self) -> &'static str {
        match self {
            EcCurve::P256 => "nistp256",
            EcCurve::P384 => "nistp384",
            EcCurve::P521 => "nistp521",
        }
    }

    /// Bytes of a field element or scalar.
    fn field_len(self) -> usize {
        match self {
            EcCurve::P256 => 32,
            EcCurve::P384 => 48,
            EcCurve::P521 => 66,
        }
    }

    /// Checks an uncompressed SEC1 point's form (aws-lc checks the curve).
    fn check_point(self, q: &[u8]) -> Result<(), CryptoError> {
        if q.first() == Some(&0x04)
            && Some(q.len())
                == self
                    .field_len()
                    .checked_mul(2)
                    .and_then(|l| l.checked_add(1))
        {
            Ok(())
        } else {
            Err(CryptoError)
        }
    }

    fn verify_alg(self) -> &'static signature::EcdsaVerificationAlgorithm {
        match self {
            EcCurve::P256 => &signature::ECDSA_P256_SHA256_FIXED,
            EcCurve::P384 => &signature::ECDSA_P384_SHA384_FIXED,
            EcCurve::P521 => &signature::ECDSA_P521_SHA512_FIXED,
        }
    }

    fn signing_alg(self) -> &'static signature::EcdsaSigningAlgorithm {
        match self {
            EcCurve::P256 => &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            EcCurve::P384 => &signature::ECDSA_P384_SHA384_FIXED_SIGNING,
            EcCurve::P521 => &signature::ECDSA_P521_SHA512_FIXED_SIGNING,
        }
    }
}

/// Left-pads an unsigned big-endian magnitude to exactly `width` bytes,
/// after stripping leading zeros; fails if it does not fit.
fn left_pad_into(magnitude: &[u8], out: &mut [u8]) -> Result<(), CryptoError> {
    let start = magnitude
        .iter()
        .position(|&b| b != 0)
        .unwrap_or(magnitude.len());
    let m = magnitude.get(start..).unwrap_or_default();
    let pad = out.len().checked_sub(m.len()).ok_or(CryptoError)?;
    let (zeros, rest) = out.split_at_mut(pad);
    zeros.fill(0);
    rest.copy_from_slice(m);
    Ok(())
}

/// Strips leading zero bytes from a big-endian magnitude.
fn strip_zeros(b: &[u8]) -> &[u8] {
    let start = b.iter().position(|&x| x != 0).unwrap_or(b.len());
    b.get(start..).unwrap_or_default()
}

/// Verifies `signature` (the blob `string alg || string sig`) over `data`
/// with the public key `key_blob`, requiring the blob's algorithm to be
/// `sig_alg` and compatible with the key's type. For a certificate the
/// signature is the certified key's, under the plain algorithm.
///
/// Which algorithms are acceptable (SHA-1 `ssh-rsa` among them) is the
/// caller's list to check; this checks that the signature holds.
pub fn verify(
    sig_alg: &str,
    key_blob: &[u8],
    signature: &[u8],
    data: &[u8],
) -> Result<(), CryptoError> {
    verify_details(sig_alg, key_blob, signature, data).map(|_| ())
}

/// [`verify`], returning for a security key (or a certificate of one)
/// what its authenticator said: the flags and counter a server's policy
/// judges (sshd's PubkeyAuthOptions, `no-touch-required`). None for other
/// keys.
pub fn verify_details(
    sig_alg: &str,
    key_blob: &[u8],
    signature: &[u8],
    data: &[u8],
) -> Result<Option<sk::SkSignature>, CryptoError> {
    verify_inner(sig_alg, key_blob, signature, data)
}

/// Verifies a `hostkeys-prove-00@openssh.com` signature (OpenSSH PROTOCOL
/// 2.5) by the plain host key `key_blob` over `data`. For an RSA key the
/// algorithm is the one the key exchange used when that was RSA; otherwise
/// the signature's own, where sshd signs with its default, `ssh-rsa`
/// (SHA-1), which ssh accepts here and so do we: the data signed holds the
/// session identifier, which the signer cannot choose, so a SHA-1 collision
/// does not help forge it. Elsewhere SHA-1 is accepted only where a
/// configuration lists `ssh-rsa`.
pub fn verify_hostkeys_proof(
    kex_host_key_alg: &str,
    key_blob: &[u8],
    signature: &[u8],
    data: &[u8],
) -> Result<(), CryptoError> {
    let key_type = blob_key_type(key_blob).ok_or(CryptoError)?;
    if cert::is_cert_type(key_type) {
        return Err(CryptoError);
    }
    if key_type != "ssh-rsa" {
        let alg = sig_algs_for_key_type(key_type).first().ok_or(CryptoError)?;
        return verify_inner(alg, key_blob, signature, data).map(|_| ());
    }
    let kex_plain = cert::plain_sig_alg(kex_host_key_alg).unwrap_or(kex_host_key_alg);
    let alg = if kex_plain.starts_with("rsa-sha2-") {
        kex_plain
    } else {
        let mut r = Reader::new(signature);
        std::str::from_utf8(r.string().map_err(|_| CryptoError)?).map_err(|_| CryptoError)?
    };
    verify_inner(alg, key_blob, signature, data).map(|_| ())
}

fn verify_inner(
    sig_alg: &str,
    key_blob: &[u8],
    signature: &[u8],
    data: &[u8],
) -> Result<Option<sk::SkSignature>, CryptoError> {
    let key_type = blob_key_type(key_blob).ok_or(CryptoError)?;
    if cert::is_cert_type(key_type) {
        if !cert::sig_algs_for_cert_type(key_type).contains(&sig_alg) {
            return Err(CryptoError);
        }
        let plain_alg = cert::plain_sig_alg(sig_alg).ok_or(CryptoError)?;
        return verify_inner(plain_alg, &cert::plain_blob(key_blob)?, signature, data);
    }
    if sk::is_sk_type(key_type) {
        if sig_alg != key_type {
            return Err(CryptoError);
        }
        return sk::verify(key_type, key_blob, signature, data).map(Some);
    }
    let mut sig_r = Reader::new(signature);
    let blob_alg = sig_r.string().map_err(|_| CryptoError)?;
    let sig = sig_r.string().map_err(|_| CryptoError)?;
    sig_r.finish().map_err(|_| CryptoError)?;
    if blob_alg != sig_alg.as_bytes() {
        return Err(CryptoError);
    }

    let mut key = Reader::new(key_blob);
    let key_type = key.utf8().map_err(|_| CryptoError)?;
    if !sig_algs_for_key_type(key_type).contains(&sig_alg) {
        return Err(CryptoError);
    }
    match key_type {
        "ssh-ed25519" => {
            let pk = key.string().map_err(|_| CryptoError)?;
            key.finish().map_err(|_| CryptoError)?;
            if pk.len() != 32 || sig.len() != 64 {
                return Err(CryptoError);
            }
            UnparsedPublicKey::new(&signature::ED25519, pk)
                .verify(data, sig)
                .map_err(|_| CryptoError)
                .map(|()| None)
        }
        "ssh-rsa" => {
            let e = key.mpint().map_err(|_| CryptoError)?;
            let n = key.mpint().map_err(|_| CryptoError)?;
            key.finish().map_err(|_| CryptoError)?;
            let n = strip_zeros(n);
            let params: &RsaParameters = match sig_alg {
                "rsa-sha2-256" => &signature::RSA_PKCS1_1024_8192_SHA256_FOR_LEGACY_USE_ONLY,
                "rsa-sha2-512" => &signature::RSA_PKCS1_1024_8192_SHA512_FOR_LEGACY_USE_ONLY,
                "ssh-rsa" => &signature::RSA_PKCS1_1024_8192_SHA1_FOR_LEGACY_USE_ONLY,
                _ => return Err(CryptoError),
            };
            // Some signers drop leading zero bytes of the signature; OpenSSH
            // pads them back, and so do we. Longer than the modulus fails.
            if sig.len() > n.len() {
                return Err(CryptoError);
            }
            let mut padded = vec![0u8; n.len()];
            left_pad_into(sig, &mut padded)?;
            let components = RsaPublicKeyComponents {
                n,
                e: strip_zeros(e),
            };
            components
                .verify(params, data, &padded)
                .map_err(|_| CryptoError)
                .map(|()| None)
        }
        _ => {
            let curve = EcCurve::by_key_type(key_type).ok_or(CryptoError)?;
            let id = key.string().map_err(|_| CryptoError)?;
            let q = key.string().map_err(|_| CryptoError)?;
            key.finish().map_err(|_| CryptoError)?;
            if id != curve.id().as_bytes() {
                return Err(CryptoError);
            }
            curve.check_point(q)?;
            let mut inner = Reader::new(sig);
            let r = inner.mpint().map_err(|_| CryptoError)?;
            let s = inner.mpint().map_err(|_| CryptoError)?;
            inner.finish().map_err(|_| CryptoError)?;
            let w = curve.field_len();
            let mut fixed = [0u8; 132];
            let fixed = fixed.get_mut(..w.saturating_mul(2)).ok_or(CryptoError)?;
            let (fr, fs) = fixed.split_at_mut(w);
            left_pad_into(r, fr)?;
            left_pad_into(s, fs)?;
            UnparsedPublicKey::new(curve.verify_alg(), q)
                .verify(data, fixed)
                .map_err(|_| CryptoError)
                .map(|()| None)
        }
    }
}

/// Something that can sign with one key: a key pair in memory, or an agent.
pub trait Signer: Send + Sync {
    /// The public key blob (RFC 4253 6.6).
    fn public_blob(&self) -> Vec<u8>;
    /// Signature algorithms this key can produce, preferred first.
    fn sig_algs(&self) -> Vec<&'static str>;
    /// Signs `data`, returning the signature blob `string alg || string sig`.
    fn sign(&self, sig_alg: &str, data: &[u8]) -> Result<Vec<u8>, CryptoError>;
    /// Signs a key exchange's hash H = `hash`(`transcript`) (RFC 4253 8:
    /// V_C, V_S, I_C, I_S, K_S, then the method's values and K). A key kept
    /// in another process (sluiced's monitor) is sent the transcript
    /// rather than H, so that its holder signs only exchange hashes it
    /// computed itself from a transcript it checked.
    fn sign_exchange(
        &self,
        sig_alg: &str,
        hash: crate::crypto::kex::HashAlg,
        transcript: &[u8],
    ) -> Result<Vec<u8>, CryptoError> {
        self.sign(sig_alg, &hash.digest(transcript))
    }
}
