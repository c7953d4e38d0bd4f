//! The sshd_config files as read at startup, handed to each connection's
//! processes so they parse the same text: sshd passes its configuration to
//! the sshd it re-executes per connection, so an edit takes effect at the
//! next start (or `sluiced -t` first), never half-way for new connections,
//! and a broken edit cannot stop them.
//!
//! Reading records every file and Include glob (recording, the default).
//! The listener and an inetd-mode monitor put the record in a sealed memfd
//! whose number goes in SLUICED_CONFIG_FD to their children; a process
//! started with it replays the record instead of reading the disk.

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The environment variable naming the snapshot's fd in a child.
pub const CONFIG_ENV: &str = "SLUICED_CONFIG_FD";
/// Largest snapshot read back (a configuration, not data).
const MAX_SNAPSHOT: u64 = 16 * 1024 * 1024;

#[derive(Default)]
struct State {
    /// Replaying a snapshot (no disk reads).
    replay: bool,
    /// Path -> contents; None: it could not be read (the error, replayed).
    files: BTreeMap<String, Result<String, ReadError>>,
    /// Include pattern -> the files it matched.
    globs: BTreeMap<String, Vec<String>>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);
/// The snapshot's memfd, once made or inherited (kept for children).
static FD: OnceLock<OwnedFd> = OnceLock::new();

fn with<T>(f: impl FnOnce(&mut State) -> T) -> T {
    let mut g = STATE.lock().unwrap_or_else(|p| p.into_inner());
    f(g.get_or_insert_with(State::default))
}

/// Why a configuration file could not be read (after `PATH: `).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// The system's reason, in OpenSSH's words (as recorded, when replayed).
    Io(String),
    /// Replaying: the listener did not read this file.
    NotRecorded {
        /// The file.
        path: String,
    },
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io(e) => f.write_str(e),
            ReadError::NotRecorded { path } => {
                write!(f, "{path}: not in the configuration the listener read")
            }
        }
    }
}

impl std::error::Error for ReadError {}

/// A configuration file's text.
pub(super) fn read_file(path: &Path) -> Result<String, ReadError> {
    let key = path.display().to_string();
    with(|s| {
        if s.replay {
            return s
                .files
                .get(&key)
                .cloned()
                .unwrap_or(Err(ReadError::NotRecorded { path: key }));
        }
        let r = std::fs::read_to_string(path)
            .map_err(|e| ReadError::Io(crate::io_error::describe_io_error(&e)));
        s.files.insert(key, r.clone());
        r
    })
}

/// What an Include pattern matches (`expand` reads the directory).
pub(super) fn glob(pattern: &Path, expand: impl FnOnce(&Path) -> Vec<PathBuf>) -> Vec<PathBuf> {
    let key = pattern.display().to_string();
    with(|s| {
        if s.replay {
            return s
                .globs
                .get(&key)
                .map(|v| v.iter().map(PathBuf::from).collect())
                .unwrap_or_default();
        }
        let v = expand(pattern);
        s.globs
            .insert(key, v.iter().map(|p| p.display().to_string()).collect());
        v
    })
}

/// Replays `files` (path, text) and Include `globs` (pattern, matches)
/// from memory, never the disk: for the fuzz target
/// (fuzz/fuzz_targets/sshd_config.rs), which must not read real files.
#[doc(hidden)]
pub fn replay_in_memory(files: &[(String, String)], globs: &[(String, Vec<String>)]) {
    with(|s| {
        *s = State {
            replay: true,
            files: files
                .iter()
                .map(|(p, t)| (p.clone(), Ok(t.clone())))
                .collect(),
            globs: globs.iter().cloned().collect(),
        }
    });
}

