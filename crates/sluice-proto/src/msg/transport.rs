//! Transport-layer generic messages: RFC 4253 section 11 (DISCONNECT, IGNORE,
//! UNIMPLEMENTED, DEBUG), section 10 (SERVICE_REQUEST, SERVICE_ACCEPT) and
//! RFC 8308 section 2.3 (EXT_INFO). None of them allows trailing data.

use super::{blob, reader, text};
use crate::wire::{MsgNum, WireError, Writer};

/// SSH_MSG_DISCONNECT (RFC 4253 11.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disconnect {
    /// Reason code; see [`super::DisconnectReason`].
    pub reason_code: u32,
    /// Human-readable description (UTF-8).
    pub description: String,
    /// Language tag (RFC 3066), usually empty.
    pub language: String,
}

impl Disconnect {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::DISCONNECT)?;
        let m = Disconnect {
            reason_code: r.u32()?,
            description: text(&mut r)?,
            language: text(&mut r)?,
        };
        r.finish()?;
        Ok(m)
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out)
            .u8(MsgNum::DISCONNECT.0)
            .u32(self.reason_code)
            .utf8(&self.description)
            .utf8(&self.language);
    }
}

/// SSH_MSG_IGNORE (RFC 4253 11.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignore {
    /// Arbitrary data, to be ignored.
    pub data: Vec<u8>,
}

impl Ignore {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::IGNORE)?;
        let m = Ignore {
            data: blob(&mut r)?,
        };
        r.finish()?;
        Ok(m)
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out).u8(MsgNum::IGNORE.0).string(&self.data);
    }
}

/// SSH_MSG_UNIMPLEMENTED (RFC 4253 11.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unimplemented {
    /// Sequence number of the rejected packet.
    pub sequence_number: u32,
}

impl Unimplemented {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::UNIMPLEMENTED)?;
        let m = Unimplemented {
            sequence_number: r.u32()?,
        };
        r.finish()?;
        Ok(m)
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out)
            .u8(MsgNum::UNIMPLEMENTED.0)
            .u32(self.sequence_number);
    }
}

/// SSH_MSG_DEBUG (RFC 4253 11.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Debug {
    /// The sender wants the message shown to the user.
    pub always_display: bool,
    /// The message (UTF-8).
    pub message: String,
    /// Language tag, usually empty.
    pub language: String,
}

impl Debug {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::DEBUG)?;
        let m = Debug {
            always_display: r.bool()?,
            message: text(&mut r)?,
            language: text(&mut r)?,
        };
        r.finish()?;
        Ok(m)
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out)
            .u8(MsgNum::DEBUG.0)
            .bool(self.always_display)
            .utf8(&self.message)
            .utf8(&self.language);
    }
}

/// SSH_MSG_SERVICE_REQUEST (RFC 4253 10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceRequest {
    /// Service name, e.g. `ssh-userauth`.
    pub name: String,
}

impl ServiceRequest {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::SERVICE_REQUEST)?;
        let m = ServiceRequest {
            name: text(&mut r)?,
        };
        r.finish()?;
        Ok(m)
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out)
            .u8(MsgNum::SERVICE_REQUEST.0)
            .utf8(&self.name);
    }
}

/// SSH_MSG_SERVICE_ACCEPT (RFC 4253 10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceAccept {
    /// Service name, as requested.
    pub name: String,
}

impl ServiceAccept {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::SERVICE_ACCEPT)?;
        let m = ServiceAccept {
            name: text(&mut r)?,
        };
        r.finish()?;
        Ok(m)
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out)
            .u8(MsgNum::SERVICE_ACCEPT.0)
            .utf8(&self.name);
    }
}

/// SSH_MSG_EXT_INFO (RFC 8308 2.3): extension names with opaque values
/// (e.g. `server-sig-algs`, whose value is a name-list the caller parses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtInfo {
    /// `(extension-name, extension-value)` pairs in wire order.
    pub extensions: Vec<(String, Vec<u8>)>,
}

impl ExtInfo {
    /// Decodes a whole payload. The count is not trusted for allocation:
    /// each entry must be present in the payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::EXT_INFO)?;
        let count = r.u32()?;
        let mut extensions = Vec::new();
        for _ in 0..count {
            let name = text(&mut r)?;
            extensions.push((name, blob(&mut r)?));
        }
        r.finish()?;
        Ok(ExtInfo { extensions })
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut w = Writer::new(out);
        // Counts above u32::MAX cannot occur: packets are bounded far below.
        w.u8(MsgNum::EXT_INFO.0).u32(self.extensions.len() as u32);
        for (name, value) in &self.extensions {
            w.utf8(name).string(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disconnect_known_bytes() {
        let d = Disconnect {
            reason_code: 11,
            description: "bye".into(),
            language: String::new(),
        };
        let mut v = Vec::new();
        d.encode(&mut v);
        assert_eq!(
            v,
            [1, 0, 0, 0, 11, 0, 0, 0, 3, b'b', b'y', b'e', 0, 0, 0, 0]
        );
        assert_eq!(Disconnect::decode(&v).unwrap(), d);
        v[9] = 0xff;
        assert_eq!(Disconnect::decode(&v), Err(WireError::BadUtf8));
    }

    #[test]
    fn ext_info_count_is_checked() {
        // Claims four billion extensions but holds one.
        let mut v = vec![7, 0xff, 0xff, 0xff, 0xff];
        Writer::new(&mut v)
            .utf8("server-sig-algs")
            .string(b"ssh-ed25519");
        assert_eq!(ExtInfo::decode(&v), Err(WireError::Truncated));
        v[1..5].copy_from_slice(&1u32.to_be_bytes());
        let e = ExtInfo::decode(&v).unwrap();
        assert_eq!(
            e.extensions,
            [("server-sig-algs".to_owned(), b"ssh-ed25519".to_vec())]
        );
    }
}
