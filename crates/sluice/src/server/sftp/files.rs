//! The file-system calls behind SFTP requests: paths as byte strings,
//! errno to status codes (as sftp-server maps them), attributes from
//! stat(2), `ls -l` lines, directory listings, attribute changes.

use sluice_proto::sftp::{pflags, reply, Attrs, NameEntry, Status};
use std::collections::HashMap;
use std::ffi::{CString, OsStr};
use std::fs::{File, Metadata, ReadDir};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use rustix::fs::{AtFlags, Gid, Mode, OFlags, RenameFlags, Timespec, Timestamps, Uid, CWD};
use rustix::io::Errno;

/// An open file.
pub(super) struct OpenFile {
    pub(super) file: File,
    pub(super) path: Vec<u8>,
    pub(super) read: u64,
    pub(super) written: u64,
    /// A WRITE (or copy-data into it) failed: close-rename@sluice.dev
    /// must not put this file under its final name.
    pub(super) failed: bool,
}

/// An open directory: "." and ".." first, as readdir(3) gives them.
pub(super) struct OpenDir {
    pub(super) path: Vec<u8>,
    pub(super) iter: ReadDir,
    pub(super) dots_sent: bool,
}

/// What a handle refers to.
pub(super) enum Handle {
    File(OpenFile),
    Dir(OpenDir),
}

/// A wire path as a file-system path (bytes unchanged; "" is ".", as
/// sftp-server treats it).
pub(super) fn path(p: &[u8]) -> &Path {
    if p.is_empty() {
        Path::new(".")
    } else {
        Path::new(OsStr::from_bytes(p))
    }
}

/// A path's bytes.
pub(super) fn bytes_of(p: &Path) -> Vec<u8> {
    p.as_os_str().as_bytes().to_vec()
}

/// A wire name for log lines (not UTF-8 shown with replacement characters).
pub(super) fn show(p: &[u8]) -> String {
    String::from_utf8_lossy(p).into_owned()
}

fn cpath(p: &[u8]) -> io::Result<CString> {
    CString::new(path(p).as_os_str().as_bytes()).map_err(|_| io::Error::from(Errno::INVAL))
}

/// The status for a failed call (sftp-server's errno_to_portable).
pub(super) fn status_of(e: &io::Error) -> Status {
    match e.raw_os_error().map(Errno::from_raw_os_error) {
        Some(Errno::NOENT | Errno::NOTDIR | Errno::BADF | Errno::LOOP) => Status::NO_SUCH_FILE,
        Some(Errno::PERM | Errno::ACCESS | Errno::FAULT) => Status::PERMISSION_DENIED,
        Some(Errno::NAMETOOLONG | Errno::INVAL) => Status::BAD_MESSAGE,
        Some(Errno::NOSYS | Errno::OPNOTSUPP) => Status::OP_UNSUPPORTED,
        _ if e.kind() == io::ErrorKind::UnexpectedEof => Status::EOF,
        _ => Status::FAILURE,
    }
}

/// ATTRS from stat(2) (times truncated to the protocol's 32 bits).
pub(super) fn attrs_of(m: &Metadata) -> Attrs {
    Attrs {
        size: Some(m.size()),
        uid_gid: Some((m.uid(), m.gid())),
        permissions: Some(m.mode()),
        atime_mtime: Some((m.atime() as u32, m.mtime() as u32)),
        extended: Vec::new(),
    }
}

/// OPEN: pflags to open(2) flags; the mode from the attributes (0666
/// when absent), less the umask.
pub(super) fn open(p: &[u8], fl: u32, attrs: &Attrs) -> io::Result<File> {
    let mut o = std::fs::OpenOptions::new();
    o.read(fl & pflags::READ != 0)
        .write(fl & pflags::WRITE != 0)
        .append(fl & pflags::APPEND != 0);
    let mut custom = OFlags::empty();
    if fl & pflags::CREAT != 0 {
        custom |= OFlags::CREATE;
    }
    if fl & pflags::TRUNC != 0 {
        custom |= OFlags::TRUNC;
    }
    if fl & pflags::EXCL != 0 {
        custom |= OFlags::EXCL;
    }
    if fl & (pflags::READ | pflags::WRITE | pflags::APPEND) == 0 {
        // Neither read nor write: open(2) with O_RDONLY, as sftp-server.
        o.read(true);
    }
    o.custom_flags(custom.bits() as i32)
        .mode(attrs.permissions.map_or(0o666, |m| m & 0o7777));
    // std refuses O_TRUNC/O_CREAT without write access; pass them raw.
    o.open(path(p))
}

