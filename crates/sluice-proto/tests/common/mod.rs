//! The test harness: two endpoints of sluice-proto joined by in-memory byte
//! pipes, as quinn-proto's tests do. With `batch` set, both ends seal and
//! open through the batch API and the jobs run in an adversarial order.
//!
//! - Virtual time: `now` starts at an arbitrary instant and each step
//!   (one trip of whatever is in flight, both ways) moves it forward by
//!   `latency`; nothing reads the wall clock. When the pair is quiet,
//!   [`Pair::run_until`] jumps the clock straight to the next
//!   `poll_timeout` of either end, so timer-driven behaviour (re-key by
//!   time) is tested without sleeping and in a handful of steps.
//! - A seeded link ([`link::Link`], off by default): the byte streams cut
//!   into chunks of seeded sizes landing at seeded delays, in order as TCP
//!   delivers them, and optionally a byte flipped or lost; the clock jumps
//!   to the next arrival when only the wire is busy.
//! - Seeded randomness: both ends draw from a [`SeededRng`] (seed from
//!   `SLUICE_TEST_SEED`, else a fixed one), so with the insecure provider
//!   ([`Pair::insecure`]) a run is reproducible byte for byte.
//! - Noise: both ends send IGNORE/DEBUG packets before their packets (the
//!   engine's `set_noise` test hook), as Go's x/crypto/ssh handshake tests
//!   do; every scenario must pass with it.
#![allow(dead_code, unreachable_pub)]

pub mod link;
pub mod stripe;

