//! Privilege separation, sshd's model: one connection, three processes.
//!
//! - M, the monitor (root): holds the host keys, the listener's startup
//!   fd and LoginGraceTime; makes every authentication decision (user
//!   lookup, Allow/Deny, Match per user, authorized_keys read as the user,
//!   PAM, shadow) and signs exchange hashes. It treats its children as
//!   hostile: strict decoding (wire.rs), every request checked against
//!   its own state (mauth.rs, signer.rs), anything unexpected ends the
//!   connection.
//! - C, the pre-auth child (forked by M before M starts any thread):
//!   chrooted, unprivileged, seccomp-filtered before it reads the peer's
//!   first byte; runs the engine and relays auth requests (preauth.rs).
//! - U, the post-auth process: a fresh `sluiced` image started by M (so no
//!   host private key was ever in its memory), it drops to the user
//!   (initgroups, setgid, setuid, no way back), imports the transport
//!   from the handover and serves the session as the user (postauth.rs).
//!
//! What crosses: C -> M: log lines, sign requests, auth requests and
//! keyboard-interactive answers, then the transport state and raw unread
//! input; M -> C: signatures, auth policy, verdicts, prompts. M -> U: the
//! user, the key's options, host public keys, the state and input; U -> M:
//! sign requests (re-keys), RemoteRcvBuf/SndBuf, striping grants (stripe.rs).
//!
//! A striping secondary (a new connection that proves membership of a
//! session instead of authenticating a user) has its own monitor M' and
//! pre-auth child, as any connection; once the primary's monitor M admits
//! it (stripe_join.rs), M' passes its transport and socket to M, M to its
//! U on a socket of their own (join_inbox.rs), and M' ends: the
//! secondary's bytes are parsed in U, as the user, from then on.

pub mod accepted;
pub mod addr;
pub mod datagram;
mod drop_root;
pub mod error;
pub mod harness;
pub mod join_error;
pub mod join_inbox;
pub mod join_policy;
mod keyopts;
pub mod mauth;
pub mod monitor;
mod monitor_link;
pub mod policy;
pub mod postauth;
pub mod preauth;
pub mod reap;
pub mod signer;
pub mod stripe;
pub mod stripe_join;
pub mod wire;

#[cfg(test)]
mod hostile_tests;

use crate::log;
use crate::net::pump::PumpError;
use crate::server::error::ServerError;
use std::net::SocketAddr;

/// The environment variable naming the monitor socket in a post-auth
/// process (M re-executes `sluiced` with it set).
pub const POSTAUTH_ENV: &str = "SLUICED_POSTAUTH_FD";

/// The `-T` line for the separation in force (sshd printed its old
/// `UsePrivilegeSeparation` this way); not a keyword: it is always on.
pub const DUMP_LINE: &str = "useprivilegeseparation sandbox";

pub use addr::{show_ip, UNKNOWN_ADDR};
pub use monitor::serve;

/// The peer's and our address on the connection's socket; for a Unix
/// socket (a relayed `-i`) both are [`UNKNOWN_ADDR`]. None when `sock`
/// is no socket at all.
/// The connection's routing domain, if its socket is bound to a device
/// (a VRF), is recorded for Match RDomain here too.
pub fn addresses(sock: &std::net::TcpStream) -> Option<(SocketAddr, SocketAddr)> {
    use std::os::fd::AsFd;
    if let (Ok(p), Ok(l)) = (sock.peer_addr(), sock.local_addr()) {
        if let Some(dev) = bound_device(sock.as_fd()) {
            crate::config::sshd::set_connection_rdomain(dev);
        }
        return Some((p, l));
    }
    rustix::net::getsockname(sock)
        .is_ok_and(|a| a.address_family() == rustix::net::AddressFamily::UNIX)
        .then_some((UNKNOWN_ADDR, UNKNOWN_ADDR))
}

/// The device a socket is bound to (SO_BINDTODEVICE: its VRF when
/// sluiced runs under `ip vrf exec`), as sshd's sys_get_rdomain on Linux.
fn bound_device(sock: std::os::fd::BorrowedFd<'_>) -> Option<String> {
    let name = crate::sys::sockopt::bound_device(sock).ok()?;
    (!name.is_empty()).then(|| String::from_utf8_lossy(&name).into_owned())
}

/// In a post-auth process: the monitor socket's descriptor.
pub fn postauth_fd_from_env() -> Option<std::os::fd::RawFd> {
    let v = std::env::var(POSTAUTH_ENV).ok()?;
    std::env::remove_var(POSTAUTH_ENV);
    v.parse().ok().filter(|fd| *fd > 2)
}

/// Logs how a connection ended, in sshd's words (as the single-process
/// server did); returns the exit code. `who` is "user bob " or
/// "authenticating user bob " or empty. A handler with an error of its
/// own hands it in as a [`ServerError`] variant (`map_handler`).
pub fn log_end(r: Result<(), PumpError<ServerError>>, who: &str, peer: SocketAddr) -> i32 {
    let (ip, port) = (peer.ip(), peer.port());
    match r {
        Ok(()) => {
            log!(Info, "Disconnected from {who}{ip} port {port}");
            0
        }
        Err(PumpError::PeerClosed) => {
            log!(Info, "Connection closed by {who}{ip} port {port}");
            0
        }
        Err(PumpError::PeerReset) => {
            log!(Info, "Connection reset by {who}{ip} port {port}");
            255
        }
        Err(PumpError::Protocol(sluice_proto::Error::PeerDisconnected {
            reason,
            description,
        })) => {
            log!(
                Info,
                "Received disconnect from {ip} port {port}:{reason}: {description}"
            );
            log!(Info, "Disconnected from {who}{ip} port {port}");
            0
        }
        // A client that stopped answering, or one that kept a connection
        // with no channel open, is routine: INFO, as sshd.
        Err(PumpError::Handler(
            e @ (ServerError::ClientTimeout { .. } | ServerError::InactiveConnection { .. }),
        )) => {
            log!(Info, "{e}");
            255
        }
        Err(e) => {
            log!(Error, "Connection from {who}{ip} port {port}: {e}");
            255
        }
    }
}
