//! Where an upload writes: `.NAME.sluice-part` beside the remote target
//! when the server can rename it into place (posix-rename@openssh.com),
//! taken up from the record kept on this machine on a resume, emptied
//! otherwise; without that extension, or where the server refuses the
//! name, the target itself, as sftp writes. OpenSSH's reput without a
//! partial file appends after the target's prefix (checked by SHA-256
//! against sluiced).

use super::super::errors::{show, Refusal, RemoteOp, TransferError, TransferResult};
use super::super::options::Options;
use super::super::resume::{self, Record};
use super::super::session::{EarlyOpen, InFlight, Sftp, SftpError};
use super::{same_prefix, say_kept};
use sluice_proto::sftp::{pflags, Attrs};
use std::fs::{File, Metadata};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

/// An upload's destination, opened before the first WRITE.
pub struct Up {
    /// The remote path the WRITEs go to: the part, or the target.
    pub target: Vec<u8>,
    /// Its handle.
    pub handle: Vec<u8>,
    /// Written in place after this prefix (OpenSSH's reput).
    pub start: u64,
    /// Ranges of the part already right (a resume).
    pub done: Vec<(u64, u64)>,
    /// The part is renamed over the target when whole.
    pub atomic: bool,
    /// The record of completed ranges (None: in place, or no state
    /// directory).
    pub record: Option<Arc<Record>>,
    /// WRITEs of the file's first bytes sent behind an OPEN asked ahead.
    pub sent_ahead: Vec<InFlight>,
    keep: bool,
}

