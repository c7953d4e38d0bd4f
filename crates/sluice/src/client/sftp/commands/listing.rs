//! sftp's `ls` and its lines as OpenSSH's sftp prints them: sorted by name,
//! size (-S) or time (-t), unsorted (-f), reversed (-r); long lines (-l)
//! built from the ATTRS (`ls -l`'s columns, `?` for the link count the
//! protocol does not carry), with names from users-groups-by-id@openssh.com
//! when the server offers it, numeric ids with -n, sizes in K/M/G with -h;
//! the server's own long names otherwise. `df -h`'s sizes use the same
//! scaling ([`fmt_scaled`]).

use super::common::*;
use super::words::flags;
use std::collections::HashMap;

/// One name to list.
struct Item {
    /// What is printed: the path as given, or the directory's entry.
    shown: Vec<u8>,
    /// The server's `ls -l` line (directory entries only).
    longname: Vec<u8>,
    attrs: Attrs,
}

/// The server's names for ids (users-groups-by-id@openssh.com).
#[derive(Default)]
struct Names {
    users: HashMap<u32, Vec<u8>>,
    groups: HashMap<u32, Vec<u8>>,
}

impl Shell {
    pub(super) fn ls(&mut self, args: &[Vec<u8>]) -> Done {
        let (fl, ops) = flags(&args[1..], "1afhlnrSt", "ls")?;
        let has = |c| fl.contains(&c);
        let long = has('l') || has('n');
        let given = ops.first().cloned();
        let p = given.clone().unwrap_or_default();
        let abs = absolute(&self.cwd, &p);
        let mut items = Vec::new();
        // Directory entries may print the server's long names; a path or
        // a glob's matches are always formatted here, as sftp does.
        let mut entries = false;
        if !remote::has_glob(&abs) {
            let a = self.s.stat(&abs, true).map_err(|e| match e {
                SftpError::Remote {
                    code: Status::NO_SUCH_FILE,
                    ..
                } => err(&format!("Can't ls: \"{}\" not found", lossy(&abs))),
                e => remote_err(&format!("Can't ls: \"{}\"", lossy(&abs)), e),
            })?;
            if is_dir(&a) {
                entries = true;
                let list = self
                    .s
                    .read_dir(&abs)
                    .map_err(|e| remote_err("Couldn't read directory", e))?;
                for e in list {
                    if !has('a') && e.filename.first() == Some(&b'.') {
                        continue;
                    }
                    let shown = match &given {
                        Some(g) => remote::join(g, &e.filename),
                        None => e.filename,
                    };
                    items.push(Item {
                        shown,
                        longname: e.longname,
                        attrs: e.attrs,
                    });
                }
            } else {
                items.push(Item {
                    shown: p.clone(),
                    longname: Vec::new(),
                    attrs: a,
                });
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
                items.push(Item {
                    shown,
                    longname: Vec::new(),
                    attrs: a.unwrap_or_default(),
                });
            }
        }
        sort(&mut items, &fl);
        let mut out = std::io::stdout().lock();
        if long {
            let by_id = self.s.has("users-groups-by-id@openssh.com", "1");
            let names = if by_id && !has('n') {
                self.names(&items)?
            } else {
                Names::default()
            };
            let own = has('n') || has('h') || by_id || !entries;
            for it in &items {
                let line = if own || it.longname.is_empty() {
                    ls_line(&it.shown, &it.attrs, has('h'), &names)
                } else {
                    it.longname.clone()
                };
                let _ = out.write_all(&printable(&line));
                let _ = out.write_all(b"\n");
            }
            return Ok(true);
        }
        if has('1') {
            for it in &items {
                let _ = out.write_all(&printable(&it.shown));
                let _ = out.write_all(b"\n");
            }
            return Ok(true);
        }
        columns(&mut out, &items);
        Ok(true)
    }

    /// The server's names for the owners and groups of `items`, in one
    /// request.
    fn names(&mut self, items: &[Item]) -> Result<Names, Fail> {
        let mut uids: Vec<u32> = items
            .iter()
            .filter_map(|i| i.attrs.uid_gid.map(|(u, _)| u))
            .collect();
        let mut gids: Vec<u32> = items
            .iter()
            .filter_map(|i| i.attrs.uid_gid.map(|(_, g)| g))
            .collect();
        uids.sort_unstable();
        uids.dedup();
        gids.sort_unstable();
        gids.dedup();
        if uids.is_empty() && gids.is_empty() {
            return Ok(Names::default());
        }
        let (u, g) = match self.s.users_groups_by_id(uids.clone(), gids.clone()) {
            Ok(r) => r,
            Err(e) if e.is_fatal() => return Err(Fail::Fatal(e)),
            // Names are a nicety: ids are shown instead.
            Err(_) => return Ok(Names::default()),
        };
        let known = |ids: Vec<u32>, names: Vec<Vec<u8>>| {
            ids.into_iter()
                .zip(names)
                .filter(|(_, n)| !n.is_empty())
                .collect()
        };
        Ok(Names {
            users: known(uids, u),
            groups: known(gids, g),
        })
    }
}

fn is_dir(a: &Attrs) -> bool {
    a.permissions.is_some_and(|m| m & 0o170000 == 0o040000)
}

