//! The server's replies (draft-ietf-secsh-filexfer-02 7) decoded strictly
//! for the client: the inverse of `reply.rs`. Handles, data and messages
//! borrow the packet; NAME entries are copied out (a listing outlives it).

use super::attrs::Attrs;
use super::reply::NameEntry;
use super::{fxp, DecodeError, Status};
use crate::wire::{Reader, WireError};

/// One reply; every kind but VERSION carries the id of its request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply<'a> {
    /// SSH_FXP_VERSION: the server's version and extension pairs.
    Version {
        /// The server's protocol version.
        version: u32,
        /// Extension (name, data) pairs.
        extensions: Vec<(&'a [u8], &'a [u8])>,
    },
    /// SSH_FXP_STATUS.
    Status {
        /// The request id.
        id: u32,
        /// The code.
        code: Status,
        /// The server's message (may be empty: old servers omit it).
        message: &'a [u8],
    },
    /// SSH_FXP_HANDLE.
    Handle {
        /// The request id.
        id: u32,
        /// The handle.
        handle: &'a [u8],
    },
    /// SSH_FXP_DATA.
    Data {
        /// The request id.
        id: u32,
        /// The bytes read.
        data: &'a [u8],
    },
    /// SSH_FXP_NAME.
    Name {
        /// The request id.
        id: u32,
        /// The entries.
        entries: Vec<NameEntry>,
    },
    /// SSH_FXP_ATTRS.
    Attrs {
        /// The request id.
        id: u32,
        /// The attributes.
        attrs: Attrs,
    },
    /// SSH_FXP_EXTENDED_REPLY: the fields depend on the request.
    ExtendedReply {
        /// The request id.
        id: u32,
        /// The request-specific fields.
        data: &'a [u8],
    },
}

