//! The driver loop: one thread, one `poll(2)`, moving bytes between the TCP
//! socket, the protocol engine and the file descriptors behind each channel.
//!
//! Input is read in large chunks into one buffer and opened in place by the
//! engine; channel data it returns is written straight to the channel's sink
//! (a pipe to a command, or stdout), and only what the sink does not take at
//! once is copied aside. Output is built in one buffer: channel data is read
//! from the source fd directly into the packet slot where it is sealed, then
//! written to the socket in large writes.

use super::crypto_pool::{CryptoPool, CryptoThreads};
use super::fdio;
use sluice_proto::{ChannelId, Connection, Event};
use std::collections::BTreeMap;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// Input buffer size: a few maximum-size packets.
const IN_BUF: usize = 1 << 20;
/// Stop producing channel data while this much sealed output is unsent.
const OUT_HIGH_WATER: usize = 1 << 20;
/// Socket read size.
const SOCK_READ: usize = 512 * 1024;

/// The file descriptors behind one channel, and data waiting for a sink.
#[derive(Debug, Default)]
pub struct ChanIo {
    /// Read from here and send as CHANNEL_DATA.
    pub source: Option<RawFd>,
    /// Read from here and send as EXTENDED_DATA type 1 (stderr).
    pub err_source: Option<RawFd>,
    /// Write CHANNEL_DATA here.
    pub sink: Option<RawFd>,
    /// Write EXTENDED_DATA here.
    pub err_sink: Option<RawFd>,
    /// Close `sink` once the peer's EOF arrived and everything is written
    /// (a command's stdin); false for our own stdout.
    pub close_sink_on_eof: bool,
    /// The fds are ours to close.
    pub owned: bool,
    /// `sink` is a socket: on the peer's EOF, once drained, shut down its
    /// write side (the far end sees EOF while it can still send to us).
    /// Sources and sinks are separate fds (a socket's `dup`), each closed
    /// on its own.
    pub shutdown_sink_on_eof: bool,
    /// Close the channel once `sink` failed and the sources are done (a
    /// client whose stdout reader went away); a server waits for its
    /// command's exit instead.
    pub close_when_sink_fails: bool,
    pending: Pending,
    pending_err: Pending,
    /// poll said readable (or not yet asked); cleared on EAGAIN.
    source_ready: bool,
    err_source_ready: bool,
    source_eof: bool,
    err_source_eof: bool,
    peer_eof: bool,
    eof_sent: bool,
    /// Writing to `sink` failed (EPIPE: the reader went away); what the peer
    /// sends from now on is discarded, and the channel closes once our
    /// sources are done too, as OpenSSH does (`chan_write_failed`).
    sink_failed: bool,
    /// Our receive window as last logged.
    recv_window: u32,
}

impl ChanIo {
    /// Fds for a channel: `source`/`err_source` are read and sent,
    /// `sink`/`err_sink` receive the peer's data.
    pub fn new(
        source: Option<RawFd>,
        err_source: Option<RawFd>,
        sink: Option<RawFd>,
        err_sink: Option<RawFd>,
    ) -> Self {
        ChanIo {
            source,
            err_source,
            sink,
            err_sink,
            ..ChanIo::default()
        }
    }

    /// Every source reached end of file (or there was none) and EOF was sent.
    pub fn sources_done(&self) -> bool {
        self.eof_sent
    }

    /// Everything received has been written out.
    pub fn sinks_drained(&self) -> bool {
        self.pending.is_empty() && self.pending_err.is_empty()
    }

    /// Stops reading `source` (the peer's output went away): closes it if
    /// ours, so a command writing to it gets SIGPIPE.
    pub fn close_source(&mut self) {
        if let Some(fd) = self.source.take() {
            if self.owned {
                fdio::close(fd);
            }
        }
        self.source_eof = true;
    }

    /// The sink's reader is gone: stop writing, drop what waits for it.
    fn fail_sink(&mut self) {
        self.sink_failed = true;
        self.pending.clear();
        if let Some(fd) = self.sink.take() {
            if self.owned {
                fdio::close(fd);
            }
        }
    }

    fn close_all(&mut self) {
        if self.owned {
            for fd in [self.source, self.err_source, self.sink, self.err_sink]
                .into_iter()
                .flatten()
            {
                fdio::close(fd);
            }
        }
        self.source = None;
        self.err_source = None;
        self.sink = None;
        self.err_sink = None;
    }
}

