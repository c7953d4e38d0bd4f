//! Private keys in OpenSSL's PEM formats, which ssh reads through libcrypto
//! and ssh-key does not: `RSA PRIVATE KEY` (PKCS#1, what `ssh-keygen -m
//! PEM` writes, and what ssh-keygen wrote by default before OpenSSH 7.8;
//! cloud providers hand them out as `.pem` files), `EC PRIVATE KEY` (SEC1)
//! and `PRIVATE KEY` (PKCS#8, with an RSA, ECDSA or Ed25519 key). The DER
//! inside is decoded by RustCrypto's pkcs1, sec1 and pkcs8 crates; the
//! numbers go to the engine's key pair as an OpenSSH file's do. A
//! passphrase-protected PKCS#1 or SEC1 file (RFC 1421 headers, AES-CBC, the
//! key from OpenSSL's EVP_BytesToKey with MD5, as ssh-keygen wrote them) is
//! decrypted with aws-lc; other encrypted files are refused with the command
//! that converts them.

use md5::{Digest, Md5};
use sluice_proto::crypto::hostkey::KeyPair;
use sluice_proto::crypto::CryptoError;
use zeroize::Zeroizing;

const RSA: &str = "1.2.840.113549.1.1.1";
const EC: &str = "1.2.840.10045.2.1";
const ED25519: &str = "1.3.101.112";

/// Why a PEM key did not load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PemError {
    /// The file is encrypted and no passphrase was given.
    NeedPassphrase,
    /// The passphrase does not decrypt it.
    WrongPassphrase,
    /// `ENCRYPTED PRIVATE KEY` (PKCS#8 with PBES2): to be converted.
    EncryptedPkcs8,
    /// A cipher in DEK-Info other than AES-CBC: to be converted.
    Cipher(String),
    /// No `-----END <kind>-----` line for the BEGIN line's kind.
    NoEndLine(&'static str),
    /// The body is not base64.
    Base64,
    /// DEK-Info without `cipher,iv`.
    DekInfo,
    /// DEK-Info's IV is not 16 bytes of hex.
    DekInfoIv,
    /// The DER is no PKCS#1 RSA key.
    Pkcs1(pkcs1::Error),
    /// The DER is no SEC1 EC key.
    Sec1(sec1::Error),
    /// The DER is no PKCS#8 key.
    Pkcs8(pkcs8::Error),
    /// The numbers decode but the engine refuses them (`RSA`, `EC`,
    /// `Ed25519`).
    Unusable(&'static str, CryptoError),
    /// A SEC1 key without a curve, in no PKCS#8 wrapper naming one.
    NoCurve,
    /// A curve other than P-256, P-384 and P-521 (its OID).
    Curve(String),
    /// A SEC1 key without its public point.
    NoPublicKey,
    /// An EC private scalar longer than the curve's field (or empty).
    EcScalarSize,
    /// A PKCS#8 Ed25519 key that is not a 32-byte seed.
    Ed25519Size,
    /// A PKCS#8 algorithm other than RSA, EC and Ed25519 (its OID).
    Algorithm(String),
}

impl std::fmt::Display for PemError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PemError::NeedPassphrase => f.write_str("the key is encrypted"),
            PemError::WrongPassphrase => {
                f.write_str("incorrect passphrase supplied to decrypt private key")
            }
            PemError::EncryptedPkcs8 => {
                write!(f, "encrypted PKCS#8 keys are not supported; {CONVERT}")
            }
            PemError::Cipher(c) => write!(f, "PEM cipher {c} is not supported; {CONVERT}"),
            PemError::NoEndLine(kind) => write!(f, "no \"-----END {kind}-----\" line"),
            PemError::Base64 => f.write_str("invalid base64"),
            PemError::DekInfo => f.write_str("bad DEK-Info"),
            PemError::DekInfoIv => f.write_str("bad DEK-Info IV"),
            PemError::Pkcs1(e) => write!(f, "PKCS#1: {e}"),
            PemError::Sec1(e) => write!(f, "SEC1: {e}"),
            PemError::Pkcs8(e) => write!(f, "PKCS#8: {e}"),
            PemError::Unusable(what, e) => write!(f, "unusable {what} key: {e:?}"),
            PemError::NoCurve => f.write_str("the EC key names no curve"),
            PemError::Curve(oid) => write!(f, "EC curve {oid} is not supported"),
            PemError::NoPublicKey => f.write_str(
                "the EC key file holds no public key; convert it with ssh-keygen -p -f FILE",
            ),
            PemError::EcScalarSize => f.write_str("EC private key of the wrong size"),
            PemError::Ed25519Size => f.write_str("Ed25519 key of the wrong size"),
            PemError::Algorithm(oid) => write!(f, "key algorithm {oid} is not supported"),
        }
    }
}

