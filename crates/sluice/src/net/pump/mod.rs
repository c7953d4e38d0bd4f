//! The driver loop: one thread, one `poll(2)`, moving bytes between the TCP
//! socket, the protocol engine and whatever is behind each channel.
//!
//! Input is read in large chunks into one buffer and opened in place by the
//! engine; channel data it returns is written straight to the channel's sink
//! (a pipe to a command, or stdout) or handed to its in-process end, and
//! only what the sink does not take at once is copied aside. Output is built
//! in one buffer: channel data is read from the source fd (or produced by
//! the in-process end) directly into the packet slot where it is sealed,
//! then written to the socket in large writes.
//!
//! The rest lives next door: the handler API (`handler.rs`), a channel's
//! ends and its EOF/close policy (`channel.rs`), the map of them and the
//! window feedback (`channels.rs`), one direction of bytes (`stream.rs`),
//! bytes waiting for a sink (`pending.rs`), in-process ends
//! (`endpoint.rs`), the poll set (`pollset.rs`) and the TCP_INFO feed
//! (`net/path.rs`). Each sleep is counted by its reason, with the channel
//! data moved, for the transfer metrics (`net/metrics/tally.rs`).

mod channel;
mod channels;
mod endpoint;
mod handler;
mod pending;
mod pollset;
mod stream;
#[cfg(test)]
mod tests;

pub use channel::{data_lost, ChanIo};
pub use channels::ChannelFds;
pub use endpoint::{ChannelEndpoint, Produced, WakeFd};
pub use handler::{Handler, PumpError, PumpIo};
pub use stream::{ChanFd, Ext};

use super::compress_ctl::{self, LevelControl, Stalls};
use super::crypto_pool::{CryptoPool, CryptoThreads};
use super::metrics::tally::{self, Wait};
use super::path::PathFeed;
use crate::sys::fdio;
use channels::consumed_on;
use sluice_proto::{Connection, Event};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use stream::Read;

/// Input buffer size: a few maximum-size packets.
const IN_BUF: usize = 1 << 20;
/// Stop producing channel data while this much sealed output is unsent.
const OUT_HIGH_WATER: usize = 1 << 20;
/// Socket read size.
const SOCK_READ: usize = 512 * 1024;
/// A read this small is a handshake, a request or a keystroke, not bulk data:
/// the kernel is asked to acknowledge it at once ([`fdio::quick_ack`]).
const QUICK_ACK_BELOW: usize = 4096;
/// Unsent output past which the peer is taken for one that asks and never
/// reads (data stops at [`OUT_HIGH_WATER`]; only replies can pile up here):
/// the connection ends, as sshd's output buffer limit ends it.
const OUT_HARD_CAP: usize = 64 << 20;

/// Bytes this process read from and wrote to its connections' sockets, for
/// ssh's end-of-session figures ("Transferred: sent N, received M bytes").
static SOCKET_READ: AtomicU64 = AtomicU64::new(0);
static SOCKET_WRITTEN: AtomicU64 = AtomicU64::new(0);

/// (received, sent) bytes on the sockets of every pump of this process.
pub fn socket_totals() -> (u64, u64) {
    (
        SOCKET_READ.load(Ordering::Relaxed),
        SOCKET_WRITTEN.load(Ordering::Relaxed),
    )
}

/// The loop's buffers around one connection.
pub struct Pump {
    sock: RawFd,
    inbuf: Vec<u8>,
    in_start: usize,
    out: Vec<u8>,
    out_pos: usize,
    /// The other ends of the channels.
    pub fds: ChannelFds,
    sock_eof: bool,
    /// The end of input was a reset, not a FIN (said so when it ends the pump).
    sock_reset: bool,
    crypto: CryptoPool,
    path: PathFeed,
    /// An in-process end moved bytes this turn: run the next one at once.
    again: bool,
    /// Filling stopped at [`OUT_HIGH_WATER`] this turn. Once the socket
    /// took the output, the next turn must come at once: an in-process
    /// end has no fd to wake the loop, and its peer may be waiting for
    /// exactly those bytes (found as a rare hang of the echo test).
    out_cut: bool,
    /// Input handling stopped behind a sink that is taking bytes, until
    /// then at most (see `Stream::holding`): the rest of the input waits
    /// in the buffer and the socket instead of being copied into the
    /// sink's pending bytes (on a download into a slower pipe that copy
    /// took most of the received data).
    held: Option<Instant>,
    /// Steers the outgoing compression level, once a stream with a level
    /// handle runs (net/compress_ctl/).
    level_ctl: Option<LevelControl>,
    /// The level was fixed by configuration: not steered.
    level_fixed: bool,
    /// The socket's TCP_NOTSENT_LOWAT as the level controller last asked.
    unsent_cap: Option<u32>,
    /// Times data waited for the peer's window since the controller last
    /// looked, and the largest window those peers ever granted.
    window_stalls: Stalls,
    /// Small reads are acknowledged at once (cleared when the socket is not TCP).
    quick_ack: bool,
    /// This turn, for the metrics: data that waited for a window, a
    /// source that had nothing while it could have sent.
    turn: Turn,
}

