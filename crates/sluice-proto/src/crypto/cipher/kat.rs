//! Known-answer tests: ciphertexts and tags made by an independent
//! implementation (Python `cryptography`, see `testdata/kat_gen.py`) from
//! fixed keys, for each construction: AES-GCM (RFC 5647, invocation counter
//! wrap included), chacha20-poly1305@openssh.com (PROTOCOL.chacha20poly1305),
//! AES-CTR (RFC 4344, 32-bit and 128-bit counter carries) with HMAC-SHA2 in
//! encrypt-and-MAC (RFC 6668) and encrypt-then-MAC (OpenSSH PROTOCOL 1.5)
//! order, and the `none` cipher with and without a MAC.

use super::tests::{from_hex, to_hex};
use super::*;
use crate::crypto::PacketPos;

/// One sealed packet as the reference implementation produced it.
struct Kat {
    cipher: &'static str,
    mac: &'static str,
    key: &'static str,
    iv: &'static str,
    mac_key: &'static str,
    pos: PacketPos,
    plain: &'static str,
    sealed: &'static str,
    tag: &'static str,
}

#[rustfmt::skip]
const KATS: &[Kat] = &[
    Kat {
        cipher: "aes128-gcm@openssh.com",
        mac: "none",
        key: "011e3b587592afcce90623405d7a97b4",
        iv: "0724415e7b98b5d2ef0c2946",
        mac_key: "",
        pos: PacketPos { seq: 0x3, index: 0x5, offset: 0x0 },
        plain: "000000300f736c75696365206b6e6f776e2d616e737765722074657374207061796c6f6164a0a1a2a3a4a5a6a7a8a9aaabacadae",
        sealed: "00000030f60bc9f32ca81efbe4cfb58c08d59a26d7a9e45485364828446c8009fe012e0b5efdbafc95c26440bc97b79e8242769e",
        tag: "e726b0b4f06978836d3de7ea6184c8ea",
    },
    Kat {
        cipher: "aes256-gcm@openssh.com",
        mac: "none",
        key: "03203d5a7794b1ceeb0825425f7c99b6d3f00d2a4764819ebbd8f5122f4c6986",
        iv: "01020304fffffffffffffffe",
        mac_key: "",
        pos: PacketPos { seq: 0x9, index: 0x3, offset: 0x0 },
        plain: "000000300e736c75696365206b6e6f776e2d616e737765722074657374207061796c6f616421a0a1a2a3a4a5a6a7a8a9aaabacad",
        sealed: "000000305e4a5d5842aac479355420e98cee95bf6ceb1616b2165799531dc874c1ba7d7a8e593b4daf41c8a8c4e61e932d1c1579",
        tag: "48915546a36988a2c1ef063298474e2e",
    },
    Kat {
        cipher: "chacha20-poly1305@openssh.com",
        mac: "none",
        key: "04213e5b7895b2cfec092643607d9ab7d4f10e2b4865829fbcd9f613304d6a87a4c1defb1835526f8ca9c6e3001d3a577491aecbe805223f5c7996b3d0ed0a27",
        iv: "",
        mac_key: "",
        pos: PacketPos { seq: 0x7, index: 0x0, offset: 0x0 },
        plain: "0000002807736c75696365206b6e6f776e2d616e737765722074657374207061796c6f6164a0a1a2a3a4a5a6",
        sealed: "2a86d92969ab332a1d0938cf3fd2437f115e0f7336dbe2adcca924a6b4a571ae67e61ec88c0c28094a935a40",
        tag: "85be4d4e6673cb4cb2e5cb3d0511b58c",
    },
    Kat {
        cipher: "chacha20-poly1305@openssh.com",
        mac: "none",
        key: "04213e5b7895b2cfec092643607d9ab7d4f10e2b4865829fbcd9f613304d6a87a4c1defb1835526f8ca9c6e3001d3a577491aecbe805223f5c7996b3d0ed0a27",
        iv: "",
        mac_key: "",
        pos: PacketPos { seq: 0xffffffff, index: 0x0, offset: 0x0 },
        plain: "000000a807736c75696365206b6e6f776e2d616e737765722074657374207061796c6f6164736c75696365206b6e6f776e2d616e737765722074657374207061796c6f6164736c75696365206b6e6f776e2d616e737765722074657374207061796c6f6164736c75696365206b6e6f776e2d616e737765722074657374207061796c6f6164736c75696365206b6e6f776e2d616e737765722074657374207061796c6f6164a0a1a2a3a4a5a6",
        sealed: "213c5e66b1a6b0574c4088fc8a880483920c7724805baeee9558f11782550f571708b0e93b242d8e5ac91418caa717f0c1113132908347cb577102bd223a55d6a86d080d9981b4fdb390d4cf25e7322f8305f26264e1e208329d78d877443cca5910011e3dd15eca48bb6f555854825f8e41fcea2d4e8c50bc7e46d650c2a63b1084df01a308350363d866e01ce98bb662028551867c04bbd7ca2dee5e8af7fa1b003ea2e062776bcfd725a8",
        tag: "335d4f69420b7cc970415230cc7ffdf2",
    },
    Kat {
        cipher: "aes128-ctr",
        mac: "hmac-sha2-256",
        key: "011e3b587592afcce90623405d7a97b4",
        iv: "0825425f7c99b6d3f00d2a4764819ebb",
        mac_key: "05223f5c7996b3d0ed0a2744617e9bb8d5f20f2c496683a0bddaf714314e6b88",
        pos: PacketPos { seq: 0x3, index: 0x3, offset: 0x30 },
        plain: "0000002c0b736c75696365206b6e6f776e2d616e737765722074657374207061796c6f6164a0a1a2a3a4a5a6a7a8a9aa",
        sealed: "820ff64695c2d6f527533397d96483e5fa09ba254797144499753dd9423ad0b6eec4e53d005fc9cbfb3d4c7bef46cf8b",
        tag: "b3508c00a24b35e1f9c11af25d84cd5df5c710847fcc545e3a719ee1c0f3b940",
    },
    Kat {
        cipher: "aes192-ctr",
        mac: "hmac-sha2-512",
        key: "021f3c597693b0cdea0724415e7b98b5d2ef0c294663809d",
        iv: "000102030405060708090a0bfffffffe",
        mac_key: "0623405d7a97b4d1ee0b2845627f9cb9d6f3102d4a6784a1bedbf815324f6c89a6c3e0fd1a3754718eabc8e5021f3c597693b0cdea0724415e7b98b5d2ef0c29",
        pos: PacketPos { seq: 0x10000, index: 0x0, offset: 0x10 },
        plain: "0000006c0b736c75696365206b6e6f776e2d616e737765722074657374207061796c6f6164736c75696365206b6e6f776e2d616e737765722074657374207061796c6f6164736c75696365206b6e6f776e2d616e737765722074657374207061796c6f6164a0a1a2a3a4a5a6a7a8a9aa",
        sealed: "59f3868cd0292f4b31c36721cad540e7baf72ae5bb4bfdf30fd7f7e3b3fc9381d6201c9c379dfd0d004c45a9027eb702473cc1c63164678b9908d7626621bfcb5e3be2da5222fb299a84630d654cc428552e5f2e0640110ace2cdad15383f940b238b7dfe170a6f9b41192e934a80ead",
        tag: "9716a7ebff28411bc511c659729dd62eae84a48e12c549798a3c4d565dcc063ec54ffd1436add34d880cf4b4b17914b2901d1d68ff21c9c122cb841cc4e0942d",
    },
    Kat {
        cipher: "aes256-ctr",
        mac: "hmac-sha2-256-etm@openssh.com",
        key: "03203d5a7794b1ceeb0825425f7c99b6d3f00d2a4764819ebbd8f5122f4c6986",
        iv: "fffffffffffffffffffffffffffffffe",
        mac_key: "05223f5c7996b3d0ed0a2744617e9bb8d5f20f2c496683a0bddaf714314e6b88",
        pos: PacketPos { seq: 0xb, index: 0x0, offset: 0x0 },
        plain: "000000500f736c75696365206b6e6f776e2d616e737765722074657374207061796c6f6164736c75696365206b6e6f776e2d616e737765722074657374207061796c6f6164a0a1a2a3a4a5a6a7a8a9aaabacadae",
        sealed: "00000050d21c16703bc43b2a914ea2caf215de0ba232c7511886019369a670cc60e89aed0db45a7328b15ab9eeae5d7bbe2b7d17cb88c48a0ab53084d4c2ba736b8a1b3f0d94367e7679c0a88c14854154c08369",
        tag: "6abb0cb2d7f126e110824da3649ebdc3b12bc1cb2a9d783c6747b256755e2737",
    },
    Kat {
        cipher: "aes128-ctr",
        mac: "hmac-sha2-512-etm@openssh.com",
        key: "011e3b587592afcce90623405d7a97b4",
        iv: "0825425f7c99b6d3f00d2a4764819ebb",
        mac_key: "0623405d7a97b4d1ee0b2845627f9cb9d6f3102d4a6784a1bedbf815324f6c89a6c3e0fd1a3754718eabc8e5021f3c597693b0cdea0724415e7b98b5d2ef0c29",
        pos: PacketPos { seq: 0x1, index: 0x0, offset: 0x1230 },
        plain: "000000300f736c75696365206b6e6f776e2d616e737765722074657374207061796c6f6164a0a1a2a3a4a5a6a7a8a9aaabacadae",
        sealed: "000000301a296014cc3a9dcbb2a89c946e67f975f79555cd4683665a52851fb96ba6779eabcf50c38436608d3aa84614f88f7057",
        tag: "ab055a4edb03c08f4afcf0c613c6872ea65523067b596a7d2ee95f01c084aea9340651e039f41c23b375390c68b457ddb57d2e3daf7e31d2f164a0569568a864",
    },
    Kat {
        cipher: "none",
        mac: "hmac-sha2-256",
        key: "",
        iv: "",
        mac_key: "05223f5c7996b3d0ed0a2744617e9bb8d5f20f2c496683a0bddaf714314e6b88",
        pos: PacketPos { seq: 0x2a, index: 0x0, offset: 0x0 },
        plain: "0000002c0b736c75696365206b6e6f776e2d616e737765722074657374207061796c6f6164a0a1a2a3a4a5a6a7a8a9aa",
        sealed: "0000002c0b736c75696365206b6e6f776e2d616e737765722074657374207061796c6f6164a0a1a2a3a4a5a6a7a8a9aa",
        tag: "c8eed034e7d86a7b9da9acbb7408ea0ba74bf746ed04919c618668f190b1bc86",
    },
    Kat {
        cipher: "none",
        mac: "hmac-sha2-512-etm@openssh.com",
        key: "",
        iv: "",
        mac_key: "0623405d7a97b4d1ee0b2845627f9cb9d6f3102d4a6784a1bedbf815324f6c89a6c3e0fd1a3754718eabc8e5021f3c597693b0cdea0724415e7b98b5d2ef0c29",
        pos: PacketPos { seq: 0x5, index: 0x0, offset: 0x0 },
        plain: "0000002807736c75696365206b6e6f776e2d616e737765722074657374207061796c6f6164a0a1a2a3a4a5a6",
        sealed: "0000002807736c75696365206b6e6f776e2d616e737765722074657374207061796c6f6164a0a1a2a3a4a5a6",
        tag: "a9017490dba0e5dd1a3c1899c847cab2a488ab3bef04105c52afc853d92091207caaef5e4eb896c07a57951710a09c866733151d6f6b805a75dd0d0c4beb2cb5",
    },
    Kat {
        cipher: "none",
        mac: "none",
        key: "",
        iv: "",
        mac_key: "",
        pos: PacketPos { seq: 0x0, index: 0x0, offset: 0x0 },
        plain: "0000002c0b736c75696365206b6e6f776e2d616e737765722074657374207061796c6f6164a0a1a2a3a4a5a6a7a8a9aa",
        sealed: "0000002c0b736c75696365206b6e6f776e2d616e737765722074657374207061796c6f6164a0a1a2a3a4a5a6a7a8a9aa",
        tag: "",
    },
];

