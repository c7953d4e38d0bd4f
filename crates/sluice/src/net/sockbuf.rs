//! Socket buffer sizes (`TcpRcvBuf`, `TcpSndBuf`): set on one socket, read
//! back, and when the kernel grants less, say which sysctl capped it and how
//! to raise it.
//!
//! Linux doubles the value given to SO_RCVBUF/SO_SNDBUF (half is bookkeeping)
//! and caps it at `net.core.rmem_max` / `wmem_max`; root may pass the cap with
//! SO_RCVBUFFORCE / SO_SNDBUFFORCE. Setting a size turns the kernel's
//! autotuning off for that socket, so we only do it when asked. For the
//! receive buffer to widen TCP's window scale it must be set before
//! connect() (client) or on the listening socket (server).

use rustix::net::{self, sockopt, AddressFamily, SocketFlags, SocketType};
use std::os::fd::{AsFd, BorrowedFd, RawFd};

/// Which buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buf {
    /// SO_RCVBUF: what the peer may have in flight toward us.
    Recv,
    /// SO_SNDBUF: what we may have in flight.
    Send,
}

impl Buf {
    /// The option's name in configuration files.
    pub fn keyword(self) -> &'static str {
        match self {
            Buf::Recv => "TcpRcvBuf",
            Buf::Send => "TcpSndBuf",
        }
    }

    fn sysctl(self) -> &'static str {
        match self {
            Buf::Recv => "net.core.rmem_max",
            Buf::Send => "net.core.wmem_max",
        }
    }
}

pub(crate) fn read_sysctl(path: &str) -> Option<Vec<u64>> {
    let text = std::fs::read_to_string(path).ok()?;
    text.split_whitespace().map(|w| w.parse().ok()).collect()
}

/// The automatic size for `buf` when no option is given: the kernel
/// autotunes a socket's buffer up to `net.ipv4.tcp_{r,w}mem`'s maximum, but
/// a buffer set explicitly may reach twice `net.core.{r,w}mem_max`. Debian's
/// defaults cap the autotuned send buffer at 4 MiB while 8 MiB may be set:
/// at 100 ms that is 40 against 80 MB/s. So when setting beats autotuning,
/// ask for the sysctl's maximum (no forcing past it: that is the admin's
/// cap); otherwise leave autotuning alone. Returns bytes to ask for.
pub fn auto_size(buf: Buf) -> Option<u64> {
    let (tcp, core) = match buf {
        Buf::Recv => ("/proc/sys/net/ipv4/tcp_rmem", "/proc/sys/net/core/rmem_max"),
        Buf::Send => ("/proc/sys/net/ipv4/tcp_wmem", "/proc/sys/net/core/wmem_max"),
    };
    let autotune_max = *read_sysctl(tcp)?.get(2)?;
    let core_max = *read_sysctl(core)?.first()?;
    (core_max * 2 > autotune_max).then_some(core_max)
}

/// The buffer's size as the kernel reports it (the doubled figure halved:
/// the bytes of data it holds). `fd` must stay open for the call.
pub fn get(fd: RawFd, buf: Buf) -> Option<u64> {
    // SAFETY: the caller's `fd` is open for the call (above), and the
    // borrow ends with it.
    get_on(unsafe { BorrowedFd::borrow_raw(fd) }, buf)
}

fn get_on(fd: BorrowedFd<'_>, buf: Buf) -> Option<u64> {
    let v = match buf {
        Buf::Recv => sockopt::socket_recv_buffer_size(fd),
        Buf::Send => sockopt::socket_send_buffer_size(fd),
    };
    // The kernel's int, read as unsigned: a negative one is no size.
    let v = v.ok()? as u64;
    (v > 0 && v <= i32::MAX as u64).then_some(v / 2)
}

/// SO_RCVBUF/SO_SNDBUF (or their FORCE forms) to `bytes`; true if set.
fn set_raw(fd: BorrowedFd<'_>, buf: Buf, force: bool, bytes: u64) -> bool {
    let v = bytes.min(i32::MAX as u64 / 2) as usize;
    match (buf, force) {
        (Buf::Recv, false) => sockopt::set_socket_recv_buffer_size(fd, v),
        (Buf::Recv, true) => sockopt::set_socket_recv_buffer_size_force(fd, v),
        (Buf::Send, false) => sockopt::set_socket_send_buffer_size(fd, v),
        (Buf::Send, true) => sockopt::set_socket_send_buffer_size_force(fd, v),
    }
    .is_ok()
}

