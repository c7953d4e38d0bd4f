//! User authentication messages (RFC 4252 sections 5-8): USERAUTH_REQUEST with
//! the `none`, `publickey`, `password` and `keyboard-interactive` (RFC 4256
//! 3.1) methods, OpenSSH's `publickey-hostbound-v00@openssh.com` (publickey
//! with the server's host key in the request and the signature; PROTOCOL
//! 2.5), FAILURE, SUCCESS, BANNER, PK_OK, and the data a publickey
//! signature covers. Unknown methods keep their fields as opaque bytes
//! (RFC 4252 5 leaves them method-specific), which is the only trailing data
//! accepted here. Keyboard-interactive INFO messages are in `userauth_kbdint`.

use super::{blob, names, reader, text};
use crate::wire::{MsgNum, WireError, Writer};

const NONE: &str = "none";
const PUBLICKEY: &str = "publickey";
/// publickey bound to the server's host key (OpenSSH PROTOCOL 2.5); the
/// server advertises it with EXT_INFO [`HOSTBOUND_EXTENSION`].
pub const PUBLICKEY_HOSTBOUND: &str = "publickey-hostbound-v00@openssh.com";
/// The EXT_INFO extension that offers [`PUBLICKEY_HOSTBOUND`] (value "0").
pub const HOSTBOUND_EXTENSION: &str = "publickey-hostbound@openssh.com";
const PASSWORD: &str = "password";
const KEYBOARD_INTERACTIVE: &str = "keyboard-interactive";

/// The method part of a USERAUTH_REQUEST.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthMethod {
    /// `none` (RFC 4252 5.2): asks which methods can continue.
    None,
    /// `publickey` (RFC 4252 7); without a signature it only asks whether
    /// the key would be accepted.
    PublicKey {
        /// Public key (signature) algorithm name.
        algorithm: String,
        /// Public key blob.
        key_blob: Vec<u8>,
        /// The server's host key from the first key exchange: the request
        /// is `publickey-hostbound-v00@openssh.com` when present.
        host_key: Option<Vec<u8>>,
        /// Signature over [`publickey_signed_data`], when present.
        signature: Option<Vec<u8>>,
    },
    /// `password` (RFC 4252 8), optionally changing it.
    Password {
        /// Current password (UTF-8).
        password: String,
        /// New password, for a change request answering PASSWD_CHANGEREQ.
        new_password: Option<String>,
    },
    /// `keyboard-interactive` (RFC 4256 3.1).
    KeyboardInteractive {
        /// Language tag (deprecated), usually empty.
        language: String,
        /// Comma-separated submethod hints (UTF-8), usually empty.
        submethods: String,
    },
    /// Any other method (e.g. `hostbased`): its fields undecoded.
    Other {
        /// Method name.
        name: String,
        /// Method-specific fields, raw.
        data: Vec<u8>,
    },
}

impl AuthMethod {
    /// The method name as on the wire.
    pub fn name(&self) -> &str {
        match self {
            AuthMethod::None => NONE,
            AuthMethod::PublicKey { host_key: None, .. } => PUBLICKEY,
            AuthMethod::PublicKey { .. } => PUBLICKEY_HOSTBOUND,
            AuthMethod::Password { .. } => PASSWORD,
            AuthMethod::KeyboardInteractive { .. } => KEYBOARD_INTERACTIVE,
            AuthMethod::Other { name, .. } => name,
        }
    }
}

/// SSH_MSG_USERAUTH_REQUEST (RFC 4252 5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserauthRequest {
    /// User name (UTF-8).
    pub user: String,
    /// Service to start after authentication, e.g. `ssh-connection`.
    pub service: String,
    /// Method and its fields.
    pub method: AuthMethod,
}

