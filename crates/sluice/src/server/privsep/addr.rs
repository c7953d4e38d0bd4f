//! The client's address as the logs show it: sshd's "UNKNOWN" for a
//! connection that has none. Apart from privsep/mod.rs so that what the
//! monitor's checks log needs nothing of how a connection ends.

use std::net::SocketAddr;

/// The address sshd reports when the connection has none (inetd mode over
/// pipes, server/inetd.rs): it logs "UNKNOWN port 65535"; here 0.0.0.0
/// port 65535, which no `Match Address` or `from=` list of real
/// addresses matches.
pub const UNKNOWN_ADDR: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), 65535);

/// An address for log lines: sshd's "UNKNOWN" for [`UNKNOWN_ADDR`].
pub fn show_ip(a: SocketAddr) -> String {
    if a == UNKNOWN_ADDR {
        "UNKNOWN".into()
    } else {
        a.ip().to_string()
    }
}
