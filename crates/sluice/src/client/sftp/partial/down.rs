//! Where a download writes: `.NAME.sluice-part` beside the target, taken
//! up from its record on a resume, started over otherwise; or, for
//! OpenSSH's reget without a partial file, the target itself after its
//! prefix (checked by SHA-256 against sluiced).
//!
//! Safety: the part is opened with O_NOFOLLOW (a symbolic link there is
//! refused, never written through) and O_NONBLOCK (a FIFO there does not
//! hang the open; anything but a regular file is refused), and created
//! with O_EXCL when new; its record is read and written without following
//! links (resume.rs).

use super::super::errors::{show, LocalOp, Refusal, TransferError, TransferResult};
use super::super::options::Options;
use super::super::resume::{self, Record};
use super::super::session::Sftp;
use super::{same_prefix, say_kept};
use rustix::fs::OFlags;
use rustix::io::Errno;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A download's destination, decided before the first READ.
pub struct Down {
    /// Where the bytes go.
    pub file: File,
    /// The partial file, renamed over the target when whole (None: the
    /// target is written in place).
    pub part: Option<PathBuf>,
    /// Written in place after this prefix (OpenSSH's reget).
    pub start: u64,
    /// Ranges of the part already right (a resume).
    pub done: Vec<(u64, u64)>,
    /// The record of completed ranges (None: the size is unknown, or in
    /// place).
    pub record: Option<Arc<Record>>,
    keep: bool,
}

/// `path` made absolute (records are keyed by it; sftp's lcd moves).
fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        return p.to_path_buf();
    }
    std::env::current_dir().map_or_else(|_| p.to_path_buf(), |d| d.join(p))
}

fn refuse_link(part: &Path) -> TransferError {
    Refusal::PartIsLink(part.to_path_buf()).into()
}

/// Opens an existing part for a resume; None when there is none.
fn open_existing(part: &Path) -> TransferResult<Option<File>> {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32)
        .open(part);
    match f {
        Ok(f) => regular(f, part).map(Some),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.raw_os_error() == Some(Errno::LOOP.raw_os_error()) => Err(refuse_link(part)),
        Err(e) => Err(TransferError::local(LocalOp::Open, part, e)),
    }
}

fn regular(f: File, part: &Path) -> TransferResult<File> {
    match f.metadata() {
        Ok(m) if m.is_file() => Ok(f),
        _ => Err(Refusal::PartNotRegular(part.to_path_buf()).into()),
    }
}

/// Creates the part, or empties the one an earlier run left (a plain get
/// starts over, as OpenSSH's does). Also many/down.rs's, for small files.
pub(in crate::client::sftp) fn create(part: &Path, mode: u32) -> Result<File, io::Error> {
    let new = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(mode | 0o200)
        .custom_flags(OFlags::NOFOLLOW.bits() as i32)
        .open(part);
    match new {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32)
                .open(part)?;
            if !f.metadata()?.is_file() {
                return Err(io::Error::from(Errno::EXIST));
            }
            f.set_len(0)?;
            Ok(f)
        }
        r => r,
    }
}

