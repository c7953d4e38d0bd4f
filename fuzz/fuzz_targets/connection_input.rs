//! Raw bytes from a hostile peer into a server and a client connection:
//! the version line, the packet decoder (length, padding, MAC checks) and
//! every message parser behind them. Nothing may panic; errors are fine.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_proto::crypto::hostkey::KeyPair;
use sluice_proto::crypto::SystemRng;
use sluice_proto::{ClientConfig, Connection, ServerConfig};
use std::sync::Arc;
use std::time::Instant;

fn feed(mut conn: Connection, data: &[u8]) {
    let mut buf = data.to_vec();
    let mut start = 0;
    let now = Instant::now();
    while start < buf.len() {
        match conn.handle_input(now, &mut buf[start..]) {
            Ok(r) if r.consumed > 0 => start += r.consumed,
            _ => break,
        }
        while conn.poll_event().is_some() {}
    }
    let mut out = Vec::new();
    conn.poll_transmit(now, &mut out);
}

fuzz_target!(|data: &[u8]| {
    // A valid banner first half the time, so the fuzzer reaches packets quickly.
    let mut input = Vec::with_capacity(data.len() + 32);
    if data.first().is_some_and(|b| b & 1 == 0) {
        input.extend_from_slice(b"SSH-2.0-fuzz\r\n");
    }
    input.extend_from_slice(data);
    let key = KeyPair::from_ed25519_seed(&[3u8; 32]).expect("seed");
    let server = ServerConfig {
        host_keys: vec![Arc::new(key)],
        auth_methods: vec!["publickey".into()],
        max_auth_tries: 6,
        ..ServerConfig::default()
    };
    feed(Connection::server(server, Box::new(SystemRng)), &input);
    feed(
        Connection::client(ClientConfig::default(), Box::new(SystemRng)),
        &input,
    );
});
