//! The SFTP worker thread: takes requests off the queue one at a time,
//! answers each (files.rs, ext.rs) and queues the reply, so replies leave
//! in request order (stock clients refuse to resume a transfer otherwise)
//! and the pump's thread never waits on the disk.
//!
//! The thread has its own working directory and umask (`unshare(CLONE_FS)`):
//! relative paths start at the start directory, and `-u` applies to what
//! SFTP creates without touching commands the connection runs.

use super::ext;
use super::files::{self, Handle, OpenDir};
use super::handles::{handle_in, Server, Worker};
use super::queues::{Queues, Shared, REPLY_QUEUE_BYTES};
use sluice_proto::sftp::{pflags, reply, DecodeError, Request, Status, EXTENSIONS, MAX_READ_WRITE};
use std::os::unix::fs::FileExt;

/// Directory entries per NAME reply (sftp-server's 100).
const READDIR_BATCH: usize = 100;

/// The worker's loop; ends when the input ends or the channel goes.
pub(super) fn run(w: Worker, shared: &Shared) {
    let mut s = Server::new(w);
    s.enter();
    let mut fatal = false;
    loop {
        let body = {
            let mut q = shared.lock();
            loop {
                if q.abort {
                    break None;
                }
                if let Some(b) = q.requests.pop_front() {
                    q.request_bytes = q.request_bytes.saturating_sub(b.len());
                    break Some(b);
                }
                if q.input_done {
                    break None;
                }
                q = shared.cv.wait(q).unwrap_or_else(|p| p.into_inner());
            }
        };
        let Some(body) = body else { break };
        let mut out = Vec::new();
        fatal = !s.handle(&body, &mut out);
        let mut q = shared.lock();
        while q.reply_bytes >= REPLY_QUEUE_BYTES && !q.abort {
            q = shared.cv.wait(q).unwrap_or_else(|p| p.into_inner());
        }
        if q.abort {
            break;
        }
        if !out.is_empty() {
            q.reply_bytes += out.len();
            q.replies.push_back(out);
        }
        if fatal {
            stop_input(&mut q);
        }
        drop(q);
        shared.wake_pump();
        if fatal {
            break;
        }
    }
    let n = s.handles.len();
    s.handles.clear();
    s.log(&format!(
        "session closed for local {}{}",
        s.w.who,
        if n > 0 {
            format!(" ({n} handles left open)")
        } else {
            String::new()
        }
    ));
    let mut q = shared.lock();
    let code = if fatal || q.fatal { 255 } else { 0 };
    q.exit = Some(code);
    drop(q);
    shared.wake_pump();
}

fn stop_input(q: &mut Queues) {
    q.input_done = true;
    q.requests.clear();
    q.request_bytes = 0;
}

impl Server {
    /// Answers one packet body into `out`; false on a fatal protocol error
    /// (the session ends, as sftp-server exits).
    fn handle(&mut self, body: &[u8], out: &mut Vec<u8>) -> bool {
        let (id, req) = match Request::decode(body) {
            Ok(x) => x,
            Err(DecodeError {
                id: Some(id),
                why,
                kind,
            }) if self.init => {
                crate::log!(Info, "sftp: malformed request of type {kind}: {why}");
                reply::status(out, id, Status::BAD_MESSAGE, "");
                return true;
            }
            Err(e) => {
                crate::log!(Error, "sftp: {e}; ending the session");
                return false;
            }
        };
        match (&req, self.init) {
            (Request::Init { version, .. }, false) => {
                crate::log!(Debug1, "sftp: client version {version}");
                self.init = true;
                reply::version(out, sluice_proto::sftp::VERSION, EXTENSIONS);
                return true;
            }
            (Request::Init { .. }, true) => {
                crate::log!(Error, "sftp: client sent INIT twice; ending the session");
                return false;
            }
            (_, false) => {
                crate::log!(Error, "sftp: request before INIT; ending the session");
                return false;
            }
            _ => {}
        }
        if self.w.opts.read_only && writes(&req) {
            reply::status(out, id, Status::PERMISSION_DENIED, "");
            return true;
        }
        let r = self.dispatch(id, req, out);
        if let Err(code) = r {
            reply::status(out, id, code, "");
        }
        true
    }

