//! The server's host keys, and throwaway key files for `sluice demo` and tests.

use super::cert::CertError;
use super::error::KeyError;
use crate::log;
use sluice_proto::crypto::hostkey::{CertSigner, KeyPair, Signer};
use ssh_key::private::{Ed25519Keypair, KeypairData};
use ssh_key::{LineEnding, PrivateKey};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a HostCertificate file is not used (logged, the server starts
/// without it): `Could not load host certificate "PATH": ...`, or no
/// loaded key that it certifies.
#[derive(Debug)]
pub enum HostCertError {
    /// The file cannot be read.
    Read(PathBuf, std::io::Error),
    /// It holds no certificate that parses.
    Cert(PathBuf, CertError),
    /// A user certificate.
    NotHost(PathBuf),
    /// The engine cannot sign with it.
    Unusable(PathBuf),
    /// None of the host keys is the certified key.
    NoKey(PathBuf),
}

impl std::fmt::Display for HostCertError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cant = |f: &mut std::fmt::Formatter<'_>, p: &Path| {
            write!(f, "Could not load host certificate \"{}\": ", p.display())
        };
        match self {
            HostCertError::Read(p, e) => {
                cant(f, p)?;
                e.fmt(f)
            }
            HostCertError::Cert(p, e) => {
                cant(f, p)?;
                e.fmt(f)
            }
            HostCertError::NotHost(p) => {
                cant(f, p)?;
                f.write_str("not a host certificate")
            }
            HostCertError::Unusable(p) => {
                cant(f, p)?;
                f.write_str("unusable")
            }
            HostCertError::NoKey(p) => write!(
                f,
                "No matching private key found for certificate {}",
                p.display()
            ),
        }
    }
}

impl std::error::Error for HostCertError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HostCertError::Read(_, e) => Some(e),
            HostCertError::Cert(_, e) => Some(e),
            _ => None,
        }
    }
}

/// The HostKey files, the smallest RSA modulus a host key may have
/// (RequiredRSASize), and where private halves not in the files are
/// (HostKeyAgent, SecurityKeyProvider): what [`load`] needs. Derefs to
/// the list of files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostKeyFiles {
    /// HostKey files, in order.
    pub paths: Vec<PathBuf>,
    /// RequiredRSASize in bits.
    pub min_rsa_bits: u32,
    /// HostCertificate files: certificates for some of the keys.
    pub certificates: Vec<PathBuf>,
    /// HostKeyAgent as written: a socket, or `SSH_AUTH_SOCK` for the
    /// environment's; None: none.
    pub agent: Option<String>,
    /// SecurityKeyProvider as written; None: unset ("internal").
    pub sk_provider: Option<String>,
}

impl Default for HostKeyFiles {
    fn default() -> Self {
        HostKeyFiles {
            paths: Vec::new(),
            min_rsa_bits: DEFAULT_MIN_RSA_BITS,
            certificates: Vec::new(),
            agent: None,
            sk_provider: None,
        }
    }
}

impl std::ops::Deref for HostKeyFiles {
    type Target = Vec<PathBuf>;
    fn deref(&self) -> &Vec<PathBuf> {
        &self.paths
    }
}

impl std::ops::DerefMut for HostKeyFiles {
    fn deref_mut(&mut self) -> &mut Vec<PathBuf> {
        &mut self.paths
    }
}

/// RequiredRSASize's default, and OpenSSH's floor (SSH_RSA_MINIMUM_MODULUS_SIZE).
pub const DEFAULT_MIN_RSA_BITS: u32 = 1024;

/// The modulus size of an `ssh-rsa` public key blob; None for other keys.
pub fn rsa_bits(blob: &[u8]) -> Option<u32> {
    fn field(b: &[u8]) -> Option<(&[u8], &[u8])> {
        let len = u32::from_be_bytes(b.get(..4)?.try_into().ok()?) as usize;
        let end = len.checked_add(4)?;
        Some((b.get(4..end)?, b.get(end..)?))
    }
    let (ty, rest) = field(blob)?;
    if ty != b"ssh-rsa" {
        return None;
    }
    let (_e, rest) = field(rest)?;
    let (n, _) = field(rest)?;
    let n = &n[n.iter().position(|&b| b != 0).unwrap_or(n.len())..];
    let top = u32::from(*n.first()?);
    Some((n.len() as u32 - 1) * 8 + (32 - top.leading_zeros()))
}

/// An RSA key below `min_bits` (or OpenSSH's 1024): sshd's words for why.
pub fn rsa_too_small(blob: &[u8], min_bits: u32) -> Option<String> {
    let bits = rsa_bits(blob)?;
    (bits < min_bits.max(DEFAULT_MIN_RSA_BITS))
        .then(|| format!("Invalid key length ({bits} bits, RequiredRSASize {min_bits})"))
}

