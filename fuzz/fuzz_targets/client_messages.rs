//! Arbitrary messages into an established client session: the client side
//! of session_messages. After key exchange, publickey authentication and a
//! session channel open in memory (common/pair.rs), the input becomes
//! payloads the server seals with its real send path (`seal_raw`, the
//! insecure cipher), so each one passes the client's packet layer and
//! reaches its transport, auth and connection handling (channel data,
//! requests, opens the server starts, global requests, re-key) and, with
//! compression on, its inflater. With bit 5 of the flag byte the bytes go
//! to the client unsealed instead: packet framing and decryption (length,
//! padding, MAC checks) on the insecure cipher. Nothing may panic; errors
//! are fine.
//!
//! Input: one flag byte (bit 0: compression negotiated, zlib@openssh.com,
//! or zstd@sluice.dev with bit 4; bit 1: payloads go through the server's
//! deflater; bit 2: the client opens in batches; bit 3: the input reaches
//! the client 7 bytes at a time; bit 5: raw bytes, not sealed), then
//! payloads, each a 2-byte big-endian length and that many bytes (the last
//! one takes what is left).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_proto::{Connection, Event};
use std::time::Instant;

#[path = "common/pair.rs"]
mod pair;
use pair::{establish, feed};

/// What a cautious client does with what the server starts: refuse
/// channel opens, global requests and channel requests that want a reply.
fn answer_client(client: &mut Connection) {
    while let Some(e) = client.poll_event() {
        match e {
            Event::ChannelOpenRequest { channel, .. } => {
                let _ = client.reject_channel(channel, 1, "fuzz");
            }
            Event::ChannelRequest {
                channel,
                want_reply: true,
                ..
            } => {
                let _ = client.channel_reply(channel, false);
            }
            Event::GlobalRequest {
                want_reply: true, ..
            } => client.answer_global(false, &[]),
            _ => {}
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, mut rest)) = data.split_first() else {
        return;
    };
    let now = Instant::now();
    let Some((mut client, mut server, _, channel)) = establish(
        match (flags & 1 != 0, flags & 16 != 0) {
            (false, _) => None,
            (true, false) => Some("zlib@openssh.com"),
            (true, true) => Some("zstd@sluice.dev"),
        },
        now,
    ) else {
        panic!("the in-memory session did not establish");
    };
    client.set_batch_crypto(flags & 4 != 0);
    let mut wire = Vec::new();
    if flags & 32 != 0 {
        wire.extend_from_slice(rest);
    } else {
        while !rest.is_empty() {
            let (len, body) = match rest {
                [a, b, tail @ ..] => (usize::from(u16::from_be_bytes([*a, *b])), tail),
                _ => (rest.len(), rest),
            };
            let (payload, tail) = body.split_at(len.min(body.len()));
            rest = tail;
            if !payload.is_empty() {
                server.seal_raw(payload, flags & 2 != 0, &mut wire);
            }
        }
    }
    let chunk = if flags & 8 != 0 { 7 } else { usize::MAX };
    if feed(&mut client, &mut wire, chunk, now, flags & 4 != 0) {
        answer_client(&mut client);
    }
    // Whatever state the input left: the sending side must cope too.
    let mut out = Vec::new();
    let _ = client.send_data(now, channel, None, b"request", &mut out);
    client.poll_transmit(now, &mut out);
});
