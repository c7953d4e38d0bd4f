//! The SFTP worker thread: takes requests off the queue one at a time,
//! answers each (files.rs, ext.rs) and queues the reply, so replies leave
//! in request order (stock clients refuse to resume a transfer otherwise)
//! and the pump's thread never waits on the disk.
//!
//! The thread has its own working directory and umask (`unshare(CLONE_FS)`):
//! relative paths start at the start directory, and `-u` applies to what
//! SFTP creates without touching commands the connection runs.

use super::endpoint::{Queues, Shared, REPLY_QUEUE_BYTES};
use super::files::{self, Names};
use super::{ext, Options};
use crate::log::Level;
use sluice_proto::sftp::{
    is_open_as_handle, pflags, reply, Attrs, DecodeError, Request, Status, EXTENSIONS,
    MAX_READ_WRITE, OPEN_AS_SPACE,
};
use std::collections::HashMap;
use std::fs::{File, ReadDir};
use std::os::unix::fs::FileExt;

/// Most handles open at once (and never more than the fd limit allows):
/// past it OPEN and OPENDIR fail with SSH_FX_FAILURE and the session goes on.
const MAX_HANDLES: usize = 4096;

/// Directory entries per NAME reply (sftp-server's 100).
const READDIR_BATCH: usize = 100;

/// Who the server runs for and how (built by the session before the thread starts).
pub struct Worker {
    pub(super) opts: Options,
    pub(super) user: String,
    pub(super) home: String,
    /// Where relative paths start: `-d`, else the home directory, else "/".
    pub(super) start_dir: String,
    /// For log lines: "user X from A port P".
    pub(super) who: String,
}

impl Worker {
    /// The server for `user` (home `home`) with `opts`; `-d`'s tokens are
    /// expanded here, so a bad token fails the request.
    pub fn new(opts: Options, user: &str, home: &str, who: String) -> Result<Worker, String> {
        let start_dir = opts
            .start_dir_for(user, home)?
            .unwrap_or_else(|| home.to_owned());
        Ok(Worker {
            opts,
            user: user.to_owned(),
            home: home.to_owned(),
            start_dir,
            who,
        })
    }
}

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

/// The session's state on the worker thread.
pub(super) struct Server {
    pub(super) w: Worker,
    handles: HashMap<u32, Handle>,
    next_handle: u32,
    max_handles: usize,
    init: bool,
    pub(super) names: Names,
}

/// The worker's loop; ends when the input ends or the channel goes.
pub(super) fn run(w: Worker, shared: &Shared) {
    let mut s = Server {
        max_handles: handle_limit(),
        w,
        handles: HashMap::new(),
        next_handle: 1,
        init: false,
        names: Names::default(),
    };
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

/// [`MAX_HANDLES`], or fewer when RLIMIT_NOFILE leaves less room (64 fds
/// kept for the connection itself).
fn handle_limit() -> usize {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return 256;
    }
    (r.rlim_cur as usize)
        .saturating_sub(64)
        .clamp(16, MAX_HANDLES)
}

impl Server {
    /// The thread's own cwd and umask, then the start directory (as sshd
    /// and sftp-server: a directory that cannot be entered leaves "/").
    fn enter(&mut self) {
        // SAFETY: unshare(CLONE_FS) affects only this thread's fs state.
        if unsafe { libc::unshare(libc::CLONE_FS) } != 0 {
            crate::log!(
                Error,
                "sftp: unshare(CLONE_FS): {}; -u and -d apply to the whole process",
                std::io::Error::last_os_error()
            );
        }
        if let Some(m) = self.w.opts.umask {
            // SAFETY: umask cannot fail.
            unsafe { libc::umask(m as libc::mode_t) };
        }
        let dir = self.w.start_dir.clone();
        if let Err(e) = std::env::set_current_dir(&dir) {
            crate::log!(
                Error,
                "sftp: could not chdir to start directory \"{dir}\": {e}; starting in /"
            );
            let _ = std::env::set_current_dir("/");
        }
        self.log(&format!("session opened for local {}", self.w.who));
    }

    /// A per-request log line at INFO, shown when `-l` asks for INFO or more.
    pub(super) fn log(&self, line: &str) {
        if self.w.opts.log_level >= Level::Info {
            crate::log!(Info, "sftp: {line}");
        }
    }

