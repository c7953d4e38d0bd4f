//! ECDSA private keys that ssh-key 0.6 refuses although OpenSSH wrote them.
//!
//! OpenSSH stores an ECDSA private scalar as an mpint, as short as its
//! value allows; ssh-key 0.6 reads it only at the curve's full size (or one
//! byte more, the sign byte) and fails "length invalid" otherwise. About one
//! P-521 key in four comes out one byte short (a 521-bit scalar whose first
//! byte is 0 and second below 0x80), one P-256 or P-384 key in 512. Such a
//! file is read here a second time: its private section (decrypted with
//! ssh-key's own KDF and cipher when the file is encrypted) is written again
//! with the scalar padded to the curve's size, and given to ssh-key as an
//! unencrypted key. Everything else about the file is checked by ssh-key as
//! usual; a file this cannot mend keeps ssh-key's error.

use super::known_hosts::base64_decode;
use sluice_proto::wire::{Reader, Writer};
use ssh_key::PrivateKey;
use std::path::Path;
use zeroize::Zeroizing;

const MAGIC: &[u8] = b"openssh-key-v1\0";
const BEGIN: &str = "-----BEGIN OPENSSH PRIVATE KEY-----";
const END: &str = "-----END OPENSSH PRIVATE KEY-----";
/// The block size of cipher "none", which the padding rounds up to.
const NONE_BLOCK: usize = 8;

/// `PrivateKey::read_openssh_file`, mending a short ECDSA scalar.
pub fn read_file(path: &Path) -> ssh_key::Result<PrivateKey> {
    let first = PrivateKey::read_openssh_file(path);
    let Err(e) = first else { return first };
    let Ok(text) = std::fs::read_to_string(path).map(Zeroizing::new) else {
        return Err(e);
    };
    unarmor(&text).and_then(|raw| mend(&raw, None)).ok_or(e)
}

/// `key.decrypt(pass)`, mending a short ECDSA scalar.
pub fn decrypt(key: &PrivateKey, pass: &[u8]) -> ssh_key::Result<PrivateKey> {
    let first = key.decrypt(pass);
    // A wrong passphrase fails the check words (Error::Crypto): nothing
    // to mend, and no second run of the KDF.
    let Err(e @ ssh_key::Error::Encoding(_)) = first else {
        return first;
    };
    let Ok(raw) = key.to_bytes() else {
        return Err(e);
    };
    mend(&raw, Some((key, pass))).ok_or(e)
}

/// The binary container inside the PEM-style armour.
fn unarmor(text: &str) -> Option<Zeroizing<Vec<u8>>> {
    let body = text.trim().strip_prefix(BEGIN)?.strip_suffix(END)?;
    let b64: String = body.split_whitespace().collect();
    base64_decode(&b64).map(Zeroizing::new)
}

/// The container `raw` again, unencrypted and with the scalar padded, as
/// ssh-key's key; None when there is nothing to mend.
fn mend(raw: &[u8], decrypt_with: Option<(&PrivateKey, &[u8])>) -> Option<PrivateKey> {
    let mut r = Reader::new(raw.strip_prefix(MAGIC)?);
    let cipher = r.string().ok()?;
    let _kdf = r.string().ok()?;
    let _kdf_options = r.string().ok()?;
    if r.u32().ok()? != 1 {
        return None;
    }
    let public = r.string().ok()?;
    let sealed = r.string().ok()?;
    let plain = match decrypt_with {
        None if cipher == b"none" => Zeroizing::new(sealed.to_vec()),
        Some((key, pass)) if cipher != b"none" => {
            // An AEAD cipher's tag follows the private section.
            let tag = match r.remaining() {
                [] => None,
                rest => Some(<[u8; 16]>::try_from(rest).ok()?),
            };
            let (k, iv) = key.kdf().derive_key_and_iv(key.cipher(), pass).ok()?;
            let mut buf = Zeroizing::new(sealed.to_vec());
            key.cipher().decrypt(&k, &iv, &mut buf, tag).ok()?;
            buf
        }
        _ => return None,
    };
    let section = padded_section(&plain)?;
    let mut out = Zeroizing::new(Vec::with_capacity(raw.len() + 64));
    out.extend_from_slice(MAGIC);
    Writer::new(&mut out)
        .string(b"none")
        .string(b"none")
        .string(b"")
        .u32(1)
        .string(public)
        .string(&section);
    PrivateKey::from_bytes(&out).ok()
}

