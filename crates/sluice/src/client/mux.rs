//! ControlMaster / ControlPath / `-O`: OpenSSH's multiplexing protocol
//! (PROTOCOL.mux, version 4), the control socket's side. A master (`-M`,
//! ControlMaster yes/auto) listens on ControlPath and answers `-O check`,
//! `-O exit` and `-O stop` from sluice or ssh, and takes passenger
//! sessions (MUX_C_NEW_SESSION with the passenger's stdin, stdout and
//! stderr; client/mux_session.rs runs them, client/mux_client.rs is the
//! passenger). `-O forward`, `-O cancel`, `-O proxy` and stdio forwarding
//! through a master are answered MUX_S_FAILURE.

use crate::log;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::Duration;

pub(super) const HELLO: u32 = 0x0000_0001;
pub(super) const C_NEW_SESSION: u32 = 0x1000_0002;
pub(super) const C_ALIVE_CHECK: u32 = 0x1000_0004;
const C_TERMINATE: u32 = 0x1000_0005;
const C_STOP_LISTENING: u32 = 0x1000_0009;
const S_OK: u32 = 0x8000_0001;
pub(super) const S_PERMISSION_DENIED: u32 = 0x8000_0002;
pub(super) const S_FAILURE: u32 = 0x8000_0003;
pub(super) const S_EXIT_MESSAGE: u32 = 0x8000_0004;
pub(super) const S_ALIVE: u32 = 0x8000_0005;
pub(super) const S_SESSION_OPENED: u32 = 0x8000_0006;
pub(super) const S_TTY_ALLOC_FAIL: u32 = 0x8000_0008;
pub(super) const VERSION: u32 = 4;
/// A control message is a few words; anything longer is not one.
const MAX_MESSAGE: usize = 256 * 1024;
/// How long a passenger may take to pass its descriptors after asking.
const FD_WAIT: Duration = Duration::from_secs(10);

/// A passenger's MUX_C_NEW_SESSION, with the descriptors it passed.
pub struct NewSession {
    /// The control connection, which now belongs to the session.
    pub conn: UnixStream,
    /// The request id, echoed in MUX_S_SESSION_OPENED.
    pub request_id: u32,
    /// A pty is wanted, of this terminal type.
    pub tty: Option<String>,
    /// Agent forwarding is wanted (granted only if the master forwards it).
    pub agent: bool,
    /// `command` names a subsystem.
    pub subsystem: bool,
    /// The command; empty asks for a shell.
    pub command: Vec<u8>,
    /// `NAME=value` strings to send as env requests.
    pub env: Vec<Vec<u8>>,
    /// stdin, stdout, stderr.
    pub fds: [OwnedFd; 3],
}

/// Reads PROTOCOL.mux's fields in order; None past the end.
pub(super) struct Fields<'a>(pub(super) &'a [u8]);

impl Fields<'_> {
    pub(super) fn u32(&mut self) -> Option<u32> {
        let (h, t) = self.0.split_at_checked(4)?;
        self.0 = t;
        Some(u32::from_be_bytes(h.try_into().ok()?))
    }

    /// A flag: PROTOCOL.mux says bool, ssh sends (and reads) a uint32.
    pub(super) fn flag(&mut self) -> Option<bool> {
        Some(self.u32()? != 0)
    }

    pub(super) fn string(&mut self) -> Option<&[u8]> {
        let n = self.u32()? as usize;
        let (h, t) = self.0.split_at_checked(n)?;
        self.0 = t;
        Some(h)
    }
}

/// The fields of a MUX_C_NEW_SESSION body after its type and request id.
fn parse_new_session(
    f: &mut Fields<'_>,
) -> Option<(Option<String>, bool, bool, Vec<u8>, Vec<Vec<u8>>)> {
    f.string()?; // reserved
    let want_tty = f.flag()?;
    let _x11 = f.flag()?;
    let agent = f.flag()?;
    let subsystem = f.flag()?;
    let _escape = f.u32()?;
    let term = String::from_utf8_lossy(f.string()?).into_owned();
    let command = f.string()?.to_vec();
    let mut env = Vec::new();
    while !f.0.is_empty() {
        env.push(f.string()?.to_vec());
    }
    Some((want_tty.then_some(term), agent, subsystem, command, env))
}

/// The `-O` commands ssh knows; Err is ssh's message for another word.
pub fn check_command(cmd: &str) -> Result<(), String> {
    match cmd {
        "check" | "forward" | "cancel" | "exit" | "stop" | "proxy" => Ok(()),
        _ => Err("Invalid multiplex command.".into()),
    }
}

pub(super) fn frame(words: &[u32], text: Option<&str>) -> Vec<u8> {
    let mut body: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
    if let Some(t) = text {
        body.extend_from_slice(&(t.len() as u32).to_be_bytes());
        body.extend_from_slice(t.as_bytes());
    }
    let mut m = (body.len() as u32).to_be_bytes().to_vec();
    m.extend(body);
    m
}

