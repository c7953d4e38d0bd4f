//! Reading a file the user controls (AuthorizedKeysFile) with the user's
//! credentials, bounded in time and size, as sshd's auth_openfile and
//! secure_filename do: the user's uid and groups decide what can be opened,
//! only a regular file is read, StrictModes is checked on what was opened.
//!
//! Why a thread and not a forked child: the connection process has threads
//! (PAM's, the crypto workers), so a forked child could make only
//! async-signal-safe calls (no allocation, no path canonicalisation). On
//! Linux, credentials belong to each thread: the raw setgroups, setresgid
//! and setresuid system calls (not glibc's wrappers, which change every
//! thread of the process) change only the calling thread. A short-lived
//! thread drops to the user for good, opens, checks and reads, sends the
//! bytes back over a channel and ends; its credentials end with it. The
//! caller waits at most [`READ_TIMEOUT`]; a thread stuck on a hung file
//! system is left behind, the login attempt is refused and LoginGraceTime
//! still ends the connection.
//!
//! One process-wide effect remains: changing a thread's effective uid
//! clears the process's dumpable flag (as sshd sets it anyway), so its
//! /proc files belong to root from then on.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// The most of an authorized_keys file read: 4 MiB. An RSA-4096 line with
/// a forced command and a few options is under 1 KiB, so this holds
/// thousands of keys (sites with more use AuthorizedKeysCommand); a larger
/// file is refused after one fstat, and a file that grows while read costs
/// at most this many bytes (plus one, to notice).
pub const MAX_SIZE: u64 = 4 << 20;

/// How long opening and reading may take: reading 4 MiB from a page cache
/// takes milliseconds, from a slow network home directory well under a
/// second; past this the file system is hung and the key is refused.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Whose credentials open the file.
#[derive(Debug, Clone)]
pub struct Reader {
    /// The user's login name (for log lines).
    pub name: String,
    /// User id.
    pub uid: u32,
    /// Primary group.
    pub gid: u32,
    /// Supplementary groups (getgrouplist), the primary group included.
    pub groups: Vec<u32>,
    /// Home directory: StrictModes checks the directories up to it.
    pub home: PathBuf,
}

/// Why a file was not read, with sshd's log line as its Display.
#[derive(Debug)]
pub enum Refused {
    /// The file does not exist (sshd logs this at debug level only).
    Missing(PathBuf),
    /// open(2) failed as the user (e.g. a symlink to a root-only file).
    Open(PathBuf, std::io::Error),
    /// Not a regular file: a FIFO, a device, a directory.
    NotRegular(PathBuf),
    /// StrictModes: "bad ownership or modes for file|directory PATH".
    Modes(Insecure),
    /// Larger than [`MAX_SIZE`].
    TooLarge(PathBuf),
    /// Reading failed after the open.
    Read(PathBuf, std::io::Error),
    /// The user's credentials could not be taken on.
    Credentials(Credentials),
    /// Opening and reading took longer than [`READ_TIMEOUT`].
    TimedOut(PathBuf),
}

/// Why StrictModes refuses a file (sshd's secure_filename); `Display` gives
/// sshd's words.
#[derive(Debug)]
pub enum Insecure {
    /// The opened file's path cannot be resolved.
    Realpath(PathBuf, std::io::Error),
    /// The file is owned by another user, or writable by group or others.
    File(PathBuf),
    /// So is a directory on its way up to the home directory.
    Directory(PathBuf),
}

impl std::fmt::Display for Insecure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Insecure::Realpath(p, e) => write!(f, "realpath {}: {e}", p.display()),
            Insecure::File(p) => write!(f, "bad ownership or modes for file {}", p.display()),
            Insecure::Directory(p) => {
                write!(f, "bad ownership or modes for directory {}", p.display())
            }
        }
    }
}

impl std::error::Error for Insecure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Insecure::Realpath(_, e) => Some(e),
            _ => None,
        }
    }
}

/// Why the reading thread could not become the user.
#[derive(Debug)]
pub enum Credentials {
    /// The thread could not be started.
    Thread(std::io::Error),
    /// The thread ended without an answer.
    ThreadEnded,
    /// setgroups, setresgid or setresuid failed.
    Syscall(&'static str, std::io::Error),
    /// After dropping to the user, root could still be regained.
    RootRegainable,
}

impl std::fmt::Display for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Thread(e) => write!(f, "cannot start a thread: {e}"),
            Credentials::ThreadEnded => f.write_str("the reading thread ended"),
            Credentials::Syscall(call, e) => write!(f, "{call}: {e}"),
            Credentials::RootRegainable => f.write_str("root could be regained"),
        }
    }
}

impl std::error::Error for Credentials {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Credentials::Thread(e) | Credentials::Syscall(_, e) => Some(e),
            _ => None,
        }
    }
}

impl Refused {
    /// Whether sshd would log this at INFO (a missing file is only debug).
    pub fn is_notable(&self) -> bool {
        !matches!(self, Refused::Missing(_))
    }

    /// sshd's wording, for the user `user` and a file of `kind`
    /// ("authorized keys").
    pub fn message(&self, user: &str, kind: &str) -> String {
        match self {
            Refused::Missing(p) => {
                format!(
                    "Could not open user '{user}' {kind} '{}': No such file or directory",
                    p.display()
                )
            }
            Refused::Open(p, e) => format!(
                "Could not open user '{user}' {kind} '{}': {}",
                p.display(),
                crate::io_error::describe_io_error(e)
            ),
            Refused::NotRegular(p) => {
                format!("User {user} {kind} {} is not a regular file", p.display())
            }
            Refused::Modes(why) => format!("Authentication refused: {why}"),
            Refused::TooLarge(p) => format!(
                "Authentication refused: {kind} {} is larger than {MAX_SIZE} bytes",
                p.display()
            ),
            Refused::Read(p, e) => format!("Could not read {kind} {}: {e}", p.display()),
            Refused::Credentials(e) => {
                format!("Authentication refused: cannot read {kind} as {user}: {e}")
            }
            Refused::TimedOut(p) => format!(
                "Authentication refused: reading {kind} {} took longer than {} s",
                p.display(),
                READ_TIMEOUT.as_secs()
            ),
        }
    }
}

