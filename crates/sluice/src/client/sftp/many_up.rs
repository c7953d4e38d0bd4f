//! Many small files at once on one session. A small file costs round
//! trips, not bytes: OPEN, WRITE, CLOSE (and the rename of its temporary
//! name) each wait for the server, so one file at a time moves three or
//! four files per second at 100 ms whatever the link. Here up to
//! `MAX_FILES` files are each a small state machine advanced by whichever
//! reply comes, so the round trips overlap.
//!
//! Only files up to `SMALL` bytes come here (read whole, a few WRITEs);
//! larger ones go through transfer.rs with its own pipeline. Each file
//! ends as transfer::upload would: under `.NAME.sluice-part` renamed into
//! place when the server has posix-rename, modes (and times with -p) set.

use super::session::{fatal, Sftp, SftpError};
use super::spread::{Batch, Job, Spread};
use super::transfer::{self, Options};
use sluice_proto::sftp::{pflags, Attrs, Extended, Reply, Request, Status};
use std::collections::HashMap;
use std::path::PathBuf;

/// Files up to this size go in a batch.
pub const SMALL: u64 = 1 << 20;
/// Files in flight at once.
const MAX_FILES: usize = 64;

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

struct File {
    local: PathBuf,
    /// The final name, and the name written (a temporary one, or the same).
    remote: Vec<u8>,
    written: Vec<u8>,
    data: Vec<u8>,
    attrs: Attrs,
    handle: Vec<u8>,
    step: Step,
    /// The first error, reported once the file is closed.
    error: Option<String>,
    /// Its size and when it started, for its progress line.
    size: u64,
    since: std::time::Instant,
}

/// Uploads of small files, in flight together.
pub struct Uploads {
    o: Options,
    files: HashMap<usize, File>,
    /// Request id -> file.
    waiting: HashMap<u32, usize>,
    next: usize,
    /// Errors so far (each already printed by the caller's `say`).
    pub failed: bool,
    /// Other connections taking a share of the files (spread.rs).
    spread: Option<Spread>,
}

impl Uploads {
    /// A batch with `o`'s settings (-p, -f).
    pub fn new(o: &Options) -> Uploads {
        Uploads {
            o: o.clone(),
            files: HashMap::new(),
            waiting: HashMap::new(),
            next: 0,
            failed: false,
            spread: Spread::new(o, |o| Box::new(Uploads::new(o))),
        }
    }

    /// Waits until every file is done here and on the other connections
    /// (taking back what they could not); Ok(all went well).
    pub fn drain(&mut self, s: &mut Sftp, say: &mut dyn FnMut(&str)) -> Result<bool, String> {
        let mut ok = self.finish(s, say)?;
        while let Some(job) = self.spread.as_ref().and_then(|sp| sp.take()) {
            if let Job::Up { local, remote } = job {
                self.put_here(s, local, remote, say)?;
            }
        }
        ok &= self.finish(s, say)?;
        Ok(ok & !self.spread.as_ref().is_some_and(|sp| sp.failed()))
    }

    /// Starts uploading `local` (read whole, `size` <= SMALL) to `remote`;
    /// waits for replies first when `MAX_FILES` are in flight. Errors of
    /// single files go to `say`; Err is the session's end.
    pub fn put(
        &mut self,
        s: &mut Sftp,
        local: PathBuf,
        remote: Vec<u8>,
        say: &mut dyn FnMut(&str),
    ) -> Result<(), String> {
        let job = Job::Up { local, remote };
        match self
            .spread
            .as_mut()
            .map_or(Some(job.clone()), |sp| sp.offer(job))
        {
            Some(Job::Up { local, remote }) => self.put_here(s, local, remote, say),
            _ => Ok(()),
        }
    }