/// Decides where downloading `remote` (`size` bytes if known, modified at
/// `mtime`, mode `mode`) to `local` writes.
pub fn prepare(
    s: &mut Sftp,
    remote: &[u8],
    local: &Path,
    size: Option<u64>,
    mtime: u64,
    mode: u32,
    o: &Options,
) -> TransferResult<Down> {
    let abs = absolute(local);
    let part = PathBuf::from(std::ffi::OsStr::from_bytes(&resume::part_beside(
        abs.as_os_str().as_bytes(),
    )));
    let record = size.map(|sz| Arc::new(Record::for_download(&o.place, remote, &abs, sz, mtime)));
    let keep = o.keep_partial;
    let down = |file, part, start, done, record| Down {
        file,
        part,
        start,
        done,
        record,
        keep,
    };
    if o.resume {
        let existing = match &record {
            Some(_) => open_existing(&part)?,
            None => None,
        };
        if let Some(f) = existing {
            let held = f.metadata().map_or(0, |m| m.len());
            let listed = record.as_ref().map(|r| r.load()).unwrap_or_default();
            // Ranges past the part's end were not written after all.
            let done: Vec<_> = listed.into_iter().filter(|r| r.1 <= held).collect();
            if !done.is_empty() {
                let done = resume::checked(s, remote, &f, done)?;
                return Ok(down(f, Some(part), 0, done, record));
            }
            crate::log!(
                Debug1,
                "resume: \"{}\" has no record of completed ranges: not used",
                part.display()
            );
        }
        // OpenSSH's reget: the target's own prefix, if it can be trusted.
        if let Ok(m) = std::fs::metadata(local) {
            let have = m.len();
            if size.is_some_and(|sz| have > sz) {
                return Err(Refusal::LocalLarger(local.to_path_buf()).into());
            }
            let open_local = |e| TransferError::local(LocalOp::Open, local, e);
            let f = File::open(local).map_err(open_local)?;
            match same_prefix(s, remote, &f, have)? {
                Some(false) => crate::errln!(
                    "\"{}\": local prefix differs from the remote file: fetching it whole",
                    local.display()
                ),
                _ => {
                    let f = OpenOptions::new()
                        .write(true)
                        .open(local)
                        .map_err(open_local)?;
                    return Ok(down(f, None, have, Vec::new(), None));
                }
            }
        }
    }
    match create(&part, mode) {
        Ok(f) => Ok(down(f, Some(part), 0, Vec::new(), record)),
        Err(e) if e.raw_os_error() == Some(Errno::LOOP.raw_os_error()) => Err(refuse_link(&part)),
        // A directory we may not create in, a file we may write: in
        // place, as sftp writes.
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied && local.is_file() => {
            crate::log!(Debug1, "partial name refused ({e}): writing in place");
            let f = OpenOptions::new()
                .write(true)
                .open(local)
                .map_err(|e| TransferError::local(LocalOp::Open, local, e))?;
            Ok(down(f, None, 0, Vec::new(), None))
        }
        Err(e) => Err(TransferError::local(LocalOp::Open, local, e)),
    }
}

impl Down {
    /// The download is whole: the part goes over the target.
    pub fn commit(&self, local: &Path) -> TransferResult<()> {
        if let Some(p) = &self.part {
            std::fs::rename(p, local)
                .map_err(|e| TransferError::local(LocalOp::RenameTo, local, e))?;
        }
        Ok(())
    }

    /// After the copy (and [`Down::commit`]): the record goes on success;
    /// on a failure the part and its record stay for a resume when they
    /// hold something and KeepPartial allows, else they go too.
    pub fn settle(&self, r: &TransferResult<()>, remote: &[u8]) {
        let rec = self.record.as_deref();
        if r.is_ok() {
            if let Some(rec) = rec {
                rec.remove();
            }
            return;
        }
        let Some(p) = &self.part else { return };
        let worth = rec.is_some_and(|r| !r.load().is_empty());
        if self.keep && worth {
            say_kept(&p.display().to_string(), "reget (get -a)");
            crate::log!(
                Debug1,
                "resume: kept {} and its record for \"{}\"",
                p.display(),
                show(remote)
            );
            return;
        }
        let _ = std::fs::remove_file(p);
        if let Some(rec) = rec {
            rec.remove();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_at_the_partial_name_is_refused_and_a_leftover_emptied() {
        let dir = std::env::temp_dir().join(format!("sluice-part-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, b"keep me").unwrap();
        let part = dir.join(".t.sluice-part");
        std::os::unix::fs::symlink(&victim, &part).unwrap();
        let e = create(&part, 0o644).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(Errno::LOOP.raw_os_error()));
        match open_existing(&part) {
            Err(e @ TransferError::Refused(Refusal::PartIsLink(_))) => {
                assert!(e.to_string().contains("symbolic link"), "{e}")
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
        std::fs::remove_file(&part).unwrap();
        // New: created. Left by a killed run: emptied (a plain get).
        create(&part, 0o644).unwrap();
        std::fs::write(&part, b"old bytes").unwrap();
        let f = create(&part, 0o644).unwrap();
        assert_eq!(f.metadata().unwrap().len(), 0);
        assert!(open_existing(&dir.join("none")).unwrap().is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