/// In a child: replays the snapshot SLUICED_CONFIG_FD names, if any. The
/// fd is kept (close-on-exec) for this process's own children.
pub fn load_from_env() -> Result<(), SnapshotError> {
    let Ok(v) = std::env::var(CONFIG_ENV) else {
        return Ok(());
    };
    std::env::remove_var(CONFIG_ENV);
    let fd: RawFd = v
        .parse()
        .ok()
        .filter(|fd| *fd > 2)
        .ok_or_else(|| SnapshotError::NotDescriptor { value: v.clone() })?;
    if !crate::sys::fd::is_open(fd) || crate::sys::fd::set_cloexec(fd).is_err() {
        return Err(SnapshotError::NotOpen { value: v });
    }
    // SAFETY: our parent passed this fd to us and nothing else owns it.
    let owned = high(unsafe { OwnedFd::from_raw_fd(fd) }).map_err(SnapshotError::Move)?;
    let bytes = read_all(&owned)?;
    let state = decode(&bytes).ok_or(SnapshotError::Malformed)?;
    with(|s| *s = state);
    let _ = FD.set(owned);
    Ok(())
}

/// The snapshot's fd for a child (made on first use from what was read),
/// close-on-exec: the caller clears that in the child it starts and sets
/// [`CONFIG_ENV`].
pub fn fd_for_children() -> Option<RawFd> {
    if let Some(fd) = FD.get() {
        return Some(fd.as_raw_fd());
    }
    let bytes = with(|s| encode(s));
    let fd = match make_memfd(&bytes) {
        Ok(fd) => fd,
        Err(e) => {
            crate::log!(Error, "configuration snapshot for children: {e}");
            return None;
        }
    };
    let _ = FD.set(fd);
    FD.get().map(|f| f.as_raw_fd())
}

fn make_memfd(bytes: &[u8]) -> std::io::Result<OwnedFd> {
    use rustix::fs::{MemfdFlags, SealFlags};
    let fd = rustix::fs::memfd_create(
        c"sluiced-config",
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )?;
    let mut f = std::fs::File::from(fd);
    std::io::Write::write_all(&mut f, bytes)?;
    let fd = OwnedFd::from(f);
    let seals = SealFlags::SEAL | SealFlags::SHRINK | SealFlags::GROW | SealFlags::WRITE;
    rustix::fs::fcntl_add_seals(&fd, seals)?;
    high(fd)
}

/// The fd moved to 10 or above (close-on-exec), clear of the low numbers a
/// child's descriptors are placed at (privsep's post-auth socket is 3).
fn high(fd: OwnedFd) -> std::io::Result<OwnedFd> {
    if fd.as_raw_fd() >= 10 {
        return Ok(fd);
    }
    // The old one closes on drop.
    Ok(rustix::io::fcntl_dupfd_cloexec(&fd, 10)?)
}

/// Why the snapshot SLUICED_CONFIG_FD names cannot be replayed.
#[derive(Debug)]
pub enum SnapshotError {
    /// The variable is not a descriptor number above 2.
    NotDescriptor {
        /// Its value.
        value: String,
    },
    /// The descriptor is not open.
    NotOpen {
        /// Its value.
        value: String,
    },
    /// The descriptor cannot be moved clear of the low numbers.
    Move(std::io::Error),
    /// fstat failed.
    Stat(std::io::Error),
    /// Larger than a configuration can be.
    TooLarge,
    /// The file ended early.
    ShortRead,
    /// It does not decode.
    Malformed,
}

impl std::fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SnapshotError::NotDescriptor { value } => {
                write!(f, "{CONFIG_ENV}={value}: not a descriptor")
            }
            SnapshotError::NotOpen { value } => write!(f, "{CONFIG_ENV}={value}: not open"),
            SnapshotError::Move(e) => write!(f, "{CONFIG_ENV}: {e}"),
            SnapshotError::Stat(e) => write!(f, "configuration snapshot: {e}"),
            SnapshotError::TooLarge => f.write_str("configuration snapshot too large"),
            SnapshotError::ShortRead => f.write_str("configuration snapshot: short read"),
            SnapshotError::Malformed => f.write_str("the configuration snapshot is malformed"),
        }
    }
}

impl std::error::Error for SnapshotError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SnapshotError::Move(e) | SnapshotError::Stat(e) => Some(e),
            _ => None,
        }
    }
}

