//! The sending side of the legacy protocol (`scp -t` on the other end):
//! files as `C` lines and their bytes, directories as `D` ... `E`, times
//! as `T` lines with -p.

use super::super::super::errors::os_text;
use super::super::super::progress::Meter;
use super::super::Place;
use super::{lost, Legacy, Remote, Res, Stop, BUF, MODE_MASK};
use std::fs::File;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

impl Remote {
    pub(super) fn upload(&mut self, sources: &[Place], set: &Legacy) -> Res<()> {
        if !self.response()? {
            return Err(Stop::Fatal);
        }
        for s in sources {
            let Place::Local(p) = s else { continue };
            let md = match std::fs::metadata(p) {
                Ok(m) => m,
                Err(e) => {
                    self.error(&format!("{}: {}", p.display(), os_text(&e)))?;
                    continue;
                }
            };
            if md.is_dir() && set.recursive {
                self.send_dir(p, set)?;
            } else if md.is_file() {
                self.send_file(p, &md, set)?;
            } else {
                self.error(&format!("{}: not a regular file", p.display()))?;
            }
        }
        Ok(())
    }

    fn times(&mut self, md: &std::fs::Metadata) -> Res<bool> {
        self.send(format!("T{} 0 {} 0\n", md.mtime().max(0), md.atime().max(0)).as_bytes())?;
        self.response()
    }

    fn send_file(&mut self, p: &Path, md: &std::fs::Metadata, set: &Legacy) -> Res<()> {
        let mut f = match File::open(p) {
            Ok(f) => f,
            Err(e) => return self.error(&format!("{}: {}", p.display(), os_text(&e))),
        };
        if set.preserve && !self.times(md)? {
            return Ok(());
        }
        let size = md.len();
        let mut line = format!("C{:04o} {size} ", md.mode() & MODE_MASK).into_bytes();
        line.extend_from_slice(name_of(p));
        line.push(b'\n');
        self.send(&line)?;
        if !self.response()? {
            return Ok(());
        }
        // Exactly `size` bytes go, whatever the file does meanwhile (a read
        // error is padded with zeros and reported after, as scp does).
        let mut meter = Meter::new(set.progress, &p.to_string_lossy(), size, 0);
        let mut buf = vec![0u8; BUF];
        let (mut left, mut failed) = (size, None);
        while left > 0 {
            let want = (left as usize).min(BUF);
            let chunk = &mut buf[..want];
            let n = if failed.is_none() {
                match f.read(chunk) {
                    Ok(0) => {
                        failed = Some("file shrank while it was sent".to_owned());
                        0
                    }
                    Ok(n) => n,
                    Err(e) => {
                        failed = Some(os_text(&e));
                        0
                    }
                }
            } else {
                0
            };
            let n = if n == 0 {
                chunk.fill(0);
                want
            } else {
                n
            };
            if let Some(l) = &self.limit {
                l.pace(n as u64);
            }
            self.send(&buf[..n])?;
            meter.add(n as u64);
            left -= n as u64;
        }
        match failed {
            None => self.send(b"\0")?,
            Some(m) => self.error(&format!("{}: {m}", p.display()))?,
        }
        let r = self.response().map(|_| ());
        meter.done();
        r
    }

    fn send_dir(&mut self, p: &Path, set: &Legacy) -> Res<()> {
        let entries = match std::fs::read_dir(p) {
            Ok(d) => d,
            Err(e) => return self.error(&format!("{}: {}", p.display(), os_text(&e))),
        };
        let md = std::fs::metadata(p).map_err(|_| lost())?;
        if set.preserve && !self.times(&md)? {
            return Ok(());
        }
        let mut line = format!("D{:04o} 0 ", md.mode() & MODE_MASK).into_bytes();
        line.extend_from_slice(name_of(p));
        line.push(b'\n');
        self.send(&line)?;
        if !self.response()? {
            return Ok(());
        }
        let mut names: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        names.sort();
        for e in names {
            match std::fs::metadata(&e) {
                Ok(m) if m.is_dir() => self.send_dir(&e, set)?,
                Ok(m) if m.is_file() => self.send_file(&e, &m, set)?,
                Ok(_) => self.error(&format!("{}: not a regular file", e.display()))?,
                Err(err) => self.error(&format!("{}: {}", e.display(), os_text(&err)))?,
            }
        }
        self.send(b"E\n")?;
        self.response().map(|_| ())
    }
}

fn name_of(p: &Path) -> &[u8] {
    p.file_name().map_or(b".", |n| n.as_bytes())
}
