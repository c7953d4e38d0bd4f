//! Requests (draft-ietf-secsh-filexfer-02 6) and OpenSSH's extended
//! requests (PROTOCOL 4.x), decoded strictly from a packet body (type byte
//! onwards) and encoded back. Paths and handles borrow the packet.

use super::attrs::Attrs;
use super::{fxp, DecodeError};
use crate::wire::{Reader, WireError, Writer};

/// One request; the id travels beside it (INIT has none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request<'a> {
    /// SSH_FXP_INIT: the client's version and extension pairs.
    Init {
        /// The client's protocol version.
        version: u32,
        /// Extension (name, data) pairs.
        extensions: Vec<(&'a [u8], &'a [u8])>,
    },
    /// SSH_FXP_OPEN.
    Open {
        /// The file.
        path: &'a [u8],
        /// `pflags` bits ([`super::pflags`]).
        pflags: u32,
        /// Attributes for a created file.
        attrs: Attrs,
    },
    /// SSH_FXP_CLOSE.
    Close {
        /// The handle.
        handle: &'a [u8],
    },
    /// SSH_FXP_READ.
    Read {
        /// The handle.
        handle: &'a [u8],
        /// Where to read.
        offset: u64,
        /// At most this many bytes.
        len: u32,
    },
    /// SSH_FXP_WRITE.
    Write {
        /// The handle.
        handle: &'a [u8],
        /// Where to write.
        offset: u64,
        /// The bytes.
        data: &'a [u8],
    },
    /// SSH_FXP_LSTAT.
    Lstat {
        /// The path (a symbolic link is not followed).
        path: &'a [u8],
    },
    /// SSH_FXP_FSTAT.
    Fstat {
        /// The handle.
        handle: &'a [u8],
    },
    /// SSH_FXP_SETSTAT.
    Setstat {
        /// The path.
        path: &'a [u8],
        /// What to change.
        attrs: Attrs,
    },
    /// SSH_FXP_FSETSTAT.
    Fsetstat {
        /// The handle.
        handle: &'a [u8],
        /// What to change.
        attrs: Attrs,
    },
    /// SSH_FXP_OPENDIR.
    Opendir {
        /// The directory.
        path: &'a [u8],
    },
    /// SSH_FXP_READDIR.
    Readdir {
        /// The handle.
        handle: &'a [u8],
    },
    /// SSH_FXP_REMOVE.
    Remove {
        /// The file.
        path: &'a [u8],
    },
    /// SSH_FXP_MKDIR.
    Mkdir {
        /// The new directory.
        path: &'a [u8],
        /// Its attributes (permissions).
        attrs: Attrs,
    },
    /// SSH_FXP_RMDIR.
    Rmdir {
        /// The directory.
        path: &'a [u8],
    },
    /// SSH_FXP_REALPATH.
    Realpath {
        /// The path to canonicalise.
        path: &'a [u8],
    },
    /// SSH_FXP_STAT.
    Stat {
        /// The path (symbolic links followed).
        path: &'a [u8],
    },
    /// SSH_FXP_RENAME (the target must not exist).
    Rename {
        /// The old name.
        from: &'a [u8],
        /// The new name.
        to: &'a [u8],
    },
    /// SSH_FXP_READLINK.
    Readlink {
        /// The link.
        path: &'a [u8],
    },
    /// SSH_FXP_SYMLINK, in OpenSSH's argument order (PROTOCOL 4.1: the
    /// target first, then the link to create; the draft has them reversed).
    Symlink {
        /// What the link points to.
        target: &'a [u8],
        /// The link to create.
        link: &'a [u8],
    },
    /// SSH_FXP_EXTENDED with a name we know.
    Extended(Extended<'a>),
    /// SSH_FXP_EXTENDED with a name we do not know.
    UnknownExtended {
        /// The request's name.
        name: &'a [u8],
    },
    /// A packet type we do not know.
    Unknown {
        /// Its type byte.
        kind: u8,
    },
}

