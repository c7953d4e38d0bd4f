//! Requests that wait for their answer (sftp's commands, a transfer's
//! OPEN, CLOSE, FSETSTAT and the like): one method per request.

use super::error::{bad, SftpError, SftpResult};
use super::reply::{attrs_of, handle_of, one_name, status_of};
use super::Sftp;
use sluice_proto::sftp::response;
use sluice_proto::sftp::{pflags, Attrs, Extended, NameEntry, Reply, Request, Status};

impl Sftp {
    /// An extended request answered by EXTENDED_REPLY; its fields.
    pub fn extended(&mut self, e: Extended<'_>) -> SftpResult<Vec<u8>> {
        let body = self.call(&Request::Extended(e))?;
        match Reply::decode(&body) {
            Ok(Reply::ExtendedReply { data, .. }) => Ok(data.to_vec()),
            Ok(Reply::Status { code, message, .. }) => Err(SftpError::status(code, message)),
            _ => Err(bad("extended")),
        }
    }

    /// STAT (follow links) or LSTAT.
    pub fn stat(&mut self, path: &[u8], follow: bool) -> SftpResult<Attrs> {
        let body = if follow {
            self.call(&Request::Stat { path })?
        } else {
            self.call(&Request::Lstat { path })?
        };
        attrs_of(&body)
    }

    /// FSTAT.
    pub fn fstat(&mut self, handle: &[u8]) -> SftpResult<Attrs> {
        let body = self.call(&Request::Fstat { handle })?;
        attrs_of(&body)
    }

    /// REALPATH.
    pub fn realpath(&mut self, path: &[u8]) -> SftpResult<Vec<u8>> {
        let body = self.call(&Request::Realpath { path })?;
        one_name(&body)
    }

    /// OPEN; returns the handle.
    pub fn open(&mut self, path: &[u8], flags: u32, attrs: Attrs) -> SftpResult<Vec<u8>> {
        let body = self.call(&Request::Open {
            path,
            pflags: flags,
            attrs,
        })?;
        handle_of(&body)
    }

    /// OPEN for reading.
    pub fn open_read(&mut self, path: &[u8]) -> SftpResult<Vec<u8>> {
        self.open(path, pflags::READ, Attrs::default())
    }

    /// CLOSE.
    pub fn close(&mut self, handle: &[u8]) -> SftpResult<()> {
        self.call_status(&Request::Close { handle })
    }

    /// CLOSE of a handle that was only read, without waiting for the
    /// answer (a round trip less per download): nothing depends on it,
    /// so the reply is dropped when it comes.
    pub fn close_unanswered(&mut self, handle: &[u8]) -> SftpResult<()> {
        let id = self.send(&Request::Close { handle })?;
        self.unanswered.push(id);
        Ok(())
    }

    /// Every entry of a directory (OPENDIR, READDIR until EOF, CLOSE).
    pub fn read_dir(&mut self, path: &[u8]) -> SftpResult<Vec<NameEntry>> {
        let body = self.call(&Request::Opendir { path })?;
        let handle = handle_of(&body)?;
        let mut all = Vec::new();
        let r = loop {
            let body = match self.call(&Request::Readdir { handle: &handle }) {
                Ok(b) => b,
                Err(e) => break Err(e),
            };
            match Reply::decode(&body) {
                Ok(Reply::Name { entries, .. }) => all.extend(entries),
                Ok(Reply::Status {
                    code: Status::EOF, ..
                }) => break Ok(()),
                Ok(Reply::Status { code, message, .. }) => {
                    break Err(SftpError::status(code, message))
                }
                _ => break Err(bad("readdir")),
            }
        };
        let closed = self.close(&handle);
        r?;
        closed?;
        Ok(all)
    }

    /// REMOVE.
    pub fn remove(&mut self, path: &[u8]) -> SftpResult<()> {
        self.call_status(&Request::Remove { path })
    }

