//! The compression slot end to end: the registry decides the KEXINIT names;
//! zlib streams survive re-keys (restarted at each NEWKEYS); a peer's
//! decompression bomb stops the connection; and a batch-capable test engine
//! compresses on several threads through a runner that leaves jobs undone,
//! while the peer decodes everything in order, across re-keys.

mod common;
use common::*;
use sluice_proto::msg::KexInit;
use sluice_proto::transport::compress::{
    self, Activation, CompressError, CompressionEngine, Compressor, Decompressor,
    SequentialCompressor,
};
use sluice_proto::transport::compress_batch::{BatchCompressor, CompressWorker};
use sluice_proto::transport::CompressJob;
use sluice_proto::{ClientConfig, Config, Connection, Error, ServerConfig, Violation};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

const DELTA: &str = "delta@test.sluice.dev";
/// First byte of a delta stream: shows the stream (re)started.
const MAGIC: u8 = 0xa5;

/// A batch-capable test method: each byte sent as its difference from the
/// byte before it in the raw stream, so every job needs the last byte of the
/// history. A stream starts with [`MAGIC`]; each packet starts with 1.
struct DeltaEngine {
    /// Threads that ran a job, to show the jobs left the connection's thread.
    threads: Arc<Mutex<HashSet<ThreadId>>>,
    jobs: Arc<AtomicUsize>,
    /// Outgoing streams made: one per end and key epoch.
    streams: Arc<AtomicUsize>,
}

impl CompressionEngine for DeltaEngine {
    fn name(&self) -> &str {
        DELTA
    }
    fn activation(&self) -> Activation {
        Activation::Immediate
    }
    fn compressor(&self) -> Compressor {
        self.streams.fetch_add(1, Ordering::Relaxed);
        Compressor::Batch(Box::new(DeltaBatch {
            workers: Vec::new(),
            threads: Arc::clone(&self.threads),
            jobs: Arc::clone(&self.jobs),
        }))
    }
    fn decompressor(&self) -> Box<dyn Decompressor> {
        Box::new(DeltaDecoder {
            prev: 0,
            started: false,
        })
    }
}

struct DeltaBatch {
    workers: Vec<Box<dyn CompressWorker>>,
    threads: Arc<Mutex<HashSet<ThreadId>>>,
    jobs: Arc<AtomicUsize>,
}

impl BatchCompressor for DeltaBatch {
    fn history_len(&self) -> usize {
        1
    }
    fn job_len(&self) -> usize {
        16 * 1024
    }
    fn workers(&mut self, n: usize) -> &mut [Box<dyn CompressWorker>] {
        while self.workers.len() < n {
            self.workers.push(Box::new(DeltaWorker {
                threads: Arc::clone(&self.threads),
                jobs: Arc::clone(&self.jobs),
            }));
        }
        &mut self.workers
    }
}

struct DeltaWorker {
    threads: Arc<Mutex<HashSet<ThreadId>>>,
    jobs: Arc<AtomicUsize>,
}

impl CompressWorker for DeltaWorker {
    fn compress(
        &mut self,
        history: &[u8],
        at: u64,
        input: &[u8],
        lens: &[usize],
        out: &mut Vec<u8>,
        ends: &mut Vec<usize>,
    ) -> Result<(), CompressError> {
        self.threads
            .lock()
            .unwrap()
            .insert(std::thread::current().id());
        self.jobs.fetch_add(1, Ordering::Relaxed);
        assert_eq!(
            history.len() as u64,
            at.min(1),
            "history is the byte before"
        );
        let mut prev = history.last().copied().unwrap_or(0);
        let mut rest = input;
        for (i, &len) in lens.iter().enumerate() {
            if at == 0 && i == 0 {
                out.push(MAGIC);
            }
            out.push(1);
            let (p, tail) = rest.split_at(len);
            for &b in p {
                out.push(b.wrapping_sub(prev));
                prev = b;
            }
            rest = tail;
            ends.push(out.len());
        }
        Ok(())
    }
}