/// Tells the kernel a handle opened for reading is read front to back
/// (a larger read-ahead window for the download).
pub(super) fn advise_sequential(f: &File) {
    // Advice only: a file system without it reads as before.
    let _ = rustix::fs::fadvise(f, 0, None, rustix::fs::Advice::Sequential);
}

/// pread into `buf` until it is full or the file ends; returns the bytes read.
pub(super) fn read_at(f: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut n = 0;
    while n < buf.len() {
        let at = offset
            .checked_add(n as u64)
            .ok_or(io::ErrorKind::InvalidInput)?;
        match f.read_at(buf.get_mut(n..).unwrap_or_default(), at) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if n > 0 => {
                let _ = e;
                break;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// MKDIR with the attributes' permissions (0777 when absent), less the umask.
pub(super) fn mkdir(p: &[u8], attrs: &Attrs) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .mode(attrs.permissions.map_or(0o777, |m| m & 0o7777))
        .create(path(p))
}

/// SETSTAT (`follow`) and lsetstat@openssh.com: size, permissions, times,
/// owner, in sftp-server's order. lsetstat cannot change a size.
pub(super) fn set_attrs(p: &[u8], a: &Attrs, follow: bool) -> io::Result<()> {
    let c = cpath(p)?;
    let at = if follow {
        AtFlags::empty()
    } else {
        AtFlags::SYMLINK_NOFOLLOW
    };
    if let Some(size) = a.size {
        if !follow {
            return Err(Errno::OPNOTSUPP.into());
        }
        crate::sys::fs::truncate(&c, size)?;
    }
    if let Some(m) = a.permissions {
        if follow {
            rustix::fs::chmodat(CWD, &c, Mode::from_raw_mode(m & 0o7777), at)?;
        } else {
            // rustix refuses AT_SYMLINK_NOFOLLOW outright; glibc changes
            // anything but a symlink.
            crate::sys::fs::chmod_nofollow(&c, m & 0o7777)?;
        }
    }
    if let Some((atime, mtime)) = a.atime_mtime {
        rustix::fs::utimensat(CWD, &c, &times(atime, mtime), at)?;
    }
    if let Some((uid, gid)) = a.uid_gid {
        let (uid, gid) = owner(uid, gid);
        rustix::fs::chownat(CWD, &c, uid, gid, at)?;
    }
    Ok(())
}

/// FSETSTAT.
pub(super) fn set_file_attrs(f: &File, a: &Attrs) -> io::Result<()> {
    if let Some(size) = a.size {
        f.set_len(size)?;
    }
    if let Some(m) = a.permissions {
        rustix::fs::fchmod(f, Mode::from_raw_mode(m & 0o7777))?;
    }
    if let Some((atime, mtime)) = a.atime_mtime {
        rustix::fs::futimens(f, &times(atime, mtime))?;
    }
    if let Some((uid, gid)) = a.uid_gid {
        let (uid, gid) = owner(uid, gid);
        rustix::fs::fchown(f, uid, gid)?;
    }
    Ok(())
}

/// An owner and group from the wire; -1 (all ones) leaves one unchanged,
/// as chown(2) reads it.
fn owner(uid: u32, gid: u32) -> (Option<Uid>, Option<Gid>) {
    (
        (uid != u32::MAX).then(|| Uid::from_raw(uid)),
        (gid != u32::MAX).then(|| Gid::from_raw(gid)),
    )
}

fn times(atime: u32, mtime: u32) -> Timestamps {
    let t = |s: u32| Timespec {
        tv_sec: i64::from(s),
        tv_nsec: 0,
    };
    Timestamps {
        last_access: t(atime),
        last_modification: t(mtime),
    }
}

/// RENAME: the target must not exist (draft 6.5; renameat2's
/// RENAME_NOREPLACE makes the check and the rename one step). File
/// systems without it get sftp-server's check, then rename(2).
pub(super) fn rename_noreplace(from: &[u8], to: &[u8]) -> io::Result<()> {
    let (a, b) = (cpath(from)?, cpath(to)?);
    let e = match rustix::fs::renameat_with(CWD, &a, CWD, &b, RenameFlags::NOREPLACE) {
        Ok(()) => return Ok(()),
        Err(e) => e,
    };
    if e != Errno::INVAL {
        return Err(e.into());
    }
    if std::fs::symlink_metadata(path(to)).is_ok() {
        return Err(Errno::EXIST.into());
    }
    std::fs::rename(path(from), path(to))
}

/// REALPATH: the canonical absolute path. A last component that does not
/// exist yet is kept as given (clients resolve upload targets this way).
pub(super) fn realpath(p: &[u8]) -> io::Result<Vec<u8>> {
    let p = path(p);
    match std::fs::canonicalize(p) {
        Ok(c) => Ok(bytes_of(&c)),
        Err(e) if e.raw_os_error() == Some(Errno::NOENT.raw_os_error()) => {
            let (Some(parent), Some(name)) = (p.parent(), p.file_name()) else {
                return Err(e);
            };
            let parent = if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            };
            let c = std::fs::canonicalize(parent)?;
            Ok(bytes_of(&c.join(name)))
        }
        Err(e) => Err(e),
    }
}

/// A NAME reply with one entry naming `p` (REALPATH, READLINK, expand-path).
pub(super) fn one_name(out: &mut Vec<u8>, id: u32, p: Vec<u8>) {
    let e = NameEntry {
        longname: p.clone(),
        filename: p,
        attrs: Attrs::default(),
    };
    reply::name(out, id, &[e]);
}

/// User and group names by id, looked up once (numeric when unknown, as in
/// a chroot without /etc/passwd).
#[derive(Default)]
pub(super) struct Names {
    users: HashMap<u32, Option<String>>,
    groups: HashMap<u32, Option<String>>,
}

impl Names {
    /// The user name for `uid`, if any.
    pub(super) fn user(&mut self, uid: u32) -> Option<String> {
        self.users
            .entry(uid)
            .or_insert_with(|| crate::users::by_uid(uid).map(|u| u.name))
            .clone()
    }

    /// The group name for `gid`, if any.
    pub(super) fn group(&mut self, gid: u32) -> Option<String> {
        self.groups
            .entry(gid)
            .or_insert_with(|| crate::users::group_name(gid))
            .clone()
    }
}

/// Up to `max` entries of an open directory ("." and ".." first), with
/// their attributes (lstat) and `ls -l` lines; empty at the end.
pub(super) fn read_dir_batch(
    d: &mut OpenDir,
    max: usize,
    names: &mut Names,
) -> io::Result<Vec<NameEntry>> {
    let mut v = Vec::new();
    if !d.dots_sent {
        d.dots_sent = true;
        let dir = path(&d.path).to_path_buf();
        for (n, p) in [(".", dir.clone()), ("..", dir.join(".."))] {
            if let Ok(m) = std::fs::symlink_metadata(&p) {
                v.push(entry(n.as_bytes(), &m, names));
            }
        }
    }
    while v.len() < max {
        let Some(e) = d.iter.next() else { break };
        let e = e?;
        let name = e.file_name();
        // An entry removed since it was listed is skipped.
        if let Ok(m) = std::fs::symlink_metadata(e.path()) {
            v.push(entry(name.as_bytes(), &m, names));
        }
    }
    Ok(v)
}

fn entry(name: &[u8], m: &Metadata, names: &mut Names) -> NameEntry {
    NameEntry {
        filename: name.to_vec(),
        longname: longname(name, m, names),
        attrs: attrs_of(m),
    }
}

/// An `ls -l` line as sftp-server writes it: mode, links, owner, group,
/// size, date (time within six months, else year), name.
pub(super) fn longname(name: &[u8], m: &Metadata, names: &mut Names) -> Vec<u8> {
    let user = names.user(m.uid()).unwrap_or_else(|| m.uid().to_string());
    let group = names.group(m.gid()).unwrap_or_else(|| m.gid().to_string());
    let mut s = format!(
        "{} {:>3} {:<8} {:<8} {:>8} {} ",
        crate::ls_style::mode_string(m.mode()),
        m.nlink(),
        user,
        group,
        m.size(),
        crate::ls_style::mtime_string(m.mtime())
    )
    .into_bytes();
    s.extend_from_slice(name);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_map_to_status_codes() {
        let e = |n| status_of(&io::Error::from_raw_os_error(n));
        assert_eq!(e(Errno::ACCESS.raw_os_error()), Status::PERMISSION_DENIED);
        assert_eq!(e(Errno::NOENT.raw_os_error()), Status::NO_SUCH_FILE);
        assert_eq!(e(Errno::EXIST.raw_os_error()), Status::FAILURE);
    }
}
