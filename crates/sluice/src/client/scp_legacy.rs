//! `sluice-scp -O`: the legacy SCP protocol, for servers with no SFTP
//! subsystem. As OpenSSH's scp does it, the remote end is `scp -t` (we
//! send) or `scp -f` (we receive), run through the `sluice` client as a
//! child process whose stdin and stdout carry the protocol:
//!
//! - a control line per item: `C<mode> <size> <name>` (a file, its bytes
//!   follow), `D<mode> 0 <name>` … `E` (a directory), `T<mtime> 0 <atime> 0`
//!   (times for the next item, with -p);
//! - each answered by one byte: 0 (go on), 1 (an error message follows to
//!   the newline; the copy goes on) or 2 (the same, fatal).
//!
//! A copy between two remote hosts (scp -3) relays the same protocol
//! between the source host's `scp -f` and the destination's `scp -t`.
//!
//! Names the server sends are checked before any file is touched: no `/`,
//! no `.` or `..`, and at the top level the name asked for (or one the
//! glob asked for matches), so a server cannot write outside the target.

use crate::client::sftp::bwlimit::BwLimit;
use crate::client::sftp::progress::Meter;
use crate::client::sftp::scp::Place;
use std::ffi::{CString, OsString};
use std::fs::{File, FileTimes};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

/// Mode bits sent and applied (scp's FILEMODEMASK: no sticky bit).
const MODE_MASK: u32 = 0o6777;
/// Longest control line taken from the server.
const MAX_LINE: usize = 4096;
/// Copy buffer.
const BUF: usize = 256 * 1024;

/// What the command line asked for.
pub struct Legacy {
    /// -r.
    pub recursive: bool,
    /// -p.
    pub preserve: bool,
    /// -v: the remote scp is verbose too.
    pub verbose: bool,
    /// -l, in Kbit/s.
    pub limit: Option<u64>,
    /// The progress meter (stdout a terminal, no -q).
    pub progress: bool,
}

impl Legacy {
    /// The remote scp's flags for these settings (` -v -r -p`).
    pub fn flags(&self) -> String {
        [
            (self.verbose, " -v"),
            (self.recursive, " -r"),
            (self.preserve, " -p"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, f)| *f)
        .collect()
    }
}

/// The remote end: the child's pipes, the error count.
struct Remote {
    child: Child,
    r: BufReader<ChildStdout>,
    w: BufWriter<ChildStdin>,
    errs: u32,
    limit: Option<Arc<BwLimit>>,
}

/// How a copy stops early.
enum Stop {
    /// The connection or the remote scp is gone (message printed).
    Lost,
    /// The remote end sent a fatal error (printed).
    Fatal,
}

type Res<T> = Result<T, Stop>;

fn say(msg: &str) {
    crate::errln!("scp: {msg}");
}

/// Copies `sources` to `target` with the remote `scp`; `ssh` runs the
/// `sluice` client (its arguments up to the host). Returns the exit code.
pub fn run(ssh: Command, sources: &[Place], target: &Place, set: &Legacy) -> i32 {
    let flags = set.flags();
    match target {
        Place::Remote(t) => {
            let t = if t.is_empty() { &b"."[..] } else { t };
            let d = if sources.len() > 1 { " -d" } else { "" };
            let cmd = [format!("scp{flags}{d} -t -- ").as_bytes(), t].concat();
            let Some(mut remote) = Remote::start(ssh, &cmd, set) else {
                return 1;
            };
            let r = remote.upload(sources, set);
            remote.finish(r)
        }
        Place::Local(t) => {
            let mut code = 0;
            let is_dir = t.is_dir();
            if sources.len() > 1 && !is_dir {
                say(&format!("{}: Not a directory", t.display()));
                return 1;
            }
            for s in sources {
                let Place::Remote(p) = s else { continue };
                let p = if p.is_empty() { &b"."[..] } else { p };
                let cmd = [format!("scp{flags} -f -- ").as_bytes(), p].concat();
                let Some(mut remote) = Remote::start(clone_cmd(&ssh), &cmd, set) else {
                    return 1;
                };
                let r = remote.download(p, t, is_dir, set);
                if remote.finish(r) != 0 {
                    code = 1;
                }
            }
            code
        }
    }
}

