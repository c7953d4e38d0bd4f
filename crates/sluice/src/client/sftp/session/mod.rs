//! One SFTP session seen from the client (draft-ietf-secsh-filexfer-02,
//! OpenSSH's PROTOCOL 4.x): the version exchange, limits@openssh.com, and
//! each request as a call that waits for its reply. Transfers keep many
//! requests in flight through [`Sftp::send`] and [`Sftp::recv`] instead
//! (transfer.rs).

use super::channel::Link;
use sluice_proto::sftp::response::{self, Limits};
use sluice_proto::sftp::{
    pflags, Attrs, Extended, NameEntry, Reply, Request, Status, MAX_READ_WRITE,
};
use std::time::{Duration, Instant};

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SftpError {
    /// The server answered with a status other than OK.
    Remote(Status),
    /// The session cannot go on: the connection ended or the server broke
    /// the protocol (sftp exits 255).
    Fatal(String),
}

impl SftpError {
    /// The text sftp shows for the error (OpenSSH's fx2txt for a status).
    pub fn text(&self) -> String {
        match self {
            SftpError::Remote(s) => fx2txt(*s).to_owned(),
            SftpError::Fatal(m) => m.clone(),
        }
    }
}

impl std::fmt::Display for SftpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text())
    }
}

/// A status code as OpenSSH's sftp prints it.
pub fn fx2txt(s: Status) -> &'static str {
    match s.0 {
        0 => "No error",
        1 => "End of file",
        2 => "No such file or directory",
        3 => "Permission denied",
        4 => "Failure",
        5 => "Bad message",
        6 => "No connection",
        7 => "Connection lost",
        8 => "Operation unsupported",
        _ => "Unknown status",
    }
}

/// Result of a request.
pub type SftpResult<T> = Result<T, SftpError>;

fn bad(what: &str) -> SftpError {
    SftpError::Fatal(format!(
        "Server sent a malformed or unexpected reply ({what})"
    ))
}

/// READ and WRITE sizes used until limits@openssh.com says otherwise:
/// OpenSSH's default buffer (32 KiB), what every server takes.
const DEFAULT_IO: u32 = 32 * 1024;

/// Why [`Sftp::send_write_from`] failed: reading the local data, or the
/// connection.
#[derive(Debug)]
pub enum WriteFromError {
    /// The fill function's error.
    Local(std::io::Error),
    /// The connection is gone.
    Remote(SftpError),
}

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

/// A WRITE (or READ) sent and not yet answered: id, offset, length.
pub type InFlight = (u32, u64, usize);

/// A file's first bytes written (or read) right behind its
/// open-as@sluice.dev: they go a round trip before the handle could be
/// known. TCP's first round trips carry little more anyway; the rest
/// follows once the answers are in. Wasted when the guess behind the open
/// was wrong (an upload's file is then removed).
const AHEAD_BYTES: u64 = 1 << 20;

/// What goes right behind an OPEN ahead, where the server takes a handle
/// named by the client (sluiced: open-as@sluice.dev).
#[derive(Clone, Copy, Default)]
pub enum Behind<'a> {
    /// Nothing: a plain OPEN.
    #[default]
    Nothing,
    /// An upload: WRITEs of this local file's first bytes.
    Write(&'a std::fs::File),
    /// A download: READs of the file's first bytes.
    Read,
}

/// The session: the channel, request ids and what the server offers.
pub struct Sftp {
    link: Link,
    next_id: u32,
    /// The extensions the server announced, (name, version).
    pub extensions: Vec<(Vec<u8>, Vec<u8>)>,
    /// Largest READ to ask for.
    pub max_read: u32,
    /// Largest WRITE to send.
    pub max_write: u32,
    /// The shortest wait for a lone request's answer (INIT, limits, stat,
    /// open...): the path's round trip plus the server's turnaround, what
    /// a transfer's pipeline is sized from (depth.rs).
    pub rtt: Option<Duration>,
    scratch: Vec<u8>,
    /// REALPATH of "." asked at the start, until taken.
    start_dir: Option<SftpResult<Vec<u8>>>,
    /// The STAT asked at the start ([`Sftp::init_with_stat`]), until taken.
    early_stat: Option<SftpResult<Attrs>>,
    /// Ids whose replies nobody waits for ([`Sftp::close_unanswered`]).
    unanswered: Vec<u32>,
    /// The OPEN asked at the start ([`First::open`]), until taken.
    early_open: Option<EarlyOpen>,
    /// The last handle named with open-as@sluice.dev (counted up in the
    /// client's space).
    open_as: u32,
    /// WRITEs or READs sent behind an open ahead whose handle was
    /// granted, until their transfer takes them ([`Sftp::take_sent_ahead`]):
    /// replies to them that come first (the caller asks something else in
    /// between) are kept here rather than handed to that caller.
    ahead: Vec<u32>,
    ahead_done: Vec<(u32, Vec<u8>)>,
}

