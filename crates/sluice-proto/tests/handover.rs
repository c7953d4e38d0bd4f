//! Privilege-separation handover: a server engine authenticates the client,
//! stops at the handover point, exports its transport state; the state goes
//! through its byte encoding into a fresh server engine, which continues the
//! same connection (pipelined open, bulk data both ways, re-keys started by
//! either side) without the client noticing.

mod common;

use common::{config, host_key_for, owned, pattern};
use sluice_proto::crypto::hostkey::{KeyPair, Signer};
use sluice_proto::crypto::SystemRng;
use sluice_proto::handover::TransportState;
use sluice_proto::msg::ChannelRequestKind;
use sluice_proto::{
    AuthMethodRequest, ChannelId, ClientConfig, Config, Connection, Event, ServerConfig,
};
use std::time::{Duration, Instant};

const USER: &str = "alice";

fn server_config(common: Config, host_alg: &str) -> ServerConfig {
    ServerConfig {
        common,
        host_keys: vec![host_key_for(host_alg)],
        auth_methods: owned(&["publickey"]),
        max_auth_tries: 6,
        banner: None,
    }
}

/// A client and a handing-over server joined by in-memory pipes, with the
/// runtime's decisions scripted; the server can be swapped mid-connection.
struct Run {
    client: Connection,
    server: Connection,
    server_config: ServerConfig,
    c2s: Vec<u8>,
    s2c: Vec<u8>,
    chunk: usize,
    now: Instant,
    user_key: KeyPair,
    /// The client opens its session behind the signed request, if it can.
    early_open: bool,
    client_channel: Option<ChannelId>,
    server_channel: Option<ChannelId>,
    client_events: Vec<Event>,
    server_events: Vec<Event>,
    client_data: Vec<u8>,
    server_data: Vec<u8>,
}

impl Run {
    fn new(cipher: &str, mac: &str, compression: &[&str]) -> Run {
        let host_alg = "ssh-ed25519";
        let common = || Config {
            compression: owned(compression),
            ..config("curve25519-sha256", host_alg, cipher, mac)
        };
        let server_config = server_config(common(), host_alg);
        let mut server = Connection::server(server_config.clone(), Box::new(SystemRng));
        server.enable_handover().unwrap();
        Run {
            client: Connection::client(ClientConfig { common: common() }, Box::new(SystemRng)),
            server,
            server_config,
            c2s: Vec::new(),
            s2c: Vec::new(),
            chunk: usize::MAX,
            now: Instant::now(),
            user_key: KeyPair::from_ed25519_seed(&[9u8; 32]).unwrap(),
            early_open: true,
            client_channel: None,
            server_channel: None,
            client_events: Vec::new(),
            server_events: Vec::new(),
            client_data: Vec::new(),
            server_data: Vec::new(),
        }
    }

    /// Feeds `buf` in chunks until the engine takes no more; returns
    /// whether it took anything. What it leaves stays in `buf`, raw.
    fn feed(conn: &mut Connection, buf: &mut Vec<u8>, chunk: usize, now: Instant) -> Vec<u8> {
        let mut data = Vec::new();
        let mut start = 0;
        let mut avail = chunk.min(buf.len());
        while start < buf.len() {
            let end = start + avail;
            let r = conn.handle_input(now, &mut buf[start..end]).unwrap();
            let n = r.consumed;
            if let Some(d) = r.data {
                data.extend_from_slice(d.data);
                let (ch, len) = (d.channel, d.data.len());
                conn.consumed(ch, len);
            }
            if n == 0 {
                if end < buf.len() {
                    // A packet longer than the chunk: offer more.
                    avail = (avail + chunk).min(buf.len() - start);
                    continue;
                }
                break;
            }
            start += n;
            avail = chunk.min(buf.len() - start);
        }
        buf.drain(..start);
        data
    }

    fn step(&mut self) -> bool {
        let (c0, s0) = (self.c2s.len(), self.s2c.len());
        self.client.poll_transmit(self.now, &mut self.c2s);
        self.server.poll_transmit(self.now, &mut self.s2c);
        let before = (self.c2s.len(), self.s2c.len());
        let mut moved = before != (c0, s0);
        let d = Run::feed(&mut self.server, &mut self.c2s, self.chunk, self.now);
        self.server_data.extend_from_slice(&d);
        let d = Run::feed(&mut self.client, &mut self.s2c, self.chunk, self.now);
        self.client_data.extend_from_slice(&d);
        moved |= (self.c2s.len(), self.s2c.len()) != before;
        while let Some(e) = self.client.poll_event() {
            moved = true;
            self.on_client_event(e.clone());
            self.client_events.push(e);
        }
        while let Some(e) = self.server.poll_event() {
            moved = true;
            self.on_server_event(e.clone());
            self.server_events.push(e);
        }
        moved
    }

