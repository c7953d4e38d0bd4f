//! Tests for host-key signatures: known answers from OpenSSH-made keys
//! (`testdata/hostkey.kat`: keys by ssh-keygen 9.2p1, signatures by Python
//! `cryptography`), round trips, tampering and strict parsing.

use super::*;
use crate::wire::Writer;
use aws_lc_rs::encoding::AsBigEndian;
use aws_lc_rs::signature::KeyPair as _;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn kat(name: &str) -> Vec<u8> {
    let text = include_str!("testdata/hostkey.kat");
    let prefix = format!("{name}=");
    hex(text
        .lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("{name}")))
}

fn flip(mut v: Vec<u8>, at: usize) -> Vec<u8> {
    let i = at.min(v.len() - 1);
    v[i] ^= 1;
    v
}

const KAT_SIGS: &[(&str, &str)] = &[
    ("ed25519", "ssh-ed25519"),
    ("ecdsa256", "ecdsa-sha2-nistp256"),
    ("ecdsa384", "ecdsa-sha2-nistp384"),
    ("ecdsa521", "ecdsa-sha2-nistp521"),
    ("rsa3072", "rsa-sha2-256"),
    ("rsa3072", "rsa-sha2-512"),
    ("rsa2048", "rsa-sha2-256"),
    ("rsa2048", "rsa-sha2-512"),
];

fn kat_sig(key: &str, alg: &str) -> Vec<u8> {
    if key.starts_with("rsa") {
        kat(&format!("{key}.{alg}"))
    } else {
        kat(&format!("{key}.sig"))
    }
}

#[test]
fn verifies_openssh_key_signatures() {
    let msg = kat("msg");
    for &(key, alg) in KAT_SIGS {
        let blob = kat(&format!("{key}.pub"));
        let sig = kat_sig(key, alg);
        verify(alg, &blob, &sig, &msg).unwrap_or_else(|_| panic!("{key} {alg}"));
        assert!(
            verify(alg, &blob, &sig, &flip(msg.clone(), 3)).is_err(),
            "{key} data"
        );
        assert!(
            verify(alg, &blob, &flip(sig.clone(), sig.len() - 5), &msg).is_err(),
            "{key} sig"
        );
        assert!(
            verify(alg, &flip(blob.clone(), blob.len() - 5), &sig, &msg).is_err(),
            "{key} key"
        );
        // Another algorithm name, even one valid for this key, fails.
        for &other in DEFAULT_SIG_ALGS.iter().filter(|&&a| a != alg) {
            assert!(verify(other, &blob, &sig, &msg).is_err(), "{key} {other}");
        }
        if alg != "ssh-rsa" {
            assert!(verify("ssh-rsa", &blob, &sig, &msg).is_err());
        }
        // Trailing bytes after the signature blob or key blob.
        assert!(verify(alg, &blob, &[sig.as_slice(), &[0]].concat(), &msg).is_err());
        assert!(verify(alg, &[blob.as_slice(), &[0]].concat(), &sig, &msg).is_err());
    }
}