impl<'a> Reply<'a> {
    /// Decodes a packet body (type byte first, no length field).
    pub fn decode(body: &'a [u8]) -> Result<Reply<'a>, DecodeError> {
        let mut r = Reader::new(body);
        let kind = r.u8().map_err(|why| DecodeError {
            id: None,
            kind: 0,
            why,
        })?;
        if kind == fxp::VERSION {
            let err = |why| DecodeError {
                id: None,
                kind,
                why,
            };
            let version = r.u32().map_err(err)?;
            let mut extensions = Vec::new();
            while !r.is_empty() {
                extensions.push((r.string().map_err(err)?, r.string().map_err(err)?));
            }
            return Ok(Reply::Version {
                version,
                extensions,
            });
        }
        let id = r.u32().map_err(|why| DecodeError {
            id: None,
            kind,
            why,
        })?;
        // Bytes after the last field are ignored, as OpenSSH's sftp does.
        let reply = Self::decode_body(kind, id, &mut r).map_err(|why| DecodeError {
            id: Some(id),
            kind,
            why,
        })?;
        Ok(reply)
    }

    fn decode_body(kind: u8, id: u32, r: &mut Reader<'a>) -> Result<Reply<'a>, WireError> {
        Ok(match kind {
            fxp::STATUS => {
                let code = Status(r.u32()?);
                // The message and language tag are v3's, but servers of
                // older versions send the code alone (OpenSSH reads only it).
                let message = if r.is_empty() { &[][..] } else { r.string()? };
                if !r.is_empty() {
                    r.string()?;
                }
                Reply::Status { id, code, message }
            }
            fxp::HANDLE => Reply::Handle {
                id,
                handle: r.string()?,
            },
            fxp::DATA => Reply::Data {
                id,
                data: r.string()?,
            },
            fxp::NAME => {
                let count = r.u32()?;
                // Each entry takes at least 12 bytes: a lying count fails
                // on the data, and nothing is reserved from it.
                let mut entries = Vec::new();
                for _ in 0..count {
                    entries.push(NameEntry {
                        filename: r.string()?.to_vec(),
                        longname: r.string()?.to_vec(),
                        attrs: Attrs::decode(r)?,
                    });
                }
                Reply::Name { id, entries }
            }
            fxp::ATTRS => Reply::Attrs {
                id,
                attrs: Attrs::decode(r)?,
            },
            fxp::EXTENDED_REPLY => Reply::ExtendedReply {
                id,
                data: r.bytes(r.remaining().len())?,
            },
            _ => return Err(WireError::BadValue),
        })
    }

    /// The request id (None for VERSION).
    pub fn id(&self) -> Option<u32> {
        match self {
            Reply::Version { .. } => None,
            Reply::Status { id, .. }
            | Reply::Handle { id, .. }
            | Reply::Data { id, .. }
            | Reply::Name { id, .. }
            | Reply::Attrs { id, .. }
            | Reply::ExtendedReply { id, .. } => Some(*id),
        }
    }
}

/// limits@openssh.com's reply (PROTOCOL 4.8); 0 means no limit given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest packet the server takes.
    pub max_packet: u64,
    /// Largest READ it answers in full.
    pub max_read: u64,
    /// Largest WRITE it takes.
    pub max_write: u64,
    /// Most handles open at once.
    pub max_handles: u64,
}

impl Limits {
    /// Decodes the EXTENDED_REPLY fields.
    pub fn decode(data: &[u8]) -> Result<Limits, WireError> {
        let mut r = Reader::new(data);
        let l = Limits {
            max_packet: r.u64()?,
            max_read: r.u64()?,
            max_write: r.u64()?,
            max_handles: r.u64()?,
        };
        Ok(l)
    }
}

/// statvfs@openssh.com's reply fields (PROTOCOL 4.4) decoded.
pub fn statvfs(data: &[u8]) -> Result<super::reply::Statvfs, WireError> {
    let mut r = Reader::new(data);
    let mut v = [0u64; 11];
    for x in &mut v {
        *x = r.u64()?;
    }
    let [bsize, frsize, blocks, bfree, bavail, files, ffree, favail, fsid, flag, namemax] = v;
    Ok(super::reply::Statvfs {
        bsize,
        frsize,
        blocks,
        bfree,
        bavail,
        files,
        ffree,
        favail,
        fsid,
        flag,
        namemax,
    })
}

/// sha256-range@sluice.dev's reply (PROTOCOL.md): how many bytes were
/// hashed (fewer than asked when the file ends first) and their SHA-256.
pub fn sha256_range(data: &[u8]) -> Result<(u64, [u8; 32]), WireError> {
    let mut r = Reader::new(data);
    let n = r.u64()?;
    let h = r.string()?;
    let h: [u8; 32] = h.try_into().map_err(|_| WireError::BadValue)?;
    Ok((n, h))
}

/// User names and group names, in the order of the ids asked.
pub type NameLists = (Vec<Vec<u8>>, Vec<Vec<u8>>);

/// users-groups-by-id@openssh.com's reply (PROTOCOL 4.x): a string of
/// user names and one of group names, each a run of strings in the order
/// the ids were asked; an empty name means the server knows none.
pub fn users_groups(data: &[u8]) -> Result<NameLists, WireError> {
    let mut r = Reader::new(data);
    let (users, groups) = (r.string()?, r.string()?);
    let list = |b: &[u8]| -> Result<Vec<Vec<u8>>, WireError> {
        let mut r = Reader::new(b);
        let mut v = Vec::new();
        while !r.is_empty() {
            v.push(r.string()?.to_vec());
        }
        Ok(v)
    };
    Ok((list(users)?, list(groups)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sftp::{frame, reply};

    fn body(out: &[u8]) -> &[u8] {
        assert_eq!(frame(out), Ok(Some(out.len())));
        &out[4..]
    }

    #[test]
    fn users_groups_lists_decode() {
        let mut out = Vec::new();
        reply::extended(&mut out, 5, |w| {
            w.nested(|w| {
                w.utf8("root").utf8("");
            });
            w.nested(|w| {
                w.utf8("wheel");
            });
        });
        let Reply::ExtendedReply { id: 5, data } = Reply::decode(body(&out)).unwrap() else {
            panic!("not an extended reply")
        };
        let (u, g) = users_groups(data).unwrap();
        assert_eq!(u, vec![b"root".to_vec(), Vec::new()]);
        assert_eq!(g, vec![b"wheel".to_vec()]);
        // A truncated inner list is an error, not a panic.
        assert!(users_groups(&[0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0]).is_err());
    }

    #[test]
    fn replies_decode_what_reply_rs_encodes() {
        let mut out = Vec::new();
        reply::version(&mut out, 3, &[("limits@openssh.com", "1")]);
        assert_eq!(
            Reply::decode(body(&out)).unwrap(),
            Reply::Version {
                version: 3,
                extensions: vec![(b"limits@openssh.com".as_slice(), b"1".as_slice())]
            }
        );
        out.clear();
        reply::status(&mut out, 7, Status::NO_SUCH_FILE, "");
        assert_eq!(
            Reply::decode(body(&out)).unwrap(),
            Reply::Status {
                id: 7,
                code: Status::NO_SUCH_FILE,
                message: b"No such file"
            }
        );
        out.clear();
        let at = reply::data_begin(&mut out, 9);
        out.extend_from_slice(b"abc");
        reply::data_end(&mut out, at);
        assert_eq!(
            Reply::decode(body(&out)).unwrap(),
            Reply::Data {
                id: 9,
                data: b"abc"
            }
        );
        out.clear();
        let e = NameEntry {
            filename: b"\xff".to_vec(),
            longname: b"l".to_vec(),
            attrs: Attrs {
                size: Some(5),
                ..Attrs::default()
            },
        };
        reply::name(&mut out, 2, std::slice::from_ref(&e));
        assert_eq!(
            Reply::decode(body(&out)).unwrap(),
            Reply::Name {
                id: 2,
                entries: vec![e]
            }
        );
        out.clear();
        reply::extended(&mut out, 4, |w| {
            w.u64(1).u64(2).u64(3).u64(4);
        });
        let Reply::ExtendedReply { id: 4, data } = Reply::decode(body(&out)).unwrap() else {
            panic!("not an extended reply")
        };
        assert_eq!(
            Limits::decode(data).unwrap(),
            Limits {
                max_packet: 1,
                max_read: 2,
                max_write: 3,
                max_handles: 4
            }
        );
        // Every truncation is an error, never a panic.
        for cut in 4..out.len() {
            let _ = Reply::decode(&out[4..cut]);
        }
    }

    #[test]
    fn bad_replies_are_errors() {
        // A NAME claiming more entries than it holds.
        let b = [fxp::NAME, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff];
        assert_eq!(Reply::decode(&b).unwrap_err().why, WireError::Truncated);
        // A request type where a reply belongs.
        let b = [fxp::OPEN, 0, 0, 0, 1];
        assert_eq!(Reply::decode(&b).unwrap_err().why, WireError::BadValue);
        // Trailing bytes after a handle are ignored, as OpenSSH's sftp.
        let b = [fxp::HANDLE, 0, 0, 0, 1, 0, 0, 0, 1, b'h', 0];
        assert!(matches!(
            Reply::decode(&b),
            Ok(Reply::Handle { handle: b"h", .. })
        ));
        // A status code alone (old servers) is fine.
        let b = [fxp::STATUS, 0, 0, 0, 1, 0, 0, 0, 4];
        assert!(matches!(
            Reply::decode(&b),
            Ok(Reply::Status {
                code: Status::FAILURE,
                ..
            })
        ));
        assert!(sha256_range(&[0; 8]).is_err());
    }
}
