//! The SFTP protocol, version 3 (draft-ietf-secsh-filexfer-02) with
//! OpenSSH's extensions (OpenSSH's PROTOCOL, section 4), as a sans-IO codec:
//! packet framing, requests decoded from and encoded into bytes, replies
//! encoded. No files are touched here; the server (sluice's
//! `server/sftp/`) and the client (`client/sftp/`) share it.
//!
//! Paths and names are byte strings, as on the wire: a name that is not
//! UTF-8 goes through unchanged.
//!
//! - `attrs.rs`: ATTRS (draft 5).
//! - `request.rs`: every request the client sends, strict decoding.
//! - `reply.rs`: the server's replies, written into the caller's buffer.
//! - `response.rs`: the same replies decoded, for the client.
//! - `deframe.rs`: packets cut from the channel's stream as it arrives.

mod attrs;
mod deframe;
pub mod reply;
mod request;
pub mod response;

pub use attrs::Attrs;
pub use deframe::Deframer;
pub use reply::NameEntry;
pub use request::{
    is_open_as_handle, Extended, Request, EXTENSIONS, MAX_HASH_RANGE, OPEN_AS_LEN, OPEN_AS_SPACE,
};
pub use response::Reply;

use crate::wire::WireError;

/// The protocol version we speak (draft-ietf-secsh-filexfer-02).
pub const VERSION: u32 = 3;

/// Largest packet we accept or send, the length field excluded: 256 KiB,
/// OpenSSH's SFTP_MAX_MSG_LENGTH, what stock clients expect.
pub const MAX_PACKET: u32 = 256 * 1024;

/// Largest READ and WRITE payload we advertise (limits@openssh.com): a
/// packet less 1 KiB of headers, 255 KiB as OpenSSH's sftp-server.
pub const MAX_READ_WRITE: u32 = MAX_PACKET - 1024;

/// Packet types (draft 3).
pub mod fxp {
    #![allow(missing_docs)]
    pub const INIT: u8 = 1;
    pub const VERSION: u8 = 2;
    pub const OPEN: u8 = 3;
    pub const CLOSE: u8 = 4;
    pub const READ: u8 = 5;
    pub const WRITE: u8 = 6;
    pub const LSTAT: u8 = 7;
    pub const FSTAT: u8 = 8;
    pub const SETSTAT: u8 = 9;
    pub const FSETSTAT: u8 = 10;
    pub const OPENDIR: u8 = 11;
    pub const READDIR: u8 = 12;
    pub const REMOVE: u8 = 13;
    pub const MKDIR: u8 = 14;
    pub const RMDIR: u8 = 15;
    pub const REALPATH: u8 = 16;
    pub const STAT: u8 = 17;
    pub const RENAME: u8 = 18;
    pub const READLINK: u8 = 19;
    pub const SYMLINK: u8 = 20;
    pub const STATUS: u8 = 101;
    pub const HANDLE: u8 = 102;
    pub const DATA: u8 = 103;
    pub const NAME: u8 = 104;
    pub const ATTRS: u8 = 105;
    pub const EXTENDED: u8 = 200;
    pub const EXTENDED_REPLY: u8 = 201;
}

/// Open flags, `pflags` (draft 6.3).
pub mod pflags {
    #![allow(missing_docs)]
    pub const READ: u32 = 0x01;
    pub const WRITE: u32 = 0x02;
    pub const APPEND: u32 = 0x04;
    pub const CREAT: u32 = 0x08;
    pub const TRUNC: u32 = 0x10;
    pub const EXCL: u32 = 0x20;
}

/// A status code (draft 7), with its standard message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status(pub u32);

impl Status {
    /// SSH_FX_OK.
    pub const OK: Status = Status(0);
    /// SSH_FX_EOF.
    pub const EOF: Status = Status(1);
    /// SSH_FX_NO_SUCH_FILE.
    pub const NO_SUCH_FILE: Status = Status(2);
    /// SSH_FX_PERMISSION_DENIED.
    pub const PERMISSION_DENIED: Status = Status(3);
    /// SSH_FX_FAILURE.
    pub const FAILURE: Status = Status(4);
    /// SSH_FX_BAD_MESSAGE.
    pub const BAD_MESSAGE: Status = Status(5);
    /// SSH_FX_NO_CONNECTION.
    pub const NO_CONNECTION: Status = Status(6);
    /// SSH_FX_CONNECTION_LOST.
    pub const CONNECTION_LOST: Status = Status(7);
    /// SSH_FX_OP_UNSUPPORTED.
    pub const OP_UNSUPPORTED: Status = Status(8);

    /// The message OpenSSH's sftp-server sends with the code (clients show it).
    pub fn message(self) -> &'static str {
        match self.0 {
            0 => "Success",
            1 => "End of file",
            2 => "No such file",
            3 => "Permission denied",
            4 => "Failure",
            5 => "Bad message",
            6 => "No connection",
            7 => "Connection lost",
            8 => "Operation unsupported",
            _ => "Unknown error",
        }
    }
}

/// Why a packet could not be taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// The length field says more than [`MAX_PACKET`] (the peer is not
    /// speaking SFTP, or misbehaves): the session ends.
    TooLong(u32),
    /// A packet too short to hold its type (and id).
    TooShort(u32),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::TooLong(n) => {
                write!(f, "packet of {n} bytes is longer than {MAX_PACKET}")
            }
            FrameError::TooShort(n) => write!(f, "packet of {n} bytes is too short"),
        }
    }
}

/// The first whole packet in `buf` (length field, then that many bytes):
/// `Ok(Some(total))` where `total` counts the length field, `Ok(None)`
/// while more bytes are needed. The body is `buf[4..total]`.
pub fn frame(buf: &[u8]) -> Result<Option<usize>, FrameError> {
    frame_within(buf, MAX_PACKET)
}

/// [`frame`] with another bound on the length field: a client takes the
/// packet size the server announced in limits@openssh.com.
pub fn frame_within(buf: &[u8], max: u32) -> Result<Option<usize>, FrameError> {
    let Some(len) = buf.first_chunk::<4>() else {
        return Ok(None);
    };
    let n = u32::from_be_bytes(*len);
    if n > max {
        return Err(FrameError::TooLong(n));
    }
    if n < 5 {
        // A type byte and a request id (INIT's version takes the id's place).
        return Err(FrameError::TooShort(n));
    }
    let total = 4 + n as usize;
    Ok((buf.len() >= total).then_some(total))
}

/// A request that could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeError {
    /// The request id, when it could be read (a BAD_MESSAGE status goes back).
    pub id: Option<u32>,
    /// The packet type.
    pub kind: u8,
    /// What was wrong.
    pub why: WireError,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "malformed SFTP packet of type {}: {}",
            self.kind, self.why
        )
    }
}