    fn drive(&mut self) {
        for _ in 0..10_000 {
            if !self.step() {
                return;
            }
        }
        panic!("no quiescence after 10000 rounds");
    }

    fn on_client_event(&mut self, e: Event) {
        match e {
            Event::HostKey { .. } => self.client.accept_host_key(),
            Event::AuthReady => {
                self.client
                    .auth_publickey_sign(USER, "ssh-ed25519", &self.user_key)
                    .unwrap();
                if self.early_open && self.client.early_open_possible() {
                    self.client_channel = Some(self.client.open_session_early().unwrap());
                }
            }
            Event::Authenticated { .. } if self.client_channel.is_none() => {
                self.client_channel = Some(self.client.open_session().unwrap());
            }
            Event::ChannelOpened(id) => self
                .client
                .channel_request(
                    id,
                    ChannelRequestKind::Exec {
                        command: b"cat".to_vec(),
                    },
                    true,
                )
                .unwrap(),
            _ => {}
        }
    }

    fn on_server_event(&mut self, e: Event) {
        match e {
            Event::AuthRequest {
                method:
                    AuthMethodRequest::PublicKey {
                        key_blob,
                        signed: true,
                        ..
                    },
                ..
            } if key_blob == self.user_key.public_blob() => self.server.auth_accept(),
            Event::AuthRequest { .. } => self.server.auth_reject(),
            Event::ChannelOpenRequest { channel, .. } => {
                self.server.accept_channel(channel).unwrap();
                self.server_channel = Some(channel);
            }
            Event::ChannelRequest {
                channel,
                want_reply: true,
                ..
            } => self.server.channel_reply(channel, true).unwrap(),
            _ => {}
        }
    }

    /// The runtime's part at the handover point: export, encode, and in
    /// the "new process" decode and import; the unconsumed input (`c2s`)
    /// stays as it is and is fed to the new engine.
    fn hand_over(&mut self) -> TransportState {
        assert!(self.server.handover_ready(), "not at the handover point");
        let state = self.server.export_transport(self.now).unwrap();
        assert!(self.server.is_closed(), "the exporter is spent");
        let bytes = state.encode();
        let decoded = TransportState::decode(&bytes).unwrap();
        assert_eq!(decoded, state);
        assert_eq!(decoded.user(), Some(USER));
        assert_eq!(Some(decoded.session_id()), self.client.session_id());
        self.server = Connection::import_server(
            self.server_config.clone(),
            Box::new(SystemRng),
            decoded,
            USER,
            self.now,
        )
        .unwrap();
        state
    }

    fn upload(&mut self, data: &[u8]) {
        let ch = self.client_channel.unwrap();
        let mut sent = 0;
        for _ in 0..100_000 {
            if sent == data.len() {
                break;
            }
            sent += self
                .client
                .send_data(ch, None, &data[sent..], &mut self.c2s);
            self.step();
        }
        assert_eq!(sent, data.len(), "upload stalled");
        self.drive();
    }

    fn download(&mut self, data: &[u8]) {
        let ch = self.server_channel.unwrap();
        let mut sent = 0;
        for _ in 0..100_000 {
            if sent == data.len() {
                break;
            }
            sent += self
                .server
                .send_data(ch, None, &data[sent..], &mut self.s2c);
            self.step();
        }
        assert_eq!(sent, data.len(), "download stalled");
        self.drive();
    }

    fn kex_done(events: &[Event]) -> usize {
        events
            .iter()
            .filter(|e| matches!(e, Event::KexDone { initial: false, .. }))
            .count()
    }

    /// Data both ways, checked byte for byte.
    fn exchange(&mut self, size: usize, seed: u8) {
        let up = pattern(size, seed);
        let down = pattern(size, seed.wrapping_add(1));
        let (s0, c0) = (self.server_data.len(), self.client_data.len());
        self.upload(&up);
        self.download(&down);
        assert!(self.server_data[s0..] == up[..], "upload corrupted");
        assert!(self.client_data[c0..] == down[..], "download corrupted");
    }
}

