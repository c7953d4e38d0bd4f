//! A striping secondary's authentication in its monitor
//! (`stripe-join-v00@sluice.dev`, PROTOCOL.md "Channel striping"): the
//! account checked as for any login, then the session's monitor asked to
//! admit the join (stripe_join.rs).

use super::super::signer::KeyHolder;
use super::super::stripe_join;
use super::{Joined, MonitorAuth, Violation};
use crate::config::sshd::PermitRootLogin;
use crate::server::auth::Answers;
use sluice_proto::stripe::codec::JoinRequest;

impl MonitorAuth {
    /// A striping secondary's join (PROTOCOL.md "Channel striping"): the
    /// user's configuration must allow striping and the account this
    /// connection, then the session's monitor judges the proof against
    /// the session id this monitor fixed, and the primary's credentials
    /// against this connection's addresses (join_policy.rs). Any refusal
    /// is an ordinary failure, logged with its reason here.
    pub(super) fn stripe_join(
        &mut self,
        keys: &KeyHolder,
        (sent, user): (&str, &str),
        req: &JoinRequest,
    ) -> Result<(), Violation> {
        let sid = keys.session_id().ok_or(Violation::NoSession)?;
        let (ip, port) = (super::super::show_ip(self.peer), self.peer.port());
        let verdict = if self.cfg.max_streams <= 1 {
            Err(JoinFailure::MaxStreams(self.cfg.max_streams))
        } else {
            let context = format!("stripe-join for {user} from {ip} port {port}: ");
            crate::log::with_context(&context, || self.join_account(user)).and_then(|()| {
                let addrs = (self.peer, self.local);
                stripe_join::ask(&self.stripe_dir, sid, sent, req, addrs).map_err(JoinFailure::Join)
            })
        };
        match verdict {
            Ok(joining) => {
                crate::log!(
                    Info,
                    "Accepted stripe-join for {user} from {ip} port {port} ssh2: join {}",
                    joining.number
                );
                self.joined = Some(Joined {
                    user: user.to_owned(),
                    joining,
                });
                self.rec.auth_accept();
            }
            Err(why) => {
                crate::log!(
                    Info,
                    "Failed stripe-join for {user} from {ip} port {port} ssh2: {why}"
                );
                self.auth.reject(&mut self.rec);
            }
        }
        Ok(())
    }

    /// What a login by `user` from this connection would pass whatever
    /// its method (join_policy.rs judges the primary's methods): the
    /// account exists and may log in from here (allow.rs: its state,
    /// AllowUsers/DenyUsers/AllowGroups/DenyGroups, logged as sshd does),
    /// root is not refused outright (`PermitRootLogin no`), and with UsePAM
    /// the account modules agree with PAM_RHOST this connection's address.
    fn join_account(&mut self, user: &str) -> Result<(), JoinFailure> {
        let Some(info) = self.auth.valid_user(&self.cfg, user) else {
            return Err(JoinFailure::NotAllowedHere);
        };
        if info.uid == 0 && self.cfg.permit_root_login == PermitRootLogin::No {
            return Err(JoinFailure::RootRefused(self.peer));
        }
        if self.cfg.use_pam {
            crate::server::pam_session::account(
                &self.cfg.pam_service(),
                user,
                &self.peer.ip().to_string(),
            )
            .map_err(|err| JoinFailure::PamAccount {
                user: user.to_owned(),
                err,
            })?;
        }
        Ok(())
    }
}

/// Why a secondary's stripe-join failed; `Display` follows "Failed
/// stripe-join for U from A port P ssh2: " in the log.
#[derive(Debug)]
enum JoinFailure {
    /// MaxStreams allows no secondary.
    MaxStreams(u32),
    /// The account may not log in from here (allow.rs logged why).
    NotAllowedHere,
    /// `PermitRootLogin no` and the user is root (the client's address).
    RootRefused(std::net::SocketAddr),
    /// PAM's account modules refused.
    PamAccount {
        /// The user.
        user: String,
        /// PAM's error.
        err: crate::server::pam::PamError,
    },
    /// The session's monitor did not admit the join.
    Join(super::super::stripe_join::JoinError),
}

impl std::fmt::Display for JoinFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JoinFailure::MaxStreams(n) => write!(f, "MaxStreams {n}"),
            JoinFailure::NotAllowedHere => f.write_str("user not allowed from here"),
            JoinFailure::RootRefused(peer) => write!(
                f,
                "ROOT LOGIN REFUSED FROM {} port {}",
                super::super::show_ip(*peer),
                peer.port()
            ),
            JoinFailure::PamAccount { user, err } => write!(
                f,
                "Access denied for user {user} by PAM account configuration ({err})"
            ),
            JoinFailure::Join(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for JoinFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            JoinFailure::PamAccount { err, .. } => Some(err),
            JoinFailure::Join(e) => Some(e),
            _ => None,
        }
    }
}