/// A copy between two remote hosts through this one (scp -3, OpenSSH's
/// default since 8.7): the source host's `scp -f` and the destination
/// host's `scp -t` talk the protocol to each other through us, bytes
/// relayed both ways. Messages the destination sends back (its answers
/// are only status bytes and messages) and a source's opening error are
/// printed here.
pub fn relay(
    src: Command,
    src_path: &[u8],
    dst: Command,
    dst_path: &[u8],
    many: bool,
    set: &Legacy,
) -> i32 {
    let flags = set.flags();
    let d = if many { " -d" } else { "" };
    let spawn = |mut c: Command, cmd: Vec<u8>| {
        c.arg(std::ffi::OsStr::from_bytes(&cmd));
        c.stdin(Stdio::piped()).stdout(Stdio::piped());
        c.spawn().map_err(|e| {
            say(&format!(
                "cannot run {}: {e}",
                Path::new(c.get_program()).display()
            ))
        })
    };
    let dst_path = if dst_path.is_empty() {
        &b"."[..]
    } else {
        dst_path
    };
    let Ok(mut a) = spawn(
        src,
        [format!("scp{flags} -f -- ").as_bytes(), src_path].concat(),
    ) else {
        return 1;
    };
    let Ok(mut b) = spawn(
        dst,
        [format!("scp{flags}{d} -t -- ").as_bytes(), dst_path].concat(),
    ) else {
        let _ = a.kill();
        let _ = a.wait();
        return 1;
    };
    let (Some(mut a_out), Some(mut a_in), Some(mut b_out), Some(mut b_in)) = (
        a.stdout.take(),
        a.stdin.take(),
        b.stdout.take(),
        b.stdin.take(),
    ) else {
        return 1;
    };
    let forward = std::thread::spawn(move || {
        // A first line that is an error (a missing source) is shown.
        let mut first = [0u8; 1];
        if a_out.read(&mut first).unwrap_or(0) == 1 {
            let mut line = Vec::new();
            if first[0] == 1 || first[0] == 2 {
                let _ =
                    BufReader::new((&mut a_out).take(MAX_LINE as u64)).read_until(b'\n', &mut line);
                crate::err!("{}", String::from_utf8_lossy(&line));
            }
            if b_in.write_all(&first).is_ok() && b_in.write_all(&line).is_ok() {
                let _ = std::io::copy(&mut a_out, &mut b_in);
            }
        }
    });
    // The destination's answers: a zero byte, or a message to a newline.
    let mut answers = BufReader::new(b_out.by_ref());
    loop {
        let mut byte = [0u8; 1];
        if answers.read(&mut byte).unwrap_or(0) == 0 {
            break;
        }
        let mut msg = Vec::new();
        if byte[0] != 0 {
            let _ = (&mut answers)
                .take(MAX_LINE as u64)
                .read_until(b'\n', &mut msg);
            let mut shown = Vec::new();
            if byte[0] != 1 && byte[0] != 2 {
                shown.push(byte[0]);
            }
            shown.extend_from_slice(&msg);
            crate::err!("{}", String::from_utf8_lossy(&shown));
        }
        if a_in
            .write_all(&byte)
            .and_then(|_| a_in.write_all(&msg))
            .is_err()
        {
            break;
        }
    }
    drop(a_in);
    let _ = forward.join();
    let (sa, sb) = (a.wait(), b.wait());
    i32::from(!(sa.is_ok_and(|s| s.success()) && sb.is_ok_and(|s| s.success())))
}

/// The same program and arguments (a Command cannot be cloned).
fn clone_cmd(c: &Command) -> Command {
    let mut n = Command::new(c.get_program());
    n.args(c.get_args());
    n
}