/// Loads every host key that can be read and is large enough (RSA keys
/// below RequiredRSASize are skipped with an error, as sshd does): from its
/// file, through the FIDO library, or held by the agent
/// (keys/host_key_source.rs); none at all is an error.
pub fn load(files: &HostKeyFiles) -> Result<Vec<Arc<dyn Signer>>, KeyError> {
    let mut keys: Vec<Arc<dyn Signer>> = Vec::new();
    let mut sources =
        super::host_key_source::Sources::new(files.agent.as_deref(), files.sk_provider.as_deref());
    for p in files.iter() {
        match sources.signer(p) {
            Ok(k) => match rsa_too_small(&k.public_blob(), files.min_rsa_bits) {
                Some(why) => log!(Error, "Host key {}: {why}", p.display()),
                None => keys.push(k),
            },
            Err(e) => log!(Error, "Unable to load host key: {} ({e})", p.display()),
        }
    }
    if keys.is_empty() {
        return Err(KeyError::NoHostKeys);
    }
    // Each certificate goes with the key it certifies, as one more host
    // key whose algorithms are the certificate's (sshd's HostCertificate).
    let mut certified: Vec<Arc<dyn Signer>> = Vec::new();
    for p in &files.certificates {
        match host_certificate(p, &keys) {
            Ok(k) => certified.push(k),
            Err(e) => log!(Error, "{e}"),
        }
    }
    keys.extend(certified);
    Ok(keys)
}

/// A HostCertificate file paired with the loaded host key it certifies.
fn host_certificate(
    path: &Path,
    keys: &[Arc<dyn Signer>],
) -> Result<Arc<dyn Signer>, HostCertError> {
    let p = || path.to_owned();
    let text = std::fs::read_to_string(path).map_err(|e| HostCertError::Read(p(), e))?;
    let (cert, blob) =
        super::cert::Cert::parse_openssh(&text).map_err(|e| HostCertError::Cert(p(), e))?;
    if !cert.is_host() {
        return Err(HostCertError::NotHost(p()));
    }
    let key = keys
        .iter()
        .find(|k| k.public_blob() == cert.plain)
        .ok_or_else(|| HostCertError::NoKey(p()))?;
    let signer = CertSigner::new(key.clone(), blob).map_err(|_| HostCertError::Unusable(p()))?;
    log!(
        Debug1,
        "host certificate: {} type {} ID \"{}\" serial {}",
        path.display(),
        cert.type_name(),
        cert.key_id(),
        cert.serial()
    );
    Ok(Arc::new(signer))
}

/// Writes a fresh Ed25519 key in OpenSSH format (0600) and its `.pub` (0644).
pub fn generate_ed25519_file(path: &Path, comment: &str) -> Result<(), KeyError> {
    let kp = KeyPair::generate_ed25519().map_err(|_| KeyError::Generate(None))?;
    let seed = kp.ed25519_seed().ok_or(KeyError::Generate(None))?;
    let key = PrivateKey::new(
        KeypairData::Ed25519(Ed25519Keypair::from_seed(&seed)),
        comment,
    )?;
    let text = key.to_openssh(LineEnding::LF)?;
    write_mode(path, text.as_bytes(), 0o600)?;
    let public = key.public_key().to_openssh()?;
    let pubpath = PathBuf::from(format!("{}.pub", path.display()));
    write_mode(&pubpath, format!("{public}\n").as_bytes(), 0o644)
}

fn write_mode(path: &Path, data: &[u8], mode: u32) -> Result<(), KeyError> {
    std::fs::write(path, data).map_err(|error| KeyError::Write {
        path: path.to_owned(),
        error,
    })?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(|error| {
        KeyError::Chmod {
            path: path.to_owned(),
            error,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(n: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        for f in [&b"ssh-rsa"[..], &[1, 0, 1], n] {
            b.extend_from_slice(&(f.len() as u32).to_be_bytes());
            b.extend_from_slice(f);
        }
        b
    }

    #[test]
    fn rsa_sizes() {
        let mut n = vec![0u8; 129];
        n[1] = 0x80; // a leading zero, then the top bit of 1024
        assert_eq!(rsa_bits(&blob(&n)), Some(1024));
        n[1] = 0x7f;
        assert_eq!(rsa_bits(&blob(&n)), Some(1023));
        assert!(rsa_too_small(&blob(&n), 0).is_some());
        let n = [0xff; 256];
        assert_eq!(rsa_bits(&blob(&n)), Some(2048));
        assert!(rsa_too_small(&blob(&n), 2048).is_none());
        assert!(rsa_too_small(&blob(&n), 3072).is_some());
        assert_eq!(rsa_bits(b"\0\0\0\x0bssh-ed25519"), None);
        assert_eq!(rsa_bits(&blob(&n)[..20]), None);
    }
}
