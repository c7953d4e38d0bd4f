//! Round trips from connect to the first channel data, counted the way the
//! runtime sees them: each packet is read and its events handled before the
//! next (as net/pump.rs does), and a "wait" is each time the client has sent
//! all it can and needs the server's bytes. KEX guesses right and wrong,
//! strict KEX with a guess, and the session's open pipelined behind a
//! signed request that fails.

mod common;
use common::*;
use sluice_proto::crypto::hostkey::{KeyPair, Signer};
use sluice_proto::crypto::SystemRng;
use sluice_proto::msg::ChannelRequestKind;
use sluice_proto::{
    AuthMethodRequest, ChannelId, ClientConfig, Config, Connection, Event, ServerConfig,
};
use std::sync::Arc;
use std::time::Instant;

const DATA: &[u8] = b"first bytes of the transfer";

struct Run {
    client: Connection,
    server: Connection,
    /// Client keys, offered in order, each signed at once (in memory).
    keys: Vec<Arc<KeyPair>>,
    next_key: usize,
    accepted: Vec<u8>,
    early_open: bool,
    channel: Option<ChannelId>,
    opened: bool,
    data_sent: bool,
    server_data: Vec<u8>,
    client_events: Vec<Event>,
}

fn key(seed: u8) -> Arc<KeyPair> {
    Arc::new(KeyPair::from_ed25519_seed(&[seed; 32]).unwrap())
}

impl Run {
    fn new(client: Config, server: Config, host_alg: &str) -> Run {
        let host_keys = server
            .host_key_algs
            .iter()
            .map(|a| host_key_for(a))
            .collect();
        assert!(server.host_key_algs.iter().any(|a| a == host_alg));
        let server = Connection::server(
            ServerConfig {
                common: server,
                host_keys,
                auth_methods: owned(&["publickey"]),
                max_auth_tries: 6,
                banner: None,
            },
            Box::new(SystemRng),
        );
        Run {
            client: Connection::client(ClientConfig { common: client }, Box::new(SystemRng)),
            server,
            keys: vec![key(9)],
            next_key: 0,
            accepted: key(9).public_blob(),
            early_open: true,
            channel: None,
            opened: false,
            data_sent: false,
            server_data: Vec::new(),
            client_events: Vec::new(),
        }
    }

    fn sign_next(&mut self) {
        let k = self.keys[self.next_key].clone();
        self.next_key += 1;
        self.client
            .auth_publickey_sign("alice", "ssh-ed25519", k.as_ref())
            .unwrap();
        if self.early_open && self.channel.is_none() && self.client.early_open_possible() {
            self.channel = Some(self.client.open_session_early().unwrap());
        }
    }

    fn on_client_event(&mut self, e: Event) {
        match &e {
            Event::HostKey { .. } => self.client.accept_host_key(),
            Event::AuthReady => self.sign_next(),
            Event::AuthFailure { .. } => self.sign_next(),
            Event::Authenticated { .. } if self.channel.is_none() => {
                self.channel = Some(self.client.open_session().unwrap())
            }
            Event::ChannelOpened(id) => {
                assert_eq!(Some(*id), self.channel);
                self.opened = true;
                let exec = ChannelRequestKind::Exec {
                    command: b"cat".to_vec(),
                };
                self.client.channel_request(*id, exec, false).unwrap();
            }
            _ => {}
        }
        self.client_events.push(e);
    }

    fn on_server_event(&mut self, e: Event) {
        match e {
            Event::AuthRequest {
                method: AuthMethodRequest::PublicKey { key_blob, .. },
                ..
            } if key_blob == self.accepted => self.server.auth_accept(),
            Event::AuthRequest { .. } => self.server.auth_reject(),
            Event::ChannelOpenRequest { channel, .. } => {
                self.server.accept_channel(channel).unwrap()
            }
            _ => {}
        }
    }