    /// CLOSE: the handle goes (a file's descriptor is closed); what it was.
    pub(super) fn close(&mut self, handle: &[u8]) -> Result<Handle, Status> {
        let hid = u32::from_be_bytes(
            *handle
                .first_chunk::<4>()
                .filter(|_| handle.len() == 4)
                .ok_or(Status::FAILURE)?,
        );
        let h = self.handles.remove(&hid).ok_or(Status::FAILURE)?;
        match &h {
            Handle::File(f) => self.log(&format!(
                "close \"{}\" bytes read {} written {}",
                files::show(&f.path),
                f.read,
                f.written
            )),
            Handle::Dir(d) => self.log(&format!("closedir \"{}\"", files::show(&d.path))),
        }
        Ok(h)
    }

    /// OPEN's work: the file `path` opened with `fl` (creating it with
    /// `attrs`), logged as sftp-server does.
    pub(super) fn open_file(
        &mut self,
        path: &[u8],
        fl: u32,
        attrs: &Attrs,
    ) -> Result<Handle, Status> {
        let file = files::open(path, fl, attrs).map_err(|e| files::status_of(&e))?;
        self.log(&format!(
            "open \"{}\" flags {} mode 0{:o}",
            files::show(path),
            flag_names(fl),
            attrs.permissions.unwrap_or(0o666) & 0o7777
        ));
        if fl & pflags::WRITE == 0 {
            files::advise_sequential(&file);
        }
        Ok(Handle::File(OpenFile {
            file,
            path: path.to_vec(),
            read: 0,
            written: 0,
            failed: false,
        }))
    }

    /// The handle the client names for an open-as@sluice.dev, checked
    /// before anything is opened: one of the client's space
    /// ([`is_open_as_handle`]), not in use, and within the handle limit.
    pub(super) fn client_handle(&self, name: &[u8]) -> Result<u32, Status> {
        let id = match name.first_chunk::<4>() {
            Some(b) if is_open_as_handle(name) => u32::from_be_bytes(*b),
            _ => return Err(Status::BAD_MESSAGE),
        };
        if self.handles.len() >= self.max_handles {
            return Err(self.too_many());
        }
        if self.handles.contains_key(&id) {
            crate::log!(Debug1, "sftp: open-as: handle {id:#x} is in use");
            return Err(Status::FAILURE);
        }
        Ok(id)
    }

    /// Keeps `h` under `id` from [`Server::client_handle`].
    pub(super) fn insert_handle(&mut self, id: u32, h: Handle) {
        self.handles.insert(id, h);
    }

    /// A handle for `h`, or None when the table is full. Ours never have
    /// the top bit set: those are the client's to name (open-as).
    fn new_handle(&mut self, h: Handle) -> Option<[u8; 4]> {
        if self.handles.len() >= self.max_handles {
            return None;
        }
        loop {
            let id = self.next_handle;
            self.next_handle = self.next_handle.wrapping_add(1);
            if id == 0 || id & (u32::from(OPEN_AS_SPACE) << 24) != 0 {
                self.next_handle = 1;
                continue;
            }
            if let std::collections::hash_map::Entry::Vacant(e) = self.handles.entry(id) {
                e.insert(h);
                return Some(id.to_be_bytes());
            }
        }
    }

    pub(super) fn handle_mut(&mut self, h: &[u8]) -> Option<&mut Handle> {
        let id = u32::from_be_bytes(*h.first_chunk::<4>().filter(|_| h.len() == 4)?);
        self.handles.get_mut(&id)
    }

