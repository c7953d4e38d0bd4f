//! OpenSSH certificates (PROTOCOL.certkeys) as the runtime judges them,
//! for user certificates in sluiced and host certificates in sluice:
//! strict parsing, the checks of OpenSSH's sshkey_cert_check_authority
//! (type, validity window, principals) in its words, the CA's signature and
//! its algorithm (CASignatureAlgorithms), and the options a user
//! certificate carries (critical options that must be enforced, extensions
//! that grant).
//!
//! The certificate is parsed here, not by ssh-key 0.6's `Certificate`: that
//! refuses `valid before` = 2^64-1, which is how `ssh-keygen -s` writes
//! "forever" (its default), so most real certificates would not load. The
//! CA's signature is checked with the engine's verifier over the signed
//! bytes, the same code that checks every other signature.
//!
//! Which CAs are trusted (TrustedUserCAKeys, `cert-authority`,
//! `@cert-authority`) is the caller's question; the engine only sees a
//! certificate as a wrapper around the key that signs
//! (sluice_proto::crypto::hostkey::cert).

pub use super::cert_error::{CertError, Malformed};
use super::identity::fingerprint_sha256;
use super::key_type::sshd_key_type;
use sluice_proto::crypto::hostkey;
use sluice_proto::wire::Reader;
use std::net::IpAddr;

/// CASignatureAlgorithms' default, as OpenSSH's (ssh and sshd): a CA may
/// be a FIDO key too; SHA-1 (`ssh-rsa`) only when a configuration names it
/// ([`CA_SIGNATURE_ALGORITHMS_ALL`]).
pub const CA_SIGNATURE_ALGORITHMS: &[&str] = &[
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
    "rsa-sha2-512",
    "rsa-sha2-256",
];

/// What CASignatureAlgorithms may name: the default and `ssh-rsa`.
pub const CA_SIGNATURE_ALGORITHMS_ALL: &[&str] = &[
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

/// A parsed certificate with the blobs its checks compare.
#[derive(Debug, Clone)]
pub struct Cert {
    /// The certified key as a plain key blob.
    pub plain: Vec<u8>,
    /// The CA's public key blob.
    pub ca: Vec<u8>,
    serial: u64,
    host: bool,
    key_id: String,
    principals: Vec<String>,
    valid_after: u64,
    valid_before: u64,
    critical: Vec<(String, String)>,
    extensions: Vec<(String, String)>,
    /// The signature blob (`string alg || string sig`) and the bytes it signs.
    signature: Vec<u8>,
    signed: Vec<u8>,
}

/// The restrictions and grants of a user certificate (sshd's
/// sshauthopt_from_cert).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CertOptions {
    /// `force-command` critical option.
    pub force_command: Option<String>,
    /// `source-address` critical option: a CIDR list the client must match.
    pub source_address: Option<String>,
    /// `permit-pty` extension.
    pub permit_pty: bool,
    /// `permit-port-forwarding` extension.
    pub permit_port_forwarding: bool,
    /// `permit-agent-forwarding` extension.
    pub permit_agent_forwarding: bool,
    /// `permit-X11-forwarding` extension.
    pub permit_x11_forwarding: bool,
    /// `permit-user-rc` extension.
    pub permit_user_rc: bool,
    /// `no-touch-required` extension (a security key's signature need not
    /// show the user's touch).
    pub no_touch_required: bool,
    /// `verify-required` critical option (it must show user verification).
    pub verify_required: bool,
}

