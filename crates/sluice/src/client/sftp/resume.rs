//! The record of a copy's completed ranges, for a resume. Every copy
//! writes to a fixed partial name beside the target, `.NAME.sluice-part`
//! (partial/), and adds what is complete to a small record: a copy over
//! several connections (parallel/) each range as it is acknowledged, one
//! stream its pieces every few MiB (partial::Checkpoint). A run that is
//! killed can be taken up again with `-a`/`reget`/`reput`: only the ranges
//! not in the record are copied again.
//!
//! Where the record lives: for a download beside the partial file
//! (`.NAME.sluice-ranges`); for an upload on this machine, under
//! `$XDG_STATE_HOME/sluice/resume/` (default `~/.local/state`), named by
//! a hash of what it is for. Either way the record names what it is for
//! (a hash of host, port, user, both paths, and the source's size and
//! mtime), so a changed source or another copy's record starts over.
//! The record is only a hint: [`checked`] checks each range against
//! sluiced's sha256-range@sluice.dev before it is skipped, and trusts it on
//! a stock server only because size and mtime matched. It is never read or
//! written through a symbolic link.

use super::errors::{show, TransferResult};
use super::partial::hash::same_range;
use super::session::Sftp;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

const MAGIC: &str = "sluice-ranges 1";
/// A record longer than this is not ours.
const MAX_RECORD: u64 = 1 << 20;

/// `.NAME.sluice-part` beside `target`.
pub fn part_beside(target: &[u8]) -> Vec<u8> {
    beside(target, ".sluice-part")
}