/// The extended requests of OpenSSH's PROTOCOL, section 4.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Extended<'a> {
    /// posix-rename@openssh.com: rename(2), replacing the target.
    PosixRename {
        /// The old name.
        from: &'a [u8],
        /// The new name.
        to: &'a [u8],
    },
    /// statvfs@openssh.com.
    Statvfs {
        /// A path on the file system.
        path: &'a [u8],
    },
    /// fstatvfs@openssh.com.
    Fstatvfs {
        /// A handle on the file system.
        handle: &'a [u8],
    },
    /// hardlink@openssh.com.
    Hardlink {
        /// The existing file.
        target: &'a [u8],
        /// The new link.
        link: &'a [u8],
    },
    /// fsync@openssh.com.
    Fsync {
        /// The handle.
        handle: &'a [u8],
    },
    /// lsetstat@openssh.com: SETSTAT without following a symbolic link.
    Lsetstat {
        /// The path.
        path: &'a [u8],
        /// What to change.
        attrs: Attrs,
    },
    /// limits@openssh.com.
    Limits,
    /// expand-path@openssh.com: REALPATH with `~` and `~user` expanded.
    ExpandPath {
        /// The path.
        path: &'a [u8],
    },
    /// copy-data: a server-side copy between two handles.
    CopyData {
        /// Read from this handle.
        read_handle: &'a [u8],
        /// At this offset.
        read_offset: u64,
        /// This many bytes (0: to the end of the file).
        read_len: u64,
        /// Write to this handle.
        write_handle: &'a [u8],
        /// At this offset.
        write_offset: u64,
    },
    /// home-directory: a user's home directory.
    HomeDirectory {
        /// The user name (empty: ours).
        user: &'a [u8],
    },
    /// users-groups-by-id@openssh.com: names for ids.
    UsersGroupsById {
        /// User ids.
        uids: Vec<u32>,
        /// Group ids.
        gids: Vec<u32>,
    },
    /// sha256-range@sluice.dev (sluice's, PROTOCOL.md): the SHA-256 of a
    /// file's bytes in `[offset, offset + len)`, at most [`MAX_HASH_RANGE`]
    /// of them, so a resumed transfer can check the prefix it builds on.
    Sha256Range {
        /// The file.
        path: &'a [u8],
        /// Where the range starts.
        offset: u64,
        /// Its length.
        len: u64,
    },
    /// close-rename@sluice.dev (sluice's, PROTOCOL.md): CLOSE the handle,
    /// then, only if every WRITE on it succeeded, rename its file to `to`
    /// (replacing it, as posix-rename). An upload to a temporary name ends
    /// in one round trip instead of two.
    CloseRename {
        /// The handle of the file written.
        handle: &'a [u8],
        /// The final name.
        to: &'a [u8],
    },
    /// open-as@sluice.dev (sluice's, PROTOCOL.md): OPEN `path` under the
    /// handle the client names (in the client's space, [`OPEN_AS_SPACE`]),
    /// answered by a STATUS. Requests on that handle can follow it at once,
    /// before its answer: a round trip less before the first WRITE or READ.
    OpenAs {
        /// The handle, [`OPEN_AS_LEN`] bytes, the first with the top bit set.
        handle: &'a [u8],
        /// The file.
        path: &'a [u8],
        /// As OPEN's.
        pflags: u32,
        /// As OPEN's.
        attrs: Attrs,
    },
}

/// The length of a handle named by open-as@sluice.dev.
pub const OPEN_AS_LEN: usize = 4;

/// The top bit of an open-as@sluice.dev handle's first byte: the server
/// never makes such a handle itself, so one the client names cannot be
/// any other file's.
pub const OPEN_AS_SPACE: u8 = 0x80;

