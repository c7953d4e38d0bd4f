//! File transfers with many requests in flight (as OpenSSH's
//! do_download/do_upload, but started full rather than ramped up):
//! READs and WRITEs of the server's limits@openssh.com size, replies taken
//! in whatever order they come and written at their offsets (pwrite), so
//! a server that answers out of order is fine.
//!
//! Safety: a download goes to the partial name `.NAME.sluice-part` beside
//! the target and is renamed over it only once whole, so a killed transfer
//! never leaves a short file under the final name; an upload does the same
//! on the server when it has posix-rename@openssh.com, else writes in place
//! as sftp does. What was written is recorded as it goes, so reget, reput
//! and -a take a killed copy up where it stopped (partial/: the names, the
//! record, the checks by SHA-256 against sluiced).

use super::depth::Depth;
use super::partial::{down, spans, up, Checkpoint};
use super::progress::Meter;
use super::resume;
use super::session::{
    self, EarlyOpen, InFlight, OpenAhead, Sftp, SftpError, SftpResult, WriteFromError,
};
use sluice_proto::sftp::{pflags, Attrs, Extended, Reply, Request, Status};
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::Path;

/// How to transfer (sftp's and scp's flags).
#[derive(Debug, Clone)]
pub struct Options {
    /// -p: keep modes and times.
    pub preserve: bool,
    /// -a / reget / reput: continue from what the target already holds.
    pub resume: bool,
    /// -f: fsync after an upload (fsync@openssh.com) and a download.
    pub fsync: bool,
    /// -R: requests in flight (0: sized from the path, see depth.rs).
    pub requests: usize,
    /// -B: the size of one READ or WRITE (0: the server's limit).
    pub buffer: u32,
    /// Show the progress meter.
    pub progress: bool,
    /// Extra connections for large files (ssh_config Streams).
    pub parallel: Option<super::parallel::Parallel>,
    /// -l: the bandwidth limit, shared by every connection.
    pub limit: Option<std::sync::Arc<super::bwlimit::BwLimit>>,
    /// What messages of extra connections start with (scp's "scp: ").
    pub tag: &'static str,
    /// A recursive copy's files and total (progress.rs), shared with the
    /// extra connections.
    pub tally: Option<std::sync::Arc<super::progress::Tally>>,
    /// Who the copies are with, `user@host:port` (resume records are keyed
    /// by it).
    pub place: String,
    /// ssh_config KeepPartial: a failed copy keeps its partial file and
    /// record for a resume (partial/).
    pub keep_partial: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            preserve: false,
            resume: false,
            fsync: false,
            requests: 0,
            buffer: 0,
            progress: false,
            parallel: None,
            limit: None,
            tag: "",
            tally: None,
            place: String::new(),
            keep_partial: true,
        }
    }
}

/// Why a transfer failed: the message sftp prints.
#[derive(Debug)]
pub enum TransferError {
    /// A message for the user; the session goes on.
    Failed(String),
    /// The session cannot go on.
    Fatal(String),
}

impl TransferError {
    pub(super) fn remote(what: String, e: SftpError) -> TransferError {
        match e {
            SftpError::Fatal(m) => TransferError::Fatal(m),
            e => TransferError::Failed(format!("{what}: {e}")),
        }
    }
    pub(super) fn local(what: String, e: io::Error) -> TransferError {
        TransferError::Failed(format!("{what}: {}", os_text(&e)))
    }
}

