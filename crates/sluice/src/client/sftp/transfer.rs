//! Whole-file copies, one file each way: the remote file's checks, the
//! partial file and its record (partial/), the bytes over one pipeline
//! (pipeline/) or in ranges over several connections (parallel/), then
//! what follows the data (truncate, fsync, modes and times, the rename
//! into place).
//!
//! Safety: a download goes to the partial name `.NAME.sluice-part` beside
//! the target and is renamed over it only once whole, so a killed transfer
//! never leaves a short file under the final name; an upload does the same
//! on the server when it has posix-rename@openssh.com, else writes in place
//! as sftp does. What was written is recorded as it goes, so reget, reput
//! and -a take a killed copy up where it stopped (partial/: the names, the
//! record, the checks by SHA-256 against sluiced).

use super::errors::{show, LocalOp, Refusal, RemoteOp, TransferError, TransferResult};
// cli/xfer_args.rs names the options here.
use super::options::Options;
use super::partial::down::{self, Down};
use super::partial::up::{self, Up};
use super::partial::{spans, Checkpoint};
use super::pipeline::{fetch, send_file, Closing, Span};
use super::progress::Meter;
use super::resume::{self, Record};
use super::session::{EarlyOpen, InFlight, OpenAhead, Sftp, SftpResult};
use sluice_proto::sftp::{pflags, Attrs};
use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

/// Downloads `remote` to `local`.
pub fn download(s: &mut Sftp, remote: &[u8], local: &Path, o: &Options) -> TransferResult<()> {
    download_stated(s, remote, None, local, o)
}

/// [`download`] with `remote`'s STAT (following links) when the caller has
/// just asked for it (sftp's get, scp): not asked again.
pub fn download_stated(
    s: &mut Sftp,
    remote: &[u8],
    stated: Option<Attrs>,
    local: &Path,
    o: &Options,
) -> TransferResult<()> {
    download_opened(s, remote, stated, None, local, o)
}

/// [`download_stated`] with the remote file already opened for reading
/// (scp's OPEN asked with the session's first requests): `pre` is that
/// OPEN's answer.
pub fn download_opened(
    s: &mut Sftp,
    remote: &[u8],
    stated: Option<Attrs>,
    pre: Option<EarlyOpen>,
    local: &Path,
    o: &Options,
) -> TransferResult<()> {
    let (mut pre, sent) = match pre {
        Some(EarlyOpen {
            result: Ok(h),
            sent,
            ..
        }) => (Some(h), sent),
        Some(EarlyOpen { result: Err(e), .. }) => {
            return Err(TransferError::remote(RemoteOp::Open, remote, e))
        }
        None => (None, Vec::new()),
    };
    let r = download_inner(s, remote, stated, &mut pre, &sent, local, o);
    // READs sent ahead that the download did not take (it went in ranges).
    s.drop_sent_ahead(&sent);
    // A handle opened ahead and not used (a local failure came first).
    if let Some(h) = pre {
        let _ = s.close_unanswered(&h);
    }
    r
}

fn download_inner(
    s: &mut Sftp,
    remote: &[u8],
    stated: Option<Attrs>,
    pre: &mut Option<Vec<u8>>,
    sent: &[InFlight],
    local: &Path,
    o: &Options,
) -> TransferResult<()> {
    let a = match stated {
        Some(a) => a,
        None => s
            .stat(remote, true)
            .map_err(|e| TransferError::remote(RemoteOp::Stat, remote, e))?,
    };
    if let Some(p) = a.permissions {
        if p & 0o170000 != 0o100000 && p & 0o170000 != 0 {
            return Err(Refusal::RemoteNotRegular(remote.to_vec()).into());
        }
    }
    let mode = a.permissions.unwrap_or(0o644) & 0o777;
    let size = a.size;
    let mtime = a.atime_mtime.map_or(0, |(_, m)| u64::from(m));
    // The partial file and its record (partial/down.rs).
    let d = down::prepare(s, remote, local, size, mtime, mode, o)?;
    let (opened, from_pre) = match pre.take() {
        Some(h) => (Ok(h), true),
        None => (s.open_read(remote), false),
    };
    let handle = match opened {
        Ok(h) => h,
        Err(e) => {
            let r = Err(TransferError::remote(RemoteOp::Open, remote, e));
            d.settle(&r, remote);
            return r;
        }
    };
    let sent = if from_pre { sent } else { &[] };
    let r = fetch_all(s, &handle, remote, &d, size, sent, local, o);
    // A read handle's CLOSE is not waited for: every byte is in.
    let closed = s.close_unanswered(&handle);
    let r = r.and_then(|end| finish_download(&d, end, local, mode, &a, o));
    d.settle(&r, remote);
    r?;
    closed.map_err(|e| TransferError::remote(RemoteOp::Close, remote, e))
}

