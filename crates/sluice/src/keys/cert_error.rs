//! Why a certificate was refused (keys/cert.rs): malformed, or failing a
//! check, in OpenSSH's words.

/// What is malformed in a certificate blob or `*-cert.pub` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    /// A key type that is no certificate type the engine knows.
    UnsupportedType,
    /// A field runs past the end.
    Truncated,
    /// The type field is neither user (1) nor host (2).
    UnknownType,
    /// The principals field does not hold UTF-8 strings.
    Principals,
    /// A critical option's or extension's name.
    OptionName,
    /// A critical option's or extension's data field.
    OptionData,
    /// The string inside an option's data field.
    OptionValue,
    /// Options out of order or repeated.
    OptionsUnsorted,
    /// Bytes after the signature.
    TrailingBytes,
    /// The base64 of a `*-cert.pub` line.
    Base64,
    /// The line's type is not the type its data names.
    TypeMismatch,
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Malformed::UnsupportedType => "unsupported certificate type",
            Malformed::Truncated => "truncated certificate",
            Malformed::UnknownType => "unknown certificate type",
            Malformed::Principals => "malformed principals",
            Malformed::OptionName => "malformed option name",
            Malformed::OptionData => "malformed option data",
            Malformed::OptionValue => "malformed option value",
            Malformed::OptionsUnsorted => "options not sorted or repeated",
            Malformed::TrailingBytes => "trailing bytes after the certificate",
            Malformed::Base64 => "bad base64",
            Malformed::TypeMismatch => "type does not match its data",
        })
    }
}

/// Why a certificate is refused: it does not parse, or it fails one of
/// sshkey_cert_check_authority's checks, the CA's signature, or its
/// options; `Display` gives OpenSSH's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertError {
    /// `invalid certificate: ...`
    Invalid(Malformed),
    /// A user certificate where a host one is wanted (`host`), or back.
    WrongType {
        /// A host certificate was wanted.
        host: bool,
    },
    /// Before its validity window.
    NotYetValid,
    /// After its validity window.
    Expired,
    /// No principals where one must be listed.
    NoPrincipals,
    /// The name is not among the principals.
    PrincipalNotListed,
    /// The CA key is a certificate itself.
    CaIsCertificate,
    /// The signature blob has no algorithm name.
    MalformedSignature,
    /// Signed with an algorithm CASignatureAlgorithms does not allow.
    DisallowedAlgorithm(String),
    /// The CA's signature does not verify.
    BadSignature,
    /// A `source-address` critical option that is no CIDR list.
    SourceAddress,
    /// A critical option sshd does not know (it must refuse it).
    UnsupportedCriticalOption(String),
}

impl std::fmt::Display for CertError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CertError::Invalid(m) => write!(f, "invalid certificate: {m}"),
            CertError::WrongType { host } => write!(
                f,
                "Certificate invalid: not a {} certificate",
                if *host { "host" } else { "user" }
            ),
            CertError::NotYetValid => f.write_str("Certificate invalid: not yet valid"),
            CertError::Expired => f.write_str("Certificate invalid: expired"),
            CertError::NoPrincipals => f.write_str("Certificate lacks principal list"),
            CertError::PrincipalNotListed => {
                f.write_str("Certificate invalid: name is not a listed principal")
            }
            CertError::CaIsCertificate => {
                f.write_str("Certificate invalid: CA key is itself a certificate")
            }
            CertError::MalformedSignature => {
                f.write_str("Certificate invalid: malformed signature")
            }
            CertError::DisallowedAlgorithm(alg) => write!(
                f,
                "Certificate signed with disallowed algorithm {alg} (CASignatureAlgorithms)"
            ),
            CertError::BadSignature => {
                f.write_str("Certificate invalid: signature verification failed")
            }
            CertError::SourceAddress => f.write_str("Certificate source-address contents invalid"),
            CertError::UnsupportedCriticalOption(o) => {
                write!(f, "Certificate critical option \"{o}\" is not supported")
            }
        }
    }
}

impl std::error::Error for CertError {}

impl From<Malformed> for CertError {
    fn from(m: Malformed) -> CertError {
        CertError::Invalid(m)
    }
}
