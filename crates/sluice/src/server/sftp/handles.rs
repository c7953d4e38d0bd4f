//! The SFTP session's state on the worker thread: who it serves
//! ([`Worker`]) and the table of open handles ([`Server`]) with what the
//! answers share on it (serve.rs's requests, ext.rs's extensions).

use super::files::{self, Handle, Names, OpenFile};
use super::Options;
use crate::log::Level;
use sluice_proto::sftp::{is_open_as_handle, pflags, Attrs, Status, OPEN_AS_SPACE};
use std::collections::HashMap;

/// Most handles open at once (and never more than the fd limit allows):
/// past it OPEN and OPENDIR fail with SSH_FX_FAILURE and the session goes on.
const MAX_HANDLES: usize = 4096;

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
    pub fn new(
        opts: Options,
        user: &str,
        home: &str,
        who: String,
    ) -> Result<Worker, super::StartError> {
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

/// The session's state on the worker thread.
pub(super) struct Server {
    pub(super) w: Worker,
    pub(super) handles: HashMap<u32, Handle>,
    pub(super) next_handle: u32,
    pub(super) max_handles: usize,
    pub(super) init: bool,
    pub(super) names: Names,
}

/// [`MAX_HANDLES`], or fewer when RLIMIT_NOFILE leaves less room (64 fds
/// kept for the connection itself).
fn handle_limit() -> usize {
    let r = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    // None is RLIM_INFINITY.
    (r.current.unwrap_or(u64::MAX) as usize)
        .saturating_sub(64)
        .clamp(16, MAX_HANDLES)
}

impl Server {
    /// The state for `w`: no handle open, INIT not yet seen.
    pub(super) fn new(w: Worker) -> Server {
        Server {
            max_handles: handle_limit(),
            w,
            handles: HashMap::new(),
            next_handle: 1,
            init: false,
            names: Names::default(),
        }
    }

    /// The thread's own cwd and umask, then the start directory (as sshd
    /// and sftp-server: a directory that cannot be entered leaves "/").
    pub(super) fn enter(&mut self) {
        if let Err(e) = crate::sys::fs::unshare_fs() {
            crate::log!(
                Error,
                "sftp: unshare(CLONE_FS): {}; -u and -d apply to the whole process",
                e
            );
        }
        if let Some(m) = self.w.opts.umask {
            rustix::process::umask(rustix::fs::Mode::from_raw_mode(m as _));
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
    pub(super) fn new_handle(&mut self, h: Handle) -> Option<[u8; 4]> {
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

    pub(super) fn too_many(&self) -> Status {
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

pub(super) fn handle_in<'a>(map: &'a mut HashMap<u32, Handle>, h: &[u8]) -> Option<&'a mut Handle> {
    let id = u32::from_be_bytes(*h.first_chunk::<4>().filter(|_| h.len() == 4)?);
    map.get_mut(&id)
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
