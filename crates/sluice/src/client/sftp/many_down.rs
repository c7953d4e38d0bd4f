//! Many small files fetched at once on one session: the download side of
//! many_up.rs. Each file is OPEN, its READs (the listing's size, plus one
//! READ past it that finds EOF, or more data if the file grew), CLOSE,
//! each step taken when its reply comes, up to `MAX_FILES` files in
//! flight. Each lands as transfer::download lands it: in `.NAME.sluice-part`
//! beside the target, renamed over it once whole.

use super::resume;
use super::session::{fatal, Sftp, SftpError};
use super::spread::{Batch, Job, Spread};
use super::transfer::{self, Options};
use sluice_proto::sftp::{Attrs, Reply, Request, Status};
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::PathBuf;

/// Files listed at up to this size come here.
pub const SMALL: u64 = 1 << 20;
/// Files in flight at once.
const MAX_FILES: usize = 64;

struct Fetch {
    remote: Vec<u8>,
    local: PathBuf,
    tmp: PathBuf,
    file: File,
    attrs: Attrs,
    handle: Vec<u8>,
    /// READs and the CLOSE still to answer.
    outstanding: usize,
    /// Where EOF was seen (the file's end), and how far data reached.
    eof_at: Option<u64>,
    high: u64,
    closing: bool,
    error: Option<String>,
    /// When it started, for its progress line.
    since: std::time::Instant,
}

/// Downloads of small files, in flight together.
pub struct Downloads {
    o: Options,
    files: HashMap<usize, Fetch>,
    /// Request id -> (file, offset and length of a READ).
    waiting: HashMap<u32, (usize, u64, u32)>,
    next: usize,
    failed: bool,
    /// Other connections taking a share of the files (spread.rs).
    spread: Option<Spread>,
}

impl Downloads {
    /// A batch with `o`'s settings (-p, -f, -l).
    pub fn new(o: &Options) -> Downloads {
        Downloads {
            o: o.clone(),
            files: HashMap::new(),
            waiting: HashMap::new(),
            next: 0,
            failed: false,
            spread: Spread::new(o, |o| Box::new(Downloads::new(o))),
        }
    }

    /// Waits until every file is done here and on the other connections
    /// (taking back what they could not); Ok(all went well).
    pub fn drain(&mut self, s: &mut Sftp, say: &mut dyn FnMut(&str)) -> Result<bool, String> {
        let mut ok = self.finish(s, say)?;
        while let Some(job) = self.spread.as_ref().and_then(|sp| sp.take()) {
            if let Job::Down {
                remote,
                local,
                attrs,
            } = job
            {
                self.get_here(s, remote, local, attrs, say)?;
            }
        }
        ok &= self.finish(s, say)?;
        Ok(ok & !self.spread.as_ref().is_some_and(|sp| sp.failed()))
    }

    /// Starts fetching `remote` (listed with `attrs`) to `local`.
    pub fn get(
        &mut self,
        s: &mut Sftp,
        remote: Vec<u8>,
        local: PathBuf,
        attrs: Attrs,
        say: &mut dyn FnMut(&str),
    ) -> Result<(), String> {
        let job = Job::Down {
            remote,
            local,
            attrs,
        };
        match self
            .spread
            .as_mut()
            .map_or(Some(job.clone()), |sp| sp.offer(job))
        {
            Some(Job::Down {
                remote,
                local,
                attrs,
            }) => self.get_here(s, remote, local, attrs, say),
            _ => Ok(()),
        }
    }

