//! `sluice`'s forwarding: `-L` and `-D` listeners whose connections become
//! `direct-tcpip` / `direct-streamlocal@openssh.com` channels, `-R` global
//! requests whose `forwarded-*` channels connect to the local target, and
//! `-W` (stdin/stdout as one direct-tcpip channel). Messages as ssh's.

use super::forward_spec::{Endpoint, Forward};
use super::socks::{self, Handshake, Step};
use crate::log;
use crate::net::fwdsock::{self, Connecting};
use crate::net::pump::{ChanIo, ChannelFds};
use sluice_proto::wire::Writer;
use sluice_proto::{ChannelId, Connection};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::UnixListener;

mod added;
pub mod error;
mod remote;
pub mod remote_socks;

pub use added::{RemoteAdd, RemoteOutcome};
pub use error::{ForwardError, RemoteRefusal};

const ADMINISTRATIVELY_PROHIBITED: u32 = 1;
use fwdsock::CONNECT_FAILED;
const ACCEPT_BATCH: usize = 16;
/// SOCKS clients mid-handshake at once.
const MAX_SOCKS_PENDING: usize = 64;

/// What to forward, from the command line and ssh_config.
#[derive(Debug, Clone, Default)]
pub struct ForwardPlan {
    /// `-L`, LocalForward.
    pub local: Vec<Forward>,
    /// `-R`, RemoteForward.
    pub remote: Vec<Forward>,
    /// `-D`, DynamicForward.
    pub dynamic: Vec<Forward>,
    /// `-W host:port`.
    pub stdio: Option<(String, u16)>,
    /// ExitOnForwardFailure.
    pub exit_on_failure: bool,
    /// GatewayPorts: local listeners without an address bind every address.
    pub gateway_ports: bool,
    /// PermitRemoteOpen: where a remote SOCKS forward (`-R port`) may connect.
    pub permit_remote_open: remote_socks::PermitRemoteOpen,
    /// StreamLocalBindMask for a local Unix-socket listener (None: 0177).
    pub unix_mask: Option<u32>,
    /// StreamLocalBindUnlink: remove a stale socket file before binding.
    pub unix_unlink: bool,
}

struct Listener {
    fd: OwnedFd,
    /// The forwarding it serves (`-O cancel` names it).
    spec: Forward,
    /// None: SOCKS.
    target: Option<Endpoint>,
}

/// A channel we asked to open, with the socket it will carry.
struct Opening {
    sock: Option<OwnedFd>,
    /// The SOCKS version to answer once the channel opens or fails.
    socks: Option<u8>,
}

/// Forwarding state of one client connection.
#[derive(Default)]
pub struct ClientForward {
    plan: ForwardPlan,
    listeners: Vec<Listener>,
    socks: Vec<Handshake>,
    opening: BTreeMap<ChannelId, Opening>,
    /// Indices into `plan.remote` whose replies are due, in order.
    remote_pending: VecDeque<usize>,
    /// Ports the server allocated for `-R 0:...`, by index.
    allocated: BTreeMap<usize, u16>,
    /// Remote forwards added while running, whose answers go back to
    /// whoever asked ([`RemoteOutcome`]).
    tickets: BTreeSet<usize>,
    /// Remote forwards cancelled (indices stay: they key `allocated`).
    cancelled: BTreeSet<usize>,
    /// forwarded-* channels waiting for the local connect.
    connecting: Vec<(ChannelId, Connecting)>,
    channels: Vec<ChannelId>,
    /// A channel waits for our EOF (see `fwdsock::close_finished`).
    half_closed: bool,
    stdio_channel: Option<ChannelId>,
    stdio_closed: bool,
}

fn reason_text(code: u32) -> &'static str {
    match code {
        1 => "administratively prohibited",
        2 => "connect failed",
        3 => "unknown channel type",
        4 => "resource shortage",
        _ => "unknown reason",
    }
}

/// A direct-tcpip open's data: where to, and from where (`peer`).
pub(crate) fn tcpip_data(host: &str, port: u16, peer: Option<std::net::SocketAddr>) -> Vec<u8> {
    let (oh, op) = fwdsock::originator(peer);
    let mut d = Vec::new();
    Writer::new(&mut d)
        .utf8(host)
        .u32(port.into())
        .utf8(&oh)
        .u32(op.into());
    d
}

impl ClientForward {
    /// Forwarding as planned; nothing happens before [`ClientForward::start`].
    pub fn new(plan: ForwardPlan) -> Self {
        ClientForward {
            plan,
            ..Default::default()
        }
    }

