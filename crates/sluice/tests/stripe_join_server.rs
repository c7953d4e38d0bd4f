//! Joining a striped session in sluiced (PROTOCOL.md "Channel striping",
//! *Joining*), against a real server with privilege separation: a client
//! on the sans-IO engine authenticates a primary, gets a grant, and
//! joins secondary connections with `Connection::auth_stripe_join`. A
//! join is admitted once per number, only with the session's key, only
//! for the session's user, only while the session lives, only where
//! MaxStreams allows striping; every refusal is a plain USERAUTH_FAILURE.
//! A joined secondary serves no session channel and no global request,
//! and ends with its primary. The server keeps serving through all of it.

mod common;
use common::*;
use sluice_proto::crypto::SystemRng;
use sluice_proto::stripe::codec::{StripeGrant, StripeWanted};
use sluice_proto::stripe::token::Joiner;
use sluice_proto::stripe::STRIPE_REQUEST;
use sluice_proto::{ClientConfig, Connection, Event};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A client connection driven by hand: the engine over a plain socket.
struct Peer {
    conn: Connection,
    sock: TcpStream,
    inbuf: Vec<u8>,
    closed: bool,
}

impl Peer {
    fn connect(port: u16) -> Peer {
        let sock = TcpStream::connect(("127.0.0.1", port)).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        Peer {
            conn: Connection::client(ClientConfig::default(), Box::new(SystemRng)),
            sock,
            inbuf: Vec::new(),
            closed: false,
        }
    }

    /// One round of output, input and events; no events once closed.
    fn turn(&mut self) -> Vec<Event> {
        if self.closed {
            return Vec::new();
        }
        let mut out = Vec::new();
        self.conn.poll_transmit(Instant::now(), &mut out);
        if self.sock.write_all(&out).is_err() {
            self.closed = true;
        }
        let mut buf = [0u8; 65536];
        match self.sock.read(&mut buf) {
            Ok(0) => self.closed = true,
            Ok(n) => self.inbuf.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => self.closed = true,
            Err(_) => {}
        }
        loop {
            match self.conn.handle_input(Instant::now(), &mut self.inbuf) {
                Ok(r) if r.consumed > 0 => {
                    let n = r.consumed;
                    self.inbuf.drain(..n);
                }
                Ok(_) => break,
                Err(_) => {
                    self.closed = true;
                    break;
                }
            }
        }
        std::iter::from_fn(|| self.conn.poll_event()).collect()
    }

    /// Runs until `f` gives an answer (None back if the connection closed
    /// first); fails the test after 20 s.
    fn until<T>(
        &mut self,
        what: &str,
        mut f: impl FnMut(&mut Connection, Event) -> Option<T>,
    ) -> Option<T> {
        let end = Instant::now() + Duration::from_secs(20);
        while !self.closed {
            assert!(Instant::now() < end, "timed out waiting for {what}");
            for e in self.turn() {
                if let Some(t) = f(&mut self.conn, e) {
                    return Some(t);
                }
            }
        }
        None
    }

    /// Waits for the server to close the connection.
    fn wait_closed(&mut self, what: &str) {
        let end = Instant::now() + Duration::from_secs(20);
        while !self.closed {
            assert!(Instant::now() < end, "{what}: still open");
            self.turn();
        }
    }
}

/// A primary: logs in with the test key and asks for `wanted`
/// secondaries. Its grant (None: declined), session id and host key.
fn primary(s: &Setup, port: u16, wanted: u32) -> (Peer, Option<StripeGrant>, Vec<u8>, Vec<u8>) {
    let key = sluice::keys::identity::load(&s.user_key, &mut |_| None).unwrap();
    let user = user();
    let mut p = Peer::connect(port);
    let mut host = Vec::new();
    let grant = p
        .until("the grant", |conn, e| {
            match e {
                Event::HostKey { key_blob, .. } => {
                    host = key_blob;
                    conn.accept_host_key();
                }
                Event::AuthReady => conn
                    .auth_publickey_sign(&user, "ssh-ed25519", &key)
                    .unwrap(),
                Event::Authenticated { .. } => {
                    let wanted = StripeWanted {
                        secondaries: wanted,
                    };
                    conn.global_request(STRIPE_REQUEST, true, &wanted.encode())
                        .unwrap();
                }
                Event::GlobalReply { success, data } => {
                    return Some(success.then(|| StripeGrant::decode(&data).unwrap()));
                }
                _ => {}
            }
            None
        })
        .expect("the primary closed before its grant");
    let sid = p.conn.session_id().unwrap().to_vec();
    (p, grant, sid, host)
}

