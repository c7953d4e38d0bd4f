//! The WRITE side of the pipeline: the local file read straight into each
//! WRITE request (session/'s `send_write_from`), a few of the server's
//! windows in flight, and the CLOSE (or close-rename@sluice.dev) right
//! behind the last WRITE when the caller has nothing to do in between.

use super::super::depth::Depth;
use super::super::error::ProtocolError;
use super::super::errors::{LocalOp, Refusal, RemoteOp, TransferError, TransferResult};
use super::super::session::{self, InFlight, Sftp, SftpError, SftpResult, WriteFromError};
use super::{drive, Pace, Pending, Side, Span};
use sluice_proto::sftp::{Extended, Reply, Request, Status};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// What [`send_file`] sends right behind the last WRITE.
#[derive(Clone, Copy)]
pub enum Closing<'a> {
    /// Nothing: the caller goes on with the handle.
    No,
    /// CLOSE.
    Close,
    /// close-rename@sluice.dev to this name: the file is renamed into
    /// place only if every WRITE on the handle succeeded (PROTOCOL.md).
    CloseRenameTo(&'a [u8]),
}

/// The WRITE loop: `requests` WRITEs in flight, each acknowledged by a
/// STATUS and counted through `tally` (offset, length). With `close` the
/// handle's CLOSE goes right behind the last WRITE instead of a round trip
/// later: a server takes one handle's requests in order (OpenSSH's
/// sftp-server and sluiced take all in order), so the WRITEs are done when
/// it closes. Some(the CLOSE's status) once everything was answered; a
/// failed WRITE is reported as before (the file is then removed or kept for
/// a resume by the caller). `sent`: WRITEs of the span's first bytes
/// already on their way (behind an open-as, session/), taken as in flight.
#[allow(clippy::too_many_arguments)]
pub fn send_file(
    s: &mut Sftp,
    handle: &[u8],
    file: &File,
    span: Span,
    sent: &[InFlight],
    local: &Path,
    remote: &[u8],
    pace: &Pace,
    more: &mut dyn FnMut() -> Option<Span>,
    tally: &mut dyn FnMut(u64, u64),
    close: Closing<'_>,
) -> TransferResult<Option<SftpResult<()>>> {
    let len = pace.chunk(s.max_write);
    let mut w = Writes {
        handle,
        file,
        local,
        remote,
        pace,
        exact: span.exact,
        len: len as usize,
        depth: Depth::new(pace.requests, len, s.rtt),
        next: span.start,
        // An exact span stops at its end; otherwise the local end decides.
        end: match span.end {
            Some(e) if span.exact => e,
            _ => u64::MAX,
        },
        local_eof: false,
        close,
        close_id: None,
        closed: None,
        more,
        tally,
    };
    let mut pending = Pending::new();
    w.take_sent_ahead(s, sent, &mut pending)?;
    drive(s, &mut w, &mut pending)?;
    Ok(w.closed)
}

/// One upload's WRITE loop.
struct Writes<'a> {
    handle: &'a [u8],
    file: &'a File,
    local: &'a Path,
    remote: &'a [u8],
    pace: &'a Pace,
    exact: bool,
    len: usize,
    depth: Depth,
    next: u64,
    end: u64,
    local_eof: bool,
    close: Closing<'a>,
    /// The CLOSE's id once sent, and its answer once read.
    close_id: Option<u32>,
    closed: Option<SftpResult<()>>,
    more: &'a mut dyn FnMut() -> Option<Span>,
    tally: &'a mut dyn FnMut(u64, u64),
}

impl Writes<'_> {
    fn fatal(&self, e: SftpError) -> TransferError {
        TransferError::remote(RemoteOp::Write, self.remote, e)
    }

    /// WRITEs sent ahead (session/): those answered counted or failed,
    /// the others taken as pending. A failure ends the upload once the
    /// others are answered.
    fn take_sent_ahead(
        &mut self,
        s: &mut Sftp,
        sent: &[InFlight],
        pending: &mut Pending,
    ) -> TransferResult<()> {
        let mut failed_ahead = None;
        for ((id, off, n), done) in s.take_sent_ahead(sent) {
            self.next = self.next.max(off + n as u64);
            match done.map(|b| session::status_of(&b)) {
                None => {
                    pending.insert(id, (off, n as u32));
                }
                Some(Ok(())) => {
                    self.depth.delivered(n as u64);
                    (self.tally)(off, n as u64);
                }
                Some(Err(e)) => failed_ahead = failed_ahead.or(Some(e)),
            }
        }
        let Some(e) = failed_ahead else {
            return Ok(());
        };
        // As a failed WRITE below: the others' answers first.
        while !pending.is_empty() {
            let b = s.recv().map_err(|e| self.fatal(e))?;
            if let Ok(r) = Reply::decode(&b) {
                pending.remove(&r.id().unwrap_or(0));
            }
        }
        Err(self.fatal(e))
    }

    /// A WRITE failed with `why`: the other WRITEs (and a CLOSE sent)
    /// finish before it is reported.
    fn failed(&mut self, s: &mut Sftp, why: SftpError, pending: &mut Pending) -> TransferError {
        while !pending.is_empty() || (self.close_id.is_some() && self.closed.is_none()) {
            let b = match s.recv() {
                Ok(b) => b,
                Err(e) => return self.fatal(e),
            };
            if let Ok(r) = Reply::decode(&b) {
                let id = r.id().unwrap_or(0);
                if self.close_id == Some(id) {
                    self.closed = Some(Ok(()));
                }
                pending.remove(&id);
            }
        }
        self.fatal(why)
    }
}