/// Reads `path` as `who` (see the module doc); `strict_modes` applies
/// sshd's StrictModes checks to the opened file and its directories.
pub fn read_as_user(path: &Path, who: &Reader, strict_modes: bool) -> Result<Vec<u8>, Refused> {
    let (tx, rx) = mpsc::sync_channel(1);
    let (p, w) = (path.to_owned(), who.clone());
    let spawned = std::thread::Builder::new()
        .name("user-file".into())
        .spawn(move || {
            let r = take_credentials(&w).and_then(|()| open_and_read(&p, &w, strict_modes));
            let _ = tx.send(r);
        });
    if let Err(e) = spawned {
        return Err(Refused::Credentials(Credentials::Thread(e)));
    }
    match rx.recv_timeout(READ_TIMEOUT) {
        Ok(r) => r,
        Err(mpsc::RecvTimeoutError::Timeout) => Err(Refused::TimedOut(path.to_owned())),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            Err(Refused::Credentials(Credentials::ThreadEnded))
        }
    }
}

/// On this thread only: the user's groups, gid and uid, for good. Nothing
/// changes when we are not root (we can only read as ourselves) or when
/// the user is root.
fn take_credentials(who: &Reader) -> Result<(), Refused> {
    if !rustix::process::geteuid().is_root() || who.uid == 0 {
        return Ok(());
    }
    use rustix::thread::{set_thread_groups, set_thread_res_gid, set_thread_res_uid};
    use rustix::thread::{Gid, Uid};
    let err = |what: &'static str| {
        move |e: rustix::io::Errno| Refused::Credentials(Credentials::Syscall(what, e.into()))
    };
    let groups: Vec<Gid> = who.groups.iter().map(|&g| Gid::from_raw(g)).collect();
    let (uid, gid) = (Uid::from_raw(who.uid), Gid::from_raw(who.gid));
    // rustix's set_thread_* are the raw system calls, on this thread's
    // credentials only, which is what is wanted here. Order as sshd:
    // groups, gid, then uid (after which nothing else could be changed).
    set_thread_groups(&groups).map_err(err("setgroups"))?;
    set_thread_res_gid(gid, gid, gid).map_err(err("setresgid"))?;
    set_thread_res_uid(uid, uid, uid).map_err(err("setresuid"))?;
    // All three uids are the user's and the thread's capabilities went
    // with them: root must be out of reach.
    if set_thread_res_uid(Uid::ROOT, Uid::ROOT, Uid::ROOT).is_ok()
        || rustix::process::geteuid() != uid
    {
        return Err(Refused::Credentials(Credentials::RootRegainable));
    }
    Ok(())
}

/// sshd's auth_openfile: open without blocking (a FIFO must not hang us),
/// fstat what was opened, require a regular file, StrictModes, then a
/// bounded read.
fn open_and_read(path: &Path, who: &Reader, strict_modes: bool) -> Result<Vec<u8>, Refused> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32)
        .open(path) // std adds O_CLOEXEC
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Refused::Missing(path.to_owned()),
            _ => Refused::Open(path.to_owned(), e),
        })?;
    let meta = file
        .metadata()
        .map_err(|e| Refused::Read(path.to_owned(), e))?;
    if !meta.file_type().is_file() {
        return Err(Refused::NotRegular(path.to_owned()));
    }
    if strict_modes {
        secure_path(path, &meta, who).map_err(Refused::Modes)?;
    }
    if meta.size() > MAX_SIZE {
        return Err(Refused::TooLarge(path.to_owned()));
    }
    read_bounded(file, path)
}

fn read_bounded(file: File, path: &Path) -> Result<Vec<u8>, Refused> {
    let mut buf = Vec::new();
    file.take(MAX_SIZE + 1)
        .read_to_end(&mut buf)
        .map_err(|e| Refused::Read(path.to_owned(), e))?;
    if buf.len() as u64 > MAX_SIZE {
        return Err(Refused::TooLarge(path.to_owned()));
    }
    Ok(buf)
}

/// Owned by the user or root, and writable by neither group nor others.
fn safe_owner_and_mode(meta: &std::fs::Metadata, uid: u32) -> bool {
    (meta.uid() == 0 || meta.uid() == uid) && meta.mode() & 0o022 == 0
}

/// sshd's secure_filename on the opened file's metadata: the file, then
/// each directory of its canonical path upwards, stopping after the home
/// directory (or at `/`). Runs as the user, so path resolution sees what
/// the user sees.
pub fn secure_path(path: &Path, opened: &std::fs::Metadata, who: &Reader) -> Result<(), Insecure> {
    let real = std::fs::canonicalize(path).map_err(|e| Insecure::Realpath(path.to_owned(), e))?;
    if !safe_owner_and_mode(opened, who.uid) {
        return Err(Insecure::File(real));
    }
    let home = std::fs::canonicalize(&who.home).ok();
    let mut dir = real.parent();
    while let Some(d) = dir {
        let ok = std::fs::metadata(d).is_ok_and(|m| safe_owner_and_mode(&m, who.uid));
        if !ok {
            return Err(Insecure::Directory(d.to_owned()));
        }
        if home.as_deref() == Some(d) {
            break;
        }
        dir = d.parent();
    }
    Ok(())
}