#[test]
fn keys_from_openssh_components_match_openssh() {
    let msg = kat("msg");
    // Ed25519 and RSA PKCS#1 v1.5 are deterministic: our signatures must equal Python's.
    let ed = KeyPair::from_ed25519_seed(&kat("ed25519.seed")).unwrap();
    assert_eq!(ed.public_blob(), kat("ed25519.pub"));
    assert_eq!(ed.sign("ssh-ed25519", &msg).unwrap(), kat("ed25519.sig"));
    assert_eq!(ed.ed25519_seed().unwrap().to_vec(), kat("ed25519.seed"));
    assert_eq!(ed.sig_algs(), ["ssh-ed25519"]);

    for (key, curve, alg) in [
        ("ecdsa256", "nistp256", "ecdsa-sha2-nistp256"),
        ("ecdsa384", "nistp384", "ecdsa-sha2-nistp384"),
        ("ecdsa521", "nistp521", "ecdsa-sha2-nistp521"),
    ] {
        let scalar = kat(&format!("{key}.scalar"));
        let point = kat(&format!("{key}.point"));
        let kp = KeyPair::from_ecdsa(curve, &scalar, &point).unwrap();
        assert_eq!(kp.public_blob(), kat(&format!("{key}.pub")));
        assert_eq!(kp.sig_algs(), [alg]);
        assert!(kp.ed25519_seed().is_none());
        let sig = kp.sign(alg, &msg).unwrap();
        verify(alg, &kp.public_blob(), &sig, &msg).unwrap();
        // As an mpint with a leading zero byte, the scalar still loads.
        let padded = [&[0u8][..], &scalar].concat();
        assert!(KeyPair::from_ecdsa(curve, &padded, &point).is_ok());
        // Mismatched scalar and point, or a point of another curve.
        assert!(KeyPair::from_ecdsa(curve, &flip(scalar.clone(), 5), &point).is_err());
        let other = if curve == "nistp256" {
            "ecdsa384"
        } else {
            "ecdsa256"
        };
        assert!(KeyPair::from_ecdsa(curve, &scalar, &kat(&format!("{other}.point"))).is_err());
    }
    assert!(KeyPair::from_ecdsa("nistp999", &[1], &[4]).is_err());

    for key in ["rsa3072", "rsa2048"] {
        let c = |f: &str| kat(&format!("{key}.{f}"));
        assert_eq!(
            *bignum::rem(&c("d"), &bignum::sub_one(&c("p")).unwrap()).unwrap(),
            pad(&c("dp"), c("p").len())
        );
        assert_eq!(
            *bignum::rem(&c("d"), &bignum::sub_one(&c("q")).unwrap()).unwrap(),
            pad(&c("dq"), c("q").len())
        );
        // OpenSSH's mpints carry a leading zero byte when the top bit is set.
        let n = [&[0u8][..], &c("n")].concat();
        let kp = KeyPair::from_rsa(&n, &c("e"), &c("d"), &c("iqmp"), &c("p"), &c("q")).unwrap();
        assert_eq!(kp.public_blob(), c("pub"));
        assert_eq!(kp.sig_algs(), ["rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"]);
        assert_eq!(kp.sign("rsa-sha2-256", &msg).unwrap(), c("rsa-sha2-256"));
        assert_eq!(kp.sign("rsa-sha2-512", &msg).unwrap(), c("rsa-sha2-512"));
        // SHA-1 is made here (aws-lc-rs will not) and checked by aws-lc.
        let sha1 = kp.sign("ssh-rsa", &msg).unwrap();
        verify("ssh-rsa", &c("pub"), &sha1, &msg).unwrap();
        assert!(verify("rsa-sha2-256", &c("pub"), &sha1, &msg).is_err());
        assert!(kp.sign("ssh-ed25519", &msg).is_err());
        // p and q swapped makes iqmp wrong: aws-lc rejects the key.
        assert!(KeyPair::from_rsa(&n, &c("e"), &c("d"), &c("iqmp"), &c("q"), &c("p")).is_err());
        assert!(
            KeyPair::from_rsa(&n, &c("e"), &flip(c("d"), 10), &c("iqmp"), &c("p"), &c("q"))
                .is_err()
        );
    }
}

fn pad(v: &[u8], len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len - v.len()];
    out.extend_from_slice(v);
    out
}

#[test]
fn round_trips_with_fresh_keys() {
    let data = b"exchange hash";
    let mut keys = vec![KeyPair::generate_ed25519().unwrap()];
    for (alg, id) in [
        (&signature::ECDSA_P256_SHA256_FIXED_SIGNING, "nistp256"),
        (&signature::ECDSA_P384_SHA384_FIXED_SIGNING, "nistp384"),
        (&signature::ECDSA_P521_SHA512_FIXED_SIGNING, "nistp521"),
    ] {
        let k = signature::EcdsaKeyPair::generate(alg).unwrap();
        let scalar = k.private_key().as_be_bytes().unwrap();
        keys.push(KeyPair::from_ecdsa(id, scalar.as_ref(), k.public_key().as_ref()).unwrap());
    }
    let seed = keys[0].ed25519_seed().unwrap();
    assert_eq!(
        KeyPair::from_ed25519_seed(&seed).unwrap().public_blob(),
        keys[0].public_blob()
    );
    for kp in &keys {
        let blob = kp.public_blob();
        assert_eq!(blob_key_type(&blob), Some(kp.key_type()));
        for alg in kp.sig_algs() {
            for _ in 0..8 {
                // Repeated ECDSA signatures exercise r and s with and without a sign byte.
                let sig = kp.sign(alg, data).unwrap();
                verify(alg, &blob, &sig, data).unwrap();
                assert!(verify(alg, &blob, &sig, b"exchange hasH").is_err());
            }
        }
        assert!(kp.sign("rsa-sha2-256", data).is_err());
    }
}

