//! A hostile child against the real monitor loops: in place of the
//! pre-auth child and of the post-auth process, a test end of the
//! socketpair sends every message type in every state it can bring the
//! monitor to, and past every count; each request the table (policy.rs)
//! does not allow must end the connection with nothing signed and nothing
//! allocated.

use super::accepted::Accepted;
use super::datagram;
use super::mauth::MonitorAuth;
use super::monitor::preauth_phase;
use super::policy::{Pre, Req, Turns};
use super::postauth::serve_requests;
use super::signer::KeyHolder;
use super::wire::{Handover, Method, Msg};
use crate::config::sshd::ServerConfig as Sshd;
use crate::server::logins::Logins;
use sluice_proto::crypto::hostkey::{KeyPair, Signer};
use sluice_proto::stripe::codec::JoinRequest;
use sluice_proto::wire::Writer;
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::thread::JoinHandle;
use zeroize::Zeroizing;

const PEER: &str = "127.0.0.1:40000";
const LOCAL: &str = "127.0.0.1:22";

/// A key exchange transcript with host key `k_s` (`q` varies the values).
fn transcript(k_s: &[u8], q: u8) -> Zeroizing<Vec<u8>> {
    let kexinit = [vec![20u8], vec![q; 16], vec![0; 45]].concat();
    let mut buf = Vec::new();
    Writer::new(&mut buf)
        .utf8("SSH-2.0-OpenSSH_9.2")
        .utf8("SSH-2.0-sluice_0.1")
        .string(&kexinit)
        .string(&kexinit)
        .string(k_s)
        .string(&[q; 32])
        .string(&[q; 32])
        .string(&[1; 33]);
    Zeroizing::new(buf)
}

/// One of every message a child could send, named.
fn every_message(host_blob: &[u8]) -> Vec<(&'static str, Msg)> {
    let join = JoinRequest {
        session_ref: vec![4; 32],
        join_number: 1,
        proof: [5; 32],
    };
    vec![
        (
            "Log",
            Msg::Log {
                level: 3,
                line: "Accepted password for root from 203.0.113.66".into(),
            },
        ),
        (
            "SignExchange",
            Msg::SignExchange {
                key: 0,
                alg: "ssh-ed25519".into(),
                hash: 2,
                transcript: transcript(host_blob, 9),
            },
        ),
        (
            "Auth",
            Msg::Auth {
                user: "nosuchuser-hostile".into(),
                method: Method::None,
            },
        ),
        (
            "InfoResponse",
            Msg::InfoResponse(vec![Zeroizing::new("x".into())]),
        ),
        ("State", Msg::State(Zeroizing::new(vec![0; 16]))),
        (
            "ProveHostKey",
            Msg::ProveHostKey {
                key: 0,
                alg: "ssh-ed25519".into(),
            },
        ),
        (
            "SockBuf",
            Msg::SockBuf {
                rcvbuf: 1 << 20,
                sndbuf: 1 << 20,
            },
        ),
        ("PtyRequest", Msg::PtyRequest),
        (
            "PtyRelease",
            Msg::PtyRelease {
                tty: "/dev/pts/0".into(),
            },
        ),
        ("StripeGrant", Msg::StripeGrant { wanted: 2 }),
        ("HostKeys", Msg::HostKeys(vec![host_blob.to_vec()])),
        ("Signature", Msg::Signature(vec![1; 64])),
        (
            "Policy",
            Msg::Policy {
                methods: vec!["password".into()],
                max_tries: 6,
                banner: None,
            },
        ),
        ("Accept", Msg::Accept),
        ("Reject", Msg::Reject),
        (
            "Partial",
            Msg::Partial {
                methods: vec!["password".into()],
            },
        ),
        (
            "InfoRequest",
            Msg::InfoRequest {
                instruction: String::new(),
                prompts: vec![("Password: ".into(), false)],
            },
        ),
        ("Input", Msg::Input(vec![1, 2, 3])),
        ("End", Msg::End),
        (
            "Start",
            Msg::Start {
                user: "root".into(),
                key_options: None,
                host_keys: vec![],
                auth_info: String::new(),
                pam_env: vec![],
            },
        ),
        ("SockBufGranted", Msg::SockBufGranted(Some((1, 1)))),
        ("PtyGranted", Msg::PtyGranted),
        ("StripeGranted", Msg::StripeGranted(None)),
        (
            "JoinAsk",
            Msg::JoinAsk {
                session_id: vec![1; 32],
                user: "root".into(),
                request: join,
                peer: PEER.parse().unwrap(),
                local: LOCAL.parse().unwrap(),
            },
        ),
        ("JoinAdmitted", Msg::JoinAdmitted(1)),
        ("JoinRefused", Msg::JoinRefused("no".into())),
    ]
}

