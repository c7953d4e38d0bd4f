//! A master's passenger sessions (ControlMaster): each MUX_C_NEW_SESSION
//! becomes a session channel on the master's connection, wired to the
//! stdin, stdout and stderr the passenger passed; its exit status goes back
//! as MUX_S_EXIT_MESSAGE when the channel closes. A passenger's pty follows
//! its terminal's size (looked at on each tick); the escape character is
//! not applied to a passenger's input.

use super::mux::NewSession;
use super::mux_error::MuxError;
use super::mux_wire as mux;
use crate::log;
use crate::net::pump::{ChanIo, ChannelFds};
use sluice_proto::msg::ChannelRequestKind;
use sluice_proto::{ChannelId, Connection, Event};
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// How often a passenger's terminal size is looked at when nothing else
/// wakes the master.
pub const SIZE_CHECK: Duration = Duration::from_millis(500);

/// A channel request sent with want-reply, in order.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Pending {
    Pty,
    Session,
}

/// One passenger's session.
struct Passenger {
    id: ChannelId,
    /// The control connection: replies and the exit message go here; it
    /// closing means the passenger is gone.
    conn: UnixStream,
    request: NewSessionParts,
    /// stdin, stdout, stderr until the channel is open.
    fds: Option<(OwnedFd, OwnedFd, Option<OwnedFd>)>,
    /// A duplicate of the passenger's stdin when it has a pty: its size.
    tty_fd: Option<OwnedFd>,
    size: (u32, u32, u32, u32),
    pending: Vec<Pending>,
    exit: Option<u32>,
    /// The passenger hung up: our close is sent.
    gone: bool,
}

/// A NewSession without its connection and descriptors.
struct NewSessionParts {
    request_id: u32,
    tty: Option<String>,
    agent: bool,
    subsystem: bool,
    command: Vec<u8>,
    env: Vec<Vec<u8>>,
    /// `-W` through the master: a direct-tcpip channel, no requests, and
    /// the control connection closes when it does (no exit message).
    stdio: bool,
}

/// The passengers of one master.
#[derive(Default)]
pub struct Passengers {
    list: Vec<Passenger>,
}

impl Passengers {
    /// Opens a session channel for each new passenger.
    pub fn open(&mut self, conn: &mut Connection, sessions: Vec<NewSession>) {
        for s in sessions {
            let NewSession {
                conn: mut control,
                request_id,
                tty,
                agent,
                subsystem,
                command,
                env,
                stdio,
                fds,
            } = s;
            let opened = match &stdio {
                Some((host, port)) => conn.open_channel(
                    "direct-tcpip",
                    &super::forward::tcpip_data(host, *port, None),
                ),
                None => conn.open_session(),
            };
            match opened {
                Ok(id) => self.list.push(Passenger {
                    id,
                    conn: control,
                    request: NewSessionParts {
                        request_id,
                        tty,
                        agent,
                        subsystem,
                        command,
                        env,
                        stdio: stdio.is_some(),
                    },
                    fds: Some(fds),
                    tty_fd: None,
                    size: (0, 0, 0, 0),
                    pending: Vec::new(),
                    exit: None,
                    gone: false,
                }),
                Err(e) => send(
                    &mut control,
                    &mux::frame(
                        &[mux::S_FAILURE, request_id],
                        Some(&format!("session open failed: {e}")),
                    ),
                ),
            }
        }
    }

    /// Passengers still running (the master waits for them).
    pub fn active(&self) -> bool {
        !self.list.is_empty()
    }

    /// Whether a passenger has a pty (its size is looked at periodically).
    pub fn any_tty(&self) -> bool {
        self.list.iter().any(|p| p.tty_fd.is_some())
    }

