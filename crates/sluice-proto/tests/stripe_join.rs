//! Joining a striped session (PROTOCOL.md, "Channel striping"): the grant
//! obtained on a primary through the engine's global request, a secondary
//! connection with its own key exchange sending the join request, and the
//! server's admission: single use, bound to both session identifiers, to
//! the user and to the grant; forged, replayed and cross-session joins
//! refused. A server engine that does not decide joins answers FAILURE as
//! for any unknown method, and the client learns it.

mod common;

use common::stripe::*;
use common::*;
use sluice_proto::stripe::codec::{CarrierOpen, JoinRequest};
use sluice_proto::stripe::token::{Admission, JoinRefused, Joiner};
use sluice_proto::stripe::{CARRIER_CHANNEL, JOIN_METHOD};
use sluice_proto::Event;

#[test]
fn a_secondary_proves_membership_once_and_only_for_itself() {
    let mut primary = established();
    let (admission, grant) = ask_for_grant(&mut primary, 3, 7);
    let (mut admission, grant) = (admission.unwrap(), grant.unwrap());
    assert_eq!(grant.allowed, 3);
    let primary_sid = primary.client.session_id().unwrap().to_vec();
    assert_eq!(primary.server.session_id().unwrap(), &primary_sid[..]);
    let mut joiner = Joiner::new(&grant, &primary_sid);

    // A secondary: its own connection, key exchange (its own randomness)
    // and session identifier.
    let mut secondary = secondary_pair(1);
    let number = join_over(&mut secondary, &mut joiner);
    assert_eq!(number, 1);
    let secondary_sid = secondary.server.session_id().unwrap().to_vec();
    assert_eq!(secondary.client.session_id().unwrap(), &secondary_sid[..]);
    assert_ne!(secondary_sid, primary_sid);
    // This engine does not decide joins yet: FAILURE, as for any unknown
    // method; the client sees it and drops the connection.
    assert!(secondary
        .client_events
        .iter()
        .any(|e| matches!(e, Event::AuthFailure { partial: false, .. })));
    assert!(secondary.server.authenticated_user().is_none());
    assert!(!secondary
        .server_events
        .iter()
        .any(|e| matches!(e, Event::Authenticated { .. })));

    // What the client sent, rebuilt from the same grant: the runtime's
    // admission takes it with the server's view of that connection.
    let sent = Joiner::new(&grant, &primary_sid)
        .join(&secondary_sid, "alice")
        .unwrap();
    assert_eq!(sent.join_number, 1);
    // Not on another connection (a replay elsewhere), nor as another user.
    assert_eq!(
        admission.admit(&primary_sid, "alice", &sent),
        Err(JoinRefused::BadProof)
    );
    assert_eq!(
        admission.admit(&secondary_sid, "bob", &sent),
        Err(JoinRefused::WrongUser)
    );
    assert_eq!(admission.admit(&secondary_sid, "alice", &sent), Ok(1));
    // Single use: the same request again is refused.
    assert_eq!(
        admission.admit(&secondary_sid, "alice", &sent),
        Err(JoinRefused::NumberUsed)
    );
    assert_eq!(admission.admitted(), 1);

    // The client's next joins use the next numbers, then none are left.
    assert_eq!(joiner.join(b"s3", "alice").unwrap().join_number, 2);
    assert_eq!(joiner.join(b"s4", "alice").unwrap().join_number, 3);
    assert!(joiner.join(b"s5", "alice").is_none());
}

#[test]
fn forged_and_cross_session_joins_are_refused() {
    let primary_sid = [1u8; 32];
    let (mut a, grant) =
        Admission::issue(REF.to_vec(), SECRET, &primary_sid, "alice", 4, 4).unwrap();
    let secondary_sid = [2u8; 32];
    let good = Joiner::new(&grant, &primary_sid)
        .join(&secondary_sid, "alice")
        .unwrap();

    // One bit of the proof changed.
    let mut forged = good.clone();
    forged.proof[31] ^= 1;
    assert_eq!(
        a.admit(&secondary_sid, "alice", &forged),
        Err(JoinRefused::BadProof)
    );
    // A proof for another join number.
    let mut renumbered = good.clone();
    renumbered.join_number = 2;
    assert_eq!(
        a.admit(&secondary_sid, "alice", &renumbered),
        Err(JoinRefused::BadProof)
    );
    for n in [0, 5, u32::MAX] {
        let mut out = good.clone();
        out.join_number = n;
        assert_eq!(
            a.admit(&secondary_sid, "alice", &out),
            Err(JoinRefused::NumberOutOfRange)
        );
    }
    // The grant learned by someone without the primary's session id: a key
    // derived with another H_primary does not verify.
    let stolen = Joiner::new(&grant, &[9u8; 32])
        .join(&secondary_sid, "alice")
        .unwrap();
    assert_eq!(
        a.admit(&secondary_sid, "alice", &stolen),
        Err(JoinRefused::BadProof)
    );
    // Another session's grant (its own reference and secret) against this one.
    let (_, other) =
        Admission::issue(vec![0x43; 16], [0x18; 32], &[3u8; 32], "alice", 4, 4).unwrap();
    let cross = Joiner::new(&other, &[3u8; 32])
        .join(&secondary_sid, "alice")
        .unwrap();
    assert_eq!(
        a.admit(&secondary_sid, "alice", &cross),
        Err(JoinRefused::OtherSession)
    );
    // This session's reference with the other session's key.
    let mut mixed = cross.clone();
    mixed.session_ref = REF.to_vec();
    assert_eq!(
        a.admit(&secondary_sid, "alice", &mixed),
        Err(JoinRefused::BadProof)
    );
    // None of the refusals used anything up.
    assert_eq!(a.admitted(), 0);
    assert_eq!(a.admit(&secondary_sid, "alice", &good), Ok(1));
}

