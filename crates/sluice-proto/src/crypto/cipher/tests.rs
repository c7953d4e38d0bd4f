//! Round trips, tampering and length decryption for every cipher x MAC
//! combination through the public constructors (RFC 4253 6, RFC 4344,
//! RFC 5647, OpenSSH PROTOCOL 1.5 and PROTOCOL.chacha20poly1305).

use super::*;
use crate::crypto::PacketPos;

/// Lower-case hex of `b`.
pub(super) fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Bytes of a hex string.
pub(super) fn from_hex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// `n` bytes of a fixed pattern.
fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| seed.wrapping_add((i as u8).wrapping_mul(29)))
        .collect()
}

const ALL_CIPHERS: &[&str] = &[
    "chacha20-poly1305@openssh.com",
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "aes128-ctr",
    "aes192-ctr",
    "aes256-ctr",
    "none",
];

/// Every MAC, `none` last.
const ALL_MACS: &[&str] = &[
    "hmac-sha1",
    "hmac-sha1-96",
    "hmac-sha2-256",
    "hmac-sha2-512",
    "hmac-md5",
    "hmac-md5-96",
    "umac-64@openssh.com",
    "umac-128@openssh.com",
    "hmac-sha1-etm@openssh.com",
    "hmac-sha1-96-etm@openssh.com",
    "hmac-sha2-256-etm@openssh.com",
    "hmac-sha2-512-etm@openssh.com",
    "hmac-md5-etm@openssh.com",
    "hmac-md5-96-etm@openssh.com",
    "umac-64-etm@openssh.com",
    "umac-128-etm@openssh.com",
    "none",
];

/// A sealer and opener for one combination, keyed from fixed patterns the
/// way the key exchange would size them.
fn pair(cipher: &str, mac: &str) -> (Box<dyn Sealer>, Box<dyn Opener>) {
    let ci = cipher_info(cipher).unwrap();
    let mac_len = if ci.aead {
        0
    } else {
        mac_info(mac).unwrap().key_len
    };
    let (key, iv, mac_key) = (
        pattern(ci.key_len, 1),
        pattern(ci.iv_len, 2),
        pattern(mac_len, 3),
    );
    let keys = DirectionKeys {
        cipher,
        mac,
        key: &key,
        iv: &iv,
        mac_key: &mac_key,
    };
    (sealer(keys).unwrap(), opener(keys).unwrap())
}

/// Every supported pair, AEAD ciphers once (their MAC is ignored).
fn combinations() -> Vec<(&'static str, &'static str)> {
    let mut v = Vec::new();
    for c in ALL_CIPHERS {
        if cipher_info(c).unwrap().aead {
            v.push((*c, "none"));
            v.push((*c, "hmac-sha2-256"));
        } else {
            v.extend(ALL_MACS.iter().map(|m| (*c, *m)));
        }
    }
    v
}

/// A plain packet framed as the transport frames it (RFC 4253 6).
fn packet(payload_len: usize, bs: usize, length_in_blocks: bool) -> Vec<u8> {
    let unpadded = 1 + payload_len + if length_in_blocks { 4 } else { 0 };
    let mut pad = bs - unpadded % bs;
    if pad < 4 {
        pad += bs;
    }
    let len = 1 + payload_len + pad;
    let mut p = (len as u32).to_be_bytes().to_vec();
    p.push(pad as u8);
    p.extend(pattern(payload_len, 0x40));
    p.extend(pattern(pad, 0xa0));
    p
}

const POSITIONS: &[PacketPos] = &[
    PacketPos {
        seq: 0,
        index: 0,
        offset: 0,
    },
    PacketPos {
        seq: 3,
        index: 3,
        offset: 48,
    },
    PacketPos {
        seq: 0x1234_5678,
        index: 1 << 40,
        offset: 0xfff_fff0,
    },
    PacketPos {
        seq: u32::MAX,
        index: u64::MAX,
        offset: u64::MAX - 15,
    },
];

/// Payload sizes: the smallest packet (16 bytes when the length is in the
/// blocks; else 4 + one block, the smallest `packet_length` holding the
/// padding length byte and 4 bytes of padding) up to 256 KiB + padding.
const SIZES: &[usize] = &[0, 1, 7, 11, 27, 100, 1000, 32 * 1024, 256 * 1024];

#[test]
fn info_tables_are_consistent() {
    for c in DEFAULT_CIPHERS.iter().chain(ALL_CIPHERS) {
        assert_eq!(cipher_info(c).unwrap().name, *c);
    }
    for m in DEFAULT_MACS.iter().chain(ALL_MACS) {
        assert_eq!(mac_info(m).unwrap().name, *m);
    }
    assert!(!DEFAULT_CIPHERS.contains(&"none"));
    assert!(!DEFAULT_MACS.contains(&"none"));
    assert!(cipher_info("3des-cbc").is_none());
    assert_eq!(SUPPORTED_MACS, &ALL_MACS[..ALL_MACS.len() - 1]);
    assert!(DEFAULT_MACS.iter().all(|m| SUPPORTED_MACS.contains(m)));
    assert!(mac_info("hmac-sha3-256").is_none());
    assert!(mac_info("umac-32@openssh.com").is_none());
}

