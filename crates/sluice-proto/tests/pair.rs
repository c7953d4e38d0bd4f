//! Two endpoints driven against each other in memory: every algorithm
//! combination, re-keys in the middle of transfers, window exhaustion,
//! strict-KEX violations, and the byte stream split at arbitrary points.

mod common;
use common::*;
use sluice_proto::crypto::hostkey::KeyPair;
use sluice_proto::crypto::{cipher, hostkey, kex, SystemRng};
use sluice_proto::{ClientConfig, Config, Connection, Error, Event, ServerConfig, Violation};
use std::sync::Arc;
use std::time::Instant;

#[test]
fn every_algorithm_combination_connects_and_moves_data() {
    let mut n = 0;
    // The finite-field methods are each covered once below: their 8192-bit
    // exponentiations times every combination would only cost time.
    for k in kex::DEFAULT_KEX
        .iter()
        .filter(|k| !k.starts_with("diffie-hellman"))
    {
        for h in hostkey::PLAIN_SIG_ALGS {
            for c in cipher::DEFAULT_CIPHERS {
                let aead = cipher::cipher_info(c).unwrap().aead;
                let macs: &[&str] = if aead {
                    &["hmac-sha2-256"]
                } else {
                    cipher::DEFAULT_MACS
                };
                for m in macs {
                    let mut p = Pair::new(k, h, c, m);
                    p.establish();
                    let up = pattern(70_000, 1);
                    p.upload(&up);
                    assert_eq!(p.server_data, up, "{k} {h} {c} {m}");
                    let down = pattern(50_000, 2);
                    p.download(&down);
                    assert_eq!(p.client_data, down, "{k} {h} {c} {m}");
                    n += 1;
                }
            }
        }
    }
    assert!(n >= 6 * 6 * 4);
}

/// Every key exchange method, legacy ones included, connects, moves data
/// and re-keys (for group exchange: a second request and group).
#[test]
fn every_kex_method_connects_and_rekeys() {
    for k in kex::ALL_KEX {
        {
            let mac = "hmac-sha2-256-etm@openssh.com";
            let mut p = Pair::new(k, "ssh-ed25519", "aes128-ctr", mac);
            p.establish();
            let up = pattern(40_000, 1);
            p.upload(&up);
            assert_eq!(p.server_data, up, "{k}");
            p.client.rekey();
            p.drive().unwrap();
            let down = pattern(30_000, 2);
            p.download(&down);
            assert_eq!(p.client_data, down, "{k}");
            let rekeys = p
                .client_events
                .iter()
                .filter(|e| matches!(e, Event::KexDone { initial: false, .. }))
                .count();
            assert_eq!(rekeys, 1, "{k}");
        }
    }
}

/// Group exchange with the runtime's moduli: aes128-gcm asks for n = 3072,
/// which the one 3072-bit modulus answers; aes128-ctr with hmac-sha2-256
/// asks for 8192, which only the RFC 3526 fallback has. (Which group is
/// picked: `crypto::kex::gex`'s unit tests.)
#[test]
fn group_exchange_uses_the_configured_moduli() {
    // A 3072-bit safe prime from Debian's /etc/ssh/moduli (generator 2).
    const P3072: &str = include_str!("testdata/moduli-3072.hex");
    let prime: Vec<u8> = (0..P3072.trim().len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&P3072.trim()[i..i + 2], 16).unwrap())
        .collect();
    let moduli: Arc<[kex::DhModulus]> = Arc::from(vec![kex::DhModulus {
        bits: 3072,
        generator: vec![2],
        prime,
    }]);
    for (cipher, mac) in [
        ("aes128-gcm@openssh.com", "hmac-sha2-256"),
        ("aes128-ctr", "hmac-sha2-256"),
    ] {
        let m = moduli.clone();
        let mut p = Pair::tweaked(
            "diffie-hellman-group-exchange-sha256",
            "ssh-ed25519",
            cipher,
            mac,
            move |c, server| {
                if server {
                    c.dh_moduli = m.clone();
                }
            },
        );
        p.establish();
        let up = pattern(10_000, 3);
        p.upload(&up);
        assert_eq!(p.server_data, up, "{cipher}");
    }
}

