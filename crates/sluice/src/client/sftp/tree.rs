//! One walk of a remote directory tree for a recursive download (sftp's
//! `get -r`, scp's `-r`): each directory made here, listed, its entries'
//! names checked ([`remote::plain_name`]) and handed on by kind, small
//! files into the caller's batch (many/). What each program prints and
//! how it copies a file is its [`Visit`].

use super::many::Downloads;
use super::remote::{self, path_of, plain_name};
use super::session::{Sftp, SftpError, SftpResult};
use sluice_proto::sftp::Attrs;
use std::path::{Path, PathBuf};

/// What a recursive download does at each step. Each returns Ok(all went
/// well) or Err(the error that ends the session).
pub(super) trait Visit {
    /// Before `dir` is listed (the batch's replies first).
    fn enter(&mut self, s: &mut Sftp, batch: &mut Downloads, dir: &[u8]) -> SftpResult<bool>;
    /// The local directory `local` could not be made.
    fn no_dir(&mut self, local: &Path, e: std::io::Error) -> SftpResult<bool>;
    /// `dir` could not be listed.
    fn unlisted(&mut self, dir: &[u8], e: SftpError) -> SftpResult<bool>;
    /// A regular file to fetch, listed with `attrs`.
    fn file(
        &mut self,
        s: &mut Sftp,
        batch: &mut Downloads,
        remote: Vec<u8>,
        local: PathBuf,
        attrs: Attrs,
    ) -> SftpResult<bool>;
    /// Neither a file nor a directory: skipped.
    fn other(&mut self, _remote: &[u8]) {}
    /// After `dir`'s entries, whatever became of them.
    fn leave(
        &mut self,
        _s: &mut Sftp,
        _batch: &mut Downloads,
        _dir: &[u8],
        _local: &Path,
    ) -> SftpResult<bool> {
        Ok(true)
    }
}

/// Fetches the remote directory `dir` as `local`, depth first.
pub(super) fn walk_down(
    s: &mut Sftp,
    batch: &mut Downloads,
    dir: &[u8],
    local: &Path,
    v: &mut impl Visit,
) -> SftpResult<bool> {
    let mut ok = v.enter(s, batch, dir)?;
    match std::fs::create_dir(local) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && local.is_dir() => {}
        Err(e) => return v.no_dir(local, e),
    }
    let entries = match s.read_dir(dir) {
        Ok(e) => e,
        Err(e) => return v.unlisted(dir, e),
    };
    for e in entries {
        if !plain_name(&e.filename) {
            continue;
        }
        let r = remote::join(dir, &e.filename);
        let l = local.join(path_of(&e.filename));
        ok &= match e.attrs.permissions.map(|p| p & 0o170000) {
            Some(0o040000) => walk_down(s, batch, &r, &l, v)?,
            Some(0o100000) => v.file(s, batch, r, l, e.attrs)?,
            _ => {
                v.other(&r);
                true
            }
        };
    }
    let left = v.leave(s, batch, dir, local)?;
    Ok(ok & left)
}