    /// The control connections, to wake the loop when a passenger hangs up.
    pub fn watch_fds(&self, out: &mut Vec<libc::pollfd>) {
        for p in self.list.iter().filter(|p| !p.gone) {
            out.push(libc::pollfd {
                fd: p.conn.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
    }

    /// Handles `event` if it concerns a passenger's channel.
    pub fn on_event(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        event: &Event,
        agent: &super::agent_forward::AgentForward,
    ) -> Result<bool, MuxError> {
        let id = match event {
            Event::ChannelOpened(id)
            | Event::ChannelClosed(id)
            | Event::ChannelEof(id)
            | Event::ChannelCloseHeld(id) => *id,
            Event::ChannelOpenFailed { channel, .. }
            | Event::ChannelReply { channel, .. }
            | Event::ChannelRequest { channel, .. } => *channel,
            _ => return Ok(false),
        };
        let Some(i) = self.list.iter().position(|p| p.id == id) else {
            return Ok(false);
        };
        let p = &mut self.list[i];
        match event {
            Event::ChannelOpened(_) => p.on_opened(conn, fds, agent)?,
            Event::ChannelOpenFailed { description, .. } => {
                let msg = format!("session open refused by peer: {description}");
                log!(Error, "multiplex: {msg}");
                let r = p.request.request_id;
                send(&mut p.conn, &mux::frame(&[mux::S_FAILURE, r], Some(&msg)));
                self.list.remove(i);
            }
            Event::ChannelReply { success, .. } => {
                let what = if p.pending.is_empty() {
                    None
                } else {
                    Some(p.pending.remove(0))
                };
                match (what, success) {
                    (Some(Pending::Pty), false) => {
                        log!(Error, "PTY allocation request failed on channel {}", id.0);
                        send(
                            &mut p.conn,
                            &mux::frame(&[mux::S_TTY_ALLOC_FAIL, id.0], None),
                        );
                    }
                    (Some(Pending::Session), false) => {
                        log!(
                            Error,
                            "{} request failed on channel {}",
                            p.request.kind(),
                            id.0
                        );
                        let _ = conn.close_channel(id);
                    }
                    _ => {}
                }
            }
            Event::ChannelRequest {
                want_reply,
                request,
                ..
            } => {
                match request {
                    ChannelRequestKind::ExitStatus { status } => p.exit = Some(*status),
                    ChannelRequestKind::ExitSignal { signal, .. } => {
                        log!(
                            Debug1,
                            "multiplex: channel {} killed by signal {signal}",
                            id.0
                        );
                        p.exit = Some(255);
                    }
                    _ => {}
                }
                if *want_reply {
                    let _ = conn.channel_reply(id, false);
                }
            }
            Event::ChannelClosed(_) if p.request.stdio => {
                // ssh's passenger waits for the connection to close.
                log!(Debug1, "multiplex: stdio forward channel {} closed", id.0);
                self.list.remove(i);
            }
            Event::ChannelClosed(_) => {
                let status = p.exit.unwrap_or(255);
                log!(
                    Debug1,
                    "multiplex: channel {} closed, exit value {status}",
                    id.0
                );
                send(
                    &mut p.conn,
                    &mux::frame(&[mux::S_EXIT_MESSAGE, id.0, status], None),
                );
                self.list.remove(i);
            }
            _ => {}
        }
        Ok(true)
    }

    /// Closes what the passengers left, follows their terminals' sizes and
    /// closes channels once their output is written (the master's own
    /// session's rule).
    pub fn tick(&mut self, conn: &mut Connection, fds: &mut ChannelFds) {
        for p in &mut self.list {
            if !p.gone && hung_up(&p.conn) {
                log!(
                    Debug1,
                    "multiplex: passenger of channel {} went away",
                    p.id.0
                );
                p.gone = true;
                if let Some(io) = fds.get_mut(p.id) {
                    io.close_source();
                }
                let _ = conn.close_channel(p.id);
                continue;
            }
            p.follow_size(conn);
            let drained = fds.get(p.id).is_none_or(|io| io.sinks_drained());
            if let Some(info) = conn.channel_info(p.id) {
                // The peer's CLOSE is held until what it sent is written:
                // a passenger's stdout that nobody reads yet must not stop
                // the master (and the other passengers) in a blocking drain.
                // A stdio forward has no exit status: both EOFs end it.
                let ended = p.exit.is_some() || (p.request.stdio && info.eof_sent);
                let done = info.close_received || (info.eof_received && ended);
                if done && drained && !info.close_sent {
                    let _ = conn.close_channel(p.id);
                }
            }
        }
    }
}

impl NewSessionParts {
    fn kind(&self) -> &'static str {
        if self.subsystem {
            "subsystem"
        } else if self.command.is_empty() {
            "shell"
        } else {
            "exec"
        }
    }
}

impl Passenger {
    /// The channel is open: agent, pty, environment and the command, in
    /// ssh's order; then the descriptors go on the channel and the
    /// passenger hears that its session is open.
    fn on_opened(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        agent: &super::agent_forward::AgentForward,
    ) -> Result<(), MuxError> {
        let id = self.id;
        conn.hold_close(id);
        if self.request.agent {
            agent.request(conn, id)?;
        }
        let Some((stdin, stdout, stderr)) = self.fds.take() else {
            return Ok(());
        };
        if self.request.stdio {
            self.attach(fds, stdin, stdout, None);
            return Ok(());
        }
        let Some(stderr) = stderr else {
            return Ok(());
        };
        if let Some(term) = self.request.tty.clone() {
            self.size = crate::client::tty::window_size(&stdin);
            let (cols, rows, width_px, height_px) = self.size;
            let modes = crate::client::tty::modes_of(stdin.as_raw_fd());
            let req = ChannelRequestKind::PtyReq {
                term,
                cols,
                rows,
                width_px,
                height_px,
                modes,
            };
            conn.channel_request(id, req, true)?;
            self.pending.push(Pending::Pty);
            self.tty_fd = stdin.try_clone().ok();
        }
        for e in &self.request.env {
            let Some(eq) = e.iter().position(|&b| b == b'=') else {
                continue;
            };
            let req = ChannelRequestKind::Env {
                name: String::from_utf8_lossy(&e[..eq]).into_owned(),
                value: e[eq + 1..].to_vec(),
            };
            conn.channel_request(id, req, false)?;
        }
        let command = std::mem::take(&mut self.request.command);
        let req = if self.request.subsystem {
            ChannelRequestKind::Subsystem {
                name: String::from_utf8_lossy(&command).into_owned(),
            }
        } else if command.is_empty() {
            ChannelRequestKind::Shell
        } else {
            ChannelRequestKind::Exec { command }
        };
        conn.channel_request(id, req, true)?;
        self.pending.push(Pending::Session);
        self.attach(fds, stdin, stdout, Some(stderr));
        Ok(())
    }

    /// The passenger's descriptors go on the channel (non-blocking: the
    /// master must never wait on one), and it hears that its session is open.
    fn attach(
        &mut self,
        fds: &mut ChannelFds,
        stdin: OwnedFd,
        stdout: OwnedFd,
        stderr: Option<OwnedFd>,
    ) {
        for fd in [Some(&stdin), Some(&stdout), stderr.as_ref()]
            .into_iter()
            .flatten()
        {
            let _ = crate::sys::fdio::set_nonblocking(fd.as_raw_fd(), true);
        }
        let mut io = ChanIo::owned(Some(stdin), None, Some(stdout), stderr);
        io.close_when_sink_fails = true;
        fds.insert(self.id, io);
        let opened = mux::frame(
            &[mux::S_SESSION_OPENED, self.request.request_id, self.id.0],
            None,
        );
        send(&mut self.conn, &opened);
    }

    /// A window-change when the passenger's terminal changed size.
    fn follow_size(&mut self, conn: &mut Connection) {
        let Some(fd) = &self.tty_fd else { return };
        let size = crate::client::tty::window_size(fd);
        if size == self.size || size == (0, 0, 0, 0) {
            return;
        }
        self.size = size;
        let (cols, rows, width_px, height_px) = size;
        let req = ChannelRequestKind::WindowChange {
            cols,
            rows,
            width_px,
            height_px,
        };
        let _ = conn.channel_request(self.id, req, false);
    }
}

/// A control message to the passenger; a passenger that stopped reading
/// loses it (the socket is non-blocking and the messages are small).
fn send(s: &mut UnixStream, m: &[u8]) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_write_timeout(Some(Duration::from_secs(5)));
    let _ = s.write_all(m);
}

/// The passenger's end of the control connection closed.
fn hung_up(s: &UnixStream) -> bool {
    let mut p = [libc::pollfd {
        fd: s.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }];
    if crate::sys::fdio::poll(&mut p, 0).unwrap_or(0) == 0 {
        return false;
    }
    let mut b = [0u8; 64];
    // MSG_DONTWAIT so it never blocks. A passenger sends nothing after its
    // request: data is read and dropped.
    match rustix::net::recv(s, &mut b, rustix::net::RecvFlags::DONTWAIT) {
        Ok((n, _)) => n == 0,
        Err(e) => std::io::Error::from(e).kind() != std::io::ErrorKind::WouldBlock,
    }
}
