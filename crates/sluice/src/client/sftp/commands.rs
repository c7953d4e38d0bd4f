//! sftp(1)'s commands, from a batch file (`-b`) or the prompt: get/put
//! (and reget/reput) with -a -f -p -r, ls, cd, lcd, pwd, lpwd, mkdir,
//! lmkdir, rmdir, rm, rename, chmod, chown, chgrp, ln/symlink, df,
//! version, progress, help, `!command`, bye/quit/exit. Messages and exit
//! codes are OpenSSH's: in batch mode the first failing command ends the
//! run with exit 1 unless its line starts with `-`.

use super::remote::{self, absolute, basename};
use super::session::{Sftp, SftpError};
use super::transfer::{self, os_text, Options, TransferError};
use super::Link;
use sluice_proto::sftp::{Attrs, Status};
use std::ffi::OsStr;
use std::io::{BufRead, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// How the program was started (sftp's flags).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// -b: the batch file ("-" for stdin).
    pub batch: Option<String>,
    /// -q, or batch mode: no "Fetching ..." lines.
    pub quiet: bool,
    /// Transfer flags (-a, -f, -p, -r, -B, -R, the meter).
    pub transfer: Options,
    /// -r: every get and put is recursive.
    pub recursive: bool,
    /// The destination's path: a directory to start in, or a file to fetch.
    pub start_path: Option<String>,
}

/// A command failed (its message printed), or the session cannot go on.
pub enum Fail {
    /// Failed; the message is printed.
    Failed,
    /// The session cannot go on.
    Fatal(String),
}

/// What scp sees of a failed tree upload.
pub use Fail as Failure;

/// Uploads a directory tree without "Uploading" lines (scp -r).
pub fn put_tree_quiet(
    s: &mut Sftp,
    local: &Path,
    remote_dir: &[u8],
    o: &Options,
) -> Result<(), Fail> {
    put_tree(s, local, remote_dir, o, true)
}

type Done = Result<bool, Fail>;

fn err(msg: &str) -> Fail {
    eprintln!("{msg}");
    Fail::Failed
}

fn remote_err(what: &str, e: SftpError) -> Fail {
    match e {
        SftpError::Fatal(m) => Fail::Fatal(m),
        e => err(&format!("{what}: {e}")),
    }
}

fn transfer_err(e: TransferError) -> Fail {
    match e {
        TransferError::Failed(m) => err(&m),
        TransferError::Fatal(m) => Fail::Fatal(m),
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn path_of(b: &[u8]) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(b))
}

struct Shell {
    s: Sftp,
    cwd: Vec<u8>,
    set: Settings,
}

/// Runs sftp over `link`; returns the exit code.
pub fn main(link: Link, set: Settings) -> i32 {
    let s = match Sftp::init(link) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}", fatal_text(&e.text()));
            return 255;
        }
    };
    let mut sh = Shell {
        s,
        cwd: b"/".to_vec(),
        set,
    };
    let code = sh.run();
    sh.s.finish();
    code
}

fn fatal_text(m: &str) -> String {
    if m.is_empty() {
        "Connection closed".into()
    } else {
        m.to_owned()
    }
}