impl UserauthRequest {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::USERAUTH_REQUEST)?;
        let user = text(&mut r)?;
        let service = text(&mut r)?;
        let name = text(&mut r)?;
        let method = match name.as_str() {
            NONE => AuthMethod::None,
            PUBLICKEY | PUBLICKEY_HOSTBOUND => {
                let has_signature = r.bool()?;
                let algorithm = text(&mut r)?;
                let key_blob = blob(&mut r)?;
                let host_key = if name == PUBLICKEY_HOSTBOUND {
                    Some(blob(&mut r)?)
                } else {
                    None
                };
                let signature = if has_signature {
                    Some(blob(&mut r)?)
                } else {
                    None
                };
                AuthMethod::PublicKey {
                    algorithm,
                    key_blob,
                    host_key,
                    signature,
                }
            }
            PASSWORD => {
                let change = r.bool()?;
                let password = text(&mut r)?;
                let new_password = if change { Some(text(&mut r)?) } else { None };
                AuthMethod::Password {
                    password,
                    new_password,
                }
            }
            KEYBOARD_INTERACTIVE => AuthMethod::KeyboardInteractive {
                language: text(&mut r)?,
                submethods: text(&mut r)?,
            },
            _ => AuthMethod::Other {
                name,
                data: r.bytes(r.remaining().len())?.to_vec(),
            },
        };
        r.finish()?;
        Ok(UserauthRequest {
            user,
            service,
            method,
        })
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut w = Writer::new(out);
        w.u8(MsgNum::USERAUTH_REQUEST.0)
            .utf8(&self.user)
            .utf8(&self.service)
            .utf8(self.method.name());
        match &self.method {
            AuthMethod::None => {}
            AuthMethod::PublicKey {
                algorithm,
                key_blob,
                host_key,
                signature,
            } => {
                w.bool(signature.is_some()).utf8(algorithm).string(key_blob);
                if let Some(h) = host_key {
                    w.string(h);
                }
                if let Some(sig) = signature {
                    w.string(sig);
                }
            }
            AuthMethod::Password {
                password,
                new_password,
            } => {
                w.bool(new_password.is_some()).utf8(password);
                if let Some(new) = new_password {
                    w.utf8(new);
                }
            }
            AuthMethod::KeyboardInteractive {
                language,
                submethods,
            } => {
                w.utf8(language).utf8(submethods);
            }
            AuthMethod::Other { data, .. } => {
                w.bytes(data);
            }
        }
    }
}

/// The exact bytes a `publickey` signature covers (RFC 4252 7): the session
/// identifier, then the USERAUTH_REQUEST fields with the boolean TRUE; with
/// `host_key`, those of `publickey-hostbound-v00@openssh.com`, whose last
/// field is the server's host key (OpenSSH PROTOCOL 2.5).
pub fn publickey_signed_data(
    session_id: &[u8],
    user: &str,
    service: &str,
    algorithm: &str,
    key_blob: &[u8],
    host_key: Option<&[u8]>,
) -> Vec<u8> {
    let extra = host_key.map_or(0, |h| h.len() + 40);
    let mut out = Vec::with_capacity(
        session_id.len()
            + user.len()
            + service.len()
            + algorithm.len()
            + key_blob.len()
            + 40
            + extra,
    );
    let mut w = Writer::new(&mut out);
    w.string(session_id)
        .u8(MsgNum::USERAUTH_REQUEST.0)
        .utf8(user)
        .utf8(service)
        .utf8(if host_key.is_some() {
            PUBLICKEY_HOSTBOUND
        } else {
            PUBLICKEY
        })
        .bool(true)
        .utf8(algorithm)
        .string(key_blob);
    if let Some(h) = host_key {
        w.string(h);
    }
    out
}

/// SSH_MSG_USERAUTH_FAILURE (RFC 4252 5.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserauthFailure {
    /// Methods that can continue.
    pub methods: Vec<String>,
    /// The request succeeded but more methods are required.
    pub partial_success: bool,
}

impl UserauthFailure {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::USERAUTH_FAILURE)?;
        let m = UserauthFailure {
            methods: names(&mut r)?,
            partial_success: r.bool()?,
        };
        r.finish()?;
        Ok(m)
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out)
            .u8(MsgNum::USERAUTH_FAILURE.0)
            .name_list(&self.methods)
            .bool(self.partial_success);
    }
}

/// SSH_MSG_USERAUTH_SUCCESS (RFC 4252 5.1): no fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UserauthSuccess;

impl UserauthSuccess {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        reader(payload, MsgNum::USERAUTH_SUCCESS)?.finish()?;
        Ok(UserauthSuccess)
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(MsgNum::USERAUTH_SUCCESS.0);
    }
}

/// SSH_MSG_USERAUTH_BANNER (RFC 4252 5.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserauthBanner {
    /// Text to show the user (UTF-8); the client must filter control characters.
    pub message: String,
    /// Language tag, usually empty.
    pub language: String,
}

