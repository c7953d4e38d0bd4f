//! Helpers for the forwarding tests: an echo server (TCP and Unix), data
//! round trips checked by SHA-256, client command lines, background clients,
//! tiny SOCKS4 and SOCKS5 clients.

#![allow(dead_code)]

use crate::common::*;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) const DATA: usize = 3 << 20;

/// Echoes every connection (TCP or Unix) until EOF, then shuts down its side.
pub(crate) fn echo<S: Read + Write + Send + 'static>(
    mut s: S,
    done: impl FnOnce(&mut S) + Send + 'static,
) {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if s.write_all(&buf[..n]).is_err() {
                        return;
                    }
                }
            }
        }
        done(&mut s);
    });
}

pub(crate) fn tcp_echo() -> u16 {
    tcp_echo_on("127.0.0.1")
}

/// An echo server on `ip` (127.0.0.1 or ::1).
pub(crate) fn tcp_echo_on(ip: &str) -> u16 {
    let l = TcpListener::bind((ip, 0)).unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            echo(s, |s| {
                let _ = s.shutdown(Shutdown::Write);
            });
        }
    });
    port
}

pub(crate) fn unix_echo(path: &std::path::Path) {
    let l = UnixListener::bind(path).unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            echo(s, |s| {
                let _ = s.shutdown(Shutdown::Write);
            });
        }
    });
}

/// Sends DATA, shuts down, reads the echo; hashes must match.
pub(crate) fn round_trip<S: Read + Write + Send + 'static>(
    mut s: S,
    seed: u64,
    shut: impl FnOnce(&S),
) {
    let data = random_data(DATA, seed);
    let want = sha256(&data);
    s.write_all(&data).unwrap_or_else(|e| panic!("write: {e}"));
    shut(&s);
    let mut back = Vec::new();
    s.read_to_end(&mut back).unwrap();
    assert_eq!(back.len(), data.len(), "echoed length");
    assert_eq!(sha256(&back), want, "echoed data hash");
}

pub(crate) fn tcp_round_trip(port: u16, seed: u64) {
    tcp_round_trip_on("127.0.0.1", port, seed)
}

pub(crate) fn tcp_round_trip_on(ip: &str, port: u16, seed: u64) {
    let s = connect_retry_on(ip, port);
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    // Write and read at once: the echo may fill the buffers both ways.
    let r = s.try_clone().unwrap();
    let data = random_data(DATA, seed);
    let want = sha256(&data);
    let reader = std::thread::spawn(move || {
        let mut back = Vec::new();
        let _ = (&r).read_to_end(&mut back);
        back
    });
    (&s).write_all(&data).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let back = reader.join().unwrap();
    assert_eq!((back.len(), sha256(&back)), (data.len(), want));
}

pub(crate) fn connect_retry(port: u16) -> TcpStream {
    connect_retry_on("127.0.0.1", port)
}

pub(crate) fn connect_retry_on(ip: &str, port: u16) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match TcpStream::connect((ip, port)) {
            Ok(s) => return s,
            Err(e) => {
                assert!(Instant::now() < deadline, "port {port}: {e}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// A client process killed on drop, stderr kept in a file.
pub(crate) struct Bg(pub Child, pub std::path::PathBuf);

impl Bg {
    pub(crate) fn stderr(&self) -> String {
        std::fs::read_to_string(&self.1).unwrap_or_default()
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A client command line with our log level (the harness's says ERROR).
pub(crate) fn client(
    s: &Setup,
    openssh: bool,
    server: &Server,
    level: &str,
    extra: &[&str],
) -> Command {
    s.client_at(openssh, server, level, extra)
}

/// Appends the remote command after the destination.
pub(crate) fn cmd(mut c: Command, words: &[&str]) -> Command {
    c.args(words);
    c
}

pub(crate) fn background(s: &Setup, mut c: Command) -> Bg {
    let n = free_port();
    let err = s.dir.path(&format!("client_{n}.err"));
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap());
    Bg(c.spawn().unwrap(), err)
}

pub(crate) const PAIRS: [(bool, bool, &str); 3] = [
    (false, false, "sluice->sluiced"),
    (false, true, "sluice->sshd"),
    (true, false, "ssh->sluiced"),
];

pub(crate) fn socks5(port: u16, ep: u16) -> TcpStream {
    let mut s = connect_retry(port);
    s.write_all(&[5, 1, 0]).unwrap();
    let mut r = [0u8; 2];
    s.read_exact(&mut r).unwrap();
    assert_eq!(r, [5, 0]);
    let mut req = vec![5, 1, 0, 3, 9];
    // A name: resolved off the loop, tried address by address (the echo
    // server is on 127.0.0.1 only; localhost may give ::1 first).
    req.extend_from_slice(b"localhost");
    req.extend_from_slice(&ep.to_be_bytes());
    s.write_all(&req).unwrap();
    let mut r = [0u8; 10];
    s.read_exact(&mut r).unwrap();
    assert_eq!(r[..2], [5, 0], "SOCKS5 reply");
    s
}

pub(crate) fn socks4(port: u16, ep: u16) -> TcpStream {
    let mut s = connect_retry(port);
    let mut req = vec![4, 1];
    req.extend_from_slice(&ep.to_be_bytes());
    req.extend_from_slice(&[127, 0, 0, 1, b'u', 0]);
    s.write_all(&req).unwrap();
    let mut r = [0u8; 8];
    s.read_exact(&mut r).unwrap();
    assert_eq!(r[..2], [0, 0x5a], "SOCKS4 reply");
    s
}

/// Kills, on drop, the background process whose command line holds `tag`.
pub(crate) struct Daemon(pub String);

impl Drop for Daemon {
    fn drop(&mut self) {
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.starts_with(SLUICE) && text.contains(&self.0) {
                if let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() {
                    let _ = Command::new("kill").arg(pid.to_string()).status();
                }
            }
        }
    }
}

/// A system user for the test, removed on drop.
pub(crate) struct TestUser(pub String);

impl Drop for TestUser {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.0).status();
    }
}
