//! A striped channel between two runtime ends in one process: a primary
//! and two secondary connections over Unix socket pairs, every pump in
//! its own thread, both directions at once through the local threads'
//! pipes, one carrier per connection. Every byte arrives in order (a
//! position-dependent pattern), EOF only after all of it; a secondary
//! killed mid-transfer, or one whose carrier the client withdraws, leaves
//! the rest to the others; losing every carrier fails the channel instead
//! of ending it short.

use super::*;
use crate::net::pump::{ChanFd, ChanIo, ChannelFds, Handler, Pump};
use sluice_proto::crypto::hostkey::KeyPair;
use sluice_proto::crypto::SystemRng;
use sluice_proto::msg::ChannelRequestKind;
use sluice_proto::{
    AuthMethodRequest, ChannelId, ClientConfig, Config, Connection, Event, ServerConfig,
};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn byte_at(i: u64) -> u8 {
    (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8 ^ (i as u8)
}

/// One connection's end of the test session (client or server side).
struct End {
    hub: Arc<Hub>,
    primary: bool,
    server: bool,
    /// The striped channel, once open (primary only).
    session: Option<ChannelId>,
    key: ConnKey,
    done: bool,
    failed: Option<String>,
    /// Open a carrier on this connection (client side).
    carrier: bool,
}

impl End {
    fn carrier(&self, conn: &mut Connection, fds: &mut ChannelFds, id: ChannelId) {
        match CarrierEnd::new(&self.hub, self.key) {
            Some(end) => fds.insert(id, ChanIo::in_process(Box::new(end))),
            None => {
                let _ = conn.close_channel(id);
            }
        }
    }
}

impl Handler for End {
    type Error = String;

    fn on_event(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        e: Event,
    ) -> Result<(), String> {
        match e {
            Event::HostKey { .. } => conn.accept_host_key(),
            Event::AuthReady => {
                let key = KeyPair::from_ed25519_seed(&[9u8; 32]).unwrap();
                conn.auth_publickey_sign("alice", "ssh-ed25519", &key)
                    .map_err(|e| e.to_string())?
            }
            Event::AuthRequest {
                method: AuthMethodRequest::PublicKey { signed: true, .. },
                ..
            } => conn.auth_accept(),
            Event::AuthRequest { .. } => conn.auth_reject(),
            Event::Authenticated { .. } if !self.server => {
                if self.primary {
                    conn.open_session().map_err(|e| e.to_string())?;
                }
                if !self.carrier {
                    return Ok(());
                }
                conn.open_channel(sluice_proto::stripe::CARRIER_CHANNEL, &[0, 0, 0, 0])
                    .map_err(|e| e.to_string())?;
            }
            Event::ChannelOpened(id) if self.primary && self.session.is_none() => {
                self.session = Some(id);
                fds.insert(
                    id,
                    ChanIo::in_process(Box::new(StripedEnd::new(&self.hub, Stderr::Sink(2)))),
                );
            }
            Event::ChannelOpened(id) => self.carrier(conn, fds, id),
            Event::ChannelOpenRequest {
                channel,
                channel_type,
                ..
            } => {
                conn.accept_channel(channel).map_err(|e| e.to_string())?;
                if channel_type == "session" {
                    self.session = Some(channel);
                    fds.insert(
                        channel,
                        ChanIo::in_process(Box::new(StripedEnd::new(&self.hub, Stderr::Source))),
                    );
                } else {
                    self.carrier(conn, fds, channel);
                }
            }
            Event::ChannelRequest {
                request: ChannelRequestKind::Other { name, data },
                ..
            } if name == sluice_proto::stripe::ACK_REQUEST => {
                handle_ack(&self.hub, &data).map_err(|e| e.to_string())?
            }
            Event::ChannelEof(id) if Some(id) == self.session => self.hub.on_peer_eof(),
            Event::ChannelClosed(id) if Some(id) == self.session || !self.primary => {
                self.done = true
            }
            _ => {}
        }
        Ok(())
    }

    fn tick(&mut self, conn: &mut Connection, _fds: &mut ChannelFds) -> Result<(), String> {
        let Some(id) = self.session else {
            return Ok(());
        };
        if let Err(e) = tick(&self.hub, conn, id) {
            self.failed = Some(e.to_string());
            return Err(e.to_string());
        }
        // The server closes once its EOF went and its command's input is
        // all written (the test's stand-in for the command exiting).
        let info = conn.channel_info(id);
        if self.server
            && self.hub.output_done()
            && info.is_some_and(|i| i.eof_sent && i.eof_received && !i.close_sent)
        {
            let _ = conn.close_channel(id);
        }
        if !self.server && info.is_some_and(|i| i.eof_received && i.eof_sent && !i.close_sent) {
            let _ = conn.close_channel(id);
        }
        Ok(())
    }

    fn tick_interval(&self) -> Option<Duration> {
        Some(Duration::from_millis(50))
    }

    fn finished(&self) -> bool {
        // A server runs until its client goes, as sluiced does.
        self.done && !self.server
    }
}

fn server_conn() -> Connection {
    Connection::server(
        ServerConfig {
            common: Config::default(),
            host_keys: vec![Arc::new(KeyPair::from_ed25519_seed(&[7u8; 32]).unwrap())],
            auth_methods: vec!["publickey".into()],
            max_auth_tries: 6,
            banner: None,
        },
        Box::new(SystemRng),
    )
}

fn client_conn() -> Connection {
    Connection::client(
        ClientConfig {
            common: Config::default(),
        },
        Box::new(SystemRng),
    )
}

/// A pipe: (read end, write end).
fn pipe() -> (OwnedFd, OwnedFd) {
    let (r, w) = std::io::pipe().unwrap();
    (OwnedFd::from(r), OwnedFd::from(w))
}

/// Feeds `total` pattern bytes into a new pipe whose read end is returned.
fn feeder(total: u64) -> OwnedFd {
    let (r, w) = pipe();
    std::thread::spawn(move || {
        let mut f = std::fs::File::from(w);
        let mut at = 0u64;
        let mut buf = vec![0u8; 64 * 1024];
        while at < total {
            let n = buf.len().min((total - at) as usize);
            for (k, b) in buf.iter_mut().take(n).enumerate() {
                *b = byte_at(at + k as u64);
            }
            if f.write_all(&buf[..n]).is_err() {
                return;
            }
            at += n as u64;
        }
    });
    r
}

/// Reads a pipe (bytes, bytes out of pattern), to its end or until
/// asked: a failed stream keeps its sink open, so no end comes.
struct Checker {
    counts: Arc<std::sync::Mutex<(u64, u64)>>,
    done: std::thread::JoinHandle<()>,
}

impl Checker {
    /// The counts once the pipe ended, or as they stand after 5 s.
    fn result(self) -> (u64, u64) {
        let end = std::time::Instant::now() + Duration::from_secs(5);
        while !self.done.is_finished() && std::time::Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
        *self.counts.lock().unwrap()
    }
}

fn checker() -> (OwnedFd, Checker) {
    let (r, w) = pipe();
    let counts = Arc::new(std::sync::Mutex::new((0u64, 0u64)));
    let c = counts.clone();
    let done = std::thread::spawn(move || {
        let mut f = std::fs::File::from(r);
        let mut buf = vec![0u8; 256 * 1024];
        while let Ok(n @ 1..) = f.read(&mut buf) {
            let mut g = c.lock().unwrap();
            let at = g.0;
            for (k, b) in buf[..n].iter().enumerate() {
                g.1 += u64::from(*b != byte_at(at + k as u64));
            }
            g.0 += n as u64;
        }
    });
    (w, Checker { counts, done })
}

struct Outcome {
    /// Each connection's client pump: ended by an error.
    ended_badly: Vec<bool>,
    /// Bytes each way and their mismatches: client to server, server to client.
    up: (u64, u64),
    down: (u64, u64),
    client: Result<(), String>,
}

/// Runs a session of `links` connections moving `total` bytes each way;
/// `kill` says which connections' sockets to shut down, `withdraw` whose
/// carriers the client closes, once this many bytes went up.
fn session(
    links: usize,
    primary_carrier: bool,
    total: u64,
    kill: &[usize],
    withdraw: &[usize],
    kill_after: u64,
) -> Outcome {
    let chub = Hub::new(0).unwrap();
    let shub = Hub::new(0).unwrap();
    chub.no_stderr();
    shub.no_stderr();
    let (c_out, c_check) = checker();
    let (s_out, s_check) = checker();
    spawn_input(&chub, ChanFd::Owned(feeder(total))).unwrap();
    spawn_input(&shub, ChanFd::Owned(feeder(total))).unwrap();
    spawn_output(&chub, ChanFd::Owned(c_out)).unwrap();
    spawn_output(&shub, ChanFd::Owned(s_out)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut socks = Vec::new();
    let mut threads = Vec::new();
    let ckeys: Vec<ConnKey> = (0..links).map(|_| ConnKey::next()).collect();
    let skeys: Vec<ConnKey> = (0..links).map(|_| ConnKey::next()).collect();
    chub.set_primary(ckeys[0]);
    shub.set_primary(skeys[0]);
    for i in 0..links {
        let (a, b) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        b.set_nonblocking(true).unwrap();
        if kill.contains(&i) {
            socks.push(a.try_clone().unwrap());
        }
        let primary = i == 0;
        let sh = shub.clone();
        let skeys = skeys.clone();
        threads.push(std::thread::spawn(move || {
            let mut end = End {
                hub: sh,
                primary,
                server: true,
                session: None,
                key: skeys[i],
                done: false,
                failed: None,
                carrier: true,
            };
            let mut conn = server_conn();
            let r = Pump::new(b.as_raw_fd()).run(&mut conn, &mut end);
            (r.map_err(|e| e.to_string()), end.failed)
        }));
        let ch = chub.clone();
        let ckey = ckeys[i];
        threads.push(std::thread::spawn(move || {
            let mut end = End {
                hub: ch,
                primary,
                server: false,
                session: None,
                key: ckey,
                done: false,
                failed: None,
                carrier: !(primary && !primary_carrier),
            };
            let mut conn = client_conn();
            let r = Pump::new(a.as_raw_fd()).run(&mut conn, &mut end);
            (r.map_err(|e| e.to_string()), end.failed)
        }));
    }
    if !kill.is_empty() || !withdraw.is_empty() {
        let (chub, stop) = (chub.clone(), stop.clone());
        let victims = std::mem::take(&mut socks);
        let withdrawn: Vec<ConnKey> = withdraw.iter().map(|&i| ckeys[i]).collect();
        std::thread::spawn(move || {
            while chub.progress().0 < kill_after && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
            }
            for v in victims {
                let _ = v.shutdown(std::net::Shutdown::Both);
            }
            for k in withdrawn {
                chub.withdraw(k);
            }
        });
    }
    let mut results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let ended_badly = results
        .iter()
        .skip(1)
        .step_by(2)
        .map(|r| r.0.is_err())
        .collect();
    stop.store(true, Ordering::Relaxed);
    // The primary's client pump (thread 1) decides the run.
    let (client_run, client_failed) = results.swap_remove(1);
    // As the client reports it: the hub's failure first (the server may
    // have ended the connection on its own before our tick saw it).
    let hub_failed = chub.incomplete();
    let client = match (client_run, client_failed) {
        (_, Some(f)) => Err(f),
        (Err(e), None) => Err(hub_failed.unwrap_or(e)),
        (Ok(()), None) => Ok(()),
    };
    chub.close();
    shub.close();
    Outcome {
        ended_badly,
        up: s_check.result(),
        down: c_check.result(),
        client,
    }
}

#[test]
fn both_directions_over_three_connections_arrive_in_order() {
    const TOTAL: u64 = 24 << 20;
    let o = session(3, true, TOTAL, &[], &[], 0);
    assert_eq!(o.client, Ok(()));
    assert_eq!(o.ended_badly, [false, false, false]);
    assert_eq!(o.up, (TOTAL, 0));
    assert_eq!(o.down, (TOTAL, 0));
}

#[test]
fn over_the_primary_alone_the_end_follows_the_chunks_in_order() {
    // Every chunk on the primary's carrier: EOF goes right behind the last
    // one, before its acknowledgement, and both directions arrive whole.
    const TOTAL: u64 = 24 << 20;
    let o = session(1, true, TOTAL, &[], &[], 0);
    assert_eq!(o.client, Ok(()));
    assert_eq!(o.ended_badly, [false]);
    assert_eq!(o.up, (TOTAL, 0));
    assert_eq!(o.down, (TOTAL, 0));
}

#[test]
fn a_secondary_killed_mid_transfer_leaves_the_rest_to_the_others() {
    const TOTAL: u64 = 48 << 20;
    let o = session(3, true, TOTAL, &[2], &[], 4 << 20);
    assert_eq!(o.client, Ok(()));
    assert_eq!(
        o.ended_badly,
        [false, false, true],
        "the secondary was killed"
    );
    assert_eq!(o.up, (TOTAL, 0));
    assert_eq!(o.down, (TOTAL, 0));
}

#[test]
fn a_withdrawn_carrier_closes_and_leaves_its_chunks_to_the_others() {
    // `Streams auto` giving a connection back: the client closes its
    // carrier mid-transfer; both directions still arrive whole, and every
    // connection ends cleanly.
    const TOTAL: u64 = 48 << 20;
    let o = session(3, true, TOTAL, &[], &[2], 4 << 20);
    assert_eq!(o.client, Ok(()));
    assert_eq!(o.ended_badly, [false, false, false]);
    assert_eq!(o.up, (TOTAL, 0));
    assert_eq!(o.down, (TOTAL, 0));
}

#[test]
fn losing_every_carrier_fails_the_channel_loudly() {
    // The primary carries no chunks; its only secondary dies early.
    const TOTAL: u64 = 64 << 20;
    let o = session(2, false, TOTAL, &[1], &[], 1 << 20);
    let err = o.client.expect_err("a stranded transfer must fail");
    assert!(
        err.contains("channel 0") && err.contains("acknowledged"),
        "{err}"
    );
    // Never the whole stream delivered as if complete.
    assert!(
        o.up.0 < TOTAL || o.down.0 < TOTAL,
        "{:?} {:?}",
        o.up,
        o.down
    );
}

#[test]
fn plain_data_is_the_streams_start_and_past_its_cap_a_protocol_error() {
    use sluice_proto::stripe::PLAIN_MAX;
    let hub = Hub::new(0).unwrap();
    // Up to the cap, plain data is the stream's bytes from 0 on.
    let block = vec![7u8; 1 << 20];
    for _ in 0..(PLAIN_MAX >> 20) {
        hub.on_plain(&block);
    }
    assert!(hub.failure().is_none(), "{:?}", hub.failure());
    // One byte past the cap: a clean protocol failure, not a panic.
    hub.on_plain(&[1]);
    match hub.failure() {
        Some(Failure::Protocol(e @ sluice_proto::stripe::StripeError::Malformed(_))) => {
            assert_eq!(
                e.to_string(),
                "striping: malformed more plain data on a striped channel than allowed"
            )
        }
        other => panic!("expected a protocol failure, got {other:?}"),
    }
}
