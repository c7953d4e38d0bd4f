//! The READ side of the pipeline: READs up to the size we were told, then
//! one at a time past it to find the end (the file may have grown); short
//! answers leave holes asked for again; each byte written at its offset.

use super::super::depth::Depth;
use super::super::error::ProtocolError;
use super::super::errors::{LocalOp, Refusal, RemoteOp, TransferError, TransferResult};
use super::super::session::{InFlight, Sftp, SftpError};
use super::{drive, Pace, Pending, Side, Span};
use sluice_proto::sftp::{Reply, Request, Status};
use std::collections::VecDeque;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The READ loop: `requests` READs kept in flight from the first one,
/// each byte written counted through `tally` (offset, length); returns where the file
/// (or the exact span) ended.
#[allow(clippy::too_many_arguments)]
pub fn fetch(
    s: &mut Sftp,
    handle: &[u8],
    remote: &[u8],
    file: &File,
    span: Span,
    sent: &[InFlight],
    local: &Path,
    pace: &Pace,
    more: &mut dyn FnMut() -> Option<Span>,
    tally: &mut dyn FnMut(u64, u64),
) -> TransferResult<u64> {
    let len = pace.chunk(s.max_read);
    let mut r = Reads {
        handle,
        remote,
        file,
        local,
        pace,
        exact: span.exact,
        len,
        depth: Depth::new(pace.requests, len, s.rtt),
        // Requests go out up to the known size; past it one READ at a time
        // probes for the end (the file may have grown), the first right
        // behind the last READ within the size, so its EOF comes with the
        // data instead of a round trip later.
        horizon: span.end.unwrap_or(u64::MAX),
        next: span.start,
        holes: Vec::new(),
        eof_at: None,
        high: span.start,
        ready: VecDeque::new(),
        more,
        tally,
    };
    // READs already on their way (behind an open-as, session/), and the
    // answers to them that came already, read before any other.
    let mut pending = Pending::new();
    for ((id, off, n), body) in s.take_sent_ahead(sent) {
        pending.insert(id, (off, n as u32));
        r.next = r.next.max(off + n as u64);
        r.ready.extend(body);
    }
    drive(s, &mut r, &mut pending)?;
    Ok(r.eof_at.unwrap_or(r.high).max(r.high))
}

/// One download's READ loop.
struct Reads<'a> {
    handle: &'a [u8],
    remote: &'a [u8],
    file: &'a File,
    local: &'a Path,
    pace: &'a Pace,
    exact: bool,
    len: u32,
    depth: Depth,
    horizon: u64,
    next: u64,
    /// Short answers leave holes to ask for again.
    holes: Vec<(u64, u32)>,
    eof_at: Option<u64>,
    high: u64,
    ready: VecDeque<Vec<u8>>,
    more: &'a mut dyn FnMut() -> Option<Span>,
    tally: &'a mut dyn FnMut(u64, u64),
}

impl Reads<'_> {
    fn fatal(&self, e: SftpError) -> TransferError {
        TransferError::remote(RemoteOp::Read, self.remote, e)
    }

    fn changed(&self) -> TransferError {
        Refusal::ChangedDownload(self.remote.to_vec()).into()
    }

    /// The next READ's offset and length, None when none is due.
    fn pick(&mut self, pending: &Pending) -> Option<(u64, u32)> {
        if self.exact && self.next >= self.horizon && self.holes.is_empty() {
            // An exact span issued: the next one, on the same pipeline.
            let sp = (self.more)()?;
            self.next = sp.start;
            self.horizon = sp.end.unwrap_or(sp.start);
        }
        if let Some(h) = self.holes.pop() {
            return Some(h);
        }
        let (next, horizon) = (self.next, self.horizon);
        if self.eof_at.is_some() {
            return None;
        }
        // Past the size: one probe at a time.
        if next >= horizon && (self.exact || pending.values().any(|r| r.0 >= horizon)) {
            return None;
        }
        let n = if next < horizon {
            (horizon - next).min(u64::from(self.len)) as u32
        } else {
            self.len
        };
        self.next += u64::from(n);
        Some((next, n))
    }

    /// DATA for the READ at `off` of `n` bytes.
    fn data(&mut self, data: &[u8], off: u64, n: u32) -> TransferResult<()> {
        if data.is_empty() || data.len() > n as usize {
            return Err(TransferError::Fatal(
                ProtocolError::BadReadLength {
                    got: data.len(),
                    asked: n,
                }
                .into(),
            ));
        }
        if self.eof_at.is_some_and(|e| off >= e) {
            return Err(self.changed());
        }
        self.file
            .write_all_at(data, off)
            .map_err(|e| TransferError::local(LocalOp::WriteTo, self.local, e))?;
        let got = data.len() as u32;
        self.high = self.high.max(off + u64::from(got));
        let end = off + u64::from(got);
        if got < n && !self.exact && end >= self.horizon {
            // Short at or past the size we were told (a READ sent ahead
            // of the STAT's answer): the file ends there, as a probe's EOF
            // would say; nothing to ask again.
            self.eof_at = Some(self.eof_at.map_or(end, |e| e.min(end)));
        } else if got < n {
            self.holes.push((end, n - got));
        }
        if off >= self.horizon && self.eof_at.is_none() && !self.exact {
            // A probe past the size we were told found data (the file
            // grew): keep going, one more chunk each time.
            self.horizon = self.next;
        }
        self.depth.delivered(u64::from(got));
        (self.tally)(off, u64::from(got));
        Ok(())
    }
}

impl Side for Reads<'_> {
    fn room(&self, _s: &Sftp) -> usize {
        self.depth.get()
    }

    fn send_next(
        &mut self,
        s: &mut Sftp,
        pending: &Pending,
    ) -> TransferResult<Option<(u32, u64, u32)>> {
        let Some((off, n)) = self.pick(pending) else {
            return Ok(None);
        };
        if let Some(l) = &self.pace.limit {
            l.pace(u64::from(n));
        }
        let id = s
            .send(&Request::Read {
                handle: self.handle,
                offset: off,
                len: n,
            })
            .map_err(|e| self.fatal(e))?;
        Ok(Some((id, off, n)))
    }

    fn recv(&mut self, s: &mut Sftp) -> TransferResult<Vec<u8>> {
        match self.ready.pop_front() {
            Some(b) => Ok(b),
            None => s.recv().map_err(|e| self.fatal(e)),
        }
    }

    fn take(
        &mut self,
        _s: &mut Sftp,
        reply: Reply<'_>,
        off: u64,
        n: u32,
        _pending: &mut Pending,
    ) -> TransferResult<()> {
        match reply {
            Reply::Data { data, .. } => self.data(data, off, n),
            Reply::Status {
                code: Status::EOF, ..
            } => {
                if self.high > off || self.exact {
                    return Err(self.changed());
                }
                self.eof_at = Some(self.eof_at.map_or(off, |e: u64| e.min(off)));
                self.holes.retain(|h| h.0 < off);
                Ok(())
            }
            Reply::Status { code, message, .. } => {
                Err(self.fatal(SftpError::status(code, message)))
            }
            _ => Err(TransferError::Fatal(
                ProtocolError::UnexpectedReplyTo("READ").into(),
            )),
        }
    }
}