/// Critical options or extensions: `string name, string data` pairs, in
/// strictly increasing name order (PROTOCOL.certkeys: sorted, no repeats);
/// a non-empty data field holds one string.
fn options(field: &[u8]) -> Result<Vec<(String, String)>, Malformed> {
    let mut r = Reader::new(field);
    let mut out: Vec<(String, String)> = Vec::new();
    while !r.is_empty() {
        let name = r.utf8().map_err(|_| Malformed::OptionName)?.to_owned();
        let data = r.string().map_err(|_| Malformed::OptionData)?;
        let value = if data.is_empty() {
            String::new()
        } else {
            let mut d = Reader::new(data);
            let v = d.utf8().map_err(|_| Malformed::OptionValue)?.to_owned();
            d.finish().map_err(|_| Malformed::OptionValue)?;
            v
        };
        if out.last().is_some_and(|(prev, _)| *prev >= name) {
            return Err(Malformed::OptionsUnsorted);
        }
        out.push((name, value));
    }
    Ok(out)
}

/// The fields of a certificate blob after the public key (PROTOCOL.certkeys).
fn parse_fields(blob: &[u8]) -> Result<Cert, Malformed> {
    let plain = hostkey::cert::plain_blob(blob).map_err(|_| Malformed::UnsupportedType)?;
    let mut r = Reader::new(blob);
    let bad = |_| Malformed::Truncated;
    let cert_type = r.utf8().map_err(bad)?;
    let plain_type = hostkey::cert::plain_key_type(cert_type).ok_or(Malformed::UnsupportedType)?;
    let fields = hostkey::cert::public_field_count(plain_type);
    r.string().map_err(bad)?; // nonce
    for _ in 0..fields {
        r.string().map_err(bad)?;
    }
    let serial = r.u64().map_err(bad)?;
    let host = match r.u32().map_err(bad)? {
        1 => false,
        2 => true,
        _ => return Err(Malformed::UnknownType),
    };
    let key_id = r.utf8().map_err(bad)?.to_owned();
    let mut p = Reader::new(r.string().map_err(bad)?);
    let mut principals = Vec::new();
    while !p.is_empty() {
        principals.push(p.utf8().map_err(|_| Malformed::Principals)?.to_owned());
    }
    let valid_after = r.u64().map_err(bad)?;
    let valid_before = r.u64().map_err(bad)?;
    let critical = options(r.string().map_err(bad)?)?;
    let extensions = options(r.string().map_err(bad)?)?;
    r.string().map_err(bad)?; // reserved
    let ca = r.string().map_err(bad)?.to_vec();
    let signed_len = blob.len() - r.remaining().len();
    let signature = r.string().map_err(bad)?.to_vec();
    r.finish().map_err(|_| Malformed::TrailingBytes)?;
    Ok(Cert {
        plain,
        ca,
        serial,
        host,
        key_id,
        principals,
        valid_after,
        valid_before,
        critical,
        extensions,
        signature,
        signed: blob.get(..signed_len).unwrap_or_default().to_vec(),
    })
}

/// The key a public key blob stands for: a certificate's certified key,
/// else the blob itself. sshd compares keys so (sshkey_equal_public) when
/// it refuses a key that already met a step of AuthenticationMethods: the
/// same key in a certificate is not a second key.
pub fn plain_key(blob: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    match hostkey::cert::plain_blob(blob) {
        Ok(plain) => std::borrow::Cow::Owned(plain),
        Err(_) => std::borrow::Cow::Borrowed(blob),
    }
}

impl Cert {
    /// Parses a certificate blob (RFC 4253 6.6 form, as on the wire).
    pub fn parse(blob: &[u8]) -> Result<Cert, CertError> {
        Ok(parse_fields(blob)?)
    }

    /// Parses the text of a `*-cert.pub` file (`type base64 [comment]`):
    /// the certificate and its blob.
    pub fn parse_openssh(text: &str) -> Result<(Cert, Vec<u8>), CertError> {
        let mut f = text.split_whitespace();
        let (ty, b64) = (f.next().unwrap_or_default(), f.next().unwrap_or_default());
        let blob = super::known_hosts::base64_decode(b64).ok_or(Malformed::Base64)?;
        if hostkey::blob_key_type(&blob) != Some(ty) {
            return Err(Malformed::TypeMismatch.into());
        }
        Ok((Cert::parse(&blob)?, blob))
    }