/// A certificate blob for `key` (PROTOCOL.certkeys layout; the fields the
/// engine does not read are filler: trust is the runtime's decision).
fn cert_blob(cert_type: &str, key: &dyn hostkey::Signer) -> Vec<u8> {
    let plain = key.public_blob();
    let s = |b: &[u8]| [&(b.len() as u32).to_be_bytes()[..], b].concat();
    let type_len = 4 + u32::from_be_bytes(plain[..4].try_into().unwrap()) as usize;
    [
        s(cert_type.as_bytes()),
        s(b"nonce"),
        plain[type_len..].to_vec(),
        vec![0; 12], // serial, type
        s(b"id"),
        s(b""),
        vec![0; 16], // validity
        s(b""),
        s(b""),
        s(b""),
        s(b"ca"),
        s(b"signature"),
    ]
    .concat()
}

#[test]
fn certificates_sign_with_the_certified_key() {
    use hostkey::CertSigner;
    for (cert_type, alg, key) in [
        (
            "ssh-ed25519-cert-v01@openssh.com",
            "ssh-ed25519-cert-v01@openssh.com",
            "ssh-ed25519",
        ),
        (
            "ssh-rsa-cert-v01@openssh.com",
            "rsa-sha2-256-cert-v01@openssh.com",
            "rsa-sha2-256",
        ),
        (
            "ecdsa-sha2-nistp384-cert-v01@openssh.com",
            "ecdsa-sha2-nistp384-cert-v01@openssh.com",
            "ecdsa-sha2-nistp384",
        ),
    ] {
        let k = host_key_for(key);
        let blob = cert_blob(cert_type, k.as_ref());
        assert_eq!(hostkey::cert::plain_blob(&blob).unwrap(), k.public_blob());
        let host: Arc<dyn hostkey::Signer> =
            Arc::new(CertSigner::new(k.clone(), blob.clone()).unwrap());
        let user: Arc<dyn hostkey::Signer> =
            Arc::new(CertSigner::new(k.clone(), blob.clone()).unwrap());
        let c = config("curve25519-sha256", alg, "aes128-ctr", "hmac-sha2-256");
        let mut p = Pair::with(c.clone(), c, host, user, alg, test_seed());
        p.establish();
        assert!(
            p.client_events
                .iter()
                .any(|e| matches!(e, Event::HostKey { key_blob, .. } if *key_blob == blob)),
            "{alg}: the host certificate reached the client"
        );
        // A signature under the certificate checks out against the
        // certified key; the plain name or another key does not.
        let signer = CertSigner::new(k.clone(), blob.clone()).unwrap();
        let sig = hostkey::Signer::sign(&signer, alg, b"data").unwrap();
        hostkey::verify(alg, &blob, &sig, b"data").unwrap();
        assert!(hostkey::verify(
            hostkey::cert::plain_sig_alg(alg).unwrap(),
            &blob,
            &sig,
            b"data"
        )
        .is_err());
        assert!(hostkey::Signer::sign(
            &signer,
            hostkey::cert::plain_sig_alg(alg).unwrap(),
            b"data"
        )
        .is_err());
        let other = host_key_for(if key == "ssh-ed25519" {
            "rsa-sha2-256"
        } else {
            "ssh-ed25519"
        });
        assert!(CertSigner::new(other, blob.clone()).is_err());
        // Truncated certificates are refused.
        for n in [0, 10, 30] {
            assert!(hostkey::cert::plain_blob(&blob[..n]).is_err());
        }
    }
}

#[test]
fn stream_split_at_every_offset() {
    // 1-byte chunks exercise every split point of the handshake and packets.
    for chunk in [1usize, 2, 3, 7, 16, 17, 4095] {
        let mut p = Pair::new(
            "curve25519-sha256",
            "ssh-ed25519",
            "aes128-ctr",
            "hmac-sha2-256",
        );
        p.chunk = chunk;
        p.establish();
        let up = pattern(20_000, 3);
        p.upload(&up);
        assert_eq!(p.server_data, up, "chunk {chunk}");
    }
}