impl UserauthBanner {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::USERAUTH_BANNER)?;
        let m = UserauthBanner {
            message: text(&mut r)?,
            language: text(&mut r)?,
        };
        r.finish()?;
        Ok(m)
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out)
            .u8(MsgNum::USERAUTH_BANNER.0)
            .utf8(&self.message)
            .utf8(&self.language);
    }
}

/// SSH_MSG_USERAUTH_PK_OK (RFC 4252 7, number 60): the key would be accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserauthPkOk {
    /// Algorithm name from the request.
    pub algorithm: String,
    /// Key blob from the request.
    pub key_blob: Vec<u8>,
}

impl UserauthPkOk {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::USERAUTH_PK_OK)?;
        let m = UserauthPkOk {
            algorithm: text(&mut r)?,
            key_blob: blob(&mut r)?,
        };
        r.finish()?;
        Ok(m)
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out)
            .u8(MsgNum::USERAUTH_PK_OK.0)
            .utf8(&self.algorithm)
            .string(&self.key_blob);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_data_layout() {
        let got = publickey_signed_data(
            &[0xaa, 0xbb],
            "u",
            "ssh-connection",
            "ssh-ed25519",
            &[1, 2, 3],
            None,
        );
        let mut want = vec![0, 0, 0, 2, 0xaa, 0xbb, 50, 0, 0, 0, 1, b'u', 0, 0, 0, 14];
        want.extend_from_slice(b"ssh-connection");
        want.extend_from_slice(&[0, 0, 0, 9]);
        want.extend_from_slice(b"publickey");
        want.push(1);
        want.extend_from_slice(&[0, 0, 0, 11]);
        want.extend_from_slice(b"ssh-ed25519");
        want.extend_from_slice(&[0, 0, 0, 3, 1, 2, 3]);
        assert_eq!(got, want);
        // The signed data is the request itself, after the session id, minus the signature.
        let req = UserauthRequest {
            user: "u".into(),
            service: "ssh-connection".into(),
            method: AuthMethod::PublicKey {
                algorithm: "ssh-ed25519".into(),
                key_blob: vec![1, 2, 3],
                host_key: None,
                signature: Some(vec![9]),
            },
        };
        let mut v = Vec::new();
        req.encode(&mut v);
        assert_eq!(v[..v.len() - 5], want[6..]);
        // Hostbound: the other method name, and the host key last.
        let got = publickey_signed_data(
            &[0xaa, 0xbb],
            "u",
            "ssh-connection",
            "ssh-ed25519",
            &[1, 2, 3],
            Some(&[7, 7]),
        );
        let mut req = req;
        if let AuthMethod::PublicKey { host_key, .. } = &mut req.method {
            *host_key = Some(vec![7, 7]);
        }
        let mut v = Vec::new();
        req.encode(&mut v);
        assert_eq!(v[..v.len() - 5], got[6..]);
        assert!(got.ends_with(&[0, 0, 0, 2, 7, 7]));
        let name = PUBLICKEY_HOSTBOUND.as_bytes();
        assert!(got.windows(name.len()).any(|w| w == name));
        assert_eq!(UserauthRequest::decode(&v).unwrap(), req);
    }

    #[test]
    fn publickey_without_flag_rejects_a_signature() {
        let req = UserauthRequest {
            user: "u".into(),
            service: "s".into(),
            method: AuthMethod::PublicKey {
                algorithm: "a".into(),
                key_blob: vec![1],
                host_key: None,
                signature: Some(vec![2]),
            },
        };
        let mut v = Vec::new();
        req.encode(&mut v);
        let flag = 1 + (4 + 1) + (4 + 1) + (4 + 9); // number, user, service, method name
        assert_eq!(v[flag], 1);
        v[flag] = 0;
        assert_eq!(UserauthRequest::decode(&v), Err(WireError::TrailingData));
    }

    #[test]
    fn password_must_be_utf8() {
        let mut v = vec![50];
        Writer::new(&mut v)
            .utf8("u")
            .utf8("ssh-connection")
            .utf8("password")
            .bool(false)
            .string(&[0xc3, 0x28]);
        assert_eq!(UserauthRequest::decode(&v), Err(WireError::BadUtf8));
    }
}