/// What setting a buffer came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Granted {
    /// Bytes asked for.
    pub asked: u64,
    /// Bytes the kernel granted (read back).
    pub granted: u64,
    /// Set when the grant fell short: what capped it and how to raise it.
    pub advice: Option<String>,
}

/// Sets `buf` on `fd` to `bytes` (TcpRcvBuf, TcpSndBuf), forcing past the
/// sysctl cap where the process may (root), and reads back what the kernel
/// granted; advice when it was capped or is too small to be meant. `fd` must
/// stay open for the call.
pub fn set(fd: RawFd, buf: Buf, bytes: u64) -> Granted {
    // SAFETY: the caller's `fd` is open for the call (above), and the
    // borrow ends with it.
    set_asked(unsafe { BorrowedFd::borrow_raw(fd) }, buf, bytes)
}

/// [`set_with`] forcing, for a size a configuration asked for: with advice
/// on a size too small to be meant.
fn set_asked(fd: BorrowedFd<'_>, buf: Buf, bytes: u64) -> Granted {
    let mut g = set_with(fd, buf, bytes, true);
    if g.advice.is_none() {
        g.advice = small_advice(buf, bytes);
    }
    g
}

/// [`set`], forcing past the sysctl cap only when `force`.
fn set_with(fd: BorrowedFd<'_>, buf: Buf, bytes: u64, force: bool) -> Granted {
    set_raw(fd, buf, false, bytes);
    let mut granted = get_on(fd, buf).unwrap_or(0);
    if force && granted < bytes && set_raw(fd, buf, true, bytes) {
        granted = get_on(fd, buf).unwrap_or(granted);
    }
    let advice = (granted < bytes).then(|| capped_advice(buf, granted, bytes));
    Granted {
        asked: bytes,
        granted,
        advice,
    }
}

/// Below this a socket buffer set on purpose is taken for a mistake.
const SMALL_BUF: u64 = 64 << 10;

/// A buffer asked for under [`SMALL_BUF`]: most likely a size meant in KB
/// (HPN-SSH's TcpRcvBuf was; ours is bytes). At 256 bytes a loopback
/// download crawled at 22 MB/s burning 50 CPU-seconds per GiB.
fn small_advice(buf: Buf, bytes: u64) -> Option<String> {
    (bytes < SMALL_BUF).then(|| {
        format!(
            "{} {bytes} is {bytes} bytes: a socket buffer that small holds one connection to about \
             {:.1} MB/s over a 1 ms round trip, {:.2} MB/s over 10 ms; the size is in bytes (HPN-SSH read it in \
             KB: write {bytes}K for that), or leave it unset for the automatic size",
            buf.keyword(),
            bytes as f64 / 1e3,
            bytes as f64 / 1e4,
        )
    })
}

/// The kernel granted less than asked: what capped it and how to raise it.
fn capped_advice(buf: Buf, granted: u64, bytes: u64) -> String {
    let cap = std::fs::read_to_string(format!("/proc/sys/{}", buf.sysctl().replace('.', "/")))
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok());
    let cap_text = cap.map_or(String::new(), |c| format!(" = {c}"));
    format!(
        "{}: socket buffer capped at {} by {}{cap_text}; raise it with: sysctl -w {}={}",
        buf.keyword(),
        human(granted),
        buf.sysctl(),
        buf.sysctl(),
        bytes
    )
}

/// sshd_config's RemoteBufMax: how large a client's RemoteRcvBuf /
/// RemoteSndBuf may make the server's socket buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteMax {
    /// Not set (the default, `sysctl`): up to `net.core.rmem_max` /
    /// `wmem_max`, never forced past them. The administrator's sysctl is
    /// the limit an unprivileged program gets; a client must not get more
    /// only because the monitor happens to be root.
    Sysctl,
    /// Set by the administrator: up to this many bytes, forced past the
    /// sysctl where root may; 0 refuses the request.
    Bytes(u64),
}

impl std::fmt::Display for RemoteMax {
    /// As sshd_config and `-T` write it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RemoteMax::Sysctl => f.write_str("sysctl"),
            RemoteMax::Bytes(n) => write!(f, "{n}"),
        }
    }
}

