//! A batch's uploads: OPEN of the partial name (or the target when the
//! server cannot rename), the file's WRITEs (read whole) and FSETSTAT with
//! -p, CLOSE, posix-rename into place; a failed file's partial name
//! removed. Each ends as transfer::upload would, modes (and times with
//! -p) set.

use super::super::errors::{RemoteOp, TransferError};
use super::super::session::{Sftp, SftpError, SftpResult};
use super::super::spread::Job;
use super::{Direction, Many, Say};
use sluice_proto::sftp::{pflags, Attrs, Extended, Reply, Request, Status};
use std::path::PathBuf;

/// Uploads of small files, in flight together.
pub(in super::super) type Uploads = Many<Up>;

/// The upload direction.
pub(in super::super) enum Up {}

/// Where one file is.
enum Step {
    /// OPEN sent.
    Opening,
    /// WRITEs (and FSETSTAT) sent: this many replies to come.
    Writing(usize),
    /// CLOSE sent.
    Closing,
    /// posix-rename sent.
    Renaming,
    /// The temporary name of a failed file is being removed.
    Removing,
}

/// One file being uploaded.
pub(in super::super) struct File {
    local: PathBuf,
    /// The final name, and the name written (a temporary one, or the same).
    remote: Vec<u8>,
    written: Vec<u8>,
    data: Vec<u8>,
    attrs: Attrs,
    handle: Vec<u8>,
    step: Step,
    /// The first error, reported once the file is closed.
    error: Option<TransferError>,
    /// Its size and when it started, for its progress line.
    size: u64,
    since: std::time::Instant,
}

impl File {
    /// Keeps the first error: `reply`'s, if not OK, as `op` on the file.
    fn note(&mut self, reply: &Reply<'_>, op: RemoteOp) {
        if self.error.is_none() {
            self.error = failure(reply, op, &self.remote);
        }
    }
}

/// A reply's error for `op` on `path`, None for OK.
fn failure(r: &Reply<'_>, op: RemoteOp, path: &[u8]) -> Option<TransferError> {
    let path = path.to_vec();
    match r {
        Reply::Status {
            code: Status::OK, ..
        } => None,
        Reply::Status { code, message, .. } => Some(TransferError::Remote {
            op,
            path,
            err: SftpError::status(*code, message),
        }),
        _ => Some(TransferError::Unexpected { op, path }),
    }
}

impl Direction for Up {
    type File = File;
    type Tag = ();

    fn start(b: &mut Uploads, s: &mut Sftp, job: Job, say: Say<'_>) -> SftpResult<()> {
        match job {
            Job::Up { local, remote } => b.put_here(s, local, remote, say),
            Job::Down { .. } => Ok(()),
        }
    }

    fn reply(
        b: &mut Uploads,
        s: &mut Sftp,
        n: usize,
        _: (),
        reply: Reply<'_>,
        say: Say<'_>,
    ) -> SftpResult<()> {
        let Some(f) = b.files.get_mut(&n) else {
            return Ok(());
        };
        match f.step {
            Step::Opening => return b.opened(s, n, reply, say),
            Step::Writing(left) => {
                f.note(&reply, RemoteOp::Write);
                f.step = Step::Writing(left - 1);
                if left == 1 {
                    b.close(s, n)?;
                }
            }
            Step::Closing => {
                f.note(&reply, RemoteOp::CloseFile);
                if f.error.is_none() && f.written != f.remote {
                    let req = Request::Extended(Extended::PosixRename {
                        from: &f.written,
                        to: &f.remote,
                    });
                    b.waiting.ask(s, &req, n, ())?;
                    f.step = Step::Renaming;
                    return Ok(());
                }
                b.done(s, n, say)?;
            }
            Step::Renaming => {
                f.note(&reply, RemoteOp::Rename);
                b.done(s, n, say)?;
            }
            Step::Removing => {
                b.files.remove(&n);
            }
        }
        Ok(())
    }
}

impl Uploads {
    /// Starts uploading `local` (read whole, `size` <= SMALL) to `remote`;
    /// waits for replies first when `MAX_FILES` are in flight. Errors of
    /// single files go to `say`; Err is the session's end.
    pub(in super::super) fn put(
        &mut self,
        s: &mut Sftp,
        local: PathBuf,
        remote: Vec<u8>,
        say: Say<'_>,
    ) -> SftpResult<()> {
        self.offer(s, Job::Up { local, remote }, say)
    }

