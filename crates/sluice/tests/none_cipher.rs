//! HPN-SSH's NONE cipher and NONE MAC in the runtime: NoneEnabled,
//! NoneSwitch and NoneMacEnabled for `sluice`, NoneEnabled and
//! NoneMacEnabled for `sluiced`. Bulk data checked by SHA-256 and, through a
//! relay that keeps what the client sent, on the wire itself: in the clear
//! only when both ends allowed it. A stock sshd declines by omission;
//! interactive sessions never switch, and `sluiced` refuses a pty or shell
//! once NONE is in use.

mod common;
use common::*;
use sluice::client::session::{ClientSession, Identity, SessionPlan};
use sluice::net::pump::{ChannelFds, Handler, Pump};
use sluice_proto::crypto::hostkey::Signer;
use sluice_proto::msg::ChannelRequestKind;
use sluice_proto::{ClientConfig, Config, Connection, Event};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::Arc;
use std::thread::JoinHandle;

const NONE_ON: &[&str] = &["-o", "NoneEnabled=yes", "-o", "NoneSwitch=yes"];
const WARNING: &str = "WARNING: ENABLED NONE CIPHER!!!\n";
const WARNING_MAC: &str = "WARNING: ENABLED NONE MAC\n";
const DECLINED: &str = "NONE cipher declined by the server: the session stays encrypted with ";
const TTY: &str = "NONE cipher switch disabled when a TTY is allocated\n";

