//! The server's replies (draft-ietf-secsh-filexfer-02 7, OpenSSH's
//! EXTENDED_REPLY formats), each appended framed (length field first) to
//! the caller's buffer. DATA is written in two steps so the file's bytes
//! can be read straight into the buffer after the header.

use super::attrs::Attrs;
use super::{fxp, Status};
use crate::wire::Writer;

/// One entry of a NAME reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameEntry {
    /// The file name (or the path, for REALPATH).
    pub filename: Vec<u8>,
    /// An `ls -l` line for display.
    pub longname: Vec<u8>,
    /// Its attributes.
    pub attrs: Attrs,
}

/// Opens a packet of type `kind` with `id`; returns where it starts, for [`end`].
fn begin(out: &mut Vec<u8>, kind: u8, id: u32) -> usize {
    let start = out.len();
    Writer::new(out).u32(0).u8(kind).u32(id);
    start
}

/// Writes the length of the packet that starts at `start`.
fn end(out: &mut [u8], start: usize) {
    let len = (out.len() - start - 4) as u32;
    if let Some(slot) = out.get_mut(start..start + 4) {
        slot.copy_from_slice(&len.to_be_bytes());
    }
}

/// SSH_FXP_VERSION with our extensions.
pub fn version(out: &mut Vec<u8>, version: u32, extensions: &[(&str, &str)]) {
    let start = out.len();
    let mut w = Writer::new(out);
    w.u32(0).u8(fxp::VERSION).u32(version);
    for (n, d) in extensions {
        w.utf8(n).utf8(d);
    }
    end(out, start);
}

/// SSH_FXP_STATUS with `message` (empty: the code's standard message).
pub fn status(out: &mut Vec<u8>, id: u32, code: Status, message: &str) {
    let start = begin(out, fxp::STATUS, id);
    let msg = if message.is_empty() {
        code.message()
    } else {
        message
    };
    Writer::new(out).u32(code.0).utf8(msg).utf8("");
    end(out, start);
}

/// SSH_FXP_HANDLE.
pub fn handle(out: &mut Vec<u8>, id: u32, handle: &[u8]) {
    let start = begin(out, fxp::HANDLE, id);
    Writer::new(out).string(handle);
    end(out, start);
}

/// Starts SSH_FXP_DATA: the header and the data's length field. Append the
/// data to `out`, then call [`data_end`] with the returned position.
pub fn data_begin(out: &mut Vec<u8>, id: u32) -> usize {
    let start = begin(out, fxp::DATA, id);
    Writer::new(out).u32(0);
    start
}

/// Finishes a DATA reply: both length fields from what was appended.
pub fn data_end(out: &mut [u8], start: usize) {
    let n = out.len().saturating_sub(start + 13) as u32;
    if let Some(slot) = out.get_mut(start + 9..start + 13) {
        slot.copy_from_slice(&n.to_be_bytes());
    }
    end(out, start);
}

/// SSH_FXP_NAME.
pub fn name(out: &mut Vec<u8>, id: u32, entries: &[NameEntry]) {
    let start = begin(out, fxp::NAME, id);
    let mut w = Writer::new(out);
    w.u32(entries.len() as u32);
    for e in entries {
        w.string(&e.filename).string(&e.longname);
        e.attrs.encode(&mut w);
    }
    end(out, start);
}

/// SSH_FXP_ATTRS.
pub fn attrs(out: &mut Vec<u8>, id: u32, attrs: &Attrs) {
    let start = begin(out, fxp::ATTRS, id);
    attrs.encode(&mut Writer::new(out));
    end(out, start);
}

/// SSH_FXP_EXTENDED_REPLY whose fields `f` writes.
pub fn extended(out: &mut Vec<u8>, id: u32, f: impl FnOnce(&mut Writer<'_>)) {
    let start = begin(out, fxp::EXTENDED_REPLY, id);
    f(&mut Writer::new(out));
    end(out, start);
}

/// statvfs@openssh.com's reply fields (PROTOCOL 4.4), as statvfs(3) has them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Statvfs {
    /// f_bsize.
    pub bsize: u64,
    /// f_frsize.
    pub frsize: u64,
    /// f_blocks.
    pub blocks: u64,
    /// f_bfree.
    pub bfree: u64,
    /// f_bavail.
    pub bavail: u64,
    /// f_files.
    pub files: u64,
    /// f_ffree.
    pub ffree: u64,
    /// f_favail.
    pub favail: u64,
    /// f_fsid.
    pub fsid: u64,
    /// SSH_FXE_STATVFS_ST_RDONLY (1) | SSH_FXE_STATVFS_ST_NOSUID (2).
    pub flag: u64,
    /// f_namemax.
    pub namemax: u64,
}

/// The statvfs@openssh.com / fstatvfs@openssh.com reply.
pub fn statvfs(out: &mut Vec<u8>, id: u32, s: &Statvfs) {
    extended(out, id, |w| {
        for v in [
            s.bsize, s.frsize, s.blocks, s.bfree, s.bavail, s.files, s.ffree, s.favail, s.fsid,
            s.flag, s.namemax,
        ] {
            w.u64(v);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sftp::{frame, Request};

    #[test]
    fn data_lengths_cover_what_was_appended() {
        let mut out = Vec::new();
        let at = data_begin(&mut out, 7);
        out.extend_from_slice(b"hello");
        data_end(&mut out, at);
        assert_eq!(frame(&out), Ok(Some(out.len())));
        assert_eq!(&out[..4], &(out.len() as u32 - 4).to_be_bytes());
        assert_eq!(out[4], fxp::DATA);
        assert_eq!(&out[5..9], &7u32.to_be_bytes());
        assert_eq!(&out[9..13], &5u32.to_be_bytes());
        assert_eq!(&out[13..], b"hello");
    }

    #[test]
    fn status_uses_the_standard_message() {
        let mut out = Vec::new();
        status(&mut out, 1, Status::PERMISSION_DENIED, "");
        let text = b"Permission denied";
        assert!(out.windows(text.len()).any(|w| w == text));
        // Replies frame like requests.
        let mut req = Vec::new();
        Request::Close { handle: b"h" }.encode(9, &mut req);
        assert_eq!(frame(&req), Ok(Some(req.len())));
    }
}
