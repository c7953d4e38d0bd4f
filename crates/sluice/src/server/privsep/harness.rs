//! The monitor's two request loops driven from memory, as a hostile child
//! would drive them: raw datagrams go in over a socketpair, whatever the
//! monitor answers is read and dropped. For the fuzz target
//! `monitor_sequence`: whatever comes, a loop must end (never hang, never
//! panic) once the child's end closes, and ends early with an error on
//! anything its table (policy.rs) refuses.
//!
//! The configuration leaves nothing for a sequence to reach outside the
//! process: no password or keyboard-interactive authentication, no
//! authorized_keys file, no PAM, PermitTTY no and MaxSessions 0 (no pty is
//! allocated, no login record written), no striping socket.

use super::accepted::Accepted;
use super::datagram;
use super::mauth::MonitorAuth;
use super::signer::KeyHolder;
use super::wire;
use crate::config::sshd::ServerConfig as Sshd;
use rustix::net::{RecvFlags, SendFlags};
use sluice_proto::crypto::hostkey::Signer;
use std::os::fd::OwnedFd;
use std::sync::Arc;

/// Which of the monitor's loops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Serving the pre-auth child (monitor.rs).
    Preauth,
    /// Serving the post-auth process (postauth.rs).
    Postauth,
}

fn config() -> Sshd {
    let o: Vec<String> = [
        "PasswordAuthentication=no",
        "KbdInteractiveAuthentication=no",
        "AuthorizedKeysFile=/dev/null",
        "UsePAM=no",
        "PermitTTY=no",
        "MaxSessions=0",
    ]
    .map(String::from)
    .to_vec();
    Sshd::load(std::path::Path::new("/dev/null"), &o)
        .map(|(c, _)| c)
        .unwrap_or_default()
}

/// Sends `datagrams` to the monitor loop of `phase` and closes; the loop's
/// result (`Err`: it ended the connection) and how many exchange hashes
/// it signed.
pub fn drive(
    phase: Phase,
    host: &Arc<dyn Signer>,
    datagrams: &[&[u8]],
) -> (Result<(), String>, u32) {
    let Ok((m, c)) = datagram::socketpair() else {
        return (Err("socketpair".into()), 0);
    };
    let host = host.clone();
    let loop_thread = std::thread::spawn(move || run(phase, m, host));
    for d in datagrams {
        if rustix::net::send(&c, d, SendFlags::empty()).is_err() {
            break; // the monitor ended the connection
        }
        drain(&c);
    }
    drop(c);
    loop_thread
        .join()
        .unwrap_or_else(|_| (Err("the monitor loop panicked".into()), 0))
}

/// Reads and drops what the monitor answered so far.
fn drain(c: &OwnedFd) {
    let mut buf = vec![0u8; wire::MAX_MSG];
    loop {
        match rustix::net::recv(c, &mut buf[..], RecvFlags::DONTWAIT) {
            Ok((n, _)) if n > 0 => {}
            _ => return,
        }
    }
}

fn run(phase: Phase, m: OwnedFd, host: Arc<dyn Signer>) -> (Result<(), String>, u32) {
    let peer = super::UNKNOWN_ADDR;
    let mut keys = KeyHolder::new(vec![host]);
    let r = match phase {
        Phase::Preauth => {
            let mut auth = MonitorAuth::new(config(), peer, peer);
            super::monitor::preauth_phase(None, &m, &mut keys, &mut auth)
                .map(drop)
                .map_err(|e| e.to_string())
        }
        Phase::Postauth => {
            let Ok((a, _b)) = std::os::unix::net::UnixStream::pair() else {
                return (Err("socketpair".into()), 0);
            };
            // The loop sets socket options on it (SockBuf) and nothing else.
            let sock = std::net::TcpStream::from(OwnedFd::from(a));
            let Some(user) = crate::users::current() else {
                return (Err("no account".into()), 0);
            };
            let accepted = Accepted {
                user,
                key_options: None,
                auth_info: String::new(),
            };
            let cfg = config();
            let policy = super::join_policy::JoinPolicy::new(&accepted, &cfg);
            let mut stripe = super::stripe::GrantKeeper::new("/nonexistent", None, policy);
            let mut logins = crate::server::logins::Logins::new(0, peer);
            super::postauth::serve_requests(
                &m,
                &sock,
                peer,
                &mut keys,
                &accepted,
                &cfg,
                &mut stripe,
                &mut logins,
            )
            .map_err(|e| e.to_string())
        }
    };
    (r, keys.signed())
}