    /// Binds local listeners, asks for remote ones, opens the `-W` channel.
    /// Err only when ExitOnForwardFailure makes a failure fatal.
    pub fn start(&mut self, conn: &mut Connection) -> Result<(), ForwardError> {
        let locals: Vec<Forward> = self
            .plan
            .local
            .iter()
            .chain(self.plan.dynamic.iter())
            .cloned()
            .collect();
        for f in locals {
            if let Err(e) = self.listen(&f) {
                log!(Error, "{e}");
                if self.plan.exit_on_failure {
                    return Err(ForwardError::LocalListen);
                }
                log!(Info, "Could not request local forwarding.");
            }
        }
        for i in 0..self.plan.remote.len() {
            self.request_remote(conn, i)?;
        }
        if let Some((host, port)) = self.plan.stdio.clone() {
            let id = conn.open_channel("direct-tcpip", &tcpip_data(&host, port, None))?;
            self.stdio_channel = Some(id);
            self.opening.insert(
                id,
                Opening {
                    sock: None,
                    socks: None,
                },
            );
        }
        Ok(())
    }

    fn listen(&mut self, f: &Forward) -> Result<(), ForwardError> {
        let fds: Vec<OwnedFd> = match &f.listen {
            Endpoint::Tcp { host, port } => {
                let addrs = fwdsock::bind_addrs(host.as_deref(), *port, self.plan.gateway_ports)
                    .map_err(ForwardError::Resolve)?;
                let (ls, _) = fwdsock::listen_tcp(&addrs).map_err(ForwardError::ListenTcp)?;
                ls.into_iter().map(OwnedFd::from).collect()
            }
            Endpoint::Unix(path) => {
                if self.plan.unix_unlink {
                    // Only a socket is removed, as ssh's unlink of a stale one.
                    use std::os::unix::fs::FileTypeExt;
                    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
                        let _ = std::fs::remove_file(path);
                    }
                }
                let mask = self.plan.unix_mask.unwrap_or(0o177);
                // The socket file takes its mode from the umask; restored right after.
                let old = rustix::process::umask(rustix::fs::Mode::from_raw_mode(mask as _));
                let r = UnixListener::bind(path);
                rustix::process::umask(old);
                let l = r.map_err(|error| ForwardError::ListenUnix {
                    path: path.clone(),
                    error,
                })?;
                l.set_nonblocking(true).map_err(ForwardError::Io)?;
                vec![l.into()]
            }
        };
        for fd in fds {
            self.listeners.push(Listener {
                fd,
                spec: f.clone(),
                target: f.connect.clone(),
            });
        }
        log!(Debug1, "Local forwarding listening on {}", f.listen);
        Ok(())
    }

    /// Local or dynamic listeners are open.
    pub fn has_listeners(&self) -> bool {
        !self.listeners.is_empty()
    }

    /// All remote forwards answered (for `-f` with ExitOnForwardFailure).
    pub fn setup_done(&self) -> bool {
        self.remote_pending.is_empty()
    }

    /// `-W`'s channel closed: the run is over.
    pub fn stdio_finished(&self) -> bool {
        self.stdio_closed
    }

    /// Forwarded connections are still open (ssh waits for them after the
    /// session ends).
    pub fn busy(&self) -> bool {
        !self.channels.is_empty() || !self.opening.is_empty() || !self.connecting.is_empty()
    }

    /// A channel we opened was confirmed.
    pub fn on_opened(&mut self, fds: &mut ChannelFds, id: ChannelId) {
        let Some(o) = self.opening.remove(&id) else {
            return;
        };
        match o.sock {
            Some(sock) => {
                match o.socks {
                    Some(4) => socks::send(&sock, &socks::reply4(true)),
                    Some(_) => socks::send(&sock, &socks::reply5(0)),
                    None => {}
                }
                if let Ok(io) = fwdsock::socket_io(sock) {
                    fds.insert(id, io);
                }
            }
            None => {
                // -W: stdin and stdout carry the connection.
                let mut io = ChanIo::borrowed(Some(0), None, Some(1), None);
                io.close_when_sink_fails = true;
                fds.insert(id, io);
            }
        }
        self.channels.push(id);
    }

    /// A channel we opened was refused; Err ends the run (`-W`).
    pub fn on_open_failed(
        &mut self,
        id: ChannelId,
        reason: u32,
        desc: &str,
    ) -> Result<(), ForwardError> {
        let o = self.opening.remove(&id);
        let mut msg = format!("channel {}: open failed: {}", id.0, reason_text(reason));
        if !desc.is_empty() {
            msg.push_str(": ");
            msg.push_str(desc);
        }
        // ssh logs this at INFO (logit).
        log!(Info, "{msg}");
        if Some(id) == self.stdio_channel {
            return Err(ForwardError::StdioFailed);
        }
        if let Some(Opening {
            sock: Some(sock),
            socks: Some(v),
        }) = o
        {
            let r = if v == 4 {
                socks::reply4(false)
            } else {
                socks::reply5(if reason == CONNECT_FAILED { 5 } else { 2 })
            };
            socks::send(&sock, &r);
        }
        Ok(())
    }

    /// Accepts on listeners, serves SOCKS handshakes, finishes connects,
    /// closes channels whose both directions are done.
    pub fn tick(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
    ) -> Result<(), ForwardError> {
        for l in &self.listeners {
            for (sock, peer) in fwdsock::accept_all(l.fd.as_fd(), ACCEPT_BATCH) {
                let (ty, data) = match &l.target {
                    None => {
                        if self.socks.len() < MAX_SOCKS_PENDING {
                            self.socks.push(Handshake::new(sock));
                        }
                        continue;
                    }
                    Some(Endpoint::Tcp { host, port }) => (
                        "direct-tcpip",
                        tcpip_data(host.as_deref().unwrap_or("localhost"), *port, peer),
                    ),
                    Some(Endpoint::Unix(path)) => {
                        let mut d = Vec::new();
                        Writer::new(&mut d).utf8(path).utf8("").u32(0);
                        ("direct-streamlocal@openssh.com", d)
                    }
                };
                log!(
                    Debug1,
                    "Connection to forwarded port accepted, opening {ty}"
                );
                let id = conn.open_channel(ty, &data)?;
                self.opening.insert(
                    id,
                    Opening {
                        sock: Some(sock),
                        socks: None,
                    },
                );
            }
        }
        let mut i = 0;
        while i < self.socks.len() {
            let Some(h) = self.socks.get_mut(i) else {
                break;
            };
            match h.step() {
                Step::Wait => i += 1,
                Step::Fail(why) => {
                    log!(Debug1, "dynamic forward: {why}");
                    self.socks.swap_remove(i);
                }
                Step::Connect {
                    version,
                    host,
                    port,
                } => {
                    let h = self.socks.swap_remove(i);
                    log!(Debug1, "dynamic forward: connect to {host} port {port}");
                    let id = conn.open_channel("direct-tcpip", &tcpip_data(&host, port, None))?;
                    self.opening.insert(
                        id,
                        Opening {
                            sock: Some(h.sock),
                            socks: Some(version),
                        },
                    );
                }
            }
        }
        fwdsock::poll_connects(conn, fds, &mut self.channels, &mut self.connecting)
            .map_err(ForwardError::Socket)?;
        self.half_closed = fwdsock::close_finished(conn, fds, &self.channels);
        Ok(())
    }

    /// How soon `tick` should run again.
    pub fn tick_interval(&self) -> Option<std::time::Duration> {
        if self.connecting.iter().any(|(_, c)| c.resolving()) {
            return Some(fwdsock::RESOLVE_TICK);
        }
        self.half_closed.then_some(fwdsock::HALF_CLOSED_TICK)
    }

    /// A channel closed.
    pub fn on_closed(&mut self, id: ChannelId) {
        self.channels.retain(|c| *c != id);
        if Some(id) == self.stdio_channel {
            self.stdio_closed = true;
        }
    }

    /// Listeners, SOCKS clients and connects to wake for.
    pub fn watch_fds(&self, out: &mut Vec<libc::pollfd>) {
        let mut add = |fd, events| {
            out.push(libc::pollfd {
                fd,
                events,
                revents: 0,
            })
        };
        for l in &self.listeners {
            add(l.fd.as_raw_fd(), libc::POLLIN);
        }
        for h in &self.socks {
            add(h.sock.as_raw_fd(), libc::POLLIN | libc::POLLRDHUP);
        }
        for (_, c) in &self.connecting {
            if let Some(fd) = c.fd() {
                add(fd, libc::POLLOUT);
            }
        }
    }
}

/// `-f`: the parent exits 0 at once, the child carries on in a new
/// session, as ssh's `daemon(1, 1)` (stdin is already /dev/null).
pub fn go_background() -> Result<(), ForwardError> {
    log!(Debug1, "forking to background");
    // SIGHUP ignored across the fork: when the parent leads the terminal's
    // session (a terminal's first process), its exit hangs up the
    // foreground group, which the child is still in until its setsid.
    let hup = crate::sys::signal::ignore_for_now(libc::SIGHUP);
    // SAFETY: fork between batches: the other threads are parked crypto
    // workers holding nothing the child uses (it starts its own).
    match unsafe { crate::sys::process::fork() } {
        Err(e) => {
            hup.restore();
            Err(ForwardError::Fork(e))
        }
        Ok(crate::sys::process::Forked::Child) => {
            // A new session, then SIGHUP back: the terminal is no longer ours.
            let _ = rustix::process::setsid();
            hup.restore();
            Ok(())
        }
        // Leave without running destructors that would touch the
        // connection the child now owns.
        Ok(crate::sys::process::Forked::Parent(_)) => crate::sys::process::exit_now(0),
    }
}