impl std::error::Error for PemError {}

impl From<pkcs1::Error> for PemError {
    fn from(e: pkcs1::Error) -> PemError {
        PemError::Pkcs1(e)
    }
}

impl From<sec1::Error> for PemError {
    fn from(e: sec1::Error) -> PemError {
        PemError::Sec1(e)
    }
}

impl From<pkcs8::Error> for PemError {
    fn from(e: pkcs8::Error) -> PemError {
        PemError::Pkcs8(e)
    }
}

const CONVERT: &str = "convert the key to OpenSSH's format with ssh-keygen -p -f FILE";

/// The key in `text` if it is a PEM private key of OpenSSL's (None: not
/// one, e.g. OpenSSH's own format), decrypted with `passphrase` if it is
/// encrypted.
pub fn parse(text: &str, passphrase: Option<&[u8]>) -> Option<Result<KeyPair, PemError>> {
    let text = text.trim_start();
    let label = text.strip_prefix("-----BEGIN ")?.split("-----").next()?;
    let kind = match label {
        "RSA PRIVATE KEY" => "RSA PRIVATE KEY",
        "EC PRIVATE KEY" => "EC PRIVATE KEY",
        "PRIVATE KEY" => "PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY" => return Some(Err(PemError::EncryptedPkcs8)),
        _ => return None,
    };
    Some(decode(text, kind, passphrase))
}

fn decode(text: &str, kind: &'static str, passphrase: Option<&[u8]>) -> Result<KeyPair, PemError> {
    let end = format!("-----END {kind}-----");
    let body = text
        .split_once('\n')
        .map(|(_, rest)| rest)
        .and_then(|rest| rest.split_once(end.as_str()))
        .map(|(body, _)| body)
        .ok_or(PemError::NoEndLine(kind))?;
    // RFC 1421 headers ("Name: value") come before the base64.
    let mut dek_info = None;
    let mut b64 = String::new();
    for line in body.lines() {
        match line.split_once(':') {
            Some(("DEK-Info", v)) => dek_info = Some(v.trim()),
            Some(_) => {}
            None => b64.push_str(line.trim()),
        }
    }
    let mut der = Zeroizing::new(super::known_hosts::base64_decode(&b64).ok_or(PemError::Base64)?);
    if let Some(dek) = dek_info {
        let pass = passphrase.ok_or(PemError::NeedPassphrase)?;
        let len = decrypt(dek, pass, &mut der)?;
        der.truncate(len);
    }
    let key = match kind {
        "RSA PRIVATE KEY" => rsa(&der),
        "EC PRIVATE KEY" => ec(&der, None),
        _ => pkcs8(&der),
    };
    // Decrypted with a wrong passphrase, the padding may still pass by
    // chance; the DER then does not parse.
    key.map_err(|e| {
        if dek_info.is_some() {
            PemError::WrongPassphrase
        } else {
            e
        }
    })
}

/// Decrypts `data` in place as `DEK-Info: <cipher>,<iv in hex>` says;
/// returns the plaintext's length.
fn decrypt(dek: &str, pass: &[u8], data: &mut [u8]) -> Result<usize, PemError> {
    use aws_lc_rs::cipher::{
        DecryptionContext, PaddedBlockDecryptingKey, UnboundCipherKey, AES_128, AES_192, AES_256,
    };
    let (name, iv_hex) = dek.split_once(',').ok_or(PemError::DekInfo)?;
    let (alg, key_len) = match name {
        "AES-128-CBC" => (&AES_128, 16),
        "AES-192-CBC" => (&AES_192, 24),
        "AES-256-CBC" => (&AES_256, 32),
        other => return Err(PemError::Cipher(other.to_owned())),
    };
    let iv = hex16(iv_hex).ok_or(PemError::DekInfoIv)?;
    let key = bytes_to_key(pass, &iv[..8], key_len);
    let bad = |_| PemError::WrongPassphrase;
    let key = UnboundCipherKey::new(alg, &key).map_err(bad)?;
    let key = PaddedBlockDecryptingKey::cbc_pkcs7(key).map_err(bad)?;
    let plain = key
        .decrypt(data, DecryptionContext::Iv128(iv.into()))
        .map_err(bad)?;
    Ok(plain.len())
}

