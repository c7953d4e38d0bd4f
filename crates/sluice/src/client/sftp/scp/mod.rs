//! scp(1)'s copies over SFTP, as OpenSSH 9's scp does by default: remote
//! to local and local to remote (one remote host per run; copies between
//! two remote hosts are legacy.rs's). Remote sources are globbed on the server's
//! listing; relative remote paths start at the login directory. Errors
//! name the file, `scp: path: reason`, the other files still go, and the
//! exit code is 1 when any failed (255 when the connection failed).

pub mod legacy;

use super::commands::{put_tree_quiet, Failure};
use super::errors::{os_text, TransferError};
use super::many::{self, Downloads};
use super::options::Options;
use super::progress::Tally;
use super::remote::{self, absolute, basename, path_of};
use super::session::{Behind, EarlyOpen, First, OpenAhead, Sftp, SftpError, SftpResult};
use super::transfer;
use super::tree::{self, Visit};
use super::Link;
use sluice_proto::sftp::{pflags, Attrs};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// One side of a copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// A local path.
    Local(PathBuf),
    /// A path on the remote host (empty: the login directory).
    Remote(Vec<u8>),
}

/// scp's flags that reach the copies.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// -r.
    pub recursive: bool,
    /// Transfer flags (-p, the meter, request depth and size).
    pub transfer: Options,
}

