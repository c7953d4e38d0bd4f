//! ControlMaster / ControlPath / `-O`: OpenSSH's multiplexing protocol
//! (PROTOCOL.mux, version 4), the control socket's side. A master (`-M`,
//! ControlMaster yes/auto) listens on ControlPath and answers `-O check`,
//! `-O exit` and `-O stop` from sluice or ssh, and takes passenger
//! sessions (MUX_C_NEW_SESSION with the passenger's stdin, stdout and
//! stderr; client/mux_session.rs runs them, client/mux_client.rs is the
//! passenger), and forwardings asked while it runs (MUX_C_OPEN_FWD,
//! MUX_C_CLOSE_FWD; client/mux_forward.rs applies them) and `-W` through
//! it (MUX_C_NEW_STDIO_FWD). `-O proxy` (a proxy client speaking SSH
//! packets to the master) is answered MUX_S_FAILURE.

use super::forward_spec::{Forward, Kind};
use super::mux_error::MuxError;
use super::mux_wire::*;
use crate::log;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::Duration;

/// How long a passenger may take to pass its descriptors after asking.
const FD_WAIT: Duration = Duration::from_secs(10);

/// A forwarding a control connection asked the master for.
pub struct FwdAsk {
    /// Where the answer goes.
    pub reply: UnixStream,
    /// Echoed in the answer.
    pub request_id: u32,
    /// MUX_C_CLOSE_FWD rather than MUX_C_OPEN_FWD.
    pub close: bool,
    /// Local, remote or dynamic.
    pub kind: Kind,
    /// What to listen on and where to connect.
    pub forward: Forward,
}

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
    /// MUX_C_NEW_STDIO_FWD (`ssh -W` through the master): a direct-tcpip
    /// channel to this host and port on stdin and stdout, no session.
    pub stdio: Option<(String, u16)>,
    /// stdin, stdout, and stderr (none for stdio forwarding).
    pub fds: (OwnedFd, OwnedFd, Option<OwnedFd>),
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
    /// Forwardings asked for, for client/mux_forward.rs.
    new_forwards: Vec<FwdAsk>,
}

impl Master {
    /// Listens on `path` (mode 0600). As ssh: a stale socket (nobody
    /// listening) is replaced; a live one disables multiplexing, with an
    /// error for ControlMaster yes, quietly for auto (the caller tried to
    /// ride that master first: client/mux_client.rs).
    pub fn listen(path: &str, auto: bool) -> Option<Master> {
        let bind = || {
            // Restored right after bind.
            let old = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o177));
            let r = UnixListener::bind(path);
            rustix::process::umask(old);
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
                    crate::io_error::describe_io_error(&e)
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
            new_forwards: Vec::new(),
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

    /// Still taking control connections (no `-O stop` yet).
    pub fn listening(&self) -> bool {
        self.listener.is_some()
    }

    /// Forwardings asked for since the last call.
    pub fn take_forwards(&mut self) -> Vec<FwdAsk> {
        std::mem::take(&mut self.new_forwards)
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
                    C_NEW_SESSION | C_NEW_STDIO_FWD => match receive_session(c, rid, &body) {
                        Ok(session) => {
                            // The connection is the session's from now on
                            // (anything still queued for it goes first).
                            c.closed = true;
                            let _ = c.s.set_nonblocking(false);
                            let _ = c.s.write_all(&std::mem::take(&mut c.out));
                            self.new_sessions.push(session);
                            break;
                        }
                        Err(why) => {
                            log!(Error, "multiplex: session request: {why}");
                            frame(&[S_FAILURE, rid], Some(&why.to_string()))
                        }
                    },
                    C_OPEN_FWD | C_CLOSE_FWD => {
                        let ask = parse_fwd(&body).ok_or("malformed message");
                        match ask.and_then(|a| Ok((a, c.s.try_clone().map_err(|_| "no socket")?))) {
                            Ok(((fwd_kind, forward), reply)) => {
                                // Answered once applied (a remote one when
                                // the server answers).
                                self.new_forwards.push(FwdAsk {
                                    reply,
                                    request_id: rid,
                                    close: kind == C_CLOSE_FWD,
                                    kind: fwd_kind,
                                    forward,
                                });
                                continue;
                            }
                            Err(why) => frame(&[S_FAILURE, rid], Some(why)),
                        }
                    }
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
            let me = rustix::process::geteuid().as_raw();
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

/// The fields of a MUX_C_NEW_STDIO_FWD body after its type and request id
/// (the port is a uint32, as ssh sends it; PROTOCOL.mux says string).
fn parse_stdio_fwd(f: &mut Fields<'_>) -> Option<(String, u16)> {
    f.string()?; // reserved
    let host = String::from_utf8(f.string()?.to_vec()).ok()?;
    let port = u16::try_from(f.u32()?).ok()?;
    Some((host, port))
}

/// A MUX_C_NEW_SESSION or MUX_C_NEW_STDIO_FWD and the descriptors after it.
fn receive_session(c: &mut Conn, rid: u32, body: &[u8]) -> Result<NewSession, MuxError> {
    let mut f = Fields(body.get(8..).unwrap_or_default());
    let stdio_fwd = word(body, 0) == Some(C_NEW_STDIO_FWD);
    let (tty, agent, subsystem, command, env, stdio) = if stdio_fwd {
        let to = parse_stdio_fwd(&mut f).ok_or(MuxError::Malformed)?;
        (None, false, false, Vec::new(), Vec::new(), Some(to))
    } else {
        let (tty, agent, subsystem, command, env) =
            parse_new_session(&mut f).ok_or(MuxError::Malformed)?;
        (tty, agent, subsystem, command, env, None)
    };
    let names: &[&'static str] = if stdio_fwd {
        &["stdin", "stdout"]
    } else {
        &["stdin", "stdout", "stderr"]
    };
    let mut fds = Vec::with_capacity(3);
    for &what in names {
        let fd = crate::net::fdpass::recv_fd(&c.s, FD_WAIT)
            .map_err(|error| MuxError::ReceiveFd { what, rid, error })?;
        fds.push(fd);
    }
    let mut fds = fds.into_iter();
    let (Some(stdin), Some(stdout)) = (fds.next(), fds.next()) else {
        return Err(MuxError::DescriptorsMissing);
    };
    match &stdio {
        Some((host, port)) => log!(
            Debug1,
            "multiplex: stdio forward request {rid} to {host}:{port}"
        ),
        None => log!(
            Debug1,
            "multiplex: new session request {rid}: tty {}, subsystem {subsystem}, command \"{}\"",
            tty.is_some(),
            String::from_utf8_lossy(&command)
        ),
    }
    let conn =
        c.s.try_clone()
            .map_err(|error| MuxError::Io { what: "", error })?;
    Ok(NewSession {
        conn,
        request_id: rid,
        tty,
        agent,
        subsystem,
        command,
        env,
        stdio,
        fds: (stdin, stdout, fds.next()),
    })
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
