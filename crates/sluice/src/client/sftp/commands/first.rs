//! The first command's requests in the session's first flight. What sftp
//! will do first is often known before it connects: `sftp host:file`
//! fetches that file, and a batch file's first line may be a `get` or a
//! `put` of one file. Its STAT and the guessed OPEN (with the first MiB
//! of READs or WRITEs behind it, session/) then go with the session's
//! first requests, as scp's do, instead of a round trip after VERSION.
//! The command takes them if they are what it would ask; whatever it
//! does not take is dropped after it (a created file removed).

use super::settings::Settings;
use super::tokens::tokenize;
use crate::client::sftp::remote::{absolute, has_glob};
use crate::client::sftp::session::{Behind, EarlyOpen, First, OpenAhead, Sftp, SftpResult};
use crate::client::sftp::transfer;
use sluice_proto::sftp::{pflags, Attrs};
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The first command's requests, before the session starts.
pub(super) struct Guess {
    /// STAT this (the get's source, the put's destination), as written.
    stat: Vec<u8>,
    open: OpenAhead,
    /// An upload's local file (its first bytes go behind the open).
    upload: Option<File>,
    /// READs go behind a download's open.
    read: bool,
}

impl Guess {
    /// What the session's first flight carries for it.
    pub(super) fn first(&self) -> First<'_> {
        let behind = match (&self.upload, self.read) {
            (Some(f), _) => Behind::Write(f),
            (None, true) => Behind::Read,
            (None, false) => Behind::Nothing,
        };
        First {
            stat: Some(&self.stat),
            open: Some(&self.open),
            behind,
        }
    }
}

/// The answers, for the first command to take.
pub(super) struct Early {
    /// The STAT's path, absolute.
    pub(super) stat_path: Vec<u8>,
    pub(super) stat: SftpResult<Attrs>,
    /// The OPEN's answer (its path absolute).
    pub(super) open: EarlyOpen,
}

/// The guess for a run with these settings: `sftp host:path` (a get
/// unless the path is a directory), else the first command of a batch
/// (file, or stdin when it is not a terminal) when it is `get SRC [DST]`
/// or `put LOCAL DST` of one file, without flags or globs. `stdin` gets
/// what was read of stdin for that (the commands read it first).
pub(super) fn guess(set: &Settings, stdin: &mut Vec<u8>) -> Option<Guess> {
    let o = &set.transfer;
    // -l paces every byte, -B sizes the requests, a resume starts later.
    let behind = o.limit.is_none() && o.buffer == 0 && !o.resume;
    let get = |src: &[u8]| Guess {
        stat: src.to_vec(),
        open: OpenAhead {
            path: src.to_vec(),
            flags: pflags::READ,
            attrs: Attrs::default(),
        },
        upload: None,
        read: behind,
    };
    if let Some(p) = set.start_path.as_deref().filter(|p| !p.is_empty()) {
        return Some(get(p.as_bytes()));
    }
    let text = match set.batch.as_deref() {
        Some("-") | None if !crate::client::tty::stdin_is_tty() => {
            *stdin = waiting_stdin();
            stdin.clone()
        }
        Some("-") | None => return None,
        Some(f) => std::fs::read(f).ok()?,
    };
    let words = first_line(&text)?;
    let plain = |w: &[u8]| !w.starts_with(b"-") && !has_glob(w);
    match words.as_slice() {
        [cmd, src] | [cmd, src, _] if cmd == b"get" && plain(src) => Some(get(src)),
        [cmd, local, dst] if cmd == b"put" && plain(local) && plain(dst) && !set.recursive => {
            let l = Path::new(std::ffi::OsStr::from_bytes(local));
            let open = transfer::early_part(l, dst)?;
            Some(Guess {
                stat: dst.clone(),
                open,
                upload: File::open(l).ok().filter(|_| behind),
                read: false,
            })
        }
        _ => None,
    }
}

/// What stdin holds already, without waiting (one read, if poll says
/// there is something): a program that feeds commands only once sftp is
/// connected must not be waited for.
fn waiting_stdin() -> Vec<u8> {
    use rustix::event::{PollFd, PollFlags};
    use std::os::fd::AsFd;
    let stdin = std::io::stdin();
    let mut pfd = [PollFd::new(&stdin, PollFlags::IN)];
    let now = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    if rustix::event::poll(&mut pfd, Some(&now)).ok() != Some(1)
        || !pfd[0].revents().contains(PollFlags::IN)
    {
        return Vec::new();
    }
    let mut buf = vec![0u8; 64 << 10];
    // One read, which poll said will not block.
    let n = rustix::io::read(stdin.as_fd(), &mut buf).unwrap_or(0);
    buf.truncate(n);
    buf
}

/// The words of the first command in a batch's `text` (only a whole line).
fn first_line(text: &[u8]) -> Option<Vec<Vec<u8>>> {
    let complete = text
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(&[][..], |i| &text[..i]);
    let line = complete
        .split(|b| *b == b'\n')
        .map(|l| l.trim_ascii())
        .find(|l| !l.is_empty() && !l.starts_with(b"#"))?;
    if line.starts_with(b"-") || line.starts_with(b"!") {
        return None;
    }
    tokenize(line).ok()
}

/// Takes the answers from the session, their paths made absolute against
/// the start directory `cwd` (relative paths were sent as written: the
/// server resolves them from there too).
pub(super) fn answers(s: &mut Sftp, cwd: &[u8], g: &Guess) -> Option<Early> {
    let stat = s.take_early_stat()?;
    let mut open = s.take_early_open()?;
    open.path = absolute(cwd, &open.path);
    Some(Early {
        stat_path: absolute(cwd, &g.stat),
        stat,
        open,
    })
}