    fn put_here(
        &mut self,
        s: &mut Sftp,
        local: PathBuf,
        remote: Vec<u8>,
        say: Say<'_>,
    ) -> SftpResult<()> {
        self.make_room(s, say)?;
        let (data, meta) =
            match std::fs::read(&local).and_then(|d| Ok((d, std::fs::metadata(&local)?))) {
                Ok(x) => x,
                Err(e) => {
                    say(&TransferError::Unreadable {
                        path: local,
                        err: e,
                    }
                    .to_string());
                    self.failed = true;
                    return Ok(());
                }
            };
        let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777;
        let secs = |t: std::io::Result<std::time::SystemTime>| {
            t.ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_secs() as u32)
        };
        let attrs = Attrs {
            permissions: Some(mode),
            atime_mtime: self
                .o
                .preserve
                .then(|| (secs(meta.accessed()), secs(meta.modified()))),
            ..Attrs::default()
        };
        let atomic = s.has("posix-rename@openssh.com", "1");
        // The same partial name as a large file's (partial/up.rs), emptied
        // if a killed run left it.
        let written = if atomic {
            super::super::resume::part_beside(&remote)
        } else {
            remote.clone()
        };
        let open = Request::Open {
            path: &written,
            pflags: pflags::WRITE | pflags::CREAT | pflags::TRUNC,
            attrs: Attrs {
                permissions: Some(mode),
                ..Attrs::default()
            },
        };
        let n = self.next;
        self.waiting.ask(s, &open, n, ())?;
        self.add(File {
            size: data.len() as u64,
            since: std::time::Instant::now(),
            local,
            remote,
            written,
            data,
            attrs,
            handle: Vec::new(),
            step: Step::Opening,
            error: None,
        });
        Ok(())
    }

    /// The OPEN's answer: the file's WRITEs (and FSETSTAT) go, or its
    /// error is said.
    fn opened(&mut self, s: &mut Sftp, n: usize, reply: Reply<'_>, say: Say<'_>) -> SftpResult<()> {
        let Some(f) = self.files.get_mut(&n) else {
            return Ok(());
        };
        let Reply::Handle { handle, .. } = reply else {
            let e = failure(&reply, RemoteOp::DestOpen, &f.remote)
                .unwrap_or_else(|| TransferError::NoHandle(f.remote.clone()));
            say(&e.to_string());
            self.failed = true;
            self.files.remove(&n);
            return Ok(());
        };
        f.handle = handle.to_vec();
        let mut sent = 0;
        let len = (s.max_write as usize).max(1);
        let mut off = 0;
        while off < f.data.len() {
            let end = (off + len).min(f.data.len());
            if let Some(l) = &self.o.limit {
                l.pace((end - off) as u64);
            }
            let req = Request::Write {
                handle: &f.handle,
                offset: off as u64,
                data: f.data.get(off..end).unwrap_or_default(),
            };
            self.waiting.ask(s, &req, n, ())?;
            sent += 1;
            off = end;
        }
        if f.attrs.atime_mtime.is_some() {
            let req = Request::Fsetstat {
                handle: &f.handle,
                attrs: f.attrs.clone(),
            };
            self.waiting.ask(s, &req, n, ())?;
            sent += 1;
        }
        f.data = Vec::new();
        f.step = Step::Writing(sent);
        if sent == 0 {
            self.close(s, n)?;
        }
        Ok(())
    }

    fn close(&mut self, s: &mut Sftp, n: usize) -> SftpResult<()> {
        let Some(f) = self.files.get_mut(&n) else {
            return Ok(());
        };
        self.waiting
            .ask(s, &Request::Close { handle: &f.handle }, n, ())?;
        f.step = Step::Closing;
        Ok(())
    }

    /// A file is through: its error said, and its temporary name removed
    /// (that REMOVE's reply ends it).
    fn done(&mut self, s: &mut Sftp, n: usize, say: Say<'_>) -> SftpResult<()> {
        let Some(f) = self.files.get_mut(&n) else {
            return Ok(());
        };
        match f.error.take() {
            Some(e) => {
                say(&e.to_string());
                self.failed = true;
                if f.written != f.remote {
                    self.waiting
                        .ask(s, &Request::Remove { path: &f.written }, n, ())?;
                    f.step = Step::Removing;
                    return Ok(());
                }
            }
            None => {
                crate::log!(Debug2, "Uploaded {}", f.local.display());
                if let Some(t) = &self.o.tally {
                    t.file(&f.local.to_string_lossy(), f.size, f.since);
                }
            }
        }
        self.files.remove(&n);
        Ok(())
    }
}