/// Whether `handle` is one a client may name with open-as@sluice.dev.
pub fn is_open_as_handle(handle: &[u8]) -> bool {
    handle.len() == OPEN_AS_LEN && handle.first().is_some_and(|b| b & OPEN_AS_SPACE != 0)
}

/// The longest range one sha256-range@sluice.dev request may ask for: the
/// server's work per request stays bounded (a few tens of milliseconds).
pub const MAX_HASH_RANGE: u64 = 64 << 20;

/// The extended requests we answer, with the version we advertise
/// (PROTOCOL 4.x), in the order of the VERSION packet.
pub const EXTENSIONS: &[(&str, &str)] = &[
    ("posix-rename@openssh.com", "1"),
    ("statvfs@openssh.com", "2"),
    ("fstatvfs@openssh.com", "2"),
    ("hardlink@openssh.com", "1"),
    ("fsync@openssh.com", "1"),
    ("lsetstat@openssh.com", "1"),
    ("limits@openssh.com", "1"),
    ("expand-path@openssh.com", "1"),
    ("copy-data", "1"),
    ("home-directory", "1"),
    ("users-groups-by-id@openssh.com", "1"),
    ("sha256-range@sluice.dev", "1"),
    ("close-rename@sluice.dev", "1"),
    ("open-as@sluice.dev", "1"),
];

/// At most this many ids in one users-groups-by-id request.
const MAX_IDS: usize = 65536;

impl<'a> Request<'a> {
    /// Decodes a packet body (type byte first, no length field); returns
    /// the request id (0 for INIT) and the request.
    pub fn decode(body: &'a [u8]) -> Result<(u32, Request<'a>), DecodeError> {
        let mut r = Reader::new(body);
        let kind = r.u8().map_err(|why| DecodeError {
            id: None,
            kind: 0,
            why,
        })?;
        if kind == fxp::INIT {
            let err = |why| DecodeError {
                id: None,
                kind,
                why,
            };
            let version = r.u32().map_err(err)?;
            let mut extensions = Vec::new();
            while !r.is_empty() {
                let n = r.string().map_err(err)?;
                let d = r.string().map_err(err)?;
                extensions.push((n, d));
            }
            return Ok((
                0,
                Request::Init {
                    version,
                    extensions,
                },
            ));
        }
        let id = r.u32().map_err(|why| DecodeError {
            id: None,
            kind,
            why,
        })?;
        // Bytes after the last field are ignored, as OpenSSH's sftp-server
        // consumes whatever a request leaves: clients depend on it
        // (github.com/pkg/sftp sends WRITE with bytes past the data).
        let req = Self::decode_body(kind, &mut r).map_err(|why| DecodeError {
            id: Some(id),
            kind,
            why,
        })?;
        Ok((id, req))
    }

