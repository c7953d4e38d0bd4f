//! Binary key revocation lists (`ssh-keygen -k`, OpenSSH PROTOCOL.krl):
//! parsed strictly into what they revoke — keys by blob, SHA-1 or SHA-256
//! hash, and certificates by serial (lists, ranges, bitmaps) or key ID, per
//! CA or for any CA. The signature section is skipped unchecked, as sshd
//! and ssh do when they read RevokedKeys / RevokedHostKeys.

use aws_lc_rs::digest;

/// The first bytes of a KRL.
pub const MAGIC: &[u8] = b"SSHKRL\n\0";
const FORMAT_VERSION: u32 = 1;

const SECTION_CERTIFICATES: u8 = 1;
const SECTION_EXPLICIT_KEY: u8 = 2;
const SECTION_FINGERPRINT_SHA1: u8 = 3;
const SECTION_SIGNATURE: u8 = 4;
const SECTION_FINGERPRINT_SHA256: u8 = 5;

const CERT_SERIAL_LIST: u8 = 0x20;
const CERT_SERIAL_RANGE: u8 = 0x21;
const CERT_SERIAL_BITMAP: u8 = 0x22;
const CERT_KEY_ID: u8 = 0x23;

/// Certificates revoked under one CA (`ca` empty: any CA).
#[derive(Debug, Default)]
struct CertRevocations {
    ca: Vec<u8>,
    /// Inclusive serial ranges (lists and bitmaps become ranges of one).
    serials: Vec<(u64, u64)>,
    key_ids: Vec<String>,
}

/// What a KRL revokes.
#[derive(Debug, Default)]
pub struct Krl {
    keys: Vec<Vec<u8>>,
    sha1: Vec<Vec<u8>>,
    sha256: Vec<Vec<u8>>,
    certs: Vec<CertRevocations>,
}

/// Why a KRL is refused (then every key is, as in sshd and ssh).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KrlError {
    /// A length or field runs past the end of the file or its section.
    Truncated,
    /// The file does not start with [`MAGIC`].
    BadMagic,
    /// A format version other than 1.
    Version(u32),
    /// A section other than a signature after the signature.
    SectionAfterSignature,
    /// A section type PROTOCOL.krl does not define.
    SectionType(u8),
    /// A SHA-1 or SHA-256 fingerprint section entry of another length.
    FingerprintLength {
        /// The hash's length in bytes.
        want: usize,
    },
    /// A serial range whose start is past its end, or with bytes after it.
    SerialRange,
    /// A serial bitmap with bytes after it.
    SerialBitmap,
    /// A serial bitmap reaching past serial 2^64-1.
    BitmapOverflow,
    /// A certificate subsection type PROTOCOL.krl does not define.
    CertSectionType(u8),
}

impl std::fmt::Display for KrlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KrlError::Truncated => f.write_str("truncated KRL (a field runs past the end)"),
            KrlError::BadMagic => f.write_str("not a KRL (bad magic)"),
            KrlError::Version(v) => write!(f, "unsupported KRL format version {v}"),
            KrlError::SectionAfterSignature => f.write_str("KRL section after its signature"),
            KrlError::SectionType(t) => write!(f, "unsupported KRL section type {t}"),
            KrlError::FingerprintLength { want } => {
                write!(f, "KRL fingerprint of a wrong length (want {want} bytes)")
            }
            KrlError::SerialRange => f.write_str("bad KRL serial range"),
            KrlError::SerialBitmap => f.write_str("bad KRL serial bitmap"),
            KrlError::BitmapOverflow => f.write_str("KRL serial bitmap overflows"),
            KrlError::CertSectionType(t) => {
                write!(f, "unsupported KRL certificate section type {t:#x}")
            }
        }
    }
}