impl Shell {
    fn run(&mut self) -> i32 {
        match self.s.realpath(b".") {
            Ok(p) => self.cwd = p,
            Err(SftpError::Fatal(m)) => {
                eprintln!("{}", fatal_text(&m));
                return 255;
            }
            Err(e) => {
                eprintln!("Need cwd: {e}");
                return 1;
            }
        }
        if let Some(p) = self.set.start_path.clone().filter(|p| !p.is_empty()) {
            match self.start_at(p.as_bytes()) {
                Ok(Some(code)) => return code,
                Ok(None) => {}
                Err(Fail::Fatal(m)) => {
                    eprintln!("{}", fatal_text(&m));
                    return 255;
                }
                Err(Fail::Failed) => return 1,
            }
        }
        let batch = self.set.batch.clone();
        let interactive = batch.is_none() && crate::client::tty::stdin_is_tty();
        let mut input: Box<dyn BufRead> = match batch.as_deref() {
            None | Some("-") => Box::new(std::io::BufReader::new(std::io::stdin())),
            Some(f) => match std::fs::File::open(f) {
                Ok(f) => Box::new(std::io::BufReader::new(f)),
                Err(e) => {
                    eprintln!("{f} ({})", os_text(&e));
                    return 1;
                }
            },
        };
        let mut line = Vec::new();
        loop {
            if interactive {
                print!("sftp> ");
                let _ = std::io::stdout().flush();
            }
            line.clear();
            match input.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => {
                    if interactive {
                        println!();
                    }
                    return 0;
                }
                Ok(_) => {}
            }
            if !interactive {
                // As sftp: batch commands are echoed.
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(b"sftp> ");
                let _ = out.write_all(&line);
                if line.last() != Some(&b'\n') {
                    let _ = out.write_all(b"\n");
                }
            }
            let mut text = line.as_slice();
            while let Some((b' ' | b'\t' | b'\n' | b'\r', rest)) = text.split_first() {
                text = rest;
            }
            while let Some((b' ' | b'\t' | b'\n' | b'\r', rest)) = text.split_last() {
                text = rest;
            }
            let (ignore, text) = match text.strip_prefix(b"-") {
                Some(t) => (true, t),
                None => (false, text),
            };
            if text.is_empty() || text.first() == Some(&b'#') {
                continue;
            }
            match self.dispatch(text) {
                Ok(true) => {}
                Ok(false) => return 0,
                Err(Fail::Fatal(m)) => {
                    eprintln!("{}", fatal_text(&m));
                    return 255;
                }
                Err(Fail::Failed) if batch.is_some() && !ignore => return 1,
                Err(Fail::Failed) => {}
            }
        }
    }

    /// The destination's path: cd into a directory, or fetch a file into
    /// the local directory and end (Some(exit code)).
    fn start_at(&mut self, p: &[u8]) -> Result<Option<i32>, Fail> {
        let abs = absolute(&self.cwd, p);
        let is_dir = match self.s.stat(&abs, true) {
            Ok(a) => a.permissions.is_some_and(|m| m & 0o170000 == 0o040000),
            Err(SftpError::Fatal(m)) => return Err(Fail::Fatal(m)),
            Err(_) => false,
        };
        if is_dir {
            self.cwd = abs;
            return Ok(None);
        }
        let args = vec![b"get".to_vec(), p.to_vec()];
        match self.get(&args, false) {
            Ok(_) => Ok(Some(0)),
            Err(Fail::Failed) => Ok(Some(1)),
            Err(f) => Err(f),
        }
    }

    fn dispatch(&mut self, line: &[u8]) -> Done {
        if let Some(cmd) = line.strip_prefix(b"!") {
            return self.shell(cmd);
        }
        let args = match tokenize(line) {
            Ok(a) => a,
            Err(m) => return Err(err(m)),
        };
        let Some(cmd) = args.first() else {
            return Ok(true);
        };
        match cmd.as_slice() {
            b"bye" | b"quit" | b"exit" => Ok(false),
            b"get" => self.get(&args, false),
            b"reget" => self.get(&args, true),
            b"put" => self.put(&args, false),
            b"reput" => self.put(&args, true),
            b"ls" | b"dir" => self.ls(&args),
            b"cd" | b"chdir" => self.cd(&args),
            b"lcd" | b"lchdir" => lcd(&args),
            b"pwd" => {
                println!("Remote working directory: {}", lossy(&self.cwd));
                Ok(true)
            }
            b"lpwd" => match std::env::current_dir() {
                Ok(d) => {
                    println!("Local working directory: {}", d.display());
                    Ok(true)
                }
                Err(e) => Err(err(&format!("Couldn't get local cwd: {}", os_text(&e)))),
            },
            b"mkdir" => self.one_path(&args, "mkdir", |sh, p| {
                sh.s.mkdir(p, Some(0o777))
                    .map_err(|e| remote_err(&format!("remote mkdir \"{}\"", lossy(p)), e))
            }),
            b"lmkdir" => {
                let p = arg(&args, 1, "lmkdir")?;
                std::fs::create_dir(path_of(p)).map_err(|e| {
                    err(&format!(
                        "Couldn't create local directory \"{}\": {}",
                        lossy(p),
                        os_text(&e)
                    ))
                })?;
                Ok(true)
            }
            b"rmdir" => self.one_path(&args, "rmdir", |sh, p| {
                sh.s.rmdir(p)
                    .map_err(|e| remote_err(&format!("remote rmdir \"{}\"", lossy(p)), e))
            }),
            b"rm" => self.rm(&args),
            b"rename" => {
                let (from, to) = (arg(&args, 1, "rename")?, arg(&args, 2, "rename")?);
                let (f, t) = (absolute(&self.cwd, from), absolute(&self.cwd, to));
                self.s.rename(&f, &t, true).map_err(|e| {
                    remote_err(
                        &format!("remote rename \"{}\" to \"{}\"", lossy(&f), lossy(&t)),
                        e,
                    )
                })?;
                Ok(true)
            }
            b"chmod" => {
                let m = arg(&args, 1, "chmod")?;
                let mode = std::str::from_utf8(m)
                    .ok()
                    .and_then(|m| u32::from_str_radix(m, 8).ok())
                    .filter(|m| *m <= 0o7777)
                    .ok_or_else(|| {
                        err("You must supply a numeric argument to the chmod command.")
                    })?;
                self.setstat_glob(&args, "chmod", |a| a.permissions = Some(mode))
            }
            b"chown" | b"chgrp" => {
                let which = if cmd.as_slice() == b"chown" {
                    "chown"
                } else {
                    "chgrp"
                };
                let n = arg(&args, 1, which)?;
                let id: u32 = std::str::from_utf8(n)
                    .ok()
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(|| {
                        err(&format!(
                            "You must supply a numeric argument to the {which} command."
                        ))
                    })?;
                self.chown(&args, which, id)
            }
            b"ln" | b"symlink" => self.ln(&args),
            b"df" => self.df(&args),
            b"version" => {
                println!("SFTP protocol version 3");
                Ok(true)
            }
            b"progress" => {
                self.set.transfer.progress = !self.set.transfer.progress;
                println!(
                    "Progress meter {}abled",
                    if self.set.transfer.progress {
                        "en"
                    } else {
                        "dis"
                    }
                );
                Ok(true)
            }
            b"help" | b"?" => {
                println!("{HELP}");
                Ok(true)
            }
            _ => Err(err("Invalid command.")),
        }
    }

    fn shell(&mut self, cmd: &[u8]) -> Done {
        let shell = std::env::var_os("SHELL").unwrap_or_else(|| "/bin/sh".into());
        let mut c = std::process::Command::new(shell);
        if !cmd.is_empty() {
            c.arg("-c").arg(OsStr::from_bytes(cmd));
        }
        match c.status() {
            Ok(st) if st.success() => Ok(true),
            Ok(st) => Err(err(&format!(
                "Shell exited with status {}",
                st.code().unwrap_or(255)
            ))),
            Err(e) => Err(err(&format!("Couldn't execute shell: {}", os_text(&e)))),
        }
    }

    fn one_path(
        &mut self,
        args: &[Vec<u8>],
        name: &str,
        f: impl FnOnce(&mut Shell, &[u8]) -> Result<(), Fail>,
    ) -> Done {
        let p = absolute(&self.cwd, arg(args, 1, name)?);
        f(self, &p)?;
        Ok(true)
    }

    fn rm(&mut self, args: &[Vec<u8>]) -> Done {
        let p = arg(args, 1, "rm")?;
        let matches = remote::glob(&mut self.s, &self.cwd, p).map_err(|e| remote_err("rm", e))?;
        if matches.is_empty() {
            return Err(err(&format!(
                "File \"{}\" not found.",
                lossy(&absolute(&self.cwd, p))
            )));
        }
        let mut failed = false;
        for (m, _) in matches {
            if !self.set.quiet {
                println!("Removing {}", lossy(&m));
            }
            if let Err(e) = self.s.remove(&m) {
                if let SftpError::Fatal(f) = e {
                    return Err(Fail::Fatal(f));
                }
                eprintln!("remote delete {}: {e}", lossy(&m));
                failed = true;
            }
        }
        if failed {
            Err(Fail::Failed)
        } else {
            Ok(true)
        }
    }

    fn setstat_glob(&mut self, args: &[Vec<u8>], name: &str, set: impl Fn(&mut Attrs)) -> Done {
        let (_, ops) = flags(&args[1..], "h", name)?;
        let p = ops
            .get(1)
            .ok_or_else(|| err(&format!("You must specify a path after a {name} command.")))?;
        let matches = remote::glob(&mut self.s, &self.cwd, p).map_err(|e| remote_err(name, e))?;
        if matches.is_empty() {
            return Err(err(&format!(
                "File \"{}\" not found.",
                lossy(&absolute(&self.cwd, p))
            )));
        }
        for (m, _) in matches {
            let mut a = Attrs::default();
            set(&mut a);
            if !self.set.quiet {
                if let Some(mode) = a.permissions {
                    println!("Changing mode on {}", lossy(&m));
                    let _ = mode;
                }
            }
            self.s
                .setstat(&m, a)
                .map_err(|e| remote_err(&format!("remote setstat \"{}\"", lossy(&m)), e))?;
        }
        Ok(true)
    }

    fn chown(&mut self, args: &[Vec<u8>], which: &str, id: u32) -> Done {
        let p = arg(args, 2, which)?;
        let matches = remote::glob(&mut self.s, &self.cwd, p).map_err(|e| remote_err(which, e))?;
        for (m, _) in matches {
            let a = self
                .s
                .stat(&m, true)
                .map_err(|e| remote_err("stat remote", e))?;
            let Some((uid, gid)) = a.uid_gid else {
                return Err(err(&format!(
                    "Can't get current ownership of remote file \"{}\"",
                    lossy(&m)
                )));
            };
            let ids = if which == "chown" {
                (id, gid)
            } else {
                (uid, id)
            };
            let a = Attrs {
                uid_gid: Some(ids),
                ..Attrs::default()
            };
            self.s
                .setstat(&m, a)
                .map_err(|e| remote_err(&format!("remote setstat \"{}\"", lossy(&m)), e))?;
        }
        Ok(true)
    }

    fn ln(&mut self, args: &[Vec<u8>]) -> Done {
        let symlink_cmd = args[0].as_slice() == b"symlink";
        let (fl, ops) = flags(&args[1..], "s", "ln")?;
        let soft = symlink_cmd || fl.contains(&'s');
        let (Some(old), Some(new)) = (ops.first(), ops.get(1)) else {
            return Err(err("You must specify two paths after a ln command."));
        };
        let new = absolute(&self.cwd, new);
        if soft {
            // The target stays as typed: a relative link stays relative.
            self.s.symlink(old, &new).map_err(|e| {
                remote_err(
                    &format!(
                        "remote symlink file \"{}\" to \"{}\"",
                        lossy(old),
                        lossy(&new)
                    ),
                    e,
                )
            })?;
        } else {
            let old = absolute(&self.cwd, old);
            if !self.s.has("hardlink@openssh.com", "1") {
                return Err(err(
                    "Server does not support hardlink@openssh.com extension",
                ));
            }
            self.s.hardlink(&old, &new).map_err(|e| {
                remote_err(
                    &format!("remote link \"{}\" to \"{}\"", lossy(&old), lossy(&new)),
                    e,
                )
            })?;
        }
        Ok(true)
    }

    fn df(&mut self, args: &[Vec<u8>]) -> Done {
        let (_, ops) = flags(&args[1..], "hi", "df")?;
        let p = absolute(&self.cwd, ops.first().map_or(&b"."[..], |v| v.as_slice()));
        if !self.s.has("statvfs@openssh.com", "2") {
            return Err(err(
                "Server does not support the statvfs@openssh.com extension",
            ));
        }
        let v = self
            .s
            .statvfs(&p)
            .map_err(|e| remote_err("Couldn't statvfs", e))?;
        let kib = |blocks: u64| v.frsize.saturating_mul(blocks) / 1024;
        let used = v.blocks.saturating_sub(v.bfree);
        let cap = if v.blocks == 0 {
            0
        } else {
            100 * used / v.blocks
        };
        println!(
            "{:>12} {:>12} {:>12} {:>12} %Capacity",
            "Size", "Used", "Avail", "(root)"
        );
        println!(
            "{:>12} {:>12} {:>12} {:>12} {:>8}%",
            kib(v.blocks),
            kib(used),
            kib(v.bavail),
            kib(v.bfree),
            cap
        );
        Ok(true)
    }

    fn cd(&mut self, args: &[Vec<u8>]) -> Done {
        let p = args.get(1).map_or(&b"~"[..], |v| v.as_slice());
        let p = if p == b"~" { &b""[..] } else { p };
        let target = if p.is_empty() {
            self.s.realpath(b".")
        } else {
            self.s.realpath(&absolute(&self.cwd, p))
        };
        let target = target.map_err(|e| remote_err("stat remote", e))?;
        let a = self
            .s
            .stat(&target, true)
            .map_err(|e| remote_err("stat remote", e))?;
        if !a.permissions.is_some_and(|m| m & 0o170000 == 0o040000) {
            return Err(err(&format!(
                "Can't change directory: \"{}\" is not a directory",
                lossy(&target)
            )));
        }
        self.cwd = target;
        Ok(true)
    }

    fn ls(&mut self, args: &[Vec<u8>]) -> Done {
        let (fl, ops) = flags(&args[1..], "1afhlnrSt", "ls")?;
        let long = fl.contains(&'l') || fl.contains(&'n');
        let all = fl.contains(&'a');
        let given = ops.first().cloned();
        let p = given.clone().unwrap_or_default();
        let abs = absolute(&self.cwd, &p);
        let mut names: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        if !remote::has_glob(&abs) {
            let a = self.s.stat(&abs, true).map_err(|e| match e {
                SftpError::Remote(Status::NO_SUCH_FILE) => {
                    err(&format!("Can't ls: \"{}\" not found", lossy(&abs)))
                }
                e => remote_err(&format!("Can't ls: \"{}\"", lossy(&abs)), e),
            })?;
            if a.permissions.is_some_and(|m| m & 0o170000 == 0o040000) {
                let entries = self
                    .s
                    .read_dir(&abs)
                    .map_err(|e| remote_err("Couldn't read directory", e))?;
                for e in entries {
                    if !all && e.filename.first() == Some(&b'.') {
                        continue;
                    }
                    let shown = match &given {
                        Some(g) => remote::join(g, &e.filename),
                        None => e.filename.clone(),
                    };
                    names.push((shown, e.longname));
                }
            } else {
                names.push((p.clone(), long_of(&a, &p)));
            }
        } else {
            let matches =
                remote::glob(&mut self.s, &self.cwd, &p).map_err(|e| remote_err("ls", e))?;
            if matches.is_empty() {
                return Err(err(&format!("Can't ls: \"{}\" not found", lossy(&abs))));
            }
            for (m, a) in matches {
                let shown = if p.first() == Some(&b'/') {
                    m.clone()
                } else {
                    m.get(self.cwd.len()..)
                        .map(|r| r.strip_prefix(b"/").unwrap_or(r).to_vec())
                        .unwrap_or(m.clone())
                };
                let l = long_of(&a.unwrap_or_default(), &shown);
                names.push((shown, l));
            }
        }
        names.sort();
        if fl.contains(&'r') {
            names.reverse();
        }
        let mut out = std::io::stdout().lock();
        if long || fl.contains(&'1') {
            for (n, l) in &names {
                let _ = out.write_all(if long && !l.is_empty() { l } else { n });
                let _ = out.write_all(b"\n");
            }
            return Ok(true);
        }
        // Row-major columns, as sftp prints them.
        let width = super::progress::terminal_width();
        let m = names.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
        let colspace = m + 2;
        let columns = (width / colspace.max(1)).max(1);
        let mut c = 1;
        for (n, _) in &names {
            let _ = out.write_all(n);
            if c >= columns {
                let _ = out.write_all(b"\n");
                c = 1;
            } else {
                let pad = colspace.saturating_sub(n.len());
                let _ = out.write_all(&vec![b' '; pad]);
                c += 1;
            }
        }
        if c != 1 {
            let _ = out.write_all(b"\n");
        }
        Ok(true)
    }

    fn get(&mut self, args: &[Vec<u8>], resume: bool) -> Done {
        let (fl, ops) = flags(&args[1..], "afPpr", "get")?;
        let mut o = self.set.transfer.clone();
        o.resume |= resume || fl.contains(&'a');
        o.preserve |= fl.contains(&'p') || fl.contains(&'P');
        o.fsync |= fl.contains(&'f');
        let recursive = self.set.recursive || fl.contains(&'r');
        let Some(src) = ops.first() else {
            return Err(err(
                "You must specify at least one path after a get command.",
            ));
        };
        let dst = ops.get(1).map(|d| path_of(d));
        let mut matches =
            remote::glob(&mut self.s, &self.cwd, src).map_err(|e| remote_err("get", e))?;
        if matches.len() == 1 && matches[0].1.is_none() {
            match self.s.stat(&matches[0].0, true) {
                Ok(a) => matches[0].1 = Some(a),
                Err(SftpError::Fatal(m)) => return Err(Fail::Fatal(m)),
                Err(_) => matches.clear(),
            }
        }
        if matches.is_empty() {
            return Err(err(&format!(
                "File \"{}\" not found.",
                lossy(&absolute(&self.cwd, src))
            )));
        }
        let dst_dir = dst.as_ref().is_some_and(|d| d.is_dir());
        if matches.len() > 1 && dst.is_some() && !dst_dir {
            return Err(err(&format!(
                "Multiple source paths, but destination \"{}\" is not a directory",
                dst.as_ref()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default()
            )));
        }
        let mut failed = false;
        for (m, a) in matches {
            let base = path_of(basename(&m));
            let local = match &dst {
                None => base,
                Some(d) if dst_dir => d.join(base),
                Some(d) => d.clone(),
            };
            let is_dir = a
                .as_ref()
                .and_then(|a| a.permissions)
                .is_some_and(|p| p & 0o170000 == 0o040000);
            let r = if is_dir && recursive {
                self.get_dir(&m, &local, &o)
            } else if is_dir {
                Err(err(&format!(
                    "download \"{}\": not a regular file",
                    lossy(&m)
                )))
            } else {
                if !self.set.quiet {
                    println!("Fetching {} to {}", lossy(&m), local.display());
                }
                transfer::download(&mut self.s, &m, &local, &o).map_err(transfer_err)
            };
            match r {
                Ok(()) => {}
                Err(Fail::Fatal(f)) => return Err(Fail::Fatal(f)),
                Err(Fail::Failed) => failed = true,
            }
        }
        if failed {
            Err(Fail::Failed)
        } else {
            Ok(true)
        }
    }

    fn get_dir(&mut self, remote_dir: &[u8], local: &Path, o: &Options) -> Result<(), Fail> {
        if !self.set.quiet {
            println!("Retrieving {}", lossy(remote_dir));
        }
        match std::fs::create_dir(local) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && local.is_dir() => {}
            Err(e) => return Err(err(&format!("mkdir {}: {}", local.display(), os_text(&e)))),
        }
        let entries = self.s.read_dir(remote_dir).map_err(|e| {
            remote_err(
                &format!("Unable to open directory \"{}\"", lossy(remote_dir)),
                e,
            )
        })?;
        let mut failed = false;
        for e in entries {
            if e.filename == b"." || e.filename == b".." || e.filename.contains(&b'/') {
                continue;
            }
            let r = remote::join(remote_dir, &e.filename);
            let l = local.join(path_of(&e.filename));
            let kind = e.attrs.permissions.map(|p| p & 0o170000);
            let res = match kind {
                Some(0o040000) => self.get_dir(&r, &l, o),
                Some(0o100000) => {
                    if !self.set.quiet {
                        println!("Fetching {} to {}", lossy(&r), l.display());
                    }
                    transfer::download(&mut self.s, &r, &l, o).map_err(transfer_err)
                }
                _ => {
                    crate::log!(Info, "download \"{}\": not a regular file", lossy(&r));
                    Ok(())
                }
            };
            match res {
                Ok(()) => {}
                Err(Fail::Fatal(f)) => return Err(Fail::Fatal(f)),
                Err(Fail::Failed) => failed = true,
            }
        }
        if o.preserve {
            if let Some((_, mt)) = self
                .s
                .stat(remote_dir, true)
                .ok()
                .and_then(|a| a.atime_mtime)
            {
                let _ = set_path_times(local, mt);
            }
        }
        if failed {
            Err(Fail::Failed)
        } else {
            Ok(())
        }
    }

    fn put(&mut self, args: &[Vec<u8>], resume: bool) -> Done {
        let (fl, ops) = flags(&args[1..], "afPpr", "put")?;
        let mut o = self.set.transfer.clone();
        o.resume |= resume || fl.contains(&'a');
        o.preserve |= fl.contains(&'p') || fl.contains(&'P');
        o.fsync |= fl.contains(&'f');
        let recursive = self.set.recursive || fl.contains(&'r');
        let Some(src) = ops.first() else {
            return Err(err(
                "You must specify at least one path after a put command.",
            ));
        };
        let locals = local_glob(src);
        if locals.is_empty() {
            return Err(err(&format!("File \"{}\" not found.", lossy(src))));
        }
        let dst = ops.get(1).map(|d| absolute(&self.cwd, d));
        let dst_dir = match &dst {
            None => true,
            Some(d) => match self.s.stat(d, true) {
                Ok(a) => a.permissions.is_some_and(|m| m & 0o170000 == 0o040000),
                Err(SftpError::Fatal(m)) => return Err(Fail::Fatal(m)),
                Err(_) => false,
            },
        };
        if locals.len() > 1 && !dst_dir {
            return Err(err(&format!(
                "Multiple paths match, but destination \"{}\" is not a directory",
                lossy(dst.as_deref().unwrap_or_default())
            )));
        }
        let mut failed = false;
        for l in locals {
            let base = basename(l.as_os_str().as_bytes()).to_vec();
            let target = match &dst {
                None => remote::join(&self.cwd, &base),
                Some(d) if dst_dir => remote::join(d, &base),
                Some(d) => d.clone(),
            };
            let r = if l.is_dir() && recursive {
                self.put_dir(&l, &target, &o)
            } else if l.is_dir() {
                Err(err(&format!("Skipping non-regular file {}", l.display())))
            } else {
                if !self.set.quiet {
                    println!("Uploading {} to {}", l.display(), lossy(&target));
                }
                transfer::upload(&mut self.s, &l, &target, &o).map_err(transfer_err)
            };
            match r {
                Ok(()) => {}
                Err(Fail::Fatal(f)) => return Err(Fail::Fatal(f)),
                Err(Fail::Failed) => failed = true,
            }
        }
        if failed {
            Err(Fail::Failed)
        } else {
            Ok(true)
        }
    }

    fn put_dir(&mut self, local: &Path, remote_dir: &[u8], o: &Options) -> Result<(), Fail> {
        if !self.set.quiet {
            println!("Entering {}", local.display());
        }
        put_tree(&mut self.s, local, remote_dir, o, self.set.quiet)
    }
}