/// Received bytes a sink has not taken yet, consumed from the front
/// without moving the rest (a plain `Vec::drain` would be quadratic).
#[derive(Debug, Default)]
struct Pending {
    buf: Vec<u8>,
    pos: usize,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }
    fn bytes(&self) -> &[u8] {
        self.buf.get(self.pos..).unwrap_or_default()
    }
    fn extend(&mut self, data: &[u8]) {
        if self.is_empty() {
            self.buf.clear();
            self.pos = 0;
        }
        self.buf.extend_from_slice(data);
    }
    fn advance(&mut self, n: usize) {
        self.pos += n;
        if self.is_empty() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > (1 << 20) && self.pos * 2 > self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
    }
    fn clear(&mut self) -> usize {
        let n = self.buf.len() - self.pos.min(self.buf.len());
        self.buf.clear();
        self.pos = 0;
        n
    }
}

/// Channel fds by channel.
#[derive(Debug, Default)]
pub struct ChannelFds {
    map: BTreeMap<ChannelId, ChanIo>,
}

impl ChannelFds {
    /// Attaches fds to a channel.
    pub fn insert(&mut self, id: ChannelId, io: ChanIo) {
        self.map.insert(id, io);
    }

    /// The channel's fds.
    pub fn get(&self, id: ChannelId) -> Option<&ChanIo> {
        self.map.get(&id)
    }

    /// The channel's fds, mutably.
    pub fn get_mut(&mut self, id: ChannelId) -> Option<&mut ChanIo> {
        self.map.get_mut(&id)
    }

    /// Detaches and closes (if owned) a channel's fds.
    pub fn remove(&mut self, id: ChannelId) {
        if let Some(mut io) = self.map.remove(&id) {
            io.close_all();
        }
    }

    /// The channels with fds attached.
    pub fn ids(&self) -> Vec<ChannelId> {
        self.map.keys().copied().collect()
    }
}

impl Drop for ChannelFds {
    fn drop(&mut self) {
        for io in self.map.values_mut() {
            io.close_all();
        }
    }
}

/// What the client or server does with events; the pump does the I/O.
pub trait Handler {
    /// An event from the engine.
    fn on_event(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        event: Event,
    ) -> Result<(), String>;
    /// Runs once per loop turn (reap children, send exit status, ...).
    fn tick(&mut self, conn: &mut Connection, fds: &mut ChannelFds) -> Result<(), String> {
        let _ = (conn, fds);
        Ok(())
    }
    /// The work is done; the pump flushes output and returns.
    fn finished(&self) -> bool;
    /// How soon `tick` wants to run again while nothing else happens.
    fn tick_interval(&self) -> Option<Duration> {
        None
    }
    /// Extra fds to wake the loop for (listening sockets, a signal pipe,
    /// the terminal), with their poll events; `tick` runs after every
    /// wake-up and does the non-blocking work on them.
    fn watch_fds(&self, out: &mut Vec<libc::pollfd>) {
        let _ = out;
    }
    /// Bytes arrived from the peer (keepalive timers).
    fn input_received(&mut self, now: Instant) {
        let _ = now;
    }
}

/// Why the pump stopped early.
#[derive(Debug)]
pub enum PumpError {
    /// The engine reported an error (protocol violation, peer disconnect).
    Protocol(sluice_proto::Error),
    /// A system call failed.
    Io(String),
    /// The handler gave up.
    Handler(String),
    /// The peer closed the TCP connection.
    PeerClosed,
}

impl std::fmt::Display for PumpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PumpError::Protocol(e) => write!(f, "{e}"),
            PumpError::Io(e) | PumpError::Handler(e) => f.write_str(e),
            PumpError::PeerClosed => f.write_str("Connection closed by remote host"),
        }
    }
}

/// The loop's buffers around one connection.
pub struct Pump {
    sock: RawFd,
    inbuf: Vec<u8>,
    in_start: usize,
    out: Vec<u8>,
    out_pos: usize,
    /// Channel fds.
    pub fds: ChannelFds,
    sock_eof: bool,
    crypto: CryptoPool,
    /// When TCP_INFO was last read (None: never, or not a TCP socket).
    path_polled: Option<Instant>,
    tcp: bool,
}