/// An error's text as strerror(3) gives it (what sftp and scp print).
pub fn os_text(e: &io::Error) -> String {
    let Some(n) = e.raw_os_error() else {
        return e.to_string();
    };
    // SAFETY: strerror returns a pointer to a static (or thread-local) C
    // string, copied out before anything else runs on this thread.
    unsafe {
        let p = libc::strerror(n);
        if p.is_null() {
            return e.to_string();
        }
        std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// The result of a transfer.
pub type TransferResult<T> = Result<T, TransferError>;

/// A path in quotes for messages (bytes shown lossily).
pub fn show(p: &[u8]) -> String {
    String::from_utf8_lossy(p).into_owned()
}

fn chunk(o: &Options, max: u32) -> u32 {
    if o.buffer == 0 {
        max
    } else {
        o.buffer.min(max)
    }
}

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
            return Err(TransferError::remote(
                format!("open remote \"{}\"", show(remote)),
                e,
            ))
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
            .map_err(|e| TransferError::remote(format!("stat remote \"{}\"", show(remote)), e))?,
    };
    if let Some(p) = a.permissions {
        if p & 0o170000 != 0o100000 && p & 0o170000 != 0 {
            return Err(TransferError::Failed(format!(
                "download \"{}\": not a regular file",
                show(remote)
            )));
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
            let r = Err(TransferError::remote(
                format!("open remote \"{}\"", show(remote)),
                e,
            ));
            d.settle(&r, remote);
            return r;
        }
    };
    let skipped: u64 = resume::merge(d.done.clone())
        .iter()
        .map(|(a, b)| b - a)
        .sum();
    let mut meter = Meter::new(
        o.progress,
        &show(remote),
        size.unwrap_or(0),
        d.start + skipped,
    );
    // Large files go in ranges over several connections (parallel.rs).
    let split = match (&o.parallel, size) {
        (Some(p), Some(sz)) if d.start == 0 && p.splits(s, sz) => Some((p, sz)),
        _ => None,
    };
    let r = match split {
        Some((p, size)) => p
            .copy(
                s,
                &handle,
                false,
                &d.file,
                local,
                remote,
                size,
                o,
                meter,
                &d.done,
                d.record.clone(),
            )
            .map(|()| size),
        None => {
            let mut ck = Checkpoint::new(d.record.clone(), &d.done);
            let (first, mut rest) = spans(d.start, size, &d.done);
            let r = fetch(
                s,
                &handle,
                remote,
                &d.file,
                first,
                if from_pre { sent } else { &[] },
                local,
                o,
                &mut || rest.next(),
                &mut |off, n| {
                    meter.add(n);
                    ck.add(off, n)
                },
            );
            ck.save();
            if r.is_ok() {
                meter.done();
            }
            // Gaps of a resume were exact: the file is as long as it was.
            match size {
                Some(sz) if !d.done.is_empty() => r.map(|_| sz),
                _ => r,
            }
        }
    };
    // A read handle's CLOSE is not waited for: every byte is in.
    let closed = s.close_unanswered(&handle);
    let file = &d.file;
    let r = r.and_then(|end| {
        file.set_len(end)
            .map_err(|e| TransferError::local(format!("truncate \"{}\"", local.display()), e))?;
        if o.fsync {
            file.sync_all()
                .map_err(|e| TransferError::local(format!("fsync \"{}\"", local.display()), e))?;
        }
        if o.preserve {
            let _ = file.set_permissions(std::fs::Permissions::from_mode(mode));
            if let Some((at, mt)) = a.atime_mtime {
                set_times(file, at, mt).map_err(|e| {
                    TransferError::local(format!("set times on \"{}\"", local.display()), e)
                })?;
            }
        }
        d.commit(local)
    });
    d.settle(&r, remote);
    r?;
    closed.map_err(|e| TransferError::remote(format!("close remote \"{}\"", show(remote)), e))
}

