//! Batch crypto under stress: packets sealed and opened out of order and on
//! other threads (see `common::adversarial`) must reach the peer whole and
//! in order, across re-keys that fall in the middle of a batch, at every
//! split of the byte stream, and a forged packet must still stop the line.

mod common;
use common::*;

const CIPHERS: &[(&str, &str)] = &[
    ("aes128-gcm@openssh.com", "hmac-sha2-256"),
    ("aes256-gcm@openssh.com", "hmac-sha2-256"),
    ("chacha20-poly1305@openssh.com", "hmac-sha2-256"),
    ("aes128-ctr", "hmac-sha2-256-etm@openssh.com"),
    ("aes256-ctr", "hmac-sha2-512"),
];

fn batch_pair(cipher: &str, mac: &str) -> Pair {
    let mut p = Pair::new("curve25519-sha256", "ssh-ed25519", cipher, mac);
    p.batch = true;
    p
}

#[test]
fn every_cipher_in_batches_both_ways() {
    for (c, m) in CIPHERS {
        let mut p = batch_pair(c, m);
        p.establish();
        let up = pattern(3 << 20, 1);
        p.upload(&up);
        assert!(p.server_data == up, "{c}: upload differs");
        let down = pattern((2 << 20) + 12345, 2);
        p.download(&down);
        assert!(p.client_data == down, "{c}: download differs");
    }
}

#[test]
fn one_byte_and_max_size_packets_in_batches() {
    for (c, m) in CIPHERS {
        let mut p = batch_pair(c, m);
        p.establish();
        let ch = p.client_channel.unwrap();
        // Many one-byte packets framed into one batch.
        let mut sent = Vec::new();
        for i in 0..200u8 {
            assert_eq!(p.client.send_data(p.now, ch, None, &[i], &mut p.c2s), 1);
            sent.push(i);
        }
        p.drive().unwrap();
        assert_eq!(p.server_data, sent, "{c}");
        let big = pattern(256 * 1024 * 5, 8);
        p.download(&big);
        assert!(p.client_data == big, "{c}: 256 KiB packets differ");
    }
}

#[test]
fn split_stream_at_many_offsets_in_batches() {
    for chunk in [1usize, 5, 16, 4095, 65_539, 300_007] {
        let mut p = batch_pair("chacha20-poly1305@openssh.com", "hmac-sha2-256");
        p.chunk = chunk;
        p.establish();
        let up = pattern(700_000, 3);
        p.upload(&up);
        assert!(p.server_data == up, "chunk {chunk}");
    }
}

/// The server frames data, then KEXINIT, REPLY and NEWKEYS, then data under
/// the new keys, all before one batch is sealed.
#[test]
fn rekey_in_the_middle_of_a_sealed_batch() {
    for (c, m) in CIPHERS {
        let mut p = batch_pair(c, m);
        p.establish();
        let ch = p.server_channel.unwrap();
        let (d1, d2) = (pattern(600_000, 4), pattern(900_000, 5));
        assert_eq!(
            p.server.send_data(p.now, ch, None, &d1, &mut p.s2c),
            d1.len()
        );
        // The client's KEXINIT reaches the server; its own KEXINIT is queued.
        p.client.rekey();
        p.client.poll_transmit(p.now, &mut p.c2s);
        let mut sink = Vec::new();
        Pair::feed_batch(
            &mut p.server,
            &mut p.c2s,
            usize::MAX,
            p.now,
            &mut sink,
            true,
            true,
        )
        .unwrap();
        p.server.seal_batch(&mut p.s2c, &mut adversarial);
        p.server.poll_transmit(p.now, &mut p.s2c);
        // The client answers with its key exchange message.
        Pair::feed_batch(
            &mut p.client,
            &mut p.s2c,
            usize::MAX,
            p.now,
            &mut p.client_data,
            true,
            true,
        )
        .unwrap();
        while p.client.poll_event().is_some() {}
        p.client.poll_transmit(p.now, &mut p.c2s);
        Pair::feed_batch(
            &mut p.server,
            &mut p.c2s,
            usize::MAX,
            p.now,
            &mut sink,
            true,
            true,
        )
        .unwrap();
        // REPLY and NEWKEYS go out with d2 behind them, in one batch.
        assert_eq!(
            p.server.send_data(p.now, ch, None, &d2, &mut p.s2c),
            d2.len()
        );
        assert!(p.server.has_unsealed());
        p.server.seal_batch(&mut p.s2c, &mut adversarial);
        p.drive().unwrap();
        let both: Vec<u8> = d1.iter().chain(&d2).copied().collect();
        assert!(p.client_data == both, "{c}: data across the re-key differs");
        // And the new keys work the other way too.
        let up = pattern(400_000, 6);
        p.upload(&up);
        assert!(p.server_data == up, "{c}");
    }
}

#[test]
fn rekeys_from_both_sides_during_batched_transfers() {
    let mut p = batch_pair("aes128-gcm@openssh.com", "hmac-sha2-256");
    p.establish();
    let up = pattern(6 << 20, 7);
    let ch = p.client_channel.unwrap();
    let mut sent = 0;
    let mut round = 0;
    while sent < up.len() {
        let end = (sent + 300_000).min(up.len());
        sent += p
            .client
            .send_data(p.now, ch, None, &up[sent..end], &mut p.c2s);
        round += 1;
        if round % 5 == 0 {
            p.client.rekey();
        }
        if round % 7 == 0 {
            p.server.rekey();
        }
        p.step().unwrap();
        assert!(round < 10_000, "stalled at {sent}");
    }
    p.drive().unwrap();
    assert!(p.server_data == up);
}

#[test]
fn forged_packet_in_a_batch_stops_delivery_there() {
    let mut p = batch_pair("aes128-gcm@openssh.com", "hmac-sha2-256");
    p.establish();
    let ch = p.client_channel.unwrap();
    let data = pattern(1 << 20, 9);
    let start = p.c2s.len();
    assert_eq!(
        p.client.send_data(p.now, ch, None, &data, &mut p.c2s),
        data.len()
    );
    p.client.seal_batch(&mut p.c2s, &mut adversarial);
    // Flip one byte in the middle of the buffer: the third or fourth packet.
    let mid = start + (p.c2s.len() - start) * 5 / 8;
    p.c2s[mid] ^= 0x40;
    let mut got = Vec::new();
    let err = Pair::feed_batch(
        &mut p.server,
        &mut p.c2s,
        usize::MAX,
        p.now,
        &mut got,
        true,
        true,
    )
    .unwrap_err();
    assert_eq!(
        err,
        sluice_proto::Error::Protocol(sluice_proto::Violation::MacFailure)
    );
    assert!(p.server.is_closed());
    assert!(!got.is_empty() && got.len() < data.len());
    assert!(
        data.starts_with(&got),
        "delivered data must be an untouched prefix"
    );
}