    fn decode_body(kind: u8, r: &mut Reader<'a>) -> Result<Request<'a>, WireError> {
        Ok(match kind {
            fxp::OPEN => Request::Open {
                path: r.string()?,
                pflags: r.u32()?,
                attrs: Attrs::decode(r)?,
            },
            fxp::CLOSE => Request::Close {
                handle: r.string()?,
            },
            fxp::READ => Request::Read {
                handle: r.string()?,
                offset: r.u64()?,
                len: r.u32()?,
            },
            fxp::WRITE => Request::Write {
                handle: r.string()?,
                offset: r.u64()?,
                data: r.string()?,
            },
            fxp::LSTAT => Request::Lstat { path: r.string()? },
            fxp::FSTAT => Request::Fstat {
                handle: r.string()?,
            },
            fxp::SETSTAT => Request::Setstat {
                path: r.string()?,
                attrs: Attrs::decode(r)?,
            },
            fxp::FSETSTAT => Request::Fsetstat {
                handle: r.string()?,
                attrs: Attrs::decode(r)?,
            },
            fxp::OPENDIR => Request::Opendir { path: r.string()? },
            fxp::READDIR => Request::Readdir {
                handle: r.string()?,
            },
            fxp::REMOVE => Request::Remove { path: r.string()? },
            fxp::MKDIR => Request::Mkdir {
                path: r.string()?,
                attrs: Attrs::decode(r)?,
            },
            fxp::RMDIR => Request::Rmdir { path: r.string()? },
            fxp::REALPATH => Request::Realpath { path: r.string()? },
            fxp::STAT => Request::Stat { path: r.string()? },
            fxp::RENAME => Request::Rename {
                from: r.string()?,
                to: r.string()?,
            },
            fxp::READLINK => Request::Readlink { path: r.string()? },
            fxp::SYMLINK => Request::Symlink {
                target: r.string()?,
                link: r.string()?,
            },
            fxp::EXTENDED => {
                let name = r.string()?;
                match Extended::decode(name, r)? {
                    Some(e) => Request::Extended(e),
                    None => {
                        // Unknown: its data is not ours to check.
                        let _ = r.bytes(r.remaining().len());
                        Request::UnknownExtended { name }
                    }
                }
            }
            _ => {
                let _ = r.bytes(r.remaining().len());
                Request::Unknown { kind }
            }
        })
    }

    /// Appends the framed packet (length, type, id, fields) to `out`; `id`
    /// is ignored for INIT. Unknown requests encode their type only.
    pub fn encode(&self, id: u32, out: &mut Vec<u8>) {
        let start = out.len();
        let mut w = Writer::new(out);
        w.u32(0);
        let with_id = |w: &mut Writer<'_>, kind: u8| {
            w.u8(kind).u32(id);
        };
        match self {
            Request::Init {
                version,
                extensions,
            } => {
                w.u8(fxp::INIT).u32(*version);
                for (n, d) in extensions {
                    w.string(n).string(d);
                }
            }
            Request::Open {
                path,
                pflags,
                attrs,
            } => {
                with_id(&mut w, fxp::OPEN);
                w.string(path).u32(*pflags);
                attrs.encode(&mut w);
            }
            Request::Close { handle } => {
                with_id(&mut w, fxp::CLOSE);
                w.string(handle);
            }
            Request::Read {
                handle,
                offset,
                len,
            } => {
                with_id(&mut w, fxp::READ);
                w.string(handle).u64(*offset).u32(*len);
            }
            Request::Write {
                handle,
                offset,
                data,
            } => {
                with_id(&mut w, fxp::WRITE);
                w.string(handle).u64(*offset).string(data);
            }
            Request::Lstat { path } => one(&mut w, fxp::LSTAT, id, path),
            Request::Fstat { handle } => one(&mut w, fxp::FSTAT, id, handle),
            Request::Setstat { path, attrs } => {
                with_id(&mut w, fxp::SETSTAT);
                w.string(path);
                attrs.encode(&mut w);
            }
            Request::Fsetstat { handle, attrs } => {
                with_id(&mut w, fxp::FSETSTAT);
                w.string(handle);
                attrs.encode(&mut w);
            }
            Request::Opendir { path } => one(&mut w, fxp::OPENDIR, id, path),
            Request::Readdir { handle } => one(&mut w, fxp::READDIR, id, handle),
            Request::Remove { path } => one(&mut w, fxp::REMOVE, id, path),
            Request::Mkdir { path, attrs } => {
                with_id(&mut w, fxp::MKDIR);
                w.string(path);
                attrs.encode(&mut w);
            }
            Request::Rmdir { path } => one(&mut w, fxp::RMDIR, id, path),
            Request::Realpath { path } => one(&mut w, fxp::REALPATH, id, path),
            Request::Stat { path } => one(&mut w, fxp::STAT, id, path),
            Request::Rename { from, to } => {
                with_id(&mut w, fxp::RENAME);
                w.string(from).string(to);
            }
            Request::Readlink { path } => one(&mut w, fxp::READLINK, id, path),
            Request::Symlink { target, link } => {
                with_id(&mut w, fxp::SYMLINK);
                w.string(target).string(link);
            }
            Request::Extended(e) => {
                with_id(&mut w, fxp::EXTENDED);
                e.encode(&mut w);
            }
            Request::UnknownExtended { name } => {
                with_id(&mut w, fxp::EXTENDED);
                w.string(name);
            }
            Request::Unknown { kind } => with_id(&mut w, *kind),
        }
        let len = (out.len() - start - 4) as u32;
        if let Some(slot) = out.get_mut(start..start + 4) {
            slot.copy_from_slice(&len.to_be_bytes());
        }
    }
}

