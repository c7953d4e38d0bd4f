//! Private keys in OpenSSL's PEM formats, which ssh reads through libcrypto
//! and ssh-key does not: `RSA PRIVATE KEY` (PKCS#1, what `ssh-keygen -m
//! PEM` writes and cloud providers hand out as `.pem` files), `EC PRIVATE
//! KEY` (SEC1) and `PRIVATE KEY` (PKCS#8, with an RSA, ECDSA or Ed25519
//! key). The DER inside is decoded by RustCrypto's pkcs1, sec1 and pkcs8
//! crates; the numbers go to the engine's key pair as an OpenSSH file's do.
//! Encrypted PEM keys are refused with the command that converts them.

use sluice_proto::crypto::hostkey::KeyPair;

const RSA: &str = "1.2.840.113549.1.1.1";
const EC: &str = "1.2.840.10045.2.1";
const ED25519: &str = "1.3.101.112";

/// The key in `text` if it is a PEM private key of OpenSSL's (None: not
/// one, e.g. OpenSSH's own format); an error says what to do.
pub fn parse(text: &str) -> Option<Result<KeyPair, String>> {
    let text = text.trim_start();
    let label = text.strip_prefix("-----BEGIN ")?.split("-----").next()?;
    let kind = match label {
        "RSA PRIVATE KEY" | "EC PRIVATE KEY" | "PRIVATE KEY" => label,
        "ENCRYPTED PRIVATE KEY" => return Some(Err(ENCRYPTED.to_owned())),
        _ => return None,
    };
    Some(decode(text, kind))
}

const ENCRYPTED: &str = "encrypted PEM private keys are not supported; \
     convert the key to OpenSSH's format with ssh-keygen -p -f FILE";

fn decode(text: &str, kind: &str) -> Result<KeyPair, String> {
    let end = format!("-----END {kind}-----");
    let body = text
        .split_once('\n')
        .map(|(_, rest)| rest)
        .and_then(|rest| rest.split_once(end.as_str()))
        .map(|(body, _)| body)
        .ok_or_else(|| format!("no \"{end}\" line"))?;
    // RFC 1421 headers (Proc-Type, DEK-Info) mean OpenSSL's encryption.
    if body.lines().any(|l| l.contains(':')) {
        return Err(ENCRYPTED.to_owned());
    }
    let b64: String = body.split_whitespace().collect();
    let der =
        zeroize::Zeroizing::new(super::known_hosts::base64_decode(&b64).ok_or("invalid base64")?);
    match kind {
        "RSA PRIVATE KEY" => rsa(&der),
        "EC PRIVATE KEY" => ec(&der, None),
        _ => pkcs8(&der),
    }
}

fn rsa(der: &[u8]) -> Result<KeyPair, String> {
    let k = pkcs1::RsaPrivateKey::try_from(der).map_err(|e| format!("PKCS#1: {e}"))?;
    KeyPair::from_rsa(
        k.modulus.as_bytes(),
        k.public_exponent.as_bytes(),
        k.private_exponent.as_bytes(),
        k.coefficient.as_bytes(),
        k.prime1.as_bytes(),
        k.prime2.as_bytes(),
    )
    .map_err(|e| format!("unusable RSA key: {e:?}"))
}

/// A SEC1 key; `curve` from PKCS#8's algorithm when the key omits it.
fn ec(der: &[u8], curve: Option<String>) -> Result<KeyPair, String> {
    let k = sec1::EcPrivateKey::try_from(der).map_err(|e| format!("SEC1: {e}"))?;
    let oid = match k.parameters {
        Some(sec1::EcParameters::NamedCurve(oid)) => oid.to_string(),
        None => curve.ok_or("the EC key names no curve")?,
    };
    let (name, size) = match oid.as_str() {
        "1.2.840.10045.3.1.7" => ("nistp256", 32),
        "1.3.132.0.34" => ("nistp384", 48),
        "1.3.132.0.35" => ("nistp521", 66),
        other => return Err(format!("EC curve {other} is not supported")),
    };
    let public = k
        .public_key
        .ok_or("the EC key file holds no public key; convert it with ssh-keygen -p -f FILE")?;
    // SEC1 writes the scalar at the field's size; older writers did not.
    let scalar = k.private_key;
    if scalar.is_empty() || scalar.len() > size {
        return Err("EC private key of the wrong size".to_owned());
    }
    let mut full = zeroize::Zeroizing::new(vec![0u8; size]);
    full[size - scalar.len()..].copy_from_slice(scalar);
    KeyPair::from_ecdsa(name, &full, public).map_err(|e| format!("unusable EC key: {e:?}"))
}

fn pkcs8(der: &[u8]) -> Result<KeyPair, String> {
    let info = pkcs8::PrivateKeyInfo::try_from(der).map_err(|e| format!("PKCS#8: {e}"))?;
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
                _ => return Err("Ed25519 key of the wrong size".to_owned()),
            };
            KeyPair::from_ed25519_seed(seed).map_err(|e| format!("unusable Ed25519 key: {e:?}"))
        }
        other => Err(format!("key algorithm {other} is not supported")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_proto::crypto::hostkey::Signer;

    /// Made for these tests by ssh-keygen 9.2 (`-m PEM`, `-m PKCS8`) and,
    /// for Ed25519, which ssh-keygen writes only in its own format, by
    /// `openssl genpkey`; the `.pub` files by ssh-keygen.
    fn key(name: &str) -> KeyPair {
        let text = std::fs::read_to_string(format!(
            "{}/src/keys/testdata/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        parse(&text).expect("a PEM key").unwrap()
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
    fn encrypted_pem_is_refused_with_the_conversion_and_other_text_is_not_ours() {
        let text = std::fs::read_to_string(format!(
            "{}/src/keys/testdata/pem_rsa_enc",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let e = parse(&text).unwrap().unwrap_err();
        assert!(e.contains("ssh-keygen -p -f"), "{e}");
        let e = parse(
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n",
        )
        .unwrap()
        .unwrap_err();
        assert!(e.contains("ssh-keygen -p -f"), "{e}");
        assert!(parse("-----BEGIN OPENSSH PRIVATE KEY-----\n").is_none());
        assert!(parse("ssh-ed25519 AAAA").is_none());
        // Damaged files are errors, never panics.
        let good = std::fs::read_to_string(format!(
            "{}/src/keys/testdata/pem_ec",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        // (Cut anywhere before the END line's last dash; a missing final
        // newline is a whole file.)
        for n in 0..good.trim_end().len() {
            if let Some(Ok(_)) = parse(&good[..n]) {
                panic!("a cut key parsed at {n}");
            }
        }
    }
}
