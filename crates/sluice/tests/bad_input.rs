//! Bad input against a running `sluiced` while another client's transfer
//! goes on: each bad connection is closed with a log line, the server keeps
//! serving, and the parallel transfer completes with the right hash.
//!
//! Attacks inside an encrypted session (bad MAC, a channel that does not
//! exist, a window overrun) use an in-process client built on sluice-proto
//! and its test hooks.

mod common;
use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Reads until EOF or error; true if the server closed within `secs`.
fn closed_within(s: &mut TcpStream, secs: u64) -> bool {
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let end = Instant::now() + Duration::from_secs(secs);
    let mut buf = [0u8; 65536];
    while Instant::now() < end {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return true,
        }
    }
    false
}

/// A plaintext binary packet (before NEWKEYS: no cipher, block 8).
fn plain_packet(payload: &[u8]) -> Vec<u8> {
    let mut pad = 8 - (5 + payload.len()) % 8;
    if pad < 4 {
        pad += 8;
    }
    let mut p = Vec::new();
    p.extend_from_slice(&((1 + payload.len() + pad) as u32).to_be_bytes());
    p.push(pad as u8);
    p.extend_from_slice(payload);
    p.extend(std::iter::repeat_n(0u8, pad));
    p
}

fn kexinit() -> Vec<u8> {
    let mut init = sluice_proto::msg::KexInit {
        cookie: [1; 16],
        kex_algorithms: vec!["curve25519-sha256".into()],
        server_host_key_algorithms: vec!["ssh-ed25519".into()],
        encryption_client_to_server: vec!["aes128-ctr".into()],
        encryption_server_to_client: vec!["aes128-ctr".into()],
        mac_client_to_server: vec!["hmac-sha2-256".into()],
        mac_server_to_client: vec!["hmac-sha2-256".into()],
        compression_client_to_server: vec!["none".into()],
        compression_server_to_client: vec!["none".into()],
        languages_client_to_server: vec![],
        languages_server_to_client: vec![],
        first_kex_packet_follows: false,
        reserved: 0,
    };
    init.kex_algorithms
        .push("kex-strict-c-v00@openssh.com".into());
    let mut p = Vec::new();
    init.encode(&mut p);
    p
}

#[test]
fn bad_input_closes_only_that_connection() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("bad");
    let server = s.start(false, "");
    // A long transfer in parallel that must survive everything below.
    let data = random_data(64 << 20, 9);
    let hash = sha256(&data);
    let mut c = s.client(false, &server, &[]);
    c.arg("sha256sum");
    let transfer = std::thread::spawn(move || run(c, &data, 180));

    // 1. A garbage banner.
    let mut t = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    t.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert!(closed_within(&mut t, 10), "garbage banner");
    // 2. An endless banner line.
    let mut t = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let _ = t.write_all(&[b'S'; 4096]);
    assert!(closed_within(&mut t, 10), "endless banner");
    // 3. A packet length of 2^32-1.
    let mut t = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    t.write_all(b"SSH-2.0-evil\r\n\xff\xff\xff\xff\0\0\0\0\0\0\0\0")
        .unwrap();
    assert!(closed_within(&mut t, 10), "huge packet length");
    // 4. A KEXINIT, then a truncated packet and close.
    let mut t = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    t.write_all(b"SSH-2.0-evil\r\n").unwrap();
    t.write_all(&plain_packet(&kexinit())).unwrap();
    t.write_all(&[0, 0, 1, 0, 4, 20, 1, 2]).unwrap();
    drop(t);
    // 5. An unknown message during key exchange (strict KEX makes it fatal).
    let mut t = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    t.write_all(b"SSH-2.0-evil\r\n").unwrap();
    t.write_all(&plain_packet(&kexinit())).unwrap();
    t.write_all(&plain_packet(&[200, 1, 2, 3])).unwrap();
    assert!(closed_within(&mut t, 10), "unknown message during KEX");
    // 6. A bad MAC inside an established session.
    let (mut conn, mut t, ch) = engine_session(&s, server.port, b"cat > /dev/null");
    let mut out = Vec::new();
    conn.send_data(Instant::now(), ch, None, b"hello", &mut out);
    let last = out.len() - 1;
    out[last] ^= 0x55;
    t.write_all(&out).unwrap();
    assert!(closed_within(&mut t, 10), "bad MAC");
    // 7. Data for a channel that does not exist.
    let (mut conn, mut t, ch) = engine_session(&s, server.port, b"cat > /dev/null");
    conn.force_remote_channel(ch, 4242);
    let mut out = Vec::new();
    conn.send_data(Instant::now(), ch, None, b"stray", &mut out);
    t.write_all(&out).unwrap();
    assert!(closed_within(&mut t, 10), "unknown channel");
    // 8. A window overrun.
    let (mut conn, mut t, ch) = engine_session(&s, server.port, b"cat > /dev/null");
    let window = conn.channel_info(ch).unwrap().send_window as usize;
    conn.force_send_window(ch, 1 << 20);
    let blob = vec![7u8; window + (1 << 20)];
    let mut out = Vec::new();
    let mut sent = 0;
    while sent < blob.len() {
        let n = conn.send_data(Instant::now(), ch, None, &blob[sent..], &mut out);
        if n == 0 {
            break;
        }
        sent += n;
    }
    let _ = t.write_all(&out);
    assert!(closed_within(&mut t, 20), "window overrun");

    let out = transfer.join().unwrap();
    assert!(
        out.status.success(),
        "parallel transfer: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with(&hash),
        "parallel transfer hash"
    );
    // The server logged each refusal.
    let log = server.log_text();
    for needle in [
        "bad protocol identification",
        "bad packet length",
        "strict KEX",
        "message authentication code incorrect",
        "unknown channel 4242",
        "ignored channel window",
    ] {
        assert!(log.contains(needle), "log lacks '{needle}':\n{log}");
    }
    // And it still serves.
    let mut c = s.client(false, &server, &[]);
    c.arg("echo still-here");
    assert_eq!(run(c, b"", 30).stdout, b"still-here\n");
}
