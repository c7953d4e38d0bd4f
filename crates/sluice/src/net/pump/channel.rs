//! What sits behind one channel ([`ChanIo`]: its streams each way, or an
//! in-process endpoint) and the channel's EOF and close policy, as OpenSSH
//! applies it (RFC 4254 5.3; OpenSSH's nchan.c):
//!
//! - our EOF goes once every outgoing stream reached end of file;
//! - on the peer's EOF, once its data is written out, a sink that asks for
//!   it is closed (a command's stdin) or shut down for writing (a socket,
//!   so the far end can still answer); an in-process end is told;
//! - a sink whose reader went away (EPIPE) discards what follows, and the
//!   channel closes once our sources are done too, where asked
//!   (`chan_write_failed`);
//! - on close, what waits for a sink is written out first, blocking if it
//!   must, so no received byte is lost.

use super::endpoint::{self, ChannelEndpoint, InProcess};
use super::stream::{ChanFd, Ext, Read, Stream, Wrote};
use sluice_proto::{ChannelId, Connection};
use std::os::fd::{OwnedFd, RawFd};

/// The other end of one channel and the data waiting for it.
#[derive(Default)]
pub struct ChanIo {
    /// Read and sent, by [`Ext`]: stdout (CHANNEL_DATA), stderr.
    outgoing: [Option<Stream>; 2],
    /// The peer's data written here, by [`Ext`].
    incoming: [Option<Stream>; 2],
    /// The in-process end, for a channel without fds. Owned fds close as
    /// their streams drop; the in-process end hears of it as it drops.
    endpoint: Option<InProcess>,
    /// Close the data sink once the peer's EOF arrived and everything is
    /// written (a command's stdin); false for our own stdout.
    pub close_sink_on_eof: bool,
    /// The data sink is a socket: on the peer's EOF, once drained, shut down
    /// its write side (the far end sees EOF while it can still send to us).
    /// Sources and sinks are separate fds (a socket's `dup`), each closed
    /// on its own.
    pub shutdown_sink_on_eof: bool,
    /// Close the channel once the data sink failed and the sources are done
    /// (a client whose stdout reader went away); a server waits for its
    /// command's exit instead.
    pub close_when_sink_fails: bool,
    peer_eof: bool,
    /// The in-process end was told of the peer's EOF.
    eof_told: bool,
    eof_sent: bool,
    /// Writing to the data sink failed (EPIPE: the reader went away); what
    /// the peer sends from now on is discarded, and the channel closes once
    /// our sources are done too, as OpenSSH does (`chan_write_failed`).
    sink_failed: bool,
    /// Our receive window as last logged.
    pub(crate) recv_window: u32,
    /// The largest send window the peer granted (an in-process end is
    /// told each new largest).
    peer_window: u32,
}

impl std::fmt::Debug for ChanIo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChanIo")
            .field("outgoing", &self.outgoing)
            .field("incoming", &self.incoming)
            .field("in_process", &self.endpoint.is_some())
            .field("peer_eof", &self.peer_eof)
            .field("eof_sent", &self.eof_sent)
            .field("sink_failed", &self.sink_failed)
            .finish_non_exhaustive()
    }
}