fn one(w: &mut Writer<'_>, kind: u8, id: u32, s: &[u8]) {
    w.u8(kind).u32(id).string(s);
}

fn ids(r: &mut Reader<'_>) -> Result<Vec<u32>, WireError> {
    let mut inner = Reader::new(r.string()?);
    if !inner.remaining().len().is_multiple_of(4) || inner.remaining().len() / 4 > MAX_IDS {
        return Err(WireError::BadValue);
    }
    let mut v = Vec::with_capacity(inner.remaining().len() / 4);
    while !inner.is_empty() {
        v.push(inner.u32()?);
    }
    Ok(v)
}

fn put_ids(w: &mut Writer<'_>, ids: &[u32]) {
    w.nested(|w| {
        for i in ids {
            w.u32(*i);
        }
    });
}

impl<'a> Extended<'a> {
    /// The request's name on the wire.
    pub fn name(&self) -> &'static str {
        match self {
            Extended::PosixRename { .. } => "posix-rename@openssh.com",
            Extended::Statvfs { .. } => "statvfs@openssh.com",
            Extended::Fstatvfs { .. } => "fstatvfs@openssh.com",
            Extended::Hardlink { .. } => "hardlink@openssh.com",
            Extended::Fsync { .. } => "fsync@openssh.com",
            Extended::Lsetstat { .. } => "lsetstat@openssh.com",
            Extended::Limits => "limits@openssh.com",
            Extended::ExpandPath { .. } => "expand-path@openssh.com",
            Extended::CopyData { .. } => "copy-data",
            Extended::HomeDirectory { .. } => "home-directory",
            Extended::UsersGroupsById { .. } => "users-groups-by-id@openssh.com",
            Extended::Sha256Range { .. } => "sha256-range@sluice.dev",
            Extended::CloseRename { .. } => "close-rename@sluice.dev",
            Extended::OpenAs { .. } => "open-as@sluice.dev",
        }
    }

    /// The fields after the name; None for a name we do not know.
    fn decode(name: &[u8], r: &mut Reader<'a>) -> Result<Option<Extended<'a>>, WireError> {
        Ok(Some(match name {
            b"posix-rename@openssh.com" => Extended::PosixRename {
                from: r.string()?,
                to: r.string()?,
            },
            b"statvfs@openssh.com" => Extended::Statvfs { path: r.string()? },
            b"fstatvfs@openssh.com" => Extended::Fstatvfs {
                handle: r.string()?,
            },
            b"hardlink@openssh.com" => Extended::Hardlink {
                target: r.string()?,
                link: r.string()?,
            },
            b"fsync@openssh.com" => Extended::Fsync {
                handle: r.string()?,
            },
            b"lsetstat@openssh.com" => Extended::Lsetstat {
                path: r.string()?,
                attrs: Attrs::decode(r)?,
            },
            b"limits@openssh.com" => Extended::Limits,
            b"expand-path@openssh.com" => Extended::ExpandPath { path: r.string()? },
            b"copy-data" => Extended::CopyData {
                read_handle: r.string()?,
                read_offset: r.u64()?,
                read_len: r.u64()?,
                write_handle: r.string()?,
                write_offset: r.u64()?,
            },
            b"home-directory" => Extended::HomeDirectory { user: r.string()? },
            b"users-groups-by-id@openssh.com" => Extended::UsersGroupsById {
                uids: ids(r)?,
                gids: ids(r)?,
            },
            b"sha256-range@sluice.dev" => Extended::Sha256Range {
                path: r.string()?,
                offset: r.u64()?,
                len: r.u64()?,
            },
            b"close-rename@sluice.dev" => Extended::CloseRename {
                handle: r.string()?,
                to: r.string()?,
            },
            b"open-as@sluice.dev" => Extended::OpenAs {
                handle: r.string()?,
                path: r.string()?,
                pflags: r.u32()?,
                attrs: Attrs::decode(r)?,
            },
            _ => return Ok(None),
        }))
    }

    fn encode(&self, w: &mut Writer<'_>) {
        w.utf8(self.name());
        match self {
            Extended::PosixRename { from, to } => {
                w.string(from).string(to);
            }
            Extended::Statvfs { path } | Extended::ExpandPath { path } => {
                w.string(path);
            }
            Extended::Fstatvfs { handle } | Extended::Fsync { handle } => {
                w.string(handle);
            }
            Extended::Hardlink { target, link } => {
                w.string(target).string(link);
            }
            Extended::Lsetstat { path, attrs } => {
                w.string(path);
                attrs.encode(w);
            }
            Extended::Limits => {}
            Extended::CopyData {
                read_handle,
                read_offset,
                read_len,
                write_handle,
                write_offset,
            } => {
                w.string(read_handle)
                    .u64(*read_offset)
                    .u64(*read_len)
                    .string(write_handle)
                    .u64(*write_offset);
            }
            Extended::HomeDirectory { user } => {
                w.string(user);
            }
            Extended::UsersGroupsById { uids, gids } => {
                put_ids(w, uids);
                put_ids(w, gids);
            }
            Extended::Sha256Range { path, offset, len } => {
                w.string(path).u64(*offset).u64(*len);
            }
            Extended::CloseRename { handle, to } => {
                w.string(handle).string(to);
            }
            Extended::OpenAs {
                handle,
                path,
                pflags,
                attrs,
            } => {
                w.string(handle).string(path).u32(*pflags);
                attrs.encode(w);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sftp::{frame, FrameError, MAX_PACKET};

    fn roundtrip(req: Request<'_>, id: u32) {
        let mut out = Vec::new();
        req.encode(id, &mut out);
        let total = frame(&out).unwrap().unwrap();
        assert_eq!(total, out.len());
        let (got_id, got) = Request::decode(&out[4..]).unwrap();
        assert_eq!(got, req);
        if !matches!(req, Request::Init { .. }) {
            assert_eq!(got_id, id);
        }
        // Every truncation is an error, never a panic.
        for cut in 4..out.len() {
            let _ = Request::decode(&out[4..cut]);
        }
    }

    #[test]
    fn every_request_roundtrips() {
        let attrs = Attrs {
            size: Some(1 << 40),
            uid_gid: Some((1000, 100)),
            permissions: Some(0o100644),
            atime_mtime: Some((1, 2)),
            extended: vec![(b"a@b".to_vec(), b"\xff".to_vec())],
        };
        let path: &[u8] = b"/tmp/\xff\xfe-not-utf8";
        let h: &[u8] = b"17";
        let reqs = vec![
            Request::Init {
                version: 3,
                extensions: vec![(b"x".as_slice(), b"1".as_slice())],
            },
            Request::Open {
                path,
                pflags: 0x1a,
                attrs: attrs.clone(),
            },
            Request::Close { handle: h },
            Request::Read {
                handle: h,
                offset: 5 << 32,
                len: 261_120,
            },
            Request::Write {
                handle: h,
                offset: 9,
                data: b"data",
            },
            Request::Lstat { path },
            Request::Fstat { handle: h },
            Request::Setstat {
                path,
                attrs: attrs.clone(),
            },
            Request::Fsetstat {
                handle: h,
                attrs: Attrs::default(),
            },
            Request::Opendir { path },
            Request::Readdir { handle: h },
            Request::Remove { path },
            Request::Mkdir {
                path,
                attrs: attrs.clone(),
            },
            Request::Rmdir { path },
            Request::Realpath { path },
            Request::Stat { path },
            Request::Rename {
                from: path,
                to: b"b",
            },
            Request::Readlink { path },
            Request::Symlink {
                target: b"t",
                link: b"l",
            },
            Request::Extended(Extended::PosixRename {
                from: b"a",
                to: b"b",
            }),
            Request::Extended(Extended::Statvfs { path }),
            Request::Extended(Extended::Fstatvfs { handle: h }),
            Request::Extended(Extended::Hardlink {
                target: b"a",
                link: b"b",
            }),
            Request::Extended(Extended::Fsync { handle: h }),
            Request::Extended(Extended::Lsetstat { path, attrs }),
            Request::Extended(Extended::Limits),
            Request::Extended(Extended::ExpandPath { path: b"~/x" }),
            Request::Extended(Extended::CopyData {
                read_handle: b"1",
                read_offset: 2,
                read_len: 0,
                write_handle: b"3",
                write_offset: 4,
            }),
            Request::Extended(Extended::HomeDirectory { user: b"bob" }),
            Request::Extended(Extended::UsersGroupsById {
                uids: vec![0, 1000],
                gids: vec![],
            }),
            Request::Extended(Extended::Sha256Range {
                path,
                offset: 1 << 33,
                len: 4096,
            }),
            Request::Extended(Extended::CloseRename {
                handle: h,
                to: b"final",
            }),
            Request::Extended(Extended::OpenAs {
                handle: &[0x80, 0, 0, 1],
                path,
                pflags: crate::sftp::pflags::WRITE | crate::sftp::pflags::CREAT,
                attrs: Attrs::default(),
            }),
            Request::UnknownExtended { name: b"x@y" },
            Request::Unknown { kind: 99 },
        ];
        for (i, r) in reqs.into_iter().enumerate() {
            roundtrip(r, i as u32 + 1);
        }
    }

    #[test]
    fn bad_packets_are_errors_with_the_id_when_known() {
        // OPEN without its pflags: the id comes back for a BAD_MESSAGE.
        let mut body = vec![fxp::OPEN, 0, 0, 0, 42];
        body.extend_from_slice(&[0, 0, 0, 1, b'x']);
        let e = Request::decode(&body).unwrap_err();
        assert_eq!(e.id, Some(42));
        // Trailing bytes after CLOSE's handle are ignored, as sftp-server.
        let mut out = Vec::new();
        Request::Close { handle: b"h" }.encode(3, &mut out);
        out.push(0);
        assert_eq!(
            Request::decode(&out[4..]),
            Ok((3, Request::Close { handle: b"h" }))
        );
        // A string longer than the packet.
        let body = [fxp::STAT, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff];
        assert_eq!(
            Request::decode(&body).unwrap_err().why,
            WireError::Truncated
        );
        // Unknown attribute flags are ignored, as sftp-server.
        let body = [fxp::MKDIR, 0, 0, 0, 1, 0, 0, 0, 1, b'd', 0, 0, 1, 0];
        assert!(matches!(
            Request::decode(&body),
            Ok((1, Request::Mkdir { path: b"d", .. }))
        ));
    }

    #[test]
    fn framing_bounds() {
        assert_eq!(frame(&[0, 0]), Ok(None));
        assert_eq!(frame(&[0, 0, 0, 9, 1]), Ok(None));
        let big = (MAX_PACKET + 1).to_be_bytes();
        assert_eq!(frame(&big), Err(FrameError::TooLong(MAX_PACKET + 1)));
        assert_eq!(frame(&[0, 0, 0, 1, 1]), Err(FrameError::TooShort(1)));
    }
}
