//! Two endpoints of sluice-proto driven against each other in memory, as
//! quinn-proto's tests do: every algorithm combination, re-keys in the
//! middle of transfers, window exhaustion, strict-KEX violations, and the
//! byte stream split at arbitrary points.

use aws_lc_rs::encoding::AsBigEndian;
use sluice_proto::crypto::hostkey::{KeyPair, Signer};
use sluice_proto::crypto::{cipher, hostkey, kex, SystemRng};
use sluice_proto::msg::ChannelRequestKind;
use sluice_proto::{
    AuthMethodRequest, ChannelId, ClientConfig, Config, Connection, Event, ServerConfig,
};
use std::sync::Arc;
use std::time::Instant;

/// A client and a server joined by two in-memory byte pipes.
struct Pair {
    client: Connection,
    server: Connection,
    c2s: Vec<u8>,
    s2c: Vec<u8>,
    /// Largest number of bytes handed over per input call (splits the stream).
    chunk: usize,
    user_key: Arc<KeyPair>,
    /// The one key the server accepts.
    accepted: Vec<u8>,
    auth_attempts: u32,
    client_events: Vec<Event>,
    server_events: Vec<Event>,
    /// Data received by the server per channel, and by the client.
    server_data: Vec<u8>,
    client_data: Vec<u8>,
    /// Report received data as consumed (false simulates a stalled consumer).
    consume: bool,
    client_channel: Option<ChannelId>,
    server_channel: Option<ChannelId>,
    now: Instant,
}

