//! Packet crypto detached from the connection, so a runtime can seal or open
//! a batch of packets on several threads.
//!
//! Every construction derives its nonce or counter from the packet's
//! [`PacketPos`], so the packets of a batch are independent: the engine
//! frames them in wire order, hands the runtime one [`CryptoJob`] per packet
//! (disjoint slices of the runtime's own buffer), and the runtime runs them
//! wherever it likes. Jobs the runtime leaves undone are run by the engine
//! before it returns, so a batch is always complete when the buffer is
//! usable again: nothing unsealed can reach the socket.

use crate::core::Connection;
use crate::crypto::{Opener, PacketPos, Sealer};
use crate::error::Error;
use std::sync::Arc;

/// One packet's sealing or opening.
pub struct CryptoJob<'a> {
    work: Work<'a>,
    done: bool,
    ok: bool,
}

enum Work<'a> {
    Seal(&'a dyn Sealer, PacketPos, &'a mut [u8], &'a mut [u8]),
    Open(&'a dyn Opener, PacketPos, &'a mut [u8], &'a [u8]),
}

impl CryptoJob<'_> {
    /// Does the work; a second call does nothing.
    pub fn run(&mut self) {
        if self.done {
            return;
        }
        self.ok = match &mut self.work {
            Work::Seal(s, pos, packet, tag) => {
                s.seal(*pos, packet, tag);
                true
            }
            Work::Open(o, pos, packet, tag) => o.open(*pos, packet, tag).is_ok(),
        };
        self.done = true;
    }

    /// Bytes the job covers, for balancing work between threads.
    pub fn len(&self) -> usize {
        match &self.work {
            Work::Seal(_, _, p, t) => p.len() + t.len(),
            Work::Open(_, _, p, t) => p.len() + t.len(),
        }
    }

    /// True for a job over no bytes (never produced by the engine).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A packet framed in the output buffer and waiting to be sealed.
pub(crate) struct PendingSeal {
    pub(crate) sealer: Arc<dyn Sealer>,
    pub(crate) pos: PacketPos,
    /// Where the packet starts in the output buffer.
    pub(crate) start: usize,
    /// `4 + packet_length`: the bytes sealed; the tag follows.
    pub(crate) sealed_len: usize,
    pub(crate) tag_len: usize,
}

/// Runs `run` over jobs for `pending` (in increasing buffer order), then
/// seals whatever it left undone.
pub(crate) fn seal_all(
    pending: &[PendingSeal],
    out: &mut [u8],
    run: &mut dyn FnMut(&mut [CryptoJob<'_>]),
) {
    let mut jobs = Vec::with_capacity(pending.len());
    let mut rest = out;
    let mut at = 0;
    for p in pending {
        let skip = p.start.saturating_sub(at);
        let Some((_, tail)) = rest.split_at_mut_checked(skip) else {
            break;
        };
        let Some((packet, tail)) = tail.split_at_mut_checked(p.sealed_len) else {
            break;
        };
        let Some((tag, tail)) = tail.split_at_mut_checked(p.tag_len) else {
            break;
        };
        rest = tail;
        at = p.start + p.sealed_len + p.tag_len;
        jobs.push(CryptoJob {
            work: Work::Seal(p.sealer.as_ref(), p.pos, packet, tag),
            done: false,
            ok: false,
        });
    }
    if jobs.len() > 1 {
        run(&mut jobs);
    }
    jobs.iter_mut().for_each(CryptoJob::run);
}

/// A packet found whole in the input: where it is and how to open it.
pub(crate) struct AheadPacket {
    pub(crate) pos: PacketPos,
    /// `4 + packet_length`.
    pub(crate) sealed_len: usize,
    pub(crate) tag_len: usize,
}

/// Opens the whole packets at the front of `input` (described by `found`,
/// consecutive from offset 0) through `run`; returns each packet's verdict.
pub(crate) fn open_all(
    opener: &dyn Opener,
    found: &[AheadPacket],
    input: &mut [u8],
    run: &mut dyn FnMut(&mut [CryptoJob<'_>]),
    verdicts: &mut impl Extend<bool>,
) {
    let mut jobs = Vec::with_capacity(found.len());
    let mut rest = input;
    for p in found {
        let Some((packet, tail)) = rest.split_at_mut_checked(p.sealed_len) else {
            break;
        };
        let Some((tag, tail)) = tail.split_at_mut_checked(p.tag_len) else {
            break;
        };
        rest = tail;
        jobs.push(CryptoJob {
            work: Work::Open(opener, p.pos, packet, tag),
            done: false,
            ok: false,
        });
    }
    run(&mut jobs);
    jobs.iter_mut().for_each(CryptoJob::run);
    verdicts.extend(jobs.iter().map(|j| j.ok));
}

/// The runtime's side of batch crypto.
impl Connection {
    /// Turns batch crypto on or off. When on, packets framed by
    /// `send_data`/`finish_data_slot` wait for [`Connection::seal_batch`]
    /// (or the next `poll_transmit`) to be sealed, and
    /// [`Connection::open_batch`] opens whole received packets ahead. The
    /// runtime must not write `out` before one of those two calls returns.
    pub fn set_batch_crypto(&mut self, on: bool) {
        self.send.defer = on;
        self.batch_open = on;
    }

    /// Seals the packets framed in `out` since the last seal, offering them
    /// to `run` (which may run the jobs on other threads); jobs `run` leaves
    /// undone are sealed before this returns.
    pub fn seal_batch(&mut self, out: &mut [u8], run: &mut dyn FnMut(&mut [CryptoJob<'_>])) {
        self.send.seal_pending(out, run);
    }

    /// True while packets in the output buffer wait for [`Connection::seal_batch`].
    pub fn has_unsealed(&self) -> bool {
        self.send.has_pending()
    }

    /// Opens the whole packets at the front of `input` as one batch through
    /// `run`, so the following `handle_input` calls only check and dispatch
    /// them. Does nothing during a key exchange (keys may change between
    /// packets), with batch crypto off, or in an engine that will hand its
    /// transport over (the input behind the handover point stays raw).
    /// Returns the packets opened.
    pub fn open_batch(
        &mut self,
        input: &mut [u8],
        run: &mut dyn FnMut(&mut [CryptoJob<'_>]),
    ) -> Result<usize, Error> {
        if !self.batch_open
            || self.handover
            || self.closed
            || self.peer_version.is_none()
            || self.kex.session_id.is_none()
            || self.kex.in_progress()
        {
            return Ok(0);
        }
        self.recv
            .open_ahead(input, run)
            .map_err(|v| self.fail(v.into()))
    }
}