/// Set when a channel's data sink failed with an error other than EPIPE.
static DATA_LOST: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether received data was lost because its sink failed (not merely
/// closed by its reader): a client must not exit 0 after that.
pub fn data_lost() -> bool {
    DATA_LOST.load(std::sync::atomic::Ordering::Relaxed)
}

/// Where CHANNEL_DATA's stream sits in a pair ([`Ext::Data`]).
const DATA: usize = Ext::Data as usize;

fn streams<T>(fds: [Option<T>; 2], make: impl Fn(T) -> ChanFd) -> [Option<Stream>; 2] {
    fds.map(|fd| fd.map(|fd| Stream::fd(make(fd))))
}

impl ChanIo {
    /// Fds lent to the channel (our own stdin/stdout/stderr, never closed
    /// here): `source`/`err_source` are read and sent, `sink`/`err_sink`
    /// receive the peer's data.
    pub fn borrowed(
        source: Option<RawFd>,
        err_source: Option<RawFd>,
        sink: Option<RawFd>,
        err_sink: Option<RawFd>,
    ) -> Self {
        ChanIo {
            outgoing: streams([source, err_source], ChanFd::Borrowed),
            incoming: streams([sink, err_sink], ChanFd::Borrowed),
            ..ChanIo::default()
        }
    }

    /// Fds the channel owns, closed when it no longer needs each one.
    pub fn owned(
        source: Option<OwnedFd>,
        err_source: Option<OwnedFd>,
        sink: Option<OwnedFd>,
        err_sink: Option<OwnedFd>,
    ) -> Self {
        ChanIo {
            outgoing: streams([source, err_source], ChanFd::Owned),
            incoming: streams([sink, err_sink], ChanFd::Owned),
            ..ChanIo::default()
        }
    }

    /// An in-process end for the channel (see [`ChannelEndpoint`]).
    pub fn in_process(endpoint: Box<dyn ChannelEndpoint>) -> Self {
        ChanIo {
            outgoing: [Some(Stream::in_process()), Some(Stream::in_process())],
            incoming: [Some(Stream::in_process()), Some(Stream::in_process())],
            endpoint: Some(InProcess(endpoint)),
            ..ChanIo::default()
        }
    }

    /// From now on what the peer sends goes to the lent fds `sink` and
    /// `err_sink` as on an ordinary channel, not to the in-process end, which
    /// keeps sending (a striped channel the server refused after plain data
    /// went: client/stripe.rs). Nothing may have arrived for the end yet.
    pub fn route_incoming_to(&mut self, sink: RawFd, err_sink: RawFd) {
        self.incoming = streams([Some(sink), Some(err_sink)], ChanFd::Borrowed);
        self.close_when_sink_fails = true;
    }

    /// The fds behind the channel, sources first.
    pub fn raw_fds(&self) -> Vec<RawFd> {
        self.outgoing
            .iter()
            .chain(&self.incoming)
            .flatten()
            .filter_map(Stream::raw_fd)
            .collect()
    }

    /// Every source reached end of file (or there was none) and EOF was sent.
    pub fn sources_done(&self) -> bool {
        self.eof_sent
    }

    /// Until when a sink of this channel that is taking bytes holds more
    /// input back ([`Stream::holding`]).
    pub(crate) fn holding(
        &self,
        now: std::time::Instant,
        cap: std::time::Duration,
    ) -> Option<std::time::Instant> {
        self.incoming
            .iter()
            .flatten()
            .filter_map(|s| s.holding(now, cap))
            .min()
    }

    /// Everything received has been written out.
    pub fn sinks_drained(&self) -> bool {
        self.incoming.iter().flatten().all(|s| s.pending.is_empty())
    }

    /// The data sink is gone: closed after the peer's EOF, or failed.
    pub fn sink_closed(&self) -> bool {
        self.incoming[DATA].is_none()
    }

    /// Stops reading the data source (the peer's output went away): closes
    /// it if ours, so a command writing to it gets SIGPIPE.
    pub fn close_source(&mut self) {
        self.outgoing[DATA] = None;
    }

    /// Tells the in-process end when the peer's window (`send_window` now)
    /// is the largest yet ([`ChannelEndpoint::on_peer_window`]).
    pub(crate) fn note_peer_window(&mut self, send_window: u32) {
        if send_window <= self.peer_window {
            return;
        }
        self.peer_window = send_window;
        if let Some(ep) = self.endpoint.as_mut() {
            ep.get().on_peer_window(send_window);
        }
    }

    /// The largest window the peer granted so far.
    pub(crate) fn peer_window(&self) -> u32 {
        self.peer_window
    }

    /// The channel has an in-process end.
    pub(crate) fn is_in_process(&self) -> bool {
        self.endpoint.is_some()
    }

    /// The outgoing stream `ext`.
    pub(crate) fn source(&self, ext: Ext) -> Option<&Stream> {
        self.outgoing.get(ext.idx()).and_then(Option::as_ref)
    }

    /// The outgoing and incoming streams, for the poll set.
    pub(crate) fn streams_mut(&mut self) -> (&mut [Option<Stream>; 2], &[Option<Stream>; 2]) {
        (&mut self.outgoing, &self.incoming)
    }

    /// The in-process end's wake-up fd.
    pub(crate) fn wake_fd(&self) -> Option<RawFd> {
        self.endpoint.as_ref().and_then(|e| e.0.wake_fd())
    }

    /// The wake-up fd fired: lets the end clear it, and serves it again.
    pub(crate) fn woken(&mut self) {
        if let Some(ep) = self.endpoint.as_mut() {
            ep.0.on_wake();
        }
        self.rearm();
    }

    /// Makes in-process sources worth asking again (each turn of the loop).
    pub(crate) fn rearm(&mut self) {
        if self.endpoint.is_some() {
            for s in self.outgoing.iter_mut().flatten() {
                s.ready = true;
            }
        }
    }

    /// The peer sent EOF.
    pub(crate) fn peer_eof(&mut self) {
        self.peer_eof = true;
    }

    /// A source that is open and not at EOF but has nothing now (poll has
    /// not said it is readable): the local reader is behind.
    pub(crate) fn source_waiting(&self) -> bool {
        self.source(Ext::Data).is_some_and(|s| !s.eof && !s.ready)
    }

    /// Whether a source is worth reading now: open, not at EOF, and ready.
    pub(crate) fn can_read(&self, ext: Ext) -> bool {
        self.source(ext).is_some_and(|s| !s.eof && s.ready)
    }

    /// Reads source `ext` into the packet slot at the end of `out`.
    pub(crate) fn read_into(&mut self, ext: Ext, out: &mut Vec<u8>, max: usize) -> Read {
        let Some(s) = self.outgoing.get_mut(ext.idx()).and_then(Option::as_mut) else {
            return Read::Eof;
        };
        match (s.raw_fd(), self.endpoint.as_mut().map(InProcess::get)) {
            (Some(fd), _) => s.read_fd(fd, out, max),
            (None, Some(ep)) => endpoint::produce_into(ep, s, ext, out, max),
            (None, None) => Read::Eof,
        }
    }

    /// Hands received data to sink `ext` at `now`: written at once where
    /// possible, the rest kept in order. Returns bytes consumed now.
    pub(crate) fn deliver(&mut self, ext: Ext, data: &[u8], now: std::time::Instant) -> usize {
        let Some(s) = self.incoming.get_mut(ext.idx()).and_then(Option::as_mut) else {
            return data.len();
        };
        let fd = match (s.raw_fd(), self.endpoint.as_mut().map(InProcess::get)) {
            (Some(fd), _) => fd,
            (None, Some(ep)) => return endpoint::deliver(ep, s, ext, data),
            (None, None) => return data.len(),
        };
        if !s.pending.is_empty() {
            s.pending.extend(data);
            return 0;
        }
        match Stream::write_fd(fd, data) {
            Wrote::Took(n) => {
                // What it did not take starts a hold, which lasts only
                // while the sink goes on taking (see `Stream::holding`):
                // a sink that took the last packet whole and is full now
                // holds; one that has not taken anything lately does not.
                if n > 0 {
                    s.took_at = Some(now);
                }
                if n < data.len() {
                    s.hold_from = Some(now);
                }
                s.pending.extend(data.get(n..).unwrap_or_default());
                n
            }
            Wrote::Failed(e) => {
                if ext == Ext::Data {
                    self.fail_sink(&e);
                }
                data.len()
            }
        }
    }

    /// Writes what sinks did not take at once; after the peer's EOF, closes
    /// (or shuts down) the data sink once it is drained, or tells the
    /// in-process end. Returns the bytes taken off pending buffers.
    pub(crate) fn drain(&mut self) -> usize {
        let mut written = 0;
        let mut failed = None;
        for ext in Ext::BOTH {
            let Some(s) = self.incoming.get_mut(ext.idx()).and_then(Option::as_mut) else {
                continue;
            };
            match (s.raw_fd(), self.endpoint.as_mut().map(InProcess::get)) {
                (Some(fd), _) => {
                    let (n, f) = s.drain_fd(fd);
                    written += n;
                    if ext == Ext::Data {
                        failed = failed.or(f);
                    }
                }
                (None, Some(ep)) => written += endpoint::drain(ep, s, ext),
                (None, None) => {}
            }
        }
        if let Some(e) = failed {
            self.fail_sink(&e);
        }
        if self.peer_eof {
            self.after_peer_eof();
        }
        written
    }

    fn after_peer_eof(&mut self) {
        if let Some(ep) = self.endpoint.as_mut().map(InProcess::get) {
            if !self.eof_told && self.incoming.iter().flatten().all(|s| s.pending.is_empty()) {
                self.eof_told = true;
                ep.on_eof();
            }
            return;
        }
        let data_drained = self.incoming[DATA]
            .as_ref()
            .is_none_or(|s| s.pending.is_empty());
        if self.close_sink_on_eof && data_drained {
            if let Some(sink) = self.incoming[DATA].take() {
                if self.shutdown_sink_on_eof {
                    sink.shutdown_write();
                }
            }
        }
    }

    /// The data sink's reader is gone (or the sink failed): stop writing,
    /// drop what waits for it. A failure other than EPIPE (a full disk, an
    /// I/O error) loses data the reader wanted: said at ERROR and recorded
    /// for the exit status ([`data_lost`]).
    fn fail_sink(&mut self, e: &std::io::Error) {
        self.sink_failed = true;
        self.incoming[DATA] = None;
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            DATA_LOST.store(true, std::sync::atomic::Ordering::Relaxed);
            crate::log!(
                Error,
                "write of received data failed: {}; the rest is discarded",
                crate::io_error::describe_io_error(e)
            );
        }
    }

    /// After the sources were read: sends our EOF once they are all done,
    /// and closes the channel where the policy or the in-process end says.
    /// True when it sent EOF or closed the channel now (the handler may
    /// want to know at once: an exit status to send, `ClientSession`'s
    /// in-process end).
    pub(crate) fn after_fill(&mut self, conn: &mut Connection, id: ChannelId) -> bool {
        let any_source = self.outgoing.iter().any(Option::is_some);
        let all_done = self.outgoing.iter().flatten().all(|s| s.eof);
        // EOF sent now: the handler's next tick may have an exit status
        // waiting for it (the command exited before its pipes were read to
        // the end), so it runs at once rather than at its next interval.
        let eof_now = all_done && any_source && !self.eof_sent;
        if eof_now {
            self.eof_sent = true;
            let _ = conn.send_eof(id);
        }
        let closed = || conn.channel_info(id).is_none_or(|i| i.close_sent);
        if self.sink_failed && self.close_when_sink_fails && (self.eof_sent || !any_source) {
            if !closed() {
                crate::log!(Debug1, "channel {}: output gone, closing", id.0);
                let _ = conn.close_channel(id);
                return true;
            }
        } else if self.endpoint.as_ref().is_some_and(|e| e.0.closing()) && !closed() {
            let _ = conn.close_channel(id);
            return true;
        }
        eof_now
    }

    /// Writes a closing channel's remaining data, waiting for slow fd sinks
    /// so no received byte is lost; an in-process end is offered what waits
    /// until it takes no more.
    pub(crate) fn drain_blocking(&mut self) {
        let mut failed = None;
        for ext in Ext::BOTH {
            let Some(s) = self.incoming.get_mut(ext.idx()).and_then(Option::as_mut) else {
                continue;
            };
            match (s.raw_fd(), self.endpoint.as_mut().map(InProcess::get)) {
                (Some(fd), _) => {
                    // The last of the data failing to go out (a full disk)
                    // is lost data, as it is mid-stream: never exit 0.
                    if let Err(e) = s.drain_fd_blocking(fd) {
                        if ext == Ext::Data {
                            failed = Some(e);
                        }
                    }
                }
                (None, Some(ep)) => {
                    endpoint::drain(ep, s, ext);
                }
                (None, None) => {}
            }
        }
        if let Some(e) = failed {
            self.fail_sink(&e);
        }
    }

    /// Bytes waiting for sinks.
    #[cfg(test)]
    pub(crate) fn pending_len(&self) -> usize {
        self.incoming
            .iter()
            .flatten()
            .map(|s| s.pending.len())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::pipe::{pipe_with, PipeFlags};
    use std::time::{Duration, Instant};

    const CAP: Duration = Duration::from_millis(100);

    fn pipe() -> (OwnedFd, OwnedFd) {
        pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK).unwrap()
    }

    /// A sink that took part of a packet holds further input back while it
    /// goes on taking (within 20 ms) and for the cap (here 100 ms) at most,
    /// however it goes on; one that took nothing holds nothing (it may be
    /// stuck, and the other channels must not wait for it).
    #[test]
    fn a_taking_sink_holds_input_back_for_a_while_only() {
        let (r, w) = pipe();
        let mut io = ChanIo::owned(None, None, Some(w), None);
        assert_eq!(io.holding(Instant::now(), CAP), None);
        let big = vec![7u8; 4 << 20];
        let took = io.deliver(Ext::Data, &big, Instant::now());
        assert!(took > 0 && took < big.len(), "{took}");
        let until = io.holding(Instant::now(), CAP).expect("held while taking");
        assert!(until <= Instant::now() + Duration::from_millis(20));
        assert_eq!(io.holding(until, CAP), None, "not past the hold");
        // The reader takes some and the sink more: held again, until 100
        // ms after the hold began however the sink goes on taking.
        let mut buf = vec![0u8; 1 << 20];
        let began = Instant::now();
        std::thread::sleep(Duration::from_millis(25));
        assert_eq!(io.holding(Instant::now(), CAP), None, "idle 25 ms");
        assert!(rustix::io::read(&r, &mut buf).unwrap() > 0);
        assert!(io.drain() > 0);
        assert!(io.holding(Instant::now(), CAP).is_some(), "taking again");
        while began.elapsed() < Duration::from_millis(110) {
            std::thread::sleep(Duration::from_millis(10));
            let _ = rustix::io::read(&r, &mut buf[..4096]);
            io.drain();
        }
        assert!(io.pending_len() > 0);
        assert_eq!(
            io.holding(Instant::now(), CAP),
            None,
            "a slow sink past 100 ms"
        );
        // Once all was taken, the next partial write starts a new hold.
        while io.pending_len() > 0 {
            let _ = rustix::io::read(&r, &mut buf);
            io.drain();
        }
        while rustix::io::read(&r, &mut buf).is_ok() {}
        assert!(io.deliver(Ext::Data, &big, Instant::now()) > 0);
        assert!(io.holding(Instant::now(), CAP).is_some());

        // A sink full from the start never took anything: no hold.
        let (_r2, w2) = pipe();
        while rustix::io::write(&w2, &buf).is_ok() {}
        let mut stuck = ChanIo::owned(None, None, Some(w2), None);
        assert_eq!(stuck.deliver(Ext::Data, &big, Instant::now()), 0);
        assert_eq!(stuck.holding(Instant::now(), CAP), None);
    }
}