#[test]
fn grants_follow_the_limit_and_a_server_may_decline() {
    assert!(Admission::issue(REF.to_vec(), SECRET, b"h", "alice", 3, 0).is_none());
    assert!(Admission::issue(vec![1; 15], SECRET, b"h", "alice", 3, 3).is_none());
    let (_, g) = Admission::issue(REF.to_vec(), SECRET, b"h", "alice", 9, 3).unwrap();
    assert_eq!(g.allowed, 3);
    let (mut a, g) = Admission::issue(REF.to_vec(), SECRET, b"h", "alice", 255, 1000).unwrap();
    assert_eq!(g.allowed, 255);
    let mut j = Joiner::new(&g, b"h");
    for n in 1..=255u32 {
        let sid = n.to_be_bytes();
        let r = j.join(&sid, "alice").unwrap();
        assert_eq!(a.admit(&sid, "alice", &r), Ok(n));
    }
    assert!(j.join(b"x", "alice").is_none());

    // Through the engine: a server that declines (MaxStreams 1, a stock
    // server) answers FAILURE and the client stays on one connection.
    let mut p = established();
    let (admission, grant) = ask_for_grant(&mut p, 2, 0);
    assert!(admission.is_none() && grant.is_none());
    let up = pattern(1 << 16, 3);
    p.upload(&up);
    assert!(p.server_data == up);
}

#[test]
fn the_join_method_name_is_what_the_server_sees() {
    let r = JoinRequest {
        session_ref: REF.to_vec(),
        join_number: 1,
        proof: [0; 32],
    };
    assert_eq!(r.to_method().name(), JOIN_METHOD);
}

#[test]
fn a_server_that_decides_joins_admits_each_secondary_once() {
    let mut primary = established();
    let (admission, grant) = ask_for_grant(&mut primary, 2, 7);
    let (mut admission, grant) = (admission.unwrap(), grant.unwrap());
    let primary_sid = primary.client.session_id().unwrap().to_vec();
    let mut joiner = Joiner::new(&grant, &primary_sid);
    for n in 1..=2u64 {
        let mut s = secondary_pair(n);
        s.server.enable_stripe_join();
        assert_eq!(
            join_deciding(&mut s, &mut joiner, Some(&mut admission)),
            n as u32
        );
        assert!(s
            .client_events
            .iter()
            .any(|e| matches!(e, Event::Authenticated { user } if user == "alice")));
        assert_eq!(s.server.authenticated_user(), Some("alice"));
        // A joined secondary carries data like any connection.
        s.client_channel = Some(
            s.client
                .open_channel(
                    CARRIER_CHANNEL,
                    &CarrierOpen { striped_channel: 0 }.encode(),
                )
                .unwrap(),
        );
        s.drive().unwrap();
        assert!(s.server_events.iter().any(|e| matches!(e,
            Event::ChannelOpenRequest { channel_type, .. } if channel_type == CARRIER_CHANNEL)));
    }
    assert_eq!(admission.admitted(), 2);

    // A third join made again with the first join number (the grant
    // replayed): refused,
    // and the connection stays unauthenticated.
    let mut s = secondary_pair(3);
    s.server.enable_stripe_join();
    let mut replay = Joiner::new(&grant, &primary_sid);
    join_deciding(&mut s, &mut replay, Some(&mut admission));
    assert!(s
        .client_events
        .iter()
        .any(|e| matches!(e, Event::AuthFailure { partial: false, .. })));
    assert!(s.server.authenticated_user().is_none());
    assert_eq!(admission.admitted(), 2);

    // A join under another session's grant: refused as well.
    let (_, other) =
        Admission::issue(vec![0x43; 16], [0x18; 32], &[3u8; 32], "alice", 4, 4).unwrap();
    let mut s = secondary_pair(4);
    s.server.enable_stripe_join();
    join_deciding(
        &mut s,
        &mut Joiner::new(&other, &[3u8; 32]),
        Some(&mut admission),
    );
    assert!(s.server.authenticated_user().is_none());
}