    fn put_here(
        &mut self,
        s: &mut Sftp,
        local: PathBuf,
        remote: Vec<u8>,
        say: &mut dyn FnMut(&str),
    ) -> Result<(), String> {
        while self.files.len() >= MAX_FILES {
            self.step(s, say)?;
        }
        let (data, meta) =
            match std::fs::read(&local).and_then(|d| Ok((d, std::fs::metadata(&local)?))) {
                Ok(x) => x,
                Err(e) => {
                    say(&format!("{}: {}", local.display(), transfer::os_text(&e)));
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
            super::resume::part_beside(&remote)
        } else {
            remote.clone()
        };
        let flags = pflags::WRITE | pflags::CREAT | pflags::TRUNC;
        let id = s
            .send(&Request::Open {
                path: &written,
                pflags: flags,
                attrs: Attrs {
                    permissions: Some(mode),
                    ..Attrs::default()
                },
            })
            .map_err(fatal)?;
        let n = self.next;
        self.next += 1;
        self.waiting.insert(id, n);
        self.files.insert(
            n,
            File {
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
            },
        );
        Ok(())
    }

    /// Waits until every file is done; Ok(all went well).
    pub fn finish(&mut self, s: &mut Sftp, say: &mut dyn FnMut(&str)) -> Result<bool, String> {
        while !self.files.is_empty() {
            self.step(s, say)?;
        }
        Ok(!std::mem::take(&mut self.failed))
    }

    /// Takes one reply and moves its file on.
    fn step(&mut self, s: &mut Sftp, say: &mut dyn FnMut(&str)) -> Result<(), String> {
        let body = s.recv().map_err(fatal)?;
        let reply =
            Reply::decode(&body).map_err(|e| format!("Server sent a malformed reply: {e}"))?;
        let id = reply.id().unwrap_or(0);
        let n = self
            .waiting
            .remove(&id)
            .ok_or_else(|| format!("Unexpected reply id {id} from the server"))?;
        let Some(f) = self.files.get_mut(&n) else {
            return Err(format!("Unexpected reply id {id} from the server"));
        };
        let status = |r: &Reply| match r {
            Reply::Status {
                code: Status::OK, ..
            } => None,
            Reply::Status { code, .. } => Some(SftpError::Remote(*code).to_string()),
            _ => Some("unexpected reply".to_owned()),
        };
        match f.step {
            Step::Opening => {
                let Reply::Handle { handle, .. } = reply else {
                    let why = status(&reply).unwrap_or_default();
                    say(&format!(
                        "dest open \"{}\": {why}",
                        transfer::show(&f.remote)
                    ));
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
                    let id = s
                        .send(&Request::Write {
                            handle: &f.handle,
                            offset: off as u64,
                            data: f.data.get(off..end).unwrap_or_default(),
                        })
                        .map_err(fatal)?;
                    self.waiting.insert(id, n);
                    sent += 1;
                    off = end;
                }
                if f.attrs.atime_mtime.is_some() {
                    let id = s
                        .send(&Request::Fsetstat {
                            handle: &f.handle,
                            attrs: f.attrs.clone(),
                        })
                        .map_err(fatal)?;
                    self.waiting.insert(id, n);
                    sent += 1;
                }
                f.data = Vec::new();
                f.step = Step::Writing(sent);
                if sent == 0 {
                    self.close(s, n)?;
                }
            }
            Step::Writing(left) => {
                if f.error.is_none() {
                    f.error = status(&reply).map(|why| {
                        format!(
                            "Couldn't write to remote file \"{}\": {why}",
                            transfer::show(&f.remote)
                        )
                    });
                }
                f.step = Step::Writing(left - 1);
                if left == 1 {
                    self.close(s, n)?;
                }
            }
            Step::Closing => {
                if f.error.is_none() {
                    f.error = status(&reply).map(|why| {
                        format!(
                            "Couldn't close file \"{}\": {why}",
                            transfer::show(&f.remote)
                        )
                    });
                }
                if f.error.is_none() && f.written != f.remote {
                    let id = s
                        .send(&Request::Extended(Extended::PosixRename {
                            from: &f.written,
                            to: &f.remote,
                        }))
                        .map_err(fatal)?;
                    self.waiting.insert(id, n);
                    f.step = Step::Renaming;
                    return Ok(());
                }
                self.done(s, n, say)?;
            }
            Step::Renaming => {
                if f.error.is_none() {
                    f.error = status(&reply).map(|why| {
                        format!(
                            "Couldn't rename file into \"{}\": {why}",
                            transfer::show(&f.remote)
                        )
                    });
                }
                self.done(s, n, say)?;
            }
            Step::Removing => {
                self.files.remove(&n);
            }
        }
        Ok(())
    }

    fn close(&mut self, s: &mut Sftp, n: usize) -> Result<(), String> {
        let Some(f) = self.files.get_mut(&n) else {
            return Ok(());
        };
        let id = s
            .send(&Request::Close { handle: &f.handle })
            .map_err(fatal)?;
        self.waiting.insert(id, n);
        f.step = Step::Closing;
        Ok(())
    }

    /// A file is through: its error said, and its temporary name removed
    /// (that REMOVE's reply ends it).
    fn done(&mut self, s: &mut Sftp, n: usize, say: &mut dyn FnMut(&str)) -> Result<(), String> {
        let Some(f) = self.files.get_mut(&n) else {
            return Ok(());
        };
        match f.error.take() {
            Some(e) => {
                say(&e);
                self.failed = true;
                if f.written != f.remote {
                    let id = s
                        .send(&Request::Remove { path: &f.written })
                        .map_err(fatal)?;
                    self.waiting.insert(id, n);
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

impl Batch for Uploads {
    fn start(&mut self, s: &mut Sftp, job: Job, say: &mut dyn FnMut(&str)) -> Result<(), String> {
        match job {
            Job::Up { local, remote } => self.put(s, local, remote, say),
            Job::Down { .. } => Ok(()),
        }
    }

    fn finish(&mut self, s: &mut Sftp, say: &mut dyn FnMut(&str)) -> Result<bool, String> {
        Uploads::finish(self, s, say)
    }
}
