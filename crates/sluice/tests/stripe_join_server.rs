//! Joining a striped session in sluiced (PROTOCOL.md "Channel striping",
//! *Joining*), against a real server with privilege separation: a client
//! on the sans-IO engine authenticates a primary, gets a grant, and
//! joins secondary connections with `Connection::auth_stripe_join`. A
//! join is admitted once per number, only with the session's key, only
//! for the session's user, only while the session lives, only where
//! MaxStreams allows striping; every refusal is a plain USERAUTH_FAILURE.
//! A join must pass every check a fresh login from its address with the
//! primary's credentials would (the primary connects from 127.0.0.1,
//! secondaries from other loopback addresses): the key's `from=` and
//! `expiry-time=`, a certificate's `source-address`, Match blocks for the
//! address (PermitRootLogin, AuthenticationMethods, Allow/Deny), the
//! account's state and PAM's account modules.
//! A joined secondary serves no session channel and no global request,
//! and ends with its primary. The server keeps serving through all of it.

mod common;
mod privsep_util;
use common::*;
use sluice_proto::crypto::hostkey::Signer;
use sluice_proto::crypto::SystemRng;
use sluice_proto::stripe::codec::{StripeGrant, StripeWanted};
use sluice_proto::stripe::token::Joiner;
use sluice_proto::stripe::STRIPE_REQUEST;
use sluice_proto::{ClientConfig, Connection, Event};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::os::fd::FromRawFd;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A client connection driven by hand: the engine over a plain socket.
struct Peer {
    conn: Connection,
    sock: TcpStream,
    inbuf: Vec<u8>,
    closed: bool,
}

/// A TCP connection to 127.0.0.1:`port` from the loopback address `src`.
fn connect_from(src: &str, port: u16) -> TcpStream {
    let src: Ipv4Addr = src.parse().unwrap();
    let sin = |ip: Ipv4Addr, port: u16| {
        // SAFETY: sockaddr_in is plain data.
        let mut a: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        a.sin_family = libc::AF_INET as libc::sa_family_t;
        a.sin_addr.s_addr = u32::from(ip).to_be();
        a.sin_port = port.to_be();
        a
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: a new socket, bound and connected with valid addresses, then
    // owned by the TcpStream.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket");
        let from = sin(src, 0);
        let rc = libc::bind(fd, (&from as *const libc::sockaddr_in).cast(), len);
        assert_eq!(rc, 0, "bind {src}: {}", std::io::Error::last_os_error());
        let to = sin(Ipv4Addr::LOCALHOST, port);
        let rc = libc::connect(fd, (&to as *const libc::sockaddr_in).cast(), len);
        assert_eq!(rc, 0, "connect: {}", std::io::Error::last_os_error());
        TcpStream::from_raw_fd(fd)
    }
}

impl Peer {
    fn connect(port: u16) -> Peer {
        Peer::connect_from("127.0.0.1", port)
    }