fn beside(target: &[u8], suffix: &str) -> Vec<u8> {
    let (dir, base) = match target.iter().rposition(|b| *b == b'/') {
        Some(i) => (
            target.get(..=i).unwrap_or_default(),
            target.get(i + 1..).unwrap_or_default(),
        ),
        None => (&b""[..], target),
    };
    let mut t = dir.to_vec();
    t.push(b'.');
    t.extend_from_slice(base);
    t.extend_from_slice(suffix.as_bytes());
    t
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// SHA-256 of the parts, each length-prefixed so no two lists collide.
fn key_of(parts: &[&[u8]]) -> String {
    let mut ctx = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
    for p in parts {
        ctx.update(&(p.len() as u64).to_be_bytes());
        ctx.update(p);
    }
    hex(ctx.finish().as_ref())
}

/// The completed ranges of one copy, kept on disk as they complete.
pub struct Record {
    path: PathBuf,
    key: String,
    size: u64,
    /// Kept under the state directory (made with the first record).
    upload: bool,
    done: Mutex<Vec<(u64, u64)>>,
}

impl Record {
    /// The record of downloading `remote` (`size` bytes, modified at
    /// `mtime`) from `place` to `local`.
    pub fn for_download(place: &str, remote: &[u8], local: &Path, size: u64, mtime: u64) -> Record {
        let l = local.as_os_str().as_bytes();
        let key = key_of(&[
            b"down",
            place.as_bytes(),
            remote,
            l,
            &size.to_be_bytes(),
            &mtime.to_be_bytes(),
        ]);
        let path = PathBuf::from(std::ffi::OsStr::from_bytes(&beside(l, ".sluice-ranges")));
        Record::at(path, key, size, false)
    }

    /// The record of uploading `local` (`size` bytes, modified at `mtime`
    /// in ns) to `remote` at `place`; None without a state directory.
    pub fn for_upload(
        place: &str,
        local: &Path,
        remote: &[u8],
        size: u64,
        mtime: u64,
    ) -> Option<Record> {
        let abs = std::fs::canonicalize(local).unwrap_or_else(|_| local.to_path_buf());
        let key = key_of(&[
            b"up",
            place.as_bytes(),
            remote,
            abs.as_os_str().as_bytes(),
            &size.to_be_bytes(),
            &mtime.to_be_bytes(),
        ]);
        let dir = state_dir()?;
        let name: String = key.chars().take(32).collect();
        Some(Record::at(dir.join(name), key, size, true))
    }

    fn at(path: PathBuf, key: String, size: u64, upload: bool) -> Record {
        Record {
            path,
            key,
            size,
            upload,
            done: Mutex::new(Vec::new()),
        }
    }

    /// Where it is kept (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The completed ranges the record on disk lists, when it is ours and
    /// well formed; anything else is ignored with a -v line.
    pub fn load(&self) -> Vec<(u64, u64)> {
        let text = match std::fs::symlink_metadata(&self.path) {
            Ok(m) if m.is_file() && m.len() <= MAX_RECORD => read_nofollow(&self.path),
            Ok(_) => Err(RecordError::NotSmallFile),
            Err(_) => return Vec::new(),
        };
        match text.and_then(|t| self.parse(&t)) {
            Ok(v) => v,
            Err(why) => {
                crate::log!(
                    Debug1,
                    "resume: ignoring the record {}: {why}",
                    self.path.display()
                );
                Vec::new()
            }
        }
    }

    fn parse(&self, text: &str) -> Result<Vec<(u64, u64)>, RecordError> {
        let mut lines = text.lines();
        if lines.next() != Some(MAGIC) {
            return Err(RecordError::NotRecord);
        }
        if lines.next() != Some(format!("for {}", self.key).as_str()) {
            return Err(RecordError::OtherCopy);
        }
        if lines.next() != Some(format!("size {}", self.size).as_str()) {
            return Err(RecordError::SizeDiffers);
        }
        let mut v = Vec::new();
        for l in lines {
            let mut w = l.split(' ');
            let (Some("done"), Some(a), Some(b), None) = (w.next(), w.next(), w.next(), w.next())
            else {
                return Err(RecordError::BadLine(l.to_owned()));
            };
            let (Ok(a), Ok(b)) = (a.parse::<u64>(), b.parse::<u64>()) else {
                return Err(RecordError::BadLine(l.to_owned()));
            };
            if a >= b || b > self.size {
                return Err(RecordError::Outside(a, b));
            }
            v.push((a, b));
        }
        v.sort_unstable();
        v.dedup();
        Ok(v)
    }

    /// Starts the record afresh with `done` (those already verified).
    pub fn reset(&self, done: &[(u64, u64)]) {
        let mut d = self.done.lock().unwrap_or_else(|e| e.into_inner());
        *d = done.to_vec();
        d.sort_unstable();
        self.save(&d);
    }

    /// `[start, end)` is complete.
    pub fn add(&self, start: u64, end: u64) {
        let mut d = self.done.lock().unwrap_or_else(|e| e.into_inner());
        // Kept one by one (not joined), so a range found corrupt later
        // costs only itself.
        d.push((start, end));
        d.sort_unstable();
        d.dedup();
        self.save(&d);
    }

    /// The copy is whole (or starts over): the record goes (unlink
    /// removes a link itself, never what it points to).
    pub fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
        // And what a kill in the middle of a save left.
        let _ = std::fs::remove_file(self.temp_path());
    }

    fn temp_path(&self) -> PathBuf {
        let mut tmp = self.path.clone().into_os_string();
        tmp.push(".new");
        PathBuf::from(tmp)
    }

    /// Written to a temporary name and renamed, so a kill mid-write leaves
    /// the old record or the new one, never half of one. A record that
    /// cannot be written only costs a resume: a -v line.
    fn save(&self, done: &[(u64, u64)]) {
        let mut text = format!("{MAGIC}\nfor {}\nsize {}\n", self.key, self.size);
        for (a, b) in done {
            text.push_str(&format!("done {a} {b}\n"));
        }
        let tmp = self.temp_path();
        // The state directory is made with the first record (0700).
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.exists() && self.upload {
                let _ = std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir);
            }
        }
        let r = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&tmp)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .and_then(|()| std::fs::rename(&tmp, &self.path));
        if let Err(e) = r {
            crate::log!(
                Debug1,
                "resume: cannot write the record {}: {e}",
                self.path.display()
            );
        }
    }
}

/// The ranges of `done` whose bytes in `local` and in `remote` agree by
/// the server's sha256-range@sluice.dev; all of them when the server
/// cannot hash (a stock sshd: the record matched the source's size and
/// mtime, which is all there is to go by).
pub fn checked(
    s: &mut Sftp,
    remote: &[u8],
    local: &File,
    done: Vec<(u64, u64)>,
) -> TransferResult<Vec<(u64, u64)>> {
    if !s.has("sha256-range@sluice.dev", "1") {
        crate::log!(
            Debug1,
            "resume: the server cannot hash ranges: trusting the record of {} range(s) (size and mtime match)",
            done.len()
        );
        return Ok(done);
    }
    let mut kept = Vec::with_capacity(done.len());
    for (a, b) in done {
        match same_range(s, remote, local, a, b - a)? {
            Some(false) => crate::log!(
                Debug1,
                "resume: bytes {a}-{b} differ from \"{}\" on the server: copying them again",
                show(remote)
            ),
            _ => kept.push((a, b)),
        }
    }
    crate::log!(
        Debug1,
        "resume: {} completed range(s) checked by the server's hash",
        kept.len()
    );
    Ok(kept)
}

