//! The NONE cipher and MAC switch (HPN-SSH's NoneSwitch): only after
//! authentication, only when both ends allow it, never for interactive
//! sessions; a declining peer leaves the session encrypted.

mod common;
use common::*;

fn established() -> Pair {
    let mut p = Pair::new(
        "curve25519-sha256",
        "ssh-ed25519",
        "aes128-ctr",
        "hmac-sha2-256-etm@openssh.com",
    );
    p.establish();
    p
}

fn cipher_and_mac(p: &Pair) -> (String, String) {
    let a = p.client.algorithms().unwrap();
    assert_eq!(a.cipher_c2s, a.cipher_s2c);
    (a.cipher_c2s.clone(), a.mac_c2s.clone())
}

#[test]
fn both_ends_allow_none_cipher_and_mac() {
    let mut p = established();
    p.server.allow_none(true).unwrap();
    p.client.switch_to_none(true).unwrap();
    p.drive().unwrap();
    assert_eq!(cipher_and_mac(&p), ("none".into(), "none".into()));
    assert!(p.client.none_active() && p.server.none_active());
    let up = pattern(1 << 20, 1);
    p.upload(&up);
    assert!(p.server_data == up);
    let down = pattern(700_000, 2);
    p.download(&down);
    assert!(p.client_data == down);
}

#[test]
fn none_cipher_keeps_a_mac_unless_both_allow_none_mac() {
    let mut p = established();
    p.server.allow_none(false).unwrap();
    p.client.switch_to_none(true).unwrap();
    p.drive().unwrap();
    assert_eq!(
        cipher_and_mac(&p),
        ("none".into(), "hmac-sha2-256-etm@openssh.com".into())
    );
    let up = pattern(300_000, 3);
    p.upload(&up);
    assert!(p.server_data == up);
}

#[test]
fn a_server_that_does_not_allow_none_keeps_the_session_encrypted() {
    let mut p = established();
    p.client.switch_to_none(true).unwrap();
    p.drive().unwrap();
    assert_eq!(
        cipher_and_mac(&p),
        ("aes128-ctr".into(), "hmac-sha2-256-etm@openssh.com".into())
    );
    assert!(!p.client.none_active());
    let up = pattern(300_000, 4);
    p.upload(&up);
    assert!(p.server_data == up);
}

#[test]
fn none_mac_is_never_paired_with_a_real_cipher() {
    // A server offering the NONE MAC but not the NONE cipher (HPN's
    // NoneMacEnabled alone) must not get an unauthenticated AES stream.
    let mut p = Pair::new(
        "curve25519-sha256",
        "ssh-ed25519",
        "aes128-ctr",
        "hmac-sha2-256",
    );
    p.server = sluice_proto::Connection::server(
        sluice_proto::ServerConfig {
            common: sluice_proto::Config {
                kex: vec!["curve25519-sha256".into()],
                host_key_algs: vec!["ssh-ed25519".into()],
                ciphers: vec!["aes128-ctr".into()],
                macs: vec!["hmac-sha2-256".into(), "none".into()],
                ..sluice_proto::Config::default()
            },
            host_keys: vec![host_key_for("ssh-ed25519")],
            auth_methods: vec!["publickey".into()],
            max_auth_tries: 6,
            banner: None,
        },
        Box::new(sluice_proto::crypto::SystemRng),
    );
    p.establish();
    p.client.switch_to_none(true).unwrap();
    p.drive().unwrap();
    assert_eq!(
        cipher_and_mac(&p),
        ("aes128-ctr".into(), "hmac-sha2-256".into())
    );
}

#[test]
fn not_before_authentication_nor_in_interactive_sessions() {
    let mut p = Pair::default_algs();
    assert!(p.client.allow_none(true).is_err());
    assert!(p.server.allow_none(true).is_err());
    p.establish();
    // A pty or shell was asked for: NONE is refused from then on.
    assert!(!p.client.mark_interactive());
    assert!(p.client.switch_to_none(true).is_err());
    // Switched first, then a pty asked for: the runtime learns it must refuse.
    let mut p = established();
    p.server.allow_none(true).unwrap();
    p.client.switch_to_none(false).unwrap();
    p.drive().unwrap();
    assert!(p.server.mark_interactive());
}

#[test]
fn a_pty_during_a_server_started_rekey_offering_none_is_refused() {
    // Both ends allow NONE; the server starts a re-key (its KEXINIT lists
    // `none` last) and, before the client's KEXINIT comes, a pty is asked
    // for: the client may still pick `none`, so the pty is refused.
    let mut p = established();
    p.server.allow_none(true).unwrap();
    p.client.allow_none(true).unwrap();
    p.server.rekey();
    assert!(p.server.mark_interactive(), "undecided: refused");
    p.drive().unwrap();
    // The client picked NONE, as it could: the refusal was right, and the
    // connection goes on (no pty was granted).
    assert!(p.server.none_active());
    assert!(!p.server.is_closed());
}

#[test]
fn a_pty_granted_before_a_rekey_keeps_none_out_of_it() {
    // The pty came first: the server's next KEXINIT omits `none`, so the
    // client's switch cannot end in the clear.
    let mut p = established();
    p.server.allow_none(true).unwrap();
    assert!(!p.server.mark_interactive(), "granted");
    p.server.rekey();
    p.drive().unwrap();
    p.client.switch_to_none(true).unwrap();
    p.drive().unwrap();
    assert!(!p.server.none_active() && !p.client.none_active());
    assert!(!p.server.is_closed());
}

#[test]
fn none_mac_is_reported() {
    let mut p = established();
    p.server.allow_none(true).unwrap();
    p.client.switch_to_none(false).unwrap();
    p.drive().unwrap();
    assert!(p.server.none_active() && !p.server.none_mac_active());
    let mut p = established();
    p.server.allow_none(true).unwrap();
    p.client.switch_to_none(true).unwrap();
    p.drive().unwrap();
    assert!(p.server.none_mac_active() && p.client.none_mac_active());
}

#[test]
fn a_switch_finished_by_our_newkeys_is_an_event_before_more_input() {
    // The client's NONE re-key: the server's NEWKEYS arrives first, the
    // exchange completes when ours is framed, so KexDone is queued by
    // sending. A runtime asks has_events() before it sleeps (sluice's pump
    // once slept on it until the next packet: a command's exit).
    let mut p = established();
    p.server.allow_none(false).unwrap();
    p.client.switch_to_none(false).unwrap();
    for _ in 0..20 {
        let mut out = Vec::new();
        p.client.poll_transmit(p.now, &mut out);
        let done_by_sending = p.client.has_events();
        p.c2s.extend_from_slice(&out);
        if done_by_sending {
            let e = p.client.poll_event();
            assert!(
                matches!(e, Some(sluice_proto::Event::KexDone { initial: false, .. })),
                "{e:?}"
            );
            assert!(p.client.none_active());
            return;
        }
        p.step().unwrap();
    }
    panic!("the NONE switch never completed on sending");
}
