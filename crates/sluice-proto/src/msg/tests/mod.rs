//! Properties every message in this module must have: `decode(encode(x)) == x`,
//! every truncation fails with `Truncated` (never a panic), trailing bytes
//! are rejected where the RFC allows none, and a wrong message number is
//! `BadValue`. Ends with a deterministic mutation run over all decoders.

mod auth;
mod conn;

use super::*;
use crate::wire::WireError;

/// Encode and decode of one message type, so tests can be generic.
trait Msg: Sized + PartialEq + std::fmt::Debug {
    fn enc(&self, out: &mut Vec<u8>);
    fn dec(payload: &[u8]) -> Result<Self, WireError>;
}

macro_rules! messages {
    ($($t:ident),* $(,)?) => {
        $(impl Msg for $t {
            fn enc(&self, out: &mut Vec<u8>) {
                self.encode(out)
            }
            fn dec(payload: &[u8]) -> Result<Self, WireError> {
                $t::decode(payload)
            }
        })*

        /// Every decoder over one payload; only panics matter.
        fn decode_all(p: &[u8]) {
            $(let _ = $t::decode(p);)*
        }
    };
}

messages!(
    Disconnect,
    Ignore,
    Unimplemented,
    Debug,
    ServiceRequest,
    ServiceAccept,
    ExtInfo,
    KexInit,
    NewKeys,
    KexEcdhInit,
    KexEcdhReply,
    UserauthRequest,
    UserauthFailure,
    UserauthSuccess,
    UserauthBanner,
    UserauthPkOk,
    UserauthInfoRequest,
    UserauthInfoResponse,
    UserauthPasswdChangereq,
    GlobalRequest,
    RequestSuccess,
    RequestFailure,
    ChannelOpen,
    ChannelOpenConfirmation,
    ChannelOpenFailure,
    ChannelWindowAdjust,
    ChannelEof,
    ChannelClose,
    ChannelRequest,
    ChannelSuccess,
    ChannelFailure,
    DirectTcpip,
    ForwardedTcpip,
);

/// Checks a message that allows no trailing data.
fn strict<T: Msg>(m: T) {
    check(m, None);
}

/// Checks a message whose last `tail` bytes are free-form `data`
/// (truncating those still decodes; trailing bytes become data).
fn open<T: Msg>(m: T, tail: usize) {
    check(m, Some(tail));
}

fn check<T: Msg>(m: T, open_tail: Option<usize>) {
    let mut v = vec![0xee]; // encode must append, not overwrite
    m.enc(&mut v);
    let v = &v[1..];
    assert_eq!(T::dec(v).as_ref(), Ok(&m));
    let fixed = v.len() - open_tail.unwrap_or(0);
    for n in 0..fixed {
        assert_eq!(
            T::dec(&v[..n]).err(),
            Some(WireError::Truncated),
            "{m:?} cut at {n}"
        );
    }
    for n in fixed..v.len() {
        assert!(
            T::dec(&v[..n]).is_ok(),
            "{m:?} cut inside free-form data at {n}"
        );
    }
    let mut longer = v.to_vec();
    longer.push(0);
    if open_tail.is_none() {
        assert_eq!(
            T::dec(&longer).err(),
            Some(WireError::TrailingData),
            "{m:?}"
        );
    }
    longer[0] ^= 0x80;
    assert_eq!(T::dec(&longer).err(), Some(WireError::BadValue), "{m:?}");
}

fn s(x: &str) -> String {
    x.to_owned()
}

fn v(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|x| s(x)).collect()
}

#[test]
fn transport_messages() {
    strict(Disconnect {
        reason_code: 2,
        description: s("bad"),
        language: s("en"),
    });
    strict(Ignore {
        data: vec![0, 1, 2],
    });
    strict(Unimplemented { sequence_number: 9 });
    strict(Debug {
        always_display: true,
        message: s("hé"),
        language: s(""),
    });
    strict(ServiceRequest {
        name: s("ssh-userauth"),
    });
    strict(ServiceAccept {
        name: s("ssh-userauth"),
    });
    let ext = ExtInfo {
        extensions: vec![
            (s("server-sig-algs"), b"ssh-ed25519,rsa-sha2-256".to_vec()),
            (s("ping@openssh.com"), b"0".to_vec()),
        ],
    };
    strict(ext);
    strict(ExtInfo { extensions: vec![] });
}

#[test]
fn kex_messages() {
    let k = KexInit {
        cookie: [7; 16],
        kex_algorithms: v(&["mlkem768x25519-sha256", "curve25519-sha256", "ext-info-c"]),
        server_host_key_algorithms: v(&["ssh-ed25519"]),
        encryption_client_to_server: v(&["aes128-gcm@openssh.com"]),
        encryption_server_to_client: v(&["chacha20-poly1305@openssh.com"]),
        mac_client_to_server: v(&["hmac-sha2-256-etm@openssh.com"]),
        mac_server_to_client: v(&["hmac-sha2-256"]),
        compression_client_to_server: v(&["none", "zlib@openssh.com"]),
        compression_server_to_client: v(&["none"]),
        languages_client_to_server: v(&[]),
        languages_server_to_client: v(&["en"]),
        first_kex_packet_follows: true,
        reserved: 0,
    };
    strict(k);
    strict(NewKeys);
    strict(KexEcdhInit { q_c: vec![9; 32] });
    let reply = KexEcdhReply {
        host_key: vec![1; 51],
        q_s: vec![2; 32],
        signature: vec![3; 83],
    };
    strict(reply);
}

#[test]
fn reason_codes_and_numbers() {
    assert_eq!(msg_num(&[]), None);
    assert_eq!(msg_num(&[94, 1]), Some(crate::wire::MsgNum::CHANNEL_DATA));
    assert_eq!(DisconnectReason::BY_APPLICATION.0, 11);
    assert_eq!(
        DisconnectReason::ILLEGAL_USER_NAME.description(),
        "illegal user name"
    );
    assert_eq!(DisconnectReason(99).description(), "unknown reason");
    assert_eq!(ChannelOpenFailureReason::RESOURCE_SHORTAGE.0, 4);
    assert_eq!(
        ChannelOpenFailureReason(1).description(),
        "administratively prohibited"
    );
}

#[test]
fn mutated_payloads_never_panic() {
    let mut seeds = Vec::new();
    KexInit::decode(include_bytes!(
        "../testdata/openssh-9.2p1-client-kexinit.bin"
    ))
    .unwrap()
    .encode(&mut seeds);
    let mut req = Vec::new();
    let pty = ChannelRequestKind::PtyReq {
        term: s("vt100"),
        cols: 1,
        rows: 2,
        width_px: 3,
        height_px: 4,
        modes: vec![0],
    };
    ChannelRequest {
        recipient_channel: 0,
        want_reply: true,
        request: pty,
    }
    .encode(&mut req);
    let mut auth = Vec::new();
    let pk = AuthMethod::PublicKey {
        algorithm: s("a"),
        key_blob: vec![1],
        host_key: None,
        signature: Some(vec![2]),
    };
    UserauthRequest {
        user: s("u"),
        service: s("s"),
        method: pk,
    }
    .encode(&mut auth);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for seed in [seeds, req, auth] {
        for _ in 0..3000 {
            let mut p = seed.clone();
            for _ in 0..1 + next() % 4 {
                let i = (next() as usize) % p.len();
                p[i] = next() as u8;
            }
            p.truncate((next() as usize) % (p.len() + 1));
            decode_all(&p);
            decode_all(p.get(1..).unwrap_or_default());
        }
    }
}
