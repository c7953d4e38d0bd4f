//! sftp's get, put (reget, reput) and their recursive forms over
//! transfer.rs: destinations as sftp picks them, "Fetching"/"Uploading"
//! lines, directory trees.

use super::common::*;
use super::words::{flags, local_glob};
use crate::client::sftp::many::{self, Downloads, Uploads};
use crate::client::sftp::progress::Tally;
use crate::client::sftp::resume;
use crate::client::sftp::session::{Behind, EarlyOpen, OpenAhead};
use crate::client::sftp::tree::{self, Visit};

impl Shell {
    pub(super) fn get(&mut self, args: &[Vec<u8>], resume: bool) -> Done {
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
        // A STAT (not a listing's entry): the download need not ask again.
        let (stated, mut pre) = if matches.len() == 1 && matches[0].1.is_none() {
            self.stat_one(&mut matches, &o)?
        } else {
            (false, None)
        };
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
                    crate::outln!("Fetching {} to {}", lossy(&m), local.display());
                }
                let known = a.filter(|_| stated);
                let opened = pre.take();
                transfer::download_opened(&mut self.s, &m, known, opened, &local, &o)
                    .map_err(transfer_err)
            };
            match r {
                Ok(()) => {}
                Err(Fail::Fatal(f)) => return Err(Fail::Fatal(f)),
                Err(Fail::Failed) => failed = true,
            }
        }
        // Opened on a guess that did not hold (a directory).
        if let Some(e) = pre.take() {
            self.s.discard_early_open(e);
        }
        if failed {
            Err(Fail::Failed)
        } else {
            Ok(true)
        }
    }

    /// STATs the one match of a get (unless the listing gave its
    /// attributes) and opens it in the same round trip, on the guess that
    /// it is a file (used by the download, or dropped): whether it was
    /// stated, and the open. A match that is not there is dropped.
    #[allow(clippy::type_complexity)]
    fn stat_one(
        &mut self,
        matches: &mut Vec<(Vec<u8>, Option<Attrs>)>,
        o: &Options,
    ) -> Result<(bool, Option<EarlyOpen>), Fail> {
        let open = OpenAhead {
            path: matches[0].0.clone(),
            flags: sluice_proto::sftp::pflags::READ,
            attrs: Attrs::default(),
        };
        // Its first bytes are asked for behind the open (sluiced), unless
        // -l paces every byte or -B sizes the READs.
        let behind = match o.limit.is_none() && o.buffer == 0 && !o.resume {
            true => Behind::Read,
            false => Behind::Nothing,
        };
        // Asked with the session's first requests already (first.rs)?
        let path = open.path.clone();
        let asked = match self.take_early(&path, |p| p == path) {
            Some(x) => Ok(x),
            None => self.s.stat_with_open(&open.path, &open, behind),
        };
        let mut pre = None;
        let stat = match asked {
            Ok((a, e)) => {
                pre = Some(e);
                a
            }
            Err(e) => Err(e),
        };
        match stat {
            Ok(a) => {
                matches[0].1 = Some(a);
                Ok((true, pre))
            }
            Err(e) if e.is_fatal() => Err(Fail::Fatal(e)),
            Err(_) => {
                if let Some(e) = pre.take() {
                    self.s.discard_early_open(e);
                }
                matches.clear();
                Ok((false, None))
            }
        }
    }

    /// Fetches `remote_dir` as `local`; small files many at once
    /// (many/).
    pub(super) fn get_dir(
        &mut self,
        remote_dir: &[u8],
        local: &Path,
        o: &Options,
    ) -> Result<(), Fail> {
        let tally = Tally::new(o.progress);
        let o = &Options {
            tally: Some(tally.clone()),
            ..o.clone()
        };
        let mut batch = Downloads::new(o);
        let mut v = GetTree {
            quiet: self.set.quiet,
            o,
        };
        let walked = tree::walk_down(&mut self.s, &mut batch, remote_dir, local, &mut v);
        let flushed = batch.drain(&mut self.s, &mut |m| crate::errln!("{m}"));
        tally.total();
        match (walked, flushed) {
            (Err(f), _) | (_, Err(f)) => Err(Fail::Fatal(f)),
            (Ok(false), _) | (_, Ok(false)) => Err(Fail::Failed),
            _ => Ok(()),
        }
    }

    pub(super) fn put(&mut self, args: &[Vec<u8>], resume: bool) -> Done {
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
        // One file to a named destination: the partial name the upload
        // would write is opened with the destination's STAT, on the guess
        // that it is not a directory (used below, or dropped).
        let guess = match (&dst, locals.as_slice()) {
            (Some(d), [l]) if !o.resume => transfer::early_part(l, d),
            _ => None,
        };
        // Its first bytes go right behind that open where the server takes
        // a handle we name (sluiced), unless -l paces every byte or -B
        // sizes the WRITEs.
        let first = match (&guess, locals.as_slice()) {
            (Some(_), [l]) if o.limit.is_none() && o.buffer == 0 => std::fs::File::open(l).ok(),
            _ => None,
        };
        let behind = match &first {
            Some(f) => Behind::Write(f),
            None => Behind::Nothing,
        };
        let mut pre = None;
        let dst_dir = match &dst {
            None => true,
            Some(d) => {
                let early = self.take_early(d, |p| p == resume::part_beside(d).as_slice());
                let stat = match (&guess, early) {
                    // Asked with the session's first requests (first.rs).
                    (_, Some((st, e))) => {
                        pre = Some(e);
                        st
                    }
                    (Some(g), None) => match self.s.stat_with_open(d, g, behind) {
                        Ok((st, e)) => {
                            pre = Some(e);
                            st
                        }
                        Err(e) => Err(e),
                    },
                    (None, None) => self.s.stat(d, true),
                };
                match stat {
                    Ok(a) => a.permissions.is_some_and(|m| m & 0o170000 == 0o040000),
                    Err(e) if e.is_fatal() => return Err(Fail::Fatal(e)),
                    Err(_) => false,
                }
            }
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
                    crate::outln!("Uploading {} to {}", l.display(), lossy(&target));
                }
                transfer::upload_opened(&mut self.s, &l, &target, &o, pre.take())
                    .map_err(transfer_err)
            };
            match r {
                Ok(()) => {}
                Err(Fail::Fatal(f)) => return Err(Fail::Fatal(f)),
                Err(Fail::Failed) => failed = true,
            }
        }
        if let Some(e) = pre.take() {
            self.s.discard_early_open(e);
        }
        if failed {
            Err(Fail::Failed)
        } else {
            Ok(true)
        }
    }

    pub(super) fn put_dir(
        &mut self,
        local: &Path,
        remote_dir: &[u8],
        o: &Options,
    ) -> Result<(), Fail> {
        if !self.set.quiet {
            crate::outln!("Entering {}", local.display());
        }
        let tally = Tally::new(o.progress);
        let o = Options {
            tally: Some(tally.clone()),
            ..o.clone()
        };
        let r = put_tree(&mut self.s, local, remote_dir, &o, self.set.quiet);
        tally.total();
        r
    }
}

