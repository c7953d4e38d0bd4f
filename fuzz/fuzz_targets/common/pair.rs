//! A client and a server on the insecure, deterministic provider
//! (`crypto::insecure`), driven in memory through key exchange, publickey
//! authentication and a session channel open: the starting point of the
//! fuzz targets that feed one engine bytes after key exchange
//! (session_messages: the server; client_messages: the client).

// Each target uses only part of this.
#![allow(dead_code)]

use sluice_proto::crypto::insecure::{self, InsecureKey, SeededRng};
use sluice_proto::transport::compress;
use sluice_proto::transport::CryptoJob;
use sluice_proto::{ChannelId, ClientConfig, Connection, Event, ServerConfig};
use std::sync::Arc;
use std::time::Instant;

/// Feeds `buf` to `conn` `chunk` bytes at a time (more when a packet needs
/// it), answering the server's events; stops at the first error.
pub fn feed(
    conn: &mut Connection,
    buf: &mut [u8],
    chunk: usize,
    now: Instant,
    batch: bool,
) -> bool {
    let mut start = 0;
    let mut avail = chunk.min(buf.len());
    while start < buf.len() {
        let end = start.saturating_add(avail).min(buf.len());
        let window = &mut buf[start..end];
        if batch
            && conn
                .open_batch(window, &mut |jobs| jobs.iter_mut().for_each(CryptoJob::run))
                .is_err()
        {
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
pub fn answer_server(server: &mut Connection, channel: &mut Option<ChannelId>) {
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

/// Kex, auth and a channel open in memory: (client, server, the server's
/// channel id, the client's); None if the scenario broke (it never does
/// with a correct engine).
pub fn establish(
    compress: Option<&str>,
    now: Instant,
) -> Option<(Connection, Connection, ChannelId, ChannelId)> {
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
    let (mut opened, mut server_channel) = (None, None);
    for _ in 0..64 {
        client.poll_transmit(now, &mut c2s);
        server.poll_transmit(now, &mut s2c);
        if opened.is_some() && server_channel.is_some() && c2s.is_empty() && s2c.is_empty() {
            return Some((client, server, server_channel?, opened?));
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
                Event::AuthReady => client
                    .auth_publickey_sign("fuzz", insecure::NAME, &user)
                    .ok()?,
                Event::Authenticated { .. } => {
                    client.open_session().ok()?;
                }
                Event::ChannelOpened(id) => opened = Some(id),
                _ => {}
            }
        }
        answer_server(&mut server, &mut server_channel);
    }
    None
}