/// OpenSSL's EVP_BytesToKey with MD5 and one round, as its PEM encryption
/// derives the key: D1 = MD5(pass || salt), Dn = MD5(Dn-1 || pass || salt).
fn bytes_to_key(pass: &[u8], salt: &[u8], len: usize) -> Zeroizing<Vec<u8>> {
    let mut out = Zeroizing::new(Vec::with_capacity(len + 16));
    let mut prev: Option<[u8; 16]> = None;
    while out.len() < len {
        let mut h = Md5::new();
        if let Some(p) = prev {
            h.update(p);
        }
        h.update(pass);
        h.update(salt);
        let d: [u8; 16] = h.finalize().into();
        out.extend_from_slice(&d);
        prev = Some(d);
    }
    out.truncate(len);
    out
}

fn hex16(s: &str) -> Option<[u8; 16]> {
    let s = s.as_bytes();
    if s.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (o, pair) in out.iter_mut().zip(s.chunks(2)) {
        let d = |c: u8| (c as char).to_digit(16);
        *o = u8::try_from(d(pair[0])? * 16 + d(pair[1])?).ok()?;
    }
    Some(out)
}

fn rsa(der: &[u8]) -> Result<KeyPair, PemError> {
    let k = pkcs1::RsaPrivateKey::try_from(der)?;
    KeyPair::from_rsa(
        k.modulus.as_bytes(),
        k.public_exponent.as_bytes(),
        k.private_exponent.as_bytes(),
        k.coefficient.as_bytes(),
        k.prime1.as_bytes(),
        k.prime2.as_bytes(),
    )
    .map_err(|e| PemError::Unusable("RSA", e))
}

/// A SEC1 key; `curve` from PKCS#8's algorithm when the key omits it.
fn ec(der: &[u8], curve: Option<String>) -> Result<KeyPair, PemError> {
    let k = sec1::EcPrivateKey::try_from(der)?;
    let oid = match k.parameters {
        Some(sec1::EcParameters::NamedCurve(oid)) => oid.to_string(),
        None => curve.ok_or(PemError::NoCurve)?,
    };
    let (name, size) = match oid.as_str() {
        "1.2.840.10045.3.1.7" => ("nistp256", 32),
        "1.3.132.0.34" => ("nistp384", 48),
        "1.3.132.0.35" => ("nistp521", 66),
        other => return Err(PemError::Curve(other.to_owned())),
    };
    let public = k.public_key.ok_or(PemError::NoPublicKey)?;
    // SEC1 writes the scalar at the field's size; older writers did not.
    let scalar = k.private_key;
    if scalar.is_empty() || scalar.len() > size {
        return Err(PemError::EcScalarSize);
    }
    let mut full = zeroize::Zeroizing::new(vec![0u8; size]);
    full[size - scalar.len()..].copy_from_slice(scalar);
    KeyPair::from_ecdsa(name, &full, public).map_err(|e| PemError::Unusable("EC", e))
}