/// A secondary joining as `user` with `joiner`'s next number: the
/// connection if admitted, None on USERAUTH_FAILURE (or a close). Its
/// host key must be the primary's.
fn join(port: u16, user: &str, joiner: &mut Joiner, host: &[u8]) -> Option<Peer> {
    let mut p = Peer::connect(port);
    let admitted = p.until("the join's verdict", |conn, e| match e {
        Event::HostKey { key_blob, .. } => {
            assert_eq!(key_blob, host, "a secondary shows the primary's host key");
            conn.accept_host_key();
            None
        }
        Event::AuthReady => {
            conn.auth_stripe_join(user, joiner).unwrap();
            None
        }
        Event::Authenticated { .. } => Some(true),
        Event::AuthFailure { partial, .. } => {
            assert!(!partial);
            Some(false)
        }
        _ => None,
    });
    (admitted == Some(true)).then_some(p)
}

/// The primary's grant with another join secret: a key nobody was given.
fn forged(grant: &StripeGrant) -> StripeGrant {
    let mut g = grant.clone();
    g.join_secret[0] ^= 1;
    g
}

/// The server still answers: a global request gets its (negative) reply.
fn alive(p: &mut Peer) {
    p.conn
        .global_request("keepalive@openssh.com", true, &[])
        .unwrap();
    let r = p.until("a keepalive reply", |_, e| match e {
        Event::GlobalReply { success, .. } => Some(success),
        _ => None,
    });
    assert!(r.is_some(), "the connection ended");
}

