//! `sluice bench-crypto`: one endpoint's packet crypto alone. A client and a
//! server engine are joined in memory; the client seals SIZE bytes of
//! channel data in batches and the server opens them, each timed on its own,
//! with 1 and 2 (or the given) threads. More than one goes through the
//! connection's crypto pool (net/crypto_pool.rs), as a transfer does. No
//! sockets, no copies but the one into the packet slot: the figure is what a
//! core does per GiB.

use crate::net::crypto_pool::{CryptoPool, CryptoThreads};
use sluice_proto::crypto::hostkey::{KeyPair, Signer};
use sluice_proto::crypto::{Rng, SystemRng};
use sluice_proto::transport::CryptoJob;
use sluice_proto::{
    AuthMethodRequest, ChannelId, ClientConfig, Config, Connection, Event, ServerConfig,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bytes sealed per batch: what the pump gathers before a socket write.
const BATCH: usize = 2 << 20;

/// What to measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Bytes of channel data each way.
    pub size: u64,
    /// Ciphers (wire names; `aes128-ctr` takes `mac`).
    pub ciphers: Vec<String>,
    /// MAC for non-AEAD ciphers.
    pub mac: String,
    /// Thread counts to try.
    pub threads: Vec<usize>,
}

/// Runs the measurement and prints a table; returns the exit code.
pub fn run(opts: &Options) -> i32 {
    crate::outln!(
        "# sluice bench-crypto: {} MiB per cell, batches of {} KiB, {} cores",
        opts.size >> 20,
        BATCH >> 10,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    crate::outln!("| cipher | threads | seal MB/s | open MB/s | seal CPU s/GiB | open CPU s/GiB |");
    crate::outln!("|---|---|---|---|---|---|");
    for cipher in &opts.ciphers {
        for &t in &opts.threads {
            match measure(cipher, &opts.mac, t, opts.size) {
                Ok(m) => crate::outln!(
                    "| {cipher} | {t} | {:.0} | {:.0} | {:.2} | {:.2} |",
                    mbs(opts.size, m.seal),
                    mbs(opts.size, m.open),
                    per_gib(opts.size, m.seal_cpu),
                    per_gib(opts.size, m.open_cpu),
                ),
                Err(e) => {
                    crate::errln!("bench-crypto: {cipher}: {e}");
                    return 1;
                }
            }
        }
    }
    0
}

fn mbs(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64().max(1e-9) / 1e6
}

fn per_gib(bytes: u64, cpu: Duration) -> f64 {
    cpu.as_secs_f64() * (1u64 << 30) as f64 / bytes as f64
}

#[derive(Default)]
struct Measured {
    seal: Duration,
    open: Duration,
    seal_cpu: Duration,
    open_cpu: Duration,
}

/// CPU time of the whole process (all threads).
fn cpu_now() -> Duration {
    crate::sys::time::cpu_time(crate::sys::time::Who::Process).unwrap_or_default()
}

/// Why a measurement could not be made.
#[derive(Debug)]
pub(crate) enum BenchError {
    /// The engine refused something (a bug here, or the cipher is unknown).
    Engine(sluice_proto::Error),
    /// The throwaway key could not be made.
    Key(String),
    /// The server engine stopped inside a packet.
    Partial,
    /// The in-memory server refused the key.
    AuthFailed,
    /// The handshake did not finish in its rounds.
    Unfinished,
}

impl std::fmt::Display for BenchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BenchError::Engine(e) => write!(f, "{e}"),
            BenchError::Key(e) => f.write_str(e),
            BenchError::Partial => f.write_str("server did not take a whole packet"),
            BenchError::AuthFailed => f.write_str("authentication failed"),
            BenchError::Unfinished => f.write_str("in-memory handshake did not finish"),
        }
    }
}

impl From<sluice_proto::Error> for BenchError {
    fn from(e: sluice_proto::Error) -> Self {
        BenchError::Engine(e)
    }
}