    fn dispatch(&mut self, id: u32, req: Request<'_>, out: &mut Vec<u8>) -> Result<(), Status> {
        match req {
            Request::Open { .. }
            | Request::Opendir { .. }
            | Request::Close { .. }
            | Request::Read { .. }
            | Request::Write { .. }
            | Request::Fstat { .. }
            | Request::Fsetstat { .. }
            | Request::Readdir { .. } => self.on_handle_request(id, req, out),
            Request::Lstat { .. }
            | Request::Stat { .. }
            | Request::Setstat { .. }
            | Request::Remove { .. }
            | Request::Mkdir { .. }
            | Request::Rmdir { .. }
            | Request::Realpath { .. }
            | Request::Rename { .. }
            | Request::Readlink { .. }
            | Request::Symlink { .. } => self.on_path_request(id, req, out),
            Request::Extended(e) => ext::answer(self, id, e, out),
            Request::UnknownExtended { name } => {
                crate::log!(
                    Debug1,
                    "sftp: unsupported extended request \"{}\"",
                    files::show(name)
                );
                Err(Status::OP_UNSUPPORTED)
            }
            Request::Unknown { kind } => {
                crate::log!(Debug1, "sftp: unknown request type {kind}");
                Err(Status::OP_UNSUPPORTED)
            }
            Request::Init { .. } => Err(Status::BAD_MESSAGE),
        }
    }

    /// Requests that open a handle or work on one.
    fn on_handle_request(
        &mut self,
        id: u32,
        req: Request<'_>,
        out: &mut Vec<u8>,
    ) -> Result<(), Status> {
        let st = |e: std::io::Error| files::status_of(&e);
        match req {
            Request::Open {
                path,
                pflags: fl,
                attrs,
            } => {
                let h = self.open_file(path, fl, &attrs)?;
                let h = self.new_handle(h).ok_or_else(|| self.too_many())?;
                reply::handle(out, id, &h);
            }
            Request::Opendir { path } => {
                let iter = std::fs::read_dir(files::path(path)).map_err(st)?;
                self.log(&format!("opendir \"{}\"", files::show(path)));
                let h = Handle::Dir(OpenDir {
                    path: path.to_vec(),
                    iter,
                    dots_sent: false,
                });
                let h = self.new_handle(h).ok_or_else(|| self.too_many())?;
                reply::handle(out, id, &h);
            }
            Request::Close { handle } => {
                self.close(handle)?;
                reply::status(out, id, Status::OK, "");
            }
            Request::Read {
                handle,
                offset,
                len,
            } => self.read(id, handle, offset, len, out)?,
            Request::Write {
                handle,
                offset,
                data,
            } => {
                let f = self.file(handle).ok_or(Status::FAILURE)?;
                if let Err(e) = f.file.write_all_at(data, offset) {
                    f.failed = true;
                    return Err(st(e));
                }
                f.written += data.len() as u64;
                reply::status(out, id, Status::OK, "");
            }
            Request::Fstat { handle } => {
                let f = self.file(handle).ok_or(Status::FAILURE)?;
                let m = f.file.metadata().map_err(st)?;
                reply::attrs(out, id, &files::attrs_of(&m));
            }
            Request::Fsetstat { handle, attrs } => {
                let f = self.file(handle).ok_or(Status::FAILURE)?;
                files::set_file_attrs(&f.file, &attrs).map_err(st)?;
                reply::status(out, id, Status::OK, "");
            }
            Request::Readdir { handle } => {
                let names = &mut self.names;
                let Some(Handle::Dir(d)) = handle_in(&mut self.handles, handle) else {
                    return Err(Status::FAILURE);
                };
                let entries = files::read_dir_batch(d, READDIR_BATCH, names).map_err(st)?;
                if entries.is_empty() {
                    return Err(Status::EOF);
                }
                reply::name(out, id, &entries);
            }
            _ => return Err(Status::BAD_MESSAGE), // not a handle request (dispatch)
        }
        Ok(())
    }

