//! Each way a peer misbehaves ends the connection with its own
//! [`Violation`] variant, which the runtime matches on (never on the text),
//! the DISCONNECT reason RFC 4253 11.1 gives it, and a readable message.
//! The misbehaving end is a real engine made to send what it never would
//! (`seal_raw`, `force_*`: the `test-hooks` feature).

mod common;
use common::*;
use sluice_proto::msg::DisconnectReason;
use sluice_proto::msg::{ChannelOpenConfirmation, ChannelRequest, ChannelRequestKind};
use sluice_proto::wire::{MsgNum, Writer};
use sluice_proto::{Config, Connection, Error, Event, FloodKind, Phase, Violation};

/// Seals `payload` as the client's next packet and feeds it to the server.
fn client_sends(p: &mut Pair, payload: &[u8]) -> Result<(), Error> {
    let mut wire = Vec::new();
    p.client.seal_raw(payload, false, &mut wire);
    feed(&mut p.server, &mut wire, p.now)
}

/// Seals `payload` as the server's next packet and feeds it to the client.
fn server_sends(p: &mut Pair, payload: &[u8]) -> Result<(), Error> {
    let mut wire = Vec::new();
    p.server.seal_raw(payload, false, &mut wire);
    let now = p.now;
    let mut sink = Vec::new();
    Pair::feed(&mut p.client, &mut wire, usize::MAX, now, &mut sink, true)
}

fn feed(conn: &mut Connection, wire: &mut Vec<u8>, now: std::time::Instant) -> Result<(), Error> {
    let mut sink = Vec::new();
    Pair::feed(conn, wire, usize::MAX, now, &mut sink, true)
}

fn violation(r: Result<(), Error>) -> Violation {
    match r {
        Err(Error::Protocol(v)) => v,
        other => panic!("expected a protocol violation, got {other:?}"),
    }
}

/// The DISCONNECT the failed end queued reaches the other with the
/// violation's reason code and words.
fn peer_hears(
    failed: &mut Connection,
    other: &mut Connection,
    v: &Violation,
    now: std::time::Instant,
) {
    let mut out = Vec::new();
    failed.poll_transmit(now, &mut out);
    let mut sink = Vec::new();
    match Pair::feed(other, &mut out, usize::MAX, now, &mut sink, true) {
        Err(Error::PeerDisconnected {
            reason,
            description,
        }) => {
            assert_eq!(reason, v.reason_code(), "{v:?}");
            assert_eq!(description, v.to_string());
        }
        r => panic!("no DISCONNECT for {v:?}: {r:?}"),
    }
}

fn established() -> Pair {
    let mut p = Pair::default_algs();
    p.establish();
    p
}

#[test]
fn kex_method_message_before_kexinit() {
    // A strict-KEX server takes nothing but KEXINIT first.
    let mut p = Pair::default_algs();
    let mut wire = b"SSH-2.0-OutOfOrder\r\n".to_vec();
    p.client.seal_raw(&[30, 0, 0, 0, 0], false, &mut wire);
    let v = violation(feed(&mut p.server, &mut wire, p.now));
    assert_eq!(
        v,
        Violation::UnexpectedMessage {
            num: MsgNum::KEX_ECDH_INIT,
            state: Phase::BeforeKexInit
        }
    );
    assert_eq!(v.reason_code(), DisconnectReason::PROTOCOL_ERROR.0);
    assert_eq!(v.to_string(), "unexpected message type 30 before KEXINIT");
}

#[test]
fn newkeys_before_the_exchange() {
    // Without a guessed first packet the server has no exchange yet.
    let mut p = Pair::tweaked(
        "curve25519-sha256",
        "ssh-ed25519",
        "aes128-gcm@openssh.com",
        "hmac-sha2-256",
        |c, server| c.kex_guess = server,
    );
    p.client.poll_transmit(p.now, &mut p.c2s);
    p.client.seal_raw(&[MsgNum::NEWKEYS.0], false, &mut p.c2s);
    let mut wire = std::mem::take(&mut p.c2s);
    assert_eq!(
        violation(feed(&mut p.server, &mut wire, p.now)),
        Violation::NewKeysTooEarly
    );
}

#[test]
fn kexinit_twice_in_one_exchange() {
    // The client's own KEXINIT, sent a second time before the exchange ends.
    let mut p = Pair::default_algs();
    p.client.poll_transmit(p.now, &mut p.c2s);
    let banner_end = p.c2s.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
    let len = u32::from_be_bytes(p.c2s[banner_end..banner_end + 4].try_into().unwrap()) as usize;
    let pad = p.c2s[banner_end + 4] as usize;
    let kexinit = p.c2s[banner_end + 5..banner_end + 4 + len - pad].to_vec();
    assert_eq!(kexinit[0], MsgNum::KEXINIT.0);
    p.client.seal_raw(&kexinit, false, &mut p.c2s);
    let mut wire = std::mem::take(&mut p.c2s);
    assert_eq!(
        violation(feed(&mut p.server, &mut wire, p.now)),
        Violation::RepeatedKexMessage(MsgNum::KEXINIT)
    );
}