/// The modification time in ns (records are keyed by it).
fn mtime_ns(meta: &Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Decides where uploading `local` (open as `file`) to `remote` writes,
/// and opens it; `pre` is an OPEN of the part asked ahead (scp, sftp's
/// first command), taken if it is of that name.
pub fn prepare(
    s: &mut Sftp,
    file: &File,
    meta: &Metadata,
    local: &Path,
    remote: &[u8],
    o: &Options,
    pre: &mut Option<EarlyOpen>,
) -> TransferResult<Up> {
    let size = meta.len();
    let mode = meta.permissions().mode() & 0o777;
    let posix = s.has("posix-rename@openssh.com", "1");
    let part = resume::part_beside(remote);
    let record = match posix {
        true => Record::for_upload(&o.place, local, remote, size, mtime_ns(meta)).map(Arc::new),
        false => None,
    };
    let keep = o.keep_partial;
    let up = |target: &[u8], handle, start, done, atomic, record| Up {
        target: target.to_vec(),
        handle,
        start,
        done,
        atomic,
        record,
        sent_ahead: Vec::new(),
        keep,
    };
    if o.resume {
        if let Some(rec) = &record {
            if let Some((h, done)) = reopen_part(s, &part, file, rec)? {
                return Ok(up(&part, h, 0, done, true, record));
            }
        }
        if let Some((h, have)) = reopen_target(s, remote, file, size)? {
            return Ok(up(remote, h, have, Vec::new(), false, None));
        }
    }
    let attrs = Attrs {
        permissions: Some(mode),
        ..Attrs::default()
    };
    if posix {
        if let Some((h, sent_ahead)) = open_part(s, &part, pre, &attrs)? {
            let mut u = up(&part, h, 0, Vec::new(), true, record);
            u.sent_ahead = sent_ahead;
            return Ok(u);
        }
    }
    let h = s
        .open(remote, pflags::WRITE | pflags::CREAT | pflags::TRUNC, attrs)
        .map_err(|e| TransferError::remote(RemoteOp::DestOpen, remote, e))?;
    Ok(up(remote, h, 0, Vec::new(), false, None))
}

/// `e` unless it ends the session.
fn unless_fatal(e: SftpError) -> TransferResult<SftpError> {
    match e {
        e if e.is_fatal() => Err(TransferError::Fatal(e)),
        e => Ok(e),
    }
}

/// Byte ranges, `[start, end)` each.
type Ranges = Vec<(u64, u64)>;

/// A resume into the partial file `part`: its handle and the ranges of
/// `rec` found right, when every range lies within it.
fn reopen_part(
    s: &mut Sftp,
    part: &[u8],
    file: &File,
    rec: &Record,
) -> TransferResult<Option<(Vec<u8>, Ranges)>> {
    let done = rec.load();
    let last = done.iter().map(|r| r.1).max().unwrap_or(0);
    match s.stat(part, false) {
        // Every completed range lies within the partial file.
        Ok(a) if !done.is_empty() && a.size.is_some_and(|n| n >= last) => {
            let done = resume::checked(s, part, file, done)?;
            match s.open(part, pflags::WRITE, Attrs::default()) {
                Ok(h) => return Ok(Some((h, done))),
                Err(e) => {
                    let e = unless_fatal(e)?;
                    crate::log!(Debug1, "resume: cannot open \"{}\": {e}", show(part))
                }
            }
        }
        Err(e) if e.is_fatal() => return Err(TransferError::Fatal(e)),
        _ if !done.is_empty() => crate::log!(
            Debug1,
            "resume: \"{}\" is missing or short: not used",
            show(part)
        ),
        _ => {}
    }
    Ok(None)
}

/// OpenSSH's reput: the target's own prefix, if it can be trusted; its
/// handle and length.
fn reopen_target(
    s: &mut Sftp,
    remote: &[u8],
    file: &File,
    size: u64,
) -> TransferResult<Option<(Vec<u8>, u64)>> {
    let a = match s.stat(remote, true) {
        Ok(a) => a,
        Err(e) if e.is_fatal() => return Err(TransferError::Fatal(e)),
        Err(_) => return Ok(None),
    };
    let have = a.size.unwrap_or(0);
    if have > size {
        return Err(Refusal::DestNotSmaller.into());
    }
    if let Some(false) = same_prefix(s, remote, file, have)? {
        crate::errln!(
            "\"{}\": remote prefix differs from the local file: sending it whole",
            show(remote)
        );
        return Ok(None);
    }
    let h = s
        .open(remote, pflags::WRITE, Attrs::default())
        .map_err(|e| TransferError::remote(RemoteOp::DestOpen, remote, e))?;
    Ok(Some((h, have)))
}

/// The partial name opened (ahead, with its first WRITEs perhaps behind
/// it, or now, emptied: a plain put starts over); None when the server
/// refuses the name.
fn open_part(
    s: &mut Sftp,
    part: &[u8],
    pre: &mut Option<EarlyOpen>,
    attrs: &Attrs,
) -> TransferResult<Option<(Vec<u8>, Vec<InFlight>)>> {
    let mut sent_ahead = Vec::new();
    let early = pre
        .take_if(|e| e.result.is_ok() && e.path == part)
        .map(|mut e| {
            sent_ahead = std::mem::take(&mut e.sent);
            e.result
        });
    let r = match early {
        Some(r) => r,
        None => s.open(
            part,
            pflags::WRITE | pflags::CREAT | pflags::TRUNC,
            attrs.clone(),
        ),
    };
    match r {
        Ok(h) => Ok(Some((h, sent_ahead))),
        Err(e) => {
            // A directory we may not create in (a writable file in
            // /etc): in place after all, as sftp writes.
            let e = unless_fatal(e)?;
            crate::log!(
                Debug1,
                "partial upload name refused ({e}): writing in place"
            );
            Ok(None)
        }
    }
}

impl Up {
    /// After the copy and the rename: the record goes on success; on a
    /// failure the part and its record stay for a resume when they hold
    /// something and KeepPartial allows, else they go (the part only while
    /// the session lives).
    pub fn settle(&self, s: &mut Sftp, r: &TransferResult<()>) {
        let rec = self.record.as_deref();
        if r.is_ok() || !self.atomic {
            if let Some(rec) = rec {
                rec.remove();
            }
            return;
        }
        let part = show(&self.target);
        let worth = rec.is_some_and(|r| !r.load().is_empty());
        if self.keep && worth {
            say_kept(&part, "reput (put -a)");
            return;
        }
        if let Some(rec) = rec {
            rec.remove();
        }
        if matches!(r, Err(TransferError::Fatal(_))) {
            crate::log!(
                Debug1,
                "the partial file \"{part}\" stays on the server: the session is gone"
            );
        } else {
            let _ = s.remove(&self.target);
        }
    }
}