    /// Reads `buf` one packet at a time, handling events after each.
    fn feed(&mut self, to_server: bool, buf: &mut Vec<u8>) {
        let now = Instant::now();
        let mut start = 0;
        loop {
            let conn = if to_server {
                &mut self.server
            } else {
                &mut self.client
            };
            let r = conn.handle_input(now, &mut buf[start..]).unwrap();
            let n = r.consumed;
            if let Some(d) = r.data {
                self.server_data.extend_from_slice(d.data);
            }
            if n == 0 {
                break;
            }
            start += n;
            self.drain_events(to_server);
        }
        buf.drain(..start);
    }

    /// Runs until the server has the first channel data; returns how many
    /// times the client waited for the server (TCP's own connect not counted).
    fn waits_to_first_data(&mut self) -> usize {
        let now = Instant::now();
        let (mut c2s, mut s2c) = (Vec::new(), Vec::new());
        let mut waits = 0;
        loop {
            self.client.poll_transmit(now, &mut c2s);
            if self.opened && !self.data_sent {
                let ch = self.channel.unwrap();
                assert_eq!(
                    self.client.send_data(now, ch, None, DATA, &mut c2s),
                    DATA.len()
                );
                self.data_sent = true;
            }
            self.feed(true, &mut c2s);
            self.server.poll_transmit(now, &mut s2c);
            if !self.server_data.is_empty() {
                assert_eq!(self.server_data, DATA);
                return waits;
            }
            assert!(!s2c.is_empty(), "deadlock: {:?}", self.client_events);
            assert!(
                waits < 20,
                "no data after 20 waits: {:?}",
                self.client_events
            );
            waits += 1;
            self.feed(false, &mut s2c);
        }
    }
}

fn cfg(kex: &[&str], host: &[&str]) -> Config {
    let mut c = config(kex[0], host[0], "aes128-gcm@openssh.com", "hmac-sha2-256");
    c.kex = owned(kex);
    c.host_key_algs = owned(host);
    c
}

const ED: &[&str] = &["ssh-ed25519"];

#[test]
fn two_waits_from_connect_to_first_data() {
    // Before: KEXINIT, KEX reply, SERVICE_ACCEPT, PK_OK, SUCCESS, OPEN_CONFIRMATION.
    let kex = &["mlkem768x25519-sha256", "curve25519-sha256"];
    let mut r = Run::new(cfg(kex, ED), cfg(kex, ED), "ssh-ed25519");
    assert_eq!(r.waits_to_first_data(), 2, "{:?}", r.client_events);
}

#[test]
fn without_the_guess_one_wait_more() {
    let kex = &["curve25519-sha256"];
    let mut c = cfg(kex, ED);
    c.kex_guess = false;
    let mut r = Run::new(c, cfg(kex, ED), "ssh-ed25519");
    assert_eq!(r.waits_to_first_data(), 3);
}

#[test]
fn wrong_kex_guess_is_ignored_by_the_server() {
    let client = &["mlkem768x25519-sha256", "curve25519-sha256"];
    // The server lacks the method, or prefers another it also has.
    for server in [
        &["curve25519-sha256"][..],
        &["curve25519-sha256", "mlkem768x25519-sha256"],
    ] {
        let mut r = Run::new(cfg(client, ED), cfg(server, ED), "ssh-ed25519");
        assert_eq!(r.waits_to_first_data(), 3);
        let kex = r.client.algorithms().unwrap().kex.clone();
        let want = client.iter().find(|k| server.contains(k)).unwrap();
        assert_eq!(kex, *want);
    }
}

#[test]
fn wrong_host_key_guess_is_ignored_too() {
    let kex = &["curve25519-sha256"];
    let both = &["ecdsa-sha2-nistp256", "ssh-ed25519"];
    let mut r = Run::new(cfg(kex, ED), cfg(kex, both), "ssh-ed25519");
    assert_eq!(r.waits_to_first_data(), 3);
    assert_eq!(r.client.algorithms().unwrap().host_key, "ssh-ed25519");
}