#[test]
fn kex_method_message_after_the_exchange() {
    let mut p = established();
    let mut payload = vec![MsgNum::KEX_ECDH_INIT.0];
    payload.extend_from_slice(&32u32.to_be_bytes());
    payload.extend_from_slice(&[9; 32]);
    let v = violation(client_sends(&mut p, &payload));
    assert_eq!(
        v,
        Violation::UnexpectedMessage {
            num: MsgNum::KEX_ECDH_INIT,
            state: Phase::OutsideKex
        }
    );
    peer_hears(&mut p.server, &mut p.client, &v, p.now);
}

#[test]
fn connection_message_before_authentication() {
    // The server opens a channel to a client that has not logged in yet.
    let mut p = Pair::default_algs();
    for _ in 0..100 {
        p.step().unwrap();
        if p.client_events
            .iter()
            .any(|e| matches!(e, Event::KexDone { initial: true, .. }))
        {
            break;
        }
    }
    assert!(!p
        .client_events
        .iter()
        .any(|e| matches!(e, Event::Authenticated { .. })));
    let mut open = Vec::new();
    sluice_proto::msg::ChannelOpen {
        channel_type: "session".into(),
        sender_channel: 0,
        initial_window: 1 << 20,
        max_packet: 32768,
        data: Vec::new(),
    }
    .encode(&mut open);
    assert_eq!(
        violation(server_sends(&mut p, &open)),
        Violation::UnexpectedMessage {
            num: MsgNum(90),
            state: Phase::BeforeAuthentication
        }
    );
}

#[test]
fn open_confirmation_for_a_channel_not_being_opened() {
    let mut p = established();
    let ch = p.client_channel.unwrap();
    let mut m = Vec::new();
    ChannelOpenConfirmation {
        recipient_channel: ch.0,
        sender_channel: 5,
        initial_window: 1000,
        max_packet: 1000,
        data: Vec::new(),
    }
    .encode(&mut m);
    assert_eq!(
        violation(server_sends(&mut p, &m)),
        Violation::ChannelNotOpening {
            num: MsgNum::CHANNEL_OPEN_CONFIRMATION,
            channel: ch.0
        }
    );
}

#[test]
fn an_info_response_nobody_asked_for() {
    // Keyboard-interactive answers with no prompts out: the server's
    // authentication has no place for them.
    let mut p = established();
    let mut m = Vec::new();
    sluice_proto::msg::UserauthInfoResponse {
        responses: vec!["secret".into()],
    }
    .encode(&mut m);
    assert_eq!(
        violation(client_sends(&mut p, &m)),
        Violation::UnexpectedMessage {
            num: MsgNum(61),
            state: Phase::ServerAuth
        }
    );
}

#[test]
fn a_pk_ok_nobody_asked_for() {
    let mut p = established();
    assert_eq!(
        violation(server_sends(&mut p, &[60, 0, 0, 0, 0, 0, 0, 0, 0])),
        Violation::UnexpectedMessage {
            num: MsgNum(60),
            state: Phase::ClientAuth
        }
    );
}

#[test]
fn open_failure_for_an_open_channel() {
    let mut p = established();
    let ch = p.client_channel.unwrap();
    let mut m = Vec::new();
    sluice_proto::msg::ChannelOpenFailure {
        recipient_channel: ch.0,
        reason_code: 2,
        description: "no".into(),
        language: String::new(),
    }
    .encode(&mut m);
    assert_eq!(
        violation(server_sends(&mut p, &m)),
        Violation::ChannelNotOpening {
            num: MsgNum(92),
            channel: ch.0
        }
    );
}

#[test]
fn channel_request_on_an_unknown_channel() {
    let mut p = established();
    let mut m = Vec::new();
    ChannelRequest {
        recipient_channel: 77,
        want_reply: true,
        request: ChannelRequestKind::Exec {
            command: b"true".to_vec(),
        },
    }
    .encode(&mut m);
    let v = violation(client_sends(&mut p, &m));
    assert_eq!(v, Violation::UnknownChannel(77));
    assert_eq!(v.to_string(), "message for unknown channel 77");
    peer_hears(&mut p.server, &mut p.client, &v, p.now);
}

