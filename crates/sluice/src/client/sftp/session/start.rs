//! The session's start (INIT, VERSION, limits@openssh.com, the start
//! directory, and the first command's STAT and OPEN in the same round
//! trip) and the requests sent ahead of their answers (open-as@sluice.dev
//! with WRITEs or READs behind it), until a transfer takes them.

use super::super::channel::{Link, MAX_PACKET_CEILING};
use super::ahead::{Behind, EarlyOpen, First, InFlight, OpenAhead};
use super::error::{bad, SftpError, SftpResult, WriteFromError};
use super::reply::{attrs_of, handle_of, one_name, status_of};
use super::Sftp;
use sluice_proto::sftp::response::Limits;
use sluice_proto::sftp::{pflags, Attrs, Extended, Reply, Request, MAX_READ_WRITE};
use std::time::Instant;

/// READ and WRITE sizes used until limits@openssh.com says otherwise:
/// OpenSSH's default buffer (32 KiB), what every server takes.
const DEFAULT_IO: u32 = 32 * 1024;

/// The ids of the session's first requests.
struct FirstIds {
    limits: Option<u32>,
    cwd: u32,
    stat: Option<u32>,
    open: Option<u32>,
    /// The OPEN went as open-as@sluice.dev naming this handle, with
    /// these WRITEs or READs behind it.
    open_as: Option<[u8; 4]>,
    sent: Vec<InFlight>,
}

/// A file's first bytes written (or read) right behind its
/// open-as@sluice.dev: they go a round trip before the handle could be
/// known. TCP's first round trips carry little more anyway; the rest
/// follows once the answers are in. Wasted when the guess behind the open
/// was wrong (an upload's file is then removed).
const AHEAD_BYTES: u64 = 1 << 20;

impl Sftp {
    /// Sends INIT, reads VERSION, asks for limits@openssh.com when offered.
    pub fn init(link: Link) -> SftpResult<Sftp> {
        Sftp::init_with_stat(link, None)
    }

    /// [`Sftp::init`], with a STAT of `stat` (following links, relative to
    /// the start directory) asked in the same round trip as the limits and
    /// the start directory; its answer is [`Sftp::take_early_stat`]. scp
    /// knows its destination (or source) before the session starts: a
    /// round trip less per run.
    pub fn init_with_stat(link: Link, stat: Option<&[u8]>) -> SftpResult<Sftp> {
        Sftp::init_with(
            link,
            First {
                stat,
                ..First::default()
            },
        )
    }

    /// [`Sftp::init_with_stat`], with an OPEN too ([`First`]); its answer
    /// is [`Sftp::take_early_open`].
    pub fn init_with(link: Link, first: First<'_>) -> SftpResult<Sftp> {
        let stat = first.stat;
        let mut s = Sftp {
            link,
            next_id: 1,
            extensions: Vec::new(),
            max_read: DEFAULT_IO,
            max_write: DEFAULT_IO,
            rtt: None,
            scratch: Vec::new(),
            start_dir: None,
            early_stat: None,
            unanswered: Vec::new(),
            early_open: None,
            open_as: 0,
            ahead: Vec::new(),
            ahead_done: Vec::new(),
        };
        let init = Request::Init {
            version: sluice_proto::sftp::VERSION,
            extensions: Vec::new(),
        };
        let asked = Instant::now();
        s.send(&init)?;
        // sluiced answers requests in order from INIT on, so the limits, the
        // start directory and the STAT go right behind INIT (a round trip
        // less). Others get them once VERSION says what they offer: the
        // drafts do not say a server must take requests before VERSION.
        let behind_init = s
            .link
            .peer_version()
            .is_some_and(|v| v.starts_with("SSH-2.0-sluice"));
        let early = match behind_init {
            true => Some(s.send_first_requests(true, stat, first.open, first.behind)?),
            false => None,
        };
        s.recv_version(asked)?;
        // Otherwise the limits and the start directory in one round trip:
        // both are asked at once and answered in order (ids checked).
        let asked = Instant::now();
        let was_early = early.is_some();
        let ids = match early {
            Some(ids) => ids,
            None => {
                let limits = s.has("limits@openssh.com", "1");
                s.send_first_requests(limits, stat, first.open, Behind::Nothing)?
            }
        };
        s.recv_first_answers(ids, was_early, asked, first.open)?;
        Ok(s)
    }