/// The account this test runs as, and its configuration: publickey with
/// `key`'s public half in a temporary authorized_keys.
struct Login {
    user: String,
    key: KeyPair,
    cfg: Sshd,
    _dir: std::path::PathBuf,
}

impl Login {
    fn new(tag: &str) -> Login {
        // SAFETY: geteuid has no preconditions.
        let uid = unsafe { libc::geteuid() };
        let user = crate::users::by_uid(uid)
            .expect("the test's own account")
            .name;
        let key = KeyPair::generate_ed25519().unwrap();
        let dir = std::env::temp_dir().join(format!("sluice-hostile-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ak = dir.join("authorized_keys");
        let line = format!("ssh-ed25519 {}\n", base64_of(&key.public_blob()));
        std::fs::write(&ak, line).unwrap();
        let o: Vec<String> = vec![
            format!("AuthorizedKeysFile={}", ak.display()),
            "StrictModes=no".into(),
            "PermitRootLogin=yes".into(),
            "UsePAM=no".into(),
        ];
        let cfg = Sshd::load(std::path::Path::new("/dev/null"), &o).unwrap().0;
        Login {
            user,
            key,
            cfg,
            _dir: dir,
        }
    }
}

impl Drop for Login {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self._dir);
    }
}

fn base64_of(b: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in b.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

type PreResult = (Result<Option<Handover>, String>, u32);

/// The real pre-auth loop on a thread, with one host key; the child's end
/// and the host key's blob.
fn monitor_pre(cfg: Sshd) -> (OwnedFd, Vec<u8>, JoinHandle<PreResult>) {
    let (m, c) = datagram::socketpair().unwrap();
    let host: Arc<dyn Signer> = Arc::new(KeyPair::generate_ed25519().unwrap());
    let blob = host.public_blob();
    let h = std::thread::spawn(move || {
        let mut keys = KeyHolder::new(vec![host]);
        let mut auth = MonitorAuth::new(cfg, PEER.parse().unwrap(), LOCAL.parse().unwrap());
        let r = preauth_phase(None, &m, &mut keys, &mut auth).map_err(|e| e.to_string());
        (r, keys.signed())
    });
    (c, blob, h)
}

fn ask(c: &OwnedFd, m: &Msg) -> Msg {
    datagram::send(c, m).unwrap();
    datagram::recv(c, 5000).unwrap().expect("an answer")
}

/// Brings a fresh monitor to `state`; None where this harness cannot
/// (Waiting and Prompted come from PAM; see the waiting test below).
fn bring_to(state: Pre, login: &Login) -> Option<(OwnedFd, Vec<u8>, JoinHandle<PreResult>)> {
    let (c, blob, h) = monitor_pre(login.cfg.clone());
    match state {
        Pre::Kex => {}
        Pre::Auth | Pre::Accepted | Pre::Closed => {
            let t = transcript(&blob, 1);
            let sig = ask(
                &c,
                &Msg::SignExchange {
                    key: 0,
                    alg: "ssh-ed25519".into(),
                    hash: 2,
                    transcript: t.clone(),
                },
            );
            assert!(matches!(sig, Msg::Signature(_)));
            let sid = sluice_proto::crypto::kex::HashAlg::Sha256.digest(&t);
            if state == Pre::Accepted {
                let data = sluice_proto::msg::publickey_signed_data(
                    &sid,
                    &login.user,
                    "ssh-connection",
                    "ssh-ed25519",
                    &login.key.public_blob(),
                    Some(&blob),
                );
                let signature = Some(login.key.sign("ssh-ed25519", &data).unwrap());
                datagram::send(
                    &c,
                    &Msg::Auth {
                        user: login.user.clone(),
                        method: Method::PublicKey {
                            algorithm: "ssh-ed25519".into(),
                            key_blob: login.key.public_blob(),
                            // As OpenSSH 8.9+ clients: bound to the host key.
                            host_key: Some(blob.clone()),
                            signature,
                        },
                    },
                )
                .unwrap();
                let verdict = verdict(&c);
                assert_eq!(verdict, Msg::Accept, "the harness's login");
            }
            if state == Pre::Closed {
                // MaxAuthTries (6) failed passwords.
                for _ in 0..login.cfg.max_auth_tries {
                    datagram::send(
                        &c,
                        &Msg::Auth {
                            user: login.user.clone(),
                            method: Method::Password(Zeroizing::new("wrong".into())),
                        },
                    )
                    .unwrap();
                    assert_eq!(verdict(&c), Msg::Reject);
                }
            }
        }
        Pre::Waiting | Pre::Prompted => return None,
    }
    Some((c, blob, h))
}

/// The verdict after a policy message, if one comes first.
fn verdict(c: &OwnedFd) -> Msg {
    loop {
        match datagram::recv(c, 5000).unwrap().expect("a verdict") {
            Msg::Policy { .. } => continue,
            m => return m,
        }
    }
}

fn end(c: OwnedFd, h: JoinHandle<PreResult>) -> PreResult {
    drop(c);
    h.join().unwrap()
}

#[test]
fn the_pre_auth_monitor_ends_the_connection_on_every_request_out_of_turn() {
    let login = Login::new("pre");
    let mut tried = 0;
    for state in Pre::ALL {
        let names: Vec<&str> = every_message(&[]).iter().map(|(n, _)| *n).collect();
        for name in names {
            let Some((c, blob, h)) = bring_to(state, &login) else {
                continue;
            };
            let msg = every_message(&blob)
                .into_iter()
                .find(|(n, _)| *n == name)
                .unwrap()
                .1;
            let allowed = Turns::new()
                .pre(state, Req::of(&msg), login.cfg.max_auth_tries)
                .is_ok();
            let signed_before = u32::from(state != Pre::Kex);
            datagram::send(&c, &msg).unwrap();
            if allowed {
                // Allowed here: the monitor acts on it (tested elsewhere).
                drop(end(c, h));
                continue;
            }
            let (r, signed) = end(c, h);
            let why = r
                .err()
                .unwrap_or_else(|| panic!("{name} in {state:?} was taken"));
            assert!(
                why.contains("request"),
                "{name} in {state:?}: ended for another reason: {why}"
            );
            assert_eq!(
                signed, signed_before,
                "{name} in {state:?} signed something"
            );
            tried += 1;
        }
    }
    assert!(tried > 80, "only {tried} refusals tried");
}

#[test]
fn the_pre_auth_monitor_counts() {
    let login = Login::new("count");
    // A second exchange before authentication: one Sign, as sshd's MON_ONCE.
    let (c, blob, h) = bring_to(Pre::Auth, &login).unwrap();
    datagram::send(
        &c,
        &Msg::SignExchange {
            key: 0,
            alg: "ssh-ed25519".into(),
            hash: 2,
            transcript: transcript(&blob, 2),
        },
    )
    .unwrap();
    let (r, signed) = end(c, h);
    assert!(r.is_err());
    assert_eq!(signed, 1);
    // `none` requests (whose failures MaxAuthTries does not count) past
    // the table's limit.
    let (c, _, h) = bring_to(Pre::Auth, &login).unwrap();
    let limit = 2 * login.cfg.max_auth_tries + 16;
    for _ in 0..limit {
        datagram::send(
            &c,
            &Msg::Auth {
                user: "nosuchuser-hostile".into(),
                method: Method::None,
            },
        )
        .unwrap();
        assert_eq!(verdict(&c), Msg::Reject);
    }
    datagram::send(
        &c,
        &Msg::Auth {
            user: "nosuchuser-hostile".into(),
            method: Method::None,
        },
    )
    .unwrap();
    let (r, _) = end(c, h);
    assert!(r.unwrap_err().contains("past the limit"));
    // A request while the last one waits for its (delayed) verdict.
    let (c, _, h) = bring_to(Pre::Auth, &login).unwrap();
    let pw = Msg::Auth {
        user: login.user.clone(),
        method: Method::Password(Zeroizing::new("wrong".into())),
    };
    datagram::send(&c, &pw).unwrap();
    datagram::send(&c, &pw).unwrap();
    // Read what the monitor answers (the user's policy) until it closes.
    while let Ok(Some(_)) = datagram::recv(&c, 5000) {}
    let (r, _) = end(c, h);
    assert!(
        r.as_ref()
            .unwrap_err()
            .contains("while a verdict is pending"),
        "{r:?}"
    );
}

type PostResult = (Result<(), String>, u32);

/// The real post-auth request loop on a thread, MaxSessions `sessions`.
fn monitor_post(sessions: u32) -> (OwnedFd, Vec<u8>, JoinHandle<PostResult>) {
    let (m, c) = datagram::socketpair().unwrap();
    let host: Arc<dyn Signer> = Arc::new(KeyPair::generate_ed25519().unwrap());
    let blob = host.public_blob();
    let h = std::thread::spawn(move || {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let sock = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let peer: SocketAddr = PEER.parse().unwrap();
        // SAFETY: geteuid has no preconditions.
        let me = crate::users::by_uid(unsafe { libc::geteuid() }).unwrap();
        let accepted = Accepted {
            user: me,
            key_options: None,
            auth_info: String::new(),
        };
        let mut cfg = Sshd::default();
        cfg.max_sessions = sessions;
        let mut keys = KeyHolder::new(vec![host]);
        let policy = super::join_policy::JoinPolicy::new(&accepted, &cfg);
        let mut stripe = super::stripe::GrantKeeper::new(std::env::temp_dir(), None, policy);
        let mut logins = Logins::new(0, peer);
        let r = serve_requests(
            &m,
            &sock,
            peer,
            &mut keys,
            &accepted,
            &cfg,
            &mut stripe,
            &mut logins,
        )
        .map_err(|e| e.to_string());
        (r, keys.signed())
    });
    (c, blob, h)
}

#[test]
fn the_post_auth_monitor_ends_the_connection_on_every_request_out_of_turn() {
    let names: Vec<&str> = every_message(&[]).iter().map(|(n, _)| *n).collect();
    let mut tried = 0;
    for name in names {
        // MaxSessions 0: no pty at all, so a PtyRequest is past its count.
        let (c, blob, h) = monitor_post(0);
        let msg = every_message(&blob)
            .into_iter()
            .find(|(n, _)| *n == name)
            .unwrap()
            .1;
        if Turns::new().post(Req::of(&msg), 0).is_ok() {
            drop(c);
            let _ = h.join();
            continue;
        }
        datagram::send(&c, &msg).unwrap();
        drop(c);
        let (r, signed) = h.join().unwrap();
        let why = r.err().unwrap_or_else(|| panic!("{name} was taken"));
        assert!(why.contains("request"), "{name}: {why}");
        assert_eq!(signed, 0, "{name} signed something");
        tried += 1;
    }
    assert!(tried >= 20, "only {tried} refusals tried");
    // A re-key is signed; an exchange of another connection is not, and
    // ends it; so does a second striping grant.
    let (c, blob, h) = monitor_post(10);
    let sign = |t| Msg::SignExchange {
        key: 0,
        alg: "ssh-ed25519".into(),
        hash: 2,
        transcript: t,
    };
    assert!(matches!(
        ask(&c, &sign(transcript(&blob, 1))),
        Msg::Signature(_)
    ));
    assert!(matches!(
        ask(&c, &sign(transcript(&blob, 2))),
        Msg::Signature(_)
    ));
    assert_eq!(
        ask(&c, &Msg::StripeGrant { wanted: 2 }),
        Msg::StripeGranted(None)
    );
    datagram::send(&c, &Msg::StripeGrant { wanted: 2 }).unwrap();
    drop(c);
    let (r, signed) = h.join().unwrap();
    assert!(r.unwrap_err().contains("twice"));
    assert_eq!(signed, 2);
    let (c, _, h) = monitor_post(10);
    datagram::send(&c, &sign(Zeroizing::new(vec![7; 32]))).unwrap();
    drop(c);
    let (r, signed) = h.join().unwrap();
    assert!(r.is_err());
    assert_eq!(signed, 0, "a bare hash is never signed");
}