/// The whole scenario for one cipher suite: handshake and auth, handover,
/// the session, data, a client and a server re-key, more data.
fn scenario(cipher: &str, mac: &str, compression: &[&str], chunk: usize) -> Run {
    let mut run = Run::new(cipher, mac, compression);
    run.chunk = chunk;
    run.drive();
    // The server stopped right after success; the client may have
    // pipelined its open, which waits raw in the pipe.
    assert!(run.server.authenticated_user() == Some(USER));
    assert!(run.server_channel.is_none());
    let state = run.hand_over();
    // The client's CHANNEL_OPEN waits raw in the pipe: pipelined behind its
    // request, or (zlib@openssh.com forbids that) sent, compressed, on
    // reading success while the runtime held the input.
    assert!(!run.c2s.is_empty(), "the open is left for the new engine");
    assert_eq!(state.algorithms().cipher_c2s, cipher);
    run.drive();
    assert!(run.server_channel.is_some(), "no session after the handover");
    assert!(run
        .client_events
        .iter()
        .any(|e| matches!(e, Event::ChannelReply { success: true, .. })));
    run.exchange(3 << 20, 1);

    let sid = run.client.session_id().unwrap().to_vec();
    run.client.rekey();
    run.drive();
    assert_eq!(Run::kex_done(&run.client_events), 1);
    assert_eq!(Run::kex_done(&run.server_events), 1);
    run.exchange(1 << 20, 3);

    run.server.rekey();
    run.drive();
    assert_eq!(Run::kex_done(&run.client_events), 2);
    assert_eq!(Run::kex_done(&run.server_events), 2);
    assert_eq!(run.client.session_id(), Some(&sid[..]));
    assert_eq!(run.server.session_id(), Some(&sid[..]));
    run.exchange(2 << 20, 5);
    assert!(!run.client.is_closed() && !run.server.is_closed());
    run
}

#[test]
fn aes128_gcm_survives_the_handover() {
    scenario("aes128-gcm@openssh.com", "hmac-sha2-256", &["none"], usize::MAX);
}

#[test]
fn chacha20_poly1305_survives_the_handover() {
    scenario(
        "chacha20-poly1305@openssh.com",
        "hmac-sha2-256",
        &["none"],
        usize::MAX,
    );
}

#[test]
fn aes128_ctr_with_etm_survives_the_handover() {
    scenario(
        "aes128-ctr",
        "hmac-sha2-256-etm@openssh.com",
        &["none"],
        usize::MAX,
    );
}

#[test]
fn delayed_compression_starts_fresh_in_the_new_engine() {
    let run = scenario(
        "aes128-gcm@openssh.com",
        "hmac-sha2-256",
        &["zlib@openssh.com"],
        usize::MAX,
    );
    // The test data is random, so only that the streams ran is checked.
    let (out, inc) = run.server.compression_stats();
    assert!(out.is_some_and(|(raw, z)| raw > 3 << 20 && z > 0), "{out:?}");
    assert!(inc.is_some_and(|(raw, z)| raw > 3 << 20 && z > 0), "{inc:?}");
}

#[test]
fn byte_by_byte_input_stops_at_the_same_point() {
    // One-byte reads leave a partial packet in the pipe at the handover.
    let mut run = Run::new("aes128-ctr", "hmac-sha2-256", &["none"]);
    run.chunk = 1;
    run.drive();
    run.hand_over();
    run.drive();
    run.chunk = 4096;
    run.exchange(256 << 10, 7);
}

#[test]
fn handle_input_stops_while_the_decision_is_pending() {
    let mut run = Run::new("aes128-gcm@openssh.com", "", &["none"]);
    // Drive by hand until the server reports the auth request, leaving
    // the decision open.
    for _ in 0..100 {
        run.client.poll_transmit(run.now, &mut run.c2s);
        run.server.poll_transmit(run.now, &mut run.s2c);
        Run::feed(&mut run.server, &mut run.c2s, usize::MAX, run.now);
        Run::feed(&mut run.client, &mut run.s2c, usize::MAX, run.now);
        while let Some(e) = run.client.poll_event() {
            run.on_client_event(e);
        }
        if let Some(e) = run.server.poll_event() {
            if matches!(e, Event::AuthRequest { .. }) {
                break;
            }
        }
    }
    assert!(run.client_channel.is_some(), "the client pipelined its open");
    let left = run.c2s.len();
    assert!(left > 0);
    let r = run.server.handle_input(run.now, &mut run.c2s).unwrap();
    assert_eq!((r.consumed, r.data.is_none()), (0, true));
    assert!(!run.server.handover_ready());
    run.server.auth_accept();
    // Queued success not yet written out: not ready, input still held.
    assert!(!run.server.handover_ready());
    let r = run.server.handle_input(run.now, &mut run.c2s).unwrap();
    assert_eq!(r.consumed, 0);
    run.server.poll_transmit(run.now, &mut run.s2c);
    assert!(run.server.handover_ready());
    assert_eq!(run.c2s.len(), left);
}