/// Uploads the directory `local` as `remote_dir` (made if missing); small
/// files go many at once (many.rs), large ones one by one.
pub(super) fn put_tree(
    s: &mut Sftp,
    local: &Path,
    remote_dir: &[u8],
    o: &Options,
    quiet: bool,
) -> Result<(), Fail> {
    let mut batch = Uploads::new(o);
    let walked = walk_up(s, &mut batch, local, remote_dir, o, quiet);
    let flushed = batch.drain(s, &mut |m| crate::errln!("{m}"));
    match (walked, flushed) {
        (Err(Fail::Fatal(f)), _) | (_, Err(f)) => Err(Fail::Fatal(f)),
        (Err(Fail::Failed), _) | (_, Ok(false)) => Err(Fail::Failed),
        _ => Ok(()),
    }
}

/// sftp's steps in `get -r`: "Retrieving" and "Fetching" lines (unless
/// -q), directory times with -p.
struct GetTree<'a> {
    quiet: bool,
    o: &'a Options,
}

impl Visit for GetTree<'_> {
    fn enter(&mut self, s: &mut Sftp, batch: &mut Downloads, dir: &[u8]) -> SftpResult<bool> {
        // READDIR, STAT and large files wait for their own replies.
        let ok = batch.finish(s, &mut |m| crate::errln!("{m}"))?;
        if !self.quiet {
            crate::outln!("Retrieving {}", lossy(dir));
        }
        Ok(ok)
    }

    fn no_dir(&mut self, local: &Path, e: std::io::Error) -> SftpResult<bool> {
        err(&format!("mkdir {}: {}", local.display(), os_text(&e)));
        Ok(false)
    }

    fn unlisted(&mut self, dir: &[u8], e: SftpError) -> SftpResult<bool> {
        let what = format!("Unable to open directory \"{}\"", lossy(dir));
        failed_or_fatal(Err(remote_err(&what, e)))
    }

    fn file(
        &mut self,
        s: &mut Sftp,
        batch: &mut Downloads,
        r: Vec<u8>,
        l: PathBuf,
        attrs: Attrs,
    ) -> SftpResult<bool> {
        if !self.quiet {
            crate::outln!("Fetching {} to {}", lossy(&r), l.display());
        }
        if attrs.size.is_some_and(|n| n <= many::SMALL) && !self.o.resume {
            batch.get(s, r, l, attrs, &mut |m| crate::errln!("{m}"))?;
            return Ok(true);
        }
        let settled = batch.finish(s, &mut |m| crate::errln!("{m}"))?;
        let res = transfer::download(s, &r, &l, self.o);
        if let (Ok(()), Some(t)) = (&res, &self.o.tally) {
            t.counted(attrs.size.unwrap_or(0));
        }
        Ok(settled & failed_or_fatal(res.map_err(transfer_err).map(|()| true))?)
    }

    fn other(&mut self, r: &[u8]) {
        crate::log!(Info, "download \"{}\": not a regular file", lossy(r));
    }

    fn leave(
        &mut self,
        s: &mut Sftp,
        batch: &mut Downloads,
        dir: &[u8],
        local: &Path,
    ) -> SftpResult<bool> {
        if !self.o.preserve {
            return Ok(true);
        }
        // Every file in first, on every connection.
        let ok = batch.drain(s, &mut |m| crate::errln!("{m}"))?;
        if let Some((_, mt)) = s.stat(dir, true).ok().and_then(|a| a.atime_mtime) {
            let _ = set_path_times(local, mt);
        }
        Ok(ok)
    }
}