    pub(super) fn file(&mut self, h: &[u8]) -> Option<&mut OpenFile> {
        match self.handle_mut(h)? {
            Handle::File(f) => Some(f),
            Handle::Dir(_) => None,
        }
    }

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
            } => {
                let f = self.file(handle).ok_or(Status::FAILURE)?;
                let len = len.min(MAX_READ_WRITE) as usize;
                let at = reply::data_begin(out, id);
                out.resize(at + 13 + len, 0);
                let n = files::read_at(&f.file, out.get_mut(at + 13..).unwrap_or_default(), offset)
                    .map_err(st);
                match n {
                    Ok(0) if len > 0 => {
                        out.truncate(at);
                        return Err(Status::EOF);
                    }
                    Ok(n) => {
                        f.read += n as u64;
                        out.truncate(at + 13 + n);
                        reply::data_end(out, at);
                    }
                    Err(e) => {
                        out.truncate(at);
                        return Err(e);
                    }
                }
            }
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
            Request::Lstat { path } => {
                let m = std::fs::symlink_metadata(files::path(path)).map_err(st)?;
                reply::attrs(out, id, &files::attrs_of(&m));
            }
            Request::Stat { path } => {
                let m = std::fs::metadata(files::path(path)).map_err(st)?;
                reply::attrs(out, id, &files::attrs_of(&m));
            }
            Request::Fstat { handle } => {
                let f = self.file(handle).ok_or(Status::FAILURE)?;
                let m = f.file.metadata().map_err(st)?;
                reply::attrs(out, id, &files::attrs_of(&m));
            }
            Request::Setstat { path, attrs } => {
                self.log(&format!("set \"{}\" attributes", files::show(path)));
                files::set_attrs(path, &attrs, true).map_err(st)?;
                reply::status(out, id, Status::OK, "");
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
            Request::Remove { path } => {
                self.log(&format!("remove name \"{}\"", files::show(path)));
                std::fs::remove_file(files::path(path)).map_err(st)?;
                reply::status(out, id, Status::OK, "");
            }
            Request::Mkdir { path, attrs } => {
                self.log(&format!("mkdir name \"{}\"", files::show(path)));
                files::mkdir(path, &attrs).map_err(st)?;
                reply::status(out, id, Status::OK, "");
            }
            Request::Rmdir { path } => {
                self.log(&format!("rmdir name \"{}\"", files::show(path)));
                std::fs::remove_dir(files::path(path)).map_err(st)?;
                reply::status(out, id, Status::OK, "");
            }
            Request::Realpath { path } => {
                let p = files::realpath(path).map_err(st)?;
                files::one_name(out, id, p);
            }
            Request::Rename { from, to } => {
                self.log(&format!(
                    "rename old \"{}\" new \"{}\"",
                    files::show(from),
                    files::show(to)
                ));
                files::rename_noreplace(from, to).map_err(st)?;
                reply::status(out, id, Status::OK, "");
            }
            Request::Readlink { path } => {
                let t = std::fs::read_link(files::path(path)).map_err(st)?;
                files::one_name(out, id, files::bytes_of(&t));
            }
            Request::Symlink { target, link } => {
                self.log(&format!(
                    "symlink old \"{}\" new \"{}\"",
                    files::show(target),
                    files::show(link)
                ));
                std::os::unix::fs::symlink(files::path(target), files::path(link)).map_err(st)?;
                reply::status(out, id, Status::OK, "");
            }
            Request::Extended(e) => ext::answer(self, id, e, out)?,
            Request::UnknownExtended { name } => {
                crate::log!(
                    Debug1,
                    "sftp: unsupported extended request \"{}\"",
                    files::show(name)
                );
                return Err(Status::OP_UNSUPPORTED);
            }
            Request::Unknown { kind } => {
                crate::log!(Debug1, "sftp: unknown request type {kind}");
                return Err(Status::OP_UNSUPPORTED);
            }
            Request::Init { .. } => return Err(Status::BAD_MESSAGE),
        }
        Ok(())
    }

    fn too_many(&self) -> Status {
        crate::log!(
            Info,
            "sftp: {} handles open, the most allowed; refusing another",
            self.max_handles
        );
        Status::FAILURE
    }

    /// The handle limit, for limits@openssh.com.
    pub(super) fn max_handles(&self) -> usize {
        self.max_handles
    }
}

fn handle_in<'a>(map: &'a mut HashMap<u32, Handle>, h: &[u8]) -> Option<&'a mut Handle> {
    let id = u32::from_be_bytes(*h.first_chunk::<4>().filter(|_| h.len() == 4)?);
    map.get_mut(&id)
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

/// pflags for log lines, as sftp-server names them.
fn flag_names(f: u32) -> String {
    let names = [
        (pflags::READ, "READ"),
        (pflags::WRITE, "WRITE"),
        (pflags::APPEND, "APPEND"),
        (pflags::CREAT, "CREATE"),
        (pflags::TRUNC, "TRUNCATE"),
        (pflags::EXCL, "EXCL"),
    ];
    let v: Vec<&str> = names
        .iter()
        .filter(|(b, _)| f & b != 0)
        .map(|(_, n)| *n)
        .collect();
    v.join(",")
}
