//! Sockets behind forwarded channels, shared by `sluice` and `sluiced`:
//! listening sockets (non-blocking, watched by the pump's handler),
//! non-blocking connects finished in `tick`, the `ChanIo` of a forwarded
//! connection, and closing forwarded channels once both directions are done.

use super::pump::{ChanIo, ChannelFds};
use rustix::event::PollFlags;
use rustix::io::Errno;
use rustix::net::{self, sockopt, AddressFamily, SocketAddrUnix, SocketFlags, SocketType};
use sluice_proto::{ChannelId, Connection};
use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::mpsc;
use std::time::Duration;

/// Why a forwarded channel or listener could not be set up.
#[derive(Debug)]
pub enum FwdError {
    /// The engine could not confirm the channel the peer opened.
    Accept(sluice_proto::Error),
    /// None of a listen's addresses could be bound (each was logged).
    Listen {
        /// The port asked for.
        port: u16,
    },
}

impl std::fmt::Display for FwdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FwdError::Accept(e) => e.fmt(f),
            FwdError::Listen { port } => write!(f, "cannot listen to port: {port}"),
        }
    }
}

impl std::error::Error for FwdError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FwdError::Accept(e) => Some(e),
            FwdError::Listen { .. } => None,
        }
    }
}

/// The channel fds for a connected socket: read it for CHANNEL_DATA, write
/// the peer's data to a `dup` of it, shut its write side on the peer's EOF.
pub fn socket_io(sock: OwnedFd) -> io::Result<ChanIo> {
    crate::sys::fdio::set_nonblocking(sock.as_raw_fd(), true)?;
    let dup = sock.try_clone()?;
    let mut io = ChanIo::owned(Some(sock), None, Some(dup), None);
    io.close_sink_on_eof = true;
    io.shutdown_sink_on_eof = true;
    io.close_when_sink_fails = true;
    Ok(io)
}

/// RFC 4254 5.1 reason: connect failed.
pub const CONNECT_FAILED: u32 = 2;

/// Confirms a channel the peer opened toward `sock`, now connected, and
/// attaches the socket to it (or refuses the channel when it can't be).
pub fn accept_connected(
    conn: &mut Connection,
    fds: &mut ChannelFds,
    channels: &mut Vec<ChannelId>,
    id: ChannelId,
    sock: OwnedFd,
) -> Result<(), FwdError> {
    match socket_io(sock) {
        Ok(io) => {
            conn.accept_channel(id).map_err(FwdError::Accept)?;
            fds.insert(id, io);
            channels.push(id);
        }
        Err(e) => {
            let _ = conn.reject_channel(id, CONNECT_FAILED, &e.to_string());
        }
    }
    Ok(())
}

/// Finishes the non-blocking connects of peer-opened channels: each one
/// that connected is accepted, each one that failed is refused.
pub fn poll_connects(
    conn: &mut Connection,
    fds: &mut ChannelFds,
    channels: &mut Vec<ChannelId>,
    connecting: &mut Vec<(ChannelId, Connecting)>,
) -> Result<(), FwdError> {
    let mut i = 0;
    while let Some((id, c)) = connecting.get_mut(i) {
        let id = *id;
        match c.poll() {
            ConnectResult::Pending => i += 1,
            ConnectResult::Done(sock) => {
                connecting.swap_remove(i);
                accept_connected(conn, fds, channels, id, sock)?;
            }
            ConnectResult::Failed(e) => {
                connecting.swap_remove(i);
                let why = crate::io_error::describe_io_error(&e);
                crate::log!(Info, "connect_to: channel {}: {why}", id.0);
                let _ = conn.reject_channel(id, CONNECT_FAILED, &why);
            }
        }
    }
    Ok(())
}

/// Closes forwarded channels whose both directions are done (our EOF sent,
/// the peer's received and written out), as OpenSSH's `chan_is_dead`.
/// Returns true while a channel waits only for our EOF: the pump sends it
/// after `tick`, so the handler asks for another tick soon
/// ([`HALF_CLOSED_TICK`]) to close the channel then.
pub fn close_finished(conn: &mut Connection, fds: &ChannelFds, ids: &[ChannelId]) -> bool {
    let mut waiting = false;
    for &id in ids {
        let Some(info) = conn.channel_info(id) else {
            continue;
        };
        let drained = fds.get(id).is_none_or(|io| io.sinks_drained());
        if info.open && info.eof_sent && info.eof_received && drained && !info.close_sent {
            let _ = conn.close_channel(id);
        } else if info.open && info.eof_received && !info.close_sent {
            waiting = true;
        }
    }
    waiting
}

/// How soon to tick again while a forwarded channel is half closed.
pub const HALF_CLOSED_TICK: std::time::Duration = std::time::Duration::from_millis(20);