    /// VERSION, the answer to INIT sent at `asked`: the extensions offered.
    fn recv_version(&mut self, asked: Instant) -> SftpResult<()> {
        let body = self.recv()?;
        self.note_rtt(asked);
        match Reply::decode(&body) {
            Ok(Reply::Version {
                version,
                extensions,
            }) => {
                if version != sluice_proto::sftp::VERSION {
                    crate::log!(Debug1, "Server speaks SFTP version {version}; using 3");
                }
                self.extensions = extensions
                    .into_iter()
                    .map(|(n, d)| (n.to_vec(), d.to_vec()))
                    .collect();
            }
            _ => return Err(bad("no VERSION")),
        }
        for (n, d) in &self.extensions {
            crate::log!(
                Debug2,
                "Server supports extension \"{}\" revision {}",
                String::from_utf8_lossy(n),
                String::from_utf8_lossy(d)
            );
        }
        Ok(())
    }

    /// The answers to the first requests (`ids`; asked at `asked`, before
    /// VERSION when `was_early`), in the order they were asked.
    fn recv_first_answers(
        &mut self,
        ids: FirstIds,
        was_early: bool,
        asked: Instant,
        open: Option<&OpenAhead>,
    ) -> SftpResult<()> {
        if let Some(id) = ids.limits {
            let body = self.recv()?;
            match Reply::decode(&body) {
                Ok(Reply::ExtendedReply { id: got, data }) if got == id => {
                    let l = Limits::decode(data).map_err(|_| bad("limits"))?;
                    self.apply_limits(&l);
                }
                // Asked before VERSION of a server without the extension.
                Ok(Reply::Status { id: got, .. }) if got == id && was_early => {
                    crate::log!(Debug2, "Server has no limits@openssh.com");
                }
                Ok(Reply::Status {
                    id: got,
                    code,
                    message,
                }) if got == id => return Err(SftpError::status(code, message)),
                _ => return Err(bad("limits")),
            }
        }
        let body = self.recv()?;
        if !was_early {
            self.note_rtt(asked);
        }
        self.start_dir = Some(match Reply::decode(&body) {
            Ok(r) if r.id() == Some(ids.cwd) => one_name(&body),
            _ => Err(bad("wrong id")),
        });
        if let Some(id) = ids.stat {
            let body = self.recv()?;
            self.early_stat = Some(match Reply::decode(&body) {
                Ok(r) if r.id() == Some(id) => attrs_of(&body),
                _ => return Err(bad("wrong id")),
            });
        }
        if let (Some(id), Some(o)) = (ids.open, open) {
            self.early_open = Some(self.recv_open_ahead(id, o, ids.open_as, ids.sent)?);
        }
        Ok(())
    }

    /// The answer to the OPEN asked by [`Sftp::init_with`], once. Whoever
    /// takes it owns the handle (and the file it created).
    pub fn take_early_open(&mut self) -> Option<EarlyOpen> {
        self.early_open.take()
    }

    /// Reads the answer to `o`, sent as request `id` (as open-as naming
    /// `open_as`, with `sent` behind it).
    fn recv_open_ahead(
        &mut self,
        id: u32,
        o: &OpenAhead,
        open_as: Option<[u8; 4]>,
        mut sent: Vec<InFlight>,
    ) -> SftpResult<EarlyOpen> {
        let body = self.recv()?;
        let result = match (Reply::decode(&body), open_as) {
            (Ok(r), Some(h)) if r.id() == Some(id) => status_of(&body).map(|()| h.to_vec()),
            (Ok(r), None) if r.id() == Some(id) => handle_of(&body),
            _ => return Err(bad("wrong id")),
        };
        match &result {
            // Nothing was opened under the handle: what went behind it
            // fails (an older sluiced without open-as, or a refused open).
            Err(e) => {
                crate::log!(
                    Debug2,
                    "open ahead of \"{}\": {e}",
                    String::from_utf8_lossy(&o.path)
                );
                self.unanswered.extend(sent.drain(..).map(|(id, _, _)| id));
            }
            Ok(_) => {
                if open_as.is_some() {
                    crate::log!(
                        Debug1,
                        "sftp: \"{}\" opened under a handle we named (open-as), {} bytes' WRITEs or READs behind it",
                        String::from_utf8_lossy(&o.path),
                        sent.iter().map(|w| w.2 as u64).sum::<u64>()
                    );
                }
                self.ahead.extend(sent.iter().map(|&(id, _, _)| id));
            }
        }
        Ok(EarlyOpen {
            path: o.path.clone(),
            created: o.flags & pflags::CREAT != 0,
            result,
            sent,
        })
    }

