//! A batch's downloads: each file OPEN, its READs (the listing's size,
//! plus one READ past it that finds EOF, or more data if the file grew),
//! CLOSE, each step taken when its reply comes. Each lands as
//! transfer::download lands it: in `.NAME.sluice-part` beside the target,
//! renamed over it once whole.

use super::super::error::ProtocolError;
use super::super::errors::{LocalOp, Refusal, RemoteOp, TransferError};
use super::super::partial::down::create;
use super::super::resume;
use super::super::session::{Sftp, SftpError, SftpResult};
use super::super::spread::Job;
use super::super::transfer::set_times;
use super::{Direction, Many, Say};
use sluice_proto::sftp::{pflags, Attrs, Reply, Request, Status};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::PathBuf;

/// Downloads of small files, in flight together.
pub(in super::super) type Downloads = Many<Down>;

/// The download direction.
pub(in super::super) enum Down {}

/// One file being fetched.
pub(in super::super) struct Fetch {
    remote: Vec<u8>,
    local: PathBuf,
    tmp: PathBuf,
    file: std::fs::File,
    attrs: Attrs,
    handle: Vec<u8>,
    /// READs and the CLOSE still to answer.
    outstanding: usize,
    /// Where EOF was seen (the file's end), and how far data reached.
    eof_at: Option<u64>,
    high: u64,
    closing: bool,
    error: Option<TransferError>,
    /// When it started, for its progress line.
    since: std::time::Instant,
}

impl Direction for Down {
    type File = Fetch;
    /// A READ's offset and length (0, 0 for OPEN and CLOSE).
    type Tag = (u64, u32);

    fn start(b: &mut Downloads, s: &mut Sftp, job: Job, say: Say<'_>) -> SftpResult<()> {
        match job {
            Job::Down {
                remote,
                local,
                attrs,
            } => b.get_here(s, remote, local, attrs, say),
            Job::Up { .. } => Ok(()),
        }
    }

    fn reply(
        b: &mut Downloads,
        s: &mut Sftp,
        n: usize,
        (off, len): (u64, u32),
        reply: Reply<'_>,
        say: Say<'_>,
    ) -> SftpResult<()> {
        let chunk = s.max_read.max(1);
        let Some(f) = b.files.get_mut(&n) else {
            return Ok(());
        };
        f.outstanding -= 1;
        if f.closing {
            if let Reply::Status { code, message, .. } = reply {
                if code != Status::OK && f.error.is_none() {
                    f.error = Some(TransferError::Remote {
                        op: RemoteOp::Close,
                        path: f.remote.clone(),
                        err: SftpError::status(code, message),
                    });
                }
            }
            return b.done(n, say);
        }
        match reply {
            Reply::Handle { handle, .. } if f.handle.is_empty() => {
                f.handle = handle.to_vec();
                return b.read_all(s, n, chunk);
            }
            Reply::Data { data, .. }
                if !f.handle.is_empty() && !data.is_empty() && data.len() <= len as usize =>
            {
                b.data(s, n, data, off, len, chunk)?;
            }
            Reply::Status {
                code: Status::EOF, ..
            } if !f.handle.is_empty() => {
                f.eof_at = Some(f.eof_at.map_or(off, |e| e.min(off)));
            }
            Reply::Status { code, message, .. } => {
                let op = if f.handle.is_empty() {
                    RemoteOp::Open
                } else {
                    RemoteOp::ReadRemote
                };
                f.error.get_or_insert(TransferError::Remote {
                    op,
                    path: f.remote.clone(),
                    err: SftpError::status(code, message),
                });
            }
            _ => return Err(ProtocolError::UnexpectedReply.into()),
        }
        b.close_when_answered(s, n, say)
    }
}

impl Downloads {
    /// Starts fetching `remote` (listed with `attrs`) to `local`.
    pub(in super::super) fn get(
        &mut self,
        s: &mut Sftp,
        remote: Vec<u8>,
        local: PathBuf,
        attrs: Attrs,
        say: Say<'_>,
    ) -> SftpResult<()> {
        let job = Job::Down {
            remote,
            local,
            attrs,
        };
        self.offer(s, job, say)
    }

    fn get_here(
        &mut self,
        s: &mut Sftp,
        remote: Vec<u8>,
        local: PathBuf,
        attrs: Attrs,
        say: Say<'_>,
    ) -> SftpResult<()> {
        self.make_room(s, say)?;
        let mode = attrs.permissions.unwrap_or(0o644) & 0o777;
        // The same partial name as a large file's (partial/): a run that
        // is killed leaves at most this name, which the next copy of the
        // file empties and renames away.
        let tmp = PathBuf::from(std::ffi::OsStr::from_bytes(&resume::part_beside(
            local.as_os_str().as_bytes(),
        )));
        let file = match create(&tmp, mode) {
            Ok(f) => f,
            Err(e) => {
                say(&TransferError::local(LocalOp::Open, &local, e).to_string());
                self.failed = true;
                return Ok(());
            }
        };
        let open = Request::Open {
            path: &remote,
            pflags: pflags::READ,
            attrs: Attrs::default(),
        };
        let n = self.next;
        self.waiting.ask(s, &open, n, (0, 0))?;
        self.add(Fetch {
            remote,
            local,
            tmp,
            file,
            attrs,
            handle: Vec::new(),
            outstanding: 1,
            eof_at: None,
            high: 0,
            closing: false,
            error: None,
            since: std::time::Instant::now(),
        });
        Ok(())
    }