/// The private section with its ECDSA scalar at full size and the padding
/// of cipher "none"; None unless it is one ECDSA key with a short scalar.
fn padded_section(plain: &[u8]) -> Option<Zeroizing<Vec<u8>>> {
    let mut r = Reader::new(plain);
    let check = r.bytes(8).ok()?;
    let key_type = r.string().ok()?;
    let curve = r.string().ok()?;
    let point = r.string().ok()?;
    let scalar = r.string().ok()?;
    let comment = r.string().ok()?;
    let size = match (key_type, curve) {
        (b"ecdsa-sha2-nistp256", b"nistp256") => 32,
        (b"ecdsa-sha2-nistp384", b"nistp384") => 48,
        (b"ecdsa-sha2-nistp521", b"nistp521") => 66,
        _ => return None,
    };
    // Only a minimal mpint shorter than the curve's size is mended: a
    // positive one (no sign bit), without a needless leading zero.
    if scalar.is_empty() || scalar.len() >= size || scalar[0] == 0 || scalar[0] & 0x80 != 0 {
        return None;
    }
    let mut full = Zeroizing::new(vec![0u8; size]);
    full[size - scalar.len()..].copy_from_slice(scalar);
    let mut out = Zeroizing::new(Vec::with_capacity(plain.len() + size));
    Writer::new(&mut out)
        .bytes(check)
        .string(key_type)
        .string(curve)
        .string(point)
        .string(&full)
        .string(comment);
    let mut pad = 1u8;
    while out.len() % NONE_BLOCK != 0 {
        out.push(pad);
        pad += 1;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Made by ssh-keygen 9.2 for these tests: a P-521 scalar of 65 bytes,
    /// the same key encrypted (aes256-ctr, bcrypt, passphrase "sluice
    /// test"), and a P-256 scalar of 31 bytes.
    const P521: &str = include_str!("testdata/p521_short");
    const P521_ENC: &str = include_str!("testdata/p521_short_enc");
    const P256: &str = include_str!("testdata/p256_short");

    /// A key file of our own, removed when dropped.
    struct KeyFile(std::path::PathBuf);

    impl Drop for KeyFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    impl std::ops::Deref for KeyFile {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    fn write(name: &str, text: &str) -> KeyFile {
        let path = std::env::temp_dir().join(format!(
            "sluice-ecdsa-pad-{}-{name}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::write(&path, text).unwrap();
        KeyFile(path)
    }

    #[test]
    fn ssh_key_alone_refuses_these_keys() {
        assert!(PrivateKey::from_openssh(P521).is_err());
        assert!(PrivateKey::from_openssh(P256).is_err());
        let enc = PrivateKey::from_openssh(P521_ENC).unwrap();
        assert!(enc.decrypt(b"sluice test").is_err());
    }

    #[test]
    fn short_scalars_are_read_at_full_size() {
        for (text, size, comment) in [(P521, 66, "short p521"), (P256, 32, "short p256")] {
            let path = write("short", text);
            let key = read_file(&path).unwrap();
            assert!(!key.is_encrypted());
            assert_eq!(key.comment(), comment);
            let ecdsa = key.key_data().ecdsa().unwrap();
            assert_eq!(ecdsa.private_key_bytes().len(), size);
            assert_eq!(ecdsa.private_key_bytes()[0], 0);
        }
    }

    #[test]
    fn an_encrypted_short_scalar_decrypts_and_a_wrong_passphrase_still_fails() {
        let path = write("enc", P521_ENC);
        let key = read_file(&path).unwrap();
        assert!(key.is_encrypted());
        let plain = decrypt(&key, b"sluice test").unwrap();
        let unencrypted = read_file(&write("plain", P521)).unwrap();
        assert_eq!(plain.key_data(), unencrypted.key_data());
        assert!(matches!(
            decrypt(&key, b"wrong"),
            Err(ssh_key::Error::Crypto)
        ));
    }

    #[test]
    fn what_cannot_be_mended_keeps_ssh_keys_error() {
        let path = write(
            "junk",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
        );
        assert!(read_file(&path).is_err());
        // A truncated container, cut at every length: never a panic.
        let raw = unarmor(P521).unwrap();
        for n in 0..raw.len() {
            assert!(mend(&raw[..n], None).is_none() || n == raw.len());
        }
    }
}