    /// Gives up an OPEN that was asked at the start and not used: its
    /// handle is closed (without waiting) and a file it created removed.
    /// The REMOVE is waited for: the client may end right after its last
    /// request, and a server that sees the connection go first (sshd)
    /// would leave the file.
    pub fn discard_early_open(&mut self, e: EarlyOpen) {
        self.drop_sent_ahead(&e.sent);
        if let Ok(h) = &e.result {
            let _ = self.close_unanswered(h);
            if e.created {
                if let Err(err) = self.remove(&e.path) {
                    crate::log!(
                        Debug1,
                        "removing \"{}\", opened ahead: {err}",
                        String::from_utf8_lossy(&e.path)
                    );
                }
            }
        }
    }

    /// Sends the session's first requests: limits@openssh.com (when
    /// `limits`), REALPATH of "." and the STAT of `stat`, and the OPEN of
    /// `open`, with `behind` it (sent before VERSION to sluiced) as
    /// open-as@sluice.dev.
    fn send_first_requests(
        &mut self,
        limits: bool,
        stat: Option<&[u8]>,
        open: Option<&OpenAhead>,
        behind: Behind<'_>,
    ) -> SftpResult<FirstIds> {
        let limits = match limits {
            true => Some(self.send(&Request::Extended(Extended::Limits))?),
            false => None,
        };
        let cwd = self.send(&Request::Realpath { path: b"." })?;
        let stat = match stat {
            Some(path) => Some(self.send(&Request::Stat { path })?),
            None => None,
        };
        let (open, open_as, sent) = match open {
            Some(o) => {
                let (id, named, sent) = self.send_open_ahead_with(o, behind)?;
                (Some(id), named, sent)
            }
            None => (None, None, Vec::new()),
        };
        Ok(FirstIds {
            limits,
            cwd,
            stat,
            open,
            open_as,
            sent,
        })
    }

    /// Takes over `sent` (an [`EarlyOpen`]'s): each with its answer's body
    /// if it came already; the caller reads the others' answers.
    pub fn take_sent_ahead(&mut self, sent: &[InFlight]) -> Vec<(InFlight, Option<Vec<u8>>)> {
        sent.iter()
            .map(|&w| {
                self.ahead.retain(|&id| id != w.0);
                let done = self
                    .ahead_done
                    .iter()
                    .position(|(id, _)| *id == w.0)
                    .map(|i| self.ahead_done.swap_remove(i).1);
                (w, done)
            })
            .collect()
    }

    /// Gives up what of `sent` no transfer took: answers kept are dropped,
    /// answers still to come will be.
    pub fn drop_sent_ahead(&mut self, sent: &[InFlight]) {
        for &(id, _, _) in sent {
            if let Some(i) = self.ahead.iter().position(|&a| a == id) {
                self.ahead.swap_remove(i);
                self.unanswered.push(id);
            }
            self.ahead_done.retain(|(a, _)| *a != id);
        }
    }

    /// Sends the OPEN of `o`; with something `behind` it, as
    /// open-as@sluice.dev naming a handle of ours, followed by those WRITEs
    /// or READs (the caller knows the server takes it: sluiced). Returns
    /// the request's id, the handle named, and what went behind.
    fn send_open_ahead_with(
        &mut self,
        o: &OpenAhead,
        behind: Behind<'_>,
    ) -> SftpResult<(u32, Option<[u8; 4]>, Vec<InFlight>)> {
        if matches!(behind, Behind::Nothing) {
            return Ok((self.send_open_ahead(o)?, None, Vec::new()));
        }
        self.open_as = (self.open_as + 1) & 0x7fff_ffff;
        let space = u32::from(sluice_proto::sftp::OPEN_AS_SPACE) << 24;
        let handle = (self.open_as | space).to_be_bytes();
        let id = self.send(&Request::Extended(Extended::OpenAs {
            handle: &handle,
            path: &o.path,
            pflags: o.flags,
            attrs: o.attrs.clone(),
        }))?;
        let sent = match behind {
            Behind::Write(f) => self.send_early_writes(&handle, f)?,
            _ => self.send_early_reads(&handle)?,
        };
        Ok((id, Some(handle), sent))
    }