/// A download's bytes, in ranges over several connections or on one
/// pipeline; where the file ended.
#[allow(clippy::too_many_arguments)]
fn fetch_all(
    s: &mut Sftp,
    handle: &[u8],
    remote: &[u8],
    d: &Down,
    size: Option<u64>,
    sent: &[InFlight],
    local: &Path,
    o: &Options,
) -> TransferResult<u64> {
    let meter = meter(o, &show(remote), size.unwrap_or(0), d.start, &d.done);
    // Large files go in ranges over several connections (parallel/).
    let split = match (&o.parallel, size) {
        (Some(p), Some(sz)) if d.start == 0 && p.splits(s, sz) => Some((p, sz)),
        _ => None,
    };
    let pace = o.pace();
    if let Some((p, size)) = split {
        let (file, rec) = (&d.file, d.record.clone());
        return p
            .copy(
                s, handle, false, file, local, remote, size, &pace, meter, &d.done, rec,
            )
            .map(|()| size);
    }
    let r = one_stream(
        d.record.clone(),
        &d.done,
        d.start,
        size,
        meter,
        |first, more, tally| {
            fetch(
                s, handle, remote, &d.file, first, sent, local, &pace, more, tally,
            )
        },
    );
    // Gaps of a resume were exact: the file is as long as it was.
    match size {
        Some(sz) if !d.done.is_empty() => r.map(|_| sz),
        _ => r,
    }
}

/// What follows a download's bytes: the file cut at `end`, synced (-f),
/// its mode and times set (-p), the part renamed over the target.
fn finish_download(
    d: &Down,
    end: u64,
    local: &Path,
    mode: u32,
    a: &Attrs,
    o: &Options,
) -> TransferResult<()> {
    let file = &d.file;
    file.set_len(end)
        .map_err(|e| TransferError::local(LocalOp::Truncate, local, e))?;
    if o.fsync {
        file.sync_all()
            .map_err(|e| TransferError::local(LocalOp::Fsync, local, e))?;
    }
    if o.preserve {
        let _ = file.set_permissions(std::fs::Permissions::from_mode(mode));
        if let Some((at, mt)) = a.atime_mtime {
            set_times(file, at, mt)
                .map_err(|e| TransferError::local(LocalOp::SetTimes, local, e))?;
        }
    }
    d.commit(local)
}

/// The progress meter of one file of `total` bytes, of which the first
/// `start` and the ranges in `done` are there already.
fn meter(o: &Options, name: &str, total: u64, start: u64, done: &[(u64, u64)]) -> Meter {
    let skipped: u64 = resume::merge(done.to_vec())
        .iter()
        .map(|(a, b)| b - a)
        .sum();
    Meter::new(o.progress, name, total, start + skipped)
}

/// One pipeline over what is missing of a file (`start` on, less the
/// ranges in `done`), each piece counted by the meter and saved in the
/// record's checkpoints as it is written or acknowledged. `run` is the
/// direction's loop, given the first span, the next ones and the tally.
fn one_stream<T>(
    record: Option<Arc<Record>>,
    done: &[(u64, u64)],
    start: u64,
    size: Option<u64>,
    mut meter: Meter,
    run: impl FnOnce(
        Span,
        &mut dyn FnMut() -> Option<Span>,
        &mut dyn FnMut(u64, u64),
    ) -> TransferResult<T>,
) -> TransferResult<T> {
    let mut ck = Checkpoint::new(record, done);
    let (first, mut rest) = spans(start, size, done);
    let r = run(first, &mut || rest.next(), &mut |off, n| {
        meter.add(n);
        ck.add(off, n)
    });
    ck.save();
    if r.is_ok() {
        meter.done();
    }
    r
}

pub(super) fn set_times(f: &File, atime: u32, mtime: u32) -> io::Result<()> {
    let t = |s: u32| rustix::fs::Timespec {
        tv_sec: i64::from(s),
        tv_nsec: 0,
    };
    let ts = rustix::fs::Timestamps {
        last_access: t(atime),
        last_modification: t(mtime),
    };
    rustix::fs::futimens(f, &ts)?;
    Ok(())
}

/// Uploads `local` to `remote`.
pub fn upload(s: &mut Sftp, local: &Path, remote: &[u8], o: &Options) -> TransferResult<()> {
    upload_opened(s, local, remote, o, None)
}

/// [`upload`] with the partial name beside `remote` perhaps already
/// created and opened (scp's OPEN asked with the session's first
/// requests, see [`early_part`]): used if the upload goes to the partial
/// name at all, else closed and removed.
pub fn upload_opened(
    s: &mut Sftp,
    local: &Path,
    remote: &[u8],
    o: &Options,
    pre: Option<EarlyOpen>,
) -> TransferResult<()> {
    let mut pre = pre;
    let r = upload_inner(s, local, remote, o, &mut pre);
    if let Some(e) = pre {
        s.discard_early_open(e);
    }
    r
}

/// The partial name and OPEN a plain upload of `local` to `remote` would
/// use when the server can rename it into place (see [`upload_opened`]):
/// what a killed run left there is emptied, as the upload would.
pub fn early_part(local: &Path, remote: &[u8]) -> Option<OpenAhead> {
    let meta = std::fs::metadata(local).ok().filter(|m| m.is_file())?;
    Some(OpenAhead {
        path: resume::part_beside(remote),
        flags: pflags::WRITE | pflags::CREAT | pflags::TRUNC,
        attrs: Attrs {
            permissions: Some(meta.permissions().mode() & 0o777),
            ..Attrs::default()
        },
    })
}