/// How often the path's RTT is read for the channel windows.
const PATH_POLL: Duration = Duration::from_millis(100);

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
            crypto: CryptoPool::new(CryptoThreads::Fixed(1)),
            path_polled: None,
            tcp: true,
        }
    }

    /// Lets packets be sealed and opened in batches on up to `threads` threads.
    pub fn set_crypto_threads(&mut self, conn: &mut Connection, threads: CryptoThreads) {
        self.crypto = CryptoPool::new(threads);
        conn.set_batch_crypto(self.crypto.enabled());
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
    pub fn run(
        &mut self,
        conn: &mut Connection,
        handler: &mut dyn Handler,
    ) -> Result<(), PumpError> {
        let result = self.run_inner(conn, handler);
        // Flush what is queued (a DISCONNECT after an error) before returning.
        conn.poll_transmit(Instant::now(), &mut self.out);
        let _ = self.flush_blocking(Duration::from_secs(2));
        result
    }

    fn run_inner(
        &mut self,
        conn: &mut Connection,
        handler: &mut dyn Handler,
    ) -> Result<(), PumpError> {
        loop {
            let now = Instant::now();
            conn.handle_timeout(now);
            self.poll_path(conn, now);
            self.process_input(conn, handler)?;
            handler
                .tick(conn, &mut self.fds)
                .map_err(PumpError::Handler)?;
            self.drain_sinks(conn);
            self.fill_output(conn);
            self.flush_socket()?;
            if conn.is_closed() {
                return Ok(());
            }
            if handler.finished() && self.out_pos >= self.out.len() {
                return Ok(());
            }
            if self.sock_eof {
                return Err(PumpError::PeerClosed);
            }
            self.wait(conn, handler)?;
        }
    }

    /// Gives the engine the path's RTT (TCP_INFO) and the socket's receive
    /// buffer (SO_RCVBUF) so bulk windows can grow.
    fn poll_path(&mut self, conn: &mut Connection, now: Instant) {
        if !self.tcp || self.path_polled.is_some_and(|t| now - t < PATH_POLL) {
            return;
        }
        self.path_polled = Some(now);
        match super::path::tcp_info(self.sock) {
            Some(info) => {
                conn.set_path_rtt(info.path_rtt());
                if let Some(b) = super::sockbuf::get(self.sock, super::sockbuf::Buf::Recv) {
                    conn.set_path_recv_buffer(b);
                }
            }
            None => self.tcp = false,
        }
    }

    fn process_input(
        &mut self,
        conn: &mut Connection,
        handler: &mut dyn Handler,
    ) -> Result<(), PumpError> {
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
                let pool = &mut self.crypto;
                conn.open_batch(window, &mut |jobs| pool.run(jobs))
                    .map_err(PumpError::Protocol)?;
                let r = conn
                    .handle_input(now, window)
                    .map_err(PumpError::Protocol)?;
                let consumed = r.consumed;
                let mut used = None;
                if let Some(d) = r.data {
                    used = Some((d.channel, deliver(&mut self.fds, d.channel, d.ext, d.data)));
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
                Ok(_) => {
                    progressed = true;
                    handler.input_received(Instant::now());
                }
                Err(e) if fdio::would_block(&e) => {}
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                    self.sock_eof = true;
                    return Ok(());
                }
                Err(e) => return Err(PumpError::Io(format!("read from socket: {e}"))),
            }
            if !progressed {
                return Ok(());
            }
        }
    }

    fn on_event(
        &mut self,
        conn: &mut Connection,
        handler: &mut dyn Handler,
        ev: Event,
    ) -> Result<(), PumpError> {
        match &ev {
            Event::ChannelEof(id) => {
                if let Some(io) = self.fds.get_mut(*id) {
                    io.peer_eof = true;
                }
            }
            Event::ChannelClosed(id) => {
                let id = *id;
                handler
                    .on_event(conn, &mut self.fds, ev)
                    .map_err(PumpError::Handler)?;
                if let Some(io) = self.fds.get_mut(id) {
                    drain_blocking(io);
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

    /// Writes data that sinks did not take at once; closes a sink after the
    /// peer's EOF once it is drained.
    fn drain_sinks(&mut self, conn: &mut Connection) {
        for id in self.fds.ids() {
            let Some(io) = self.fds.get_mut(id) else {
                continue;
            };
            let mut written = 0;
            let mut failed = false;
            for (is_out, fd, buf) in [
                (true, io.sink, &mut io.pending),
                (false, io.err_sink, &mut io.pending_err),
            ] {
                let Some(fd) = fd else { continue };
                while !buf.is_empty() {
                    match fdio::write_some(fd, buf.bytes()) {
                        Ok(n) => {
                            buf.advance(n);
                            written += n;
                        }
                        Err(e) if fdio::would_block(&e) => break,
                        Err(_) => {
                            // The reader went away (EPIPE): drop what it will never read.
                            written += buf.clear();
                            failed |= is_out;
                            break;
                        }
                    }
                }
            }
            if failed {
                io.fail_sink();
            }
            if io.peer_eof && io.close_sink_on_eof && io.pending.is_empty() {
                if let Some(fd) = io.sink.take() {
                    if io.shutdown_sink_on_eof {
                        // SAFETY: plain syscall on an fd we hold.
                        unsafe { libc::shutdown(fd, libc::SHUT_WR) };
                    }
                    if io.owned {
                        fdio::close(fd);
                    }
                }
            }
            if written > 0 {
                consumed_on(conn, &mut self.fds, id, written);
            }
        }
    }

    /// Reads channel sources straight into packet slots in the output buffer.
    fn fill_output(&mut self, conn: &mut Connection) {
        conn.poll_transmit(Instant::now(), &mut self.out);
        'channels: for id in self.fds.ids() {
            for ext in [None, Some(1u32)] {
                loop {
                    if self.out.len() - self.out_pos >= OUT_HIGH_WATER {
                        break 'channels;
                    }
                    let Some(io) = self.fds.get_mut(id) else {
                        break;
                    };
                    let (fd, eof, ready) = match ext {
                        None => (io.source, io.source_eof, io.source_ready),
                        Some(_) => (io.err_source, io.err_source_eof, io.err_source_ready),
                    };
                    let Some(fd) = fd.filter(|_| !eof && ready) else {
                        break;
                    };
                    let Some(slot) = conn.data_slot(id, ext, &mut self.out) else {
                        break;
                    };
                    match fdio::read_append(fd, &mut self.out, slot.max) {
                        Ok(0) => {
                            conn.finish_data_slot(slot, 0, &mut self.out);
                            match ext {
                                None => io.source_eof = true,
                                Some(_) => io.err_source_eof = true,
                            }
                            break;
                        }
                        Ok(n) => conn.finish_data_slot(slot, n, &mut self.out),
                        Err(e) => {
                            conn.finish_data_slot(slot, 0, &mut self.out);
                            let blocked = fdio::would_block(&e);
                            match ext {
                                None if blocked => io.source_ready = false,
                                Some(_) if blocked => io.err_source_ready = false,
                                None => io.source_eof = true,
                                Some(_) => io.err_source_eof = true,
                            }
                            break;
                        }
                    }
                }
            }
            if let Some(io) = self.fds.get_mut(id) {
                let out_done = io.source.is_none() || io.source_eof;
                let err_done = io.err_source.is_none() || io.err_source_eof;
                if out_done
                    && err_done
                    && !io.eof_sent
                    && (io.source.is_some() || io.err_source.is_some())
                {
                    io.eof_sent = true;
                    let _ = conn.send_eof(id);
                }
                let no_sources = io.source.is_none() && io.err_source.is_none();
                if io.sink_failed && io.close_when_sink_fails && (io.eof_sent || no_sources) {
                    let closed = conn.channel_info(id).is_none_or(|i| i.close_sent);
                    if !closed {
                        crate::log!(Debug1, "channel {}: output gone, closing", id.0);
                        let _ = conn.close_channel(id);
                    }
                }
            }
        }
        let pool = &mut self.crypto;
        conn.seal_batch(&mut self.out, &mut |jobs| pool.run(jobs));
        // Always seal what the data path queued (a re-key's KEXINIT, window
        // adjusts): the loop may sleep next, and nothing else would send them.
        conn.poll_transmit(Instant::now(), &mut self.out);
    }

    fn flush_socket(&mut self) -> Result<(), PumpError> {
        while self.out_pos < self.out.len() {
            let Some(pending) = self.out.get(self.out_pos..) else {
                break;
            };
            match fdio::write_some(self.sock, pending) {
                Ok(n) => self.out_pos += n,
                Err(e) if fdio::would_block(&e) => break,
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                    return Err(PumpError::PeerClosed)
                }
                Err(e) => return Err(PumpError::Io(format!("write to socket: {e}"))),
            }
        }
        if self.out_pos >= self.out.len() {
            self.out.clear();
            self.out_pos = 0;
        }
        Ok(())
    }

    fn flush_blocking(&mut self, limit: Duration) -> Result<(), PumpError> {
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

    fn wait(&mut self, conn: &Connection, handler: &dyn Handler) -> Result<(), PumpError> {
        let mut pfds = Vec::with_capacity(8);
        let mut sock_events = 0;
        if self.inbuf.len() < IN_BUF && !self.sock_eof {
            sock_events |= libc::POLLIN;
        }
        if self.out_pos < self.out.len() {
            sock_events |= libc::POLLOUT;
        }
        pfds.push(libc::pollfd {
            fd: self.sock,
            events: sock_events,
            revents: 0,
        });
        let room = self.out.len() - self.out_pos < OUT_HIGH_WATER;
        for id in self.fds.ids() {
            let Some(io) = self.fds.get(id) else { continue };
            let can_send = room && conn.send_capacity(id) > 0;
            for (fd, eof) in [
                (io.source, io.source_eof),
                (io.err_source, io.err_source_eof),
            ] {
                if let (Some(fd), false, true) = (fd, eof, can_send) {
                    pfds.push(libc::pollfd {
                        fd,
                        events: libc::POLLIN,
                        revents: 0,
                    });
                }
            }
            for (fd, buf) in [(io.sink, &io.pending), (io.err_sink, &io.pending_err)] {
                if let (Some(fd), false) = (fd, buf.is_empty()) {
                    pfds.push(libc::pollfd {
                        fd,
                        events: libc::POLLOUT,
                        revents: 0,
                    });
                }
            }
        }
        handler.watch_fds(&mut pfds);
        let now = Instant::now();
        let mut timeout = conn
            .poll_timeout()
            .map(|t| t.saturating_duration_since(now));
        if let Some(t) = handler.tick_interval() {
            timeout = Some(timeout.map_or(t, |x| x.min(t)));
        }
        let ms = timeout.map_or(-1, |d| d.as_millis().min(60_000) as i32);
        fdio::poll(&mut pfds, ms).map_err(|e| PumpError::Io(format!("poll: {e}")))?;
        for p in pfds
            .iter()
            .filter(|p| p.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0)
        {
            for id in self.fds.ids() {
                if let Some(io) = self.fds.get_mut(id) {
                    if io.source == Some(p.fd) {
                        io.source_ready = true;
                    }
                    if io.err_source == Some(p.fd) {
                        io.err_source_ready = true;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Hands received data to the channel's sink: written at once where
/// possible, the rest kept in order. Returns bytes consumed now.
/// Tells the engine `n` bytes were written out; logs when that grew the
/// channel's window (it doubles while the path needs more, see the engine's
/// `connection::window`).
fn consumed_on(conn: &mut Connection, fds: &mut ChannelFds, id: ChannelId, n: usize) {
    conn.consumed(id, n);
    let (Some(io), Some(info)) = (fds.get_mut(id), conn.channel_info(id)) else {
        return;
    };
    if info.recv_window != io.recv_window {
        if io.recv_window != 0 {
            crate::log!(
                Debug1,
                "channel {}: receive window {} -> {} bytes (path RTT {:?})",
                id.0,
                io.recv_window,
                info.recv_window,
                conn.path_rtt()
            );
        }
        io.recv_window = info.recv_window;
    }
}

fn deliver(fds: &mut ChannelFds, id: ChannelId, ext: Option<u32>, data: &[u8]) -> usize {
    let Some(io) = fds.get_mut(id) else {
        return data.len();
    };
    let (fd, pending) = match ext {
        None => (io.sink, &mut io.pending),
        Some(_) => (io.err_sink, &mut io.pending_err),
    };
    let Some(fd) = fd else { return data.len() };
    if !pending.is_empty() {
        pending.extend(data);
        return 0;
    }
    match fdio::write_some(fd, data) {
        Ok(n) => {
            pending.extend(data.get(n..).unwrap_or_default());
            n
        }
        Err(e) if fdio::would_block(&e) => {
            pending.extend(data);
            0
        }
        Err(_) => {
            if ext.is_none() {
                io.fail_sink();
            }
            data.len()
        }
    }
}

/// Writes a closing channel's remaining data, waiting for slow sinks (a
/// terminal, a pipe into a busy program) so no received byte is lost.
fn drain_blocking(io: &mut ChanIo) {
    for (fd, buf) in [
        (io.sink, &mut io.pending),
        (io.err_sink, &mut io.pending_err),
    ] {
        let Some(fd) = fd else { continue };
        while !buf.is_empty() {
            match fdio::write_some(fd, buf.bytes()) {
                Ok(n) => buf.advance(n),
                Err(e) if fdio::would_block(&e) => {
                    let mut p = [libc::pollfd {
                        fd,
                        events: libc::POLLOUT,
                        revents: 0,
                    }];
                    let _ = fdio::poll(&mut p, 1000);
                }
                Err(_) => {
                    buf.clear();
                }
            }
        }
    }
}