    fn read(&mut self, s: &mut Sftp, n: usize, off: u64, len: u32) -> SftpResult<()> {
        let Some(f) = self.files.get_mut(&n) else {
            return Ok(());
        };
        let req = Request::Read {
            handle: &f.handle,
            offset: off,
            len,
        };
        self.waiting.ask(s, &req, n, (off, len))?;
        f.outstanding += 1;
        Ok(())
    }

    /// The handle came: READs for the listed size, and one past it.
    fn read_all(&mut self, s: &mut Sftp, n: usize, chunk: u32) -> SftpResult<()> {
        let size = self.files.get(&n).map_or(0, |f| f.attrs.size.unwrap_or(0));
        let mut at = 0;
        while at < size {
            let l = (size - at).min(u64::from(chunk)) as u32;
            self.read(s, n, at, l)?;
            at += u64::from(l);
        }
        // One past the listed size: EOF, or the file grew.
        self.read(s, n, size, chunk)
    }

    /// DATA for the READ at `off` of `len` bytes.
    fn data(
        &mut self,
        s: &mut Sftp,
        n: usize,
        data: &[u8],
        off: u64,
        len: u32,
        chunk: u32,
    ) -> SftpResult<()> {
        let Some(f) = self.files.get_mut(&n) else {
            return Ok(());
        };
        if let Err(e) = f.file.write_all_at(data, off) {
            let e = TransferError::local(LocalOp::WriteTo, &f.local, e);
            f.error.get_or_insert(e);
        }
        let got = data.len() as u64;
        // -l paces the bytes that came, not the READ's length: the read
        // past the listed size (EOF) asks for a whole request.
        if let Some(l) = &self.o.limit {
            l.pace(got);
        }
        f.high = f.high.max(off + got);
        let size = f.attrs.size.unwrap_or(0);
        if got < u64::from(len) {
            self.read(s, n, off + got, len - got as u32)?;
        } else if off + got > size && f.eof_at.is_none() {
            // Past the listed size: the file grew; keep going.
            self.read(s, n, off + got, chunk)?;
        }
        Ok(())
    }

    /// Once a file's requests are all answered: its CLOSE (or its end, if
    /// it never opened).
    fn close_when_answered(&mut self, s: &mut Sftp, n: usize, say: Say<'_>) -> SftpResult<()> {
        let Some(f) = self.files.get_mut(&n) else {
            return Ok(());
        };
        if f.outstanding != 0 {
            return Ok(());
        }
        if f.handle.is_empty() {
            return self.done(n, say);
        }
        self.waiting
            .ask(s, &Request::Close { handle: &f.handle }, n, (0, 0))?;
        f.outstanding += 1;
        f.closing = true;
        Ok(())
    }

    /// A file is through: cut to its end, modes and times set, renamed
    /// into place; or its error said and the temporary file removed.
    fn done(&mut self, n: usize, say: Say<'_>) -> SftpResult<()> {
        let Some(mut f) = self.files.remove(&n) else {
            return Ok(());
        };
        let end = f.eof_at.unwrap_or(f.high);
        if f.error.is_none() && f.high > end {
            f.error = Some(Refusal::ChangedDownload(f.remote.clone()).into());
        }
        if f.error.is_none() {
            if let Err(e) = self.land(&f, end) {
                let path = f.local.clone();
                f.error = Some(TransferError::Landing { path, err: e });
            }
        }
        match f.error {
            Some(e) => {
                say(&e.to_string());
                self.failed = true;
                let _ = std::fs::remove_file(&f.tmp);
            }
            None => {
                if let Some(t) = &self.o.tally {
                    t.file(&String::from_utf8_lossy(&f.remote), end, f.since);
                }
            }
        }
        Ok(())
    }

    /// A whole file cut at `end`, synced (-f), its mode and times set
    /// (-p), renamed over the target.
    fn land(&self, f: &Fetch, end: u64) -> std::io::Result<()> {
        f.file.set_len(end)?;
        if self.o.fsync {
            f.file.sync_all()?;
        }
        if self.o.preserve {
            let mode = f.attrs.permissions.unwrap_or(0o644) & 0o777;
            f.file
                .set_permissions(std::fs::Permissions::from_mode(mode))?;
            if let Some((at, mt)) = f.attrs.atime_mtime {
                set_times(&f.file, at, mt)?;
            }
        }
        std::fs::rename(&f.tmp, &f.local)
    }
}