fn upload_inner(
    s: &mut Sftp,
    local: &Path,
    remote: &[u8],
    o: &Options,
    pre: &mut Option<EarlyOpen>,
) -> TransferResult<()> {
    let file = File::open(local).map_err(|e| TransferError::local(LocalOp::Open, local, e))?;
    let meta = file
        .metadata()
        .map_err(|e| TransferError::local(LocalOp::Stat, local, e))?;
    if !meta.is_file() {
        return Err(Refusal::LocalNotRegular(local.to_path_buf()).into());
    }
    // The partial file and its record (partial/up.rs).
    let u = up::prepare(s, &file, &meta, local, remote, o, pre)?;
    // A name opened ahead that this upload does not use (it resumes, or
    // the server refused it) goes now, not after the copy.
    if let Some(e) = pre.take() {
        s.discard_early_open(e);
    }
    let sent = send_all(s, &u, &file, meta.len(), local, remote, o);
    let r = finish_upload(s, &u, sent, &meta, remote, o);
    // WRITEs sent ahead that no send_file took (the copy went in ranges).
    s.drop_sent_ahead(&u.sent_ahead);
    u.settle(s, &r);
    r
}

/// How an upload's bytes went.
struct Sent {
    r: TransferResult<()>,
    /// The CLOSE's answer when it went right behind the data.
    close_status: Option<SftpResult<()>>,
    /// Whether that CLOSE was close-rename@sluice.dev.
    renamed_at_close: bool,
}

/// An upload's bytes, in ranges over several connections or on one
/// pipeline with the CLOSE right behind them when nothing comes between.
fn send_all(
    s: &mut Sftp,
    u: &Up,
    file: &File,
    size: u64,
    local: &Path,
    remote: &[u8],
    o: &Options,
) -> Sent {
    let meter = meter(o, &local.display().to_string(), size, u.start, &u.done);
    let handle = &u.handle;
    let mut sent = Sent {
        r: Ok(()),
        close_status: None,
        renamed_at_close: false,
    };
    // Large files go in ranges over several connections (parallel/).
    let split = o
        .parallel
        .as_ref()
        .filter(|p| u.start == 0 && p.splits(s, size));
    let pace = o.pace();
    if let Some(p) = split {
        let (target, rec) = (&u.target, u.record.clone());
        sent.r = p.copy(
            s, handle, true, file, local, target, size, &pace, meter, &u.done, rec,
        );
        return sent;
    }
    // With nothing to do between the last WRITE and the CLOSE (-f, -p),
    // the CLOSE follows the data at once; into sluiced the rename into
    // place goes with it.
    let early = !o.fsync && !o.preserve;
    let closing = if !early {
        Closing::No
    } else if u.atomic && s.has("close-rename@sluice.dev", "1") {
        sent.renamed_at_close = true;
        Closing::CloseRenameTo(remote)
    } else {
        Closing::Close
    };
    let (rec, ahead) = (u.record.clone(), &u.sent_ahead);
    let r = one_stream(
        rec,
        &u.done,
        u.start,
        Some(size),
        meter,
        |first, more, tally| {
            send_file(
                s, handle, file, first, ahead, local, remote, &pace, more, tally, closing,
            )
        },
    );
    sent.r = r.map(|c| sent.close_status = c);
    sent
}

/// What follows an upload's bytes: fsync (-f), modes and times (-p), the
/// CLOSE if it did not go with the data, the rename into place.
fn finish_upload(
    s: &mut Sftp,
    u: &Up,
    sent: Sent,
    meta: &Metadata,
    remote: &[u8],
    o: &Options,
) -> TransferResult<()> {
    let Sent {
        mut r,
        close_status,
        renamed_at_close,
    } = sent;
    let handle = &u.handle;
    if r.is_ok() && o.fsync {
        r = s
            .fsync(handle)
            .map_err(|e| TransferError::remote(RemoteOp::Sync, remote, e));
    }
    if r.is_ok() && o.preserve {
        let mt = |t: std::io::Result<std::time::SystemTime>| {
            t.ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_secs() as u32)
        };
        let a = Attrs {
            permissions: Some(meta.permissions().mode() & 0o777),
            atime_mtime: Some((mt(meta.accessed()), mt(meta.modified()))),
            ..Attrs::default()
        };
        r = s
            .fsetstat(handle, a)
            .map_err(|e| TransferError::remote(RemoteOp::SetAttrs, remote, e));
    }
    let closed = match close_status {
        Some(c) => c,
        None => s.close(handle),
    };
    if r.is_ok() && renamed_at_close {
        r = closed.map_err(|e| TransferError::remote(RemoteOp::CloseRename, remote, e));
    } else if r.is_ok() {
        r = closed.map_err(|e| TransferError::remote(RemoteOp::CloseFile, remote, e));
    }
    if r.is_ok() && u.atomic && !renamed_at_close {
        r = s
            .rename(&u.target, remote, true)
            .map_err(|e| TransferError::remote(RemoteOp::Rename, remote, e));
    }
    r
}