#[test]
fn an_undefined_connection_message() {
    let mut p = established();
    assert_eq!(
        violation(client_sends(&mut p, &[127, 0, 0, 0, 0])),
        Violation::UnexpectedMessage {
            num: MsgNum(127),
            state: Phase::Connection
        }
    );
}

#[test]
fn an_empty_payload() {
    let mut p = established();
    assert_eq!(
        violation(client_sends(&mut p, &[])),
        Violation::EmptyPayload
    );
}

#[test]
fn data_after_eof() {
    let mut p = established();
    let (ch, sch) = (p.client_channel.unwrap(), p.server_channel.unwrap());
    p.client.send_eof(ch).unwrap();
    p.drive().unwrap();
    assert!(p
        .server_events
        .iter()
        .any(|e| matches!(e, Event::ChannelEof(c) if *c == sch)));
    let mut m = Vec::new();
    Writer::new(&mut m)
        .u8(MsgNum::CHANNEL_DATA.0)
        .u32(sch.0)
        .string(b"late");
    assert_eq!(
        violation(client_sends(&mut p, &m)),
        Violation::DataAfterEof(sch.0)
    );
}

#[test]
fn data_beyond_the_window() {
    let mut p = established();
    p.consume = false;
    let (ch, sch) = (p.client_channel.unwrap(), p.server_channel.unwrap());
    let window = Config::default().window as usize;
    let data = pattern(window + 1, 7);
    let mut sent = 0;
    while sent < window {
        sent += p
            .client
            .send_data(p.now, ch, None, &data[sent..window], &mut p.c2s);
        p.step().unwrap();
    }
    p.client.force_send_window(ch, 1);
    assert_eq!(
        p.client
            .send_data(p.now, ch, None, &data[window..], &mut p.c2s),
        1
    );
    let mut wire = std::mem::take(&mut p.c2s);
    let v = violation(feed(&mut p.server, &mut wire, p.now));
    assert_eq!(v, Violation::WindowExceeded(sch.0));
    peer_hears(&mut p.server, &mut p.client, &v, p.now);
}

#[test]
fn a_bad_mac() {
    let mut p = established();
    let ch = p.client_channel.unwrap();
    p.client.send_data(p.now, ch, None, b"hello", &mut p.c2s);
    let last = p.c2s.len() - 1;
    p.c2s[last] ^= 1;
    let mut wire = std::mem::take(&mut p.c2s);
    let v = violation(feed(&mut p.server, &mut wire, p.now));
    assert_eq!(v, Violation::MacFailure);
    assert_eq!(v.reason_code(), DisconnectReason::MAC_ERROR.0);
    peer_hears(&mut p.server, &mut p.client, &v, p.now);
}

#[test]
fn a_bad_packet_length_in_clear_and_under_aes_gcm() {
    // Before the first NEWKEYS the length is in clear; AES-GCM keeps it in
    // clear (authenticated only) after it too.
    let mut p = Pair::default_algs();
    p.client.poll_transmit(p.now, &mut p.c2s);
    let at = p.c2s.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
    p.c2s[at..at + 4].copy_from_slice(&(1u32 << 20).to_be_bytes());
    let mut wire = std::mem::take(&mut p.c2s);
    assert_eq!(
        violation(feed(&mut p.server, &mut wire, p.now)),
        Violation::BadPacketLength(1 << 20)
    );

    let mut p = established();
    let ch = p.client_channel.unwrap();
    p.client.send_data(p.now, ch, None, b"hello", &mut p.c2s);
    p.c2s[..4].copy_from_slice(&3u32.to_be_bytes());
    let mut wire = std::mem::take(&mut p.c2s);
    assert_eq!(
        violation(feed(&mut p.server, &mut wire, p.now)),
        Violation::BadPacketLength(3)
    );
}

#[test]
fn unknown_messages_before_authentication_flood() {
    // A client that has not logged in gets a few dozen UNIMPLEMENTED
    // answers to connection messages, then the door.
    let mut p = Pair::default_algs();
    p.accepted = Vec::new();
    for _ in 0..200 {
        p.step().unwrap();
        if p.client_events
            .iter()
            .any(|e| matches!(e, Event::AuthFailure { .. }))
        {
            break;
        }
    }
    let mut r = Ok(());
    for _ in 0..40 {
        r = client_sends(&mut p, &[MsgNum::CHANNEL_DATA.0, 0, 0, 0, 0, 0, 0, 0, 0]);
        if r.is_err() {
            break;
        }
    }
    assert_eq!(
        violation(r),
        Violation::Flood(FloodKind::ConnectionBeforeAuth)
    );
}