pub(super) fn read_message(s: &mut UnixStream) -> std::io::Result<Vec<u8>> {
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

pub(super) fn word(body: &[u8], i: usize) -> Option<u32> {
    let b = body.get(i * 4..i * 4 + 4)?;
    Some(u32::from_be_bytes(b.try_into().ok()?))
}

/// The string after `words` leading words (a reason), lossily.
pub(super) fn reason(body: &[u8], words: usize) -> String {
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
                "sluice: -O {cmd}: not supported (a sluice master shares sessions only: give forwardings when starting it)"
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
    /// The message being read: its length word, then exactly its body
    /// (a passenger's descriptors follow the message on the stream).
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
    /// Passenger sessions asked for, for client/mux_session.rs to open.
    new_sessions: Vec<NewSession>,
}

impl Master {
    /// Listens on `path` (mode 0600). As ssh: a stale socket (nobody
    /// listening) is replaced; a live one disables multiplexing, with an
    /// error for ControlMaster yes, quietly for auto (the caller tried to
    /// ride that master first: client/mux_client.rs).
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
            new_sessions: Vec::new(),
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

    /// Passenger sessions that arrived since the last call.
    pub fn take_sessions(&mut self) -> Vec<NewSession> {
        std::mem::take(&mut self.new_sessions)
    }

    /// Accepts, reads and answers what is ready (non-blocking).
    pub fn tick(&mut self) {
        self.accept();
        let mut stop = false;
        for i in 0..self.conns.len() {
            while let Some(body) = read_ready(&mut self.conns[i]) {
                let c = &mut self.conns[i];
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
                    C_NEW_SESSION => match receive_session(c, rid, &body) {
                        Ok((tty, agent, subsystem, command, env, fds)) => {
                            // The connection is the session's from now on
                            // (anything still queued for it goes first).
                            c.closed = true;
                            let _ = c.s.set_nonblocking(false);
                            let _ = c.s.write_all(&std::mem::take(&mut c.out));
                            let s = c.s.try_clone();
                            match s {
                                Ok(conn) => self.new_sessions.push(NewSession {
                                    conn,
                                    request_id: rid,
                                    tty,
                                    agent,
                                    subsystem,
                                    command,
                                    env,
                                    fds,
                                }),
                                Err(e) => log!(Error, "multiplex: {e}"),
                            }
                            break;
                        }
                        Err(why) => {
                            log!(Error, "multiplex: session request: {why}");
                            frame(&[S_FAILURE, rid], Some(&why))
                        }
                    },
                    _ => frame(&[S_FAILURE, rid], Some("not supported by a sluice master")),
                };
                c.out.extend(reply);
            }
            let c = &mut self.conns[i];
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

    /// New control connections, from our own user (or root) only, as ssh
    /// checks: the socket's mode is not the only guard.
    fn accept(&mut self) {
        let Some(l) = &self.listener else { return };
        while let Ok((s, _)) = l.accept() {
            // SAFETY: geteuid has no preconditions.
            let me = unsafe { libc::geteuid() };
            match crate::net::fdpass::peer_uid(&s) {
                Ok(uid) if uid == me || uid == 0 => {}
                Ok(uid) => {
                    log!(Error, "multiplex uid mismatch: peer euid {uid} != uid {me}");
                    continue;
                }
                Err(e) => {
                    log!(Error, "multiplex: peer credentials: {e}");
                    continue;
                }
            }
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

    /// `-O stop`: no new control connections; the socket goes.
    fn stop_listening(&mut self) {
        if self.listener.take().is_some() {
            log!(Debug1, "multiplex: stopped listening");
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// One whole message's body once it has arrived, reading no byte past it.
fn read_ready(c: &mut Conn) -> Option<Vec<u8>> {
    if c.closed {
        return None;
    }
    loop {
        let need = if c.inbuf.len() < 4 {
            4 - c.inbuf.len()
        } else {
            let len = word(&c.inbuf, 0).unwrap_or(0) as usize;
            if len > MAX_MESSAGE {
                c.closed = true;
                return None;
            }
            4 + len - c.inbuf.len()
        };
        if need == 0 {
            let body = c.inbuf.split_off(4);
            c.inbuf.clear();
            return Some(body);
        }
        let mut buf = vec![0u8; need.min(64 * 1024)];
        match c.s.read(&mut buf) {
            Ok(0) => {
                c.closed = true;
                return None;
            }
            Ok(n) => c.inbuf.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return None,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => {
                c.closed = true;
                return None;
            }
        }
    }
}

type SessionFields = (
    Option<String>,
    bool,
    bool,
    Vec<u8>,
    Vec<Vec<u8>>,
    [OwnedFd; 3],
);

/// A MUX_C_NEW_SESSION's fields and the three descriptors after it.
fn receive_session(c: &mut Conn, rid: u32, body: &[u8]) -> Result<SessionFields, String> {
    let mut f = Fields(body.get(8..).unwrap_or_default());
    let (tty, agent, subsystem, command, env) =
        parse_new_session(&mut f).ok_or("malformed message")?;
    let mut fds = Vec::with_capacity(3);
    for what in ["stdin", "stdout", "stderr"] {
        let fd = crate::net::fdpass::recv_fd(&c.s, FD_WAIT)
            .map_err(|e| format!("failed to receive fd for {what} (request {rid}): {e}"))?;
        fds.push(fd);
    }
    let fds: [OwnedFd; 3] = fds.try_into().map_err(|_| "three descriptors")?;
    log!(
        Debug1,
        "multiplex: new session request {rid}: tty {}, subsystem {subsystem}, command \"{}\"",
        tty.is_some(),
        String::from_utf8_lossy(&command)
    );
    Ok((tty, agent, subsystem, command, env, fds))
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
