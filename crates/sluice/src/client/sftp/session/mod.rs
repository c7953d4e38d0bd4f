//! One SFTP session seen from the client (draft-ietf-secsh-filexfer-02,
//! OpenSSH's PROTOCOL 4.x): the session ([`Sftp`]) with its request ids,
//! and the pipelined [`Sftp::send`] and [`Sftp::recv`] transfers keep many
//! requests in flight through (pipeline/).
//!
//! - `start.rs`: the version exchange, limits, the first requests, and
//!   what is sent ahead of its answer (`ahead.rs` its types);
//! - `calls.rs`: each request as a call that waits for its reply;
//! - `error.rs`: [`SftpError`] taken in, a reply of the wrong kind;
//!   `reply.rs`: replies read into results.

mod ahead;
mod calls;
mod error;
mod reply;
mod start;

pub use ahead::{Behind, EarlyOpen, First, InFlight, OpenAhead};
pub use error::{fx2txt, SftpError, SftpResult, WriteFromError};
pub use reply::status_of;

use super::channel::Link;
use super::error::ProtocolError;
use error::bad;
use sluice_proto::sftp::{Attrs, Reply, Request};
use std::time::{Duration, Instant};

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

impl Sftp {
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
        self.link.send(&self.scratch)?;
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
            .map_err(|e| WriteFromError::Remote(e.into()))?;
        Ok((id, n))
    }

    /// The next reply body, in the order the server sent them.
    pub fn recv(&mut self) -> SftpResult<Vec<u8>> {
        loop {
            let body = self.link.recv()?;
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
            Err(e) => Err(ProtocolError::Undecodable(e).into()),
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
}
