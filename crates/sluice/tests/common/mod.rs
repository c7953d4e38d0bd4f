//! Test harness: temporary directories, generated keys, an OpenSSH `sshd`
//! and a `sluiced` started on loopback ports with configs the test writes,
//! and client runners with bounded run times.

#![allow(dead_code)]

use sluice_proto::crypto::SystemRng;
use sluice_proto::msg::ChannelRequestKind;
use sluice_proto::{ClientConfig, Connection, Event};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub(crate) const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");
pub(crate) const SLUICED: &str = env!("CARGO_BIN_EXE_sluiced");

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A directory removed on drop.
pub(crate) struct TempDir(pub PathBuf);

impl TempDir {
    pub(crate) fn new(tag: &str) -> TempDir {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("sluice-test-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(crate) fn keygen(path: &Path, ty: &str) {
    let _ = std::fs::remove_file(path);
    let mut c = Command::new("ssh-keygen");
    c.args(["-q", "-N", "", "-C", "test", "-t", ty]);
    if ty == "rsa" {
        c.args(["-b", "3072"]);
    }
    let st = c
        .arg("-f")
        .arg(path)
        .status()
        .expect("ssh-keygen is needed (openssh-client)");
    assert!(st.success());
}

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub(crate) fn user() -> String {
    let out = Command::new("id").arg("-un").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Keys and files shared by one server and its clients.
pub(crate) struct Setup {
    pub dir: TempDir,
    pub user_key: PathBuf,
}

impl Setup {
    pub(crate) fn new(tag: &str) -> Setup {
        let dir = TempDir::new(tag);
        for t in ["ed25519", "ecdsa", "rsa"] {
            keygen(&dir.path(&format!("host_{t}")), t);
        }
        let user_key = dir.path("id_ed25519");
        keygen(&user_key, "ed25519");
        std::fs::copy(dir.path("id_ed25519.pub"), dir.path("authorized_keys")).unwrap();
        Setup { dir, user_key }
    }

    pub(crate) fn config(&self, port: u16, extra: &str) -> PathBuf {
        let d = &self.dir.0;
        let text = format!(
            "ListenAddress 127.0.0.1\nPort {port}\nHostKey {d}/host_ed25519\nHostKey {d}/host_ecdsa\nHostKey {d}/host_rsa\n\
             AuthorizedKeysFile {d}/authorized_keys\nStrictModes no\nPidFile none\nPermitRootLogin yes\n\
             Subsystem sftp /usr/lib/openssh/sftp-server\nLogLevel VERBOSE\n{extra}\n",
            d = d.display()
        );
        let p = self.dir.path(&format!("server_config_{port}"));
        std::fs::write(&p, text).unwrap();
        p
    }

    /// Starts Debian's sshd (UsePAM no) or sluiced on a free port.
    pub(crate) fn start(&self, openssh: bool, extra: &str) -> Server {
        let port = free_port();
        let mut extra = extra.to_owned();
        if openssh {
            extra.push_str("\nUsePAM no\n");
            let _ = std::fs::create_dir_all("/run/sshd");
        } else {
            // Tests fail logins from 127.0.0.1 on purpose; PerSourcePenalties
            // would refuse the rest of the test. First (`extra` may end in a
            // Match block); a test's own PerSourcePenalties fields still
            // turn them on, as in sshd (tests/per_source.rs).
            extra.insert_str(0, "PerSourcePenalties no\n");
        }
        let cfg = self.config(port, &extra);
        let log = std::fs::File::create(self.dir.path(&format!("server_{port}.log"))).unwrap();
        let bin = if openssh { "/usr/sbin/sshd" } else { SLUICED };
        let child = Command::new(bin)
            .args(["-D", "-e", "-f"])
            .arg(&cfg)
            .stdin(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "{bin} did not start on port {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Server {
            child,
            port,
            log: self.dir.path(&format!("server_{port}.log")),
        }
    }

    /// A client command line (OpenSSH `ssh` or `sluice`) for a server.
    pub(crate) fn client(&self, openssh: bool, server: &Server, extra: &[&str]) -> Command {
        self.client_at(openssh, server, "ERROR", extra)
    }

    /// `client` with another LogLevel (INFO shows ssh's warnings).
    pub(crate) fn client_at(
        &self,
        openssh: bool,
        server: &Server,
        level: &str,
        extra: &[&str],
    ) -> Command {
        self.client_to(openssh, server.port, level, extra)
    }

    /// `client_at` toward another port (a tap in front of the server): a
    /// second `-p` in `extra` would not do, the first one wins, as in ssh.
    pub(crate) fn client_to(
        &self,
        openssh: bool,
        port: u16,
        level: &str,
        extra: &[&str],
    ) -> Command {
        let mut c = Command::new(if openssh { "ssh" } else { SLUICE });
        c.args([
            "-F",
            "/dev/null",
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "BatchMode=yes",
        ])
        .arg("-o")
        .arg(format!("LogLevel={level}"))
        .arg("-o")
        .arg(format!(
            "UserKnownHostsFile={}",
            self.dir.path("known_hosts").display()
        ))
        .arg("-i")
        .arg(&self.user_key)
        .args(["-p", &port.to_string()])
        .args(extra)
        .arg("127.0.0.1");
        c
    }

    /// The `-e` program for rsync/scp-like tools.
    pub(crate) fn ssh_command_line(&self, openssh: bool) -> String {
        format!(
            "{} -F /dev/null -o StrictHostKeyChecking=no -o BatchMode=yes -o LogLevel=ERROR -o UserKnownHostsFile={} -i {}",
            if openssh { "ssh" } else { SLUICE },
            self.dir.path("known_hosts").display(),
            self.user_key.display()
        )
    }
}

pub(crate) struct Server {
    pub child: Child,
    pub port: u16,
    pub log: PathBuf,
}

impl Server {
    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Asserts a command succeeded, showing its stderr if not.
pub(crate) fn ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs a command with `input` on stdin, failing the test after `secs`.
pub(crate) fn run(mut c: Command, input: &[u8], secs: u64) -> Output {
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    let data = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    });
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let r1 = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let r2 = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let deadline = Instant::now() + Duration::from_secs(secs);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("command timed out after {secs} s: {c:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let _ = writer.join();
    Output {
        status,
        stdout: r1.join().unwrap(),
        stderr: r2.join().unwrap(),
    }
}

/// Deterministic pseudo-random bytes.
pub(crate) fn random_data(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed ^ 0x9e37_79b9_7f4a_7c15;
    let mut v = Vec::with_capacity(n + 8);
    while v.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(n);
    v
}

pub(crate) fn sha256(data: &[u8]) -> String {
    aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, data)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub(crate) fn sha256_file(p: &Path) -> String {
    sha256(&std::fs::read(p).unwrap())
}

/// Skips (returns true) when a tool is missing outside CI; under CI a missing tool fails.
pub(crate) fn missing(tool: &str) -> bool {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .is_ok_and(|o| o.status.success())
        || Path::new(tool).exists();
    if found {
        return false;
    }
    assert!(std::env::var("CI").is_err(), "{tool} is required under CI");
    eprintln!("skipping: {tool} not installed");
    true
}

/// An in-process client (the sans-IO engine over a plain socket) that
/// authenticates with the test key and opens a session running `command`,
/// then hands back the connection and socket for the test's own messages.
pub(crate) fn engine_session(
    s: &Setup,
    port: u16,
    command: &[u8],
) -> (Connection, TcpStream, sluice_proto::ChannelId) {
    let key = sluice::keys::identity::load(&s.user_key, &mut |_| None).unwrap();
    let mut conn = Connection::client(ClientConfig::default(), Box::new(SystemRng));
    let mut sock = TcpStream::connect(("127.0.0.1", port)).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let mut inbuf = Vec::new();
    let mut channel = None;
    let end = Instant::now() + Duration::from_secs(20);
    let user = user();
    loop {
        assert!(Instant::now() < end, "session setup timed out");
        let mut out = Vec::new();
        conn.poll_transmit(Instant::now(), &mut out);
        sock.write_all(&out).unwrap();
        let mut buf = [0u8; 65536];
        match sock.read(&mut buf) {
            Ok(0) => panic!("server closed during setup"),
            Ok(n) => inbuf.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
        loop {
            let r = conn.handle_input(Instant::now(), &mut inbuf).unwrap();
            let n = r.consumed;
            if n == 0 {
                break;
            }
            inbuf.drain(..n);
        }
        while let Some(e) = conn.poll_event() {
            match e {
                Event::HostKey { .. } => conn.accept_host_key(),
                Event::AuthReady => conn
                    .auth_publickey_sign(&user, "ssh-ed25519", &key)
                    .unwrap(),
                Event::Authenticated { .. } => channel = Some(conn.open_session().unwrap()),
                Event::ChannelOpened(id) => conn
                    .channel_request(
                        id,
                        ChannelRequestKind::Exec {
                            command: command.to_vec(),
                        },
                        true,
                    )
                    .unwrap(),
                Event::ChannelReply {
                    channel: id,
                    success: true,
                } => return (conn, sock, id),
                _ => {}
            }
        }
        let _ = channel;
    }
}
