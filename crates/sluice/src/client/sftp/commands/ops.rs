//! sftp's commands on remote names: rm, mkdir/rmdir helpers, chmod,
//! chown/chgrp, ln, df, cd, ls; and lcd.

use super::*;

impl Shell {
    pub(super) fn one_path(
        &mut self,
        args: &[Vec<u8>],
        name: &str,
        f: impl FnOnce(&mut Shell, &[u8]) -> Result<(), Fail>,
    ) -> Done {
        let p = absolute(&self.cwd, arg(args, 1, name)?);
        f(self, &p)?;
        Ok(true)
    }

    pub(super) fn rm(&mut self, args: &[Vec<u8>]) -> Done {
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

    pub(super) fn setstat_glob(
        &mut self,
        args: &[Vec<u8>],
        name: &str,
        set: impl Fn(&mut Attrs),
    ) -> Done {
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

    pub(super) fn chown(&mut self, args: &[Vec<u8>], which: &str, id: u32) -> Done {
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

    pub(super) fn ln(&mut self, args: &[Vec<u8>]) -> Done {
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

    pub(super) fn df(&mut self, args: &[Vec<u8>]) -> Done {
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
        let cap = used.saturating_mul(100).checked_div(v.blocks).unwrap_or(0);
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

    pub(super) fn cd(&mut self, args: &[Vec<u8>]) -> Done {
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
        if a.permissions.is_none_or(|m| m & 0o170000 != 0o040000) {
            return Err(err(&format!(
                "Can't change directory: \"{}\" is not a directory",
                lossy(&target)
            )));
        }
        self.cwd = target;
        Ok(true)
    }

    pub(super) fn ls(&mut self, args: &[Vec<u8>]) -> Done {
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
                let _ = out.write_all(&printable(if long && !l.is_empty() { l } else { n }));
                let _ = out.write_all(b"\n");
            }
            return Ok(true);
        }
        // Row-major columns, as sftp prints them.
        let width = crate::client::sftp::progress::terminal_width();
        let m = names.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
        let colspace = m + 2;
        let columns = (width / colspace.max(1)).max(1);
        let mut c = 1;
        for (n, _) in &names {
            let _ = out.write_all(&printable(n));
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
}

/// An ATTRS shown as an `ls -l` line when the server gave none.
pub(super) fn long_of(a: &Attrs, name: &[u8]) -> Vec<u8> {
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

pub(super) fn lcd(args: &[Vec<u8>]) -> Done {
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

/// A server's name for the terminal: control bytes shown as `?`, so a
/// name cannot move the cursor or send escape sequences (other bytes,
/// UTF-8 or not, go through).
pub(super) fn printable(b: &[u8]) -> Vec<u8> {
    b.iter()
        .map(|&c| if c < 0x20 || c == 0x7f { b'?' } else { c })
        .collect()
}
