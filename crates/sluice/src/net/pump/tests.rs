//! Two pumps over a Unix socket pair, one thread each, with in-process
//! channel ends at both: bytes echoed through a server end come back intact
//! and in order, EOF and close travel both ways, and a consumer that stops
//! taking bytes closes the sender's window with nothing lost.

use super::*;
use sluice_proto::crypto::hostkey::KeyPair;
use sluice_proto::crypto::SystemRng;
use sluice_proto::{AuthMethodRequest, ChannelId, ClientConfig, Config, ServerConfig};
use std::collections::VecDeque;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Byte `i` of the test stream: position-dependent, so a lost, repeated or
/// reordered chunk shows.
fn byte_at(i: u64) -> u8 {
    (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8 ^ (i as u8)
}

/// Client end: sends `total` bytes of the test stream, then EOF; checks
/// what comes back against the same stream and closes once all is back.
struct Source {
    total: u64,
    sent: Arc<AtomicU64>,
    received: Arc<AtomicU64>,
    mismatches: Arc<AtomicU64>,
    peer_eof: bool,
    /// The largest window the pump said the peer granted.
    peer_window: Arc<AtomicU64>,
}

impl ChannelEndpoint for Source {
    fn on_peer_window(&mut self, window: u32) {
        let was = self.peer_window.swap(u64::from(window), Ordering::Relaxed);
        assert!(u64::from(window) > was, "told of a window no larger");
    }

    fn on_data(&mut self, ext: Ext, data: &[u8]) -> usize {
        assert_eq!(ext, Ext::Data);
        let at = self.received.load(Ordering::Relaxed);
        let bad = (0..data.len() as u64)
            .filter(|k| data[*k as usize] != byte_at(at + k))
            .count();
        self.mismatches.fetch_add(bad as u64, Ordering::Relaxed);
        self.received
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        data.len()
    }

    fn produce(&mut self, ext: Ext, buf: &mut [u8]) -> Produced {
        let at = self.sent.load(Ordering::Relaxed);
        if ext == Ext::Stderr || at >= self.total {
            return Produced::Eof;
        }
        let n = buf.len().min((self.total - at) as usize);
        for (k, b) in buf.iter_mut().take(n).enumerate() {
            *b = byte_at(at + k as u64);
        }
        self.sent.fetch_add(n as u64, Ordering::Relaxed);
        Produced::Data(n)
    }

    fn on_eof(&mut self) {
        self.peer_eof = true;
    }

    fn closing(&self) -> bool {
        self.peer_eof && self.received.load(Ordering::Relaxed) == self.total
    }
}

/// Server end: echoes what it takes through a 64 KiB buffer (a slow
/// consumer when the buffer is full), EOF after the peer's; with `limit`,
/// takes nothing past that many bytes and echoes nothing.
struct Echo {
    buf: VecDeque<u8>,
    limit: Option<u64>,
    taken: Arc<AtomicU64>,
    closed: Arc<AtomicUsize>,
    peer_eof: bool,
}

const ECHO_BUF: usize = 64 * 1024;

impl ChannelEndpoint for Echo {
    fn on_data(&mut self, _ext: Ext, data: &[u8]) -> usize {
        let taken = self.taken.load(Ordering::Relaxed);
        let mut n = data.len().min(ECHO_BUF - self.buf.len());
        if let Some(limit) = self.limit {
            n = n.min(limit.saturating_sub(taken) as usize);
        } else {
            self.buf.extend(&data[..n]);
        }
        self.taken.fetch_add(n as u64, Ordering::Relaxed);
        n
    }

    fn produce(&mut self, ext: Ext, buf: &mut [u8]) -> Produced {
        if ext == Ext::Stderr || (self.peer_eof && self.buf.is_empty()) {
            return Produced::Eof;
        }
        let n = buf.len().min(self.buf.len());
        if n == 0 {
            return Produced::WouldBlock;
        }
        for (b, v) in buf.iter_mut().zip(self.buf.drain(..n)) {
            *b = v;
        }
        Produced::Data(n)
    }

    fn on_eof(&mut self) {
        self.peer_eof = true;
    }

    fn on_close(&mut self) {
        self.closed.fetch_add(1, Ordering::Relaxed);
    }
}

fn user_key() -> KeyPair {
    KeyPair::from_ed25519_seed(&[9u8; 32]).unwrap()
}

/// Authenticates, opens a session and attaches `end`; finished once the
/// channel closed, or (with `stall`) once the window stayed shut.
struct ClientSide {
    end: Option<Box<dyn ChannelEndpoint + Send>>,
    channel: Option<ChannelId>,
    done: bool,
    /// Bytes sent, and since when they have not moved with the window shut.
    stall: Option<(Arc<AtomicU64>, u64, Option<Instant>)>,
}

impl Handler for ClientSide {
    type Error = String;

    fn on_event(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        e: Event,
    ) -> Result<(), String> {
        match e {
            Event::HostKey { .. } => conn.accept_host_key(),
            Event::AuthReady => conn
                .auth_publickey_sign("alice", "ssh-ed25519", &user_key())
                .map_err(|e| e.to_string())?,
            Event::Authenticated { .. } => {
                self.channel = Some(conn.open_session().map_err(|e| e.to_string())?);
            }
            Event::ChannelOpened(id) => {
                if let Some(end) = self.end.take() {
                    fds.insert(id, ChanIo::in_process(end));
                }
            }
            Event::ChannelClosed(_) => self.done = true,
            _ => {}
        }
        Ok(())
    }

    fn tick(&mut self, conn: &mut Connection, _fds: &mut ChannelFds) -> Result<(), String> {
        let (Some((sent, last, since)), Some(id)) = (self.stall.as_mut(), self.channel) else {
            return Ok(());
        };
        let now_sent = sent.load(Ordering::Relaxed);
        if now_sent != *last || conn.send_capacity(id) > 0 {
            *last = now_sent;
            *since = None;
        } else if since.get_or_insert_with(Instant::now).elapsed() > Duration::from_millis(500) {
            self.done = true;
        }
        Ok(())
    }

    fn finished(&self) -> bool {
        self.done
    }

    fn tick_interval(&self) -> Option<Duration> {
        self.stall.as_ref().map(|_| Duration::from_millis(20))
    }
}

/// Accepts the user key and one session channel, attaching `end`.
struct ServerSide {
    end: Option<Box<dyn ChannelEndpoint + Send>>,
    channel: Option<ChannelId>,
    done: bool,
}

impl Handler for ServerSide {
    type Error = String;

    fn on_event(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        e: Event,
    ) -> Result<(), String> {
        match e {
            Event::AuthRequest {
                method: AuthMethodRequest::PublicKey { signed: true, .. },
                ..
            } => conn.auth_accept(),
            Event::AuthRequest { .. } => conn.auth_reject(),
            Event::ChannelOpenRequest { channel, .. } => {
                conn.accept_channel(channel).map_err(|e| e.to_string())?;
                if let Some(end) = self.end.take() {
                    fds.insert(channel, ChanIo::in_process(end));
                }
                self.channel = Some(channel);
            }
            Event::ChannelClosed(_) => self.done = true,
            _ => {}
        }
        Ok(())
    }

    fn finished(&self) -> bool {
        self.done
    }
}

/// What the server's pump held at the end: its result, the bytes waiting
/// for the in-process end, and the channel's receive window.
struct ServerEnd {
    result: Result<(), PumpError>,
    pending: usize,
    recv_window: u32,
}

/// Runs both pumps to their end.
fn run(client: &mut ClientSide, server: ServerSide) -> (Result<(), PumpError>, ServerEnd) {
    let (a, b) = UnixStream::pair().unwrap();
    a.set_nonblocking(true).unwrap();
    b.set_nonblocking(true).unwrap();
    std::thread::scope(|s| {
        let srv = s.spawn(move || {
            let mut server = server;
            let mut conn = Connection::server(
                ServerConfig {
                    common: Config::default(),
                    host_keys: vec![Arc::new(KeyPair::from_ed25519_seed(&[7u8; 32]).unwrap())],
                    auth_methods: vec!["publickey".into()],
                    max_auth_tries: 6,
                    banner: None,
                },
                Box::new(SystemRng),
            );
            let mut pump = Pump::new(b.as_raw_fd());
            let result = pump.run(&mut conn, &mut server);
            let id = server.channel.unwrap_or(ChannelId(u32::MAX));
            ServerEnd {
                result,
                pending: pump.fds.get(id).map_or(0, ChanIo::pending_len),
                recv_window: conn.channel_info(id).map_or(0, |i| i.recv_window),
            }
        });
        let mut conn = Connection::client(
            ClientConfig {
                common: Config::default(),
            },
            Box::new(SystemRng),
        );
        let r = Pump::new(a.as_raw_fd()).run(&mut conn, client);
        drop(a);
        (r, srv.join().unwrap())
    })
}

struct Counters {
    sent: Arc<AtomicU64>,
    received: Arc<AtomicU64>,
    mismatches: Arc<AtomicU64>,
    taken: Arc<AtomicU64>,
    closed: Arc<AtomicUsize>,
    peer_window: Arc<AtomicU64>,
}

fn ends(total: u64, limit: Option<u64>) -> (Counters, Source, Echo) {
    let c = Counters {
        sent: Arc::default(),
        received: Arc::default(),
        mismatches: Arc::default(),
        taken: Arc::default(),
        closed: Arc::default(),
        peer_window: Arc::default(),
    };
    let source = Source {
        total,
        sent: c.sent.clone(),
        received: c.received.clone(),
        mismatches: c.mismatches.clone(),
        peer_eof: false,
        peer_window: c.peer_window.clone(),
    };
    let echo = Echo {
        buf: VecDeque::with_capacity(ECHO_BUF),
        limit,
        taken: c.taken.clone(),
        closed: c.closed.clone(),
        peer_eof: false,
    };
    (c, source, echo)
}

// This test hung about one run in eight until the pump ran its next turn
// at once after the output buffer, cut at its high-water mark, emptied: an
// in-process end has no fd to wake the loop (mod.rs, `out_cut`).
#[test]
fn in_process_ends_echo_megabytes_with_eof_and_close_both_ways() {
    const TOTAL: u64 = 6 << 20;
    let (c, source, echo) = ends(TOTAL, None);
    let mut client = ClientSide {
        end: Some(Box::new(source)),
        channel: None,
        done: false,
        stall: None,
    };
    let server = ServerSide {
        end: Some(Box::new(echo)),
        channel: None,
        done: false,
    };
    let (r, srv) = run(&mut client, server);
    r.unwrap();
    srv.result.unwrap();
    assert!(client.done, "the client's channel never closed");
    assert_eq!(c.sent.load(Ordering::Relaxed), TOTAL);
    assert_eq!(c.taken.load(Ordering::Relaxed), TOTAL);
    assert_eq!(c.received.load(Ordering::Relaxed), TOTAL);
    assert_eq!(c.mismatches.load(Ordering::Relaxed), 0);
    assert_eq!(
        c.closed.load(Ordering::Relaxed),
        1,
        "the echo end heard of the close"
    );
    // The sending end heard of the server's window (at least its first
    // grant, which a 6 MiB stream outruns).
    let w = c.peer_window.load(Ordering::Relaxed);
    let first = u64::from(sluice_proto::Config::default().window);
    assert!(w >= first, "peer window told: {w}, first grant {first}");
}

#[test]
fn a_consumer_that_stops_closes_the_window_and_loses_nothing() {
    const LIMIT: u64 = 1 << 20;
    let (c, source, echo) = ends(1 << 30, Some(LIMIT));
    let mut client = ClientSide {
        end: Some(Box::new(source)),
        channel: None,
        done: false,
        stall: Some((c.sent.clone(), 0, None)),
    };
    let server = ServerSide {
        end: Some(Box::new(echo)),
        channel: None,
        done: false,
    };
    let (r, srv) = run(&mut client, server);
    r.unwrap();
    // The client went away mid-channel.
    assert!(
        matches!(srv.result, Err(PumpError::PeerClosed)),
        "{:?}",
        srv.result
    );
    let sent = c.sent.load(Ordering::Relaxed);
    assert_eq!(c.taken.load(Ordering::Relaxed), LIMIT);
    // Every byte sent was taken or waits: the window, not a buffer, stopped it.
    assert_eq!(sent, LIMIT + srv.pending as u64);
    assert!(srv.pending > 0);
    assert!(
        srv.pending <= srv.recv_window as usize,
        "{} > {}",
        srv.pending,
        srv.recv_window
    );
    assert_eq!(c.received.load(Ordering::Relaxed), 0);
}
