//! The post-auth process's side of its monitor socket: what the user's
//! connection (server/conn.rs, `MonitorRequests`) cannot do itself goes
//! to the monitor as a request and waits for its answer (RemoteRcvBuf
//! past the sysctl cap, ptys, host-key proofs, striping grants).

use super::error::PrivsepError;
use super::signer::{Link, ProxySigner};
use super::wire::Msg;
use crate::server::conn::MonitorRequests;
use crate::server::pty::{PtyError, PtyPair};
use std::sync::Arc;

/// The user's process's requests to the monitor (and whether a striping
/// grant was asked for already).
pub(super) struct MonitorLink(pub(super) Arc<Link>, pub(super) bool);

impl MonitorRequests for MonitorLink {
    fn sockbuf(&mut self, rcvbuf: u64, sndbuf: u64) -> Option<(u64, u64)> {
        match self.0.request(&Msg::SockBuf { rcvbuf, sndbuf }) {
            Ok(Msg::SockBufGranted(g)) => g,
            _ => None,
        }
    }

    fn pty(&mut self) -> Result<PtyPair, PtyError> {
        match self.0.request_fds(&Msg::PtyRequest) {
            Ok((Msg::PtyGranted, fds)) => {
                let mut fds = fds.into_iter();
                match (fds.next(), fds.next(), fds.next()) {
                    (Some(master), Some(slave), None) => Ok(PtyPair {
                        master,
                        slave,
                        owner_set: true,
                    }),
                    _ => Err(PtyError::MonitorFds),
                }
            }
            Ok((Msg::Reject, _)) => Err(PtyError::MonitorRefused),
            Ok(_) => Err(PtyError::MonitorUnexpected),
            Err(e) => Err(PtyError::Link(e)),
        }
    }

    fn prove_host_key(&mut self, index: u32, alg: &str) -> Result<Vec<u8>, PrivsepError> {
        ProxySigner::prove(&self.0, index, alg)
    }

    fn stripe_grant(&mut self, wanted: u32) -> Option<zeroize::Zeroizing<Vec<u8>>> {
        // The monitor answers one grant request a connection; a second is
        // declined here, as the monitor used to.
        if std::mem::replace(&mut self.1, true) {
            crate::log!(Verbose, "striping: a second grant request, declined");
            return None;
        }
        match self.0.request(&Msg::StripeGrant { wanted }) {
            Ok(Msg::StripeGranted(g)) => g,
            _ => None,
        }
    }

    fn pty_released(&mut self, tty: &str) {
        let _ = self.0.tell(&Msg::PtyRelease {
            tty: tty.to_owned(),
        });
    }
}