    fn get_here(
        &mut self,
        s: &mut Sftp,
        remote: Vec<u8>,
        local: PathBuf,
        attrs: Attrs,
        say: &mut dyn FnMut(&str),
    ) -> Result<(), String> {
        while self.files.len() >= MAX_FILES {
            self.step(s, say)?;
        }
        let mode = attrs.permissions.unwrap_or(0o644) & 0o777;
        // The same partial name as a large file's (partial/): a run that
        // is killed leaves at most this name, which the next copy of the
        // file empties and renames away.
        let tmp = PathBuf::from(std::ffi::OsStr::from_bytes(&resume::part_beside(
            local.as_os_str().as_bytes(),
        )));
        let file = match super::partial::down::create(&tmp, mode) {
            Ok(f) => f,
            Err(e) => {
                say(&format!(
                    "open local \"{}\": {}",
                    local.display(),
                    transfer::os_text(&e)
                ));
                self.failed = true;
                return Ok(());
            }
        };
        let id = s
            .send(&Request::Open {
                path: &remote,
                pflags: sluice_proto::sftp::pflags::READ,
                attrs: Attrs::default(),
            })
            .map_err(fatal)?;
        let n = self.next;
        self.next += 1;
        self.waiting.insert(id, (n, 0, 0));
        self.files.insert(
            n,
            Fetch {
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

    fn read(&mut self, s: &mut Sftp, n: usize, off: u64, len: u32) -> Result<(), String> {
        let Some(f) = self.files.get_mut(&n) else {
            return Ok(());
        };
        let id = s
            .send(&Request::Read {
                handle: &f.handle,
                offset: off,
                len,
            })
            .map_err(fatal)?;
        f.outstanding += 1;
        self.waiting.insert(id, (n, off, len));
        Ok(())
    }

    /// Takes one reply and moves its file on.
    fn step(&mut self, s: &mut Sftp, say: &mut dyn FnMut(&str)) -> Result<(), String> {
        let body = s.recv().map_err(fatal)?;
        let reply =
            Reply::decode(&body).map_err(|e| format!("Server sent a malformed reply: {e}"))?;
        let id = reply.id().unwrap_or(0);
        let (n, off, len) = self
            .waiting
            .remove(&id)
            .ok_or_else(|| format!("Unexpected reply id {id} from the server"))?;
        let chunk = s.max_read.max(1);
        let Some(f) = self.files.get_mut(&n) else {
            return Err(format!("Unexpected reply id {id} from the server"));
        };
        f.outstanding -= 1;
        if f.closing {
            if let Reply::Status { code, .. } = reply {
                if code != Status::OK && f.error.is_none() {
                    f.error = Some(format!(
                        "close remote \"{}\": {}",
                        transfer::show(&f.remote),
                        SftpError::Remote(code)
                    ));
                }
            }
            return self.done(n, say);
        }
        match reply {
            Reply::Handle { handle, .. } if f.handle.is_empty() => {
                f.handle = handle.to_vec();
                let size = f.attrs.size.unwrap_or(0);
                let mut at = 0;
                while at < size {
                    let l = (size - at).min(u64::from(chunk)) as u32;
                    self.read(s, n, at, l)?;
                    at += u64::from(l);
                }
                // One past the listed size: EOF, or the file grew.
                self.read(s, n, size, chunk)?;
                return Ok(());
            }
            Reply::Data { data, .. }
                if !f.handle.is_empty() && !data.is_empty() && data.len() <= len as usize =>
            {
                if let Err(e) = f.file.write_all_at(data, off) {
                    f.error.get_or_insert(format!(
                        "write to \"{}\": {}",
                        f.local.display(),
                        transfer::os_text(&e)
                    ));
                }
                let got = data.len() as u64;
                // -l paces the bytes that came, not the READ's length: the
                // read past the listed size (EOF) asks for a whole request.
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
            }
            Reply::Status {
                code: Status::EOF, ..
            } if !f.handle.is_empty() => {
                f.eof_at = Some(f.eof_at.map_or(off, |e| e.min(off)));
            }
            Reply::Status { code, .. } => {
                let what = if f.handle.is_empty() { "open" } else { "read" };
                f.error.get_or_insert(format!(
                    "{what} remote \"{}\": {}",
                    transfer::show(&f.remote),
                    SftpError::Remote(code)
                ));
            }
            _ => return Err("Server sent an unexpected reply".into()),
        }
        let Some(f) = self.files.get_mut(&n) else {
            return Ok(());
        };
        if f.outstanding == 0 {
            if f.handle.is_empty() {
                return self.done(n, say);
            }
            let id = s
                .send(&Request::Close { handle: &f.handle })
                .map_err(fatal)?;
            f.outstanding += 1;
            f.closing = true;
            self.waiting.insert(id, (n, 0, 0));
        }
        Ok(())
    }

    /// A file is through: cut to its end, modes and times set, renamed
    /// into place; or its error said and the temporary file removed.
    fn done(&mut self, n: usize, say: &mut dyn FnMut(&str)) -> Result<(), String> {
        let Some(mut f) = self.files.remove(&n) else {
            return Ok(());
        };
        let end = f.eof_at.unwrap_or(f.high);
        if f.error.is_none() && f.high > end {
            f.error = Some(format!(
                "\"{}\" changed during the download",
                transfer::show(&f.remote)
            ));
        }
        if f.error.is_none() {
            let finish = (|| {
                f.file.set_len(end)?;
                if self.o.fsync {
                    f.file.sync_all()?;
                }
                if self.o.preserve {
                    let mode = f.attrs.permissions.unwrap_or(0o644) & 0o777;
                    f.file
                        .set_permissions(std::fs::Permissions::from_mode(mode))?;
                    if let Some((at, mt)) = f.attrs.atime_mtime {
                        transfer::set_times(&f.file, at, mt)?;
                    }
                }
                std::fs::rename(&f.tmp, &f.local)
            })();
            if let Err(e) = finish {
                f.error = Some(format!(
                    "\"{}\": {}",
                    f.local.display(),
                    transfer::os_text(&e)
                ));
            }
        }
        match f.error {
            Some(e) => {
                say(&e);
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
}

impl Batch for Downloads {
    fn start(&mut self, s: &mut Sftp, job: Job, say: &mut dyn FnMut(&str)) -> Result<(), String> {
        match job {
            Job::Down {
                remote,
                local,
                attrs,
            } => self.get(s, remote, local, attrs, say),
            Job::Up { .. } => Ok(()),
        }
    }

    fn finish(&mut self, s: &mut Sftp, say: &mut dyn FnMut(&str)) -> Result<bool, String> {
        Downloads::finish(self, s, say)
    }
}
