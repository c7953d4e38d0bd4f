//! One striped channel's shared state. Every pump thread (the primary's and
//! each secondary's) and the local I/O threads take the one mutex briefly;
//! nobody waits while holding it except on its condition variable. Who
//! waits how:
//!
//! - a pump sleeping in poll(2) is woken through a wake fd: each carrier's
//!   own when the sender has something new (data pushed, room opened by an
//!   acknowledgement, a lost carrier's chunks back in line), the primary's
//!   when an acknowledgement is due or the end may go out;
//! - the local threads wait on the condition variable: the reader of the
//!   local source for room in the sender, the writer to the local sink for
//!   bytes in order.

use crate::net::pump::WakeFd;
use sluice_proto::stripe::codec::{Ack, Chunk};
use sluice_proto::stripe::reassemble::Reassembler;
use sluice_proto::stripe::send::{CarrierId, StripeSender};
use sluice_proto::stripe::{StripeError, DEFAULT_CHUNK, PLAIN_MAX};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Most of the command's stderr held for the primary (server).
const STDERR_HELD: usize = 256 * 1024;

/// The striped channel's state, shared.
pub struct Hub {
    st: Mutex<State>,
    cond: Condvar,
    /// Wakes the primary's pump: an acknowledgement is due, stderr or the
    /// end may go out, or the transfer failed.
    primary: WakeFd,
    /// The channel's number on the primary, for messages.
    channel: u32,
}

pub(super) struct State {
    pub(super) tx: StripeSender,
    pub(super) rx: Reassembler,
    /// Live carriers' wake fds.
    carriers: Vec<(CarrierId, Arc<WakeFd>)>,
    /// Connections with a carrier of this channel (at most one each).
    pub(super) conns: Vec<u64>,
    /// The primary connection (where the striped channel is), once set.
    primary: Option<u64>,
    /// The carrier on the primary, while it is up: what it carries arrives
    /// before anything sent on the striped channel after it.
    primary_carrier: Option<CarrierId>,
    /// Plain data received so far (the stream's first bytes, sent as
    /// CHANNEL_DATA on the striped channel before the first chunk).
    plain_in: u64,
    /// The server refused to stripe after plain data went: the channel is
    /// an ordinary one, sent through the sender as plain data.
    pub(super) plain_only: bool,
    /// Connections whose carrier is to close (given back by `Streams
    /// auto`): their chunks go again on the others once it has.
    withdrawn: Vec<u64>,
    /// An acknowledgement for the primary to send.
    pub(super) ack_due: Option<Ack>,
    /// The local sink has every byte (the writer thread is done).
    pub(super) output_done: bool,
    /// The command's stderr, for the primary to send (server).
    pub(super) stderr: VecDeque<u8>,
    pub(super) stderr_eof: bool,
    /// Why the transfer cannot complete; the primary fails with it.
    pub(super) failed: Option<Failure>,
    /// The striped channel closed: carriers close, threads stop.
    pub(super) closed: bool,
}

/// How a striped transfer failed; `Display` gives the text the run fails
/// with (for `Protocol`, also the disconnect's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The peer broke the protocol: the connection ends with its text.
    Protocol(StripeError),
    /// Chunks are left with no carrier to take them.
    Stranded {
        /// The striped channel's number on the primary.
        channel: u32,
        /// Bytes sent on carriers.
        sent: u64,
        /// Bytes the peer acknowledged.
        acked: u64,
    },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Protocol(e) => e.fmt(f),
            Failure::Stranded {
                channel,
                sent,
                acked,
            } => write!(
                f,
                "channel {channel}: striped transfer failed: every connection carrying it was lost with {sent} bytes sent and {acked} acknowledged"
            ),
        }
    }
}

impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Failure::Protocol(e) => Some(e),
            Failure::Stranded { .. } => None,
        }
    }
}