/// Uploads the directory `local` as `remote_dir` (made if missing).
pub(super) fn put_tree(
    s: &mut Sftp,
    local: &Path,
    remote_dir: &[u8],
    o: &Options,
    quiet: bool,
) -> Result<(), Fail> {
    let mode = std::fs::metadata(local)
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777)
        .unwrap_or(0o755);
    match s.mkdir(remote_dir, Some(mode | 0o700)) {
        Ok(()) => {}
        Err(SftpError::Fatal(m)) => return Err(Fail::Fatal(m)),
        Err(e) => {
            let is_dir = s
                .stat(remote_dir, true)
                .ok()
                .and_then(|a| a.permissions)
                .is_some_and(|m| m & 0o170000 == 0o040000);
            if !is_dir {
                return Err(err(&format!(
                    "Couldn't create directory \"{}\": {e}",
                    lossy(remote_dir)
                )));
            }
        }
    }
    let rd = std::fs::read_dir(local).map_err(|e| {
        err(&format!(
            "Unable to open directory \"{}\": {}",
            local.display(),
            os_text(&e)
        ))
    })?;
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    let mut failed = false;
    for l in entries {
        let name = basename(l.as_os_str().as_bytes()).to_vec();
        let r = remote::join(remote_dir, &name);
        let meta = match std::fs::symlink_metadata(&l) {
            Ok(m) => m,
            Err(_) => continue,
        };
        let res = if meta.is_dir() {
            put_tree(s, &l, &r, o, quiet)
        } else if meta.is_file() {
            if !quiet {
                println!("Uploading {} to {}", l.display(), lossy(&r));
            }
            transfer::upload(s, &l, &r, o).map_err(transfer_err)
        } else {
            crate::log!(Info, "Skipping non-regular file {}", l.display());
            Ok(())
        };
        match res {
            Ok(()) => {}
            Err(Fail::Fatal(f)) => return Err(Fail::Fatal(f)),
            Err(Fail::Failed) => failed = true,
        }
    }
    if o.preserve {
        if let Ok(m) = std::fs::metadata(local) {
            let t = |x: std::io::Result<std::time::SystemTime>| {
                x.ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_secs() as u32)
            };
            let a = Attrs {
                permissions: Some(mode),
                atime_mtime: Some((t(m.accessed()), t(m.modified()))),
                ..Attrs::default()
            };
            let _ = s.setstat(remote_dir, a);
        }
    }
    if failed {
        Err(Fail::Failed)
    } else {
        Ok(())
    }
}