#[test]
fn rekey_in_the_middle_of_transfers_from_either_side() {
    for cipher in cipher::DEFAULT_CIPHERS {
        for server_starts in [false, true] {
            let mut p = Pair::new(
                "curve25519-sha256",
                "ssh-ed25519",
                cipher,
                "hmac-sha2-256-etm@openssh.com",
            );
            p.establish();
            let data = pattern(3 << 20, 4);
            let ch = p.client_channel.unwrap();
            let mut sent = 0;
            let mut rekeyed = false;
            while sent < data.len() {
                sent += p
                    .client
                    .send_data(p.now, ch, None, &data[sent..], &mut p.c2s);
                if !rekeyed && sent > data.len() / 2 {
                    if server_starts {
                        p.server.rekey()
                    } else {
                        p.client.rekey()
                    }
                    rekeyed = true;
                }
                p.step().unwrap();
            }
            p.drive().unwrap();
            assert_eq!(p.server_data, data);
            let rekeys = p
                .client_events
                .iter()
                .filter(|e| matches!(e, Event::KexDone { initial: false, .. }))
                .count();
            assert_eq!(rekeys, 1, "{cipher} server_starts={server_starts}");
        }
    }
}

#[test]
fn rekey_by_byte_limit() {
    let mut p = Pair::default_algs();
    p.client = Connection::client(
        ClientConfig {
            common: Config {
                rekey_bytes: 256 * 1024,
                ..config(
                    "curve25519-sha256",
                    "ssh-ed25519",
                    "aes128-gcm@openssh.com",
                    "hmac-sha2-256",
                )
            },
        },
        Box::new(SystemRng),
    );
    p.establish();
    let data = pattern(4 << 20, 5);
    p.upload(&data);
    assert_eq!(p.server_data, data);
    let rekeys = p
        .server_events
        .iter()
        .filter(|e| matches!(e, Event::KexDone { initial: false, .. }))
        .count();
    // Each ~255 KiB packet counts whole, so a re-key follows every second packet.
    assert!(rekeys >= 7, "only {rekeys} rekeys");
}

#[test]
fn window_exhaustion_and_refill() {
    let mut p = Pair::default_algs();
    p.establish();
    p.consume = false;
    let window = Config::default().window as usize;
    let ch = p.client_channel.unwrap();
    let data = pattern(window + 100_000, 6);
    let mut sent = 0;
    for _ in 0..1000 {
        sent += p
            .client
            .send_data(p.now, ch, None, &data[sent..], &mut p.c2s);
        p.step().unwrap();
    }
    assert_eq!(sent, window, "sender must stop exactly at the window");
    assert_eq!(p.client.send_capacity(ch), 0);
    // The consumer catches up: the window is granted back and the rest flows.
    let sch = p.server_channel.unwrap();
    p.server.consumed(sch, window);
    p.consume = true;
    p.drive().unwrap();
    assert!(p.client.send_capacity(ch) > 0);
    while sent < data.len() {
        sent += p
            .client
            .send_data(p.now, ch, None, &data[sent..], &mut p.c2s);
        p.step().unwrap();
    }
    p.drive().unwrap();
    assert_eq!(p.server_data, data);
}

#[test]
fn window_overrun_by_peer_is_a_protocol_error() {
    let mut p = Pair::default_algs();
    p.establish();
    p.consume = false;
    let ch = p.client_channel.unwrap();
    let window = Config::default().window as usize;
    let data = pattern(window + 1, 7);
    let mut sent = 0;
    while sent < window {
        sent += p
            .client
            .send_data(p.now, ch, None, &data[sent..window], &mut p.c2s);
        p.step().unwrap();
    }
    // Make the client misbehave: one byte past the advertised window.
    p.client.force_send_window(ch, 1);
    assert_eq!(
        p.client
            .send_data(p.now, ch, None, &data[window..], &mut p.c2s),
        1
    );
    let mut sink = Vec::new();
    let err = Pair::feed(
        &mut p.server,
        &mut p.c2s,
        usize::MAX,
        p.now,
        &mut sink,
        false,
    )
    .unwrap_err();
    let sch = p.server_channel.unwrap();
    assert_eq!(err, Error::Protocol(Violation::WindowExceeded(sch.0)));
    assert!(err.to_string().contains("ignored channel window"), "{err}");
    assert!(p.server.is_closed());
}