struct DeltaDecoder {
    prev: u8,
    started: bool,
}

impl Decompressor for DeltaDecoder {
    fn decompress(&mut self, z: &[u8], out: &mut Vec<u8>, limit: usize) -> Result<(), Violation> {
        out.clear();
        let mut z = z;
        if !self.started {
            let [MAGIC, rest @ ..] = z else {
                return Err(Violation::BadCompression);
            };
            (z, self.started) = (rest, true);
        }
        let [1, body @ ..] = z else {
            return Err(Violation::BadCompression);
        };
        if body.len() > limit {
            return Err(Violation::BadCompression);
        }
        for &d in body {
            self.prev = self.prev.wrapping_add(d);
            out.push(self.prev);
        }
        Ok(())
    }
}

fn delta() -> Arc<DeltaEngine> {
    Arc::new(DeltaEngine {
        threads: Arc::new(Mutex::new(HashSet::new())),
        jobs: Arc::new(AtomicUsize::new(0)),
        streams: Arc::new(AtomicUsize::new(0)),
    })
}

/// A pair whose ends register `engines`, compression preferred.
fn pair_with(engines: Vec<Arc<dyn CompressionEngine>>) -> Pair {
    let mut p = Pair::tweaked(
        "curve25519-sha256",
        "ssh-ed25519",
        "aes128-gcm@openssh.com",
        "hmac-sha2-256",
        move |c, _| {
            c.compression_engines = engines.clone();
            c.prefer_compression = true;
        },
    );
    // These tests count what is queued and framed: no IGNORE/DEBUG noise,
    // whose control packets flush the compression queue.
    p.client.set_noise(false);
    p.server.set_noise(false);
    p
}

/// Runs compression jobs as badly as a runtime may: in reverse, half on
/// other threads, every other job left undone, and every third batch not
/// at all.
fn adversarial_compress(jobs: &mut [CompressJob<'_>]) {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    if CALLS.fetch_add(1, Ordering::Relaxed) % 3 == 2 {
        return;
    }
    let mid = jobs.len() / 2;
    let (a, b) = jobs.split_at_mut(mid);
    std::thread::scope(|s| {
        s.spawn(|| b.iter_mut().rev().step_by(2).for_each(CompressJob::run));
        s.spawn(|| a.iter_mut().rev().for_each(CompressJob::run));
    });
}

/// The names of the first KEXINIT `conn` sends.
fn kexinit_names(conn: &mut Connection) -> Vec<String> {
    let mut out = Vec::new();
    conn.poll_transmit(std::time::Instant::now(), &mut out);
    let line_end = out.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
    let packet = &out[line_end..];
    let len = u32::from_be_bytes(packet[..4].try_into().unwrap()) as usize;
    let pad = packet[4] as usize;
    let init = KexInit::decode(&packet[5..4 + len - pad]).unwrap();
    assert_eq!(
        init.compression_client_to_server,
        init.compression_server_to_client
    );
    init.compression_client_to_server
}

#[test]
fn registry_drives_kexinit_names() {
    let d = delta();
    let mut engines = compress::default_engines();
    engines.insert(0, d);
    let mk = |engines: Vec<Arc<dyn CompressionEngine>>, prefer| {
        let common = Config {
            compression_engines: engines,
            prefer_compression: prefer,
            ..Config::default()
        };
        Connection::client(
            ClientConfig { common },
            Box::new(sluice_proto::crypto::SystemRng),
        )
    };
    assert_eq!(
        kexinit_names(&mut mk(engines.clone(), true)),
        [
            DELTA,
            "zstd@sluice.dev",
            LONG,
            "zlib@openssh.com",
            "zlib",
            "none"
        ]
    );
    assert_eq!(
        kexinit_names(&mut mk(engines, false)),
        [
            "none",
            DELTA,
            "zstd@sluice.dev",
            LONG,
            "zlib@openssh.com",
            "zlib"
        ]
    );
    assert_eq!(kexinit_names(&mut mk(Vec::new(), true)), ["none"]);
    // The default: the methods that start after authentication.
    let mut c = Connection::client(
        ClientConfig::default(),
        Box::new(sluice_proto::crypto::SystemRng),
    );
    assert_eq!(
        kexinit_names(&mut c),
        ["none", "zstd@sluice.dev", LONG, "zlib@openssh.com"]
    );
}