/// What the session asks with its first requests, besides the limits and
/// the start directory: scp knows its one file before the session starts.
#[derive(Default)]
pub struct First<'a> {
    /// STAT this path (following links).
    pub stat: Option<&'a [u8]>,
    /// OPEN this, on the guess that the STAT will show it is the file to
    /// use (a round trip less).
    pub open: Option<&'a OpenAhead>,
    /// The WRITEs or READs that go right behind that open, where the
    /// server takes a handle named by the client (sluiced:
    /// open-as@sluice.dev); another round trip less. Only toward a sluiced
    /// (sent before VERSION says what it offers).
    pub behind: Behind<'a>,
}

/// An OPEN sent on a guess, ahead of the answer that decides it.
#[derive(Clone)]
pub struct OpenAhead {
    /// The path.
    pub path: Vec<u8>,
    /// pflags.
    pub flags: u32,
    /// The attributes of a file it creates.
    pub attrs: Attrs,
}

/// The answer to [`First::open`].
pub struct EarlyOpen {
    /// The path as opened.
    pub path: Vec<u8>,
    /// It was opened to create a file (to be removed if not used).
    pub created: bool,
    /// The handle, or the server's refusal.
    pub result: SftpResult<Vec<u8>>,
    /// WRITEs or READs of the file's first bytes sent behind the open
    /// and not yet taken ([`First::behind`]): the taker reads their answers
    /// ([`Sftp::take_sent_ahead`]).
    pub sent: Vec<InFlight>,
}

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
        let body = s.recv()?;
        s.note_rtt(asked);
        match Reply::decode(&body) {
            Ok(Reply::Version {
                version,
                extensions,
            }) => {
                if version != sluice_proto::sftp::VERSION {
                    crate::log!(Debug1, "Server speaks SFTP version {version}; using 3");
                }
                s.extensions = extensions
                    .into_iter()
                    .map(|(n, d)| (n.to_vec(), d.to_vec()))
                    .collect();
            }
            _ => return Err(bad("no VERSION")),
        }
        for (n, d) in &s.extensions {
            crate::log!(
                Debug2,
                "Server supports extension \"{}\" revision {}",
                String::from_utf8_lossy(n),
                String::from_utf8_lossy(d)
            );
        }
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
        if let Some(id) = ids.limits {
            let body = s.recv()?;
            match Reply::decode(&body) {
                Ok(Reply::ExtendedReply { id: got, data }) if got == id => {
                    let l = Limits::decode(data).map_err(|_| bad("limits"))?;
                    s.apply_limits(&l);
                }
                // Asked before VERSION of a server without the extension.
                Ok(Reply::Status { id: got, .. }) if got == id && was_early => {
                    crate::log!(Debug2, "Server has no limits@openssh.com");
                }
                Ok(Reply::Status { id: got, code, .. }) if got == id => {
                    return Err(SftpError::Remote(code))
                }
                _ => return Err(bad("limits")),
            }
        }
        let body = s.recv()?;
        if !was_early {
            s.note_rtt(asked);
        }
        s.start_dir = Some(match Reply::decode(&body) {
            Ok(r) if r.id() == Some(ids.cwd) => one_name(&body),
            _ => Err(bad("wrong id")),
        });
        if let Some(id) = ids.stat {
            let body = s.recv()?;
            s.early_stat = Some(match Reply::decode(&body) {
                Ok(r) if r.id() == Some(id) => attrs_of(&body),
                _ => return Err(bad("wrong id")),
            });
        }
        if let (Some(id), Some(o)) = (ids.open, first.open) {
            s.early_open = Some(s.recv_open_ahead(id, o, ids.open_as, ids.sent)?);
        }
        Ok(s)
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
        let ceiling = u64::from(super::channel::MAX_PACKET_CEILING) - 1024;
        let packet = if l.max_packet == 0 {
            256 * 1024
        } else {
            l.max_packet
                .min(u64::from(super::channel::MAX_PACKET_CEILING))
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

    /// The largest window the server has granted on the channel so far:
    /// the most it lets be in flight if it never grows it (OpenSSH's sshd:
    /// 2 MiB).
    pub fn peer_window(&self) -> u32 {
        self.link.peer_window()
    }

    /// Whether the server announced extension `name` at version `ver`.
    pub fn has(&self, name: &str, ver: &str) -> bool {
        self.extensions
            .iter()
            .any(|(n, d)| n == name.as_bytes() && d == ver.as_bytes())
    }

    /// Sends `req` under a new id; returns the id.
    pub fn send(&mut self, req: &Request<'_>) -> SftpResult<u32> {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        self.scratch.clear();
        req.encode(id, &mut self.scratch);
        self.link.send(&self.scratch).map_err(SftpError::Fatal)?;
        Ok(id)
    }

    /// Sends a WRITE of up to `want` bytes at `offset` whose data `fill`
    /// puts straight into the request's buffer (a pread: no copy of the
    /// data on its way to the channel). Returns the request's id and the
    /// bytes `fill` gave; nothing is sent when that is 0.
    pub fn send_write_from(
        &mut self,
        handle: &[u8],
        offset: u64,
        want: usize,
        fill: impl FnOnce(&mut [u8]) -> std::io::Result<usize>,
    ) -> Result<(u32, usize), WriteFromError> {
        let id = self.next_id;
        self.scratch.clear();
        Request::Write {
            handle,
            offset,
            data: &[],
        }
        .encode(id, &mut self.scratch);
        let head = self.scratch.len();
        let mut buf = self.link.buffer();
        // A buffer the pump sent keeps its length: only new room is zeroed.
        if buf.len() < head + want {
            buf.resize(head + want, 0);
        }
        let n = fill(buf.get_mut(head..head + want).unwrap_or_default())
            .map_err(WriteFromError::Local)?
            .min(want);
        if n == 0 {
            return Ok((id, 0));
        }
        buf.truncate(head + n);
        if let Some(h) = buf.get_mut(..head) {
            h.copy_from_slice(&self.scratch);
        }
        // The header was encoded for no data: the packet's length and the
        // data's (the header's last field) now count the n bytes.
        let total = buf.len();
        for (at, len) in [(0, total - 4), (head - 4, n)] {
            if let Some(f) = buf.get_mut(at..at + 4) {
                f.copy_from_slice(&(len as u32).to_be_bytes());
            }
        }
        self.next_id = self.next_id.wrapping_add(1);
        self.link
            .send_owned(buf)
            .map_err(|e| WriteFromError::Remote(SftpError::Fatal(e)))?;
        Ok((id, n))
    }

    /// The next reply body, in the order the server sent them.
    pub fn recv(&mut self) -> SftpResult<Vec<u8>> {
        loop {
            let body = self.link.recv().map_err(SftpError::Fatal)?;
            // Replies to requests sent with `close_unanswered` are dropped.
            let id = body
                .get(1..5)
                .and_then(|b| b.try_into().ok())
                .map(u32::from_be_bytes);
            match id.and_then(|id| self.unanswered.iter().position(|&u| u == id)) {
                Some(i) => {
                    self.unanswered.swap_remove(i);
                    if let Err(e) = status_of(&body) {
                        crate::log!(Debug1, "unanswered request {}: {e}", id.unwrap_or(0));
                    }
                }
                // A WRITE or READ sent ahead, not yet taken by its transfer.
                None if id.is_some_and(|id| self.ahead.contains(&id)) => {
                    let id = id.unwrap_or(0);
                    self.ahead.retain(|&a| a != id);
                    self.ahead_done.push((id, body));
                }
                None => return Ok(body),
            }
        }
    }

    /// A lone request asked at `asked` was just answered.
    fn note_rtt(&mut self, asked: Instant) {
        let d = asked.elapsed();
        self.rtt = Some(self.rtt.map_or(d, |r| r.min(d)));
    }

    /// Sends `req` and waits for its reply (nothing else may be in flight).
    fn call(&mut self, req: &Request<'_>) -> SftpResult<Vec<u8>> {
        let asked = Instant::now();
        let id = self.send(req)?;
        let body = self.recv()?;
        self.note_rtt(asked);
        match Reply::decode(&body) {
            Ok(r) if r.id() == Some(id) => Ok(body),
            Ok(_) => Err(bad("wrong id")),
            Err(e) => Err(SftpError::Fatal(format!("{e}"))),
        }
    }

    /// A request answered by a STATUS.
    fn call_status(&mut self, req: &Request<'_>) -> SftpResult<()> {
        let body = self.call(req)?;
        status_of(&body)
    }

    /// The session is over: EOF on the channel.
    pub fn finish(&mut self) {
        if let Some(e) = self.early_open.take() {
            self.discard_early_open(e);
        }
        self.link.finish();
    }

    /// An extended request answered by EXTENDED_REPLY; its fields.
    pub fn extended(&mut self, e: Extended<'_>) -> SftpResult<Vec<u8>> {
        let body = self.call(&Request::Extended(e))?;
        match Reply::decode(&body) {
            Ok(Reply::ExtendedReply { data, .. }) => Ok(data.to_vec()),
            Ok(Reply::Status { code, .. }) => Err(SftpError::Remote(code)),
            _ => Err(bad("extended")),
        }
    }

    /// STAT (follow links) or LSTAT.
    pub fn stat(&mut self, path: &[u8], follow: bool) -> SftpResult<Attrs> {
        let body = if follow {
            self.call(&Request::Stat { path })?
        } else {
            self.call(&Request::Lstat { path })?
        };
        attrs_of(&body)
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

    /// FSTAT.
    pub fn fstat(&mut self, handle: &[u8]) -> SftpResult<Attrs> {
        let body = self.call(&Request::Fstat { handle })?;
        attrs_of(&body)
    }

    /// REALPATH.
    pub fn realpath(&mut self, path: &[u8]) -> SftpResult<Vec<u8>> {
        let body = self.call(&Request::Realpath { path })?;
        one_name(&body)
    }

    /// OPEN; returns the handle.
    pub fn open(&mut self, path: &[u8], flags: u32, attrs: Attrs) -> SftpResult<Vec<u8>> {
        let body = self.call(&Request::Open {
            path,
            pflags: flags,
            attrs,
        })?;
        handle_of(&body)
    }

    /// OPEN for reading.
    pub fn open_read(&mut self, path: &[u8]) -> SftpResult<Vec<u8>> {
        self.open(path, pflags::READ, Attrs::default())
    }

    /// CLOSE.
    pub fn close(&mut self, handle: &[u8]) -> SftpResult<()> {
        self.call_status(&Request::Close { handle })
    }

    /// CLOSE of a handle that was only read, without waiting for the
    /// answer (a round trip less per download): nothing depends on it,
    /// so the reply is dropped when it comes.
    pub fn close_unanswered(&mut self, handle: &[u8]) -> SftpResult<()> {
        let id = self.send(&Request::Close { handle })?;
        self.unanswered.push(id);
        Ok(())
    }

    /// Every entry of a directory (OPENDIR, READDIR until EOF, CLOSE).
    pub fn read_dir(&mut self, path: &[u8]) -> SftpResult<Vec<NameEntry>> {
        let body = self.call(&Request::Opendir { path })?;
        let handle = handle_of(&body)?;
        let mut all = Vec::new();
        let r = loop {
            let body = match self.call(&Request::Readdir { handle: &handle }) {
                Ok(b) => b,
                Err(e) => break Err(e),
            };
            match Reply::decode(&body) {
                Ok(Reply::Name { entries, .. }) => all.extend(entries),
                Ok(Reply::Status {
                    code: Status::EOF, ..
                }) => break Ok(()),
                Ok(Reply::Status { code, .. }) => break Err(SftpError::Remote(code)),
                _ => break Err(bad("readdir")),
            }
        };
        let closed = self.close(&handle);
        r?;
        closed?;
        Ok(all)
    }

    /// REMOVE.
    pub fn remove(&mut self, path: &[u8]) -> SftpResult<()> {
        self.call_status(&Request::Remove { path })
    }

    /// MKDIR with `perm` (None: the server's default).
    pub fn mkdir(&mut self, path: &[u8], perm: Option<u32>) -> SftpResult<()> {
        let attrs = Attrs {
            permissions: perm,
            ..Attrs::default()
        };
        self.call_status(&Request::Mkdir { path, attrs })
    }

    /// RMDIR.
    pub fn rmdir(&mut self, path: &[u8]) -> SftpResult<()> {
        self.call_status(&Request::Rmdir { path })
    }

    /// posix-rename@openssh.com when asked for and offered, else RENAME.
    pub fn rename(&mut self, from: &[u8], to: &[u8], posix: bool) -> SftpResult<()> {
        if posix && self.has("posix-rename@openssh.com", "1") {
            let body = self.call(&Request::Extended(Extended::PosixRename { from, to }))?;
            return status_of(&body);
        }
        self.call_status(&Request::Rename { from, to })
    }

    /// SETSTAT.
    pub fn setstat(&mut self, path: &[u8], attrs: Attrs) -> SftpResult<()> {
        self.call_status(&Request::Setstat { path, attrs })
    }

    /// FSETSTAT.
    pub fn fsetstat(&mut self, handle: &[u8], attrs: Attrs) -> SftpResult<()> {
        self.call_status(&Request::Fsetstat { handle, attrs })
    }

    /// SYMLINK (OpenSSH's order: the target, then the new link).
    pub fn symlink(&mut self, target: &[u8], link: &[u8]) -> SftpResult<()> {
        self.call_status(&Request::Symlink { target, link })
    }

    /// hardlink@openssh.com.
    pub fn hardlink(&mut self, target: &[u8], link: &[u8]) -> SftpResult<()> {
        let body = self.call(&Request::Extended(Extended::Hardlink { target, link }))?;
        status_of(&body)
    }

    /// fsync@openssh.com.
    pub fn fsync(&mut self, handle: &[u8]) -> SftpResult<()> {
        let body = self.call(&Request::Extended(Extended::Fsync { handle }))?;
        status_of(&body)
    }

    /// statvfs@openssh.com.
    pub fn statvfs(&mut self, path: &[u8]) -> SftpResult<sluice_proto::sftp::reply::Statvfs> {
        let data = self.extended(Extended::Statvfs { path })?;
        response::statvfs(&data).map_err(|_| bad("statvfs"))
    }

    /// copy-data: the server copies `read_handle`'s bytes from 0 to its
    /// end into `write_handle` from 0.
    pub fn copy_data(&mut self, read_handle: &[u8], write_handle: &[u8]) -> SftpResult<()> {
        let body = self.call(&Request::Extended(Extended::CopyData {
            read_handle,
            read_offset: 0,
            read_len: 0,
            write_handle,
            write_offset: 0,
        }))?;
        status_of(&body)
    }

    /// users-groups-by-id@openssh.com: the server's names for `uids` and
    /// `gids`, in order (empty where it knows none).
    pub fn users_groups_by_id(
        &mut self,
        uids: Vec<u32>,
        gids: Vec<u32>,
    ) -> SftpResult<response::NameLists> {
        let (nu, ng) = (uids.len(), gids.len());
        let data = self.extended(Extended::UsersGroupsById { uids, gids })?;
        match response::users_groups(&data) {
            Ok((u, g)) if u.len() == nu && g.len() == ng => Ok((u, g)),
            _ => Err(bad("users-groups-by-id")),
        }
    }

    /// sha256-range@sluice.dev: the bytes hashed and their SHA-256.
    pub fn sha256_range(
        &mut self,
        path: &[u8],
        offset: u64,
        len: u64,
    ) -> SftpResult<(u64, [u8; 32])> {
        let data = self.extended(Extended::Sha256Range { path, offset, len })?;
        response::sha256_range(&data).map_err(|_| bad("sha256-range"))
    }
}

/// A STATUS reply: Ok for OK, else its code.
pub fn status_of(body: &[u8]) -> SftpResult<()> {
    match Reply::decode(body) {
        Ok(Reply::Status {
            code: Status::OK, ..
        }) => Ok(()),
        Ok(Reply::Status { code, .. }) => Err(SftpError::Remote(code)),
        _ => Err(bad("expected STATUS")),
    }
}

fn attrs_of(body: &[u8]) -> SftpResult<Attrs> {
    match Reply::decode(body) {
        Ok(Reply::Attrs { attrs, .. }) => Ok(attrs),
        Ok(Reply::Status { code, .. }) => Err(SftpError::Remote(code)),
        _ => Err(bad("expected ATTRS")),
    }
}

fn handle_of(body: &[u8]) -> SftpResult<Vec<u8>> {
    match Reply::decode(body) {
        Ok(Reply::Handle { handle, .. }) if handle.len() <= 256 => Ok(handle.to_vec()),
        Ok(Reply::Status { code, .. }) => Err(SftpError::Remote(code)),
        _ => Err(bad("expected HANDLE")),
    }
}

fn one_name(body: &[u8]) -> SftpResult<Vec<u8>> {
    match Reply::decode(body) {
        Ok(Reply::Name { mut entries, .. }) if entries.len() == 1 => {
            Ok(entries.pop().map(|e| e.filename).unwrap_or_default())
        }
        Ok(Reply::Status { code, .. }) => Err(SftpError::Remote(code)),
        _ => Err(bad("expected one NAME")),
    }
}

/// A session error as the message that ends the run.
pub(super) fn fatal(e: SftpError) -> String {
    match e {
        SftpError::Fatal(m) => m,
        e => e.to_string(),
    }
}