/// Every wording is readable on its own (ssh's style), and no variant
/// carries text chosen at the call site: the table is the whole story.
#[test]
fn display_wording() {
    let cases = [
        (Violation::EmptyPayload, "empty packet (no message type)"),
        (
            Violation::UnexpectedMessage {
                num: MsgNum(90),
                state: Phase::BeforeAuthentication,
            },
            "unexpected message type 90 before authentication",
        ),
        (
            Violation::UnexpectedMessage {
                num: MsgNum(33),
                state: Phase::BeforeGroup,
            },
            "unexpected message type 33 before the group exchange's group",
        ),
        (
            Violation::RepeatedKexMessage(MsgNum::KEXINIT),
            "message type 20 twice in one key exchange",
        ),
        (
            Violation::NewKeysTooEarly,
            "unexpected message type 21 before the exchange completed",
        ),
        (
            Violation::TooManyPrompts(300),
            "keyboard-interactive request with too many prompts (300)",
        ),
        (
            Violation::WrongAnswerCount {
                prompts: 1,
                answers: 2,
            },
            "keyboard-interactive response with the wrong number of answers (2 for 1 prompts)",
        ),
        (
            Violation::ChannelNotOpening {
                num: MsgNum(92),
                channel: 3,
            },
            "channel 3: unexpected message type 92 for a channel not being opened",
        ),
        (Violation::DataAfterEof(4), "channel 4: data after EOF"),
        (
            Violation::Flood(FloodKind::QueuedForSending),
            "too many replies queued for sending: peer flooding, disconnecting",
        ),
    ];
    for (v, text) in cases {
        assert_eq!(v.to_string(), text, "{v:?}");
        assert_eq!(v.reason_code(), DisconnectReason::PROTOCOL_ERROR.0);
    }
}

/// A client whose first line is no identification hears sshd's words in
/// plain text (scripts grep for them), not a packet it could not read.
#[test]
fn a_server_answers_a_bad_identification_line_in_plain_text() {
    let mut p = Pair::default_algs();
    let now = p.now;
    let mut wire = b"\n".to_vec();
    let v = violation(feed(&mut p.server, &mut wire, now));
    assert!(matches!(v, Violation::BadVersion(_)), "{v:?}");
    let mut out = Vec::new();
    p.server.poll_transmit(now, &mut out);
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.starts_with("SSH-2.0-")
            && text.ends_with("\r\nInvalid SSH identification string.\r\n"),
        "{text:?}"
    );
}

/// publickey-hostbound-v00@openssh.com (OpenSSH PROTOCOL 2.5): the client
/// binds its signed request to the host key of the first exchange once the
/// server offered the method, the server verifies the signature over that
/// form, and the binding it hands an agent verifies as ssh-agent checks it.
/// A request naming another host key ends the connection.
#[test]
fn hostbound_requests_name_the_first_exchanges_host_key() {
    let mut p = Pair::default_algs();
    p.establish();
    let b = p
        .client
        .session_binding()
        .expect("a binding after the exchange");
    let host_key = host_key_for("ssh-ed25519").public_blob();
    assert_eq!(b.host_key, host_key.as_slice());
    sluice_proto::crypto::hostkey::verify("ssh-ed25519", b.host_key, b.signature, b.session_id)
        .expect("the server's signature of the session id");
    // Every signed request after the server's EXT_INFO was hostbound, and
    // the server verified it (it says signed) and reported the host key.
    let signed: Vec<&Option<Vec<u8>>> = p
        .server_events
        .iter()
        .filter_map(|e| match e {
            Event::AuthRequest {
                method:
                    sluice_proto::AuthMethodRequest::PublicKey {
                        host_key,
                        signed: true,
                        ..
                    },
                ..
            } => Some(host_key),
            _ => None,
        })
        .collect();
    assert!(
        signed
            .last()
            .is_some_and(|h| h.as_deref() == Some(host_key.as_slice())),
        "{signed:?}"
    );

    // Before authentication, a hostbound query naming another key.
    let mut p = Pair::default_algs();
    p.accepted = Vec::new();
    while !p
        .server_events
        .iter()
        .any(|e| matches!(e, Event::AuthRequest { .. }))
    {
        p.step().unwrap();
    }
    let mut m = Vec::new();
    sluice_proto::msg::UserauthRequest {
        user: "alice".into(),
        service: "ssh-connection".into(),
        method: sluice_proto::msg::AuthMethod::PublicKey {
            algorithm: "ssh-ed25519".into(),
            key_blob: p.user_key.public_blob(),
            host_key: Some(p.user_key.public_blob()),
            signature: None,
        },
    }
    .encode(&mut m);
    let v = violation(client_sends(&mut p, &m));
    assert_eq!(v, Violation::HostboundKeyMismatch);
    let now = p.now;
    peer_hears(&mut p.server, &mut p.client, &v, now);
}