#[test]
fn data_for_a_channel_that_does_not_exist_is_refused() {
    let mut p = Pair::default_algs();
    p.establish();
    let ch = p.client_channel.unwrap();
    p.client.force_remote_channel(ch, 77);
    p.client.send_data(p.now, ch, None, b"stray", &mut p.c2s);
    let mut sink = Vec::new();
    let err = Pair::feed(
        &mut p.server,
        &mut p.c2s,
        usize::MAX,
        p.now,
        &mut sink,
        true,
    )
    .unwrap_err();
    assert_eq!(err, Error::Protocol(Violation::UnknownChannel(77)));
}

#[test]
fn strict_kex_rejects_ignore_during_initial_exchange() {
    let mut p = Pair::default_algs();
    // Deliver the client's banner and KEXINIT, then inject an IGNORE packet
    // (plaintext framing, as before NEWKEYS) right after KEXINIT.
    p.client.poll_transmit(p.now, &mut p.c2s);
    let mut ignore = vec![0, 0, 0, 12, 10, 2];
    ignore.extend_from_slice(&[0u8; 10]);
    p.c2s.extend_from_slice(&ignore);
    let mut sink = Vec::new();
    let r = Pair::feed(
        &mut p.server,
        &mut p.c2s,
        usize::MAX,
        p.now,
        &mut sink,
        true,
    );
    let err = r.unwrap_err();
    assert_eq!(
        err,
        Error::Protocol(Violation::StrictKex(sluice_proto::wire::MsgNum::IGNORE))
    );
    // A DISCONNECT is queued for the peer.
    let mut out = Vec::new();
    p.server.poll_transmit(p.now, &mut out);
    assert!(!out.is_empty());
}

#[test]
fn tampered_packet_fails_mac_and_closes() {
    let mut p = Pair::default_algs();
    p.establish();
    let ch = p.client_channel.unwrap();
    p.client.send_data(p.now, ch, None, b"hello", &mut p.c2s);
    let last = p.c2s.len() - 1;
    p.c2s[last] ^= 1;
    let mut sink = Vec::new();
    let err = Pair::feed(
        &mut p.server,
        &mut p.c2s,
        usize::MAX,
        p.now,
        &mut sink,
        true,
    )
    .unwrap_err();
    assert_eq!(err, Error::Protocol(Violation::MacFailure));
    assert!(p.server.is_closed());
}

#[test]
fn wrong_user_key_is_refused_and_too_many_failures_disconnect() {
    let mut p = Pair::default_algs();
    p.user_key = Arc::new(KeyPair::from_ed25519_seed(&[1u8; 32]).unwrap());
    assert!(p.drive().is_err());
    assert!(p.server.is_closed());
    // The server's DISCONNECT reaches the client with the reason.
    let mut out = Vec::new();
    p.server.poll_transmit(p.now, &mut out);
    p.s2c.extend_from_slice(&out);
    let mut sink = Vec::new();
    let err = Pair::feed(
        &mut p.client,
        &mut p.s2c,
        usize::MAX,
        p.now,
        &mut sink,
        true,
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .to_lowercase()
            .contains("too many authentication failures"),
        "{err}"
    );
    let failures = p
        .client_events
        .iter()
        .filter(|e| matches!(e, Event::AuthFailure { .. }))
        .count();
    assert_eq!(
        failures, 5,
        "MaxAuthTries 6: five failures, then disconnect"
    );
    assert!(!p
        .client_events
        .iter()
        .any(|e| matches!(e, Event::Authenticated { .. })));
}

#[test]
fn compression_both_ways_with_delayed_start() {
    let mut p = Pair::default_algs();
    let mk = || Config {
        compression_engines: sluice_proto::transport::compress::default_engines(),
        prefer_compression: true,
        ..config(
            "curve25519-sha256",
            "ssh-ed25519",
            "aes256-gcm@openssh.com",
            "hmac-sha2-256",
        )
    };
    p.client = Connection::client(ClientConfig { common: mk() }, Box::new(SystemRng));
    p.server = Connection::server(
        ServerConfig {
            common: mk(),
            host_keys: vec![host_key_for("ssh-ed25519")],
            auth_methods: owned(&["publickey"]),
            max_auth_tries: 6,
            banner: None,
        },
        Box::new(SystemRng),
    );
    p.establish();
    let text: Vec<u8> = b"the quick brown fox jumps over the lazy dog\n"
        .iter()
        .cycle()
        .take(2 << 20)
        .copied()
        .collect();
    p.upload(&text);
    p.download(&text);
    assert_eq!(p.server_data, text);
    assert_eq!(p.client_data, text);
    let (out, _) = p.client.compression_stats();
    let (raw, z) = out.unwrap();
    assert!(z * 10 < raw, "compressed {z} of {raw}");
}