fn set_path_times(p: &Path, mtime: u32) -> std::io::Result<()> {
    let c = std::ffi::CString::new(p.as_os_str().as_bytes())?;
    let ts = [
        libc::timespec {
            tv_sec: mtime as libc::time_t,
            tv_nsec: 0,
        },
        libc::timespec {
            tv_sec: mtime as libc::time_t,
            tv_nsec: 0,
        },
    ];
    // SAFETY: a valid C string and two live timespecs.
    if unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), ts.as_ptr(), 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// An ATTRS shown as an `ls -l` line when the server gave none.
fn long_of(a: &Attrs, name: &[u8]) -> Vec<u8> {
    let mode = a.permissions.unwrap_or(0);
    let kind = match mode & 0o170000 {
        0o040000 => 'd',
        0o120000 => 'l',
        _ => '-',
    };
    let mut s = String::new();
    s.push(kind);
    for (i, c) in ['r', 'w', 'x', 'r', 'w', 'x', 'r', 'w', 'x']
        .iter()
        .enumerate()
    {
        s.push(if mode & (0o400 >> i) != 0 { *c } else { '-' });
    }
    let (u, g) = a.uid_gid.unwrap_or((0, 0));
    let mut out = format!("{s}    ? {u:<8} {g:<8} {:>8} ", a.size.unwrap_or(0)).into_bytes();
    out.extend_from_slice(name);
    out
}

