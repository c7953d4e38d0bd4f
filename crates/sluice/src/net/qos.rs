//! IPQoS and TCPKeepAlive on the connection's socket (the values are
//! read by config/ssh/ipqos.rs).

use rustix::net::{sockopt, AddressFamily};
use std::os::fd::BorrowedFd;

/// Marks the socket's packets with `tos` (IP_TOS, or IPV6_TCLASS on an
/// IPv6 socket, which also covers v4-mapped peers' header on Linux).
pub fn set_tos(fd: BorrowedFd<'_>, tos: u8) -> std::io::Result<()> {
    if is_ipv6(fd) {
        sockopt::set_ipv6_tclass(fd, u32::from(tos))?;
    } else {
        sockopt::set_ip_tos(fd, tos)?;
    }
    Ok(())
}

/// SO_KEEPALIVE on or off.
pub fn set_keepalive(fd: BorrowedFd<'_>, on: bool) -> std::io::Result<()> {
    Ok(sockopt::set_socket_keepalive(fd, on)?)
}

fn is_ipv6(fd: BorrowedFd<'_>) -> bool {
    sockopt::socket_domain(fd).is_ok_and(|d| d == AddressFamily::INET6)
}
