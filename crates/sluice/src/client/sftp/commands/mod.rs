//! sftp(1)'s commands, from a batch file (`-b`) or the prompt: get/put
//! (and reget/reput) with -a -f -p -r, ls, cd, lcd, pwd, lpwd, mkdir,
//! lmkdir, lls, lumask, rmdir, rm, rename, copy/cp, chmod, chown, chgrp,
//! ln/symlink, df, version, progress, help, `!command`, bye/quit/exit. Messages and exit
//! codes are OpenSSH's: in batch mode the first failing command ends the
//! run with exit 1 unless its line starts with `-`.

mod common;
mod first;
mod line_edit;
mod listing;
mod local;
mod ops;
mod settings;
mod tokens;
mod words;
mod xfer;

pub use common::Fail;
pub use settings::Settings;

use super::session::{EarlyOpen, SftpResult};
use super::Link;
use common::*;
use local::{lcd, lls, lmkdir, lpwd, lumask};
use std::ffi::OsStr;
use std::io::BufRead;
use std::os::unix::ffi::OsStrExt;
use tokens::tokenize;
use words::HELP;
use xfer::put_tree;

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

/// Runs sftp over `link`; returns the exit code.
pub fn main(link: Link, set: Settings) -> i32 {
    let mut stdin = Vec::new();
    let guess = first::guess(&set, &mut stdin);
    let firsts = guess.as_ref().map(first::Guess::first).unwrap_or_default();
    let s = match Sftp::init_with(link, firsts) {
        Ok(s) => s,
        Err(e) => {
            crate::errln!("{e}");
            return 255;
        }
    };
    let mut sh = Shell {
        s,
        cwd: b"/".to_vec(),
        set,
        guess,
        early: None,
        stdin,
    };
    let code = sh.run();
    sh.drop_early();
    sh.s.finish();
    code
}

impl Shell {
    fn run(&mut self) -> i32 {
        match self.s.start_dir() {
            Ok(p) => self.cwd = p,
            Err(e) if e.is_fatal() => {
                crate::errln!("{e}");
                return 255;
            }
            Err(e) => {
                crate::errln!("Need cwd: {e}");
                return 1;
            }
        }
        if let Some(g) = self.guess.take() {
            self.early = first::answers(&mut self.s, &self.cwd, &g);
        }
        if let Some(p) = self.set.start_path.clone().filter(|p| !p.is_empty()) {
            let r = self.start_at(p.as_bytes());
            self.drop_early();
            match r {
                Ok(Some(code)) => return code,
                Ok(None) => {}
                Err(Fail::Fatal(e)) => {
                    crate::errln!("{e}");
                    return 255;
                }
                Err(Fail::Failed) => return 1,
            }
        }
        let batch = self.set.batch.clone();
        let interactive = batch.is_none() && crate::client::tty::stdin_is_tty();
        let mut input: Box<dyn BufRead> = match batch.as_deref() {
            None | Some("-") => {
                let read = std::io::Cursor::new(std::mem::take(&mut self.stdin));
                Box::new(std::io::BufReader::new(read.chain(std::io::stdin())))
            }
            Some(f) => match std::fs::File::open(f) {
                Ok(f) => Box::new(std::io::BufReader::new(f)),
                Err(e) => {
                    crate::errln!("{f} ({})", os_text(&e));
                    return 1;
                }
            },
        };
        let mut line = Vec::new();
        let mut editor = line_edit::Editor::default();
        loop {
            if interactive {
                match editor.read_line("sftp> ") {
                    Some(l) => line = l,
                    None => {
                        crate::outln!();
                        return 0;
                    }
                }
            } else {
                line.clear();
                match input.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return 0,
                    Ok(_) => {}
                }
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
            let r = self.dispatch(text);
            self.drop_early();
            match r {
                Ok(true) => {}
                Ok(false) => return 0,
                Err(Fail::Fatal(e)) => {
                    crate::errln!("{e}");
                    return 255;
                }
                Err(Fail::Failed) if batch.is_some() && !ignore => return 1,
                Err(Fail::Failed) => {}
            }
        }
    }

    /// The answers to the first command's requests, if they were for
    /// `stat_path` and an open of a path `open_ok` accepts; taken.
    fn take_early(
        &mut self,
        stat_path: &[u8],
        open_ok: impl Fn(&[u8]) -> bool,
    ) -> Option<(SftpResult<Attrs>, EarlyOpen)> {
        let e = self
            .early
            .take_if(|e| e.stat_path == stat_path && open_ok(&e.open.path))?;
        Some((e.stat, e.open))
    }

    /// Drops what the first command did not take.
    fn drop_early(&mut self) {
        if let Some(e) = self.early.take() {
            self.s.discard_early_open(e.open);
        }
    }

    /// The destination's path: cd into a directory, or fetch a file into
    /// the local directory and end (Some(exit code)).
    fn start_at(&mut self, p: &[u8]) -> Result<Option<i32>, Fail> {
        let abs = absolute(&self.cwd, p);
        // The STAT went with the session's first requests (first.rs); the
        // get below takes it with the open.
        let known = match &self.early {
            Some(e) if e.stat_path == abs => Some(e.stat.clone()),
            _ => None,
        };
        let stat = match known {
            Some(r) => r,
            None => self.s.stat(&abs, true),
        };
        let is_dir = match stat {
            Ok(a) => a.permissions.is_some_and(|m| m & 0o170000 == 0o040000),
            Err(e) if e.is_fatal() => return Err(Fail::Fatal(e)),
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
                crate::outln!("Remote working directory: {}", lossy(&self.cwd));
                Ok(true)
            }
            b"lpwd" => lpwd(),
            b"mkdir" => self.one_path(&args, "mkdir", |sh, p| {
                sh.s.mkdir(p, Some(0o777))
                    .map_err(|e| remote_err(&format!("remote mkdir \"{}\"", lossy(p)), e))
            }),
            b"lmkdir" => lmkdir(&args),
            b"rmdir" => self.one_path(&args, "rmdir", |sh, p| {
                sh.s.rmdir(p)
                    .map_err(|e| remote_err(&format!("remote rmdir \"{}\"", lossy(p)), e))
            }),
            b"rm" => self.rm(&args),
            b"rename" => self.rename(&args),
            b"chmod" => self.chmod(&args),
            b"chown" => self.chown_to(&args, "chown"),
            b"chgrp" => self.chown_to(&args, "chgrp"),
            b"ln" | b"symlink" => self.ln(&args),
            b"copy" | b"cp" => self.copy(&args),
            // The rest of the line goes to the local ls as typed.
            b"lls" | b"ldir" => self.shell(&lls(line.get(cmd.len()..).unwrap_or_default())),
            b"lumask" => lumask(&args),
            b"df" => self.df(&args),
            b"version" => {
                crate::outln!("SFTP protocol version 3");
                Ok(true)
            }
            b"progress" => self.toggle_progress(),
            b"help" | b"?" => {
                crate::outln!("{HELP}");
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
}
