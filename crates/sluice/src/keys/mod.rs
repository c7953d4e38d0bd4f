//! Key material: identity and host key files (OpenSSH format, through
//! ssh-key), authorized_keys with options, known_hosts, and the pattern
//! matching both share; reading a user's file as that user (user_file);
//! RevokedKeys files (revoked); OpenSSH certificates (cert); ECDSA key files
//! whose short private scalar ssh-key 0.6 refuses (ecdsa_pad); OpenSSL's PEM
//! private keys (pem_key); VisualHostKey's picture (randomart); FIDO key
//! files signed through a middleware library (sk_file, sk_provider); where
//! a host key signs from: its file, that library, or HostKeyAgent's agent
//! (host_key_source). Why a key did not load, by kind: error.rs (and the
//! smaller enums of agent, cert, krl, pem_key, revoked and sk_provider).

pub mod agent;
pub mod authorized_keys;
pub mod cert;
pub mod cert_error;
pub mod ecdsa_pad;
pub mod error;
mod host_key_source;
pub mod host_keygen;
pub mod host_keys;
pub mod identity;
pub mod key_type;
pub mod known_hosts;
pub mod known_hosts_edit;
pub mod krl;
pub mod pattern;
pub mod pem_key;
pub mod randomart;
pub mod revoked;
pub mod sk_file;
pub mod sk_provider;
pub mod user_file;
