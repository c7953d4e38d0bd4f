//! Arbitrary messages into an established server session. A client and a
//! server on the insecure, deterministic provider (`crypto::insecure`) are
//! driven in memory through key exchange, publickey authentication and a
//! session channel open; then the input becomes payloads that the client
//! seals with its real send path (`seal_raw`, the insecure cipher), so each
//! one passes the server's packet layer and reaches auth, connection,
//! channel data and, with compression on, the inflater. Nothing may panic;
//! errors are fine.
//!
//! Input: one flag byte (bit 0: compression negotiated, zlib@openssh.com,
//! or zstd@sluice.dev with bit 4; bit 1:
//! payloads go through the client's deflater, else raw to the server's
//! inflater; bit 2: the server opens in batches; bit 3: the input reaches
//! the server 7 bytes at a time), then payloads, each a 2-byte big-endian
//! length and that many bytes (the last one takes what is left).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::time::Instant;

#[path = "common/pair.rs"]
mod pair;
use pair::{answer_server, establish, feed};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, mut rest)) = data.split_first() else {
        return;
    };
    let now = Instant::now();
    let Some((mut client, mut server, channel, _)) = establish(
        match (flags & 1 != 0, flags & 16 != 0) {
            (false, _) => None,
            (true, false) => Some("zlib@openssh.com"),
            (true, true) => Some("zstd@sluice.dev"),
        },
        now,
    ) else {
        panic!("the in-memory session did not establish");
    };
    server.set_batch_crypto(flags & 4 != 0);
    let mut wire = Vec::new();
    while !rest.is_empty() {
        let (len, body) = match rest {
            [a, b, tail @ ..] => (usize::from(u16::from_be_bytes([*a, *b])), tail),
            _ => (rest.len(), rest),
        };
        let (payload, tail) = body.split_at(len.min(body.len()));
        rest = tail;
        if !payload.is_empty() {
            client.seal_raw(payload, flags & 2 != 0, &mut wire);
        }
    }
    let chunk = if flags & 8 != 0 { 7 } else { usize::MAX };
    let mut server_channel = Some(channel);
    if feed(&mut server, &mut wire, chunk, now, flags & 4 != 0) {
        answer_server(&mut server, &mut server_channel);
    }
    // Whatever state the input left: the sending side must cope too.
    let mut out = Vec::new();
    let _ = server.send_data(now, channel, None, b"reply", &mut out);
    server.poll_transmit(now, &mut out);
});