    /// OpenSSH's type name of the certificate (`ED25519-CERT`).
    pub fn type_name(&self) -> String {
        format!("{}-CERT", sshd_key_type(&self.plain))
    }

    /// OpenSSH's type name of the CA key (`ED25519`).
    pub fn ca_type_name(&self) -> &'static str {
        sshd_key_type(&self.ca)
    }

    /// Fingerprint of the certified key.
    pub fn fingerprint(&self) -> String {
        fingerprint_sha256(&self.plain)
    }

    /// Fingerprint of the CA key.
    pub fn ca_fingerprint(&self) -> String {
        fingerprint_sha256(&self.ca)
    }

    /// The certificate's key ID.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// Its serial number.
    pub fn serial(&self) -> u64 {
        self.serial
    }

    /// Its principals.
    pub fn principals(&self) -> &[String] {
        &self.principals
    }

    /// Whether the certificate has critical options (a host certificate
    /// must not).
    pub fn has_critical_options(&self) -> bool {
        !self.critical.is_empty()
    }

    /// A host certificate (else a user certificate).
    pub fn is_host(&self) -> bool {
        self.host
    }

    /// The validity window: valid after, valid before (seconds).
    pub fn validity(&self) -> (u64, u64) {
        (self.valid_after, self.valid_before)
    }

    /// The checks of sshkey_cert_check_authority, in its order and words:
    /// the certificate type (`host` or user), the validity window at
    /// `now`, and the principal `name` when there is one to check
    /// (`require_principal`: an empty list fails; `wildcard`: principals
    /// are patterns, as for host certificates). Then the CA's signature,
    /// made with an algorithm of `ca_algs`.
    pub fn check(
        &self,
        host: bool,
        now: u64,
        name: Option<&str>,
        require_principal: bool,
        wildcard: bool,
        ca_algs: &[String],
    ) -> Result<(), CertError> {
        if host != self.host {
            return Err(CertError::WrongType { host });
        }
        if now < self.valid_after {
            return Err(CertError::NotYetValid);
        }
        if now >= self.valid_before {
            return Err(CertError::Expired);
        }
        let principals = &self.principals;
        if principals.is_empty() {
            if require_principal {
                return Err(CertError::NoPrincipals);
            }
        } else if let Some(name) = name {
            let hit = principals.iter().any(|p| {
                if wildcard {
                    super::pattern::match_pattern(name, p)
                } else {
                    p == name
                }
            });
            if !hit {
                return Err(CertError::PrincipalNotListed);
            }
        }
        self.check_signature(ca_algs)
    }

    /// The CA's signature over the certificate, with an allowed algorithm;
    /// the CA key must be a plain key.
    fn check_signature(&self, ca_algs: &[String]) -> Result<(), CertError> {
        let ca_type = hostkey::blob_key_type(&self.ca).unwrap_or_default();
        if hostkey::cert::is_cert_type(ca_type) {
            return Err(CertError::CaIsCertificate);
        }
        let alg = Reader::new(&self.signature)
            .utf8()
            .map_err(|_| CertError::MalformedSignature)?;
        if !ca_algs.iter().any(|a| a == alg) {
            return Err(CertError::DisallowedAlgorithm(alg.to_owned()));
        }
        hostkey::verify(alg, &self.ca, &self.signature, &self.signed)
            .map_err(|_| CertError::BadSignature)
    }

    /// The critical options and extensions of a user certificate; an
    /// unknown critical option or a malformed one refuses the certificate.
    pub fn user_options(&self) -> Result<CertOptions, CertError> {
        let mut o = CertOptions::default();
        for (name, value) in &self.critical {
            match name.as_str() {
                "force-command" => o.force_command = Some(value.clone()),
                "source-address" => {
                    if !cidr_list_ok(value) {
                        return Err(CertError::SourceAddress);
                    }
                    o.source_address = Some(value.clone());
                }
                "verify-required" => o.verify_required = true,
                other => return Err(CertError::UnsupportedCriticalOption(other.to_owned())),
            }
        }
        for (name, _) in &self.extensions {
            match name.as_str() {
                "permit-pty" => o.permit_pty = true,
                "permit-port-forwarding" => o.permit_port_forwarding = true,
                "permit-agent-forwarding" => o.permit_agent_forwarding = true,
                "permit-X11-forwarding" => o.permit_x11_forwarding = true,
                "permit-user-rc" => o.permit_user_rc = true,
                "no-touch-required" => o.no_touch_required = true,
                // Unknown extensions grant nothing (PROTOCOL.certkeys).
                _ => {}
            }
        }
        Ok(o)
    }
}