use aws_lc_rs::encoding::AsBigEndian;
use sluice_proto::crypto::hostkey::{KeyPair, Signer};
use sluice_proto::crypto::insecure::{self, InsecureKey, SeededRng};
use sluice_proto::msg::ChannelRequestKind;
use sluice_proto::transport::CryptoJob;
use sluice_proto::{
    AuthMethodRequest, ChannelId, ClientConfig, Config, Connection, Event, ServerConfig,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use link::Link;

/// The seed of a test run: `SLUICE_TEST_SEED` if set, else fixed.
pub fn test_seed() -> u64 {
    std::env::var("SLUICE_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_0f51_u64)
}

/// The client's and the server's Rng for `seed` (distinct streams).
pub fn seeded(seed: u64, server: bool) -> Box<SeededRng> {
    Box::new(SeededRng::new(seed ^ if server { 0x5e7e_7e7e } else { 0 }))
}

/// A client and a server joined by two in-memory byte pipes.
pub struct Pair {
    pub client: Connection,
    pub server: Connection,
    pub c2s: Vec<u8>,
    pub s2c: Vec<u8>,
    /// Largest number of bytes handed over per input call (splits the stream).
    pub chunk: usize,
    pub user_key: Arc<dyn Signer>,
    /// The signature algorithm the client authenticates with.
    pub user_alg: String,
    /// The one key the server accepts.
    pub accepted: Vec<u8>,
    pub auth_attempts: u32,
    pub client_events: Vec<Event>,
    pub server_events: Vec<Event>,
    /// Data received by the server per channel, and by the client.
    pub server_data: Vec<u8>,
    pub client_data: Vec<u8>,
    /// Report received data as consumed (false simulates a stalled consumer).
    pub consume: bool,
    pub client_channel: Option<ChannelId>,
    pub server_channel: Option<ChannelId>,
    /// Virtual time, moved forward by `latency` each step.
    pub now: Instant,
    /// One-way delay of the pipes: the time one step takes.
    pub latency: Duration,
    /// Seal and open through the batch API, jobs run by [`adversarial`].
    pub batch: bool,
    /// Keep every byte delivered each way in `transcript`.
    pub record: bool,
    /// Bytes delivered client->server and server->client, when `record` is set.
    pub transcript: (Vec<u8>, Vec<u8>),
    /// The seeded link, if any; without one, what an end writes reaches
    /// the other whole at the next step, straight from `c2s`/`s2c`.
    pub link: Option<Link>,
    /// With a link: bytes that arrived at the server and the client and
    /// wait to be read (`c2s`/`s2c` then hold only what was just written).
    pub c2s_rx: Vec<u8>,
    pub s2c_rx: Vec<u8>,
}

pub fn owned(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

pub fn config(kex: &str, host_alg: &str, cipher: &str, mac: &str) -> Config {
    Config {
        kex: owned(&[kex]),
        host_key_algs: owned(&[host_alg]),
        ciphers: owned(&[cipher]),
        macs: owned(&[mac]),
        ..Config::default()
    }
}

pub fn host_key_for(alg: &str) -> Arc<dyn Signer> {
    Arc::new(test_key(alg))
}

/// Fixed test keys, generated once per type.
pub fn test_key(alg: &str) -> KeyPair {
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

pub fn ecdsa_test_key(curve: &str) -> (Vec<u8>, Vec<u8>) {
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

pub fn rsa_test_key() -> KeyPair {
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
    pub fn new(kex: &str, host_alg: &str, cipher: &str, mac: &str) -> Pair {
        Pair::tweaked(kex, host_alg, cipher, mac, |_, _| {})
    }

    /// Like [`Pair::new`], with `tweak(config, is_server)` applied to each end.
    pub fn tweaked(
        kex: &str,
        host_alg: &str,
        cipher: &str,
        mac: &str,
        tweak: impl Fn(&mut Config, bool),
    ) -> Pair {
        let (mut cc, mut sc) = (
            config(kex, host_alg, cipher, mac),
            config(kex, host_alg, cipher, mac),
        );
        tweak(&mut cc, false);
        tweak(&mut sc, true);
        let user_key: Arc<dyn Signer> = Arc::new(KeyPair::from_ed25519_seed(&[9u8; 32]).unwrap());
        Pair::with(
            cc,
            sc,
            host_key_for(host_alg),
            user_key,
            "ssh-ed25519",
            test_seed(),
        )
    }

    /// Both ends on the insecure, deterministic provider with Rngs seeded
    /// from `seed`: the same seed gives the same bytes on the wire.
    pub fn insecure(seed: u64) -> Pair {
        Pair::with(
            insecure::config(),
            insecure::config(),
            Arc::new(InsecureKey::new([7; 32])),
            Arc::new(InsecureKey::new([9; 32])),
            insecure::NAME,
            seed,
        )
    }

    /// A pair from explicit configs and keys; noise on, time at its start.
    pub fn with(
        cc: Config,
        sc: Config,
        host_key: Arc<dyn Signer>,
        user_key: Arc<dyn Signer>,
        user_alg: &str,
        seed: u64,
    ) -> Pair {
        let mut client = Connection::client(ClientConfig { common: cc }, seeded(seed, false));
        let mut server = Connection::server(
            ServerConfig {
                common: sc,
                host_keys: vec![host_key],
                auth_methods: owned(&["publickey"]),
                max_auth_tries: 6,
                banner: None,
            },
            seeded(seed, true),
        );
        client.set_noise(true);
        server.set_noise(true);
        let accepted = user_key.public_blob();
        Pair {
            client,
            server,
            c2s: Vec::new(),
            s2c: Vec::new(),
            chunk: usize::MAX,
            user_key,
            user_alg: user_alg.to_owned(),
            accepted,
            auth_attempts: 0,
            client_events: Vec::new(),
            server_events: Vec::new(),
            server_data: Vec::new(),
            client_data: Vec::new(),
            consume: true,
            client_channel: None,
            server_channel: None,
            now: Instant::now(),
            latency: Duration::from_millis(5),
            batch: false,
            record: false,
            transcript: (Vec::new(), Vec::new()),
            link: None,
            c2s_rx: Vec::new(),
            s2c_rx: Vec::new(),
        }
    }

    /// This pair with its bytes carried by a seeded link.
    pub fn over(mut self, link: Link) -> Pair {
        self.link = Some(link);
        self
    }

    pub fn default_algs() -> Pair {
        Pair::new(
            "curve25519-sha256",
            "ssh-ed25519",
            "aes128-gcm@openssh.com",
            "hmac-sha2-256",
        )
    }

    /// Feeds `buf` to `conn` in chunks; returns data received and leftover.
    pub fn feed(
        conn: &mut Connection,
        buf: &mut Vec<u8>,
        chunk: usize,
        now: Instant,
        data: &mut Vec<u8>,
        consume: bool,
    ) -> Result<(), sluice_proto::Error> {
        Pair::feed_batch(conn, buf, chunk, now, data, consume, false)
    }

    /// [`Pair::feed`], opening ahead in batches when `batch` is set.
    pub fn feed_batch(
        conn: &mut Connection,
        buf: &mut Vec<u8>,
        chunk: usize,
        now: Instant,
        data: &mut Vec<u8>,
        consume: bool,
        batch: bool,
    ) -> Result<(), sluice_proto::Error> {
        let mut avail = buf.len().min(chunk);
        let mut start = 0;
        loop {
            let end = start + avail;
            let mut consumed_ch = None;
            if batch {
                conn.open_batch(&mut buf[start..end], &mut adversarial)?;
            }
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
    pub fn step(&mut self) -> Result<bool, sluice_proto::Error> {
        let (c0, s0) = (self.c2s.len(), self.s2c.len());
        if self.batch {
            self.client.set_batch_crypto(true);
            self.server.set_batch_crypto(true);
            self.client.seal_batch(&mut self.c2s, &mut adversarial);
            self.server.seal_batch(&mut self.s2c, &mut adversarial);
        }
        self.client.poll_transmit(self.now, &mut self.c2s);
        self.server.poll_transmit(self.now, &mut self.s2c);
        let mut progressed = self.c2s.len() != c0 || self.s2c.len() != s0;
        // What is in flight arrives one latency later.
        let sent_at = self.now;
        self.now += self.latency;
        let (up_rx, down_rx) = match self.link.as_mut() {
            Some(link) => {
                link.carry(sent_at + self.latency, &mut self.c2s, &mut self.s2c);
                progressed |= link.arrive(&mut self.now, &mut self.c2s_rx, &mut self.s2c_rx);
                progressed |= link.busy();
                (&mut self.c2s_rx, &mut self.s2c_rx)
            }
            None => (&mut self.c2s, &mut self.s2c),
        };
        let sent = self.record.then(|| (up_rx.clone(), down_rx.clone()));
        Pair::feed_batch(
            &mut self.server,
            up_rx,
            self.chunk,
            self.now,
            &mut self.server_data,
            self.consume,
            self.batch,
        )?;
        Pair::feed_batch(
            &mut self.client,
            down_rx,
            self.chunk,
            self.now,
            &mut self.client_data,
            self.consume,
            self.batch,
        )?;
        if let Some((c2s, s2c)) = sent {
            let (up, down) = &mut self.transcript;
            up.extend_from_slice(&c2s[..c2s.len() - up_rx.len()]);
            down.extend_from_slice(&s2c[..s2c.len() - down_rx.len()]);
        }
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
    pub fn drive(&mut self) -> Result<(), sluice_proto::Error> {
        if self.drive_bounded(10_000)? {
            Ok(())
        } else {
            panic!("no quiescence after 10000 rounds");
        }
    }

    /// Steps until nothing moves or `rounds` steps have run (quinn's
    /// livelock guard); true if the pair went quiet.
    pub fn drive_bounded(&mut self, rounds: usize) -> Result<bool, sluice_proto::Error> {
        for _ in 0..rounds {
            if !self.step()? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The earliest timer of either end (`poll_timeout`).
    pub fn next_timeout(&self) -> Option<Instant> {
        match (self.client.poll_timeout(), self.server.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Runs the pair until virtual time `deadline`: drives it quiet, then
    /// jumps the clock straight to the earlier end's next `poll_timeout`
    /// (both ends get `handle_timeout`) and drives again; nothing sleeps.
    /// Returns how many timers fired. `drive` alone never jumps to a timer:
    /// a periodic one (re-key by time) would keep it busy for ever.
    pub fn run_until(&mut self, deadline: Instant) -> Result<usize, sluice_proto::Error> {
        let mut fired = 0;
        loop {
            self.drive()?;
            match self.next_timeout() {
                Some(t) if t <= deadline => {
                    self.now = self.now.max(t);
                    self.client.handle_timeout(self.now);
                    self.server.handle_timeout(self.now);
                    fired += 1;
                    assert!(fired < 100_000, "timers fire without end");
                }
                _ => {
                    self.now = self.now.max(deadline);
                    return Ok(fired);
                }
            }
        }
    }

    /// [`Pair::run_until`] `d` from now.
    pub fn run_for(&mut self, d: Duration) -> Result<usize, sluice_proto::Error> {
        self.run_until(self.now + d)
    }

    pub fn on_client_event(&mut self, e: Event) {
        match e {
            Event::HostKey { .. } => self.client.accept_host_key(),
            Event::AuthReady => {
                self.auth_attempts += 1;
                self.client
                    .auth_publickey_sign("alice", &self.user_alg, self.user_key.as_ref())
                    .unwrap();
            }
            Event::AuthFailure { .. } if self.auth_attempts < 20 && !self.client.is_closed() => {
                self.auth_attempts += 1;
                self.client
                    .auth_publickey_sign("alice", &self.user_alg, self.user_key.as_ref())
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

    pub fn on_server_event(&mut self, e: Event) {
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
    pub fn establish(&mut self) {
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
    pub fn upload(&mut self, data: &[u8]) {
        let ch = self.client_channel.unwrap();
        let mut sent = 0;
        let mut rounds = 0;
        while sent < data.len() {
            sent += self
                .client
                .send_data(self.now, ch, None, &data[sent..], &mut self.c2s);
            self.step().unwrap();
            rounds += 1;
            assert!(rounds < 100_000, "upload stalled at {sent}");
        }
        self.drive().unwrap();
    }

    pub fn download(&mut self, data: &[u8]) {
        let ch = self.server_channel.unwrap();
        let mut sent = 0;
        let mut rounds = 0;
        while sent < data.len() {
            sent += self
                .server
                .send_data(self.now, ch, None, &data[sent..], &mut self.s2c);
            self.step().unwrap();
            rounds += 1;
            assert!(rounds < 100_000, "download stalled at {sent}");
        }
        self.drive().unwrap();
    }
}

/// Runs a batch's jobs as badly as a runtime may: out of order, half on
/// another thread, and every third batch not at all (the engine must then
/// run them itself).
pub fn adversarial(jobs: &mut [CryptoJob<'_>]) {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    if CALLS.fetch_add(1, Ordering::Relaxed) % 3 == 2 {
        return;
    }
    let mid = jobs.len() / 2;
    let (a, b) = jobs.split_at_mut(mid);
    std::thread::scope(|s| {
        s.spawn(|| b.iter_mut().rev().for_each(CryptoJob::run));
        a.iter_mut().rev().for_each(CryptoJob::run);
    });
}

pub fn pattern(n: usize, seed: u8) -> Vec<u8> {
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
