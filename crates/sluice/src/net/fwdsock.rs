//! Sockets behind forwarded channels, shared by `sluice` and `sluiced`:
//! listening sockets (non-blocking, watched by the pump's handler),
//! non-blocking connects finished in `tick`, the `ChanIo` of a forwarded
//! connection, and closing forwarded channels once both directions are done.

use super::pump::{ChanIo, ChannelFds};
use sluice_proto::{ChannelId, Connection};
use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::mpsc;

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
    super::fdio::set_nonblocking(sock.as_raw_fd(), true)?;
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
    let one: libc::c_int = 1;
    // SAFETY: setsockopt with a valid int option on our socket.
    unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_IPV6,
            libc::IPV6_V6ONLY,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_REUSEADDR,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
    let (sa, len) = sockaddr(&a);
    // SAFETY: `sa` is a valid sockaddr of `len` bytes.
    if unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sa as *const libc::sockaddr_storage).cast(),
            len,
        )
    } != 0
    {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: listen on our bound socket.
    if unsafe { libc::listen(fd.as_raw_fd(), 128) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(TcpListener::from(fd))
}

fn new_socket(a: &SocketAddr) -> io::Result<OwnedFd> {
    let family = if a.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: socket(2) with constant arguments.
    let fd = unsafe {
        libc::socket(
            family,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn sockaddr(a: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match a {
        SocketAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(v4.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than sockaddr_in and suitably aligned.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: v6.ip().octets(),
                },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: as above, for sockaddr_in6.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

fn from_sockaddr(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match ss.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let sin: libc::sockaddr_in =
                unsafe { std::ptr::read((ss as *const libc::sockaddr_storage).cast()) };
            let ip = std::net::Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
            Some(SocketAddr::from((ip, u16::from_be(sin.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let sin6: libc::sockaddr_in6 =
                unsafe { std::ptr::read((ss as *const libc::sockaddr_storage).cast()) };
            let ip = std::net::Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            Some(SocketAddr::from((ip, u16::from_be(sin6.sin6_port))))
        }
        _ => None,
    }
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
                    self.last_err = Some(io::Error::from_raw_os_error(libc::EAFNOSUPPORT));
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
            let (sa, len) = sockaddr(&a);
            // SAFETY: `sa` is a valid sockaddr of `len` bytes.
            let r = unsafe {
                libc::connect(
                    fd.as_raw_fd(),
                    (&sa as *const libc::sockaddr_storage).cast(),
                    len,
                )
            };
            let err = io::Error::last_os_error();
            if r == 0 || err.raw_os_error() == Some(libc::EINPROGRESS) {
                self.fd = Some(fd);
                return;
            }
            self.last_err = Some(err);
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
            let Some(fd) = self.fd() else {
                let e = self
                    .last_err
                    .take()
                    .unwrap_or_else(|| io::Error::other("no address"));
                return ConnectResult::Failed(e);
            };
            let mut p = [libc::pollfd {
                fd,
                events: libc::POLLOUT,
                revents: 0,
            }];
            if super::fdio::poll(&mut p, 0).unwrap_or(0) == 0 {
                return ConnectResult::Pending;
            }
            let mut err: libc::c_int = 0;
            let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
            // SAFETY: SO_ERROR into an int of the given length.
            unsafe {
                libc::getsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    libc::SO_ERROR,
                    (&mut err as *mut libc::c_int).cast(),
                    &mut len,
                )
            };
            if err == 0 {
                if let Some(fd) = self.fd.take() {
                    return ConnectResult::Done(fd);
                }
            }
            self.last_err = Some(io::Error::from_raw_os_error(err));
            self.next_addr();
        }
    }
}

/// Accepts what is waiting on a listening socket (TCP or Unix), as
/// non-blocking sockets; the string names the originator for logs.
pub fn accept_all(listener: RawFd, max: usize) -> Vec<(OwnedFd, Option<SocketAddr>)> {
    let mut out = Vec::new();
    while out.len() < max {
        // SAFETY: all-zero is a valid sockaddr_storage.
        let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        // SAFETY: accept4 into a sockaddr_storage of `len` bytes.
        let fd = unsafe {
            libc::accept4(
                listener,
                (&mut ss as *mut libc::sockaddr_storage).cast(),
                &mut len,
                libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            )
        };
        if fd < 0 {
            break;
        }
        // SAFETY: a fresh fd from accept4.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let peer = from_sockaddr(&ss);
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
    // SAFETY: all-zero is a valid sockaddr_un.
    let mut sun: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    sun.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_bytes();
    if bytes.is_empty() || bytes.len() >= sun.sun_path.len() || bytes.contains(&0) {
        return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    for (d, s) in sun.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    // SAFETY: socket(2) with constant arguments.
    let fd = unsafe {
        libc::socket(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
    // SAFETY: `sun` is a valid sockaddr_un of `len` bytes.
    if unsafe {
        libc::connect(
            fd.as_raw_fd(),
            (&sun as *const libc::sockaddr_un).cast(),
            len,
        )
    } != 0
    {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

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