fn lcd(args: &[Vec<u8>]) -> Done {
    let p = arg(args, 1, "lcd")?;
    std::env::set_current_dir(path_of(p)).map_err(|e| {
        err(&format!(
            "Couldn't change local directory to \"{}\": {}",
            lossy(p),
            os_text(&e)
        ))
    })?;
    Ok(true)
}

fn arg<'a>(args: &'a [Vec<u8>], i: usize, name: &str) -> Result<&'a [u8], Fail> {
    // Flags are not taken by these commands; the operands are positional.
    args.get(i)
        .map(Vec::as_slice)
        .ok_or_else(|| err(&format!("You must specify a path after a {name} command.")))
}

/// A command's flags (`-x`, bundled) before its operands.
fn flags(args: &[Vec<u8>], spec: &str, name: &str) -> Result<(Vec<char>, Vec<Vec<u8>>), Fail> {
    let mut fl = Vec::new();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a.len() < 2 || a.first() != Some(&b'-') {
            break;
        }
        i += 1;
        if a.as_slice() == b"--" {
            break;
        }
        for c in a.iter().skip(1) {
            let c = *c as char;
            if !spec.contains(c) {
                return Err(err(&format!("{name}: Invalid flag -{c}")));
            }
            fl.push(c);
        }
    }
    Ok((fl, args.get(i..).unwrap_or_default().to_vec()))
}