/// Sorted, with touching and overlapping ranges joined.
pub fn merge(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// What of `[0, size)` is not in `done`, cut into pieces of at most
/// `step` bytes.
pub fn missing(size: u64, done: &[(u64, u64)], step: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut cut = |mut a: u64, b: u64| {
        while a < b {
            let e = b.min(a.saturating_add(step.max(1)));
            out.push((a, e));
            a = e;
        }
    };
    let mut at = 0;
    for (a, b) in merge(done.to_vec()) {
        cut(at, a.min(size));
        at = at.max(b);
    }
    cut(at, size);
    out
}

/// `$XDG_STATE_HOME/sluice/resume` (or `~/.local/state/...`), made 0700
/// only when a record is first written (a small upload writes none).
fn state_dir() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => {
            PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".local/state")
        }
    };
    Some(base.join("sluice/resume"))
}

/// A small file's text, opened without following a link.
fn read_nofollow(p: &Path) -> Result<String, RecordError> {
    use std::io::Read;
    let mut text = String::new();
    OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32)
        .open(p)
        .and_then(|f| f.take(MAX_RECORD).read_to_string(&mut text))
        .map_err(RecordError::Unreadable)?;
    Ok(text)
}

/// Why a record on disk is ignored (a -v line; the copy starts afresh).
#[derive(Debug)]
enum RecordError {
    /// A link, a directory, or larger than a record can be.
    NotSmallFile,
    /// It could not be opened or read.
    Unreadable(std::io::Error),
    /// Its first line is not the record's.
    NotRecord,
    /// Its key names another copy (or the source changed).
    OtherCopy,
    /// Its size line differs from the source's size.
    SizeDiffers,
    /// A line that is not `done START END`.
    BadLine(String),
    /// A range `[start, end)` empty or past the file's end.
    Outside(u64, u64),
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::NotSmallFile => f.write_str("not a small regular file"),
            RecordError::Unreadable(e) => write!(f, "unreadable: {e}"),
            RecordError::NotRecord => f.write_str("not a sluice range record"),
            RecordError::OtherCopy => f.write_str("it is for another copy, or the source changed"),
            RecordError::SizeDiffers => f.write_str("its size differs"),
            RecordError::BadLine(l) => write!(f, "bad line \"{l}\""),
            RecordError::Outside(a, b) => write!(f, "range {a}-{b} is outside the file"),
        }
    }
}

impl std::error::Error for RecordError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RecordError::Unreadable(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_merging() {
        assert_eq!(part_beside(b"/d/f.bin"), b"/d/.f.bin.sluice-part");
        assert_eq!(part_beside(b"f"), b".f.sluice-part");
        assert_eq!(
            merge(vec![(8, 16), (0, 8), (20, 30), (25, 40)]),
            vec![(0, 16), (20, 40)]
        );
        assert_eq!(
            missing(100, &[(10, 20), (50, 60)], 25),
            vec![(0, 10), (20, 45), (45, 50), (60, 85), (85, 100)]
        );
        assert_eq!(missing(10, &[(0, 10)], 4), vec![]);
    }

    #[test]
    fn records_round_trip_and_refuse_strangers() {
        let dir = std::env::temp_dir().join(format!("sluice-rec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("t.bin");
        let r = Record::for_download("h:22", b"/r", &target, 100, 5);
        r.reset(&[]);
        r.add(10, 20);
        r.add(0, 10);
        assert_eq!(r.load(), vec![(0, 10), (10, 20)]);
        // Another source (mtime changed): not trusted.
        let other = Record::for_download("h:22", b"/r", &target, 100, 6);
        assert!(other.load().is_empty());
        // Garbage and out-of-range lines: ignored whole.
        let good = std::fs::read_to_string(r.path()).unwrap();
        assert!(matches!(other.parse(&good), Err(RecordError::OtherCopy)));
        assert!(matches!(r.parse("junk"), Err(RecordError::NotRecord)));
        let far = r.parse(&format!("{good}done 90 200\n")).unwrap_err();
        assert!(matches!(far, RecordError::Outside(90, 200)));
        assert_eq!(far.to_string(), "range 90-200 is outside the file");
        std::fs::write(r.path(), format!("{good}done 90 200\n")).unwrap();
        assert!(r.load().is_empty());
        std::fs::write(r.path(), "junk").unwrap();
        assert!(r.load().is_empty());
        r.remove();
        assert!(r.load().is_empty());
        // A record that is a symbolic link is not read.
        r.reset(&[(0, 10)]);
        let real = dir.join("real");
        std::fs::rename(r.path(), &real).unwrap();
        std::os::unix::fs::symlink(&real, r.path()).unwrap();
        assert!(r.load().is_empty());
        r.remove();
        assert!(real.is_file(), "the link's target stays");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