/// Addresses to bind for a listen host: `None` is loopback (or every
/// address when `gateway`), `*` and empty every address, `localhost` both
/// loopbacks.
pub fn bind_addrs(host: Option<&str>, port: u16, gateway: bool) -> io::Result<Vec<SocketAddr>> {
    let h = match host {
        None if gateway => "",
        None => "localhost",
        Some(h) => h,
    };
    Ok(match h {
        "" | "*" => vec![
            SocketAddr::from(([0u16; 8], port)),
            SocketAddr::from(([0u8; 4], port)),
        ],
        "localhost" => vec![
            SocketAddr::from(([127, 0, 0, 1], port)),
            SocketAddr::from(([0, 0, 0, 0, 0, 0, 0, 1], port)),
        ],
        h => (h, port).to_socket_addrs()?.collect(),
    })
}

/// Binds non-blocking TCP listeners on every address (for port 0, the port
/// the first one got); each failure is logged (`bind [addr]:port: ...`),
/// and it fails only when none bound.
/// Returns the listeners and the port.
pub fn listen_tcp(addrs: &[SocketAddr]) -> Result<(Vec<TcpListener>, u16), FwdError> {
    let mut out: Vec<TcpListener> = Vec::new();
    let mut port = addrs.first().map_or(0, SocketAddr::port);
    for a in addrs {
        let mut a = *a;
        if a.port() == 0 {
            a.set_port(port);
        }
        let r = if a.is_ipv6() {
            bind_v6only(a)
        } else {
            TcpListener::bind(a)
        };
        match r.and_then(|l| l.set_nonblocking(true).map(|()| l)) {
            Ok(l) => {
                if port == 0 {
                    port = l.local_addr().map_or(0, |x| x.port());
                }
                out.push(l);
            }
            Err(e) => {
                let msg = format!(
                    "bind [{}]:{}: {}",
                    a.ip(),
                    a.port(),
                    crate::io_error::describe_io_error(&e)
                );
                // Shown even when another address bound, as ssh does.
                crate::log!(Error, "{msg}");
            }
        }
    }
    if out.is_empty() {
        return Err(FwdError::Listen { port });
    }
    Ok((out, port))
}

/// An IPv6 listener with IPV6_V6ONLY, so `::` and `0.0.0.0` can both bind.
pub fn bind_v6only(a: SocketAddr) -> io::Result<TcpListener> {
    let fd = new_socket(&a)?;
    // Failures to set these leave the kernel's defaults, as before.
    let _ = sockopt::set_ipv6_v6only(&fd, true);
    let _ = sockopt::set_socket_reuseaddr(&fd, true);
    net::bind(&fd, &a)?;
    net::listen(&fd, 128)?;
    Ok(TcpListener::from(fd))
}

fn new_socket(a: &SocketAddr) -> io::Result<OwnedFd> {
    let family = if a.is_ipv4() {
        AddressFamily::INET
    } else {
        AddressFamily::INET6
    };
    Ok(net::socket_with(
        family,
        SocketType::STREAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )?)
}

/// A TCP connect in progress, trying each address in turn without blocking.
pub struct Connecting {
    fd: Option<OwnedFd>,
    addrs: VecDeque<SocketAddr>,
    last_err: Option<io::Error>,
    /// A host name being resolved on a helper thread (getaddrinfo blocks,
    /// for seconds when DNS is slow; the loop must not).
    resolving: Option<mpsc::Receiver<io::Result<Vec<SocketAddr>>>>,
    /// Which addresses may be tried (sshd's AddressFamily).
    keep: fn(&SocketAddr) -> bool,
}

/// How often a handler ticks while a name is being resolved.
pub const RESOLVE_TICK: std::time::Duration = std::time::Duration::from_millis(10);

/// How a connect ended.
pub enum ConnectResult {
    /// Still waiting.
    Pending,
    /// Connected.
    Done(OwnedFd),
    /// Every address failed; the last error.
    Failed(io::Error),
}

impl Connecting {
    /// Starts connecting to `host:port`; an address connects at once, a
    /// name is resolved on a short-lived thread first.
    pub fn start(host: &str, port: u16) -> Connecting {
        Self::start_filtered(host, port, |_| true)
    }

    /// `start`, trying only the addresses `keep` allows (the others fail
    /// as an unsupported address family).
    pub fn start_filtered(host: &str, port: u16, keep: fn(&SocketAddr) -> bool) -> Connecting {
        let mut c = Connecting {
            fd: None,
            addrs: VecDeque::new(),
            last_err: None,
            resolving: None,
            keep,
        };
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = literal.parse::<std::net::IpAddr>() {
            c.resolved(Ok(vec![SocketAddr::new(ip, port)]));
            return c;
        }
        let (tx, rx) = mpsc::channel();
        let name = host.to_owned();
        let spawned = std::thread::Builder::new()
            .name("resolve".into())
            .spawn(move || {
                let r = (name.as_str(), port)
                    .to_socket_addrs()
                    .map(Iterator::collect);
                let _ = tx.send(r);
            });
        match spawned {
            Ok(_) => c.resolving = Some(rx),
            Err(_) => c.resolved((host, port).to_socket_addrs().map(Iterator::collect)),
        }
        c
    }

