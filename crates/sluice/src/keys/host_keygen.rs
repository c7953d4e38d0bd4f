//! `sluiced -A`: the missing host keys made, as `ssh-keygen -A` makes
//! sshd's: Ed25519, ECDSA P-256 and RSA 3072 bits (ssh-keygen's default
//! sizes), in OpenSSH's private key format, 0600, with the `.pub` beside it
//! 0644. Key material comes from aws-lc-rs; ssh-key writes the files.

use super::error::KeyError;
use super::pem_key::PemError;
use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use ssh_key::private::KeypairData;
use ssh_key::{LineEnding, PrivateKey};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use zeroize::Zeroizing;

/// The host key types `-A` makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    /// ssh-ed25519.
    Ed25519,
    /// ecdsa-sha2-nistp256.
    Ecdsa,
    /// ssh-rsa, 3072 bits.
    Rsa,
}

impl KeyType {
    /// The word ssh-keygen -A prints for it.
    pub fn label(self) -> &'static str {
        match self {
            KeyType::Ed25519 => "ED25519",
            KeyType::Ecdsa => "ECDSA",
            KeyType::Rsa => "RSA",
        }
    }

    /// The type a HostKey file's name says (`ssh_host_<type>_key`, or any
    /// name holding one of the words); Ed25519, ssh-keygen's default type,
    /// for any other name.
    pub fn for_path(path: &Path) -> KeyType {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        if name.contains("ecdsa") {
            KeyType::Ecdsa
        } else if name.contains("rsa") {
            KeyType::Rsa
        } else {
            KeyType::Ed25519
        }
    }
}

/// A fresh key of `kind`, its comment `comment`.
pub fn generate(kind: KeyType, comment: &str) -> Result<PrivateKey, KeyError> {
    let failed = |what: &'static str| KeyError::Generate(Some(what));
    let (public, private) = match kind {
        KeyType::Ed25519 => {
            let kp = sluice_proto::crypto::hostkey::KeyPair::generate_ed25519()
                .map_err(|_| failed("ED25519"))?;
            let seed = kp.ed25519_seed().ok_or_else(|| failed("ED25519"))?;
            let data = KeypairData::Ed25519(ssh_key::private::Ed25519Keypair::from_seed(&seed));
            return Ok(PrivateKey::new(data, comment)?);
        }
        KeyType::Ecdsa => {
            let kp = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING)
                .map_err(|_| failed("ECDSA"))?;
            let der = kp.to_pkcs8v1().map_err(|_| failed("ECDSA"))?;
            ecdsa_wire(der.as_ref())?
        }
        KeyType::Rsa => {
            let kp = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa3072)
                .map_err(|_| failed("RSA"))?;
            let der =
                AsDer::<aws_lc_rs::encoding::Pkcs8V1Der>::as_der(&kp).map_err(|_| failed("RSA"))?;
            rsa_wire(der.as_ref())?
        }
    };
    // ssh-key builds these types from their encoding only: an unencrypted
    // openssh-key-v1 file in memory (PROTOCOL.key), read back.
    let mut file = Zeroizing::new(b"openssh-key-v1\0".to_vec());
    for s in [&b"none"[..], b"none", b""] {
        string(&mut file, s);
    }
    file.extend_from_slice(&1u32.to_be_bytes());
    string(&mut file, &public);
    let mut section = Zeroizing::new(vec![0u8; 8]); // two equal check ints
    section.extend_from_slice(&private);
    string(&mut section, comment.as_bytes());
    let mut pad = 1u8;
    while section.len() & 7 != 0 {
        section.push(pad);
        pad += 1;
    }
    string(&mut file, &section);
    Ok(PrivateKey::from_bytes(&file)?)
}

type Encoded = (Vec<u8>, Zeroizing<Vec<u8>>);

/// The public key blob and the private key's encoding in OpenSSH's format
/// (PROTOCOL.key): `ecdsa-sha2-nistp256 nistp256 Q d`.
fn ecdsa_wire(pkcs8_der: &[u8]) -> Result<Encoded, KeyError> {
    let der = |e: PemError| KeyError::Der(e);
    let info = pkcs8::PrivateKeyInfo::try_from(pkcs8_der).map_err(|e| der(e.into()))?;
    let k = sec1::EcPrivateKey::try_from(info.private_key).map_err(|e| der(e.into()))?;
    let q = k.public_key.ok_or(KeyError::NoPublicPoint)?;
    let mut d = Zeroizing::new(vec![0u8; 32]);
    let s = k.private_key;
    if s.is_empty() || s.len() > 32 {
        return Err(der(PemError::EcScalarSize));
    }
    d[32 - s.len()..].copy_from_slice(s);
    let mut public = Vec::new();
    string(&mut public, b"ecdsa-sha2-nistp256");
    string(&mut public, b"nistp256");
    string(&mut public, q);
    let mut w = Zeroizing::new(public.clone());
    mpint(&mut w, &d);
    Ok((public, w))
}