#[test]
fn pipelined_open_survives_a_rejected_first_key() {
    let kex = &["curve25519-sha256"];
    let mut r = Run::new(cfg(kex, ED), cfg(kex, ED), "ssh-ed25519");
    r.keys = vec![key(1), key(9)];
    // One wait more for the rejected key; the open rides again behind the second.
    assert_eq!(r.waits_to_first_data(), 3, "{:?}", r.client_events);
    let failures = r
        .client_events
        .iter()
        .filter(|e| matches!(e, Event::AuthFailure { .. }))
        .count();
    assert_eq!(failures, 1);
}

#[test]
fn pipelined_open_waits_for_success_after_rejected_keys() {
    // Two keys rejected, then the early open goes out with the third.
    let kex = &["curve25519-sha256"];
    let mut r = Run::new(cfg(kex, ED), cfg(kex, ED), "ssh-ed25519");
    r.keys = vec![key(1), key(2), key(9)];
    assert_eq!(r.waits_to_first_data(), 4);
}

/// Both ends offer only `engines` (delayed ones), compression preferred.
fn compressed(engine: &str) -> (Config, Config) {
    let kex = &["curve25519-sha256"];
    let engines: Vec<_> = sluice_proto::transport::compress::after_auth_only(
        &sluice_proto::transport::compress::default_engines(),
    )
    .into_iter()
    .filter(|e| e.name() == engine)
    .collect();
    let (mut c, mut s) = (cfg(kex, ED), cfg(kex, ED));
    for x in [&mut c, &mut s] {
        x.compression_engines = engines.clone();
        x.prefer_compression = true;
    }
    (c, s)
}

#[test]
fn zstd_compression_keeps_the_early_open() {
    // The open goes in zstd@sluice.dev's before-authentication form and the
    // server, which inflates from right after the request that succeeded,
    // reads it as the stream's first packet.
    let (c, s) = compressed("zstd@sluice.dev");
    let mut r = Run::new(c, s, "ssh-ed25519");
    assert_eq!(r.waits_to_first_data(), 2, "{:?}", r.client_events);
    assert_eq!(r.client.algorithms().unwrap().comp_c2s, "zstd@sluice.dev");
    let (out, inc) = r.server.compression_stats();
    assert!(out.is_some() && inc.is_some());
}

#[test]
fn zstd_early_open_behind_a_rejected_key_goes_again() {
    // The server reads the form without a stream: message 80, answered
    // UNIMPLEMENTED; the open rides again behind the next key.
    let (c, s) = compressed("zstd@sluice.dev");
    let mut r = Run::new(c, s, "ssh-ed25519");
    r.keys = vec![key(1), key(2), key(9)];
    assert_eq!(r.waits_to_first_data(), 4, "{:?}", r.client_events);
}

#[test]
fn zlib_delayed_compression_opens_after_success() {
    // zlib@openssh.com has no such form: the open waits for success.
    let (c, s) = compressed("zlib@openssh.com");
    let mut r = Run::new(c, s, "ssh-ed25519");
    assert_eq!(r.waits_to_first_data(), 3, "{:?}", r.client_events);
}

#[test]
fn strict_kex_still_refuses_ignore_after_a_wrong_guess() {
    let mut r = Run::new(
        cfg(&["mlkem768x25519-sha256", "curve25519-sha256"], ED),
        cfg(&["curve25519-sha256"], ED),
        "ssh-ed25519",
    );
    let mut c2s = Vec::new();
    r.client.poll_transmit(Instant::now(), &mut c2s);
    // An IGNORE right after the guessed packet (which the server skips).
    c2s.extend_from_slice(&[0, 0, 0, 12, 10, 2]);
    c2s.extend_from_slice(&[0u8; 10]);
    let mut err = None;
    let mut start = 0;
    while err.is_none() {
        match r.server.handle_input(Instant::now(), &mut c2s[start..]) {
            Ok(x) if x.consumed == 0 => break,
            Ok(x) => start += x.consumed,
            Err(e) => err = Some(e),
        }
    }
    let err = err.expect("IGNORE during the initial strict exchange must be fatal");
    assert_eq!(
        err,
        sluice_proto::Error::Protocol(sluice_proto::Violation::StrictKex(
            sluice_proto::wire::MsgNum::IGNORE
        ))
    );
}

