//! The receiving side of the legacy protocol (`scp -f` on the other
//! end): control lines read and checked (lines.rs), directories made,
//! files written, with modes and times as the server sends them.

use super::super::super::errors::os_text;
use super::super::super::progress::Meter;
use super::super::super::remote::path_of;
use super::lines::{parse_item, parse_times, safe_name};
use super::{lost, say, Legacy, Remote, Res, Stop, BUF, MAX_LINE};
use std::fs::{File, FileTimes};
use std::io::{BufRead, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

impl Remote {
    pub(super) fn download(
        &mut self,
        asked: &[u8],
        target: &Path,
        is_dir: bool,
        set: &Legacy,
    ) -> Res<()> {
        self.send(b"\0")?;
        self.sink(target, is_dir, Some(asked), set)
    }

    /// Takes items into `target` (into it when `is_dir`, else as it) until
    /// the level ends (`E`, or the end of the stream at the top).
    fn sink(&mut self, target: &Path, is_dir: bool, top: Option<&[u8]>, set: &Legacy) -> Res<()> {
        let mut times: Option<(i64, i64)> = None;
        loop {
            self.w.flush().map_err(|_| lost())?;
            let mut line = Vec::new();
            let mut lim = (&mut self.r).take(MAX_LINE as u64);
            if lim.read_until(b'\n', &mut line).map_err(|_| lost())? == 0 {
                return if top.is_some() { Ok(()) } else { Err(lost()) };
            }
            if line.last() != Some(&b'\n') {
                say("protocol error: control line too long or cut short");
                return Err(Stop::Lost);
            }
            line.pop();
            let Some((&kind, rest)) = line.split_first() else {
                say("protocol error: empty control line");
                return Err(Stop::Lost);
            };
            match kind {
                1 | 2 => {
                    crate::errln!("{}", String::from_utf8_lossy(rest));
                    self.errs += 1;
                    if kind == 2 {
                        return Err(Stop::Fatal);
                    }
                }
                b'E' if top.is_none() => {
                    self.send(b"\0")?;
                    return Ok(());
                }
                b'T' => match parse_times(rest) {
                    Some(t) => {
                        times = Some(t);
                        self.send(b"\0")?;
                    }
                    None => {
                        say("protocol error: mtime.sec not delimited");
                        return Err(Stop::Lost);
                    }
                },
                b'C' | b'D' => {
                    let Some((mode, size, name)) = parse_item(rest) else {
                        say("protocol error: bad control line");
                        return Err(Stop::Lost);
                    };
                    if !safe_name(name, top) {
                        let _ = self.error(&format!(
                            "error: unexpected filename: {}",
                            String::from_utf8_lossy(name)
                        ));
                        return Err(Stop::Fatal);
                    }
                    let dest = if is_dir {
                        target.join(path_of(name))
                    } else {
                        target.to_path_buf()
                    };
                    let t = times.take();
                    if kind == b'D' {
                        if !set.recursive {
                            let _ = self.error("received directory without -r");
                            return Err(Stop::Fatal);
                        }
                        self.take_dir(&dest, mode, t, set)?;
                    } else {
                        self.take_file(&dest, mode, size, t, set)?;
                    }
                }
                _ => {
                    crate::errln!("{}", String::from_utf8_lossy(&line));
                    say("protocol error: unexpected control line");
                    return Err(Stop::Lost);
                }
            }
        }
    }

    fn take_dir(&mut self, dest: &Path, mode: u32, t: Option<(i64, i64)>, set: &Legacy) -> Res<()> {
        match std::fs::metadata(dest) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                self.error(&format!("{}: Not a directory", dest.display()))?;
                return Err(Stop::Fatal);
            }
            Err(_) => {
                let m = created_mode(mode, set) | 0o700;
                if let Err(e) = std::fs::DirBuilder::new().mode(m).create(dest) {
                    self.error(&format!("{}: {}", dest.display(), os_text(&e)))?;
                    return Err(Stop::Fatal);
                }
            }
        }
        self.send(b"\0")?;
        self.sink(dest, true, None, set)?;
        if set.preserve {
            let _ = std::fs::set_permissions(dest, std::fs::Permissions::from_mode(mode));
            if let Some(t) = t {
                let _ = File::open(dest).and_then(|f| f.set_times(file_times(t)));
            }
        }
        Ok(())
    }

    fn take_file(
        &mut self,
        dest: &Path,
        mode: u32,
        size: u64,
        t: Option<(i64, i64)>,
        set: &Legacy,
    ) -> Res<()> {
        let opened = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(created_mode(mode, set))
            .open(dest);
        let mut f = match opened {
            Ok(f) => Some(f),
            Err(e) => {
                self.error(&format!("{}: {}", dest.display(), os_text(&e)))?;
                None
            }
        };
        let Some(file) = f.as_mut() else {
            // scp -f goes on with the next item after an error here.
            return Ok(());
        };
        self.send(b"\0")?;
        self.w.flush().map_err(|_| lost())?;
        let mut meter = Meter::new(set.progress, &dest.to_string_lossy(), size, 0);
        let mut buf = vec![0u8; BUF];
        let (mut left, mut wrerr) = (size, None);
        while left > 0 {
            let want = (left as usize).min(BUF);
            let n = self.r.read(&mut buf[..want]).map_err(|_| lost())?;
            if n == 0 {
                return Err(lost());
            }
            if let Some(l) = &self.limit {
                l.pace(n as u64);
            }
            if wrerr.is_none() {
                if let Err(e) = file.write_all(&buf[..n]) {
                    wrerr = Some(os_text(&e));
                }
            }
            meter.add(n as u64);
            left -= n as u64;
        }
        meter.done();
        if wrerr.is_none() {
            if let Err(e) = file.set_len(size) {
                wrerr = Some(os_text(&e));
            }
        }
        let sent_ok = self.response()?;
        if set.preserve {
            let _ = file.set_permissions(std::fs::Permissions::from_mode(mode));
            if let Some(t) = t {
                let _ = file.set_times(file_times(t));
            }
        }
        match wrerr {
            Some(m) => self.error(&format!("{}: write: {m}", dest.display())),
            None if sent_ok => self.send(b"\0"),
            None => Ok(()),
        }
    }
}

/// The mode a new file or directory gets from the server's: set-id bits
/// only with -p (a root user's download never turns setuid by the server's
/// say), and the umask applies as always.
fn created_mode(mode: u32, set: &Legacy) -> u32 {
    if set.preserve {
        mode
    } else {
        mode & 0o777
    }
}

fn file_times((mtime, atime): (i64, i64)) -> FileTimes {
    let at = |s: i64| UNIX_EPOCH + Duration::from_secs(s.max(0) as u64);
    FileTimes::new()
        .set_modified(at(mtime))
        .set_accessed(at(atime))
}