    /// MKDIR with `perm` (None: the server's default).
    pub fn mkdir(&mut self, path: &[u8], perm: Option<u32>) -> SftpResult<()> {
        let attrs = Attrs {
            permissions: perm,
            ..Attrs::default()
        };
        self.call_status(&Request::Mkdir { path, attrs })
    }

    /// RMDIR.
    pub fn rmdir(&mut self, path: &[u8]) -> SftpResult<()> {
        self.call_status(&Request::Rmdir { path })
    }

    /// posix-rename@openssh.com when asked for and offered, else RENAME.
    pub fn rename(&mut self, from: &[u8], to: &[u8], posix: bool) -> SftpResult<()> {
        if posix && self.has("posix-rename@openssh.com", "1") {
            let body = self.call(&Request::Extended(Extended::PosixRename { from, to }))?;
            return status_of(&body);
        }
        self.call_status(&Request::Rename { from, to })
    }

    /// SETSTAT.
    pub fn setstat(&mut self, path: &[u8], attrs: Attrs) -> SftpResult<()> {
        self.call_status(&Request::Setstat { path, attrs })
    }

    /// FSETSTAT.
    pub fn fsetstat(&mut self, handle: &[u8], attrs: Attrs) -> SftpResult<()> {
        self.call_status(&Request::Fsetstat { handle, attrs })
    }

    /// SYMLINK (OpenSSH's order: the target, then the new link).
    pub fn symlink(&mut self, target: &[u8], link: &[u8]) -> SftpResult<()> {
        self.call_status(&Request::Symlink { target, link })
    }

    /// hardlink@openssh.com.
    pub fn hardlink(&mut self, target: &[u8], link: &[u8]) -> SftpResult<()> {
        let body = self.call(&Request::Extended(Extended::Hardlink { target, link }))?;
        status_of(&body)
    }

    /// fsync@openssh.com.
    pub fn fsync(&mut self, handle: &[u8]) -> SftpResult<()> {
        let body = self.call(&Request::Extended(Extended::Fsync { handle }))?;
        status_of(&body)
    }

    /// statvfs@openssh.com.
    pub fn statvfs(&mut self, path: &[u8]) -> SftpResult<sluice_proto::sftp::reply::Statvfs> {
        let data = self.extended(Extended::Statvfs { path })?;
        response::statvfs(&data).map_err(|_| bad("statvfs"))
    }

    /// copy-data: the server copies `read_handle`'s bytes from 0 to its
    /// end into `write_handle` from 0.
    pub fn copy_data(&mut self, read_handle: &[u8], write_handle: &[u8]) -> SftpResult<()> {
        let body = self.call(&Request::Extended(Extended::CopyData {
            read_handle,
            read_offset: 0,
            read_len: 0,
            write_handle,
            write_offset: 0,
        }))?;
        status_of(&body)
    }

    /// users-groups-by-id@openssh.com: the server's names for `uids` and
    /// `gids`, in order (empty where it knows none).
    pub fn users_groups_by_id(
        &mut self,
        uids: Vec<u32>,
        gids: Vec<u32>,
    ) -> SftpResult<response::NameLists> {
        let (nu, ng) = (uids.len(), gids.len());
        let data = self.extended(Extended::UsersGroupsById { uids, gids })?;
        match response::users_groups(&data) {
            Ok((u, g)) if u.len() == nu && g.len() == ng => Ok((u, g)),
            _ => Err(bad("users-groups-by-id")),
        }
    }

    /// sha256-range@sluice.dev: the bytes hashed and their SHA-256.
    pub fn sha256_range(
        &mut self,
        path: &[u8],
        offset: u64,
        len: u64,
    ) -> SftpResult<(u64, [u8; 32])> {
        let data = self.extended(Extended::Sha256Range { path, offset, len })?;
        response::sha256_range(&data).map_err(|_| bad("sha256-range"))
    }
}
