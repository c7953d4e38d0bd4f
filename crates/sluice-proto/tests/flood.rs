//! A peer that asks faster than it reads: replies queue up to a cap, then
//! the connection ends with a DISCONNECT naming why; an honest burst of
//! requests is answered in full.

mod common;
use common::*;
use sluice_proto::wire::{MsgNum, Writer};
use sluice_proto::{Error, FloodKind, Phase, Violation};

/// `n` messages of a number nobody defines (each answered by the engine
/// itself with UNIMPLEMENTED), sealed by the client as if it sent them all
/// without reading anything.
fn requests(p: &mut Pair, n: usize) -> Vec<u8> {
    numbered(p, 200, n)
}

/// `n` messages numbered `num`, sealed by the client.
fn numbered(p: &mut Pair, num: u8, n: usize) -> Vec<u8> {
    let mut wire = Vec::new();
    let mut payload = Vec::new();
    Writer::new(&mut payload).u8(num).utf8("flood");
    for _ in 0..n {
        p.client.seal_raw(&payload, true, &mut wire);
    }
    wire
}

#[test]
fn an_honest_burst_is_answered() {
    let mut p = Pair::default_algs();
    p.establish();
    let mut wire = requests(&mut p, 2000);
    let mut data = Vec::new();
    Pair::feed(&mut p.server, &mut wire, usize::MAX, p.now, &mut data, true).unwrap();
    assert!(!p.server.is_closed());
    assert!(wire.is_empty());
}

#[test]
fn replies_past_the_cap_end_the_connection() {
    let mut p = Pair::default_algs();
    p.establish();
    // Each reply costs its bytes and a per-payload overhead: 100k of them
    // are far past the 4 MiB cap.
    let mut wire = requests(&mut p, 100_000);
    let mut data = Vec::new();
    let r = Pair::feed(&mut p.server, &mut wire, usize::MAX, p.now, &mut data, true);
    assert!(p.server.is_closed());
    assert!(matches!(r, Err(Error::Closed) | Ok(())), "{r:?}");
    // Its DISCONNECT says why, and the client reports it.
    let mut out = Vec::new();
    p.server.poll_transmit(p.now, &mut out);
    let mut seen = Vec::new();
    let r = Pair::feed(&mut p.client, &mut out, usize::MAX, p.now, &mut seen, true);
    let msg = format!("{r:?}");
    assert!(msg.contains("too many replies queued for sending"), "{msg}");
}

/// An unencrypted packet with `payload` (RFC 4253 6, no MAC yet).
fn plain_packet(payload: &[u8]) -> Vec<u8> {
    let mut pad = 8 - (5 + payload.len()) % 8;
    if pad < 4 {
        pad += 8;
    }
    let mut p = ((1 + payload.len() + pad) as u32).to_be_bytes().to_vec();
    p.push(pad as u8);
    p.extend_from_slice(payload);
    p.extend(std::iter::repeat_n(0u8, pad));
    p
}

/// Before the client's KEXINIT only DISCONNECT, IGNORE, UNIMPLEMENTED and
/// DEBUG are let through; the rest of the transport range (5-19) ends the
/// connection instead of being answered.
#[test]
fn only_generic_messages_before_kexinit() {
    for (num, ok) in [(2u8, true), (4, true), (8, false), (19, false), (5, false)] {
        let mut p = Pair::default_algs();
        let mut wire = b"SSH-2.0-flood_test\r\n".to_vec();
        let payload = match num {
            4 => vec![4, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            _ => vec![num, 0, 0, 0, 0],
        };
        wire.extend(plain_packet(&payload));
        let mut data = Vec::new();
        let r = Pair::feed(&mut p.server, &mut wire, usize::MAX, p.now, &mut data, true);
        assert_eq!(r.is_ok(), ok, "message {num}: {r:?}");
        if !ok {
            let want = Violation::UnexpectedMessage {
                num: MsgNum(num),
                state: Phase::BeforeKexInit,
            };
            assert_eq!(r, Err(Error::Protocol(want)));
        }
    }
}

/// Before authentication a stranger gets a few UNIMPLEMENTED answers to
/// numbers nobody defines, then the connection ends.
#[test]
fn unknown_messages_before_auth_are_bounded() {
    let mut p = Pair::default_algs();
    p.accepted = Vec::new(); // every key refused: authentication never ends
    for _ in 0..200 {
        p.step().unwrap();
        if p.client_events
            .iter()
            .any(|e| matches!(e, sluice_proto::Event::AuthFailure { .. }))
        {
            break;
        }
    }
    assert!(!p.server.is_closed());
    let mut wire = numbered(&mut p, 15, 33);
    let mut data = Vec::new();
    let r = Pair::feed(&mut p.server, &mut wire, usize::MAX, p.now, &mut data, true);
    assert_eq!(
        r,
        Err(Error::Protocol(Violation::Flood(
            FloodKind::UnknownBeforeAuth
        )))
    );
    assert!(p.server.is_closed());
}

/// Key exchange messages outside an exchange are protocol errors: a
/// KEX_ECDH_INIT after the exchange finished must not make the server
/// agree on a new secret or sign anything.
#[test]
fn kex_messages_outside_a_key_exchange_are_refused() {
    for num in [30u8, 31, 21] {
        let mut p = Pair::default_algs();
        p.establish();
        let mut payload = vec![num];
        if num != 21 {
            payload.extend_from_slice(&32u32.to_be_bytes());
            payload.extend_from_slice(&[9u8; 32]);
        }
        let mut wire = Vec::new();
        p.client.seal_raw(&payload, true, &mut wire);
        let mut data = Vec::new();
        let r = Pair::feed(&mut p.server, &mut wire, usize::MAX, p.now, &mut data, true);
        let want = if num == 21 {
            Violation::NewKeysTooEarly
        } else {
            Violation::UnexpectedMessage {
                num: MsgNum(num),
                state: Phase::OutsideKex,
            }
        };
        assert_eq!(r, Err(Error::Protocol(want)), "message {num}");
        assert!(p.server.is_closed());
    }
}