#[test]
fn one_byte_and_max_size_packets() {
    let mut p = Pair::default_algs();
    p.establish();
    p.upload(b"x");
    assert_eq!(p.server_data, b"x");
    let big = pattern(256 * 1024 * 3, 8);
    p.download(&big);
    assert_eq!(p.client_data, big);
}

/// What the `connection_input` fuzz target does, over pseudo-random inputs
/// and over a real handshake with bytes flipped, on stable in every test run.
#[test]
fn hostile_bytes_never_panic() {
    let feed = |mut conn: Connection, data: &[u8]| {
        let mut buf = data.to_vec();
        let mut start = 0;
        while start < buf.len() {
            match conn.handle_input(Instant::now(), &mut buf[start..]) {
                Ok(r) if r.consumed > 0 => start += r.consumed,
                _ => break,
            }
            while conn.poll_event().is_some() {}
        }
    };
    // A real client stream to mutate.
    let mut p = Pair::default_algs();
    p.client.poll_transmit(p.now, &mut p.c2s);
    let real = p.c2s.clone();
    for i in 0..3000u64 {
        let mut input = if i % 2 == 0 {
            real.clone()
        } else {
            b"SSH-2.0-x\r\n".to_vec()
        };
        let noise = pattern((i % 700) as usize, i as u8);
        if i % 2 == 0 && !input.is_empty() {
            for (j, b) in noise.iter().enumerate().take(8) {
                let at = (*b as usize * 7 + j * 131 + i as usize) % input.len();
                input[at] ^= b | 1;
            }
        } else {
            input.extend_from_slice(&noise);
        }
        let server = ServerConfig {
            common: Config::default(),
            host_keys: vec![host_key_for("ssh-ed25519")],
            auth_methods: owned(&["publickey"]),
            max_auth_tries: 6,
            banner: None,
        };
        feed(Connection::server(server, Box::new(SystemRng)), &input);
        feed(
            Connection::client(ClientConfig::default(), Box::new(SystemRng)),
            &input,
        );
    }
}

/// `ChannelInfo::last_data` is when channel data last went either way,
/// by the clock each side was given: sealed at the sender's `now`,
/// received at the receiver's; control traffic leaves it alone (sshd's
/// ChannelTimeout measures idleness from it, in sluiced's server/idle.rs).
#[test]
fn last_data_is_when_data_last_moved_either_way() {
    let mut p = Pair::default_algs();
    p.establish();
    let (c, s) = (p.client_channel.unwrap(), p.server_channel.unwrap());
    let last = |p: &Pair| {
        (
            p.client.channel_info(c).unwrap().last_data,
            p.server.channel_info(s).unwrap().last_data,
        )
    };
    assert_eq!(last(&p), (None, None), "no data yet");
    let up = p.now;
    p.upload(b"hello");
    let (cl, sv) = last(&p);
    assert_eq!(cl, Some(up), "sealed at the client's now");
    assert!(sv.is_some_and(|t| t > up && t <= p.now), "received later");
    // A minute of requests and window traffic without data changes nothing.
    p.now += std::time::Duration::from_secs(60);
    p.client
        .channel_request(
            c,
            sluice_proto::msg::ChannelRequestKind::WindowChange {
                cols: 80,
                rows: 24,
                width_px: 0,
                height_px: 0,
            },
            false,
        )
        .unwrap();
    p.drive().unwrap();
    assert_eq!(last(&p), (cl, sv));
    let down = p.now;
    p.download(b"x");
    let (cl2, sv2) = last(&p);
    assert_eq!(sv2, Some(down), "sealed at the server's now");
    assert!(
        cl2.is_some_and(|t| t > down),
        "received by the client later"
    );
}