#[test]
fn sizes_match_the_tables() {
    for (c, m) in combinations() {
        let (s, o) = pair(c, m);
        let ci = cipher_info(c).unwrap();
        let mi = mac_info(m).unwrap();
        let (tag, in_blocks) = match c {
            "chacha20-poly1305@openssh.com" => (16, false),
            _ if ci.aead => (16, false),
            _ => (mi.tag_len, !mi.etm),
        };
        assert_eq!(
            (s.block_size(), o.block_size()),
            (ci.block_size, ci.block_size),
            "{c} {m}"
        );
        assert_eq!((s.tag_len(), o.tag_len()), (tag, tag), "{c} {m}");
        assert_eq!(s.length_in_blocks(), in_blocks, "{c} {m}");
        assert_eq!(o.length_in_blocks(), in_blocks, "{c} {m}");
        let want = if in_blocks { ci.block_size } else { 4 };
        assert_eq!(o.length_bytes(), want, "{c} {m}");
    }
}

#[test]
fn initial_state_is_plain_and_unauthenticated() {
    let (s, o) = (initial_sealer(), initial_opener());
    assert_eq!(
        (s.block_size(), s.tag_len(), s.length_in_blocks()),
        (8, 0, true)
    );
    assert_eq!(
        (o.block_size(), o.tag_len(), o.length_in_blocks()),
        (8, 0, true)
    );
    let plain = packet(20, 8, true);
    let mut p = plain.clone();
    s.seal(PacketPos::default(), &mut p, &mut []);
    assert_eq!(p, plain);
    assert_eq!(
        o.decrypt_length(PacketPos::default(), &p[..8]).unwrap() as usize,
        p.len() - 4
    );
    o.open(PacketPos::default(), &mut p, &[]).unwrap();
    assert_eq!(p, plain);
}

#[test]
fn round_trip_every_combination_position_and_size() {
    for (c, m) in combinations() {
        let (s, o) = pair(c, m);
        for pos in POSITIONS {
            for &n in SIZES {
                let plain = packet(n, s.block_size(), s.length_in_blocks());
                let aligned = if s.length_in_blocks() {
                    plain.len()
                } else {
                    plain.len() - 4
                };
                assert_eq!(aligned % s.block_size(), 0);
                if n == 0 {
                    let smallest = if s.length_in_blocks() {
                        16
                    } else {
                        4 + s.block_size()
                    };
                    assert_eq!(plain.len(), smallest, "smallest packet for {c} {m}");
                }
                let mut p = plain.clone();
                let mut tag = vec![0u8; s.tag_len()];
                s.seal(*pos, &mut p, &mut tag);
                if c != "none" {
                    assert_ne!(p[5..], plain[5..], "{c} {m} left the payload in clear");
                }
                let head = &p[..o.length_bytes()];
                let len = o.decrypt_length(*pos, head).unwrap();
                assert_eq!(len as usize, plain.len() - 4, "{c} {m} {pos:?} {n}");
                o.open(*pos, &mut p, &tag).unwrap();
                assert_eq!(p, plain, "{c} {m} {pos:?} {n}");
            }
        }
    }
}

/// Seals a small packet and returns (sealed, tag, plain).
fn sealed(c: &str, m: &str, pos: PacketPos, n: usize) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let (s, _) = pair(c, m);
    let plain = packet(n, s.block_size(), s.length_in_blocks());
    let mut p = plain.clone();
    let mut tag = vec![0u8; s.tag_len()];
    s.seal(pos, &mut p, &mut tag);
    (p, tag, plain)
}

#[test]
fn tampering_any_byte_fails_to_open() {
    let pos = POSITIONS[2];
    for (c, m) in combinations() {
        if !cipher_info(c).unwrap().aead && m == "none" {
            continue; // no integrity to test
        }
        let (_, o) = pair(c, m);
        for n in [0, 27, 100] {
            let (p, tag, _) = sealed(c, m, pos, n);
            for i in 0..p.len() + tag.len() {
                let (mut p2, mut t2) = (p.clone(), tag.clone());
                match i.checked_sub(p.len()) {
                    None => p2[i] ^= 0x01,
                    Some(j) => t2[j] ^= 0x80,
                }
                assert!(
                    o.open(pos, &mut p2, &t2).is_err(),
                    "{c} {m} byte {i} of {n}"
                );
            }
        }
        // A big packet: the first and last bytes of each part.
        let (p, tag, _) = sealed(c, m, pos, 256 * 1024);
        for i in [0, 3, 4, 5, p.len() / 2, p.len() - 1] {
            let mut p2 = p.clone();
            p2[i] ^= 0x10;
            assert!(o.open(pos, &mut p2, &tag).is_err(), "{c} {m} big byte {i}");
        }
        let mut p2 = p.clone();
        assert!(
            o.open(pos, &mut p2, &tag[..tag.len() - 1]).is_err(),
            "{c} {m} short tag"
        );
        assert!(
            o.open(pos, &mut p2[..p.len() - 1], &tag).is_err(),
            "{c} {m} short packet"
        );
    }
}