fn measure(cipher: &str, mac: &str, threads: usize, size: u64) -> Result<Measured, BenchError> {
    let (mut client, mut server, cch, sch) = establish(cipher, mac)?;
    client.set_batch_crypto(true);
    server.set_batch_crypto(true);
    let mut block = vec![0u8; 256 * 1024];
    SystemRng.fill(&mut block);
    // One pool per cell, as one per connection: its workers start with the
    // first batch and stay for the rest, as in a transfer.
    let mut pool = CryptoPool::new(CryptoThreads::Fixed(threads));
    let mut run = |jobs: &mut [CryptoJob<'_>]| {
        if threads > 1 {
            pool.run_on(jobs, threads);
        }
    };
    let (mut wire, mut back) = (Vec::with_capacity(BATCH * 2), Vec::new());
    let mut m = Measured::default();
    let mut left = size;
    let now = Instant::now();
    while left > 0 {
        wire.clear();
        while wire.len() < BATCH && left > 0 {
            let Some(slot) = client.data_slot(now, cch, None, &mut wire) else {
                break;
            };
            let n = slot.max.min(block.len()).min(left as usize);
            wire.extend_from_slice(block.get(..n).unwrap_or_default());
            client.finish_data_slot(slot, n, &mut wire);
            left -= n as u64;
        }
        let (t0, c0) = (Instant::now(), cpu_now());
        client.seal_batch(&mut wire, &mut run);
        m.seal += t0.elapsed();
        m.seal_cpu += cpu_now() - c0;
        client.poll_transmit(now, &mut wire);
        let (t0, c0) = (Instant::now(), cpu_now());
        let mut at = 0;
        server.open_batch(&mut wire, &mut run)?;
        while at < wire.len() {
            let input = wire.get_mut(at..).unwrap_or_default();
            let r = server.handle_input(now, input)?;
            if r.consumed == 0 {
                return Err(BenchError::Partial);
            }
            let got = r.data.map_or(0, |d| d.data.len());
            at += r.consumed;
            server.consumed(sch, got);
        }
        m.open += t0.elapsed();
        m.open_cpu += cpu_now() - c0;
        while server.poll_event().is_some() {}
        server.poll_transmit(now, &mut back);
        client.handle_input(now, &mut back)?;
        back.clear();
        while client.poll_event().is_some() {}
    }
    Ok(m)
}

/// Two engines with `cipher`, authenticated, with an open session channel.
pub(crate) fn establish(
    cipher: &str,
    mac: &str,
) -> Result<(Connection, Connection, ChannelId, ChannelId), BenchError> {
    let common = Config {
        ciphers: vec![cipher.to_owned()],
        macs: vec![mac.to_owned()],
        ..Config::default()
    };
    let mut seed = [0u8; 32];
    SystemRng.fill(&mut seed);
    let host: Arc<dyn Signer> =
        Arc::new(KeyPair::from_ed25519_seed(&seed).map_err(|e| BenchError::Key(e.to_string()))?);
    let user = KeyPair::from_ed25519_seed(&seed).map_err(|e| BenchError::Key(e.to_string()))?;
    let mut client = Connection::client(
        ClientConfig {
            common: common.clone(),
        },
        Box::new(SystemRng),
    );
    let mut server = Connection::server(
        ServerConfig {
            common,
            host_keys: vec![host],
            auth_methods: vec!["publickey".into()],
            max_auth_tries: 6,
            banner: None,
        },
        Box::new(SystemRng),
    );
    let (mut cch, mut sch) = (None, None);
    let now = Instant::now();
    let (mut c2s, mut s2c) = (Vec::new(), Vec::new());
    for _ in 0..1000 {
        if let (Some(c), Some(s)) = (cch, sch) {
            return Ok((client, server, c, s));
        }
        client.poll_transmit(now, &mut c2s);
        server.poll_transmit(now, &mut s2c);
        feed(&mut server, &mut c2s, now)?;
        feed(&mut client, &mut s2c, now)?;
        while let Some(e) = client.poll_event() {
            let r = match e {
                Event::HostKey { .. } => {
                    client.accept_host_key();
                    Ok(())
                }
                Event::AuthReady => client.auth_publickey_sign("bench", "ssh-ed25519", &user),
                Event::Authenticated { .. } => client.open_session().map(|_| ()),
                Event::ChannelOpened(id) => {
                    cch = Some(id);
                    Ok(())
                }
                Event::AuthFailure { .. } => return Err(BenchError::AuthFailed),
                _ => Ok(()),
            };
            r?;
        }
        while let Some(e) = server.poll_event() {
            match e {
                Event::AuthRequest {
                    method: AuthMethodRequest::PublicKey { signed: true, .. },
                    ..
                } => server.auth_accept(),
                Event::AuthRequest { .. } => server.auth_reject(),
                Event::ChannelOpenRequest { channel, .. } => {
                    server.accept_channel(channel)?;
                    sch = Some(channel);
                }
                _ => {}
            }
        }
    }
    Err(BenchError::Unfinished)
}