/// Local paths a pattern names (glob(3)); the pattern itself when it has
/// no glob characters and exists.
fn local_glob(p: &[u8]) -> Vec<PathBuf> {
    if !remote::has_glob(p) {
        let path = path_of(p);
        return if std::fs::symlink_metadata(&path).is_ok() {
            vec![path]
        } else {
            Vec::new()
        };
    }
    let Ok(c) = std::ffi::CString::new(p) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    // SAFETY: glob fills the zeroed glob_t we own; globfree releases it;
    // gl_pathv holds gl_pathc valid C strings in between.
    unsafe {
        let mut g: libc::glob_t = std::mem::zeroed();
        if libc::glob(c.as_ptr(), 0, None, &mut g) == 0 {
            for i in 0..g.gl_pathc {
                let s = *g.gl_pathv.add(i);
                if !s.is_null() {
                    out.push(path_of(std::ffi::CStr::from_ptr(s).to_bytes()));
                }
            }
        }
        libc::globfree(&mut g);
    }
    out
}

/// Splits a command line into words: blanks separate, '...' and "..."
/// quote, a backslash escapes the next byte (sftp's makeargv).
fn tokenize(line: &[u8]) -> Result<Vec<Vec<u8>>, &'static str> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    let mut in_word = false;
    let mut quote: Option<u8> = None;
    let mut it = line.iter().copied();
    while let Some(c) = it.next() {
        match (quote, c) {
            (_, b'\\') if quote != Some(b'\'') => {
                let Some(n) = it.next() else {
                    return Err("Unterminated escape sequence");
                };
                cur.push(n);
                in_word = true;
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, b'\'' | b'"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, b' ' | b'\t' | b'\n' | b'\r') => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err("Unterminated quoted argument");
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

const HELP: &str = "Available commands:
bye                                Quit sftp
cd path                            Change remote directory to 'path'
chgrp grp path                     Change group of file 'path' to 'grp'
chmod mode path                    Change permissions of file 'path' to 'mode'
chown own path                     Change owner of file 'path' to 'own'
df [-hi] [path]                    Display statistics for current directory or
                                   filesystem containing 'path'
exit                               Quit sftp
get [-afpPr] remote [local]        Download file
reget [-fpPr] remote [local]       Resume download file
reput [-fpPr] [local] remote       Resume upload file
help                               Display this help text
lcd path                           Change local directory to 'path'
lmkdir path                        Create local directory
ln [-s] oldpath newpath            Link remote file (-s for symlink)
lpwd                               Print local working directory
ls [-1afhlnrSt] [path]             Display remote directory listing
mkdir path                         Create remote directory
progress                           Toggle display of progress meter
put [-afpPr] [local [remote]]      Upload file
pwd                                Display remote working directory
quit                               Quit sftp
rename oldpath newpath             Rename remote file
rm path                            Delete remote file
rmdir path                         Remove remote directory
symlink oldpath newpath            Symlink remote file
version                            Show SFTP version
!command                           Execute 'command' in local shell
!                                  Escape to local shell
?                                  Synonym for help";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_as_sftp_splits_them() {
        let w = tokenize(br#"put "a b" c\ d 'e\f' "#).unwrap();
        assert_eq!(
            w,
            vec![
                b"put".to_vec(),
                b"a b".to_vec(),
                b"c d".to_vec(),
                b"e\\f".to_vec()
            ]
        );
        assert!(tokenize(b"get \"x").is_err());
        assert_eq!(tokenize(b"get \xff").unwrap()[1], b"\xff");
    }
}