/// `ssh-rsa e n`, and `ssh-rsa n e d iqmp p q` (PROTOCOL.key).
fn rsa_wire(pkcs8_der: &[u8]) -> Result<Encoded, KeyError> {
    let der = |e: PemError| KeyError::Der(e);
    let info = pkcs8::PrivateKeyInfo::try_from(pkcs8_der).map_err(|e| der(e.into()))?;
    let k = pkcs1::RsaPrivateKey::try_from(info.private_key).map_err(|e| der(e.into()))?;
    let mut public = Vec::new();
    string(&mut public, b"ssh-rsa");
    mpint(&mut public, k.public_exponent.as_bytes());
    mpint(&mut public, k.modulus.as_bytes());
    let mut w = Zeroizing::new(Vec::new());
    string(&mut w, b"ssh-rsa");
    for n in [
        &k.modulus,
        &k.public_exponent,
        &k.private_exponent,
        &k.coefficient,
        &k.prime1,
        &k.prime2,
    ] {
        mpint(&mut w, n.as_bytes());
    }
    Ok((public, w))
}

fn string(w: &mut Vec<u8>, b: &[u8]) {
    w.extend_from_slice(&(b.len() as u32).to_be_bytes());
    w.extend_from_slice(b);
}

/// RFC 4251's mpint of a positive big-endian number.
fn mpint(w: &mut Vec<u8>, b: &[u8]) {
    let b = &b[b.iter().position(|&x| x != 0).unwrap_or(b.len())..];
    let pad = b.first().is_some_and(|&x| x & 0x80 != 0);
    w.extend_from_slice(&((b.len() + usize::from(pad)) as u32).to_be_bytes());
    if pad {
        w.push(0);
    }
    w.extend_from_slice(b);
}

/// Writes `key` to `path` (0600) and `path.pub` (0644), each through a
/// temporary file renamed into place, so no reader ever sees half a key
/// and the private key is never readable by others, whatever the umask.
pub fn write(key: &PrivateKey, path: &Path) -> Result<(), KeyError> {
    let text = key.to_openssh(LineEnding::LF)?;
    let public = key.public_key().to_openssh()?;
    let pubpath = PathBuf::from(format!("{}.pub", path.display()));
    put(path, text.as_bytes(), 0o600)?;
    put(&pubpath, format!("{public}\n").as_bytes(), 0o644)
}

fn put(path: &Path, data: &[u8], mode: u32) -> Result<(), KeyError> {
    let tmp = PathBuf::from(format!("{}.{}.tmp", path.display(), std::process::id()));
    let made = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        std::fs::set_permissions(&tmp, std::os::unix::fs::PermissionsExt::from_mode(mode))?;
        std::fs::rename(&tmp, path)
    })();
    made.map_err(|error| {
        let _ = std::fs::remove_file(&tmp);
        KeyError::Save {
            path: path.to_owned(),
            error,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_round_trips_through_openssh_format() {
        for (kind, alg) in [
            (KeyType::Ed25519, "ssh-ed25519"),
            (KeyType::Ecdsa, "ecdsa-sha2-nistp256"),
            (KeyType::Rsa, "ssh-rsa"),
        ] {
            let key = generate(kind, "root@test").unwrap();
            assert_eq!(key.algorithm().as_str(), alg);
            let text = key.to_openssh(LineEnding::LF).unwrap();
            let back = PrivateKey::from_openssh(text.as_bytes()).unwrap();
            assert_eq!(back.public_key(), key.public_key());
            if kind == KeyType::Rsa {
                let KeypairData::Rsa(r) = back.key_data() else {
                    panic!("rsa")
                };
                assert_eq!(r.public.n.as_positive_bytes().unwrap().len() * 8, 3072);
            }
        }
    }

    #[test]
    fn type_from_the_file_name() {
        assert_eq!(
            KeyType::for_path(Path::new("/e/ssh_host_rsa_key")),
            KeyType::Rsa
        );
        assert_eq!(
            KeyType::for_path(Path::new("/e/ssh_host_ecdsa_key")),
            KeyType::Ecdsa
        );
        assert_eq!(
            KeyType::for_path(Path::new("/e/ssh_host_ed25519_key")),
            KeyType::Ed25519
        );
        assert_eq!(KeyType::for_path(Path::new("/e/other")), KeyType::Ed25519);
    }
}
