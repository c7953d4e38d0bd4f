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
//!
//! This file runs the remote end and its answers; `send.rs` is the
//! sending side, `sink.rs` the receiving one, `lines.rs` the control
//! lines and names read from the server.

mod lines;
mod send;
mod sink;

use super::super::bwlimit::BwLimit;
use super::Place;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;

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
}

fn lost() -> Stop {
    Stop::Lost
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
