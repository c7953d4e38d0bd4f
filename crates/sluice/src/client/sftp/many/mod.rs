//! Many small files at once on one session, either way. A small file
//! costs round trips, not bytes: OPEN, WRITE or READ, CLOSE (and an
//! upload's rename of its temporary name) each wait for the server, so
//! one file at a time moves three or four files per second at 100 ms
//! whatever the link. Here up to `MAX_FILES` files are each a small state
//! machine advanced by whichever reply comes, so the round trips overlap.
//!
//! Only files up to [`SMALL`] bytes come here; larger ones go through
//! transfer.rs with its own pipeline. This file is the batch both
//! directions share ([`Many`]: files in flight, replies matched to them,
//! a share of the files dealt to other connections by spread.rs); up.rs
//! and down.rs are each direction's steps, each file ending as
//! transfer.rs's copies end (under `.NAME.sluice-part`, renamed into
//! place once whole).

mod down;
mod up;

pub(super) use down::Downloads;
pub(super) use up::Uploads;

use super::error::ProtocolError;
use super::options::Options;
use super::session::{Sftp, SftpResult};
use super::spread::{Batch, Job, Spread};
use sluice_proto::sftp::{Reply, Request};
use std::collections::HashMap;

/// Files up to this size go in a batch.
pub const SMALL: u64 = 1 << 20;
/// Files in flight at once.
const MAX_FILES: usize = 64;

/// Where a batch's messages about single files go.
type Say<'a> = &'a mut dyn FnMut(&str);

/// One direction's steps in a batch.
pub(super) trait Direction: Sized + 'static {
    /// One file in flight.
    type File;
    /// What a reply needs to know of its request besides the file (a
    /// READ's offset and length).
    type Tag;
    /// Starts `job` on this session if it goes this way.
    fn start(b: &mut Many<Self>, s: &mut Sftp, job: Job, say: Say<'_>) -> SftpResult<()>;
    /// The reply to one of file `n`'s requests, sent with `tag`.
    fn reply(
        b: &mut Many<Self>,
        s: &mut Sftp,
        n: usize,
        tag: Self::Tag,
        reply: Reply<'_>,
        say: Say<'_>,
    ) -> SftpResult<()>;
}

/// Small files of one direction in flight together.
pub(super) struct Many<D: Direction> {
    o: Options,
    files: HashMap<usize, D::File>,
    waiting: Waiting<D::Tag>,
    next: usize,
    /// Errors so far (each already printed by the caller's `say`).
    failed: bool,
    /// Other connections taking a share of the files (spread.rs).
    spread: Option<Spread>,
}

/// Request id -> the file it is for, and its tag.
struct Waiting<T>(HashMap<u32, (usize, T)>);

impl<T> Waiting<T> {
    /// Sends `req` for file `n`.
    fn ask(&mut self, s: &mut Sftp, req: &Request<'_>, n: usize, tag: T) -> SftpResult<()> {
        let id = s.send(req)?;
        self.0.insert(id, (n, tag));
        Ok(())
    }
}

impl<D: Direction> Many<D> {
    /// A batch with `o`'s settings (-p, -f, -l).
    pub(super) fn new(o: &Options) -> Many<D> {
        Many {
            o: o.clone(),
            files: HashMap::new(),
            waiting: Waiting(HashMap::new()),
            next: 0,
            failed: false,
            spread: Spread::new(o, |o| Box::new(Many::<D>::new(o))),
        }
    }

    /// Waits until every file is done here and on the other connections
    /// (taking back what they could not); Ok(all went well).
    pub(super) fn drain(&mut self, s: &mut Sftp, say: Say<'_>) -> SftpResult<bool> {
        let mut ok = self.finish(s, say)?;
        while let Some(job) = self.spread.as_ref().and_then(|sp| sp.take()) {
            D::start(self, s, job, say)?;
        }
        ok &= self.finish(s, say)?;
        Ok(ok & !self.spread.as_ref().is_some_and(|sp| sp.failed()))
    }

    /// Waits until every file is done; Ok(all went well).
    pub(super) fn finish(&mut self, s: &mut Sftp, say: Say<'_>) -> SftpResult<bool> {
        while !self.files.is_empty() {
            self.step(s, say)?;
        }
        Ok(!std::mem::take(&mut self.failed))
    }

    /// Deals `job` out: started here, or queued for another connection.
    fn offer(&mut self, s: &mut Sftp, job: Job, say: Say<'_>) -> SftpResult<()> {
        let here = match &mut self.spread {
            Some(sp) => sp.offer(job),
            None => Some(job),
        };
        match here {
            Some(job) => D::start(self, s, job, say),
            None => Ok(()),
        }
    }

    /// Waits for replies while `MAX_FILES` are in flight.
    fn make_room(&mut self, s: &mut Sftp, say: Say<'_>) -> SftpResult<()> {
        while self.files.len() >= MAX_FILES {
            self.step(s, say)?;
        }
        Ok(())
    }

    /// Takes `f` in, its first request to be sent as number `n`.
    fn add(&mut self, f: D::File) -> usize {
        let n = self.next;
        self.next += 1;
        self.files.insert(n, f);
        n
    }

    /// Takes one reply and moves its file on.
    fn step(&mut self, s: &mut Sftp, say: Say<'_>) -> SftpResult<()> {
        let body = s.recv()?;
        let reply = Reply::decode(&body).map_err(ProtocolError::Malformed)?;
        let id = reply.id().unwrap_or(0);
        let (n, tag) = (self.waiting.0.remove(&id)).ok_or(ProtocolError::UnknownId(id))?;
        if !self.files.contains_key(&n) {
            return Err(ProtocolError::UnknownId(id).into());
        }
        D::reply(self, s, n, tag, reply, say)
    }
}

impl<D: Direction> Batch for Many<D> {
    fn start(&mut self, s: &mut Sftp, job: Job, say: Say<'_>) -> SftpResult<()> {
        self.offer(s, job, say)
    }

    fn finish(&mut self, s: &mut Sftp, say: Say<'_>) -> SftpResult<bool> {
        Many::finish(self, s, say)
    }
}