fn say(msg: &str) {
    crate::errln!("scp: {msg}");
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Copies `sources` to `target` over `link`; returns the exit code.
pub fn main(link: Link, mut set: Settings, sources: Vec<Place>, target: Place) -> i32 {
    // Extra connections' messages look like this one's.
    set.transfer.tag = "scp: ";
    // Each file's line and, for more than one, the total at the end.
    let tally = Tally::new(set.transfer.progress);
    set.transfer.tally = Some(tally.clone());
    // The destination (or the one remote source) is stat'ed with the
    // session's first requests: a round trip less.
    let dot = |p: &Vec<u8>| {
        if p.is_empty() {
            b".".to_vec()
        } else {
            p.clone()
        }
    };
    let early = match (&target, sources.as_slice()) {
        (Place::Remote(t), _) => Some(dot(t)),
        (Place::Local(_), [Place::Remote(p)]) if !remote::has_glob(p) => Some(dot(p)),
        _ => None,
    };
    // And the file its one copy will need is opened with them on a guess
    // (the source for reading; a temporary name beside the destination
    // for writing), used if the STAT bears it out, else dropped.
    let guessable = |p: &[u8]| !matches!(basename(p), b"" | b"." | b"..");
    let open = match (&target, sources.as_slice()) {
        (Place::Remote(t), [Place::Local(l)]) if !set.transfer.resume && guessable(t) => {
            transfer::early_part(l, t)
        }
        (Place::Local(_), [Place::Remote(p)]) if !remote::has_glob(p) && guessable(p) => {
            Some(OpenAhead {
                path: p.clone(),
                flags: pflags::READ,
                attrs: Attrs::default(),
            })
        }
        _ => None,
    };
    // The file's first bytes go (an upload) or are asked for (a download)
    // right behind that open where the server takes a handle we name
    // (sluiced), unless -l paces every byte or -B sizes the requests.
    let plain = set.transfer.limit.is_none() && set.transfer.buffer == 0;
    let local = match (&target, sources.as_slice()) {
        (Place::Remote(_), [Place::Local(l)]) if plain && open.is_some() => {
            std::fs::File::open(l).ok()
        }
        _ => None,
    };
    let behind = match (&local, &target) {
        (Some(f), _) => Behind::Write(f),
        (None, Place::Local(_)) if plain && !set.transfer.resume && open.is_some() => Behind::Read,
        _ => Behind::Nothing,
    };
    let first = First {
        stat: early.as_deref(),
        open: open.as_ref(),
        behind,
    };
    let mut s = match Sftp::init_with(link, first) {
        Ok(s) => s,
        Err(e) => {
            say(&e.text());
            return 255;
        }
    };
    let home = match s.start_dir() {
        Ok(h) => h,
        Err(e) => {
            say(&format!("Couldn't canonicalize \".\": {e}"));
            s.finish();
            return if e.is_fatal() { 255 } else { 1 };
        }
    };
    // Relative paths start at the login directory on the server.
    let mut pre = s.take_early_open().map(|mut e| {
        e.path = absolute(&home, &e.path);
        e
    });
    let r = match target {
        Place::Local(t) => download(&mut s, &set, &home, &sources, &t, &mut pre),
        Place::Remote(t) => upload(&mut s, &set, &home, &sources, &t, &mut pre),
    };
    if let Some(e) = pre {
        s.discard_early_open(e);
    }
    s.finish();
    tally.total();
    match r {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => {
            say(&e.to_string());
            255
        }
    }
}

/// Ok(all copied), or Err(the error that ends the session).
fn download(
    s: &mut Sftp,
    set: &Settings,
    home: &[u8],
    sources: &[Place],
    target: &Path,
    pre: &mut Option<EarlyOpen>,
) -> SftpResult<bool> {
    let target_dir = target.is_dir();
    let mut ok = true;
    let mut matched = 0;
    for src in sources {
        let Place::Remote(p) = src else {
            say("local and remote sources cannot be mixed");
            return Ok(false);
        };
        let p = if p.is_empty() {
            b".".to_vec()
        } else {
            p.clone()
        };
        let mut found = remote::glob(s, home, &p)?;
        // A STAT (not a directory listing's LSTAT-like entry): the
        // download need not ask again.
        let mut stated = false;
        if found.len() == 1 && found[0].1.is_none() {
            let stat = match s.take_early_stat() {
                Some(r) => r,
                None => s.stat(&found[0].0, true),
            };
            match stat {
                Ok(a) => {
                    found[0].1 = Some(a);
                    stated = true;
                }
                Err(e) if e.is_fatal() => return Err(e),
                Err(e) => {
                    say(&format!("{}: {e}", lossy(&absolute(home, &p))));
                    ok = false;
                    continue;
                }
            }
        }
        if found.is_empty() {
            say(&format!(
                "{}: No such file or directory",
                lossy(&absolute(home, &p))
            ));
            ok = false;
            continue;
        }
        matched += found.len();
        if matched > 1 && !target_dir {
            say(&format!("\"{}\": Not a directory", target.display()));
            return Ok(false);
        }
        for (m, a) in found {
            let local = if target_dir {
                target.join(path_of(basename(&m)))
            } else {
                target.to_path_buf()
            };
            let is_dir = a
                .as_ref()
                .and_then(|a| a.permissions)
                .is_some_and(|p| p & 0o170000 == 0o040000);
            let r = if is_dir && set.recursive {
                get_tree(s, &m, &local, &set.transfer)
            } else if is_dir {
                say(&format!("{}: not a regular file", lossy(&m)));
                Ok(false)
            } else {
                // The OPEN asked ahead, if it was of this very file.
                let opened = pre.take_if(|e| stated && e.path == m);
                copy_down(s, &m, a.filter(|_| stated), opened, &local, &set.transfer)
            };
            ok &= r?;
        }
    }
    Ok(ok)
}

fn copy_down(
    s: &mut Sftp,
    m: &[u8],
    stated: Option<Attrs>,
    opened: Option<EarlyOpen>,
    local: &Path,
    o: &Options,
) -> SftpResult<bool> {
    match transfer::download_opened(s, m, stated, opened, local, o) {
        Ok(()) => {
            if let (Some(t), Ok(meta)) = (&o.tally, std::fs::metadata(local)) {
                t.counted(meta.len());
            }
            Ok(true)
        }
        Err(TransferError::Fatal(f)) => Err(f),
        Err(e) => {
            say(&e.to_string());
            Ok(false)
        }
    }
}

/// Fetches the remote directory `dir` as `local`; small files many at
/// once (many/).
fn get_tree(s: &mut Sftp, dir: &[u8], local: &Path, o: &Options) -> SftpResult<bool> {
    let mut batch = Downloads::new(o);
    let walked = tree::walk_down(s, &mut batch, dir, local, &mut Tree { o });
    let flushed = batch.drain(s, &mut say);
    Ok(walked? & flushed?)
}

/// scp's steps in a tree walk: messages as `scp: path: reason`.
struct Tree<'a> {
    o: &'a Options,
}