#[test]
fn immediate_zlib_is_refused_with_a_reason() {
    let mut run = Run::new("aes128-gcm@openssh.com", "", &["zlib"]);
    run.drive();
    assert!(run.server.handover_ready());
    let e = run.server.export_transport(run.now).unwrap_err();
    assert!(format!("{e:?}").contains("zlib"), "{e:?}");
    assert!(!run.server.is_closed());
}

#[test]
fn export_before_the_handover_point_is_refused() {
    let mut run = Run::new("aes128-gcm@openssh.com", "", &["none"]);
    assert!(run.server.export_transport(run.now).is_err());
    let mut client = Connection::client(ClientConfig::default(), Box::new(SystemRng));
    assert!(client.enable_handover().is_err());
    assert!(!client.handover_ready());
}

/// A state from a real connection, and its encoding.
fn sample() -> (Run, TransportState, Vec<u8>) {
    let mut run = Run::new("aes128-ctr", "hmac-sha2-256-etm@openssh.com", &["none"]);
    run.drive();
    run.now += Duration::from_secs(3);
    let state = run.server.export_transport(run.now).unwrap();
    let bytes = state.encode().to_vec();
    (run, state, bytes)
}

#[test]
fn import_checks_the_user_the_monitor_vouches_for() {
    let (run, state, _) = sample();
    let c = Connection::import_server(
        run.server_config.clone(),
        Box::new(SystemRng),
        state.clone(),
        "mallory",
        run.now,
    );
    assert!(c.is_err());
    let c = Connection::import_server(
        run.server_config.clone(),
        Box::new(SystemRng),
        state,
        USER,
        run.now,
    )
    .unwrap();
    assert_eq!(c.authenticated_user(), Some(USER));
}

#[test]
fn truncated_extended_and_oversized_encodings_are_refused() {
    let (_, state, bytes) = sample();
    for n in 0..bytes.len() {
        assert!(TransportState::decode(&bytes[..n]).is_err(), "prefix {n}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(TransportState::decode(&longer).is_err());
    assert!(TransportState::decode(&vec![0u8; 1 << 20]).is_err());
    assert!(TransportState::decode(&[0xff; 64]).is_err());
    assert_eq!(TransportState::decode(&bytes).unwrap(), state);
}

#[test]
fn garbled_encodings_are_refused_or_canonical() {
    let (_, _, bytes) = sample();
    // Every single-bit flip: an error, or (in key bytes, counters, free
    // text) a state that encodes back to exactly the garbled bytes.
    let mut accepted = 0;
    for i in 0..bytes.len() * 8 {
        let mut b = bytes.clone();
        b[i / 8] ^= 1 << (i % 8);
        if let Ok(s) = TransportState::decode(&b) {
            assert_eq!(&s.encode()[..], &b[..], "bit {i}");
            accepted += 1;
        }
    }
    assert!(accepted > 0 && accepted < bytes.len() * 8);
    // Every byte set to each of a few values, and lengths blown up.
    for i in 0..bytes.len() {
        for v in [0x00, 0x01, 0x7f, 0x80, 0xff] {
            let mut b = bytes.clone();
            b[i] = v;
            if let Ok(s) = TransportState::decode(&b) {
                assert_eq!(&s.encode()[..], &b[..], "byte {i} = {v}");
            }
        }
    }
}

#[test]
fn rekey_time_runs_on_across_the_handover() {
    let (mut run, state, _) = sample();
    // Exported 3 s after the exchange; imported at `later`.
    let later = run.now + Duration::from_secs(60);
    run.server_config.common.rekey_time = Some(Duration::from_secs(10));
    let c = Connection::import_server(
        run.server_config.clone(),
        Box::new(SystemRng),
        state,
        USER,
        later,
    )
    .unwrap();
    assert_eq!(c.poll_timeout(), Some(later + Duration::from_secs(7)));
}