impl Remote {
    fn start(mut ssh: Command, cmd: &[u8], set: &Legacy) -> Option<Remote> {
        ssh.arg(std::ffi::OsStr::from_bytes(cmd));
        ssh.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut child = match ssh.spawn() {
            Ok(c) => c,
            Err(e) => {
                say(&format!(
                    "cannot run {}: {e}",
                    Path::new(ssh.get_program()).display()
                ));
                return None;
            }
        };
        let (Some(out), Some(inp)) = (child.stdout.take(), child.stdin.take()) else {
            return None;
        };
        Some(Remote {
            child,
            r: BufReader::with_capacity(BUF, out),
            w: BufWriter::with_capacity(BUF, inp),
            errs: 0,
            limit: set.limit.map(|k| Arc::new(BwLimit::new(k))),
        })
    }

    /// Ends the child and gives the exit code (1 on any error, as scp).
    fn finish(mut self, r: Res<()>) -> i32 {
        let _ = self.w.flush();
        drop(self.w);
        if matches!(r, Err(Stop::Lost)) {
            crate::errln!("lost connection");
        }
        let status = self.child.wait();
        let ok = r.is_ok() && self.errs == 0 && status.is_ok_and(|s| s.success());
        i32::from(!ok)
    }

    fn send(&mut self, b: &[u8]) -> Res<()> {
        self.w.write_all(b).map_err(|_| lost())
    }

    /// Reads the other end's answer: Ok(true) to go on, Ok(false) after a
    /// message that fails this item.
    fn response(&mut self) -> Res<bool> {
        self.w.flush().map_err(|_| lost())?;
        let mut b = [0u8; 1];
        if self.r.read(&mut b).map_err(|_| lost())? == 0 {
            return Err(lost());
        }
        if b[0] == 0 {
            return Ok(true);
        }
        let mut msg = Vec::new();
        if b[0] != 1 && b[0] != 2 {
            msg.push(b[0]);
        }
        self.read_line(&mut msg)?;
        crate::err!("{}", String::from_utf8_lossy(&msg));
        self.errs += 1;
        if b[0] == 2 {
            return Err(Stop::Fatal);
        }
        Ok(false)
    }

    /// Reads to the newline (kept), within [`MAX_LINE`].
    fn read_line(&mut self, out: &mut Vec<u8>) -> Res<()> {
        let mut lim = (&mut self.r).take(MAX_LINE as u64);
        lim.read_until(b'\n', out).map_err(|_| lost())?;
        if out.last() != Some(&b'\n') {
            say("protocol error: control line too long or cut short");
            return Err(Stop::Lost);
        }
        Ok(())
    }

    /// An error of ours: printed here and sent to the other end.
    fn error(&mut self, msg: &str) -> Res<()> {
        say(msg);
        self.errs += 1;
        self.send(format!("\x01scp: {msg}\n").as_bytes())
    }

    // ---- sending (scp -t on the other end) ----