fn pkcs8(der: &[u8]) -> Result<KeyPair, PemError> {
    let info = pkcs8::PrivateKeyInfo::try_from(der)?;
    match info.algorithm.oid.to_string().as_str() {
        RSA => rsa(info.private_key),
        EC => {
            let curve = info.algorithm.parameters_oid().ok().map(|o| o.to_string());
            ec(info.private_key, curve)
        }
        ED25519 => {
            // CurvePrivateKey ::= OCTET STRING (RFC 8410): the 32-byte seed.
            let seed = match info.private_key {
                [0x04, 0x20, seed @ ..] if seed.len() == 32 => seed,
                _ => return Err(PemError::Ed25519Size),
            };
            KeyPair::from_ed25519_seed(seed).map_err(|e| PemError::Unusable("Ed25519", e))
        }
        other => Err(PemError::Algorithm(other.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_proto::crypto::hostkey::Signer;

    /// Made for these tests by ssh-keygen 9.2 (`-m PEM`, `-m PKCS8`) and,
    /// for Ed25519, which ssh-keygen writes only in its own format, by
    /// `openssl genpkey`; the `.pub` files by ssh-keygen.
    fn read(name: &str) -> String {
        std::fs::read_to_string(format!(
            "{}/src/keys/testdata/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    fn key(name: &str) -> KeyPair {
        parse(&read(name), None).expect("a PEM key").unwrap()
    }

    fn ssh_blob(name: &str) -> Vec<u8> {
        let text = std::fs::read_to_string(format!(
            "{}/src/keys/testdata/{name}.pub",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let b64 = text.split_whitespace().nth(1).unwrap();
        super::super::known_hosts::base64_decode(b64).unwrap()
    }

    #[test]
    fn rsa_and_ecdsa_in_pkcs1_sec1_and_pkcs8_give_ssh_keygens_public_key() {
        for name in ["pem_rsa", "pem_ec", "pkcs8_rsa", "pkcs8_ec"] {
            let k = key(name);
            assert_eq!(k.public_blob(), ssh_blob(name), "{name}");
            // The private half is the same key: it signs, and the
            // signature verifies against ssh-keygen's public key.
            let alg = sluice_proto::crypto::hostkey::sig_algs_for_key_type(k.key_type())[0];
            let sig = k.sign(alg, b"sluice").unwrap();
            assert!(
                sluice_proto::crypto::hostkey::verify(alg, &ssh_blob(name), &sig, b"sluice")
                    .is_ok(),
                "{name}"
            );
        }
    }

    #[test]
    fn ed25519_in_pkcs8() {
        let k = key("pkcs8_ed25519");
        assert_eq!(k.key_type(), "ssh-ed25519");
        // openssl pkey -pubout: the public key's 32 bytes.
        let public = k.public_blob();
        assert!(public.ends_with(&[
            0x0d, 0x6c, 0xc9, 0x0b, 0xb1, 0xba, 0x2f, 0x6f, 0x38, 0x50, 0xa4, 0x27, 0xdb, 0xa0,
            0xab, 0x37, 0x6e, 0x0e, 0xa7, 0x98, 0x2c, 0xc1, 0x68, 0x04, 0x9e, 0x45, 0x24, 0x1b,
            0xa8, 0x5a, 0x9f, 0xe4
        ]));
    }

    #[test]
    fn encrypted_pkcs1_and_sec1_decrypt_with_the_passphrase() {
        // ssh-keygen -m PEM -N: AES-128-CBC; openssl ec -aes256: AES-256-CBC.
        for (name, public) in [("pem_rsa_enc", "pem_rsa_enc"), ("pem_ec_aes256", "pem_ec")] {
            let text = read(name);
            assert_eq!(
                parse(&text, None).unwrap().unwrap_err(),
                PemError::NeedPassphrase
            );
            let k = parse(&text, Some(b"sluice test")).unwrap().unwrap();
            assert_eq!(k.public_blob(), ssh_blob(public), "{name}");
            assert_eq!(
                parse(&text, Some(b"sluice tesT")).unwrap().unwrap_err(),
                PemError::WrongPassphrase,
                "{name}"
            );
        }
    }

    #[test]
    fn other_encryption_is_refused_with_the_conversion_and_other_text_is_not_ours() {
        let pkcs8 =
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n";
        let des = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\
                   DEK-Info: DES-EDE3-CBC,0011223344556677\n\nAAAA\n-----END RSA PRIVATE KEY-----\n";
        let e = parse(pkcs8, Some(b"pass")).unwrap().unwrap_err();
        assert_eq!(e, PemError::EncryptedPkcs8);
        assert!(e.to_string().contains("ssh-keygen -p -f"), "{e}");
        let e = parse(des, Some(b"pass")).unwrap().unwrap_err();
        assert_eq!(e, PemError::Cipher("DES-EDE3-CBC".into()));
        assert_eq!(
            e.to_string(),
            "PEM cipher DES-EDE3-CBC is not supported; convert the key to OpenSSH's format with ssh-keygen -p -f FILE"
        );
        assert!(parse("-----BEGIN OPENSSH PRIVATE KEY-----\n", None).is_none());
        assert!(parse("ssh-ed25519 AAAA", None).is_none());
        // Damaged files are errors, never panics (cut anywhere before the
        // END line's last dash; a missing final newline is a whole file).
        for name in ["pem_ec", "pem_rsa_enc"] {
            let good = read(name);
            for n in 0..good.trim_end().len() {
                if let Some(Ok(_)) = parse(&good[..n], Some(b"sluice test")) {
                    panic!("{name} cut at {n} parsed");
                }
            }
        }
    }
}