impl std::error::Error for KrlError {}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], KrlError> {
        let (a, b) = self.0.split_at_checked(n).ok_or(KrlError::Truncated)?;
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, KrlError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, KrlError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, KrlError> {
        let hi = u64::from(self.u32()?);
        Ok(hi << 32 | u64::from(self.u32()?))
    }
    fn string(&mut self) -> Result<&'a [u8], KrlError> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Krl {
    /// Parses a whole KRL file; any malformation is an error (the caller
    /// then refuses every key, as sshd does).
    pub fn parse(bytes: &[u8]) -> Result<Krl, KrlError> {
        let mut r = Reader(bytes);
        if r.take(MAGIC.len())? != MAGIC {
            return Err(KrlError::BadMagic);
        }
        let version = r.u32()?;
        if version != FORMAT_VERSION {
            return Err(KrlError::Version(version));
        }
        let (_krl_version, _date, _flags) = (r.u64()?, r.u64()?, r.u64()?);
        let (_reserved, _comment) = (r.string()?, r.string()?);
        let mut krl = Krl::default();
        let mut signed = false;
        while !r.is_empty() {
            let kind = r.u8()?;
            let mut data = Reader(r.string()?);
            if signed && kind != SECTION_SIGNATURE {
                return Err(KrlError::SectionAfterSignature);
            }
            match kind {
                SECTION_CERTIFICATES => krl.certs.push(parse_certs(&mut data)?),
                SECTION_EXPLICIT_KEY => krl.keys.extend(blobs(&mut data)?),
                SECTION_FINGERPRINT_SHA1 => krl.sha1.extend(hashes(&mut data, 20)?),
                SECTION_FINGERPRINT_SHA256 => krl.sha256.extend(hashes(&mut data, 32)?),
                SECTION_SIGNATURE => {
                    signed = true;
                    continue;
                }
                other => return Err(KrlError::SectionType(other)),
            }
        }
        Ok(krl)
    }

    /// A plain key (its public blob) is revoked: listed, or its SHA-1 or
    /// SHA-256 hash is.
    pub fn key_revoked(&self, blob: &[u8]) -> bool {
        if self.keys.iter().any(|k| k == blob) {
            return true;
        }
        let sha1 = digest::digest(&digest::SHA1_FOR_LEGACY_USE_ONLY, blob);
        let sha256 = digest::digest(&digest::SHA256, blob);
        self.sha1.iter().any(|h| h == sha1.as_ref())
            || self.sha256.iter().any(|h| h == sha256.as_ref())
    }

    /// A certificate signed by `ca` (public blob) with `serial` and
    /// `key_id` is revoked. Serial 0 is never matched by serial (PROTOCOL.krl:
    /// such certificates can be revoked only by key ID or key).
    pub fn cert_revoked(&self, ca: &[u8], serial: u64, key_id: &str) -> bool {
        self.certs
            .iter()
            .filter(|c| c.ca.is_empty() || c.ca == ca)
            .any(|c| {
                c.key_ids.iter().any(|id| id == key_id)
                    || (serial != 0
                        && c.serials
                            .iter()
                            .any(|&(lo, hi)| lo <= serial && serial <= hi))
            })
    }
}

fn blobs(r: &mut Reader<'_>) -> Result<Vec<Vec<u8>>, KrlError> {
    let mut v = Vec::new();
    while !r.is_empty() {
        v.push(r.string()?.to_vec());
    }
    Ok(v)
}

fn hashes(r: &mut Reader<'_>, len: usize) -> Result<Vec<Vec<u8>>, KrlError> {
    let v = blobs(r)?;
    if v.iter().any(|h| h.len() != len) {
        return Err(KrlError::FingerprintLength { want: len });
    }
    Ok(v)
}

