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
use sluice_proto::crypto::insecure::{self, InsecureKey, SeededRng};
use sluice_proto::transport::compress;
use sluice_proto::transport::CryptoJob;
use sluice_proto::{ChannelId, ClientConfig, Connection, Event, ServerConfig};
use std::sync::Arc;
use std::time::Instant;

/// Feeds `buf` to `conn` `chunk` bytes at a time (more when a packet needs
/// it), answering the server's events; stops at the first error.
fn feed(conn: &mut Connection, buf: &mut [u8], chunk: usize, now: Instant, batch: bool) -> bool {
    let mut start = 0;
    let mut avail = chunk.min(buf.len());
    while start < buf.len() {
        let end = start.saturating_add(avail).min(buf.len());
        let window = &mut buf[start..end];
        if batch && conn.open_batch(window, &mut |jobs| jobs.iter_mut().for_each(CryptoJob::run)).is_err() {
            return false;
        }
        let (n, data) = match conn.handle_input(now, window) {
            Ok(r) => (r.consumed, r.data.map(|d| (d.channel, d.data.len()))),
            Err(_) => return false,
        };
        if let Some((ch, len)) = data {
            conn.consumed(ch, len);
        }
        if n == 0 {
            if end == buf.len() {
                break;
            }
            avail = avail.saturating_add(chunk);
            continue;
        }
        start += n;
        avail = chunk;
    }
    true
}

/// The server's side of the scenario: accept what a cooperative server would.
fn answer_server(server: &mut Connection, channel: &mut Option<ChannelId>) {
    while let Some(e) = server.poll_event() {
        match e {
            Event::AuthRequest { .. } => server.auth_accept(),
            Event::ChannelOpenRequest { channel: id, .. } => {
                if server.accept_channel(id).is_ok() {
                    *channel = Some(id);
                }
            }
            Event::ChannelRequest {
                channel: id,
                want_reply: true,
                ..
            } => {
                let _ = server.channel_reply(id, true);
            }
            _ => {}
        }
    }
}

/// Kex, auth and a channel open in memory; None if the scenario broke
/// (it never does with a correct engine).
fn establish(
    compress: Option<&str>,
    now: Instant,
) -> Option<(Connection, Connection, ChannelId)> {
    let mut common = insecure::config();
    // One engine (zlib's or zstd's inflater gets the input), or none.
    common.compression_engines = compress
        .and_then(|name| compress::find(&compress::default_engines(), name))
        .into_iter()
        .collect();
    common.prefer_compression = compress.is_some();
    let mut client = Connection::client(
        ClientConfig {
            common: common.clone(),
        },
        Box::new(SeededRng::new(1)),
    );
    let mut server = Connection::server(
        ServerConfig {
            common,
            host_keys: vec![Arc::new(InsecureKey::new([7; 32]))],
            auth_methods: vec!["publickey".into()],
            max_auth_tries: 6,
            banner: None,
        },
        Box::new(SeededRng::new(2)),
    );
    let user = InsecureKey::new([9; 32]);
    let (mut c2s, mut s2c) = (Vec::new(), Vec::new());
    let (mut opened, mut server_channel) = (false, None);
    for _ in 0..64 {
        client.poll_transmit(now, &mut c2s);
        server.poll_transmit(now, &mut s2c);
        if opened && server_channel.is_some() && c2s.is_empty() && s2c.is_empty() {
            return Some((client, server, server_channel?));
        }
        if !feed(&mut server, &mut c2s, usize::MAX, now, false)
            || !feed(&mut client, &mut s2c, usize::MAX, now, false)
        {
            return None;
        }
        c2s.clear();
        s2c.clear();
        while let Some(e) = client.poll_event() {
            match e {
                Event::HostKey { .. } => client.accept_host_key(),
                Event::AuthReady => client.auth_publickey_sign("fuzz", insecure::NAME, &user).ok()?,
                Event::Authenticated { .. } => {
                    client.open_session().ok()?;
                }
                Event::ChannelOpened(_) => opened = true,
                _ => {}
            }
        }
        answer_server(&mut server, &mut server_channel);
    }
    None
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, mut rest)) = data.split_first() else {
        return;
    };
    let now = Instant::now();
    let Some((mut client, mut server, channel)) = establish(
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
