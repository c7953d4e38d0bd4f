//! A striped upload through real engines (PROTOCOL.md, "Channel
//! striping"): a primary and two secondaries joined through the engine,
//! one carrier on each connection, chunks written by `StripeSender::fill`
//! straight into each carrier's data slot, read back one CHANNEL_DATA
//! message per chunk into a `Reassembler`, acknowledgements as
//! `stripe-ack-v00@sluice.dev` channel requests on the primary's channel.
//! Every connection keeps its own window; one secondary dies mid-stream
//! and the stream still arrives byte for byte (SHA-256).

mod common;

use aws_lc_rs::digest::{digest, SHA256};
use common::stripe::*;
use common::*;
use sluice_proto::msg::ChannelRequestKind;
use sluice_proto::stripe::codec::{Ack, CarrierOpen, Chunk};
use sluice_proto::stripe::reassemble::Reassembler;
use sluice_proto::stripe::send::{CarrierId, StripeSender};
use sluice_proto::stripe::token::Joiner;
use sluice_proto::stripe::{ACK_REQUEST, CARRIER_CHANNEL, DEFAULT_CHUNK};
use sluice_proto::{ChannelId, Connection, Event};
use std::time::Instant;

/// Bytes a connection's socket takes per trip.
const SOCKET_ROOM: usize = 192 * 1024;

/// One connection of the session with its carrier.
struct Link {
    p: Pair,
    /// The carrier: client's and server's numbers, once open.
    client_ch: Option<ChannelId>,
    server_ch: Option<ChannelId>,
    id: CarrierId,
    alive: bool,
}

/// Feeds `buf` to `conn` one packet at a time, handing each CHANNEL_DATA
/// (channel, bytes) to `data` and giving its window back.
fn feed(
    conn: &mut Connection,
    buf: &mut Vec<u8>,
    now: Instant,
    data: &mut dyn FnMut(ChannelId, &[u8]),
) {
    let mut start = 0;
    loop {
        let r = conn.handle_input(now, &mut buf[start..]).unwrap();
        let n = r.consumed;
        let got = r.data.map(|d| {
            data(d.channel, d.data);
            (d.channel, d.data.len())
        });
        if let Some((ch, len)) = got {
            conn.consumed(ch, len);
        }
        if n == 0 {
            break;
        }
        start += n;
    }
    buf.drain(..start);
}