/// A `source-address` value: addresses or CIDR blocks, comma-separated
/// (sshd's addr_match_cidr_list syntax: no wildcards, no negation).
pub fn cidr_list_ok(list: &str) -> bool {
    !list.is_empty()
        && list.split(',').all(|e| {
            let (addr, len) = match e.split_once('/') {
                Some((a, l)) => (a, Some(l)),
                None => (e, None),
            };
            let Ok(ip) = addr.parse::<IpAddr>() else {
                return false;
            };
            let max = if ip.is_ipv4() { 32 } else { 128 };
            len.is_none_or(|l| l.parse::<u8>().is_ok_and(|n| n <= max))
        })
}

/// Whether `addr` matches a `source-address` list.
pub fn source_address_matches(addr: IpAddr, list: &str) -> bool {
    cidr_list_ok(list) && super::pattern::match_host_and_ip(addr, None, list)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// A CA, a key and a certificate from `ssh-keygen -s` with `opts`.
    fn make(dir: &std::path::Path, name: &str, opts: &[&str]) -> (Cert, Vec<u8>) {
        let key = dir.join(name);
        for k in [&dir.join("ca"), &key] {
            if !k.exists() {
                let st = Command::new("ssh-keygen")
                    .args(["-q", "-N", "", "-t", "ed25519", "-f"])
                    .arg(k)
                    .status()
                    .unwrap();
                assert!(st.success());
            }
        }
        let st = Command::new("ssh-keygen")
            .args(["-q", "-s"])
            .arg(dir.join("ca"))
            .args(["-I", "kid", "-z", "42"])
            .args(opts)
            .arg(dir.join(format!("{name}.pub")))
            .status()
            .unwrap();
        assert!(st.success());
        let text = std::fs::read_to_string(dir.join(format!("{name}-cert.pub"))).unwrap();
        Cert::parse_openssh(&text).unwrap()
    }

    #[test]
    fn ssh_keygen_certificates_checked_as_openssh() {
        let dir = std::env::temp_dir().join(format!("sluice-cert-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let algs: Vec<String> = hostkey::PLAIN_SIG_ALGS
            .iter()
            .map(|s| s.to_string())
            .collect();
        let now = 1_800_000_000;
        // Valid forever (ssh-keygen's default; ssh-key 0.6 cannot read it).
        let (c, c_blob) = make(&dir, "a", &["-n", "alice,bob"]);
        assert_eq!((c.key_id(), c.serial()), ("kid", 42));
        assert_eq!(c.validity(), (0, u64::MAX));
        assert_eq!(c.type_name(), "ED25519-CERT");
        // The certificate stands for its key; a plain key for itself.
        let pub_text = std::fs::read_to_string(dir.join("a.pub")).unwrap();
        let b64 = pub_text.split_whitespace().nth(1).unwrap();
        let key_blob = super::super::known_hosts::base64_decode(b64).unwrap();
        assert_eq!(&*plain_key(&c_blob), key_blob.as_slice());
        assert_eq!(&*plain_key(&key_blob), key_blob.as_slice());
        c.check(false, now, Some("bob"), true, false, &algs)
            .unwrap();
        let e = |r: Result<(), CertError>| r.unwrap_err().to_string();
        assert_eq!(
            e(c.check(false, now, Some("carol"), true, false, &algs)),
            "Certificate invalid: name is not a listed principal"
        );
        assert_eq!(
            e(c.check(true, now, None, false, true, &algs)),
            "Certificate invalid: not a host certificate"
        );
        // Without the CA's algorithm allowed, or with a flipped bit.
        let ed_only = vec!["rsa-sha2-256".to_owned()];
        assert_eq!(
            c.check(false, now, Some("bob"), true, false, &ed_only),
            Err(CertError::DisallowedAlgorithm("ssh-ed25519".into()))
        );
        let mut tampered = c.clone();
        tampered.signed[40] ^= 1;
        assert_eq!(
            e(tampered.check(false, now, Some("bob"), true, false, &algs)),
            "Certificate invalid: signature verification failed"
        );
        let o = c.user_options().unwrap();
        assert!(o.permit_pty && o.permit_port_forwarding && o.force_command.is_none());
        // Window, empty principals, host type, options.
        let (c, _) = make(&dir, "b", &["-V", "20200101:20200102"]);
        assert_eq!(
            e(c.check(false, now, None, false, false, &algs)),
            "Certificate invalid: expired"
        );
        assert_eq!(
            e(c.check(false, 1_577_000_000, None, false, false, &algs)),
            "Certificate invalid: not yet valid"
        );
        let (c, _) = make(&dir, "c", &[]);
        assert_eq!(
            e(c.check(false, now, Some("x"), true, false, &algs)),
            "Certificate lacks principal list"
        );
        c.check(false, now, Some("x"), false, false, &algs).unwrap();
        let (c, _) = make(&dir, "d", &["-h", "-n", "*.example.com"]);
        c.check(true, now, Some("db.example.com"), false, true, &algs)
            .unwrap();
        assert!(c.check(false, now, None, false, false, &algs).is_err());
        let (c, _) = make(
            &dir,
            "e",
            &[
                "-n",
                "u",
                "-O",
                "clear",
                "-O",
                "force-command=true",
                "-O",
                "source-address=127.0.0.1/32",
            ],
        );
        let o = c.user_options().unwrap();
        assert!(!o.permit_pty && !o.permit_agent_forwarding);
        assert_eq!(o.force_command.as_deref(), Some("true"));
        assert_eq!(o.source_address.as_deref(), Some("127.0.0.1/32"));
        let (c, blob) = make(&dir, "f", &["-n", "u", "-O", "critical:nope=1"]);
        assert_eq!(
            c.user_options().unwrap_err(),
            CertError::UnsupportedCriticalOption("nope".into())
        );
        assert!(matches!(
            c.check(true, now, None, false, true, &algs),
            Err(CertError::WrongType { host: true })
        ));
        // Strict parsing: trailing bytes, truncation.
        let e = Cert::parse(&[blob.as_slice(), &[0]].concat()).unwrap_err();
        assert_eq!(e, CertError::Invalid(Malformed::TrailingBytes));
        assert_eq!(
            e.to_string(),
            "invalid certificate: trailing bytes after the certificate"
        );
        assert!(matches!(
            Cert::parse_openssh("ssh-ed25519-cert-v01@openssh.com !!!"),
            Err(CertError::Invalid(Malformed::Base64))
        ));
        for n in (0..blob.len()).step_by(7) {
            assert!(Cert::parse(&blob[..n]).is_err());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn source_addresses() {
        let a: IpAddr = "192.168.1.7".parse().unwrap();
        assert!(source_address_matches(a, "192.168.1.0/24"));
        assert!(source_address_matches(a, "10.0.0.1,192.168.1.7"));
        assert!(!source_address_matches(a, "10.0.0.0/8"));
        assert!(!cidr_list_ok("*.example.com"));
        assert!(!cidr_list_ok("10.0.0.0/33"));
        assert!(!cidr_list_ok("!10.0.0.1"));
        assert!(!cidr_list_ok(""));
        assert!(cidr_list_ok("::1/128,127.0.0.1"));
    }
}