fn parse_certs(r: &mut Reader<'_>) -> Result<CertRevocations, KrlError> {
    let mut c = CertRevocations {
        ca: r.string()?.to_vec(),
        ..Default::default()
    };
    let _reserved = r.string()?;
    while !r.is_empty() {
        let kind = r.u8()?;
        let mut d = Reader(r.string()?);
        match kind {
            CERT_SERIAL_LIST => {
                while !d.is_empty() {
                    let s = d.u64()?;
                    c.serials.push((s, s));
                }
            }
            CERT_SERIAL_RANGE => {
                let (lo, hi) = (d.u64()?, d.u64()?);
                if lo > hi || !d.is_empty() {
                    return Err(KrlError::SerialRange);
                }
                c.serials.push((lo, hi));
            }
            CERT_SERIAL_BITMAP => {
                let offset = d.u64()?;
                let bitmap = d.string()?;
                if !d.is_empty() {
                    return Err(KrlError::SerialBitmap);
                }
                // An mpint, big-endian: bit i (from the least significant
                // end) revokes serial offset + i.
                for (i, byte) in bitmap.iter().rev().enumerate() {
                    for bit in 0..8u64 {
                        if byte & (1 << bit) != 0 {
                            let s = offset
                                .checked_add(i as u64 * 8 + bit)
                                .ok_or(KrlError::BitmapOverflow)?;
                            c.serials.push((s, s));
                        }
                    }
                }
            }
            CERT_KEY_ID => {
                while !d.is_empty() {
                    let id = d.string()?;
                    c.key_ids.push(String::from_utf8_lossy(id).into_owned());
                }
            }
            other => return Err(KrlError::CertSectionType(other)),
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(out: &mut Vec<u8>, b: &[u8]) {
        out.extend_from_slice(&(b.len() as u32).to_be_bytes());
        out.extend_from_slice(b);
    }

    fn header() -> Vec<u8> {
        let mut k = MAGIC.to_vec();
        k.extend_from_slice(&1u32.to_be_bytes());
        k.extend_from_slice(&[0; 24]);
        put(&mut k, b"");
        put(&mut k, b"comment");
        k
    }

    #[test]
    fn sections_as_protocol_krl_describes_them() {
        let mut k = header();
        // Explicit key, SHA-256 of another.
        let mut sec = Vec::new();
        put(&mut sec, b"key-one");
        k.push(SECTION_EXPLICIT_KEY);
        put(&mut k, &sec);
        let h = digest::digest(&digest::SHA256, b"key-two");
        let mut sec = Vec::new();
        put(&mut sec, h.as_ref());
        k.push(SECTION_FINGERPRINT_SHA256);
        put(&mut k, &sec);
        // Certificates of CA "ca": serial 7, 10..=12, bitmap from 100
        // with bits 0 and 9, key ID "bob".
        let mut sec = Vec::new();
        put(&mut sec, b"ca");
        put(&mut sec, b"");
        sec.push(CERT_SERIAL_LIST);
        put(&mut sec, &7u64.to_be_bytes());
        sec.push(CERT_SERIAL_RANGE);
        put(
            &mut sec,
            &[10u64.to_be_bytes(), 12u64.to_be_bytes()].concat(),
        );
        sec.push(CERT_SERIAL_BITMAP);
        let mut bm = 100u64.to_be_bytes().to_vec();
        put(&mut bm, &[0x02, 0x01]);
        put(&mut sec, &bm);
        sec.push(CERT_KEY_ID);
        let mut ids = Vec::new();
        put(&mut ids, b"bob");
        put(&mut sec, &ids);
        k.push(SECTION_CERTIFICATES);
        put(&mut k, &sec);
        let krl = Krl::parse(&k).unwrap();
        assert!(krl.key_revoked(b"key-one") && krl.key_revoked(b"key-two"));
        assert!(!krl.key_revoked(b"key-three"));
        for s in [7, 10, 11, 12, 100, 109] {
            assert!(krl.cert_revoked(b"ca", s, "x"), "serial {s}");
        }
        for s in [0, 8, 13, 101, 108] {
            assert!(!krl.cert_revoked(b"ca", s, "x"), "serial {s}");
        }
        assert!(krl.cert_revoked(b"ca", 0, "bob"));
        assert!(!krl.cert_revoked(b"other-ca", 7, "bob"));
        // Truncations are errors, never panics.
        for cut in MAGIC.len()..k.len() {
            let _ = Krl::parse(&k[..cut]);
        }
        let empty = Krl::parse(&header()).unwrap();
        assert!(!empty.key_revoked(b"key-one") && !empty.cert_revoked(b"ca", 7, "bob"));
        assert_eq!(
            Krl::parse(b"SSHKRL\n\0\0\0\0\x02").unwrap_err(),
            KrlError::Version(2)
        );
        assert_eq!(
            Krl::parse(&header()[..20]).unwrap_err(),
            KrlError::Truncated
        );
        let mut v2 = MAGIC.to_vec();
        v2.extend_from_slice(&2u32.to_be_bytes());
        let e = Krl::parse(&v2).unwrap_err();
        assert_eq!(e, KrlError::Version(2));
        assert_eq!(e.to_string(), "unsupported KRL format version 2");
        assert_eq!(Krl::parse(b"SSHKRX\n\0").unwrap_err(), KrlError::BadMagic);
        let mut odd = header();
        odd.push(9);
        put(&mut odd, b"");
        assert!(matches!(Krl::parse(&odd), Err(KrlError::SectionType(9))));
    }
}
