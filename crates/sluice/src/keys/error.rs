//! Why a key could not be loaded, made or used: [`KeyError`] for identity
//! files, host keys (from their file, a FIDO library or HostKeyAgent's
//! agent) and generated key files, with the `Load key "PATH": ...` reasons
//! in [`LoadError`]; `Display` gives ssh's and sshd's words.

use super::agent::AgentError;
use super::pem_key::PemError;
use super::sk_provider::SkError;
use sluice_proto::crypto::CryptoError;
use std::path::PathBuf;
use std::sync::Arc;

/// Why a private key file did not load: `Load key "PATH": REASON`.
#[derive(Debug)]
pub enum LoadError {
    /// The file cannot be stat'ed (the system's text, as ssh prints it).
    Io(std::io::Error),
    /// An OpenSSL PEM file that does not load.
    Pem(PemError),
    /// No passphrase given decrypts it.
    Passphrase,
    /// Not a private key ssh-key (or ecdsa_pad) can read.
    Format(ssh_key::Error),
    /// A FIDO key type whose file is no security key file.
    NotSecurityKey,
    /// A host key file that is encrypted.
    HostKeyPassphrase,
    /// Neither the key file nor its public half exists.
    Missing,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Io(e) => e.fmt(f),
            LoadError::Pem(e) => e.fmt(f),
            LoadError::Passphrase => {
                f.write_str("incorrect passphrase supplied to decrypt private key")
            }
            LoadError::Format(e) => write!(f, "invalid format ({e})"),
            LoadError::NotSecurityKey => f.write_str("not a security key"),
            LoadError::HostKeyPassphrase => f.write_str("a host key must not have a passphrase"),
            LoadError::Missing => f.write_str("No such file or directory"),
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoadError::Io(e) => Some(e),
            LoadError::Pem(e) => Some(e),
            LoadError::Format(e) => Some(e),
            _ => None,
        }
    }
}

