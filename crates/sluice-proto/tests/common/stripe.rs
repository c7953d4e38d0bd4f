//! Striping helpers shared by the stripe tests: a primary's grant through
//! the engine's global request, secondary connections to the same server
//! with randomness of their own, and joining them.

use super::*;
use sluice_proto::crypto::hostkey::KeyPair;
use sluice_proto::stripe::codec::{StripeGrant, StripeWanted};
use sluice_proto::stripe::token::{Admission, Joiner};
use sluice_proto::stripe::STRIPE_REQUEST;
use sluice_proto::Event;
use std::sync::Arc;

pub const REF: [u8; 16] = [0x42; 16];
pub const SECRET: [u8; 32] = [0x17; 32];

pub fn established() -> Pair {
    let mut p = Pair::default_algs();
    p.establish();
    p.client_events.clear();
    p.server_events.clear();
    p
}

/// The client asks for `wanted` secondaries; the server's runtime (here)
/// grants up to `max` of them, or declines when `max` is 0.
pub fn ask_for_grant(
    p: &mut Pair,
    wanted: u32,
    max: u32,
) -> (Option<Admission>, Option<StripeGrant>) {
    let data = StripeWanted {
        secondaries: wanted,
    }
    .encode();
    p.client
        .global_request(STRIPE_REQUEST, true, &data)
        .unwrap();
    p.drive().unwrap();
    let asked = p.server_events.iter().find_map(|e| match e {
        Event::GlobalRequest { name, data, .. } if name == STRIPE_REQUEST => Some(data.clone()),
        _ => None,
    });
    let asked = StripeWanted::decode(&asked.expect("the runtime sees the request")).unwrap();
    let sid = p.server.session_id().unwrap().to_vec();
    let issued = Admission::issue(REF.to_vec(), SECRET, &sid, "alice", asked.secondaries, max);
    match &issued {
        Some((_, grant)) => p.server.answer_global(true, &grant.encode()),
        None => p.server.answer_global(false, &[]),
    }
    p.drive().unwrap();
    let reply = p.client_events.iter().find_map(|e| match e {
        Event::GlobalReply { success, data, .. } => Some((*success, data.clone())),
        _ => None,
    });
    let (success, data) = reply.expect("a reply");
    let grant = success.then(|| StripeGrant::decode(&data).unwrap());
    (issued.map(|(a, _)| a), grant)
}

/// A fresh connection to the same server (same host key), with
/// randomness of its own.
pub fn secondary_pair(n: u64) -> Pair {
    let algs = (
        "curve25519-sha256",
        "ssh-ed25519",
        "aes128-gcm@openssh.com",
        "hmac-sha2-256",
    );
    let cfg = || config(algs.0, algs.1, algs.2, algs.3);
    let user_key = Arc::new(KeyPair::from_ed25519_seed(&[9u8; 32]).unwrap());
    Pair::with(
        cfg(),
        cfg(),
        host_key_for(algs.1),
        user_key,
        algs.1,
        test_seed() ^ (0x5ec0_0d << n),
    )
}

/// Drives a fresh connection through its key exchange; at AuthReady the
/// client sends the join request instead of authenticating. With
/// `admission`, the server's runtime decides joins with it.
pub fn join_over(s: &mut Pair, joiner: &mut Joiner) -> u32 {
    join_deciding(s, joiner, None)
}

pub fn join_deciding(
    s: &mut Pair,
    joiner: &mut Joiner,
    mut admission: Option<&mut Admission>,
) -> u32 {
    let mut number = 0;
    for _ in 0..1000 {
        let (c0, s0) = (s.c2s.len(), s.s2c.len());
        s.client.poll_transmit(s.now, &mut s.c2s);
        s.server.poll_transmit(s.now, &mut s.s2c);
        let mut moved = s.c2s.len() != c0 || s.s2c.len() != s0;
        s.now += s.latency;
        Pair::feed(
            &mut s.server,
            &mut s.c2s,
            usize::MAX,
            s.now,
            &mut Vec::new(),
            true,
        )
        .unwrap();
        Pair::feed(
            &mut s.client,
            &mut s.s2c,
            usize::MAX,
            s.now,
            &mut Vec::new(),
            true,
        )
        .unwrap();
        while let Some(e) = s.client.poll_event() {
            moved = true;
            match &e {
                Event::HostKey { .. } => s.client.accept_host_key(),
                Event::AuthReady => number = s.client.auth_stripe_join("alice", joiner).unwrap(),
                _ => {}
            }
            s.client_events.push(e);
        }
        while let Some(e) = s.server.poll_event() {
            moved = true;
            if let (Event::StripeJoinRequest { user, join }, Some(a)) = (&e, admission.as_mut()) {
                let sid = s.server.session_id().unwrap().to_vec();
                match a.admit(&sid, user, join) {
                    Ok(_) => s.server.auth_accept(),
                    Err(_) => s.server.auth_reject(),
                }
            }
            s.server_events.push(e);
        }
        if !moved {
            return number;
        }
    }
    panic!("no quiescence");
}
