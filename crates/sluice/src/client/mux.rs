//! ControlMaster / ControlPath / `-O`: the control part of OpenSSH's
//! multiplexing protocol (PROTOCOL.mux, version 4). A master (`-M`,
//! ControlMaster yes/auto) listens on ControlPath and answers `-O check`,
//! `-O exit` and `-O stop` from sluice or ssh; it does not share its
//! connection: other requests get MUX_S_FAILURE, and a client with a
//! ControlPath connects on its own, as ssh does when no master runs.
//! `sluice -O check|exit|stop` talks to a master, sluice's or ssh's.

use crate::log;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::Duration;

const HELLO: u32 = 0x0000_0001;
const C_ALIVE_CHECK: u32 = 0x1000_0004;
const C_TERMINATE: u32 = 0x1000_0005;
const C_STOP_LISTENING: u32 = 0x1000_0009;
const S_OK: u32 = 0x8000_0001;
const S_PERMISSION_DENIED: u32 = 0x8000_0002;
const S_FAILURE: u32 = 0x8000_0003;
const S_ALIVE: u32 = 0x8000_0005;
const VERSION: u32 = 4;
/// A control message is a few words; anything longer is not one.
const MAX_MESSAGE: usize = 256 * 1024;

/// The `-O` commands ssh knows; Err is ssh's message for another word.
pub fn check_command(cmd: &str) -> Result<(), String> {
    match cmd {
        "check" | "forward" | "cancel" | "exit" | "stop" | "proxy" => Ok(()),
        _ => Err("Invalid multiplex command.".into()),
    }
}

fn frame(words: &[u32], text: Option<&str>) -> Vec<u8> {
    let mut body: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
    if let Some(t) = text {
        body.extend_from_slice(&(t.len() as u32).to_be_bytes());
        body.extend_from_slice(t.as_bytes());
    }
    let mut m = (body.len() as u32).to_be_bytes().to_vec();
    m.extend(body);
    m
}

fn read_message(s: &mut UnixStream) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_MESSAGE {
        return Err(std::io::Error::other("message too long"));
    }
    let mut body = vec![0u8; len];
    s.read_exact(&mut body)?;
    Ok(body)
}

fn word(body: &[u8], i: usize) -> Option<u32> {
    let b = body.get(i * 4..i * 4 + 4)?;
    Some(u32::from_be_bytes(b.try_into().ok()?))
}

/// The string after `words` leading words (a reason), lossily.
fn reason(body: &[u8], words: usize) -> String {
    let n = word(body, words).unwrap_or(0) as usize;
    body.get(words * 4 + 4..words * 4 + 4 + n)
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}