/// Whether this process replays a snapshot (its parent read the files).
pub fn replaying() -> bool {
    with(|s| s.replay)
}

/// The whole file with pread (children share the file offset).
fn read_all(fd: &OwnedFd) -> Result<Vec<u8>, SnapshotError> {
    let st = rustix::fs::fstat(fd).map_err(|e| SnapshotError::Stat(e.into()))?;
    let len = u64::try_from(st.st_size).unwrap_or(0);
    if len > MAX_SNAPSHOT {
        return Err(SnapshotError::TooLarge);
    }
    let mut buf = vec![0u8; len as usize];
    let mut done = 0;
    while done < buf.len() {
        let rest = &mut buf[done..];
        match rustix::io::pread(fd, rest, done as u64) {
            Ok(n) if n > 0 => done += n,
            _ => return Err(SnapshotError::ShortRead),
        }
    }
    Ok(buf)
}

// Encoding: entries of a tag byte and length-prefixed (u32 big-endian)
// strings: b'F' path, b'+' text | b'-' error; b'G' pattern, count, paths.

fn put(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn encode(s: &State) -> Vec<u8> {
    let mut out = Vec::new();
    for (path, r) in &s.files {
        out.push(b'F');
        put(&mut out, path);
        match r {
            Ok(t) => {
                out.push(b'+');
                put(&mut out, t);
            }
            Err(e) => {
                out.push(b'-');
                put(&mut out, &e.to_string());
            }
        }
    }
    for (pattern, v) in &s.globs {
        out.push(b'G');
        put(&mut out, pattern);
        out.extend_from_slice(&(v.len() as u32).to_be_bytes());
        for p in v {
            put(&mut out, p);
        }
    }
    out
}

fn decode(mut b: &[u8]) -> Option<State> {
    fn u32_(b: &mut &[u8]) -> Option<usize> {
        let (h, t) = b.split_at_checked(4)?;
        *b = t;
        Some(u32::from_be_bytes(h.try_into().ok()?) as usize)
    }
    fn string(b: &mut &[u8]) -> Option<String> {
        let n = u32_(b)?;
        let (h, t) = b.split_at_checked(n)?;
        *b = t;
        String::from_utf8(h.to_vec()).ok()
    }
    fn byte(b: &mut &[u8]) -> Option<u8> {
        let (&h, t) = b.split_first()?;
        *b = t;
        Some(h)
    }
    let mut s = State {
        replay: true,
        ..State::default()
    };
    while !b.is_empty() {
        match byte(&mut b)? {
            b'F' => {
                let path = string(&mut b)?;
                let r = match byte(&mut b)? {
                    b'+' => Ok(string(&mut b)?),
                    b'-' => Err(ReadError::Io(string(&mut b)?)),
                    _ => return None,
                };
                s.files.insert(path, r);
            }
            b'G' => {
                let pattern = string(&mut b)?;
                let n = u32_(&mut b)?;
                let mut v = Vec::new();
                for _ in 0..n {
                    v.push(string(&mut b)?);
                }
                s.globs.insert(pattern, v);
            }
            _ => return None,
        }
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_round_trip_and_strict_decoding() {
        let mut s = State::default();
        s.files
            .insert("/etc/ssh/sshd_config".into(), Ok("Port 22\n".into()));
        s.files.insert(
            "/etc/ssh/gone".into(),
            Err(ReadError::Io("No such file".into())),
        );
        s.globs.insert(
            "/etc/ssh/sshd_config.d/*.conf".into(),
            vec!["/etc/ssh/sshd_config.d/a.conf".into()],
        );
        let b = encode(&s);
        let d = decode(&b).unwrap();
        assert!(d.replay);
        assert_eq!(d.files, s.files);
        assert_eq!(d.globs, s.globs);
        for cut in 0..b.len() {
            // Every truncation is refused or a shorter valid prefix; no panic.
            let _ = decode(&b[..cut]);
        }
        assert!(decode(b"X").is_none());
    }
}