    fn resolved(&mut self, r: io::Result<Vec<SocketAddr>>) {
        self.resolving = None;
        match r {
            Ok(a) => {
                let n = a.len();
                self.addrs = a.into_iter().filter(|a| (self.keep)(a)).collect();
                if self.addrs.is_empty() && n > 0 {
                    self.last_err = Some(Errno::AFNOSUPPORT.into());
                }
            }
            Err(e) => self.last_err = Some(e),
        }
        self.next_addr();
    }

    /// A name is still being resolved (nothing to poll yet).
    pub fn resolving(&self) -> bool {
        self.resolving.is_some()
    }

    fn next_addr(&mut self) {
        self.fd = None;
        while let Some(a) = self.addrs.pop_front() {
            let fd = match new_socket(&a) {
                Ok(fd) => fd,
                Err(e) => {
                    self.last_err = Some(e);
                    continue;
                }
            };
            let err = match net::connect(&fd, &a) {
                Ok(()) | Err(Errno::INPROGRESS) => {
                    self.fd = Some(fd);
                    return;
                }
                Err(e) => e,
            };
            self.last_err = Some(err.into());
        }
    }

    /// The fd to watch for POLLOUT, while connecting.
    pub fn fd(&self) -> Option<RawFd> {
        self.fd.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// Checks progress without blocking.
    pub fn poll(&mut self) -> ConnectResult {
        if let Some(rx) = &self.resolving {
            match rx.try_recv() {
                Ok(r) => self.resolved(r),
                Err(mpsc::TryRecvError::Empty) => return ConnectResult::Pending,
                Err(mpsc::TryRecvError::Disconnected) => {
                    self.resolved(Err(io::Error::other("name resolution failed")))
                }
            }
        }
        loop {
            let Some(fd) = self.fd.as_ref() else {
                let e = self
                    .last_err
                    .take()
                    .unwrap_or_else(|| io::Error::other("no address"));
                return ConnectResult::Failed(e);
            };
            if crate::sys::fdio::wait(fd.as_fd(), PollFlags::OUT, Some(Duration::ZERO)).is_err() {
                return ConnectResult::Pending;
            }
            // A failed SO_ERROR read counts as connected, as before.
            let err = sockopt::socket_error(fd).unwrap_or(Ok(()));
            match err {
                Ok(()) => {
                    if let Some(fd) = self.fd.take() {
                        return ConnectResult::Done(fd);
                    }
                    self.last_err = Some(io::Error::from_raw_os_error(0));
                }
                Err(e) => self.last_err = Some(e.into()),
            }
            self.next_addr();
        }
    }
}

/// Accepts what is waiting on a listening socket (TCP or Unix), as
/// non-blocking sockets, with the peer's address (None for a Unix socket).
pub fn accept_all(listener: BorrowedFd<'_>, max: usize) -> Vec<(OwnedFd, Option<SocketAddr>)> {
    let mut out = Vec::new();
    while out.len() < max {
        let Ok((fd, from)) =
            net::acceptfrom_with(listener, SocketFlags::NONBLOCK | SocketFlags::CLOEXEC)
        else {
            break;
        };
        // The address and port only (no flow label or scope), as reported.
        let peer = from
            .and_then(|a| SocketAddr::try_from(a).ok())
            .map(|a| SocketAddr::new(a.ip(), a.port()));
        out.push((fd, peer));
    }
    out
}

/// The address to report as the originator of a connection (0.0.0.0:0 for
/// a Unix socket).
pub fn originator(peer: Option<SocketAddr>) -> (String, u16) {
    peer.map_or(("0.0.0.0".into(), 0), |a| (a.ip().to_string(), a.port()))
}

/// Connects to a Unix socket without blocking: a listener whose backlog is
/// full fails at once (EAGAIN) instead of stalling the loop.
pub fn connect_unix(path: &str) -> io::Result<OwnedFd> {
    let bytes = path.as_bytes();
    if bytes.is_empty() || bytes.len() >= SUN_PATH_LEN || bytes.contains(&0) {
        return Err(Errno::NAMETOOLONG.into());
    }
    let addr = SocketAddrUnix::new(path)?;
    let fd = net::socket_with(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )?;
    net::connect(&fd, &addr)?;
    Ok(fd)
}

/// The size of `sockaddr_un`'s `sun_path` on Linux; a path must leave room
/// for its NUL.
const SUN_PATH_LEN: usize = 108;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listen_with_no_address_bound_names_the_port() {
        let held = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = held.local_addr().unwrap().port();
        let e = listen_tcp(&[SocketAddr::from(([127, 0, 0, 1], port))]).unwrap_err();
        assert!(
            matches!(e, FwdError::Listen { port: p } if p == port),
            "{e}"
        );
        assert_eq!(e.to_string(), format!("cannot listen to port: {port}"));
    }
}