    /// READs of the first [`AHEAD_BYTES`] of the file open as `handle`
    /// (past a shorter file's end they find EOF, as a download expects).
    fn send_early_reads(&mut self, handle: &[u8]) -> SftpResult<Vec<InFlight>> {
        let mut sent = Vec::new();
        let mut off = 0u64;
        while off < AHEAD_BYTES {
            let len = (AHEAD_BYTES - off).min(u64::from(MAX_READ_WRITE)) as u32;
            let id = self.send(&Request::Read {
                handle,
                offset: off,
                len,
            })?;
            sent.push((id, off, len as usize));
            off += u64::from(len);
        }
        Ok(sent)
    }

    /// WRITEs of `f`'s first [`AHEAD_BYTES`] bytes on `handle` (a shorter
    /// file: all of it). A local read error sends no more: the transfer
    /// reads the file again and reports it.
    fn send_early_writes(&mut self, handle: &[u8], f: &std::fs::File) -> SftpResult<Vec<InFlight>> {
        use std::os::unix::fs::FileExt;
        let mut writes = Vec::new();
        let mut off = 0u64;
        while off < AHEAD_BYTES {
            let want = (AHEAD_BYTES - off).min(u64::from(MAX_READ_WRITE)) as usize;
            let fill = |b: &mut [u8]| f.read_at(b, off);
            match self.send_write_from(handle, off, want, fill) {
                Ok((_, 0)) | Err(WriteFromError::Local(_)) => break,
                Ok((id, n)) => {
                    writes.push((id, off, n));
                    off += n as u64;
                    if n < want {
                        break;
                    }
                }
                Err(WriteFromError::Remote(e)) => return Err(e),
            }
        }
        Ok(writes)
    }

    /// The answer to the STAT asked by [`Sftp::init_with_stat`], once.
    pub fn take_early_stat(&mut self) -> Option<SftpResult<Attrs>> {
        self.early_stat.take()
    }

    /// The directory the session starts in (REALPATH of ".", asked with
    /// the limits at the start); asked again after the first call.
    pub fn start_dir(&mut self) -> SftpResult<Vec<u8>> {
        match self.start_dir.take() {
            Some(r) => r,
            None => self.realpath(b"."),
        }
    }

    /// Takes the server's limits: READ and WRITE sizes within its packet
    /// size (and our ceiling on replies).
    fn apply_limits(&mut self, l: &Limits) {
        let ceiling = u64::from(MAX_PACKET_CEILING) - 1024;
        let packet = if l.max_packet == 0 {
            256 * 1024
        } else {
            l.max_packet.min(u64::from(MAX_PACKET_CEILING))
        };
        self.link.set_max_packet(packet as u32);
        let pick = |v: u64| -> u32 {
            let v = if v == 0 { packet - 1024 } else { v };
            v.min(packet.saturating_sub(1024)).clamp(512, ceiling) as u32
        };
        self.max_read = pick(l.max_read);
        self.max_write = pick(l.max_write);
        crate::log!(
            Debug2,
            "Server limits: packet {}, read {}, write {}",
            l.max_packet,
            self.max_read,
            self.max_write
        );
    }

    /// STAT `path` (following links) and, in the same round trip, OPEN
    /// `open` on the guess that the STAT shows it is the file to use (as
    /// [`First::open`]; the caller uses or discards the handle), with the
    /// WRITEs or READs `behind` it where the server offers
    /// open-as@sluice.dev ([`First::behind`]).
    pub fn stat_with_open(
        &mut self,
        path: &[u8],
        open: &OpenAhead,
        behind: Behind<'_>,
    ) -> SftpResult<(SftpResult<Attrs>, EarlyOpen)> {
        let asked = Instant::now();
        let stat = self.send(&Request::Stat { path })?;
        let behind = match self.has("open-as@sluice.dev", "1") {
            true => behind,
            false => Behind::Nothing,
        };
        let (opened, named, sent) = self.send_open_ahead_with(open, behind)?;
        let body = self.recv()?;
        self.note_rtt(asked);
        let a = match Reply::decode(&body) {
            Ok(r) if r.id() == Some(stat) => attrs_of(&body),
            _ => return Err(bad("wrong id")),
        };
        Ok((a, self.recv_open_ahead(opened, open, named, sent)?))
    }

    fn send_open_ahead(&mut self, o: &OpenAhead) -> SftpResult<u32> {
        self.send(&Request::Open {
            path: &o.path,
            pflags: o.flags,
            attrs: o.attrs.clone(),
        })
    }
}