    fn upload(&mut self, sources: &[Place], set: &Legacy) -> Res<()> {
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

    // ---- receiving (scp -f on the other end) ----

    fn download(&mut self, asked: &[u8], target: &Path, is_dir: bool, set: &Legacy) -> Res<()> {
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
                        target.join(std::ffi::OsStr::from_bytes(name))
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

fn lost() -> Stop {
    Stop::Lost
}

/// `mtime 0 atime 0` (microseconds ignored, as scp does).
fn parse_times(rest: &[u8]) -> Option<(i64, i64)> {
    let s = std::str::from_utf8(rest).ok()?;
    let v: Vec<&str> = s.split(' ').collect();
    let [m, mu, a, au] = v.as_slice() else {
        return None;
    };
    for us in [mu, au] {
        us.parse::<u32>().ok().filter(|u| *u < 1_000_000)?;
    }
    Some((m.parse().ok()?, a.parse().ok()?))
}

/// `mode size name` of a C or D line.
fn parse_item(rest: &[u8]) -> Option<(u32, u64, &[u8])> {
    let (mode, rest) = split_space(rest)?;
    let (size, name) = split_space(rest)?;
    if mode.len() != 4 || !mode.iter().all(|c| (b'0'..=b'7').contains(c)) {
        return None;
    }
    let mode = u32::from_str_radix(std::str::from_utf8(mode).ok()?, 8).ok()? & MODE_MASK;
    let size = std::str::from_utf8(size).ok()?.parse().ok()?;
    Some((mode, size, name))
}

fn split_space(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let i = b.iter().position(|c| *c == b' ')?;
    Some((b.get(..i)?, b.get(i + 1..)?))
}

/// A name the server may create: one path component, not `.` or `..`;
/// at the top level, the name asked for or one its glob matches.
fn safe_name(name: &[u8], asked: Option<&[u8]>) -> bool {
    if name.is_empty() || name.contains(&b'/') || name == b"." || name == b".." {
        return false;
    }
    let Some(asked) = asked else {
        return true;
    };
    let trimmed = asked.strip_suffix(b"/").unwrap_or(asked);
    let base = trimmed.rsplit(|c| *c == b'/').next().unwrap_or(trimmed);
    if !base.iter().any(|c| matches!(c, b'*' | b'?' | b'[' | b'{')) {
        // `.` or `~`-style names: the server names the item itself.
        return base == name || base.is_empty() || base == b"." || base.starts_with(b"~");
    }
    let (Ok(p), Ok(n)) = (CString::new(base), CString::new(name)) else {
        return false;
    };
    // SAFETY: fnmatch reads two NUL-terminated strings we own.
    unsafe { libc::fnmatch(p.as_ptr(), n.as_ptr(), 0) == 0 }
}

fn file_times((mtime, atime): (i64, i64)) -> FileTimes {
    let at = |s: i64| UNIX_EPOCH + Duration::from_secs(s.max(0) as u64);
    FileTimes::new()
        .set_modified(at(mtime))
        .set_accessed(at(atime))
}

fn name_of(p: &Path) -> &[u8] {
    p.file_name().map_or(b".", |n| n.as_bytes())
}

fn os_text(e: &std::io::Error) -> String {
    crate::client::sftp::errors::os_text(e)
}

/// The `sluice` client beside this program (or on PATH), with the
/// options scp always gives ssh, then `args`, then the host.
pub fn ssh_command(args: Vec<OsString>, host: &str) -> Command {
    let sluice = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("sluice")))
        .filter(|p| p.exists())
        .map_or_else(|| OsString::from("sluice"), PathBuf::into_os_string);
    let mut c = Command::new(sluice);
    c.arg("-x");
    for o in [
        "PermitLocalCommand=no",
        "ClearAllForwardings=yes",
        "RemoteCommand=none",
        "RequestTTY=no",
        "ControlMaster=no",
    ] {
        c.arg("-o").arg(o);
    }
    c.args(args).arg("--").arg(host);
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_lines_parse_strictly() {
        assert_eq!(parse_item(b"0644 12 a b"), Some((0o644, 12, &b"a b"[..])));
        assert_eq!(parse_item(b"1755 0 d").map(|i| i.0), Some(0o755));
        assert_eq!(parse_item(b"644 12 a"), None);
        assert_eq!(parse_item(b"0648 12 a"), None);
        assert_eq!(parse_item(b"0644 -1 a"), None);
        assert_eq!(parse_item(b"0644 12"), None);
        assert_eq!(
            parse_times(b"1700000000 0 1700000001 0"),
            Some((1700000000, 1700000001))
        );
        assert_eq!(parse_times(b"1700000000 0 1700000001"), None);
        assert_eq!(parse_times(b"1 9999999 2 0"), None);
    }

    #[test]
    fn names_from_the_server_are_checked() {
        assert!(safe_name(b"a.txt", Some(b"/tmp/a.txt")));
        assert!(!safe_name(b"b.txt", Some(b"/tmp/a.txt")));
        assert!(safe_name(b"a.txt", Some(b"/tmp/*.txt")));
        assert!(!safe_name(b"a.sh", Some(b"/tmp/*.txt")));
        assert!(safe_name(b"dir", Some(b"dir/")));
        assert!(safe_name(b"x", None));
        for bad in [&b"../x"[..], b"..", b".", b"a/b", b""] {
            assert!(!safe_name(bad, None), "{bad:?}");
        }
    }
}