/// A relay in front of `port` for one connection; returns its port and a
/// handle yielding every byte the client sent.
fn tap(port: u16) -> (u16, JoinHandle<Vec<u8>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let local = l.local_addr().unwrap().port();
    let h = std::thread::spawn(move || {
        let (mut c, _) = l.accept().unwrap();
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (mut c2, mut s2) = (c.try_clone().unwrap(), s.try_clone().unwrap());
        let back = std::thread::spawn(move || {
            let _ = std::io::copy(&mut s2, &mut c2);
            let _ = c2.shutdown(Shutdown::Write);
        });
        let mut seen = Vec::new();
        let mut buf = vec![0; 1 << 16];
        loop {
            match c.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    seen.extend_from_slice(&buf[..n]);
                    if s.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = s.shutdown(Shutdown::Write);
        let _ = back.join();
        seen
    });
    (local, h)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Uploads `data` through a tap to `sha256sum`; returns stderr and whether
/// a 64-byte piece of the data crossed the wire as it is.
fn upload_tapped(s: &Setup, server: &Server, opts: &[&str], data: &[u8]) -> (String, bool) {
    let (port, wire) = tap(server.port);
    let mut c = s.client_to(false, port, "ERROR", opts);
    c.arg("sha256sum");
    let out = run(c, data, 120);
    let err = text(&out.stderr);
    assert!(
        out.status.success(),
        "{opts:?}: {err}\nserver log:\n{}",
        server.log_text()
    );
    assert!(
        text(&out.stdout).starts_with(&sha256(data)),
        "{opts:?} upload"
    );
    let wire = wire.join().unwrap();
    (err, contains(&wire, &data[4096..4160]))
}

fn download(s: &Setup, server: &Server, opts: &[&str], src: &std::path::Path) -> (Vec<u8>, String) {
    let mut c = s.client(false, server, opts);
    c.arg(format!("cat {}", src.display()));
    let out = run(c, b"", 120);
    assert!(out.status.success(), "{opts:?}: {}", text(&out.stderr));
    (out.stdout, text(&out.stderr))
}

#[test]
fn none_cipher_and_mac_between_sluice_and_sluiced() {
    let s = Setup::new("none");
    let data = random_data(8 << 20, 21);
    let src = s.dir.path("src.bin");
    std::fs::write(&src, &data).unwrap();
    let server = s.start(false, "NoneEnabled yes\nNoneMacEnabled yes");
    let opts = [NONE_ON, &["-v", "-o", "NoneMacEnabled=yes"][..]].concat();
    let (err, clear) = upload_tapped(&s, &server, &opts, &data);
    assert!(err.contains(WARNING) && err.contains(WARNING_MAC), "{err}");
    assert!(
        err.contains("kex: client->server cipher: none MAC: none compression: none"),
        "{err}"
    );
    assert!(clear, "the data should cross the wire unencrypted");
    assert!(server.log_text().contains("WARNING: NONE cipher in use"));
    // -v and the server's log say what the NONE MAC gives up.
    assert!(
        err.contains("NONE MAC: channel requests from now on are not integrity-protected"),
        "{err}"
    );
    assert!(server
        .log_text()
        .contains("channel requests from now on are not integrity-protected; new session channels are refused"));
    let (out, err) = download(&s, &server, &opts, &src);
    assert_eq!(sha256(&out), sha256(&data), "download");
    assert!(
        err.contains("kex: server->client cipher: none MAC: none"),
        "{err}"
    );
    assert!(err.contains(WARNING) && err.contains(WARNING_MAC), "{err}");
    // Without NoneMacEnabled on the client the NONE cipher keeps a MAC, and
    // the warnings go to stderr whatever the log level.
    let (out, err) = download(&s, &server, NONE_ON, &src);
    assert_eq!(sha256(&out), sha256(&data), "download, MAC kept");
    assert_eq!(err, WARNING);
    // NoneSwitch alone does nothing (HPN: both are needed).
    let (out, err) = download(&s, &server, &["-o", "NoneSwitch=yes"], &src);
    assert_eq!(sha256(&out), sha256(&data));
    assert_eq!(err, "");
}

#[test]
fn a_server_without_none_enabled_keeps_the_session_encrypted() {
    let s = Setup::new("nonedecl");
    let data = random_data(8 << 20, 22);
    let src = s.dir.path("src.bin");
    std::fs::write(&src, &data).unwrap();
    let server = s.start(false, "");
    let opts = [NONE_ON, &["-v", "-o", "NoneMacEnabled=yes"][..]].concat();
    let (err, clear) = upload_tapped(&s, &server, &opts, &data);
    assert!(!err.contains("WARNING"), "{err}");
    assert!(err.contains(DECLINED), "{err}");
    assert!(!clear, "the data must not cross the wire in the clear");
    let (out, err) = download(&s, &server, &opts, &src);
    assert_eq!(sha256(&out), sha256(&data));
    assert!(!err.contains("WARNING") && err.contains(DECLINED), "{err}");
    // A server allowing the NONE cipher but not the NONE MAC: a MAC stays.
    let server = s.start(false, "NoneEnabled yes");
    let (err, clear) = upload_tapped(&s, &server, &opts, &data);
    assert!(err.contains(WARNING) && !err.contains(WARNING_MAC), "{err}");
    assert!(!err.contains("cipher: none MAC: none"), "{err}");
    assert!(clear);
}

#[test]
fn openssh_sshd_declines_the_none_switch() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("nonessh");
    let data = random_data(4 << 20, 23);
    let src = s.dir.path("src.bin");
    std::fs::write(&src, &data).unwrap();
    let server = s.start(true, "");
    let opts = [NONE_ON, &["-v", "-o", "NoneMacEnabled=yes"][..]].concat();
    let (err, clear) = upload_tapped(&s, &server, &opts, &data);
    assert!(!err.contains("WARNING") && err.contains(DECLINED), "{err}");
    assert!(!clear);
    let (out, err) = download(&s, &server, &opts, &src);
    assert_eq!(sha256(&out), sha256(&data));
    assert!(!err.contains("WARNING") && err.contains(DECLINED), "{err}");
}

#[test]
fn none_options_parse_and_print() {
    let s = Setup::new("noneopts");
    let cfg = s.dir.path("c");
    std::fs::write(&cfg, "Port 2222\n").unwrap();
    let dash_t = |extra: &[&str]| {
        let mut c = Command::new(SLUICED);
        c.arg("-T").arg("-f").arg(&cfg).args(extra);
        run(c, b"", 10)
    };
    let t = text(&dash_t(&[]).stdout);
    assert!(
        t.contains("\nnoneenabled no\n") && t.contains("\nnonemacenabled no\n"),
        "{t}"
    );
    std::fs::write(&cfg, "Port 2222\nnoneENABLED yes\n").unwrap();
    let t = text(&dash_t(&["-o", "NoneMacEnabled=yes"]).stdout);
    assert!(
        t.contains("\nnoneenabled yes\n") && t.contains("\nnonemacenabled yes\n"),
        "{t}"
    );
    let out = dash_t(&["-o", "NoneMacEnabled=maybe"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("unsupported option \"maybe\""), // sshd's wording
        "{}",
        text(&out.stderr)
    );
    // The client: -G shows the three with their defaults; a config file may
    // set NoneSwitch (HPN allows it only on the command line).
    let ssh_cfg = s.dir.path("ssh_config");
    std::fs::write(&ssh_cfg, "Host *\n  NoneSwitch yes\n  NoneEnabled true\n").unwrap();
    let mut c = Command::new(SLUICE);
    c.arg("-G").arg("-F").arg(&ssh_cfg).arg("somehost");
    let g = text(&run(c, b"", 10).stdout);
    assert!(
        g.contains("\nnoneenabled yes\n")
            && g.contains("\nnoneswitch yes\n")
            && g.contains("\nnonemacenabled no\n"),
        "{g}"
    );
    let mut c = Command::new(SLUICE);
    c.args([
        "-F",
        "/dev/null",
        "-o",
        "NoneSwitch=maybe",
        "127.0.0.1",
        "true",
    ]);
    let out = run(c, b"", 10);
    assert_eq!(out.status.code(), Some(255));
    assert!(text(&out.stderr).contains("Bad NoneSwitch 'maybe': use yes or no"));
}

/// A `sluice` client session that runs a command, switches to NONE and
/// then asks for a pty, which the `sluice` binary never does; records the
/// server's answer to it.
struct PtyAfterNone(ClientSession, Option<sluice_proto::ChannelId>, Option<bool>);

impl Handler for PtyAfterNone {
    type Error = String;

    fn on_event(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        event: Event,
    ) -> Result<(), String> {
        match &event {
            Event::ChannelOpened(id) => self.1 = Some(*id),
            Event::KexDone { initial: false, .. } if conn.none_active() => {
                let pty = ChannelRequestKind::PtyReq {
                    term: "xterm".into(),
                    cols: 80,
                    rows: 24,
                    width_px: 0,
                    height_px: 0,
                    modes: vec![0],
                };
                let id = self.1.ok_or("no channel")?;
                conn.channel_request(id, pty, true)
                    .map_err(|e| e.to_string())?;
                self.2 = Some(true);
            }
            Event::ChannelReply { success, .. } if self.2 == Some(true) => {
                self.2 = Some(*success);
                return Ok(());
            }
            _ => {}
        }
        self.0.on_event(conn, fds, event).map_err(|e| e.to_string())
    }
    fn tick(&mut self, conn: &mut Connection, fds: &mut ChannelFds) -> Result<(), String> {
        self.0.tick(conn, fds).map_err(|e| e.to_string())
    }
    fn finished(&self) -> bool {
        self.0.finished()
    }
}

/// A `sluice` client session that, once the NONE MAC is in force, opens a
/// second session channel (ControlMaster could): the server must refuse it.
struct SessionAfterNoneMac {
    inner: ClientSession,
    second: Option<sluice_proto::ChannelId>,
    refused: Option<bool>,
}

impl Handler for SessionAfterNoneMac {
    type Error = String;

    fn on_event(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        event: Event,
    ) -> Result<(), String> {
        match &event {
            Event::KexDone { initial: false, .. } if conn.none_mac_active() => {
                self.second = Some(conn.open_session().map_err(|e| e.to_string())?);
            }
            Event::ChannelOpenFailed { channel, .. } if Some(*channel) == self.second => {
                self.refused = Some(true);
                return Ok(());
            }
            Event::ChannelOpened(id) if Some(*id) == self.second => {
                self.refused = Some(false);
                return Ok(());
            }
            _ => {}
        }
        self.inner
            .on_event(conn, fds, event)
            .map_err(|e| e.to_string())
    }
    fn tick(&mut self, conn: &mut Connection, fds: &mut ChannelFds) -> Result<(), String> {
        self.inner.tick(conn, fds).map_err(|e| e.to_string())
    }
    fn finished(&self) -> bool {
        self.inner.finished() && self.refused.is_some()
    }
}

fn identity(s: &Setup) -> Identity {
    let key = s.user_key.clone();
    Identity {
        label: key.display().to_string(),
        public_blob: sluice::keys::identity::public_blob(&key).unwrap(),
        sig_algs: vec!["ssh-ed25519"],
        load: Box::new(move || {
            let kp = sluice::keys::identity::load(&key, &mut |_| None)
                .map_err(sluice::client::auth::LoadError::Key)?;
            Ok(Arc::new(kp) as Arc<dyn Signer>)
        }),
        in_memory: true,
        agent: None,
    }
}

#[test]
fn no_new_sessions_after_the_none_mac_switch() {
    let s = Setup::new("nonemacsess");
    let server = s.start(false, "NoneEnabled yes\nNoneMacEnabled yes");
    let plan = SessionPlan {
        command: Some(b"sleep 1".to_vec()),
        subsystem: false,
        env: Vec::new(),
        stdio: false,
        none_switch: Some(true),
        remote_bufs: (0, 0),
        tty: None,
        agent: Default::default(),
        forwards: Default::default(),
        no_session: false,
        fork_after_auth: false,
        channel_end: None,
        local_command: None,
    };
    let inner = ClientSession::new(
        user(),
        "127.0.0.1",
        vec![identity(&s)],
        Box::new(|_, _| Ok(())),
        plan,
    );
    let mut handler = SessionAfterNoneMac {
        inner,
        second: None,
        refused: None,
    };
    let sock = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    sock.set_nonblocking(true).unwrap();
    let mut conn = Connection::client(
        ClientConfig {
            common: Config::default(),
        },
        Box::new(sluice_proto::crypto::SystemRng),
    );
    let r = Pump::new(sock.as_raw_fd()).run(&mut conn, &mut handler);
    assert!(conn.none_mac_active(), "{r:?}");
    assert_eq!(handler.refused, Some(true), "{r:?}\n{}", server.log_text());
    // The server's log line may still be on its way.
    let want = "the NONE MAC is in use, so its requests would not be integrity-protected";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !server.log_text().contains(want) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(server.log_text().contains(want), "{}", server.log_text());
}

#[test]
fn interactive_sessions_never_use_none() {
    let s = Setup::new("nonetty");
    let server = s.start(false, "NoneEnabled yes\nNoneMacEnabled yes");
    // The client does not switch for a shell, nor with -t.
    let mut c = s.client(false, &server, NONE_ON);
    let out = run(c, b"echo hi\nexit 0\n", 60);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hi\n");
    let err = text(&out.stderr);
    assert!(err.contains(TTY) && !err.contains("WARNING"), "{err}");
    c = s.client(false, &server, &[NONE_ON, &["-t"][..]].concat());
    c.arg("echo ok");
    let out = run(c, b"", 60);
    assert_eq!(text(&out.stdout), "ok\n");
    assert_eq!(text(&out.stderr), TTY);
    // A client that switches and then asks for a pty is refused.
    let id = identity(&s);
    let plan = SessionPlan {
        command: Some(b"sleep 1".to_vec()),
        subsystem: false,
        env: Vec::new(),
        stdio: false,
        none_switch: Some(false),
        remote_bufs: (0, 0),
        tty: None,
        agent: Default::default(),
        forwards: Default::default(),
        no_session: false,
        fork_after_auth: false,
        channel_end: None,
        local_command: None,
    };
    let session = ClientSession::new(user(), "127.0.0.1", vec![id], Box::new(|_, _| Ok(())), plan);
    let mut handler = PtyAfterNone(session, None, None);
    let sock = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    sock.set_nonblocking(true).unwrap();
    let mut conn = Connection::client(
        ClientConfig {
            common: Config::default(),
        },
        Box::new(sluice_proto::crypto::SystemRng),
    );
    let r = Pump::new(sock.as_raw_fd()).run(&mut conn, &mut handler);
    assert!(conn.none_active(), "{r:?}");
    assert_eq!(handler.2, Some(false), "the pty is refused: {r:?}");
    let log = server.log_text();
    assert!(
        log.contains("pty-req request refused: the NONE cipher is in use"),
        "{log}"
    );
}
