//! sftp's commands on remote names: rm, mkdir/rmdir helpers, chmod,
//! chown/chgrp, ln, df, cd, rename; and the progress toggle.

use super::common::*;
use super::listing::fmt_scaled;
use super::words::{arg, flags};

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
                crate::outln!("Removing {}", lossy(&m));
            }
            if let Err(e) = self.s.remove(&m) {
                if e.is_fatal() {
                    return Err(Fail::Fatal(e));
                }
                crate::errln!("remote delete {}: {e}", lossy(&m));
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
                    crate::outln!("Changing mode on {}", lossy(&m));
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
        let (fl, ops) = flags(&args[1..], "hi", "df")?;
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
        // sftp's columns for each form, byte for byte.
        let pct = |used: u64, all: u64| used.saturating_mul(100).checked_div(all).unwrap_or(0);
        let used = v.blocks.saturating_sub(v.bfree);
        if fl.contains(&'i') {
            crate::outln!("     Inodes        Used       Avail      (root)    %Capacity");
            let iused = v.files.saturating_sub(v.ffree);
            crate::outln!(
                "{:>11} {:>11} {:>11} {:>11}         {:>3}%",
                v.files,
                iused,
                v.favail,
                v.ffree,
                pct(iused, v.files)
            );
        } else if fl.contains(&'h') {
            let b = |blocks: u64| fmt_scaled(v.frsize.saturating_mul(blocks));
            crate::outln!("    Size     Used    Avail   (root)    %Capacity");
            crate::outln!(
                "{:>7}B {:>7}B {:>7}B {:>7}B         {:>3}%",
                b(v.blocks),
                b(used),
                b(v.bavail),
                b(v.bfree),
                pct(used, v.blocks)
            );
        } else {
            let kib = |blocks: u64| v.frsize.saturating_mul(blocks) / 1024;
            crate::outln!("        Size         Used        Avail       (root)    %Capacity");
            crate::outln!(
                "{:>12} {:>12} {:>12} {:>12}         {:>3}%",
                kib(v.blocks),
                kib(used),
                kib(v.bavail),
                kib(v.bfree),
                pct(used, v.blocks)
            );
        }
        Ok(true)
    }

    /// copy/cp: a server-side copy (copy-data), as sftp makes it: a regular
    /// file only, its permission bits (not set-id) on the new file.
    pub(super) fn copy(&mut self, args: &[Vec<u8>]) -> Done {
        let (from, to) = (arg(args, 1, "copy")?, arg(args, 2, "copy")?);
        let (from, to) = (absolute(&self.cwd, from), absolute(&self.cwd, to));
        if !self.s.has("copy-data", "1") {
            return Err(err("Server does not support copy-data extension"));
        }
        let a = self
            .s
            .stat(&from, true)
            .map_err(|e| remote_err(&format!("stat \"{}\"", lossy(&from)), e))?;
        let mode = match a.permissions {
            Some(m) if m & 0o170000 != 0o100000 => {
                return Err(err(&format!(
                    "Cannot copy non-regular file: {}",
                    lossy(&from)
                )))
            }
            Some(m) => m & 0o777,
            None => 0o666,
        };
        let src = self
            .s
            .open_read(&from)
            .map_err(|e| remote_err(&format!("remote open(\"{}\")", lossy(&from)), e))?;
        let attrs = Attrs {
            permissions: Some(mode),
            ..Attrs::default()
        };
        let flags = pflags::WRITE | pflags::CREAT | pflags::TRUNC;
        let dst = match self.s.open(&to, flags, attrs) {
            Ok(h) => h,
            Err(e) => {
                let _ = self.s.close(&src);
                return Err(remote_err(&format!("remote open(\"{}\")", lossy(&to)), e));
            }
        };
        let r = self.s.copy_data(&src, &dst);
        let c1 = self.s.close(&src);
        let c2 = self.s.close(&dst);
        r.map_err(|e| {
            remote_err(
                &format!(
                    "Couldn't copy file \"{}\" to \"{}\"",
                    lossy(&from),
                    lossy(&to)
                ),
                e,
            )
        })?;
        c1.and(c2).map_err(|e| remote_err("close", e))?;
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

    pub(super) fn rename(&mut self, args: &[Vec<u8>]) -> Done {
        let (from, to) = (arg(args, 1, "rename")?, arg(args, 2, "rename")?);
        let (f, t) = (absolute(&self.cwd, from), absolute(&self.cwd, to));
        self.s.rename(&f, &t, true).map_err(|e| {
            remote_err(
                &format!("remote rename \"{}\" to \"{}\"", lossy(&f), lossy(&t)),
                e,
            )
        })?;
        Ok(true)
    }

    pub(super) fn chmod(&mut self, args: &[Vec<u8>]) -> Done {
        let m = arg(args, 1, "chmod")?;
        let mode = std::str::from_utf8(m)
            .ok()
            .and_then(|m| u32::from_str_radix(m, 8).ok())
            .filter(|m| *m <= 0o7777)
            .ok_or_else(|| err("You must supply a numeric argument to the chmod command."))?;
        self.setstat_glob(args, "chmod", |a| a.permissions = Some(mode))
    }

    /// chown or chgrp (`which`) with its numeric id.
    pub(super) fn chown_to(&mut self, args: &[Vec<u8>], which: &str) -> Done {
        let n = arg(args, 1, which)?;
        let id: u32 = std::str::from_utf8(n)
            .ok()
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| {
                err(&format!(
                    "You must supply a numeric argument to the {which} command."
                ))
            })?;
        self.chown(args, which, id)
    }

    pub(super) fn toggle_progress(&mut self) -> Done {
        self.set.transfer.progress = !self.set.transfer.progress;
        let how = if self.set.transfer.progress {
            "en"
        } else {
            "dis"
        };
        crate::outln!("Progress meter {how}abled");
        Ok(true)
    }
}