/// The pseudo-name that says we read long stored zstd packets.
const LONG: &str = "zstd-long-stored-v00@sluice.dev";

fn text(n: usize) -> Vec<u8> {
    let mut v: Vec<u8> = b"a line of compressible text for the slot tests\n"
        .iter()
        .cycle()
        .take(n)
        .copied()
        .collect();
    // Some noise so packets differ.
    for (i, b) in pattern(n / 64, 3).into_iter().enumerate() {
        v[i * 64] = b;
    }
    v
}

/// Upload and download in pieces with re-keys from either side in between:
/// each NEWKEYS starts both streams afresh on both ends. Returns the
/// client's outgoing (raw, compressed) counts and the key exchanges done.
fn round_trip_with_rekeys(mut p: Pair, name: &str) -> (u64, u64, usize) {
    p.establish();
    let algs = p.client.algorithms().unwrap().clone();
    assert_eq!(
        (algs.comp_c2s.as_str(), algs.comp_s2c.as_str()),
        (name, name)
    );
    let data = text(3 << 20);
    let mut sent_up = Vec::new();
    let mut sent_down = Vec::new();
    for (i, piece) in data.chunks(700_001).enumerate() {
        p.upload(piece);
        p.download(piece);
        sent_up.extend_from_slice(piece);
        sent_down.extend_from_slice(piece);
        if i % 2 == 0 {
            p.client.rekey();
        } else {
            p.server.rekey();
        }
        p.drive().unwrap();
    }
    assert!(p.server_data == sent_up, "{name}: upload differs");
    assert!(p.client_data == sent_down, "{name}: download differs");
    let kex_done = p
        .client_events
        .iter()
        .filter(|e| matches!(e, sluice_proto::Event::KexDone { .. }))
        .count();
    assert!(kex_done >= 5, "{name}: {kex_done} key exchanges");
    let (out, inc) = p.client.compression_stats();
    let (raw, z) = out.unwrap();
    assert!(raw as usize >= data.len(), "{name}: {raw}");
    let (raw_in, _) = inc.unwrap();
    assert!(raw_in as usize >= data.len(), "{name}");
    (raw, z, kex_done)
}

#[test]
fn zlib_round_trips_across_rekeys() {
    let delayed: Vec<Arc<dyn CompressionEngine>> = vec![Arc::new(
        sluice_proto::transport::zlib::ZlibEngine::delayed(),
    )];
    let (raw, z, _) = round_trip_with_rekeys(pair_with(delayed), "zlib@openssh.com");
    assert!(z * 3 < raw, "{z} of {raw}");
    let immediate: Vec<Arc<dyn CompressionEngine>> = vec![Arc::new(
        sluice_proto::transport::zlib::ZlibEngine::immediate(),
    )];
    let (raw, z, _) = round_trip_with_rekeys(pair_with(immediate), "zlib");
    assert!(z * 3 < raw, "{z} of {raw}");
}

#[test]
fn batch_engine_round_trips_across_rekeys_sequentially() {
    // Without set_batch_compression each packet is its own inline job.
    let d = delta();
    let (_, _, kex_done) = round_trip_with_rekeys(pair_with(vec![d.clone()]), DELTA);
    // RFC 4253 6.2: a fresh stream per key epoch, at each end (the decoder
    // checks each starts with MAGIC).
    assert_eq!(d.streams.load(Ordering::Relaxed), 2 * kex_done);
}

