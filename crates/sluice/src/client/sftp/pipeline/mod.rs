//! The request pipeline every file copy runs, in either direction (as
//! OpenSSH's do_download/do_upload, but started full rather than ramped
//! up): READs or WRITEs of the server's limits@openssh.com size, as many
//! in flight as depth.rs allows, replies taken in whatever order they come
//! and applied at their offsets (pwrite, or counted as acknowledged), so a
//! server that answers out of order is fine.
//!
//! [`drive`] is the loop both directions share: fill the pipeline, take
//! one reply, match it to its request, hand it to the direction. What
//! differs is a [`Side`]: read.rs ([`fetch`]: READs, holes, the probe past
//! the size) and write.rs ([`send_file`]: WRITEs read straight into the
//! request, the CLOSE behind the data). Nothing is copied or allocated per
//! request here beyond what the session does for every packet.

mod read;
mod write;

pub use read::fetch;
pub use write::{send_file, Closing};

use super::bwlimit::BwLimit;
use super::error::ProtocolError;
use super::errors::{TransferError, TransferResult};
use super::session::Sftp;
use sluice_proto::sftp::Reply;
use std::collections::HashMap;
use std::sync::Arc;

/// What a READ or WRITE loop needs of the transfer's options: `-R`, `-B`,
/// `-l` (`Options::pace`).
#[derive(Debug, Clone, Default)]
pub struct Pace {
    /// -R: requests in flight (0: sized from the path, see depth.rs).
    pub requests: usize,
    /// -B: the size of one READ or WRITE (0: the server's limit).
    pub buffer: u32,
    /// -l: the bandwidth limit, shared by every connection.
    pub limit: Option<Arc<BwLimit>>,
}

impl Pace {
    /// The size of one request when the server allows `max`.
    pub fn chunk(&self, max: u32) -> u32 {
        if self.buffer == 0 {
            max
        } else {
            self.buffer.min(max)
        }
    }
}

/// The bytes a READ or WRITE loop moves: from `start` to `end`; when not
/// `exact`, `end` is only what the file's size was (a download probes past
/// it, an upload reads to the local end), else the loop stops there (one
/// range of a file copied over several connections).
#[derive(Debug, Clone, Copy)]
pub struct Span {
    /// The first byte.
    pub start: u64,
    /// Where it ends (None: unknown).
    pub end: Option<u64>,
    /// `end` is a bound, not a size that may have changed.
    pub exact: bool,
}

/// Requests in flight by id: their offset and length.
type Pending = HashMap<u32, (u64, u32)>;

/// The direction-specific parts of the pipeline.
trait Side {
    /// How many requests may be in flight now.
    fn room(&self, s: &Sftp) -> usize;
    /// Sends the next request: its id, offset and length; None when there
    /// is nothing to send now.
    fn send_next(
        &mut self,
        s: &mut Sftp,
        pending: &Pending,
    ) -> TransferResult<Option<(u32, u64, u32)>>;
    /// Called each time the pipeline is as full as it gets.
    fn filled(&mut self, _s: &mut Sftp) -> TransferResult<()> {
        Ok(())
    }
    /// Whether nothing but the pending requests is awaited.
    fn idle(&self) -> bool {
        true
    }
    /// The next reply's body.
    fn recv(&mut self, s: &mut Sftp) -> TransferResult<Vec<u8>>;
    /// Takes a reply that answers no pending request (the CLOSE's): true
    /// if it was that.
    fn claims(&mut self, _id: u32, _body: &[u8]) -> bool {
        false
    }
    /// The answer to the pending request at `off` of `n` bytes.
    fn take(
        &mut self,
        s: &mut Sftp,
        reply: Reply<'_>,
        off: u64,
        n: u32,
        pending: &mut Pending,
    ) -> TransferResult<()>;
}

/// Runs `side`'s requests until every one is answered and the side waits
/// for nothing more; `pending` may hold requests already on their way.
fn drive(s: &mut Sftp, side: &mut impl Side, pending: &mut Pending) -> TransferResult<()> {
    loop {
        while pending.len() < side.room(s) {
            let Some((id, off, n)) = side.send_next(s, pending)? else {
                break;
            };
            pending.insert(id, (off, n));
        }
        side.filled(s)?;
        if pending.is_empty() && side.idle() {
            return Ok(());
        }
        let body = side.recv(s)?;
        let reply = Reply::decode(&body)
            .map_err(|e| TransferError::Fatal(ProtocolError::Malformed(e).into()))?;
        let id = reply.id().unwrap_or(0);
        if side.claims(id, &body) {
            continue;
        }
        let Some((off, n)) = pending.remove(&id) else {
            return Err(TransferError::Fatal(ProtocolError::UnknownId(id).into()));
        };
        side.take(s, reply, off, n, pending)?;
    }
}
