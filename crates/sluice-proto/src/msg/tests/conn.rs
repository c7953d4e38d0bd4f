//! Round trips, truncations and trailing data for the connection protocol
//! messages and every channel request kind (RFC 4254, RFC 4335).

use super::{check, open, s, strict};
use crate::msg::*;
use crate::wire::WireError;

#[test]
fn connection_messages() {
    let g = GlobalRequest {
        name: s("tcpip-forward"),
        want_reply: true,
        data: vec![0, 0, 0, 0, 0, 0, 0x1f, 0x90],
    };
    open(g, 8);
    open(
        GlobalRequest {
            name: s("keepalive@openssh.com"),
            want_reply: true,
            data: vec![],
        },
        0,
    );
    open(
        RequestSuccess {
            data: vec![0, 0, 0x1f, 0x90],
        },
        4,
    );
    strict(RequestFailure);
    let o = ChannelOpen {
        channel_type: s("session"),
        sender_channel: 0,
        initial_window: 2 << 20,
        max_packet: 32768,
        data: vec![],
    };
    open(o, 0);
    let o = ChannelOpen {
        channel_type: s("x11"),
        sender_channel: 1,
        initial_window: 1,
        max_packet: 2,
        data: vec![5; 3],
    };
    open(o, 3);
    let conf = ChannelOpenConfirmation {
        recipient_channel: 1,
        sender_channel: 2,
        initial_window: 3,
        max_packet: 4,
        data: vec![],
    };
    open(conf, 0);
    let conf = ChannelOpenConfirmation {
        recipient_channel: 1,
        sender_channel: 2,
        initial_window: 3,
        max_packet: 4,
        data: vec![6],
    };
    open(conf, 1);
    let fail = ChannelOpenFailure {
        recipient_channel: 5,
        reason_code: ChannelOpenFailureReason::CONNECT_FAILED.0,
        description: s("refused"),
        language: s(""),
    };
    strict(fail);
    let adj = ChannelWindowAdjust {
        recipient_channel: 5,
        bytes_to_add: u32::MAX,
    };
    strict(adj);
    strict(ChannelEof {
        recipient_channel: 1,
    });
    strict(ChannelClose {
        recipient_channel: 2,
    });
    strict(ChannelSuccess {
        recipient_channel: 3,
    });
    strict(ChannelFailure {
        recipient_channel: 4,
    });
}

#[test]
fn channel_open_data() {
    let d = DirectTcpip {
        host: s("localhost"),
        port: 22,
        originator_host: s("::1"),
        originator_port: 40000,
    };
    let mut b = Vec::new();
    d.encode(&mut b);
    assert_eq!(DirectTcpip::decode(&b).as_ref(), Ok(&d));
    let f = ForwardedTcpip {
        host: s("0.0.0.0"),
        port: 8080,
        originator_host: s("10.0.0.1"),
        originator_port: 1,
    };
    let mut b = Vec::new();
    f.encode(&mut b);
    assert_eq!(ForwardedTcpip::decode(&b).as_ref(), Ok(&f));
    for n in 0..b.len() {
        assert_eq!(ForwardedTcpip::decode(&b[..n]), Err(WireError::Truncated));
    }
    b.push(0);
    assert_eq!(ForwardedTcpip::decode(&b), Err(WireError::TrailingData));
}

#[test]
fn every_channel_request_kind() {
    use ChannelRequestKind as K;
    let kinds = [
        (
            K::PtyReq {
                term: s("xterm-256color"),
                cols: 80,
                rows: 24,
                width_px: 640,
                height_px: 480,
                modes: vec![53, 0, 0, 0, 1, 0],
            },
            None,
        ),
        (
            K::X11Req {
                single_connection: false,
                auth_protocol: s("MIT-MAGIC-COOKIE-1"),
                auth_cookie: s("0a1b"),
                screen: 0,
            },
            None,
        ),
        (
            K::Env {
                name: s("LANG"),
                value: vec![b'C', 0xff],
            },
            None,
        ),
        (K::Shell, None),
        (
            K::Exec {
                command: b"ls -l".to_vec(),
            },
            None,
        ),
        (K::Subsystem { name: s("sftp") }, None),
        (
            K::WindowChange {
                cols: 132,
                rows: 43,
                width_px: 0,
                height_px: 0,
            },
            None,
        ),
        (
            K::XonXoff {
                client_can_do: true,
            },
            None,
        ),
        (K::Signal { name: s("TERM") }, None),
        (K::ExitStatus { status: 127 }, None),
        (
            K::ExitSignal {
                signal: s("SEGV"),
                core_dumped: true,
                message: s("boom"),
                language: s(""),
            },
            None,
        ),
        (K::Break { ms: 500 }, None),
        (
            K::Other {
                name: s("auth-agent-req@openssh.com"),
                data: vec![],
            },
            Some(0),
        ),
        (
            K::Other {
                name: s("eow@openssh.com"),
                data: vec![1, 2, 3],
            },
            Some(3),
        ),
    ];
    for (request, tail) in kinds {
        for want_reply in [false, true] {
            let r = ChannelRequest {
                recipient_channel: 42,
                want_reply,
                request: request.clone(),
            };
            check(r, tail);
        }
    }
}