/// zlib under its own name but one that, once armed, deflates 300 KiB of
/// zeros behind every payload: more than any packet may inflate to.
struct BombEngine(Arc<AtomicBool>);
struct Bomb {
    z: flate2::Compress,
    armed: Arc<AtomicBool>,
}

impl CompressionEngine for BombEngine {
    fn name(&self) -> &str {
        "zlib@openssh.com"
    }
    fn activation(&self) -> Activation {
        Activation::Delayed
    }
    fn compressor(&self) -> Compressor {
        Compressor::Sequential(Box::new(Bomb {
            z: flate2::Compress::new(flate2::Compression::new(6), true),
            armed: Arc::clone(&self.0),
        }))
    }
    fn decompressor(&self) -> Box<dyn Decompressor> {
        sluice_proto::transport::zlib::ZlibEngine::delayed().decompressor()
    }
}

impl SequentialCompressor for Bomb {
    fn compress(&mut self, payload: &[u8], out: &mut Vec<u8>) -> Result<(), CompressError> {
        let mut input = payload.to_vec();
        if self.armed.load(Ordering::Relaxed) {
            input.resize(payload.len() + 300 * 1024, 0);
        }
        out.reserve(input.len() + 1024);
        self.z
            .compress_vec(&input, out, flate2::FlushCompress::Sync)
            .map_err(|_| CompressError)?;
        Ok(())
    }
}

#[test]
fn decompression_bomb_is_refused() {
    let armed = Arc::new(AtomicBool::new(false));
    let mut p = Pair::default_algs();
    let mk = |engine: Arc<dyn CompressionEngine>| Config {
        compression_engines: vec![engine],
        prefer_compression: true,
        ..config(
            "curve25519-sha256",
            "ssh-ed25519",
            "aes128-gcm@openssh.com",
            "hmac-sha2-256",
        )
    };
    p.client = Connection::client(
        ClientConfig {
            common: mk(Arc::new(BombEngine(Arc::clone(&armed)))),
        },
        Box::new(sluice_proto::crypto::SystemRng),
    );
    p.server = Connection::server(
        ServerConfig {
            common: mk(Arc::new(
                sluice_proto::transport::zlib::ZlibEngine::delayed(),
            )),
            host_keys: vec![host_key_for("ssh-ed25519")],
            auth_methods: owned(&["publickey"]),
            max_auth_tries: 6,
            banner: None,
        },
        Box::new(sluice_proto::crypto::SystemRng),
    );
    p.establish();
    p.upload(b"harmless");
    assert_eq!(p.server_data, b"harmless");
    armed.store(true, Ordering::Relaxed);
    let ch = p.client_channel.unwrap();
    assert_eq!(p.client.send_data(p.now, ch, None, b"boom", &mut p.c2s), 4);
    let err = p.drive().unwrap_err();
    assert_eq!(err, Error::Protocol(Violation::BadCompression), "{err:?}");
    assert!(p.server.is_closed());
    assert_eq!(p.server_data, b"harmless");
}

/// Sends `data` client to server in pieces of varying size, compressing the
/// queued packets through the adversarial runner before each step; re-keys
/// start while packets are queued.
fn upload_in_batches(p: &mut Pair, data: &[u8]) {
    let ch = p.client_channel.unwrap();
    let sizes = [1usize, 70, 1500, 9000, 33_000, 120_000, 3];
    let (mut sent, mut k, mut rounds) = (0, 0, 0);
    while sent < data.len() {
        // Several packets per batch, of several sizes.
        for i in 0..6 {
            if i == 3 && rounds % 9 == 4 {
                // A re-key while packets wait: the next data slot sends
                // KEXINIT behind them, and no data until NEWKEYS.
                p.client.rekey();
            }
            let n = sizes[k % sizes.len()].min(data.len() - sent);
            k += 1;
            sent += p
                .client
                .send_data(p.now, ch, None, &data[sent..sent + n], &mut p.c2s);
            if sent == data.len() {
                break;
            }
        }
        p.client
            .compress_batch(&mut p.c2s, &mut adversarial_compress);
        assert!(!p.client.has_uncompressed());
        p.step().unwrap();
        rounds += 1;
        assert!(rounds < 100_000, "upload stalled at {sent}");
    }
    p.drive().unwrap();
}