#[test]
fn a_stream_striped_over_three_connections_survives_losing_one() {
    let mut primary = established();
    let (admission, grant) = ask_for_grant(&mut primary, 2, 7);
    let (mut admission, grant) = (admission.unwrap(), grant.unwrap());
    let mut joiner = Joiner::new(&grant, primary.client.session_id().unwrap());
    let session = primary.server_channel.unwrap();
    let client_session = primary.client_channel.unwrap();

    let mut sender = StripeSender::new(8 << 20, DEFAULT_CHUNK);
    let budget = 2 << 20;
    let mut receiver = Reassembler::new(budget);
    let mut links = vec![Link {
        p: primary,
        client_ch: None,
        server_ch: None,
        id: sender.add_carrier(),
        alive: true,
    }];
    for n in 1..=2u64 {
        let mut s = secondary_pair(n);
        s.server.enable_stripe_join();
        join_deciding(&mut s, &mut joiner, Some(&mut admission));
        assert_eq!(s.server.authenticated_user(), Some("alice"));
        links.push(Link {
            p: s,
            client_ch: None,
            server_ch: None,
            id: sender.add_carrier(),
            alive: true,
        });
    }
    let open = CarrierOpen {
        striped_channel: session.0,
    }
    .encode();
    for l in &mut links {
        l.p.client.open_channel(CARRIER_CHANNEL, &open).unwrap();
    }

    let source = pattern(6 << 20, 42);
    let mut pushed = 0;
    let mut out = Vec::new();
    let mut killed = false;
    let mut lost = 0;
    let mut carried = [0usize; 3];
    let mut eof_sent = false;
    for round in 0..200_000 {
        assert!(round < 199_999, "stalled: received {}", receiver.received());
        // The receiver (server) acknowledges on the primary's channel.
        if let Some(a) = receiver.poll_ack() {
            let req = ChannelRequestKind::Other {
                name: ACK_REQUEST.into(),
                data: a.encode(),
            };
            links[0]
                .p
                .server
                .channel_request(session, req, false)
                .unwrap();
        }
        // The sending program writes into the striped stream.
        pushed += sender.push(&source[pushed..]);
        if pushed == source.len() {
            sender.finish();
        }
        // Each carrier takes chunks while its own window allows and its
        // socket has room (here: what one TCP connection moves in a trip).
        for l in links.iter_mut().filter(|l| l.alive) {
            let Some(ch) = l.client_ch else { continue };
            let now = l.p.now;
            while l.p.c2s.len() < SOCKET_ROOM {
                let Some(slot) = l.p.client.data_slot(now, ch, None, &mut l.p.c2s) else {
                    break;
                };
                let end = slot.data_at + slot.max;
                l.p.c2s.resize(end, 0);
                let n = sender
                    .fill(l.id, &mut l.p.c2s[slot.data_at..end])
                    .unwrap_or(0);
                l.p.client.finish_data_slot(slot, n, &mut l.p.c2s);
                if n == 0 {
                    break;
                }
            }
        }
        // A third of the way, the second secondary's TCP connection dies:
        // what it has sealed and not yet delivered is lost.
        if !killed && receiver.received() > (2 << 20) && links[2].p.c2s.len() > 64 * 1024 {
            killed = true;
            let l = &mut links[2];
            l.alive = false;
            lost = l.p.c2s.len();
            l.p.c2s.clear();
            sender.carrier_lost(l.id);
        }
        if sender.all_acked() && !eof_sent {
            eof_sent = true;
            links[0].p.client.send_eof(client_session).unwrap();
        }
        // One trip each way on every connection.
        for (i, l) in links.iter_mut().enumerate().filter(|(_, l)| l.alive) {
            let p = &mut l.p;
            let carried = &mut carried[i];
            p.client.poll_transmit(p.now, &mut p.c2s);
            p.server.poll_transmit(p.now, &mut p.s2c);
            p.now += p.latency;
            let carrier = l.server_ch;
            feed(&mut p.server, &mut p.c2s, p.now, &mut |ch, data| {
                assert_eq!(Some(ch), carrier, "data only on carriers");
                *carried += data.len();
                receiver.on_chunk(Chunk::decode(data).unwrap()).unwrap();
            });
            feed(&mut p.client, &mut p.s2c, p.now, &mut |_, _| {
                panic!("no data down")
            });
            while let Some(e) = p.server.poll_event() {
                match e {
                    Event::ChannelOpenRequest {
                        channel,
                        channel_type,
                        data,
                    } => {
                        assert_eq!(channel_type, CARRIER_CHANNEL);
                        assert_eq!(
                            CarrierOpen::decode(&data).unwrap().striped_channel,
                            session.0
                        );
                        p.server.accept_channel(channel).unwrap();
                        l.server_ch = Some(channel);
                    }
                    Event::ChannelEof(ch) if ch == session => {
                        receiver.on_eof().unwrap();
                    }
                    _ => {}
                }
            }
            while let Some(e) = p.client.poll_event() {
                match e {
                    Event::ChannelOpened(ch) => l.client_ch = Some(ch),
                    Event::ChannelRequest {
                        request: ChannelRequestKind::Other { name, data },
                        ..
                    } if name == ACK_REQUEST => sender.on_ack(Ack::decode(&data).unwrap()).unwrap(),
                    _ => {}
                }
            }
        }
        // The consumer (the command's stdin) takes what is in order.
        let r = receiver.readable();
        out.extend_from_slice(r);
        let n = r.len();
        receiver.consume(n);
        assert!(receiver.held() <= budget);
        if receiver.is_finished() {
            break;
        }
    }
    assert!(killed && eof_sent);
    assert!(lost > 0);
    // Every connection carried a share, the lost one's chunks went again.
    assert!(carried.iter().all(|&c| c > 256 * 1024), "{carried:?}");
    assert!(!sender.is_stranded());
    assert_eq!(out.len(), source.len());
    assert_eq!(
        digest(&SHA256, &out).as_ref(),
        digest(&SHA256, &source).as_ref()
    );
}