/// What to ask the kernel for on a client's request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemotePlan {
    /// Bytes to set.
    pub bytes: u64,
    /// Whether to force past the sysctl (SO_*BUFFORCE).
    pub force: bool,
    /// Set when the sysctl cut the request: the sysctl and its value.
    pub clamped_by: Option<(&'static str, u64)>,
}

/// The decision for a client asking `asked` bytes (nonzero) of `buf` under
/// `max`, where the sysctl maximum is `sysctl` (None: unreadable, and the
/// kernel caps an unforced size itself). None: refused (`RemoteBufMax 0`).
pub fn remote_plan(
    buf: Buf,
    asked: u64,
    max: RemoteMax,
    sysctl: Option<u64>,
) -> Option<RemotePlan> {
    match max {
        RemoteMax::Bytes(0) => None,
        RemoteMax::Bytes(n) => Some(RemotePlan {
            bytes: asked.min(n),
            force: true,
            clamped_by: None,
        }),
        RemoteMax::Sysctl => {
            let cap = sysctl.filter(|c| *c < asked);
            Some(RemotePlan {
                bytes: cap.unwrap_or(asked),
                force: false,
                clamped_by: cap.map(|c| (buf.sysctl(), c)),
            })
        }
    }
}

/// The sysctl maximum for `buf` (`net.core.rmem_max` / `wmem_max`).
pub fn sysctl_max(buf: Buf) -> Option<u64> {
    let path = format!("/proc/sys/{}", buf.sysctl().replace('.', "/"));
    read_sysctl(&path)?.first().copied()
}

/// Sets `buf` on `fd` as `plan` says and reads back what was granted.
/// `fd` must stay open for the call.
pub fn set_planned(fd: RawFd, buf: Buf, plan: &RemotePlan) -> Granted {
    // SAFETY: the caller's `fd` is open for the call (above), and the
    // borrow ends with it.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    set_with(fd, buf, plan.bytes, plan.force)
}

/// Connects a TCP socket to `addr` from `from` (BindAddress; None: the
/// kernel's choice), setting the buffers in `bufs` (0 = leave to the
/// kernel) before connect() so the receive buffer can widen the window
/// scale. Returns the stream and what was granted. A failed bind is said
/// as ssh says it ("bind ADDR: ...").
pub fn connect(
    addr: std::net::SocketAddr,
    from: Option<std::net::SocketAddr>,
    timeout: Option<std::time::Duration>,
    bufs: [(Buf, u64); 2],
) -> std::io::Result<(std::net::TcpStream, Vec<Granted>)> {
    let domain = if addr.is_ipv4() {
        AddressFamily::INET
    } else {
        AddressFamily::INET6
    };
    let owned = net::socket_with(domain, SocketType::STREAM, SocketFlags::CLOEXEC, None)?;
    let granted = bufs
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|&(b, n)| set_asked(owned.as_fd(), b, n))
        .collect();
    let stream = std::net::TcpStream::from(owned);
    if let Some(local) = from {
        if let Err(e) = net::bind(&stream, &local) {
            let e = std::io::Error::from(e);
            return Err(std::io::Error::new(
                e.kind(),
                format!(
                    "bind {}: {}",
                    local.ip(),
                    crate::io_error::describe_io_error(&e)
                ),
            ));
        }
    }
    stream.set_nonblocking(true)?;
    match net::connect(&stream, &addr) {
        Ok(()) => {}
        Err(rustix::io::Errno::INPROGRESS) => {
            crate::sys::fdio::wait(stream.as_fd(), rustix::event::PollFlags::OUT, timeout)?;
            if let Some(e) = stream.take_error()? {
                return Err(e);
            }
        }
        Err(e) => return Err(e.into()),
    }
    stream.set_nonblocking(false)?;
    Ok((stream, granted))
}