#[test]
fn batch_jobs_on_threads_reach_the_peer_in_order() {
    let d = delta();
    let mut p = pair_with(vec![d.clone()]);
    // Batch sealing too: compress jobs first, then the seal jobs.
    p.batch = true;
    p.establish();
    p.client.set_batch_compression(true);
    let data = text(2 << 20);
    upload_in_batches(&mut p, &data);
    assert!(p.server_data == data, "batched upload differs");
    let kex_done = p
        .server_events
        .iter()
        .filter(|e| matches!(e, sluice_proto::Event::KexDone { .. }))
        .count();
    assert!(kex_done >= 3, "{kex_done} key exchanges");
    assert!(d.jobs.load(Ordering::Relaxed) > 50);
    assert!(
        d.threads.lock().unwrap().len() >= 3,
        "jobs ran on the connection's thread and at least two others"
    );
    let (raw, z) = p.client.compression_stats().0.unwrap();
    assert!(
        raw as usize >= data.len() && z >= raw,
        "delta does not shrink"
    );
    // The other direction, and small packets held until a flush.
    p.download(&data[..300_000]);
    assert!(p.client_data == data[..300_000]);
}

#[test]
fn held_packets_wait_for_the_flush_and_poll_transmit_flushes() {
    let mut p = pair_with(vec![delta()]);
    p.establish();
    p.client.set_batch_compression(true);
    let ch = p.client_channel.unwrap();
    let before = p.c2s.len();
    for i in 0..10u8 {
        assert_eq!(
            p.client.send_data(p.now, ch, None, &[i; 100], &mut p.c2s),
            100
        );
    }
    assert_eq!(p.c2s.len(), before, "queued, not framed");
    assert!(p.client.has_uncompressed());
    // poll_transmit (inside step) compresses inline, jobs left to the engine.
    p.drive().unwrap();
    assert!(!p.client.has_uncompressed());
    let want: Vec<u8> = (0..10u8).flat_map(|i| [i; 100]).collect();
    assert_eq!(p.server_data, want);
}

#[test]
fn zstd_stored_packets_fill_a_packet_between_sluice_peers() {
    use sluice_proto::transport::compress::Level;
    use sluice_proto::transport::zstd::ZstdEngine;
    let level = Level::new(0);
    let zstd: Arc<dyn CompressionEngine> = Arc::new(ZstdEngine::new(level.clone()));
    let mut p = pair_with(vec![zstd]);
    p.establish();
    assert!(p.client.algorithms().unwrap().peer_reads_long_stored);
    let ch = p.client_channel.unwrap();
    // Level 0 toward a peer that lists the pseudo-name: a stored packet
    // fills a packet's room, beyond zstd's 128 KiB block.
    let long = p.client.send_capacity(ch);
    assert!(long > 200_000, "{long}");
    let data = pattern(6 << 20, 7);
    let (head, rest) = data.split_at(2 << 20);
    p.upload(head);
    let (raw, z) = p.client.compression_stats().0.unwrap();
    assert!(
        z - raw < 12 * (raw / 200_000 + 2),
        "{raw} raw, {z} on the wire"
    );
    // A level above 0: packets of one block, compressed; then a re-key and
    // level 0 again, stored packets in the new epoch's stream.
    level.set(3);
    let short = p.client.send_capacity(ch);
    assert!(short <= 128 * 1024, "{short}");
    let (mid, tail) = rest.split_at(1 << 20);
    p.upload(mid);
    p.client.rekey();
    p.drive().unwrap();
    level.set(0);
    p.upload(tail);
    assert!(p.server_data == data, "upload differs");
    // The server sends long stored packets too.
    p.download(&data[..3 << 20]);
    assert!(p.client_data == data[..3 << 20], "download differs");
}