/// What one turn of the loop saw, for the metrics tally.
#[derive(Debug, Default)]
struct Turn {
    window_stall: bool,
    starved: bool,
    /// When the turn began: the tally counts each loop's running time, so
    /// the shares of its sleeps stay shares with several loops (striping).
    began: Option<Instant>,
}

impl Pump {
    /// A pump over a connected, non-blocking socket.
    pub fn new(sock: RawFd) -> Self {
        Pump {
            sock,
            inbuf: Vec::with_capacity(IN_BUF),
            in_start: 0,
            out: Vec::with_capacity(OUT_HIGH_WATER * 2),
            out_pos: 0,
            fds: ChannelFds::default(),
            sock_eof: false,
            sock_reset: false,
            crypto: CryptoPool::new(CryptoThreads::Fixed(1)),
            path: PathFeed::default(),
            again: false,
            out_cut: false,
            held: None,
            level_ctl: None,
            level_fixed: false,
            unsent_cap: None,
            window_stalls: Stalls::default(),
            quick_ack: true,
            turn: Turn::default(),
        }
    }

    /// Lets packets be sealed and opened in batches on up to `threads` threads.
    pub fn set_crypto_threads(&mut self, conn: &mut Connection, threads: CryptoThreads) {
        self.crypto = CryptoPool::new(threads);
        conn.set_batch_crypto(self.crypto.enabled());
        // A batch-capable compression engine then deflates on the same
        // workers; the sequential zlib engine is unaffected.
        conn.set_batch_compression(self.crypto.enabled());
    }

    /// Leaves the outgoing compression level where the configuration set
    /// it (CompressionLevel) instead of steering it.
    pub fn fix_compression_level(&mut self) {
        self.level_fixed = true;
    }

    /// Input read from the socket that the engine has not consumed (at a
    /// privilege-separation handover: it travels to the next process).
    pub fn take_unread(&mut self) -> Vec<u8> {
        let rest = self.inbuf.get(self.in_start..).unwrap_or_default().to_vec();
        self.inbuf.clear();
        self.in_start = 0;
        rest
    }

    /// Bytes read by an earlier process, given to the engine before
    /// anything read from the socket (the other end of [`Pump::take_unread`]).
    pub fn preload_input(&mut self, bytes: &[u8]) {
        self.inbuf.extend_from_slice(bytes);
    }

    /// Runs until the handler is finished or the connection ends.
    pub fn run<E>(
        &mut self,
        conn: &mut Connection,
        handler: &mut dyn Handler<Error = E>,
    ) -> Result<(), PumpError<E>> {
        let result = self.run_inner(conn, handler);
        // Flush what is queued (a DISCONNECT after an error) before returning.
        conn.poll_transmit(Instant::now(), &mut self.out);
        let _ = self.flush_blocking::<E>(Duration::from_secs(2));
        result
    }