/// A step's failure as a tree walk counts it: Ok(false) once printed,
/// Err for the session's end.
fn failed_or_fatal(r: Result<bool, Fail>) -> SftpResult<bool> {
    match r {
        Ok(ok) => Ok(ok),
        Err(Fail::Failed) => Ok(false),
        Err(Fail::Fatal(m)) => Err(m),
    }
}

/// Waits for the batch's files; Ok(none failed).
fn settle(s: &mut Sftp, batch: &mut Uploads) -> Result<bool, Fail> {
    batch
        .finish(s, &mut |m| crate::errln!("{m}"))
        .map_err(Fail::Fatal)
}

fn walk_up(
    s: &mut Sftp,
    batch: &mut Uploads,
    local: &Path,
    remote_dir: &[u8],
    o: &Options,
    quiet: bool,
) -> Result<(), Fail> {
    // Calls that wait for their own reply (MKDIR, a large file) go only
    // once the batch's replies are all in.
    let mut failed = !settle(s, batch)?;
    let mode = std::fs::metadata(local)
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777)
        .unwrap_or(0o755);
    match s.mkdir(remote_dir, Some(mode | 0o700)) {
        Ok(()) => {}
        Err(e) if e.is_fatal() => return Err(Fail::Fatal(e)),
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
    for l in entries {
        let name = basename(l.as_os_str().as_bytes()).to_vec();
        let r = remote::join(remote_dir, &name);
        let meta = match std::fs::symlink_metadata(&l) {
            Ok(m) => m,
            Err(_) => continue,
        };
        let res = if meta.is_dir() {
            walk_up(s, batch, &l, &r, o, quiet)
        } else if meta.is_file() {
            if !quiet {
                crate::outln!("Uploading {} to {}", l.display(), lossy(&r));
            }
            if meta.len() <= many::SMALL && !o.resume {
                batch
                    .put(s, l, r, &mut |m| crate::errln!("{m}"))
                    .map_err(Fail::Fatal)
            } else {
                failed |= !settle(s, batch)?;
                let r = transfer::upload(s, &l, &r, o);
                if let (Ok(()), Some(t)) = (&r, &o.tally) {
                    t.counted(meta.len());
                }
                r.map_err(transfer_err)
            }
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
        // The directory's times last: its files are all in first, on
        // every connection.
        failed |= !batch
            .drain(s, &mut |m| crate::errln!("{m}"))
            .map_err(Fail::Fatal)?;
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

pub(super) fn set_path_times(p: &Path, mtime: u32) -> std::io::Result<()> {
    let c = std::ffi::CString::new(p.as_os_str().as_bytes())?;
    let t = rustix::fs::Timespec {
        tv_sec: i64::from(mtime),
        tv_nsec: 0,
    };
    let ts = rustix::fs::Timestamps {
        last_access: t,
        last_modification: t,
    };
    rustix::fs::utimensat(rustix::fs::CWD, &c, &ts, rustix::fs::AtFlags::empty())?;
    Ok(())
}
