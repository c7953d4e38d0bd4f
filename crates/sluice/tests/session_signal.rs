//! A `signal` channel request (RFC 4254 6.9) reaches the session's command
//! while it runs (through its pidfd, server/child.rs): `sleep` gets TERM
//! and the client sees exit-signal TERM. After the command was reaped no
//! signal is sent at all (unit tests in server/child.rs).

mod common;
use common::*;
use sluice_proto::msg::ChannelRequestKind;
use sluice_proto::Event;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

#[test]
fn signal_request_reaches_the_running_command() {
    let s = Setup::new("signal");
    let server = s.start(false, "");
    let (mut conn, mut sock, id) = engine_session(&s, server.port, b"sleep 30");
    conn.channel_request(
        id,
        ChannelRequestKind::Signal {
            name: "TERM".into(),
        },
        false,
    )
    .unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    let mut inbuf = Vec::new();
    loop {
        assert!(Instant::now() < end, "no exit-signal within 10 s");
        let mut out = Vec::new();
        conn.poll_transmit(Instant::now(), &mut out);
        sock.write_all(&out).unwrap();
        let mut buf = [0u8; 65536];
        match sock.read(&mut buf) {
            Ok(0) => panic!("server closed"),
            Ok(n) => inbuf.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
        loop {
            let n = conn
                .handle_input(Instant::now(), &mut inbuf)
                .unwrap()
                .consumed;
            if n == 0 {
                break;
            }
            inbuf.drain(..n);
        }
        while let Some(e) = conn.poll_event() {
            if let Event::ChannelRequest { request, .. } = e {
                match request {
                    ChannelRequestKind::ExitSignal { signal, .. } => {
                        assert_eq!(signal, "TERM");
                        return;
                    }
                    ChannelRequestKind::ExitStatus { status } => panic!("exit-status {status}"),
                    _ => {}
                }
            }
        }
    }
}