    fn run_inner<E>(
        &mut self,
        conn: &mut Connection,
        handler: &mut dyn Handler<Error = E>,
    ) -> Result<(), PumpError<E>> {
        loop {
            let now = Instant::now();
            if let Some(then) = self.turn.began.replace(now) {
                tally::add_loop_time(now - then);
            }
            conn.handle_timeout(now);
            self.path.poll(self.sock, conn, now);
            self.again = false;
            // Sinks first: what they take now leaves room to write the
            // next packets straight from the input buffer.
            self.drain_sinks(conn);
            self.process_input(conn, handler)?;
            handler
                .tick(conn, &mut self.fds)
                .map_err(PumpError::Handler)?;
            self.drain_sinks(conn);
            // Input held behind a sink that has drained since waits in the
            // buffer, where no fd will say so: the next turn comes at once.
            self.again |= self.held.is_some()
                && self.in_start < self.inbuf.len()
                && self.fds.input_hold(Instant::now()).is_none();
            self.fill_output(conn);
            self.flush_socket()?;
            self.again |= self.out_cut && self.out.len() - self.out_pos < OUT_HIGH_WATER;
            // An event queued by sending (KexDone once our NEWKEYS went out)
            // is handled now, not after the next packet arrives: a session
            // waiting for the NONE switch waited for its command's exit.
            self.again |= conn.has_events();
            if conn.is_closed() {
                return Ok(());
            }
            if handler.finished() && self.out_pos >= self.out.len() {
                return Ok(());
            }
            if self.sock_eof {
                return Err(if self.sock_reset {
                    PumpError::PeerReset
                } else {
                    PumpError::PeerClosed
                });
            }
            let sock = pollset::SockInterest {
                fd: self.sock,
                read: self.inbuf.len() < IN_BUF && !self.sock_eof,
                write: self.out_pos < self.out.len(),
                room: self.out.len() - self.out_pos < OUT_HIGH_WATER,
                again: self.again,
                hold_until: self.held,
            };
            let why = self.wait_reason();
            let slept = Instant::now();
            pollset::wait(sock, &mut self.fds, conn, handler)
                .map_err(|e| PumpError::Io(PumpIo::Poll(e)))?;
            tally::add_wait(why, slept.elapsed());
        }
    }

    /// Why the loop is about to sleep (the first that holds): output
    /// waits for the socket, data for a window, received data for a sink,
    /// or a source had nothing; None: waiting for the peer.
    fn wait_reason(&mut self) -> Option<Wait> {
        let window_stall = std::mem::take(&mut self.turn.window_stall);
        let starved = std::mem::take(&mut self.turn.starved);
        if self.out_pos < self.out.len() {
            Some(Wait::Socket)
        } else if window_stall {
            Some(Wait::Window)
        } else if self.fds.any_sink_pending() {
            Some(Wait::Sink)
        } else if starved {
            Some(Wait::Source)
        } else {
            None
        }
    }