#[test]
fn known_answers_seal_decrypt_length_and_open() {
    for k in KATS {
        let (key, iv, mac_key) = (from_hex(k.key), from_hex(k.iv), from_hex(k.mac_key));
        let keys = DirectionKeys {
            cipher: k.cipher,
            mac: k.mac,
            key: &key,
            iv: &iv,
            mac_key: &mac_key,
        };
        let (s, o) = (sealer(keys).unwrap(), opener(keys).unwrap());
        let plain = from_hex(k.plain);
        let mut p = plain.clone();
        let mut tag = vec![0u8; s.tag_len()];
        s.seal(k.pos, &mut p, &mut tag);
        let what = format!("{} {} {:?}", k.cipher, k.mac, k.pos);
        assert_eq!(to_hex(&p), k.sealed, "sealed {what}");
        assert_eq!(to_hex(&tag), k.tag, "tag {what}");

        let len = o.decrypt_length(k.pos, &p[..o.length_bytes()]).unwrap();
        assert_eq!(len as usize, plain.len() - 4, "length {what}");
        o.open(k.pos, &mut p, &tag).unwrap();
        assert_eq!(p, plain, "open {what}");
    }
}

#[test]
fn known_answers_cover_every_family() {
    let has = |f: &dyn Fn(&Kat) -> bool| KATS.iter().any(f);
    for c in [
        "aes128-gcm@openssh.com",
        "aes256-gcm@openssh.com",
        "chacha20-poly1305@openssh.com",
    ] {
        assert!(has(&|k| k.cipher == c), "{c}");
    }
    for c in ["aes128-ctr", "aes192-ctr", "aes256-ctr", "none"] {
        assert!(has(&|k| k.cipher == c), "{c}");
    }
    for m in [
        "hmac-sha2-256",
        "hmac-sha2-512",
        "hmac-sha2-256-etm@openssh.com",
        "hmac-sha2-512-etm@openssh.com",
    ] {
        assert!(has(&|k| k.mac == m && k.cipher.ends_with("-ctr")), "{m}");
    }
}