/// Bytes in the largest whole binary unit (4 MiB, 212992 B).
pub fn human(n: u64) -> String {
    if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n % (1 << 10) == 0 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn set_reads_back_and_explains_a_cap() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let fd = l.as_raw_fd();
        let g = set(fd, Buf::Recv, 256 * 1024);
        assert!(g.granted >= 256 * 1024, "{g:?}");
        assert!(g.advice.is_none());
        // Far beyond any cap: the kernel grants less unless root can force it.
        let g = set(fd, Buf::Send, 1 << 40);
        assert!(g.granted < 1 << 40);
        let a = g.advice.unwrap();
        assert!(
            a.contains("net.core.wmem_max") && a.contains("sysctl -w"),
            "{a}"
        );
    }

    #[test]
    fn a_tiny_buffer_is_explained_as_a_unit_mistake() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = set(l.as_raw_fd(), Buf::Recv, 4096).advice.unwrap();
        assert!(
            a.starts_with("TcpRcvBuf 4096 is 4096 bytes") && a.contains("4096K"),
            "{a}"
        );
        assert!(set(l.as_raw_fd(), Buf::Recv, 64 << 10).advice.is_none());
    }

    #[test]
    fn connect_sets_buffers_before_connecting() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap();
        let (s, g) = connect(a, None, None, [(Buf::Recv, 1 << 20), (Buf::Send, 0)]).unwrap();
        assert_eq!(g.len(), 1);
        assert!(get(s.as_raw_fd(), Buf::Recv).unwrap() >= 1 << 20);
        let (_peer, from) = l.accept().unwrap();
        assert_eq!(from, s.local_addr().unwrap());
        // A closed port is refused, as with TcpStream::connect.
        drop(l);
        let e = connect(
            a,
            None,
            Some(std::time::Duration::from_secs(2)),
            [(Buf::Recv, 0); 2],
        );
        assert_eq!(e.unwrap_err().kind(), std::io::ErrorKind::ConnectionRefused);
    }

    #[test]
    fn auto_size_only_when_it_beats_autotuning() {
        for b in [Buf::Recv, Buf::Send] {
            let Some(n) = auto_size(b) else { continue };
            let (core, tcp) = match b {
                Buf::Recv => ("/proc/sys/net/core/rmem_max", "/proc/sys/net/ipv4/tcp_rmem"),
                Buf::Send => ("/proc/sys/net/core/wmem_max", "/proc/sys/net/ipv4/tcp_wmem"),
            };
            assert_eq!(Some(vec![n]), read_sysctl(core));
            assert!(2 * n > read_sysctl(tcp).unwrap()[2]);
        }
    }

    #[test]
    fn remote_requests_stay_under_the_sysctl_unless_the_admin_set_a_max() {
        // Unset: clamped to the sysctl, never forced.
        let p = remote_plan(Buf::Recv, 64 << 20, RemoteMax::Sysctl, Some(212_992)).unwrap();
        assert_eq!(
            p,
            RemotePlan {
                bytes: 212_992,
                force: false,
                clamped_by: Some(("net.core.rmem_max", 212_992)),
            }
        );
        // Under the sysctl: as asked, nothing to say.
        let p = remote_plan(Buf::Send, 1 << 20, RemoteMax::Sysctl, Some(4 << 20)).unwrap();
        assert_eq!((p.bytes, p.force, p.clamped_by), (1 << 20, false, None));
        // The sysctl unreadable: asked unforced, the kernel caps it.
        let p = remote_plan(Buf::Send, 1 << 30, RemoteMax::Sysctl, None).unwrap();
        assert_eq!((p.bytes, p.force, p.clamped_by), (1 << 30, false, None));
        // Set by the administrator: up to it, forced past the sysctl.
        let p = remote_plan(
            Buf::Recv,
            64 << 20,
            RemoteMax::Bytes(16 << 20),
            Some(212_992),
        )
        .unwrap();
        assert_eq!((p.bytes, p.force, p.clamped_by), (16 << 20, true, None));
        let p = remote_plan(
            Buf::Recv,
            1 << 20,
            RemoteMax::Bytes(16 << 20),
            Some(212_992),
        )
        .unwrap();
        assert_eq!(p.bytes, 1 << 20);
        // 0 refuses.
        assert_eq!(
            remote_plan(Buf::Recv, 1 << 20, RemoteMax::Bytes(0), Some(1)),
            None
        );
        assert_eq!(RemoteMax::Sysctl.to_string(), "sysctl");
        assert_eq!(RemoteMax::Bytes(5).to_string(), "5");
    }

    #[test]
    fn an_unforced_set_stays_under_the_sysctl() {
        let Some(cap) = sysctl_max(Buf::Recv) else {
            return;
        };
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let plan = RemotePlan {
            bytes: cap * 4,
            force: false,
            clamped_by: None,
        };
        let g = set_planned(l.as_raw_fd(), Buf::Recv, &plan);
        assert!(g.granted <= cap, "{g:?} over {cap}");
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human(4 << 20), "4 MiB");
        assert_eq!(human(208 << 10), "208 KiB");
        assert_eq!(human(1000), "1000 bytes");
    }
}
