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
            Err(format!("MaxStreams {}", self.cfg.max_streams))
        } else {
            let context = format!("stripe-join for {user} from {ip} port {port}: ");
            crate::log::with_context(&context, || self.join_account(user)).and_then(|()| {
                let addrs = (self.peer, self.local);
                stripe_join::ask(&self.stripe_dir, sid, sent, req, addrs)
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
    fn join_account(&mut self, user: &str) -> Result<(), String> {
        let Some(info) = self.auth.valid_user(&self.cfg, user) else {
            return Err("user not allowed from here".into());
        };
        let (ip, port) = (super::super::show_ip(self.peer), self.peer.port());
        if info.uid == 0 && self.cfg.permit_root_login == PermitRootLogin::No {
            return Err(format!("ROOT LOGIN REFUSED FROM {ip} port {port}"));
        }
        if self.cfg.use_pam {
            crate::server::pam_session::account(
                &self.cfg.pam_service(),
                user,
                &self.peer.ip().to_string(),
            )
            .map_err(|e| {
                format!("Access denied for user {user} by PAM account configuration ({e})")
            })?;
        }
        Ok(())
    }
}
