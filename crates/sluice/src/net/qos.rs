//! IPQoS and TCPKeepAlive on the connection's socket (the values are
//! read by config/ssh/ipqos.rs).

use std::os::fd::{AsRawFd, BorrowedFd};

/// Marks the socket's packets with `tos` (IP_TOS, or IPV6_TCLASS on an
/// IPv6 socket, which also covers v4-mapped peers' header on Linux).
pub fn set_tos(fd: BorrowedFd<'_>, tos: u8) -> std::io::Result<()> {
    let v = i32::from(tos);
    let v6 = is_ipv6(fd);
    let (level, name) = if v6 {
        (libc::IPPROTO_IPV6, libc::IPV6_TCLASS)
    } else {
        (libc::IPPROTO_IP, libc::IP_TOS)
    };
    setsockopt_int(fd, level, name, v)
}

/// SO_KEEPALIVE on or off.
pub fn set_keepalive(fd: BorrowedFd<'_>, on: bool) -> std::io::Result<()> {
    setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE, i32::from(on))
}

fn is_ipv6(fd: BorrowedFd<'_>) -> bool {
    let mut domain: i32 = 0;
    let mut len = std::mem::size_of::<i32>() as libc::socklen_t;
    // SAFETY: domain and len are valid for writes of their sizes.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_DOMAIN,
            (&mut domain as *mut i32).cast(),
            &mut len,
        )
    };
    r == 0 && domain == libc::AF_INET6
}

fn setsockopt_int(fd: BorrowedFd<'_>, level: i32, name: i32, v: i32) -> std::io::Result<()> {
    // SAFETY: v lives across the call and its size is passed.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&v as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