fn feed(conn: &mut Connection, buf: &mut Vec<u8>, now: Instant) -> Result<(), BenchError> {
    let mut at = 0;
    while at < buf.len() {
        let input = buf.get_mut(at..).unwrap_or_default();
        let r = conn.handle_input(now, input)?;
        if r.consumed == 0 {
            break;
        }
        at += r.consumed;
    }
    buf.drain(..at);
    Ok(())
}

#[cfg(test)]
mod tests {
    // Seal and open through the crypto pool, against inline: here because
    // it drives two engines the way this benchmark does (net/ sits below).
    use super::establish;
    use crate::net::crypto_pool::{CryptoPool, CryptoThreads};
    use std::time::Instant;

    /// Sends packets of mixed sizes from a client engine to a server engine
    /// in one batch, sealing on `seal` threads and opening on `open`
    /// threads (1: inline in the engine); returns what the server received.
    fn transfer(cipher: &str, data: &[u8], seal: usize, open: usize) -> Vec<u8> {
        let (mut client, mut server, cch, sch) =
            establish(cipher, "hmac-sha2-256-etm@openssh.com").unwrap();
        client.set_batch_crypto(true);
        server.set_batch_crypto(true);
        let (mut seal_pool, mut open_pool) = (
            CryptoPool::new(CryptoThreads::Fixed(1)),
            CryptoPool::new(CryptoThreads::Fixed(1)),
        );
        let now = Instant::now();
        let mut wire = Vec::new();
        let sizes = [1, 40_000, 7, 32_768, 100_000, 13, 250_000, 3000];
        let mut at = 0;
        for s in sizes.iter().cycle() {
            if at == data.len() {
                break;
            }
            let slot = client
                .data_slot(std::time::Instant::now(), cch, None, &mut wire)
                .unwrap();
            let n = (*s).min(slot.max).min(data.len() - at);
            wire.extend_from_slice(&data[at..at + n]);
            client.finish_data_slot(slot, n, &mut wire);
            at += n;
        }
        client.seal_batch(&mut wire, &mut |jobs| {
            if seal > 1 {
                seal_pool.run_on(jobs, seal)
            }
        });
        client.poll_transmit(now, &mut wire);
        server
            .open_batch(&mut wire, &mut |jobs| {
                if open > 1 {
                    open_pool.run_on(jobs, open)
                }
            })
            .unwrap();
        let mut got = Vec::new();
        let mut at = 0;
        while at < wire.len() {
            let r = server.handle_input(now, &mut wire[at..]).unwrap();
            assert!(r.consumed > 0);
            let n = r.data.map_or(0, |d| {
                got.extend_from_slice(d.data);
                d.data.len()
            });
            at += r.consumed;
            server.consumed(sch, n);
        }
        assert_eq!(seal_pool.started(), usize::from(seal > 1));
        assert_eq!(open_pool.started(), usize::from(open > 1));
        got
    }

    #[test]
    fn pooled_seal_and_open_equal_inline() {
        let data: Vec<u8> = (0..700_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        for cipher in [
            "aes128-gcm@openssh.com",
            "chacha20-poly1305@openssh.com",
            "aes128-ctr",
        ] {
            for (seal, open) in [(1, 1), (2, 1), (1, 2), (2, 2)] {
                assert!(
                    transfer(cipher, &data, seal, open) == data,
                    "{cipher}: seal on {seal}, open on {open} threads"
                );
            }
        }
    }
}