    /// READ: the file's bytes read straight into the DATA reply; EOF when
    /// none are left.
    fn read(
        &mut self,
        id: u32,
        handle: &[u8],
        offset: u64,
        len: u32,
        out: &mut Vec<u8>,
    ) -> Result<(), Status> {
        let f = self.file(handle).ok_or(Status::FAILURE)?;
        let len = len.min(MAX_READ_WRITE) as usize;
        let at = reply::data_begin(out, id);
        out.resize(at + 13 + len, 0);
        let n = files::read_at(&f.file, out.get_mut(at + 13..).unwrap_or_default(), offset)
            .map_err(|e| files::status_of(&e));
        match n {
            Ok(0) if len > 0 => {
                out.truncate(at);
                Err(Status::EOF)
            }
            Ok(n) => {
                f.read += n as u64;
                out.truncate(at + 13 + n);
                reply::data_end(out, at);
                Ok(())
            }
            Err(e) => {
                out.truncate(at);
                Err(e)
            }
        }
    }

    /// Requests on names: attributes, links, directories, removal, renames.
    fn on_path_request(
        &mut self,
        id: u32,
        req: Request<'_>,
        out: &mut Vec<u8>,
    ) -> Result<(), Status> {
        let st = |e: std::io::Error| files::status_of(&e);
        match req {
            Request::Lstat { path } => {
                let m = std::fs::symlink_metadata(files::path(path)).map_err(st)?;
                reply::attrs(out, id, &files::attrs_of(&m));
                return Ok(());
            }
            Request::Stat { path } => {
                let m = std::fs::metadata(files::path(path)).map_err(st)?;
                reply::attrs(out, id, &files::attrs_of(&m));
                return Ok(());
            }
            Request::Realpath { path } => {
                let p = files::realpath(path).map_err(st)?;
                files::one_name(out, id, p);
                return Ok(());
            }
            Request::Readlink { path } => {
                let t = std::fs::read_link(files::path(path)).map_err(st)?;
                files::one_name(out, id, files::bytes_of(&t));
                return Ok(());
            }
            Request::Setstat { path, attrs } => {
                self.log(&format!("set \"{}\" attributes", files::show(path)));
                files::set_attrs(path, &attrs, true).map_err(st)?;
            }
            Request::Remove { path } => {
                self.log(&format!("remove name \"{}\"", files::show(path)));
                std::fs::remove_file(files::path(path)).map_err(st)?;
            }
            Request::Mkdir { path, attrs } => {
                self.log(&format!("mkdir name \"{}\"", files::show(path)));
                files::mkdir(path, &attrs).map_err(st)?;
            }
            Request::Rmdir { path } => {
                self.log(&format!("rmdir name \"{}\"", files::show(path)));
                std::fs::remove_dir(files::path(path)).map_err(st)?;
            }
            Request::Rename { from, to } => {
                self.log(&format!(
                    "rename old \"{}\" new \"{}\"",
                    files::show(from),
                    files::show(to)
                ));
                files::rename_noreplace(from, to).map_err(st)?;
            }
            Request::Symlink { target, link } => {
                self.log(&format!(
                    "symlink old \"{}\" new \"{}\"",
                    files::show(target),
                    files::show(link)
                ));
                std::os::unix::fs::symlink(files::path(target), files::path(link)).map_err(st)?;
            }
            _ => return Err(Status::BAD_MESSAGE), // not a path request (dispatch)
        }
        // The changes answer with a plain status.
        reply::status(out, id, Status::OK, "");
        Ok(())
    }
}

/// The requests `-R` refuses (sftp-server's table of writing requests).
fn writes(req: &Request<'_>) -> bool {
    use sluice_proto::sftp::Extended as E;
    match req {
        Request::Open { pflags: f, .. } => opens_to_write(*f),
        Request::Write { .. }
        | Request::Setstat { .. }
        | Request::Fsetstat { .. }
        | Request::Remove { .. }
        | Request::Mkdir { .. }
        | Request::Rmdir { .. }
        | Request::Rename { .. }
        | Request::Symlink { .. } => true,
        Request::Extended(e) => {
            matches!(
                e,
                E::PosixRename { .. }
                    | E::Hardlink { .. }
                    | E::Fsync { .. }
                    | E::Lsetstat { .. }
                    | E::CopyData { .. }
                    | E::CloseRename { .. }
            ) || matches!(e, E::OpenAs { pflags: f, .. } if opens_to_write(*f))
        }
        _ => false,
    }
}

/// An OPEN (or open-as) with these pflags changes the file.
fn opens_to_write(f: u32) -> bool {
    f & (pflags::WRITE | pflags::APPEND | pflags::CREAT | pflags::TRUNC) != 0
}

//END