pub(super) fn set_times(f: &File, atime: u32, mtime: u32) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let ts = [
        libc::timespec {
            tv_sec: atime as libc::time_t,
            tv_nsec: 0,
        },
        libc::timespec {
            tv_sec: mtime as libc::time_t,
            tv_nsec: 0,
        },
    ];
    // SAFETY: futimens reads two timespecs from our live array, on our fd.
    if unsafe { libc::futimens(f.as_raw_fd(), ts.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The bytes a READ or WRITE loop moves: from `start` to `end`; when not
/// `exact`, `end` is only what the file's size was (a download probes past
/// it, an upload reads to the local end), else the loop stops there (one
/// range of a file copied over several connections).
#[derive(Debug, Clone, Copy)]
pub struct Span {
    /// The first byte.
    pub start: u64,
    /// Where it ends (None: unknown).
    pub end: Option<u64>,
    /// `end` is a bound, not a size that may have changed.
    pub exact: bool,
}

/// The READ loop: `requests` READs kept in flight from the first one,
/// each byte written counted through `tally` (offset, length); returns where the file
/// (or the exact span) ended.
#[allow(clippy::too_many_arguments)]
pub fn fetch(
    s: &mut Sftp,
    handle: &[u8],
    remote: &[u8],
    file: &File,
    span: Span,
    sent: &[InFlight],
    local: &Path,
    o: &Options,
    more: &mut dyn FnMut() -> Option<Span>,
    tally: &mut dyn FnMut(u64, u64),
) -> TransferResult<u64> {
    let len = chunk(o, s.max_read);
    let mut depth = Depth::new(o.requests, len, s.rtt);
    let start = span.start;
    // Requests go out up to the known size; past it one READ at a time
    // probes for the end (the file may have grown), the first right
    // behind the last READ within the size, so its EOF comes with the
    // data instead of a round trip later.
    let mut horizon = span.end.unwrap_or(u64::MAX);
    let mut next = start;
    let mut inflight: HashMap<u32, (u64, u32)> = HashMap::new();
    // Short answers leave holes to ask for again.
    let mut holes: Vec<(u64, u32)> = Vec::new();
    let mut eof_at: Option<u64> = None;
    let mut high = start;
    let fatal = |e: SftpError| TransferError::remote(format!("read \"{}\"", show(remote)), e);
    // READs already on their way (behind an open-as, session.rs), and the
    // answers to them that came already, read before any other.
    let mut ready = std::collections::VecDeque::new();
    for ((id, off, n), body) in s.take_sent_ahead(sent) {
        inflight.insert(id, (off, n as u32));
        next = next.max(off + n as u64);
        ready.extend(body);
    }
    loop {
        while inflight.len() < depth.get() {
            if span.exact && next >= horizon && holes.is_empty() {
                // An exact span issued: the next one, on the same pipeline.
                match more() {
                    Some(sp) => {
                        next = sp.start;
                        horizon = sp.end.unwrap_or(sp.start);
                    }
                    None => break,
                }
            }
            let (off, n) = if let Some(h) = holes.pop() {
                h
            } else if eof_at.is_none()
                && (next < horizon || (!span.exact && !inflight.values().any(|r| r.0 >= horizon)))
            {
                let n = if next < horizon {
                    (horizon - next).min(u64::from(len)) as u32
                } else {
                    len
                };
                let at = next;
                next += u64::from(n);
                (at, n)
            } else {
                break;
            };
            if let Some(l) = &o.limit {
                l.pace(u64::from(n));
            }
            let id = s
                .send(&Request::Read {
                    handle,
                    offset: off,
                    len: n,
                })
                .map_err(fatal)?;
            inflight.insert(id, (off, n));
        }
        if inflight.is_empty() {
            break;
        }
        let body = match ready.pop_front() {
            Some(b) => b,
            None => s.recv().map_err(fatal)?,
        };
        let reply = Reply::decode(&body)
            .map_err(|e| TransferError::Fatal(format!("Server sent a malformed reply: {e}")))?;
        let id = reply.id().unwrap_or(0);
        let Some((off, n)) = inflight.remove(&id) else {
            return Err(TransferError::Fatal(format!(
                "Unexpected reply id {id} from the server"
            )));
        };
        match reply {
            Reply::Data { data, .. } => {
                if data.is_empty() || data.len() > n as usize {
                    return Err(TransferError::Fatal(format!(
                        "Server sent {} bytes for a read of {n}",
                        data.len()
                    )));
                }
                if eof_at.is_some_and(|e| off >= e) {
                    return Err(TransferError::Failed(format!(
                        "\"{}\" changed during the download",
                        show(remote)
                    )));
                }
                file.write_all_at(data, off).map_err(|e| {
                    TransferError::local(format!("write to \"{}\"", local.display()), e)
                })?;
                let got = data.len() as u32;
                high = high.max(off + u64::from(got));
                let end = off + u64::from(got);
                if got < n && !span.exact && end >= horizon {
                    // Short at or past the size we were told (a READ sent
                    // ahead of the STAT's answer): the file ends there, as
                    // a probe's EOF would say; nothing to ask again.
                    eof_at = Some(eof_at.map_or(end, |e| e.min(end)));
                } else if got < n {
                    holes.push((end, n - got));
                }
                if off >= horizon && eof_at.is_none() && !span.exact {
                    // A probe past the size we were told found data (the
                    // file grew): keep going, one more chunk each time.
                    horizon = next;
                }
                depth.delivered(u64::from(got));
                tally(off, u64::from(got));
            }
            Reply::Status {
                code: Status::EOF, ..
            } => {
                if high > off || span.exact {
                    return Err(TransferError::Failed(format!(
                        "\"{}\" changed during the download",
                        show(remote)
                    )));
                }
                eof_at = Some(eof_at.map_or(off, |e: u64| e.min(off)));
                holes.retain(|h| h.0 < off);
            }
            Reply::Status { code, .. } => return Err(fatal(SftpError::Remote(code))),
            _ => {
                return Err(TransferError::Fatal(
                    "Server sent an unexpected reply to READ".into(),
                ))
            }
        }
    }
    Ok(eof_at.unwrap_or(high).max(high))
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
    let file = File::open(local)
        .map_err(|e| TransferError::local(format!("open local \"{}\"", local.display()), e))?;
    let meta = file
        .metadata()
        .map_err(|e| TransferError::local(format!("stat local \"{}\"", local.display()), e))?;
    if !meta.is_file() {
        return Err(TransferError::Failed(format!(
            "\"{}\" is not a regular file",
            local.display()
        )));
    }
    let size = meta.len();
    let mode = meta.permissions().mode() & 0o777;
    // The partial file and its record (partial/up.rs).
    let u = up::prepare(s, &file, &meta, local, remote, o, pre)?;
    // A name opened ahead that this upload does not use (it resumes, or
    // the server refused it) goes now, not after the copy.
    if let Some(e) = pre.take() {
        s.discard_early_open(e);
    }
    let skipped: u64 = resume::merge(u.done.clone())
        .iter()
        .map(|(a, b)| b - a)
        .sum();
    let mut meter = Meter::new(
        o.progress,
        &local.display().to_string(),
        size,
        u.start + skipped,
    );
    let handle = &u.handle;
    // The CLOSE's answer when it went right behind the data.
    let mut close_status: Option<SftpResult<()>> = None;
    // Whether that CLOSE was close-rename@sluice.dev.
    let mut renamed_at_close = false;
    // Large files go in ranges over several connections (parallel.rs).
    let split = o
        .parallel
        .as_ref()
        .filter(|p| u.start == 0 && p.splits(s, size));
    let mut r = match split {
        Some(p) => p.copy(
            s,
            handle,
            true,
            &file,
            local,
            &u.target,
            size,
            o,
            meter,
            &u.done,
            u.record.clone(),
        ),
        None => {
            // With nothing to do between the last WRITE and the CLOSE
            // (-f, -p), the CLOSE follows the data at once; into sluiced
            // the rename into place goes with it.
            let early = !o.fsync && !o.preserve;
            let closing = if !early {
                Closing::No
            } else if u.atomic && s.has("close-rename@sluice.dev", "1") {
                renamed_at_close = true;
                Closing::CloseRenameTo(remote)
            } else {
                Closing::Close
            };
            let mut ck = Checkpoint::new(u.record.clone(), &u.done);
            let (first, mut rest) = spans(u.start, Some(size), &u.done);
            let r = send_file(
                s,
                handle,
                &file,
                first,
                &u.sent_ahead,
                local,
                remote,
                o,
                &mut || rest.next(),
                &mut |off, n| {
                    meter.add(n);
                    ck.add(off, n)
                },
                closing,
            );
            ck.save();
            if r.is_ok() {
                meter.done();
            }
            r.map(|c| close_status = c)
        }
    };
    if r.is_ok() && o.fsync {
        r = s.fsync(handle).map_err(|e| {
            TransferError::remote(format!("Couldn't sync file \"{}\"", show(remote)), e)
        });
    }
    if r.is_ok() && o.preserve {
        let mt = |t: std::io::Result<std::time::SystemTime>| {
            t.ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_secs() as u32)
        };
        let a = Attrs {
            permissions: Some(mode),
            atime_mtime: Some((mt(meta.accessed()), mt(meta.modified()))),
            ..Attrs::default()
        };
        r = s.fsetstat(handle, a).map_err(|e| {
            TransferError::remote(
                format!("Couldn't set attributes on \"{}\"", show(remote)),
                e,
            )
        });
    }
    let closed = match close_status {
        Some(c) => c,
        None => s.close(handle),
    };
    if r.is_ok() && renamed_at_close {
        r = closed.map_err(|e| {
            TransferError::remote(
                format!("Couldn't close and rename file into \"{}\"", show(remote)),
                e,
            )
        });
    } else if r.is_ok() {
        r = closed.map_err(|e| {
            TransferError::remote(format!("Couldn't close file \"{}\"", show(remote)), e)
        });
    }
    if r.is_ok() && u.atomic && !renamed_at_close {
        r = s.rename(&u.target, remote, true).map_err(|e| {
            TransferError::remote(format!("Couldn't rename file into \"{}\"", show(remote)), e)
        });
    }
    // WRITEs sent ahead that no send_file took (the copy went in ranges).
    s.drop_sent_ahead(&u.sent_ahead);
    u.settle(s, &r);
    r
}

/// What [`send_file`] sends right behind the last WRITE.
#[derive(Clone, Copy)]
pub enum Closing<'a> {
    /// Nothing: the caller goes on with the handle.
    No,
    /// CLOSE.
    Close,
    /// close-rename@sluice.dev to this name: the file is renamed into
    /// place only if every WRITE on the handle succeeded (PROTOCOL.md).
    CloseRenameTo(&'a [u8]),
}

/// The WRITE loop: `requests` WRITEs in flight, each acknowledged by a
/// STATUS and counted through `tally` (offset, length). With `close` the
/// handle's CLOSE goes right behind the last WRITE instead of a round trip
/// later: a server takes one handle's requests in order (OpenSSH's
/// sftp-server and sluiced take all in order), so the WRITEs are done when
/// it closes. Some(the CLOSE's status) once everything was answered; a
/// failed WRITE is reported as before (the file is then removed or kept for
/// a resume by the caller). `sent`: WRITEs of the span's first bytes
/// already on their way (behind an open-as, session.rs), taken as in flight.
#[allow(clippy::too_many_arguments)]
pub fn send_file(
    s: &mut Sftp,
    handle: &[u8],
    file: &File,
    span: Span,
    sent: &[InFlight],
    local: &Path,
    remote: &[u8],
    o: &Options,
    more: &mut dyn FnMut() -> Option<Span>,
    tally: &mut dyn FnMut(u64, u64),
    close: Closing<'_>,
) -> TransferResult<Option<SftpResult<()>>> {
    let len = chunk(o, s.max_write) as usize;
    let mut depth = Depth::new(o.requests, len as u32, s.rtt);
    let mut next = span.start;
    // An exact span stops at its end; otherwise the local end decides.
    let mut end = match span.end {
        Some(e) if span.exact => e,
        _ => u64::MAX,
    };
    let mut inflight: HashMap<u32, (u64, usize)> = HashMap::new();
    let mut failed_ahead = None;
    for ((id, off, n), done) in s.take_sent_ahead(sent) {
        next = next.max(off + n as u64);
        match done.map(|b| session::status_of(&b)) {
            None => {
                inflight.insert(id, (off, n));
            }
            Some(Ok(())) => {
                depth.delivered(n as u64);
                tally(off, n as u64);
            }
            Some(Err(e)) => failed_ahead = failed_ahead.or(Some(e)),
        }
    }
    let mut local_eof = false;
    // The CLOSE's id once sent, and its answer once read.
    let mut close_id: Option<u32> = None;
    let mut closed: Option<SftpResult<()>> = None;
    let fatal = |e: SftpError| {
        TransferError::remote(
            format!("Couldn't write to remote file \"{}\"", show(remote)),
            e,
        )
    };
    if let Some(e) = failed_ahead {
        // As a failed WRITE below: the others' answers first.
        while !inflight.is_empty() {
            let b = s.recv().map_err(fatal)?;
            if let Ok(r) = Reply::decode(&b) {
                inflight.remove(&r.id().unwrap_or(0));
            }
        }
        return Err(fatal(e));
    }
    loop {
        // Four of the server's largest windows in flight at most
        // (Depth::within): what it grants is what moves per round trip.
        while inflight.len() < depth.within(4 * u64::from(s.peer_window())) && !local_eof {
            if span.exact && next >= end {
                // An exact span sent: the next one, on the same pipeline.
                match more() {
                    Some(sp) => {
                        next = sp.start;
                        end = sp.end.unwrap_or(sp.start);
                    }
                    // The last span of a resumed file: the CLOSE may go.
                    None if !matches!(close, Closing::No) => {
                        local_eof = true;
                        break;
                    }
                    None => break,
                }
            }
            let want = (end - next).min(len as u64) as usize;
            // Read straight into the request (session.rs); -l paces what
            // was read before it is sent.
            let fill = |b: &mut [u8]| {
                let n = read_full(file, b, next)?;
                if let Some(l) = &o.limit {
                    l.pace(n as u64);
                }
                Ok(n)
            };
            let (id, n) = s
                .send_write_from(handle, next, want, fill)
                .map_err(|e| match e {
                    WriteFromError::Local(e) => {
                        TransferError::local(format!("read local \"{}\"", local.display()), e)
                    }
                    WriteFromError::Remote(e) => fatal(e),
                })?;
            if span.exact && n < want {
                return Err(TransferError::Failed(format!(
                    "\"{}\" changed during the upload",
                    local.display()
                )));
            }
            if n == 0 {
                local_eof = true;
                break;
            }
            inflight.insert(id, (next, n));
            next += n as u64;
        }
        if local_eof && close_id.is_none() {
            let req = match close {
                Closing::No => None,
                Closing::Close => Some(Request::Close { handle }),
                Closing::CloseRenameTo(to) => {
                    Some(Request::Extended(Extended::CloseRename { handle, to }))
                }
            };
            if let Some(req) = req {
                close_id = Some(s.send(&req).map_err(fatal)?);
            }
        }
        if inflight.is_empty() && (close_id.is_none() || closed.is_some()) {
            break;
        }
        let body = s.recv().map_err(fatal)?;
        let reply = Reply::decode(&body)
            .map_err(|e| TransferError::Fatal(format!("Server sent a malformed reply: {e}")))?;
        let id = reply.id().unwrap_or(0);
        if close_id == Some(id) && closed.is_none() {
            closed = Some(session::status_of(&body));
            continue;
        }
        let Some((off, n)) = inflight.remove(&id) else {
            return Err(TransferError::Fatal(format!(
                "Unexpected reply id {id} from the server"
            )));
        };
        match reply {
            Reply::Status {
                code: Status::OK, ..
            } => {
                depth.delivered(n as u64);
                tally(off, n as u64)
            }
            Reply::Status { code, .. } => {
                // Let the other WRITEs (and a CLOSE sent) finish before
                // reporting.
                while !inflight.is_empty() || (close_id.is_some() && closed.is_none()) {
                    let b = s.recv().map_err(fatal)?;
                    if let Ok(r) = Reply::decode(&b) {
                        let id = r.id().unwrap_or(0);
                        if close_id == Some(id) {
                            closed = Some(Ok(()));
                        }
                        inflight.remove(&id);
                    }
                }
                return Err(fatal(SftpError::Remote(code)));
            }
            _ => {
                return Err(TransferError::Fatal(
                    "Server sent an unexpected reply to WRITE".into(),
                ))
            }
        }
    }
    Ok(closed)
}

fn read_full(f: &File, buf: &mut [u8], off: u64) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read_at(buf.get_mut(n..).unwrap_or_default(), off + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}