impl Side for Writes<'_> {
    /// Four of the server's largest windows in flight at most
    /// (Depth::within): what it grants is what moves per round trip.
    fn room(&self, s: &Sftp) -> usize {
        let room = self.depth.within(4 * u64::from(s.peer_window()));
        if self.local_eof {
            0
        } else {
            room
        }
    }

    fn send_next(
        &mut self,
        s: &mut Sftp,
        _pending: &Pending,
    ) -> TransferResult<Option<(u32, u64, u32)>> {
        if self.exact && self.next >= self.end {
            // An exact span sent: the next one, on the same pipeline.
            match (self.more)() {
                Some(sp) => {
                    self.next = sp.start;
                    self.end = sp.end.unwrap_or(sp.start);
                }
                // The last span of a resumed file: the CLOSE may go.
                None if !matches!(self.close, Closing::No) => {
                    self.local_eof = true;
                    return Ok(None);
                }
                None => return Ok(None),
            }
        }
        let want = (self.end - self.next).min(self.len as u64) as usize;
        let next = self.next;
        // Read straight into the request (session/); -l paces what was
        // read before it is sent.
        let (file, limit) = (self.file, &self.pace.limit);
        let fill = |b: &mut [u8]| {
            let n = read_full(file, b, next)?;
            if let Some(l) = limit {
                l.pace(n as u64);
            }
            Ok(n)
        };
        let (id, n) = s
            .send_write_from(self.handle, next, want, fill)
            .map_err(|e| match e {
                WriteFromError::Local(e) => TransferError::local(LocalOp::Read, self.local, e),
                WriteFromError::Remote(e) => self.fatal(e),
            })?;
        if self.exact && n < want {
            return Err(Refusal::ChangedUpload(self.local.to_path_buf()).into());
        }
        if n == 0 {
            self.local_eof = true;
            return Ok(None);
        }
        self.next += n as u64;
        Ok(Some((id, next, n as u32)))
    }

    /// The CLOSE behind the data once the local end is reached.
    fn filled(&mut self, s: &mut Sftp) -> TransferResult<()> {
        if !self.local_eof || self.close_id.is_some() {
            return Ok(());
        }
        let handle = self.handle;
        let req = match self.close {
            Closing::No => return Ok(()),
            Closing::Close => Request::Close { handle },
            Closing::CloseRenameTo(to) => Request::Extended(Extended::CloseRename { handle, to }),
        };
        self.close_id = Some(s.send(&req).map_err(|e| self.fatal(e))?);
        Ok(())
    }

    fn idle(&self) -> bool {
        self.close_id.is_none() || self.closed.is_some()
    }

    fn recv(&mut self, s: &mut Sftp) -> TransferResult<Vec<u8>> {
        s.recv().map_err(|e| self.fatal(e))
    }

    fn claims(&mut self, id: u32, body: &[u8]) -> bool {
        if self.close_id == Some(id) && self.closed.is_none() {
            self.closed = Some(session::status_of(body));
            return true;
        }
        false
    }

    fn take(
        &mut self,
        s: &mut Sftp,
        reply: Reply<'_>,
        off: u64,
        n: u32,
        pending: &mut Pending,
    ) -> TransferResult<()> {
        match reply {
            Reply::Status {
                code: Status::OK, ..
            } => {
                self.depth.delivered(u64::from(n));
                (self.tally)(off, u64::from(n));
                Ok(())
            }
            Reply::Status { code, message, .. } => {
                Err(self.failed(s, SftpError::status(code, message), pending))
            }
            _ => Err(TransferError::Fatal(
                ProtocolError::UnexpectedReplyTo("WRITE").into(),
            )),
        }
    }
}

fn read_full(f: &File, buf: &mut [u8], off: u64) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read_at(buf.get_mut(n..).unwrap_or_default(), off + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}