/// Why a key could not be loaded, made or used.
#[derive(Debug)]
pub enum KeyError {
    /// `Load key "PATH": REASON`.
    Load {
        /// The key file.
        path: PathBuf,
        /// Why.
        reason: LoadError,
    },
    /// ssh's UNPROTECTED PRIVATE KEY FILE warning: our own key file is
    /// readable by group or others.
    Unprotected {
        /// The key file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A key file that cannot be read as a private or a public key.
    Unreadable {
        /// The file.
        path: PathBuf,
        /// ssh-key's reason (for the private key).
        error: ssh_key::Error,
    },
    /// The engine refuses the key's numbers.
    Unusable(CryptoError),
    /// A key type the engine cannot sign with (its name).
    UnsupportedType(String),
    /// ssh-key could not encode or decode a key.
    Encoding(ssh_key::Error),
    /// A generated key's DER did not decode (never with aws-lc's output).
    Der(PemError),
    /// A generated EC key's DER without its public point.
    NoPublicPoint,
    /// Key generation failed (the type as ssh-keygen names it, if told).
    Generate(Option<&'static str>),
    /// A new key file could not be written.
    Write {
        /// The file.
        path: PathBuf,
        /// The system's reason.
        error: std::io::Error,
    },
    /// A new key file's mode could not be set.
    Chmod {
        /// The file.
        path: PathBuf,
        /// The system's reason.
        error: std::io::Error,
    },
    /// `sluiced -A`: a key could not be saved.
    Save {
        /// The file.
        path: PathBuf,
        /// The system's reason.
        error: std::io::Error,
    },
    /// A FIDO key file and no SecurityKeyProvider (the reason was logged).
    NoSkProvider(PathBuf),
    /// A FIDO key file whose provider does not load (the reason was logged).
    SkProviderUnusable {
        /// The key file.
        path: PathBuf,
        /// The provider's error.
        error: SkError,
    },
    /// A FIDO host key and no SecurityKeyProvider: what to do instead.
    NoHostSkProvider(PathBuf),
    /// The FIDO library: it does not load, or did not sign.
    Sk(SkError),
    /// A host key whose public half only is readable, and no HostKeyAgent.
    PublicOnly,
    /// A host key whose private half is not readable and HostKeyAgent's
    /// agent cannot be reached.
    AgentUnreachable(Arc<AgentError>),
    /// HostKeyAgent's agent does not hold the host key.
    NotInAgent {
        /// The agent's socket as configured.
        sock: String,
        /// The key's type name.
        key_type: String,
        /// Its SHA256 fingerprint.
        fingerprint: String,
    },
    /// No host key at all could be loaded.
    NoHostKeys,
}

impl std::fmt::Display for KeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyError::Load { path, reason } => {
                write!(f, "Load key \"{}\": {reason}", path.display())
            }
            KeyError::Unprotected { path, mode } => write!(
                f,
                "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n\
                 @         WARNING: UNPROTECTED PRIVATE KEY FILE!          @\n\
                 @@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n\
                 Permissions 0{mode:o} for '{}' are too open.\n\
                 It is required that your private key files are NOT accessible by others.\n\
                 This private key will be ignored.",
                path.display()
            ),
            KeyError::Unreadable { path, error } => write!(f, "{}: {error}", path.display()),
            KeyError::Unusable(e) => write!(f, "unusable key: {e:?}"),
            KeyError::UnsupportedType(t) => write!(f, "key type {t} is not supported"),
            KeyError::Encoding(e) => e.fmt(f),
            KeyError::Der(e) => e.fmt(f),
            KeyError::NoPublicPoint => f.write_str("EC key without its public point"),
            KeyError::Generate(None) => f.write_str("key generation failed"),
            KeyError::Generate(Some(what)) => write!(f, "{what} key generation failed"),
            KeyError::Write { path, error } => write!(f, "writing {}: {error}", path.display()),
            KeyError::Chmod { path, error } => write!(f, "chmod {}: {error}", path.display()),
            KeyError::Save { path, error } => {
                write!(f, "Could not save your key to {}: {error}", path.display())
            }
            KeyError::NoSkProvider(path) => {
                write!(f, "{}: no security key provider", path.display())
            }
            KeyError::SkProviderUnusable { path, .. } => {
                write!(f, "{}: no usable security key provider", path.display())
            }
            KeyError::NoHostSkProvider(path) => write!(
                f,
                "{} is a FIDO security key, which signs through a middleware library: set \
                 SecurityKeyProvider to its path, or hold the key in an ssh-agent named by \
                 HostKeyAgent; sluiced has no built-in (\"internal\") FIDO support",
                path.display()
            ),
            KeyError::Sk(e) => e.fmt(f),
            KeyError::PublicOnly => f.write_str(
                "only its public key is readable: name the private key file, or an \
                 ssh-agent holding the key with HostKeyAgent",
            ),
            KeyError::AgentUnreachable(e) => write!(
                f,
                "its private key is not readable, and HostKeyAgent's agent cannot be reached: {e}"
            ),
            KeyError::NotInAgent {
                sock,
                key_type,
                fingerprint,
            } => write!(
                f,
                "the agent at \"{sock}\" (HostKeyAgent) does not hold this key ({key_type} {fingerprint}): add its private key there with ssh-add"
            ),
            KeyError::NoHostKeys => f.write_str("sluiced: no hostkeys available -- exiting."),
        }
    }
}

impl std::error::Error for KeyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            KeyError::Load { reason, .. } => Some(reason),
            KeyError::Unreadable { error, .. } | KeyError::Encoding(error) => Some(error),
            KeyError::Der(e) => Some(e),
            KeyError::Write { error, .. }
            | KeyError::Chmod { error, .. }
            | KeyError::Save { error, .. } => Some(error),
            KeyError::SkProviderUnusable { error, .. } | KeyError::Sk(error) => Some(error),
            KeyError::AgentUnreachable(e) => Some(&**e),
            _ => None,
        }
    }
}

impl From<ssh_key::Error> for KeyError {
    fn from(e: ssh_key::Error) -> KeyError {
        KeyError::Encoding(e)
    }
}

impl From<SkError> for KeyError {
    fn from(e: SkError) -> KeyError {
        KeyError::Sk(e)
    }
}