    fn connect_from(src: &str, port: u16) -> Peer {
        let sock = connect_from(src, port);
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
    primary_as(port, wanted, &user(), &key, "ssh-ed25519")
}

/// A primary from 127.0.0.1 logging in as `user` with `key` (`alg`).
fn primary_as(
    port: u16,
    wanted: u32,
    user: &str,
    key: &dyn Signer,
    alg: &str,
) -> (Peer, Option<StripeGrant>, Vec<u8>, Vec<u8>) {
    let mut p = Peer::connect(port);
    let mut host = Vec::new();
    let grant = p
        .until("the grant", |conn, e| {
            match e {
                Event::HostKey { key_blob, .. } => {
                    host = key_blob;
                    conn.accept_host_key();
                }
                Event::AuthReady => conn.auth_publickey_sign(user, alg, key).unwrap(),
                Event::Authenticated { .. } => {
                    let wanted = StripeWanted {
                        secondaries: wanted,
                    };
                    conn.global_request(STRIPE_REQUEST, true, &wanted.encode())
                        .unwrap();
                }
                Event::GlobalReply { success, data, .. } => {
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
    join_from("127.0.0.1", port, user, joiner, host)
}

/// [`join`] from the loopback address `src`.
fn join_from(src: &str, port: u16, user: &str, joiner: &mut Joiner, host: &[u8]) -> Option<Peer> {
    let mut p = Peer::connect_from(src, port);
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

/// Waits for a line of the server's log holding every one of `parts`.
fn wait_line(server: &Server, parts: &[&str]) {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let log = server.log_text();
        if log.lines().any(|l| parts.iter().all(|p| l.contains(p))) {
            return;
        }
        assert!(
            Instant::now() < end,
            "no line with {parts:?} in the log:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A join refused: the secondary's monitor's line ends with `why`.
fn refused(server: &Server, who: &str, from: &str, why: &str) {
    let head = format!("Failed stripe-join for {who} from {from} port ");
    wait_line(server, &[&head, &format!(" ssh2: {why}")]);
}

/// The public key line of the setup's user key.
fn key_line(s: &Setup) -> String {
    std::fs::read_to_string(s.dir.path("id_ed25519.pub")).unwrap()
}

#[test]
fn a_key_joins_only_from_where_its_from_option_allows() {
    let s = Setup::new("stripe-join-from");
    let me = user();
    let line = key_line(&s);
    std::fs::write(
        s.dir.path("authorized_keys"),
        format!("from=\"127.0.0.1\" {line}"),
    )
    .unwrap();
    let server = s.start(false, "");
    let (mut a, grant, sid, host) = primary(&s, server.port, 3);
    let mut joiner = Joiner::new(&grant.expect("granted"), &sid);
    // The primary's key would not log in from 127.0.0.2: no join from there.
    assert!(
        join_from("127.0.0.2", server.port, &me, &mut joiner, &host).is_none(),
        "joined from outside the key's from="
    );
    wait_line(
        &server,
        &[
            &format!("stripe-join 1 for {me} from 127.0.0.2 port "),
            &format!("authorized_keys:1: Authentication tried for {me} with correct key but not from a permitted host (host=127.0.0.2, ip=127.0.0.2, required=127.0.0.1)."),
        ],
    );
    refused(
        &server,
        &me,
        "127.0.0.2",
        "the session's key ED25519 SHA256:",
    );
    // From where it would: admitted; the session is unharmed.
    let mut sec = join(server.port, &me, &mut joiner, &host).expect("joined from 127.0.0.1");
    alive(&mut sec);
    alive(&mut a);
}

#[test]
fn a_certificate_joins_only_from_its_source_address() {
    let s = Setup::new("stripe-join-cert");
    let me = user();
    let ca = s.dir.path("ca");
    keygen(&ca, "ed25519");
    let st = Command::new("ssh-keygen")
        .args(["-q", "-s"])
        .arg(&ca)
        .args([
            "-I",
            "join-test",
            "-n",
            &me,
            "-O",
            "source-address=127.0.0.1/32",
        ])
        .arg(s.dir.path("id_ed25519.pub"))
        .status()
        .unwrap();
    assert!(st.success(), "ssh-keygen -s");
    // Only the certificate logs in.
    std::fs::write(s.dir.path("authorized_keys"), "").unwrap();
    let server = s.start(
        false,
        &format!("TrustedUserCAKeys {}", s.dir.path("ca.pub").display()),
    );
    let text = std::fs::read_to_string(s.dir.path("id_ed25519-cert.pub")).unwrap();
    let b64 = text.split_whitespace().nth(1).unwrap();
    let blob = sluice::keys::known_hosts::base64_decode(b64).unwrap();
    let key = sluice::keys::identity::load(&s.user_key, &mut |_| None).unwrap();
    let cert = sluice_proto::crypto::hostkey::CertSigner::new(Arc::new(key), blob).unwrap();
    let alg = "ssh-ed25519-cert-v01@openssh.com";
    let (mut a, grant, sid, host) = primary_as(server.port, 3, &me, &cert, alg);
    let mut joiner = Joiner::new(&grant.expect("granted"), &sid);
    assert!(
        join_from("127.0.0.2", server.port, &me, &mut joiner, &host).is_none(),
        "joined from outside the certificate's source-address"
    );
    wait_line(
        &server,
        &[
            &format!("stripe-join 1 for {me} from 127.0.0.2 port "),
            &format!("Authentication tried for {me} with valid certificate but not from a permitted source address (127.0.0.2)."),
        ],
    );
    refused(
        &server,
        &me,
        "127.0.0.2",
        "the session's key ED25519-CERT SHA256:",
    );
    let mut sec = join(server.port, &me, &mut joiner, &host).expect("joined from 127.0.0.1");
    alive(&mut sec);
    alive(&mut a);
}

#[test]
fn a_key_that_expired_since_the_primary_logged_in_joins_no_more() {
    let s = Setup::new("stripe-join-expiry");
    let me = user();
    // The key's entry expires a few seconds after the primary logs in.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let expiry = now + 8;
    let out = Command::new("date")
        .args(["-u", "-d", &format!("@{expiry}"), "+%Y%m%d%H%M%SZ"])
        .output()
        .unwrap();
    let stamp = String::from_utf8(out.stdout).unwrap();
    let line = key_line(&s);
    std::fs::write(
        s.dir.path("authorized_keys"),
        format!("expiry-time=\"{}\" {line}", stamp.trim()),
    )
    .unwrap();
    let server = s.start(false, "");
    let (mut a, grant, sid, host) = primary(&s, server.port, 3);
    let mut joiner = Joiner::new(&grant.expect("granted"), &sid);
    let mut first = join(server.port, &me, &mut joiner, &host).expect("joined before the expiry");
    // Past the expiry: a login with that key would be refused, so is a join.
    while std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        <= expiry
    {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        join(server.port, &me, &mut joiner, &host).is_none(),
        "joined after the key's expiry-time"
    );
    wait_line(
        &server,
        &[
            &format!("stripe-join 2 for {me} from 127.0.0.1 port "),
            "authorized_keys:1: key refused: entry expired",
        ],
    );
    refused(
        &server,
        &me,
        "127.0.0.1",
        "the session's key ED25519 SHA256:",
    );
    alive(&mut first);
    alive(&mut a);
}

#[test]
fn permit_root_login_for_the_joining_address() {
    let me = user();
    if me != "root" {
        eprintln!("skipping: the primary must log in as root");
        return;
    }
    let s = Setup::new("stripe-join-root");
    let server = s.start(
        false,
        "Match Address 127.0.0.2\n  PermitRootLogin forced-commands-only\n\
         Match Address 127.0.0.3\n  PermitRootLogin no",
    );
    let (mut a, grant, sid, host) = primary(&s, server.port, 3);
    let mut joiner = Joiner::new(&grant.expect("granted"), &sid);
    // The key has no forced command: root may not log in with it from .2.
    assert!(join_from("127.0.0.2", server.port, &me, &mut joiner, &host).is_none());
    wait_line(
        &server,
        &[
            "stripe-join 1 for root from 127.0.0.2 port ",
            "Root login accepted for forced command only; key has none",
        ],
    );
    refused(
        &server,
        &me,
        "127.0.0.2",
        "the session's key ED25519 SHA256:",
    );
    // Nor at all from .3 (the secondary's monitor refuses it).
    assert!(join_from("127.0.0.3", server.port, &me, &mut joiner, &host).is_none());
    refused(
        &server,
        &me,
        "127.0.0.3",
        "ROOT LOGIN REFUSED FROM 127.0.0.3 port ",
    );
    let mut sec = join(server.port, &me, &mut joiner, &host).expect("joined from 127.0.0.1");
    alive(&mut sec);
    alive(&mut a);
}

#[test]
fn the_primarys_methods_must_meet_the_joining_address_configuration() {
    let s = Setup::new("stripe-join-methods");
    let me = user();
    let server = s.start(
        false,
        "Match Address 127.0.0.2\n  AuthenticationMethods publickey,password\n\
         Match Address 127.0.0.3\n  PubkeyAuthentication no",
    );
    let (mut a, grant, sid, host) = primary(&s, server.port, 3);
    let mut joiner = Joiner::new(&grant.expect("granted"), &sid);
    // From .2 a key alone is not enough; from .3 keys are not allowed.
    assert!(join_from("127.0.0.2", server.port, &me, &mut joiner, &host).is_none());
    refused(
        &server,
        &me,
        "127.0.0.2",
        "the session's methods (publickey) do not complete AuthenticationMethods from 127.0.0.2",
    );
    assert!(join_from("127.0.0.3", server.port, &me, &mut joiner, &host).is_none());
    refused(
        &server,
        &me,
        "127.0.0.3",
        &format!("publickey authentication for {me} refused: not enabled or not allowed at this step of AuthenticationMethods"),
    );
    let mut sec = join(server.port, &me, &mut joiner, &host).expect("joined from 127.0.0.1");
    alive(&mut sec);
    alive(&mut a);
}

#[test]
fn allow_and_deny_lists_judge_the_joining_address() {
    let s = Setup::new("stripe-join-lists");
    let me = user();
    let server = s.start(
        false,
        &format!(
            "AllowUsers {me}@127.0.0.1 {me}@127.0.0.2 {me}@127.0.0.4\nDenyUsers {me}@127.0.0.2\n\
             Match Address 127.0.0.4\n  DenyGroups *"
        ),
    );
    let (mut a, grant, sid, host) = primary(&s, server.port, 4);
    let mut joiner = Joiner::new(&grant.expect("granted"), &sid);
    for (from, why) in [
        ("127.0.0.2", "listed in DenyUsers"),
        ("127.0.0.3", "not listed in AllowUsers"),
        ("127.0.0.4", "a group is listed in DenyGroups"),
    ] {
        assert!(
            join_from(from, server.port, &me, &mut joiner, &host).is_none(),
            "joined from {from}"
        );
        wait_line(
            &server,
            &[
                &format!("stripe-join for {me} from {from} port "),
                &format!(": User {me} from {from} not allowed because {why}"),
            ],
        );
        refused(&server, &me, from, "user not allowed from here");
    }
    let mut sec = join(server.port, &me, &mut joiner, &host).expect("joined from 127.0.0.1");
    alive(&mut sec);
    alive(&mut a);
}

#[test]
fn match_address_host_and_local_port_apply_to_the_joining_connection() {
    let s = Setup::new("stripe-join-match");
    let me = user();
    let other_port = free_port();
    let server = s.start(
        false,
        &format!(
            "Port {other_port}\n\
             Match Address 127.0.0.2\n  MaxStreams 1\n\
             Match Host 127.0.0.3\n  DenyUsers {me}\n\
             Match LocalPort {other_port}\n  AllowUsers nobody"
        ),
    );
    let end = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", other_port)).is_err() {
        assert!(Instant::now() < end, "no listener on port {other_port}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (mut a, grant, sid, host) = primary(&s, server.port, 4);
    let mut joiner = Joiner::new(&grant.expect("granted"), &sid);
    assert!(join_from("127.0.0.2", server.port, &me, &mut joiner, &host).is_none());
    refused(&server, &me, "127.0.0.2", "MaxStreams 1");
    assert!(join_from("127.0.0.3", server.port, &me, &mut joiner, &host).is_none());
    refused(&server, &me, "127.0.0.3", "user not allowed from here");
    wait_line(
        &server,
        &[&format!(
            "User {me} from 127.0.0.3 not allowed because listed in DenyUsers"
        )],
    );
    // The same address through the other port.
    assert!(join(other_port, &me, &mut joiner, &host).is_none());
    wait_line(
        &server,
        &[&format!(
            "User {me} from 127.0.0.1 not allowed because not listed in AllowUsers"
        )],
    );
    let mut sec = join(server.port, &me, &mut joiner, &host).expect("joined through the port");
    alive(&mut sec);
    alive(&mut a);
}

/// Runs `usermod` with `args` (retrying while another test holds the lock).
fn usermod(args: &[&str]) {
    for _ in 0..50 {
        let st = Command::new("usermod")
            .args(args)
            .stderr(Stdio::null())
            .status()
            .unwrap();
        if st.success() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("usermod {args:?} failed");
}

#[test]
fn locked_and_expired_accounts_join_no_more() {
    if privsep_util::skip() || missing("useradd") {
        return;
    }
    let s = Setup::new("stripe-join-acct");
    let u = privsep_util::TestUser::named("sljn");
    let name = u.name.as_str();
    let server = s.start(false, "UsePAM no");
    let key = sluice::keys::identity::load(&s.user_key, &mut |_| None).unwrap();
    let (mut a, grant, sid, host) = primary_as(server.port, 4, name, &key, "ssh-ed25519");
    let mut joiner = Joiner::new(&grant.expect("granted"), &sid);
    // Locked after the primary logged in: no more joins.
    usermod(&["-L", name]);
    assert!(
        join(server.port, name, &mut joiner, &host).is_none(),
        "locked"
    );
    wait_line(
        &server,
        &[
            &format!("stripe-join for {name} from 127.0.0.1 port "),
            &format!("User {name} not allowed because account is locked"),
        ],
    );
    refused(&server, name, "127.0.0.1", "user not allowed from here");
    // Unlocked but expired: none either.
    usermod(&["-U", name]);
    usermod(&["-e", "2001-01-01", name]);
    assert!(
        join(server.port, name, &mut joiner, &host).is_none(),
        "expired"
    );
    wait_line(
        &server,
        &[
            &format!("stripe-join for {name} from 127.0.0.1 port "),
            &format!("Account {name} has expired"),
        ],
    );
    // Back in good standing: admitted.
    usermod(&["-e", "", name]);
    let mut sec = join(server.port, name, &mut joiner, &host).expect("joined");
    alive(&mut sec);
    alive(&mut a);
}

/// sluiced with UsePAM yes in a mount namespace of its own where
/// /etc/pam.d is `pam_dir` (its "sshd" service the test's), so the host's
/// PAM configuration is neither used nor touched. None when the namespace
/// cannot be made here.
fn start_with_pam(s: &Setup, pam_dir: &std::path::Path, extra: &str) -> Option<Server> {
    let script = "mount --bind \"$0\" /etc/pam.d && exec \"$@\"";
    let ns = |tail: &[&str]| {
        let mut c = Command::new("unshare");
        c.args([
            "--mount",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            script,
        ])
        .arg(pam_dir)
        .args(tail);
        c
    };
    let probe = ns(&["true"]).stderr(Stdio::null()).status();
    if !probe.is_ok_and(|st| st.success()) {
        eprintln!("skipping: no private mount namespace here (unshare --mount)");
        return None;
    }
    let port = free_port();
    let cfg = s.config(port, &format!("PerSourcePenalties no\nUsePAM yes\n{extra}"));
    let log_path = s.dir.path(&format!("server_{port}.log"));
    let log = std::fs::File::create(&log_path).unwrap();
    let child = ns(&[SLUICED, "-D", "-e", "-f", cfg.to_str().unwrap()])
        .stdin(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let server = Server {
        child,
        port,
        log: log_path,
    };
    let end = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < end,
            "sluiced did not start:\n{}",
            server.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(server)
}

#[test]
fn pam_access_refuses_a_join_from_a_denied_address() {
    let module = "/usr/lib/x86_64-linux-gnu/security/pam_access.so";
    let me = user();
    if privsep_util::skip() || missing("unshare") || !std::path::Path::new(module).exists() {
        return;
    }
    let s = Setup::new("stripe-join-pam");
    let pam_dir = s.dir.path("pam.d");
    std::fs::create_dir(&pam_dir).unwrap();
    let access = s.dir.path("access.conf");
    std::fs::write(&access, "-:ALL:127.0.0.2\n+:ALL:ALL\n").unwrap();
    std::fs::write(
        pam_dir.join("sshd"),
        format!(
            "auth required pam_unix.so\n\
             account required pam_access.so accessfile={}\n\
             account required pam_permit.so\n\
             session required pam_permit.so\n\
             password required pam_deny.so\n",
            access.display()
        ),
    )
    .unwrap();
    let Some(server) = start_with_pam(&s, &pam_dir, "") else {
        return;
    };
    let (mut a, grant, sid, host) = primary(&s, server.port, 3);
    let mut joiner = Joiner::new(&grant.expect("granted"), &sid);
    // access.conf denies 127.0.0.2: a login from there would be refused by
    // PAM's account modules, so is a join.
    assert!(join_from("127.0.0.2", server.port, &me, &mut joiner, &host).is_none());
    refused(
        &server,
        &me,
        "127.0.0.2",
        &format!(
            "Access denied for user {me} by PAM account configuration (PAM: pam_acct_mgmt(): "
        ),
    );
    let mut sec = join(server.port, &me, &mut joiner, &host).expect("joined from 127.0.0.1");
    alive(&mut sec);
    alive(&mut a);
}