fn owned(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn config(kex: &str, host_alg: &str, cipher: &str, mac: &str) -> Config {
    Config {
        kex: owned(&[kex]),
        host_key_algs: owned(&[host_alg]),
        ciphers: owned(&[cipher]),
        macs: owned(&[mac]),
        ..Config::default()
    }
}

fn host_key_for(alg: &str) -> Arc<dyn Signer> {
    Arc::new(test_key(alg))
}

/// Fixed test keys, generated once per type.
fn test_key(alg: &str) -> KeyPair {
    match alg {
        "ssh-ed25519" => KeyPair::from_ed25519_seed(&[7u8; 32]).unwrap(),
        a if a.starts_with("ecdsa-sha2-") => {
            let curve = a.trim_start_matches("ecdsa-sha2-");
            let (scalar, point) = ecdsa_test_key(curve);
            KeyPair::from_ecdsa(curve, &scalar, &point).unwrap()
        }
        _ => rsa_test_key(),
    }
}

fn ecdsa_test_key(curve: &str) -> (Vec<u8>, Vec<u8>) {
    use aws_lc_rs::signature::{
        EcdsaKeyPair, KeyPair as _, ECDSA_P256_SHA256_FIXED_SIGNING,
        ECDSA_P384_SHA384_FIXED_SIGNING, ECDSA_P521_SHA512_FIXED_SIGNING,
    };
    let alg = match curve {
        "nistp256" => &ECDSA_P256_SHA256_FIXED_SIGNING,
        "nistp384" => &ECDSA_P384_SHA384_FIXED_SIGNING,
        _ => &ECDSA_P521_SHA512_FIXED_SIGNING,
    };
    let kp = EcdsaKeyPair::generate(alg).unwrap();
    let scalar = kp.private_key().as_be_bytes().unwrap().as_ref().to_vec();
    (scalar, kp.public_key().as_ref().to_vec())
}

fn rsa_test_key() -> KeyPair {
    // A 2048-bit key made once by Python `cryptography`, components in hex.
    let f = |s: &str| {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect::<Vec<u8>>()
    };
    let c = include_str!("rsa2048.hex");
    let parts: Vec<Vec<u8>> = c.lines().map(f).collect();
    KeyPair::from_rsa(
        &parts[0], &parts[1], &parts[2], &parts[3], &parts[4], &parts[5],
    )
    .unwrap()
}

impl Pair {
    fn new(kex: &str, host_alg: &str, cipher: &str, mac: &str) -> Pair {
        let client = Connection::client(
            ClientConfig {
                common: config(kex, host_alg, cipher, mac),
            },
            Box::new(SystemRng),
        );
        let server = Connection::server(
            ServerConfig {
                common: config(kex, host_alg, cipher, mac),
                host_keys: vec![host_key_for(host_alg)],
                auth_methods: owned(&["publickey"]),
                max_auth_tries: 6,
                banner: None,
            },
            Box::new(SystemRng),
        );
        Pair {
            client,
            server,
            c2s: Vec::new(),
            s2c: Vec::new(),
            chunk: usize::MAX,
            user_key: Arc::new(KeyPair::from_ed25519_seed(&[9u8; 32]).unwrap()),
            accepted: KeyPair::from_ed25519_seed(&[9u8; 32])
                .unwrap()
                .public_blob(),
            auth_attempts: 0,
            client_events: Vec::new(),
            server_events: Vec::new(),
            server_data: Vec::new(),
            client_data: Vec::new(),
            consume: true,
            client_channel: None,
            server_channel: None,
            now: Instant::now(),
        }
    }

    fn default_algs() -> Pair {
        Pair::new(
            "curve25519-sha256",
            "ssh-ed25519",
            "aes128-gcm@openssh.com",
            "hmac-sha2-256",
        )
    }

    /// Feeds `buf` to `conn` in chunks; returns data received and leftover.
    fn feed(
        conn: &mut Connection,
        buf: &mut Vec<u8>,
        chunk: usize,
        now: Instant,
        data: &mut Vec<u8>,
        consume: bool,
    ) -> Result<(), sluice_proto::Error> {
        let mut avail = buf.len().min(chunk);
        let mut start = 0;
        loop {
            let end = start + avail;
            let mut consumed_ch = None;
            let r = conn.handle_input(now, &mut buf[start..end])?;
            let n = r.consumed;
            if let Some(d) = r.data {
                data.extend_from_slice(d.data);
                consumed_ch = Some((d.channel, d.data.len()));
            }
            if let (Some((ch, len)), true) = (consumed_ch, consume) {
                conn.consumed(ch, len);
            }
            if n == 0 {
                if end < buf.len() && avail < chunk.min(buf.len() - start) {
                    avail = chunk.min(buf.len() - start);
                    continue;
                }
                if end < buf.len() && avail < buf.len() - start {
                    // Need more than one chunk to make progress: widen.
                    avail = (avail + chunk).min(buf.len() - start);
                    continue;
                }
                break;
            }
            start += n;
            avail = chunk.min(buf.len() - start);
            if start >= buf.len() {
                break;
            }
        }
        buf.drain(..start);
        Ok(())
    }

    /// One round: transmit both ways, feed both, react to events.
    fn step(&mut self) -> Result<bool, sluice_proto::Error> {
        let (c0, s0) = (self.c2s.len(), self.s2c.len());
        self.client.poll_transmit(self.now, &mut self.c2s);
        self.server.poll_transmit(self.now, &mut self.s2c);
        let progressed = self.c2s.len() != c0 || self.s2c.len() != s0;
        Pair::feed(
            &mut self.server,
            &mut self.c2s,
            self.chunk,
            self.now,
            &mut self.server_data,
            self.consume,
        )?;
        Pair::feed(
            &mut self.client,
            &mut self.s2c,
            self.chunk,
            self.now,
            &mut self.client_data,
            self.consume,
        )?;
        let mut any = false;
        while let Some(e) = self.client.poll_event() {
            any = true;
            self.on_client_event(e.clone());
            self.client_events.push(e);
        }
        while let Some(e) = self.server.poll_event() {
            any = true;
            self.on_server_event(e.clone());
            self.server_events.push(e);
        }
        Ok(progressed || any)
    }

    /// Steps until nothing moves, with a livelock guard.
    fn drive(&mut self) -> Result<(), sluice_proto::Error> {
        for _ in 0..10_000 {
            if !self.step()? {
                return Ok(());
            }
        }
        panic!("no quiescence after 10000 rounds");
    }

    fn on_client_event(&mut self, e: Event) {
        match e {
            Event::HostKey { .. } => self.client.accept_host_key(),
            Event::AuthReady => {
                self.auth_attempts += 1;
                self.client
                    .auth_publickey_sign("alice", "ssh-ed25519", self.user_key.as_ref())
                    .unwrap();
            }
            Event::AuthFailure { .. } if self.auth_attempts < 20 && !self.client.is_closed() => {
                self.auth_attempts += 1;
                self.client
                    .auth_publickey_sign("alice", "ssh-ed25519", self.user_key.as_ref())
                    .unwrap();
            }
            Event::Authenticated { .. } => {
                self.client_channel = Some(self.client.open_session().unwrap())
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
            } => {
                if key_blob == self.accepted {
                    self.server.auth_accept()
                } else {
                    self.server.auth_reject()
                }
            }
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

    /// Connects, authenticates and opens an exec channel.
    fn establish(&mut self) {
        self.drive().unwrap();
        assert!(
            self.client_channel.is_some() && self.server_channel.is_some(),
            "session not established: {:?}",
            self.client_events
        );
        assert!(self
            .client_events
            .iter()
            .any(|e| matches!(e, Event::ChannelReply { success: true, .. })));
    }

    /// Sends `data` client->server through the channel, driving as needed.
    fn upload(&mut self, data: &[u8]) {
        let ch = self.client_channel.unwrap();
        let mut sent = 0;
        let mut rounds = 0;
        while sent < data.len() {
            sent += self
                .client
                .send_data(ch, None, &data[sent..], &mut self.c2s);
            self.step().unwrap();
            rounds += 1;
            assert!(rounds < 100_000, "upload stalled at {sent}");
        }
        self.drive().unwrap();
    }

    fn download(&mut self, data: &[u8]) {
        let ch = self.server_channel.unwrap();
        let mut sent = 0;
        let mut rounds = 0;
        while sent < data.len() {
            sent += self
                .server
                .send_data(ch, None, &data[sent..], &mut self.s2c);
            self.step().unwrap();
            rounds += 1;
            assert!(rounds < 100_000, "download stalled at {sent}");
        }
        self.drive().unwrap();
    }
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    let mut x = 0x9e3779b97f4a7c15u64 ^ u64::from(seed);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn every_algorithm_combination_connects_and_moves_data() {
    let mut n = 0;
    for k in kex::DEFAULT_KEX {
        for h in hostkey::DEFAULT_SIG_ALGS {
            for c in cipher::DEFAULT_CIPHERS {
                let aead = cipher::cipher_info(c).unwrap().aead;
                let macs: &[&str] = if aead {
                    &["hmac-sha2-256"]
                } else {
                    cipher::DEFAULT_MACS
                };
                for m in macs {
                    let mut p = Pair::new(k, h, c, m);
                    p.establish();
                    let up = pattern(70_000, 1);
                    p.upload(&up);
                    assert_eq!(p.server_data, up, "{k} {h} {c} {m}");
                    let down = pattern(50_000, 2);
                    p.download(&down);
                    assert_eq!(p.client_data, down, "{k} {h} {c} {m}");
                    n += 1;
                }
            }
        }
    }
    assert!(n >= 6 * 6 * 4);
}

#[test]
fn stream_split_at_every_offset() {
    // 1-byte chunks exercise every split point of the handshake and packets.
    for chunk in [1usize, 2, 3, 7, 16, 17, 4095] {
        let mut p = Pair::new(
            "curve25519-sha256",
            "ssh-ed25519",
            "aes128-ctr",
            "hmac-sha2-256",
        );
        p.chunk = chunk;
        p.establish();
        let up = pattern(20_000, 3);
        p.upload(&up);
        assert_eq!(p.server_data, up, "chunk {chunk}");
    }
}

#[test]
fn rekey_in_the_middle_of_transfers_from_either_side() {
    for cipher in cipher::DEFAULT_CIPHERS {
        for server_starts in [false, true] {
            let mut p = Pair::new(
                "curve25519-sha256",
                "ssh-ed25519",
                cipher,
                "hmac-sha2-256-etm@openssh.com",
            );
            p.establish();
            let data = pattern(3 << 20, 4);
            let ch = p.client_channel.unwrap();
            let mut sent = 0;
            let mut rekeyed = false;
            while sent < data.len() {
                sent += p.client.send_data(ch, None, &data[sent..], &mut p.c2s);
                if !rekeyed && sent > data.len() / 2 {
                    if server_starts {
                        p.server.rekey()
                    } else {
                        p.client.rekey()
                    }
                    rekeyed = true;
                }
                p.step().unwrap();
            }
            p.drive().unwrap();
            assert_eq!(p.server_data, data);
            let rekeys = p
                .client_events
                .iter()
                .filter(|e| matches!(e, Event::KexDone { initial: false, .. }))
                .count();
            assert_eq!(rekeys, 1, "{cipher} server_starts={server_starts}");
        }
    }
}

#[test]
fn rekey_by_byte_limit() {
    let mut p = Pair::default_algs();
    p.client = Connection::client(
        ClientConfig {
            common: Config {
                rekey_bytes: 256 * 1024,
                ..config(
                    "curve25519-sha256",
                    "ssh-ed25519",
                    "aes128-gcm@openssh.com",
                    "hmac-sha2-256",
                )
            },
        },
        Box::new(SystemRng),
    );
    p.establish();
    let data = pattern(4 << 20, 5);
    p.upload(&data);
    assert_eq!(p.server_data, data);
    let rekeys = p
        .server_events
        .iter()
        .filter(|e| matches!(e, Event::KexDone { initial: false, .. }))
        .count();
    // Each ~255 KiB packet counts whole, so a re-key follows every second packet.
    assert!(rekeys >= 7, "only {rekeys} rekeys");
}

#[test]
fn window_exhaustion_and_refill() {
    let mut p = Pair::default_algs();
    p.establish();
    p.consume = false;
    let window = Config::default().window as usize;
    let ch = p.client_channel.unwrap();
    let data = pattern(window + 100_000, 6);
    let mut sent = 0;
    for _ in 0..1000 {
        sent += p.client.send_data(ch, None, &data[sent..], &mut p.c2s);
        p.step().unwrap();
    }
    assert_eq!(sent, window, "sender must stop exactly at the window");
    assert_eq!(p.client.send_capacity(ch), 0);
    // The consumer catches up: the window is granted back and the rest flows.
    let sch = p.server_channel.unwrap();
    p.server.consumed(sch, window);
    p.consume = true;
    p.drive().unwrap();
    assert!(p.client.send_capacity(ch) > 0);
    while sent < data.len() {
        sent += p.client.send_data(ch, None, &data[sent..], &mut p.c2s);
        p.step().unwrap();
    }
    p.drive().unwrap();
    assert_eq!(p.server_data, data);
}

#[test]
fn window_overrun_by_peer_is_a_protocol_error() {
    let mut p = Pair::default_algs();
    p.establish();
    p.consume = false;
    let ch = p.client_channel.unwrap();
    let window = Config::default().window as usize;
    let data = pattern(window + 1, 7);
    let mut sent = 0;
    while sent < window {
        sent += p
            .client
            .send_data(ch, None, &data[sent..window], &mut p.c2s);
        p.step().unwrap();
    }
    // Make the client misbehave: one byte past the advertised window.
    p.client.force_send_window(ch, 1);
    assert_eq!(p.client.send_data(ch, None, &data[window..], &mut p.c2s), 1);
    let mut sink = Vec::new();
    let err = Pair::feed(
        &mut p.server,
        &mut p.c2s,
        usize::MAX,
        p.now,
        &mut sink,
        false,
    )
    .unwrap_err();
    assert!(err.to_string().contains("ignored channel window"), "{err}");
    assert!(p.server.is_closed());
}

#[test]
fn data_for_a_channel_that_does_not_exist_is_refused() {
    let mut p = Pair::default_algs();
    p.establish();
    let ch = p.client_channel.unwrap();
    p.client.force_remote_channel(ch, 77);
    p.client.send_data(ch, None, b"stray", &mut p.c2s);
    let mut sink = Vec::new();
    let err = Pair::feed(
        &mut p.server,
        &mut p.c2s,
        usize::MAX,
        p.now,
        &mut sink,
        true,
    )
    .unwrap_err();
    assert!(err.to_string().contains("unknown channel 77"), "{err}");
}

#[test]
fn strict_kex_rejects_ignore_during_initial_exchange() {
    let mut p = Pair::default_algs();
    // Deliver the client's banner and KEXINIT, then inject an IGNORE packet
    // (plaintext framing, as before NEWKEYS) right after KEXINIT.
    p.client.poll_transmit(p.now, &mut p.c2s);
    let mut ignore = vec![0, 0, 0, 12, 10, 2];
    ignore.extend_from_slice(&[0u8; 10]);
    p.c2s.extend_from_slice(&ignore);
    let mut sink = Vec::new();
    let r = Pair::feed(
        &mut p.server,
        &mut p.c2s,
        usize::MAX,
        p.now,
        &mut sink,
        true,
    );
    let err = r.unwrap_err();
    assert!(err.to_string().contains("strict KEX"), "{err}");
    // A DISCONNECT is queued for the peer.
    let mut out = Vec::new();
    p.server.poll_transmit(p.now, &mut out);
    assert!(!out.is_empty());
}

#[test]
fn tampered_packet_fails_mac_and_closes() {
    let mut p = Pair::default_algs();
    p.establish();
    let ch = p.client_channel.unwrap();
    p.client.send_data(ch, None, b"hello", &mut p.c2s);
    let last = p.c2s.len() - 1;
    p.c2s[last] ^= 1;
    let mut sink = Vec::new();
    let err = Pair::feed(
        &mut p.server,
        &mut p.c2s,
        usize::MAX,
        p.now,
        &mut sink,
        true,
    )
    .unwrap_err();
    assert!(err.to_string().contains("authentication code"), "{err}");
    assert!(p.server.is_closed());
}

#[test]
fn wrong_user_key_is_refused_and_too_many_failures_disconnect() {
    let mut p = Pair::default_algs();
    p.user_key = Arc::new(KeyPair::from_ed25519_seed(&[1u8; 32]).unwrap());
    assert!(p.drive().is_err());
    assert!(p.server.is_closed());
    // The server's DISCONNECT reaches the client with the reason.
    let mut out = Vec::new();
    p.server.poll_transmit(p.now, &mut out);
    p.s2c.extend_from_slice(&out);
    let mut sink = Vec::new();
    let err = Pair::feed(
        &mut p.client,
        &mut p.s2c,
        usize::MAX,
        p.now,
        &mut sink,
        true,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("too many authentication failures"),
        "{err}"
    );
    let failures = p
        .client_events
        .iter()
        .filter(|e| matches!(e, Event::AuthFailure { .. }))
        .count();
    assert_eq!(
        failures, 5,
        "MaxAuthTries 6: five failures, then disconnect"
    );
    assert!(!p
        .client_events
        .iter()
        .any(|e| matches!(e, Event::Authenticated { .. })));
}

#[test]
fn compression_both_ways_with_delayed_start() {
    let mut p = Pair::default_algs();
    let mk = || Config {
        compression: owned(&["zlib@openssh.com", "none"]),
        ..config(
            "curve25519-sha256",
            "ssh-ed25519",
            "aes256-gcm@openssh.com",
            "hmac-sha2-256",
        )
    };
    p.client = Connection::client(ClientConfig { common: mk() }, Box::new(SystemRng));
    p.server = Connection::server(
        ServerConfig {
            common: mk(),
            host_keys: vec![host_key_for("ssh-ed25519")],
            auth_methods: owned(&["publickey"]),
            max_auth_tries: 6,
            banner: None,
        },
        Box::new(SystemRng),
    );
    p.establish();
    let text: Vec<u8> = b"the quick brown fox jumps over the lazy dog\n"
        .iter()
        .cycle()
        .take(2 << 20)
        .copied()
        .collect();
    p.upload(&text);
    p.download(&text);
    assert_eq!(p.server_data, text);
    assert_eq!(p.client_data, text);
    let (out, _) = p.client.compression_stats();
    let (raw, z) = out.unwrap();
    assert!(z * 10 < raw, "compressed {z} of {raw}");
}

#[test]
fn one_byte_and_max_size_packets() {
    let mut p = Pair::default_algs();
    p.establish();
    p.upload(b"x");
    assert_eq!(p.server_data, b"x");
    let big = pattern(256 * 1024 * 3, 8);
    p.download(&big);
    assert_eq!(p.client_data, big);
}

/// What the `connection_input` fuzz target does, over pseudo-random inputs
/// and over a real handshake with bytes flipped, on stable in every test run.
#[test]
fn hostile_bytes_never_panic() {
    let feed = |mut conn: Connection, data: &[u8]| {
        let mut buf = data.to_vec();
        let mut start = 0;
        while start < buf.len() {
            match conn.handle_input(Instant::now(), &mut buf[start..]) {
                Ok(r) if r.consumed > 0 => start += r.consumed,
                _ => break,
            }
            while conn.poll_event().is_some() {}
        }
    };
    // A real client stream to mutate.
    let mut p = Pair::default_algs();
    p.client.poll_transmit(p.now, &mut p.c2s);
    let real = p.c2s.clone();
    for i in 0..3000u64 {
        let mut input = if i % 2 == 0 {
            real.clone()
        } else {
            b"SSH-2.0-x\r\n".to_vec()
        };
        let noise = pattern((i % 700) as usize, i as u8);
        if i % 2 == 0 && !input.is_empty() {
            for (j, b) in noise.iter().enumerate().take(8) {
                let at = (*b as usize * 7 + j * 131 + i as usize) % input.len();
                input[at] ^= b | 1;
            }
        } else {
            input.extend_from_slice(&noise);
        }
        let server = ServerConfig {
            common: Config::default(),
            host_keys: vec![host_key_for("ssh-ed25519")],
            auth_methods: owned(&["publickey"]),
            max_auth_tries: 6,
            banner: None,
        };
        feed(Connection::server(server, Box::new(SystemRng)), &input);
        feed(
            Connection::client(ClientConfig::default(), Box::new(SystemRng)),
            &input,
        );
    }
}