#[test]
fn rejects_malformed_blobs() {
    let msg = kat("msg");
    assert_eq!(blob_key_type(&kat("rsa3072.pub")), Some("ssh-rsa"));
    assert_eq!(blob_key_type(&[0, 0, 0, 9, b'x']), None);
    assert_eq!(
        sig_algs_for_key_type("ssh-rsa"),
        ["rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"]
    );
    assert_eq!(
        sig_algs_for_key_type("ecdsa-sha2-nistp384"),
        ["ecdsa-sha2-nistp384"]
    );
    assert!(sig_algs_for_key_type("ssh-dss").is_empty());
    assert!(verify("ssh-ed25519", &[], &[], &msg).is_err());

    // ECDSA: rebuild the KAT signature with an oversized r, trailing data
    // inside the (r, s) string, or r padded with extra zero bytes (accepted,
    // as OpenSSH accepts it).
    let blob = kat("ecdsa256.pub");
    let sig = kat("ecdsa256.sig");
    let mut outer = Reader::new(&sig);
    assert_eq!(outer.string().unwrap(), b"ecdsa-sha2-nistp256");
    let mut inner = Reader::new(outer.string().unwrap());
    let r = strip_zeros(inner.mpint().unwrap()).to_vec();
    let s = strip_zeros(inner.mpint().unwrap()).to_vec();
    let build = |r: &[u8], s: &[u8], extra: &[u8]| {
        let mut v = Vec::new();
        Writer::new(&mut v).utf8("ecdsa-sha2-nistp256").nested(|w| {
            w.string(r).string(s).bytes(extra);
        });
        v
    };
    let with_sign = |m: &[u8]| [&[0u8][..], m].concat();
    verify(
        "ecdsa-sha2-nistp256",
        &blob,
        &build(&with_sign(&r), &with_sign(&s), &[]),
        &msg,
    )
    .unwrap();
    let zeros = [&[0u8; 3][..], &with_sign(&r)].concat();
    verify(
        "ecdsa-sha2-nistp256",
        &blob,
        &build(&zeros, &with_sign(&s), &[]),
        &msg,
    )
    .unwrap();
    assert!(verify(
        "ecdsa-sha2-nistp256",
        &blob,
        &build(&with_sign(&r), &with_sign(&s), &[0]),
        &msg
    )
    .is_err());
    let big = [&[1u8][..], &r].concat();
    assert!(verify(
        "ecdsa-sha2-nistp256",
        &blob,
        &build(&big, &with_sign(&s), &[]),
        &msg
    )
    .is_err());
    if r[0] & 0x80 != 0 {
        // Without its sign byte r reads as negative.
        assert!(verify(
            "ecdsa-sha2-nistp256",
            &blob,
            &build(&r, &with_sign(&s), &[]),
            &msg
        )
        .is_err());
    }

    // A key blob naming a different curve than its type, or a compressed point.
    let mut r = Reader::new(&blob);
    r.string().unwrap();
    r.string().unwrap();
    let q = r.string().unwrap().to_vec();
    let key = |ty: &str, id: &str, q: &[u8]| {
        let mut v = Vec::new();
        Writer::new(&mut v).utf8(ty).utf8(id).string(q);
        v
    };
    verify(
        "ecdsa-sha2-nistp256",
        &key("ecdsa-sha2-nistp256", "nistp256", &q),
        &sig,
        &msg,
    )
    .unwrap();
    assert!(verify(
        "ecdsa-sha2-nistp256",
        &key("ecdsa-sha2-nistp256", "nistp384", &q),
        &sig,
        &msg
    )
    .is_err());
    let mut compressed = q[..33].to_vec();
    compressed[0] = 2 | (q[64] & 1);
    assert!(verify(
        "ecdsa-sha2-nistp256",
        &key("ecdsa-sha2-nistp256", "nistp256", &compressed),
        &sig,
        &msg
    )
    .is_err());

    // RSA: a signature longer than the modulus fails, even by a zero byte
    // (as in OpenSSH); one missing its leading zero byte is padded back.
    let rblob = kat("rsa2048.pub");
    let rsig = kat("rsa2048.rsa-sha2-256");
    let mut rr = Reader::new(&rsig);
    rr.string().unwrap();
    let raw = rr.string().unwrap();
    let mut long = Vec::new();
    Writer::new(&mut long)
        .utf8("rsa-sha2-256")
        .string(&[&[0u8][..], raw].concat());
    assert!(verify("rsa-sha2-256", &rblob, &long, &msg).is_err());
    let short_msg = kat("rsa2048.short_msg");
    let short = kat("rsa2048.short_sig");
    verify("rsa-sha2-256", &rblob, &short, &short_msg).unwrap();
    assert!(verify("rsa-sha2-256", &rblob, &short, &msg).is_err());
}
