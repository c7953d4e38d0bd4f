//! Fuzz target: arbitrary bytes into the decoders of channel striping
//! (`sluice_proto::stripe`, PROTOCOL.md "Channel striping"): the global
//! request and grant, the join method's fields, a carrier's open data, a
//! chunk and an acknowledgement; then as a script of chunks and
//! acknowledgements from a hostile peer into a `Reassembler` and a
//! `StripeSender`. Nothing may panic; whatever decodes must survive
//! `decode(encode(x)) == x`; the receiver never holds more than its budget
//! nor the sender more than its bound.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_proto::stripe::codec::{
    check_stripe_channel_request, Ack, CarrierOpen, Chunk, JoinRequest, StripeGrant, StripeWanted,
};
use sluice_proto::stripe::reassemble::Reassembler;
use sluice_proto::stripe::send::StripeSender;
use sluice_proto::stripe::MAX_UNACKED_CHUNKS;

fn decoders(data: &[u8]) {
    if let Ok(w) = StripeWanted::decode(data) {
        assert_eq!(StripeWanted::decode(&w.encode()), Ok(w));
    }
    if let Ok(g) = StripeGrant::decode(data) {
        assert_eq!(StripeGrant::decode(&g.encode()).as_ref(), Ok(&g));
    }
    if let Ok(j) = JoinRequest::decode(data) {
        assert_eq!(JoinRequest::decode(&j.encode()).as_ref(), Ok(&j));
        assert_eq!(JoinRequest::from_method(&j.to_method()), Some(Ok(j)));
    }
    if let Ok(c) = CarrierOpen::decode(data) {
        assert_eq!(CarrierOpen::decode(&c.encode()), Ok(c));
    }
    if let Ok(a) = Ack::decode(data) {
        assert_eq!(Ack::decode(&a.encode()), Ok(a));
    }
    if let Ok(c) = Chunk::decode(data) {
        let mut v = Vec::new();
        c.encode(&mut v);
        assert_eq!(Chunk::decode(&v), Ok(c));
    }
    let _ = check_stripe_channel_request(data);
}

/// Length-prefixed records (1-byte kind, 2-byte length): chunks into a
/// receiver, acknowledgements into a sender that keeps filling carriers.
fn script(data: &[u8]) {
    const BUDGET: usize = 1 << 16;
    let mut r = Reassembler::new(BUDGET);
    let _ = r.poll_ack();
    let mut s = StripeSender::new(1 << 16, 1 + usize::from(data.first().copied().unwrap_or(0)));
    let carriers = [s.add_carrier(), s.add_carrier()];
    s.push(&[0x5a; 1 << 16]);
    let mut slot = vec![0u8; 4096];
    let mut at = 1;
    while let Some(head) = data.get(at..at + 3) {
        let (kind, len) = (head[0], usize::from(u16::from_be_bytes([head[1], head[2]])));
        let Some(body) = data.get(at + 3..at + 3 + len) else {
            break;
        };
        at += 3 + len;
        match kind % 6 {
            0 => {
                if let Ok(c) = Chunk::decode(body) {
                    if r.on_chunk(c).is_err() {
                        return;
                    }
                }
            }
            1 => r.consume(len),
            2 => {
                let _ = r.poll_ack();
                let _ = r.on_eof();
            }
            3 => {
                if let Ok(a) = Ack::decode(body) {
                    let _ = s.on_ack(a);
                }
            }
            4 => {
                let c = carriers[len % 2];
                let room = 1 + len % slot.len();
                let _ = s.fill(c, &mut slot[..room]);
            }
            _ => s.carrier_lost(carriers[len % 2]),
        }
        assert!(r.held() <= BUDGET);
        assert!(r.ranges_out_of_order() <= MAX_UNACKED_CHUNKS);
        assert!(s.retained() <= 1 << 16);
        assert!(s.unacked_chunks() <= MAX_UNACKED_CHUNKS);
        let _ = r.readable();
    }
}

fuzz_target!(|data: &[u8]| {
    decoders(data);
    script(data);
});