/// sftp's order: by name unless -f (as the server sent them), -S (larger
/// first) or -t (newer first); -r reverses.
fn sort(items: &mut [Item], fl: &[char]) {
    if fl.contains(&'f') {
        return;
    }
    items.sort_by(|a, b| a.shown.cmp(&b.shown));
    if fl.contains(&'S') {
        items.sort_by_key(|i| std::cmp::Reverse(i.attrs.size.unwrap_or(0)));
    } else if fl.contains(&'t') {
        items.sort_by_key(|i| std::cmp::Reverse(i.attrs.atime_mtime.map_or(0, |t| t.1)));
    }
    if fl.contains(&'r') {
        items.reverse();
    }
}

/// An `ls -l` line for a remote file, in OpenSSH's columns: mode, `?` for
/// the link count, owner and group (names when known, else ids), size
/// (scaled with `si`), modification time, name.
fn ls_line(name: &[u8], a: &Attrs, si: bool, names: &Names) -> Vec<u8> {
    let (uid, gid) = a.uid_gid.unwrap_or((0, 0));
    let user = names
        .users
        .get(&uid)
        .map_or_else(|| uid.to_string(), |n| lossy(n));
    let group = names
        .groups
        .get(&gid)
        .map_or_else(|| gid.to_string(), |n| lossy(n));
    let size = a.size.unwrap_or(0);
    let size = if si {
        format!("{:>8}", fmt_scaled(size))
    } else {
        format!("{size:>8}")
    };
    let mtime = a.atime_mtime.map_or(0, |t| t.1);
    let mut out = format!(
        "{} {:>4} {user:<8} {group:<8} {size} {} ",
        crate::ls_style::mode_string(a.permissions.unwrap_or(0)),
        "?",
        crate::ls_style::mtime_string(i64::from(mtime))
    )
    .into_bytes();
    out.extend_from_slice(name);
    out
}

/// fmt_scaled(3) as sftp uses it: bytes below 1 KiB as `123B`, else one
/// decimal below 100 of a unit (`4.0K`, `20.6G`) and none above (`252G`).
pub(super) fn fmt_scaled(n: u64) -> String {
    const UNITS: [char; 7] = ['B', 'K', 'M', 'G', 'T', 'P', 'E'];
    let mut i = 0;
    while i + 1 < UNITS.len() && n / 1024 >= 1u64 << (10 * i) {
        i += 1;
    }
    if i == 0 {
        return if n == 0 { "0B".into() } else { format!("{n}B") };
    }
    let scale = 1u64 << (10 * i);
    let mut number = n / scale;
    let mut fract = (10 * ((n % scale) >> (10 * (i - 1))) + 512) / 1024;
    if fract >= 10 {
        number += 1;
        fract = 0;
    }
    if number >= 100 {
        if fract >= 5 {
            number += 1;
        }
        format!("{number}{}", UNITS[i])
    } else {
        format!("{number}.{fract}{}", UNITS[i])
    }
}

/// A server's name for the terminal: control bytes shown as `?`, so a
/// name cannot move the cursor or send escape sequences (other bytes,
/// UTF-8 or not, go through).
pub(super) fn printable(b: &[u8]) -> Vec<u8> {
    b.iter()
        .map(|&c| if c < 0x20 || c == 0x7f { b'?' } else { c })
        .collect()
}

/// Row-major columns of equal width, as sftp prints them.
fn columns(out: &mut impl Write, items: &[Item]) {
    let width = crate::client::sftp::progress::terminal_width();
    let m = items.iter().map(|it| it.shown.len()).max().unwrap_or(0);
    let columns = (width / (m + 2)).max(1);
    let colspace = width / columns;
    let mut c = 1;
    for it in items {
        let _ = out.write_all(&printable(&it.shown));
        if c >= columns {
            let _ = out.write_all(b"\n");
            c = 1;
        } else {
            let _ = out.write_all(&vec![b' '; colspace.saturating_sub(it.shown.len())]);
            c += 1;
        }
    }
    if c != 1 {
        let _ = out.write_all(b"\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaled_as_fmt_scaled_prints() {
        assert_eq!(fmt_scaled(0), "0B");
        assert_eq!(fmt_scaled(3), "3B");
        assert_eq!(fmt_scaled(1023), "1023B");
        assert_eq!(fmt_scaled(1024), "1.0K");
        assert_eq!(fmt_scaled(1500), "1.5K");
        assert_eq!(fmt_scaled(4096), "4.0K");
        assert_eq!(fmt_scaled(1024 * 1024 - 1), "1024K");
        assert_eq!(fmt_scaled(20_600 * 1024 * 1024), "20.1G");
        assert_eq!(fmt_scaled(252 * (1 << 30)), "252G");
        assert_eq!(fmt_scaled(u64::MAX), "16.0E");
    }

    #[test]
    fn long_lines_in_sftps_columns() {
        let a = Attrs {
            size: Some(4096),
            uid_gid: Some((0, 1000)),
            permissions: Some(0o100640),
            atime_mtime: Some((0, 0)),
            ..Attrs::default()
        };
        let mut names = Names::default();
        names.users.insert(0, b"root".to_vec());
        let l = String::from_utf8(ls_line(b"d/f", &a, true, &names)).unwrap();
        assert!(
            l.starts_with("-rw-r-----    ? root     1000         4.0K "),
            "{l}"
        );
        assert!(l.ends_with(" d/f"), "{l}");
        let l = String::from_utf8(ls_line(b"f", &a, false, &Names::default())).unwrap();
        assert!(
            l.starts_with("-rw-r-----    ? 0        1000         4096 "),
            "{l}"
        );
    }
}