    fn process_input<E>(
        &mut self,
        conn: &mut Connection,
        handler: &mut dyn Handler<Error = E>,
    ) -> Result<(), PumpError<E>> {
        self.held = None;
        loop {
            let mut progressed = false;
            loop {
                let now = Instant::now();
                let Some(window) = self.inbuf.get_mut(self.in_start..) else {
                    break;
                };
                if window.is_empty() {
                    break;
                }
                if let Some(until) = self.fds.input_hold(now) {
                    self.held = Some(until);
                    break;
                }
                let pool = &mut self.crypto;
                conn.open_batch(window, &mut |jobs| pool.run(jobs))
                    .map_err(PumpError::Protocol)?;
                let r = conn
                    .handle_input(now, window)
                    .map_err(PumpError::Protocol)?;
                let consumed = r.consumed;
                let mut used = None;
                if let Some(d) = r.data {
                    // Counted at once (one relaxed add per packet): a
                    // summary taken at the channel's close sees it all.
                    tally::add_data(0, d.data.len() as u64);
                    let n = match self.fds.get_mut(d.channel) {
                        Some(io) => io.deliver(Ext::of(d.ext), d.data, now),
                        None => d.data.len(),
                    };
                    used = Some((d.channel, n));
                }
                if let Some((ch, n)) = used {
                    if n > 0 {
                        consumed_on(conn, &mut self.fds, ch, n);
                    }
                }
                if consumed == 0 {
                    break;
                }
                self.in_start += consumed;
                progressed = true;
                while let Some(ev) = conn.poll_event() {
                    self.on_event(conn, handler, ev)?;
                }
            }
            while let Some(ev) = conn.poll_event() {
                self.on_event(conn, handler, ev)?;
            }
            // Compact (free when all was consumed; otherwise only when the
            // room left is small, to move a partial packet rarely), then
            // read more if the socket has it.
            if self.in_start >= self.inbuf.len() {
                self.inbuf.clear();
                self.in_start = 0;
            } else if self.in_start > 0 && IN_BUF - self.inbuf.len() < SOCK_READ / 2 {
                self.inbuf.drain(..self.in_start);
                self.in_start = 0;
            }
            if self.sock_eof || self.inbuf.len() >= IN_BUF {
                if self.in_start > 0 && self.inbuf.len() >= IN_BUF {
                    self.inbuf.drain(..self.in_start);
                    self.in_start = 0;
                    continue;
                }
                return Ok(());
            }
            let room = SOCK_READ.min(IN_BUF - self.inbuf.len());
            match fdio::read_append(self.sock, &mut self.inbuf, room) {
                Ok(0) => {
                    self.sock_eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    progressed = true;
                    SOCKET_READ.fetch_add(n as u64, Ordering::Relaxed);
                    if self.quick_ack && n < QUICK_ACK_BELOW {
                        self.quick_ack = fdio::quick_ack(self.sock);
                    }
                    handler.input_received(Instant::now());
                }
                Err(e) if fdio::would_block(&e) => {}
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                    self.sock_eof = true;
                    self.sock_reset = true;
                    return Ok(());
                }
                Err(e) => return Err(PumpError::Io(PumpIo::Read(e))),
            }
            if !progressed {
                return Ok(());
            }
        }
    }

    fn on_event<E>(
        &mut self,
        conn: &mut Connection,
        handler: &mut dyn Handler<Error = E>,
        ev: Event,
    ) -> Result<(), PumpError<E>> {
        match &ev {
            Event::ChannelEof(id) => {
                if let Some(io) = self.fds.get_mut(*id) {
                    io.peer_eof();
                }
            }
            Event::ChannelClosed(id) => {
                let id = *id;
                handler
                    .on_event(conn, &mut self.fds, ev)
                    .map_err(PumpError::Handler)?;
                if let Some(io) = self.fds.get_mut(id) {
                    io.drain_blocking();
                }
                self.fds.remove(id);
                return Ok(());
            }
            _ => {}
        }
        handler
            .on_event(conn, &mut self.fds, ev)
            .map_err(PumpError::Handler)
    }

    /// Writes data that sinks did not take at once; applies the peer's EOF.
    fn drain_sinks(&mut self, conn: &mut Connection) {
        for id in self.fds.ids() {
            let Some(io) = self.fds.get_mut(id) else {
                continue;
            };
            let written = io.drain();
            if written > 0 {
                // A held CLOSE waits for this sink to drain: one more turn
                // lets the handler answer it now rather than at the next
                // packet.
                let held = io.sinks_drained()
                    && conn
                        .channel_info(id)
                        .is_some_and(|i| i.close_received && !i.close_sent);
                self.again |= io.is_in_process() || held;
                consumed_on(conn, &mut self.fds, id, written);
            }
        }
    }

    /// Reads channel sources straight into packet slots in the output buffer.
    fn fill_output(&mut self, conn: &mut Connection) {
        conn.poll_transmit(Instant::now(), &mut self.out);
        self.out_cut = false;
        'channels: for id in self.fds.ids() {
            if let Some(io) = self.fds.get_mut(id) {
                io.rearm();
                if let Some(info) = conn.channel_info(id) {
                    io.note_peer_window(info.send_window);
                    tally::note_peer_window(info.send_window);
                }
            }
            for ext in Ext::BOTH {
                loop {
                    // Payloads queued for batch compression count too: the
                    // batch is cut here, compressed on the workers below.
                    if self.out.len() - self.out_pos + conn.uncompressed_len() >= OUT_HIGH_WATER {
                        self.out_cut = true;
                        break 'channels;
                    }
                    let Some(io) = self.fds.get_mut(id) else {
                        break;
                    };
                    if !io.can_read(ext) {
                        if ext == Ext::Data && io.source_waiting() && conn.send_capacity(id) > 0 {
                            self.turn.starved = true;
                        }
                        break;
                    }
                    let Some(slot) = conn.data_slot(Instant::now(), id, ext.code(), &mut self.out)
                    else {
                        // Data waits for the peer's window (or a key
                        // exchange): the level controller wants to know.
                        let w = &mut self.window_stalls;
                        w.count = w.count.saturating_add(1);
                        w.window = w.window.max(u64::from(io.peer_window()));
                        self.turn.window_stall = true;
                        break;
                    };
                    match io.read_into(ext, &mut self.out, slot.max) {
                        Read::Data(n) => {
                            if let Some(c) = self.level_ctl.as_mut() {
                                let data = self.out.get(slot.data_at..slot.data_at + n);
                                c.offer(data.unwrap_or_default());
                            }
                            self.again |= io.is_in_process();
                            tally::add_data(n as u64, 0);
                            conn.finish_data_slot(slot, n, &mut self.out);
                        }
                        Read::Blocked => {
                            self.turn.starved |= ext == Ext::Data;
                            conn.finish_data_slot(slot, 0, &mut self.out);
                            break;
                        }
                        Read::Eof => {
                            conn.finish_data_slot(slot, 0, &mut self.out);
                            break;
                        }
                    }
                }
            }
            if let Some(io) = self.fds.get_mut(id) {
                // A channel closed now: the handler's next tick sees it at
                // once rather than after the next event.
                self.again |= io.after_fill(conn, id);
            }
        }
        let pool = &mut self.crypto;
        let began = Instant::now();
        conn.compress_batch(&mut self.out, &mut |jobs| pool.run_compress(jobs));
        self.steer_compression(conn, began);
        let pool = &mut self.crypto;
        conn.seal_batch(&mut self.out, &mut |jobs| pool.run(jobs));
        // Always seal what the data path queued (a re-key's KEXINIT, window
        // adjusts): the loop may sleep next, and nothing else would send them.
        conn.poll_transmit(Instant::now(), &mut self.out);
    }

    /// Lets the level controller see the batch just compressed (its
    /// compression began at `began`).
    fn steer_compression(&mut self, conn: &Connection, began: Instant) {
        let Some(stats) = conn.compression_stats().0.filter(|_| !self.level_fixed) else {
            return;
        };
        let now = Instant::now();
        if self.level_ctl.is_none() {
            let name = conn.outgoing_compression().unwrap_or_default();
            self.level_ctl = conn
                .compression_level()
                .map(|l| LevelControl::new(l, name, stats, now).with_sampler());
        }
        if let Some(c) = self.level_ctl.as_mut() {
            let sock = self.sock;
            let batch = compress_ctl::Batch {
                stats,
                stalls: std::mem::take(&mut self.window_stalls),
                busy: now.saturating_duration_since(began),
            };
            c.after_batch(now, batch, || {
                let info = super::path::tcp_info(sock)?;
                let queued = super::path::send_queue(sock)?;
                (info.bytes_acked > 0).then_some(compress_ctl::Socket {
                    acked: info.bytes_acked,
                    queued,
                    unsent: u64::from(info.notsent_bytes),
                    rtt: info.path_rtt(),
                })
            });
            let cap = c.unsent_cap();
            if cap != self.unsent_cap {
                self.unsent_cap = cap;
                crate::sys::tcp::set_notsent_lowat(sock, cap.unwrap_or(0));
            }
        }
    }

    fn flush_socket<E>(&mut self) -> Result<(), PumpError<E>> {
        while self.out_pos < self.out.len() {
            let Some(pending) = self.out.get(self.out_pos..) else {
                break;
            };
            match fdio::write_some(self.sock, pending) {
                Ok(n) => {
                    self.out_pos += n;
                    SOCKET_WRITTEN.fetch_add(n as u64, Ordering::Relaxed);
                }
                Err(e) if fdio::would_block(&e) => break,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                    return Err(PumpError::PeerReset)
                }
                // EPIPE after a reset was read is the reset's echo.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                    return Err(if self.sock_reset {
                        PumpError::PeerReset
                    } else {
                        PumpError::PeerClosed
                    })
                }
                Err(e) => return Err(PumpError::Io(PumpIo::Write(e))),
            }
        }
        if self.out_pos >= self.out.len() {
            self.out.clear();
            self.out_pos = 0;
        }
        let unsent = self.out.len() - self.out_pos;
        if unsent > OUT_HARD_CAP {
            return Err(PumpError::Io(PumpIo::Unread {
                unsent,
                limit: OUT_HARD_CAP,
            }));
        }
        Ok(())
    }

    fn flush_blocking<E>(&mut self, limit: Duration) -> Result<(), PumpError<E>> {
        let end = Instant::now() + limit;
        while self.out_pos < self.out.len() && Instant::now() < end {
            self.flush_socket()?;
            let mut p = [libc::pollfd {
                fd: self.sock,
                events: libc::POLLOUT,
                revents: 0,
            }];
            let _ = fdio::poll(&mut p, 100);
        }
        Ok(())
    }
}