impl Hub {
    /// A hub for the striped channel numbered `channel` on the primary.
    pub fn new(channel: u32) -> std::io::Result<Arc<Hub>> {
        let mut rx = Reassembler::new(super::WINDOW);
        // The first acknowledgement goes at once (received 0): no chunk
        // moves before the sender has read one.
        let ack_due = rx.poll_ack();
        Ok(Arc::new(Hub {
            st: Mutex::new(State {
                tx: StripeSender::new(super::WINDOW, DEFAULT_CHUNK),
                rx,
                carriers: Vec::new(),
                conns: Vec::new(),
                primary: None,
                primary_carrier: None,
                plain_in: 0,
                plain_only: false,
                withdrawn: Vec::new(),
                ack_due,
                output_done: false,
                stderr: VecDeque::new(),
                stderr_eof: false,
                failed: None,
                closed: false,
            }),
            cond: Condvar::new(),
            primary: WakeFd::new()?,
            channel,
        }))
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        // A thread that panicked holding the lock left plain data behind:
        // the transfer's own checks still hold, so go on with it.
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn wait<'a>(&self, g: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.cond.wait(g).unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes every waiter: local threads and every pump.
    pub(super) fn wake_all(&self, st: &State) {
        self.cond.notify_all();
        for (_, w) in &st.carriers {
            w.wake();
        }
        self.primary.wake();
    }

    pub(super) fn wake_carriers(&self, st: &State) {
        for (_, w) in &st.carriers {
            w.wake();
        }
    }

    pub(super) fn wake_primary(&self) {
        self.primary.wake();
    }

    pub(super) fn notify_local(&self) {
        self.cond.notify_all();
    }

    pub(super) fn primary_fd(&self) -> std::os::fd::RawFd {
        self.primary.raw()
    }

    pub(super) fn clear_primary(&self) {
        self.primary.clear();
    }

    /// The channel's number on the primary.
    pub fn channel(&self) -> u32 {
        self.channel
    }

    /// Names the primary connection (before any carrier opens): chunks on
    /// its carrier travel in order with the striped channel's EOF.
    pub fn set_primary(&self, conn: super::ConnKey) {
        self.lock().primary = Some(conn.0);
    }

    /// Whether CHANNEL_EOF may go out on the striped channel: every byte
    /// sent is acknowledged, or the bytes not acknowledged are all on the
    /// primary's carrier, ahead of the EOF on the same connection (an
    /// upload's end then costs no round trip more than an unstriped one's).
    pub(super) fn eof_may_go(st: &State) -> bool {
        if st.tx.all_acked() {
            return true;
        }
        let carrier = st
            .primary_carrier
            .filter(|_| st.primary.is_some_and(|p| !Self::is_withdrawn(st, p)));
        st.tx.ends_behind(carrier)
    }

    /// Lets the stream's first `cap` bytes go as plain data on the striped
    /// channel, ahead of the stripe request's answer (client).
    pub fn allow_plain(&self, cap: u64) {
        self.lock().tx.allow_plain(cap);
    }

    /// The server refused to stripe after plain data went (it took that as
    /// ordinary data): the rest goes the same way, nothing is acknowledged,
    /// and the server's data goes to our fds, not through the hub.
    pub fn plain_only(&self) {
        let mut st = self.lock();
        st.tx.plain_only();
        st.plain_only = true;
        st.ack_due = None;
        st.output_done = true;
        self.wake_all(&st);
    }

    /// Wakes whoever sends what was just pushed: the carriers, and the
    /// primary while plain data may go.
    pub(super) fn wake_senders(&self, st: &State) {
        self.wake_carriers(st);
        if st.tx.plain_open() {
            self.primary.wake();
        }
    }

    /// Plain data from the client on the striped channel (server): the
    /// stream's bytes from 0 on, in order, at most [`PLAIN_MAX`] of them.
    pub(super) fn on_plain(&self, data: &[u8]) {
        let mut st = self.lock();
        let at = st.plain_in;
        if at.saturating_add(data.len() as u64) > PLAIN_MAX {
            self.fail_protocol(
                &mut st,
                StripeError::Malformed("more plain data on a striped channel than allowed"),
            );
            return;
        }
        st.plain_in = at + data.len() as u64;
        let r = st.rx.on_chunk(Chunk { offset: at, data });
        if let Err(e) = r {
            self.fail_protocol(&mut st, e);
            return;
        }
        self.after_receipt(&mut st);
    }

    /// A new carrier on connection `conn`; None when that connection has
    /// one for this channel already, or the channel is closed.
    pub(super) fn add_carrier(&self, conn: u64, wake: Arc<WakeFd>) -> Option<CarrierId> {
        let mut st = self.lock();
        if st.closed || st.conns.contains(&conn) {
            return None;
        }
        st.conns.push(conn);
        let id = st.tx.add_carrier();
        if st.primary == Some(conn) {
            st.primary_carrier = Some(id);
        }
        st.carriers.push((id, wake));
        self.wake_all(&st);
        Some(id)
    }

    /// A carrier closed or its connection ended (`conn`'s): its chunks go
    /// again on the others; with none left and bytes outstanding, the
    /// transfer fails.
    pub(super) fn carrier_lost(&self, id: CarrierId, conn: u64) {
        let mut st = self.lock();
        let how = if Self::is_withdrawn(&st, conn) {
            "closed as asked"
        } else {
            "was lost"
        };
        st.tx.carrier_lost(id);
        if st.primary_carrier == Some(id) {
            st.primary_carrier = None;
        }
        st.carriers.retain(|(c, _)| *c != id);
        if st.tx.is_stranded() && !st.closed && st.failed.is_none() {
            st.failed = Some(Failure::Stranded {
                channel: self.channel,
                sent: st.tx.sent(),
                acked: st.tx.acked(),
            });
        } else if st.failed.is_none() && !st.closed {
            crate::log!(
                Debug1,
                "channel {}: a carrier {how}; its unacknowledged chunks go again on the {} left",
                self.channel,
                st.carriers.len()
            );
        }
        self.wake_all(&st);
    }

    /// Closes the carrier on connection `conn` (a step of `Streams auto`
    /// that did not help): it takes no new chunk and its pump closes the
    /// channel; what went on it unacknowledged goes again on the others
    /// (PROTOCOL.md: a carrier that closes).
    pub fn withdraw(&self, conn: super::ConnKey) {
        let mut st = self.lock();
        if !st.withdrawn.contains(&conn.0) {
            st.withdrawn.push(conn.0);
        }
        self.wake_carriers(&st);
    }

    /// Whether the carrier on connection `conn` is to close.
    pub(super) fn is_withdrawn(st: &State, conn: u64) -> bool {
        st.withdrawn.contains(&conn)
    }

    /// A chunk from a carrier, into the reassembler.
    pub(super) fn on_chunk(&self, data: &[u8]) {
        let mut st = self.lock();
        let r = Chunk::decode(data).and_then(|c| st.rx.on_chunk(c));
        if let Err(e) = r {
            self.fail_protocol(&mut st, e);
            return;
        }
        self.after_receipt(&mut st);
    }

    /// Bytes arrived: the local writer may go on, an acknowledgement may be due.
    fn after_receipt(&self, st: &mut State) {
        if !st.rx.readable().is_empty() {
            self.notify_local();
        }
        if let Some(a) = st.rx.poll_ack() {
            st.ack_due = Some(a);
            self.wake_primary();
        }
    }

    pub(super) fn fail_protocol(&self, st: &mut State, e: StripeError) {
        if st.failed.is_none() {
            st.failed = Some(Failure::Protocol(e));
        }
        self.wake_all(st);
    }

    /// The failure, if the transfer failed.
    pub fn failure(&self) -> Option<Failure> {
        self.lock().failed.clone()
    }

    /// The striped channel closed (or its connection ended): carriers
    /// close, local threads stop waiting.
    pub fn close(&self) {
        let mut st = self.lock();
        st.closed = true;
        self.wake_all(&st);
    }

    /// Why the transfer did not complete, if it did not: its failure, or
    /// (the connection ended under it) what was sent, acknowledged and
    /// received. None once every byte went both ways.
    pub fn incomplete(&self) -> Option<String> {
        let st = self.lock();
        if let Some(f) = &st.failed {
            return Some(f.to_string());
        }
        if st.tx.all_acked() && st.output_done {
            return None;
        }
        Some(format!(
            "channel {}: striped transfer incomplete: {} bytes sent, {} acknowledged; {} bytes received",
            self.channel,
            st.tx.sent(),
            st.tx.acked(),
            st.rx.received()
        ))
    }

    /// Whether the channel closed.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// The local sink got every byte (the writer thread finished).
    pub fn output_done(&self) -> bool {
        self.lock().output_done
    }

    /// Bytes acknowledged by the peer, and bytes received in order.
    pub fn progress(&self) -> (u64, u64) {
        let st = self.lock();
        (st.tx.acked(), st.rx.received())
    }

    /// The bulk of the transfer is ours to send and all of it has gone out
    /// (its source ended, nothing waits to be sent): nothing more to speed
    /// up.
    pub fn sending_ended(&self) -> bool {
        let st = self.lock();
        let pushed = st.tx.acked() + st.tx.retained() as u64;
        st.tx.is_finished() && st.tx.sent() >= pushed && pushed > st.rx.received()
    }

    /// The peer's CHANNEL_EOF on the striped channel (from the handler,
    /// as the event arrives): it came after every byte was acknowledged.
    pub fn on_peer_eof(&self) {
        let mut st = self.lock();
        if let Err(e) = st.rx.on_eof() {
            self.fail_protocol(&mut st, e);
        }
        self.notify_local();
    }

    /// The command's stderr has no source (client, or no stderr pipe).
    pub fn no_stderr(&self) {
        self.lock().stderr_eof = true;
    }

    pub(super) fn stderr_room(st: &State) -> usize {
        STDERR_HELD.saturating_sub(st.stderr.len())
    }
}