/// `sluice -O cmd` with ControlPath `path`: ssh's messages and exit codes.
pub fn client_command(path: Option<&str>, cmd: &str) -> i32 {
    let Some(path) = path else {
        log::print("No ControlPath specified for \"-O\" command");
        return 255;
    };
    let (request, what) = match cmd {
        "check" => (C_ALIVE_CHECK, "alive check"),
        "exit" => (C_TERMINATE, "termination"),
        "stop" => (C_STOP_LISTENING, "stop listening"),
        _ => {
            log::print(&format!(
                "sluice: -O {cmd}: not supported (a sluice master does not share its connection)"
            ));
            return 255;
        }
    };
    let mut s = match UnixStream::connect(path) {
        Ok(s) => s,
        Err(e) => {
            log::print(&format!(
                "Control socket connect({path}): {}",
                crate::net::describe_io_error(&e)
            ));
            return 255;
        }
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    let hello = (|| -> std::io::Result<()> {
        s.write_all(&frame(&[HELLO, VERSION], None))?;
        let m = read_message(&mut s)?;
        if word(&m, 0) != Some(HELLO) || word(&m, 1) != Some(VERSION) {
            return Err(std::io::Error::other("bad hello from master"));
        }
        s.write_all(&frame(&[request, 1], None))
    })();
    if let Err(e) = hello {
        log::print(&format!("mux_client_hello_exchange: {e}"));
        return 255;
    }
    let reply = match read_message(&mut s) {
        Ok(m) => m,
        // As ssh: a master that already went away did terminate.
        Err(_) if request == C_TERMINATE => frame(&[S_OK, 1], None).split_off(4),
        Err(e) => {
            log::print(&format!(
                "mux_client_request_{}: read from master failed: {e}",
                cmd
            ));
            return 255;
        }
    };
    match (word(&reply, 0), word(&reply, 1)) {
        (Some(S_ALIVE), Some(1)) if request == C_ALIVE_CHECK => {
            log::print(&format!(
                "Master running (pid={})",
                word(&reply, 2).unwrap_or(0)
            ));
            0
        }
        (Some(S_OK), Some(1)) if request == C_TERMINATE => {
            log::print("Exit request sent.");
            0
        }
        (Some(S_OK), Some(1)) => {
            log::print("Stop listening request sent.");
            0
        }
        (Some(S_PERMISSION_DENIED), _) => {
            log::print(&format!(
                "Master refused {what} request: {}",
                reason(&reply, 2)
            ));
            255
        }
        (Some(S_FAILURE), _) => {
            log::print(&format!("{what} request failed: {}", reason(&reply, 2)));
            255
        }
        _ => {
            log::print(&format!(
                "unexpected response from master to {what} request"
            ));
            255
        }
    }
}

/// One control connection to the master.
struct Conn {
    s: UnixStream,
    inbuf: Vec<u8>,
    out: Vec<u8>,
    hello: bool,
    closed: bool,
}

/// The master side: the listening socket and its control connections.
pub struct Master {
    listener: Option<UnixListener>,
    path: PathBuf,
    conns: Vec<Conn>,
    /// `-O exit` came: the client ends.
    pub terminate: bool,
}

impl Master {
    /// Listens on `path` (mode 0600). As ssh: a stale socket (nobody
    /// listening) is replaced; a live one disables multiplexing, with an
    /// error for ControlMaster yes, quietly for auto (ssh would share that
    /// master's connection; sluice makes its own).
    pub fn listen(path: &str, auto: bool) -> Option<Master> {
        let bind = || {
            // SAFETY: umask has no preconditions; restored right after bind.
            let old = unsafe { libc::umask(0o177) };
            let r = UnixListener::bind(path);
            // SAFETY: as above.
            unsafe { libc::umask(old) };
            r
        };
        let mut r = bind();
        if matches!(&r, Err(e) if e.kind() == std::io::ErrorKind::AddrInUse) {
            if let Err(e) = UnixStream::connect(path) {
                if e.kind() == std::io::ErrorKind::ConnectionRefused {
                    log!(Debug1, "Stale control socket {path}, unlinking");
                    let _ = std::fs::remove_file(path);
                    r = bind();
                }
            }
        }
        let listener = match r {
            Ok(l) => l,
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                let msg = format!("ControlSocket {path} already exists, disabling multiplexing");
                if auto {
                    log!(Debug1, "{msg}");
                } else {
                    log!(Error, "{msg}");
                }
                return None;
            }
            Err(e) => {
                log!(
                    Error,
                    "ControlSocket {path}: {}, disabling multiplexing",
                    crate::net::describe_io_error(&e)
                );
                return None;
            }
        };
        if listener.set_nonblocking(true).is_err() {
            let _ = std::fs::remove_file(path);
            return None;
        }
        log!(Debug1, "setting up multiplex master socket");
        Some(Master {
            listener: Some(listener),
            path: PathBuf::from(path),
            conns: Vec::new(),
            terminate: false,
        })
    }

    /// Fds to wake the loop for.
    pub fn watch_fds(&self, out: &mut Vec<libc::pollfd>) {
        let fds = self.listener.iter().map(AsRawFd::as_raw_fd);
        for fd in fds.chain(self.conns.iter().map(|c| c.s.as_raw_fd())) {
            out.push(libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            });
        }
    }

    /// Accepts, reads and answers what is ready (non-blocking).
    pub fn tick(&mut self) {
        if let Some(l) = &self.listener {
            while let Ok((s, _)) = l.accept() {
                if s.set_nonblocking(true).is_ok() {
                    log!(Debug2, "multiplexing control connection");
                    self.conns.push(Conn {
                        s,
                        inbuf: Vec::new(),
                        out: frame(&[HELLO, VERSION], None),
                        hello: false,
                        closed: false,
                    });
                }
            }
        }
        let mut stop = false;
        for c in &mut self.conns {
            let mut buf = [0u8; 4096];
            loop {
                match c.s.read(&mut buf) {
                    Ok(0) => {
                        c.closed = true;
                        break;
                    }
                    Ok(n) => c.inbuf.extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        c.closed = true;
                        break;
                    }
                }
            }
            while c.inbuf.len() >= 4 {
                let len = word(&c.inbuf, 0).unwrap_or(0) as usize;
                if len > MAX_MESSAGE {
                    c.closed = true;
                    break;
                }
                if c.inbuf.len() < 4 + len {
                    break;
                }
                let body: Vec<u8> = c.inbuf.drain(..4 + len).skip(4).collect();
                let kind = word(&body, 0).unwrap_or(0);
                if !c.hello {
                    if kind != HELLO {
                        c.closed = true;
                        break;
                    }
                    c.hello = true;
                    continue;
                }
                let rid = word(&body, 1).unwrap_or(0);
                let reply = match kind {
                    C_ALIVE_CHECK => frame(&[S_ALIVE, rid, std::process::id()], None),
                    C_TERMINATE => {
                        log!(Debug1, "multiplex: termination requested");
                        self.terminate = true;
                        frame(&[S_OK, rid], None)
                    }
                    C_STOP_LISTENING => {
                        stop = true;
                        frame(&[S_OK, rid], None)
                    }
                    _ => frame(
                        &[S_FAILURE, rid],
                        Some("sluice does not share its connection"),
                    ),
                };
                c.out.extend(reply);
            }
            if !c.out.is_empty() {
                match c.s.write(&c.out) {
                    Ok(n) => {
                        c.out.drain(..n);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(_) => c.closed = true,
                }
            }
        }
        self.conns.retain(|c| !c.closed);
        if stop {
            self.stop_listening();
        }
    }

    /// `-O stop`: no new control connections; the socket goes.
    fn stop_listening(&mut self) {
        if self.listener.take().is_some() {
            log!(Debug1, "multiplex: stopped listening");
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl Drop for Master {
    fn drop(&mut self) {
        // Replies written before the socket goes (`-O exit` waits for its OK).
        for c in &mut self.conns {
            let _ = c.s.set_nonblocking(false);
            let _ = c.s.write_all(&c.out);
        }
        self.stop_listening();
    }
}