impl Visit for Tree<'_> {
    fn enter(&mut self, s: &mut Sftp, batch: &mut Downloads, _dir: &[u8]) -> SftpResult<bool> {
        // READDIR and large files wait for their own replies: the batch's
        // replies come in first.
        batch.finish(s, &mut say)
    }

    fn no_dir(&mut self, local: &Path, e: std::io::Error) -> SftpResult<bool> {
        say(&format!("{}: {}", local.display(), os_text(&e)));
        Ok(false)
    }

    fn unlisted(&mut self, dir: &[u8], e: SftpError) -> SftpResult<bool> {
        match e {
            e if e.is_fatal() => Err(e),
            e => {
                say(&format!("{}: {e}", lossy(dir)));
                Ok(false)
            }
        }
    }

    fn file(
        &mut self,
        s: &mut Sftp,
        batch: &mut Downloads,
        r: Vec<u8>,
        l: PathBuf,
        attrs: Attrs,
    ) -> SftpResult<bool> {
        if attrs.size.is_some_and(|n| n <= many::SMALL) && !self.o.resume {
            batch.get(s, r, l, attrs, &mut say)?;
            return Ok(true);
        }
        Ok(batch.finish(s, &mut say)? & copy_down(s, &r, None, None, &l, self.o)?)
    }
}

fn upload(
    s: &mut Sftp,
    set: &Settings,
    home: &[u8],
    sources: &[Place],
    target: &[u8],
    pre: &mut Option<EarlyOpen>,
) -> SftpResult<bool> {
    let t = absolute(home, if target.is_empty() { b"." } else { target });
    let stat = match s.take_early_stat() {
        Some(r) => r,
        None => s.stat(&t, true),
    };
    let target_dir = match stat {
        Ok(a) => a.permissions.is_some_and(|m| m & 0o170000 == 0o040000),
        Err(e) if e.is_fatal() => return Err(e),
        Err(_) => false,
    };
    if sources.len() > 1 && !target_dir {
        say(&format!("{}: Not a directory", lossy(&t)));
        return Ok(false);
    }
    let mut ok = true;
    for src in sources {
        let Place::Local(l) = src else {
            say("remote to remote copies are not supported by sluice-scp");
            return Ok(false);
        };
        let meta = match std::fs::metadata(l) {
            Ok(m) => m,
            Err(e) => {
                say(&format!("{}: {}", l.display(), os_text(&e)));
                ok = false;
                continue;
            }
        };
        let dest = if target_dir {
            remote::join(&t, basename(l.as_os_str().as_bytes()))
        } else {
            t.clone()
        };
        if meta.is_dir() {
            if !set.recursive {
                say(&format!("{}: not a regular file", l.display()));
                ok = false;
                continue;
            }
            match put_tree_quiet(s, l, &dest, &set.transfer) {
                Ok(()) => {}
                Err(Failure::Fatal(m)) => return Err(m),
                Err(Failure::Failed) => ok = false,
            }
            continue;
        }
        match transfer::upload_opened(s, l, &dest, &set.transfer, pre.take()) {
            Ok(()) => {
                if let Some(t) = &set.transfer.tally {
                    t.counted(meta.len());
                }
            }
            Err(TransferError::Fatal(f)) => return Err(f),
            Err(e) => {
                say(&e.to_string());
                ok = false;
            }
        }
    }
    Ok(ok)
}