/// Waits for `needle` in the server's log.
fn wait_log(server: &Server, needle: &str) {
    let end = Instant::now() + Duration::from_secs(20);
    while !server.log_text().contains(needle) {
        assert!(
            Instant::now() < end,
            "no {needle:?} in the log:\n{}",
            server.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn joins_admitted_once_with_the_key_for_the_session_user() {
    let s = Setup::new("stripe-join");
    let server = s.start(false, "");
    let me = user();
    let (mut a, grant, sid_a, host) = primary(&s, server.port, 5);
    let grant = grant.expect("granted");
    assert_eq!(grant.allowed, 5);
    let mut joiner = Joiner::new(&grant, &sid_a);

    // Join number 1: admitted.
    let mut sec = join(server.port, &me, &mut joiner, &host).expect("join 1 admitted");
    wait_log(
        &server,
        &format!("Accepted stripe-join for {me} from 127.0.0.1"),
    );
    // It serves no session channel and answers global requests with failure.
    sec.conn.open_session().unwrap();
    let refused = sec.until("the session's refusal", |_, e| match e {
        Event::ChannelOpenFailed { reason, .. } => Some(reason),
        Event::ChannelOpened(_) => panic!("a session opened on a secondary"),
        _ => None,
    });
    assert_eq!(refused, Some(1), "ADMINISTRATIVELY_PROHIBITED");
    sec.conn
        .global_request(
            STRIPE_REQUEST,
            true,
            &StripeWanted { secondaries: 1 }.encode(),
        )
        .unwrap();
    let r = sec.until("the grant's refusal", |_, e| match e {
        Event::GlobalReply { success, .. } => Some(success),
        _ => None,
    });
    assert_eq!(r, Some(false), "no grant on a secondary");
    // A re-key on the secondary: the user's process has the monitor sign
    // the new exchange hash with the host key, as for the primary.
    sec.conn.rekey();
    let r = sec.until("the re-key", |_, e| match e {
        Event::KexDone { initial: false, .. } => Some(()),
        _ => None,
    });
    assert!(r.is_some(), "the secondary ended in its re-key");

    // The same number again, with a proof made right for the new
    // connection: used already.
    let mut replay = Joiner::new(&grant, &sid_a);
    assert!(
        join(server.port, &me, &mut replay, &host).is_none(),
        "replayed number"
    );
    // A proof under a key nobody was given.
    let mut fake = Joiner::new(&forged(&grant), &sid_a);
    assert!(
        join(server.port, &me, &mut fake, &host).is_none(),
        "forged proof"
    );
    // Another user name (number 2 is not used up by the refusal).
    assert!(
        join(server.port, "nobody", &mut joiner, &host).is_none(),
        "another user"
    );
    // A token of another session: the second primary's key with the
    // first's reference, and the first's key with the second's.
    let (mut b, grant_b, sid_b, _) = primary(&s, server.port, 2);
    let grant_b = grant_b.expect("granted");
    let mut mixed = grant_b.clone();
    mixed.session_ref = grant.session_ref.clone();
    let mut cross = Joiner::new(&mixed, &sid_b);
    assert!(
        join(server.port, &me, &mut cross, &host).is_none(),
        "cross-session key"
    );
    let mut mixed = grant.clone();
    mixed.session_ref = grant_b.session_ref.clone();
    let mut cross = Joiner::new(&mixed, &sid_a);
    assert!(
        join(server.port, &me, &mut cross, &host).is_none(),
        "cross-session reference"
    );
    // Each refusal is logged by the secondary's monitor, sshd-style, with
    // the reason the session's monitor gave.
    let log = server.log_text();
    for (who, why) in [
        (me.as_str(), "join number already used"),
        (me.as_str(), "join proof does not verify"),
        ("nobody", "user differs from the session's"),
    ] {
        let head = format!("Failed stripe-join for {who} from 127.0.0.1 port ");
        let tail = format!(" ssh2: {why}");
        let line = log
            .lines()
            .find(|l| l.contains(&head) && l.ends_with(&tail));
        assert!(
            line.is_some(),
            "no refusal for {who} ({why}) in the log:\n{log}"
        );
    }

    // After all of it: the primaries and the secondary still work, and the
    // next number is admitted.
    alive(&mut a);
    alive(&mut b);
    alive(&mut sec);
    let mut sec2 = join(server.port, &me, &mut joiner, &host).expect("join 3 admitted");
    alive(&mut sec2);

    // The primary ends: its secondaries end with it, and the session's
    // grant admits nothing more.
    drop(a);
    sec.wait_closed("a secondary after its primary ended");
    sec2.wait_closed("a secondary after its primary ended");
    assert!(
        join(server.port, &me, &mut joiner, &host).is_none(),
        "join after the end"
    );
    wait_log(&server, "ssh2: no such session");
    alive(&mut b);
}

#[test]
fn max_streams_one_refuses_joins() {
    let s = Setup::new("stripe-join-max");
    let me = user();
    // A live session on a server that stripes...
    let striping = s.start(false, "");
    let (_a, grant, sid, host_a) = primary(&s, striping.port, 3);
    let grant = grant.expect("granted");
    let mut joiner = Joiner::new(&grant, &sid);
    // ... cannot be joined through one where MaxStreams is 1: globally
    // (the method is unknown there) or for this user by a Match block
    // (the monitor refuses it).
    for extra in [
        "MaxStreams 1".to_owned(),
        format!("MaxStreams 4\nMatch User {me}\n  MaxStreams 1"),
    ] {
        let one = s.start(false, &extra);
        assert!(
            join(one.port, &me, &mut joiner, &host_a).is_none(),
            "joined under {extra:?}"
        );
        let (mut p, g, _, _) = primary(&s, one.port, 2);
        assert!(g.is_none(), "granted under {extra:?}");
        alive(&mut p);
    }
    // The per-user refusal is the monitor's, logged with its reason.
    // (The global one is the engine's, as for any unknown method.)
    let log = std::fs::read_dir(&s.dir.0)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("server_"))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .collect::<String>();
    assert!(
        log.contains(&format!("Failed stripe-join for {me} from 127.0.0.1 port ")),
        "{log}"
    );
    assert!(log.contains("ssh2: MaxStreams 1"), "{log}");
    // The striping server still admits the session's joins.
    let sec = join(striping.port, &me, &mut joiner, &host_a);
    assert!(sec.is_some(), "{}", striping.log_text());
}

#[test]
fn failed_joins_count_for_max_auth_tries() {
    let s = Setup::new("stripe-join-tries");
    let me = user();
    let server = s.start(false, "MaxAuthTries 2");
    let (mut a, grant, sid, host) = primary(&s, server.port, 3);
    let grant = grant.expect("granted");
    // Two forged joins on one connection: the second failure ends it.
    let mut fake = Joiner::new(&forged(&grant), &sid);
    let mut p = Peer::connect(server.port);
    let mut failures = 0;
    let r = p.until("the connection's end", |conn, e| {
        match e {
            Event::HostKey { key_blob, .. } => {
                assert_eq!(key_blob, host);
                conn.accept_host_key();
            }
            Event::AuthReady => {
                conn.auth_stripe_join(&me, &mut fake).unwrap();
            }
            Event::AuthFailure { .. } => {
                failures += 1;
                conn.auth_stripe_join(&me, &mut fake).unwrap();
            }
            Event::Authenticated { .. } => panic!("a forged join was admitted"),
            _ => {}
        }
        None::<()>
    });
    assert!(r.is_none());
    assert!(failures <= 1, "{failures} failures answered before the end");
    wait_log(&server, "Too many authentication failures");
    // The session is unharmed and its key still joins.
    let mut joiner = Joiner::new(&grant, &sid);
    assert!(join(server.port, &me, &mut joiner, &host).is_some());
    alive(&mut a);
}

#[test]
fn secondaries_join_at_once() {
    let s = Setup::new("stripe-join-many");
    let me = user();
    let server = s.start(false, "");
    let port = server.port;
    let (mut a, grant, sid, host) = primary(&s, port, 7);
    let grant = grant.expect("granted");
    // Seven secondaries connect and join at the same time, each with its
    // own number, as a client opening its connections in parallel does.
    let joins: Vec<_> = (1..=grant.allowed)
        .map(|n| {
            let (grant, sid, host, me) = (grant.clone(), sid.clone(), host.clone(), me.clone());
            std::thread::spawn(move || {
                let mut joiner = Joiner::new(&grant, &sid);
                for _ in 1..n {
                    joiner.join(&[0; 32], &me); // numbers the others use
                }
                let mut p = join(port, &me, &mut joiner, &host)?;
                alive(&mut p);
                Some(p)
            })
        })
        .collect();
    let peers: Vec<_> = joins.into_iter().map(|j| j.join().unwrap()).collect();
    assert!(peers.iter().all(Option::is_some), "{}", server.log_text());
    alive(&mut a);
}