#[test]
fn wrong_position_fails_to_open() {
    let pos = POSITIONS[1];
    for (c, m) in combinations() {
        let ci = cipher_info(c).unwrap();
        if !ci.aead && m == "none" {
            continue;
        }
        let (_, o) = pair(c, m);
        let (p, tag, _) = sealed(c, m, pos, 40);
        // The sequence number feeds every MAC and chacha20-poly1305's nonce.
        if !c.contains("gcm") {
            let wrong = PacketPos {
                seq: pos.seq + 1,
                ..pos
            };
            assert!(o.open(wrong, &mut p.clone(), &tag).is_err(), "{c} {m} seq");
        }
        // The invocation counter feeds AES-GCM's nonce.
        if c.contains("gcm") {
            let wrong = PacketPos {
                index: pos.index + 1,
                ..pos
            };
            assert!(
                o.open(wrong, &mut p.clone(), &tag).is_err(),
                "{c} {m} index"
            );
        }
        // The CTR offset changes what encrypt-and-MAC verifies.
        if c.ends_with("-ctr") && !mac_info(m).unwrap().etm {
            let wrong = PacketPos {
                offset: pos.offset + 16,
                ..pos
            };
            assert!(
                o.open(wrong, &mut p.clone(), &tag).is_err(),
                "{c} {m} offset"
            );
        }
    }
}

#[test]
fn sealing_order_does_not_matter() {
    // Packets sealed backwards, each from its position alone, equal packets
    // sealed forwards: no hidden state links them.
    for (c, m) in combinations() {
        let (s, _) = pair(c, m);
        let plain = packet(50, s.block_size(), s.length_in_blocks());
        let step = if s.length_in_blocks() {
            plain.len()
        } else {
            plain.len() - 4
        } as u64;
        let positions: Vec<PacketPos> = (0..4u32)
            .map(|i| PacketPos {
                seq: i,
                index: i.into(),
                offset: step * u64::from(i),
            })
            .collect();
        let seal = |pos: &PacketPos| {
            let mut p = plain.clone();
            let mut t = vec![0u8; s.tag_len()];
            s.seal(*pos, &mut p, &mut t);
            (p, t)
        };
        let forward: Vec<_> = positions.iter().map(seal).collect();
        let mut backward: Vec<_> = positions.iter().rev().map(seal).collect();
        backward.reverse();
        assert_eq!(forward, backward, "{c} {m}");
        if c != "none" {
            assert_ne!(forward[0].0, forward[1].0, "{c} {m} reused a keystream");
        }
    }
}

#[test]
fn bad_names_and_key_sizes_are_rejected() {
    let k = |cipher, mac, key: &[u8], iv: &[u8], mac_key: &[u8]| {
        let keys = DirectionKeys {
            cipher,
            mac,
            key,
            iv,
            mac_key,
        };
        (sealer(keys).is_ok(), opener(keys).is_ok())
    };
    assert_eq!(
        k("aes128-ctr", "hmac-sha2-256", &[0; 16], &[0; 16], &[0; 32]),
        (true, true)
    );
    assert_eq!(
        k("aes128-ctr", "hmac-sha2-256", &[0; 16], &[0; 16], &[0; 31]),
        (false, false)
    );
    assert_eq!(
        k("aes128-ctr", "hmac-md5", &[0; 16], &[0; 16], &[0; 16]),
        (true, true)
    );
    assert_eq!(
        k("aes128-ctr", "hmac-ripemd160", &[0; 16], &[0; 16], &[0; 20]),
        (false, false)
    );
    assert_eq!(
        k(
            "aes128-ctr",
            "umac-64@openssh.com",
            &[0; 16],
            &[0; 16],
            &[0; 20]
        ),
        (false, false)
    );
    assert_eq!(
        k("aes128-ctr", "hmac-sha2-256", &[0; 32], &[0; 16], &[0; 32]),
        (false, false)
    );
    assert_eq!(
        k("aes256-gcm@openssh.com", "", &[0; 32], &[0; 16], &[]),
        (false, false)
    );
    assert_eq!(
        k("aes256-gcm@openssh.com", "", &[0; 32], &[0; 12], &[]),
        (true, true)
    );
    assert_eq!(
        k("chacha20-poly1305@openssh.com", "", &[0; 63], &[], &[]),
        (false, false)
    );
    assert_eq!(k("none", "none", &[], &[], &[]), (true, true));
    assert_eq!(k("none", "none", &[0], &[], &[]), (false, false));
    assert_eq!(k("arcfour", "none", &[], &[], &[]), (false, false));
}