#[test]
fn a_second_unexpected_kex_packet_is_not_skipped() {
    // A wrong guess drops exactly one packet: a second ECDH_INIT for the
    // wrong method reaches the exchange and fails it.
    let mut r = Run::new(
        cfg(&["mlkem768x25519-sha256", "curve25519-sha256"], ED),
        cfg(&["curve25519-sha256"], ED),
        "ssh-ed25519",
    );
    let mut c2s = Vec::new();
    r.client.poll_transmit(Instant::now(), &mut c2s);
    let guess = sluice_proto::msg::KexEcdhInit {
        q_c: vec![7u8; 1216],
    };
    let mut p = Vec::new();
    guess.encode(&mut p);
    c2s.extend_from_slice(&plain_packet(&p));
    let mut start = 0;
    let err = loop {
        match r.server.handle_input(Instant::now(), &mut c2s[start..]) {
            Ok(x) if x.consumed == 0 => panic!("the second packet was swallowed"),
            Ok(x) => start += x.consumed,
            Err(e) => break e,
        }
    };
    assert!(r.server.is_closed(), "{err}");
}

/// A packet framed without encryption (before the first NEWKEYS).
fn plain_packet(payload: &[u8]) -> Vec<u8> {
    let mut pad = 8 - (payload.len() + 5) % 8;
    if pad < 4 {
        pad += 8;
    }
    let len = (payload.len() + pad + 1) as u32;
    let mut out = len.to_be_bytes().to_vec();
    out.push(pad as u8);
    out.extend_from_slice(payload);
    out.extend(std::iter::repeat_n(0, pad));
    out
}

#[test]
fn server_answers_early_channel_messages_with_unimplemented_within_limits() {
    let kex = &["curve25519-sha256"];
    let mut r = Run::new(cfg(kex, ED), cfg(kex, ED), "ssh-ed25519");
    r.keys = vec![key(1); 40];
    r.accepted = Vec::new();
    // Every signed request is refused; each early open gets UNIMPLEMENTED and
    // rides again; MaxAuthTries ends it well before the cap matters.
    let now = Instant::now();
    let (mut c2s, mut s2c) = (Vec::new(), Vec::new());
    for _ in 0..20 {
        r.client.poll_transmit(now, &mut c2s);
        r.feed_lenient(true, &mut c2s);
        r.server.poll_transmit(now, &mut s2c);
        if r.server.is_closed() {
            break;
        }
        r.feed_lenient(false, &mut s2c);
    }
    assert!(r.server.is_closed());
    let failures = r
        .client_events
        .iter()
        .filter(|e| matches!(e, Event::AuthFailure { .. }))
        .count();
    assert_eq!(failures, 5);
}

impl Run {
    /// Like `feed`, stopping quietly at an error (the test looks at the end state).
    fn feed_lenient(&mut self, to_server: bool, buf: &mut Vec<u8>) {
        self.feed_checked(to_server, buf);
        buf.clear();
    }

    /// Hands the events of the end that just read input to its handler.
    fn drain_events(&mut self, to_server: bool) {
        loop {
            let ev = if to_server {
                self.server.poll_event()
            } else {
                self.client.poll_event()
            };
            match ev {
                Some(e) if to_server => self.on_server_event(e),
                Some(e) => self.on_client_event(e),
                None => break,
            }
        }
    }

    fn feed_checked(&mut self, to_server: bool, buf: &mut [u8]) {
        let now = Instant::now();
        let mut start = 0;
        loop {
            let conn = if to_server {
                &mut self.server
            } else {
                &mut self.client
            };
            let Ok(r) = conn.handle_input(now, &mut buf[start..]) else {
                return;
            };
            if r.consumed == 0 {
                return;
            }
            start += r.consumed;
            self.drain_events(to_server);
        }
    }
}
