//! The monitor's side of a striping grant (`stripe-v00@sluice.dev`,
//! PROTOCOL.md "Channel striping"): M, root and trusted, draws the session
//! reference and join secret, keeps the admission for as long as the
//! primary's session lives, listening for joins (stripe_join.rs), and
//! hands the grant to the user's process to send. The user's process
//! never holds the admission, so it cannot admit a secondary on its own.

use super::join_policy::JoinPolicy;
use super::stripe_join::JoinService;
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use sluice_proto::stripe::token::{Admission, JOIN_SECRET_LEN};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use zeroize::Zeroizing;

/// Bytes of the session reference M draws: random, so it names the
/// session without saying anything about it.
const REF_LEN: usize = 32;

/// One primary connection's grant, at most one per connection.
pub struct GrantKeeper {
    /// The root-only directory of join sockets.
    dir: PathBuf,
    /// The admission of the grant issued, kept for joins.
    admission: Option<Arc<Mutex<Admission>>>,
    /// Answers secondaries' monitors until the session ends.
    service: Option<JoinService>,
    /// Where admitted connections go: the user's process's join socket
    /// (taken by the service once a grant is issued).
    to_user: Option<OwnedFd>,
    /// How the primary authenticated, to judge joins by (taken by the
    /// service with `to_user`).
    policy: Option<JoinPolicy>,
    /// A grant was asked for already (granted or not): later requests on
    /// the same connection are declined, as PROTOCOL.md says.
    asked: bool,
}

impl GrantKeeper {
    /// A keeper whose join socket will live in `dir` (normally
    /// [`super::stripe_join::STRIPE_DIR`]), passing joined connections
    /// `policy` allows to the user's process on `to_user` (none: every
    /// grant is declined).
    pub fn new(
        dir: impl Into<PathBuf>,
        to_user: Option<OwnedFd>,
        policy: JoinPolicy,
    ) -> GrantKeeper {
        GrantKeeper {
            dir: dir.into(),
            admission: None,
            service: None,
            to_user,
            policy: Some(policy),
            asked: false,
        }
    }

    /// Answers the user's process asking for `wanted` secondaries for
    /// `user` on the connection whose session identifier is `session_id`,
    /// under `max_streams` (sshd_config MaxStreams, the primary included).
    /// The grant's encoding, or None when declined.
    pub fn grant(
        &mut self,
        wanted: u32,
        max_streams: u32,
        session_id: &[u8],
        user: &str,
    ) -> Option<Zeroizing<Vec<u8>>> {
        if std::mem::replace(&mut self.asked, true) {
            crate::log!(
                Verbose,
                "monitor: striping: a second grant request, declined"
            );
            return None;
        }
        let max_secondaries = max_streams.saturating_sub(1);
        if max_secondaries == 0 {
            crate::log!(
                Verbose,
                "monitor: striping declined: MaxStreams {max_streams}"
            );
            return None;
        }
        let (Some(to_user), Some(policy)) = (self.to_user.take(), self.policy.take()) else {
            crate::log!(
                Error,
                "monitor: striping declined: no way to pass joined connections on"
            );
            return None;
        };
        let rng = SystemRandom::new();
        let mut session_ref = vec![0u8; REF_LEN];
        let mut secret = Zeroizing::new([0u8; JOIN_SECRET_LEN]);
        if rng.fill(&mut session_ref).is_err() || rng.fill(&mut secret[..]).is_err() {
            crate::log!(Error, "monitor: striping declined: no random numbers");
            return None;
        }
        let (admission, grant) = Admission::issue(
            session_ref,
            *secret,
            session_id,
            user,
            wanted,
            max_secondaries,
        )?;
        let admission = Arc::new(Mutex::new(admission));
        // No socket, no joins: decline rather than grant what cannot work.
        let service = match JoinService::start(&self.dir, admission.clone(), policy, to_user) {
            Ok(s) => s,
            Err(why) => {
                crate::log!(Error, "monitor: striping declined: join socket: {why}");
                return None;
            }
        };
        crate::log!(
            Verbose,
            "monitor: striping granted to {user}: {} of {wanted} secondary connections",
            grant.allowed
        );
        self.admission = Some(admission);
        self.service = Some(service);
        Some(Zeroizing::new(grant.encode()))
    }

    /// The admission of the grant issued, if any (joins check against it).
    pub fn admission(&self) -> Option<&Arc<Mutex<Admission>>> {
        self.admission.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_proto::stripe::codec::StripeGrant;

    #[test]
    fn grants_once_within_max_streams() {
        if !rustix::process::geteuid().is_root() {
            crate::errln!("skipping: the join socket's directory must be root's");
            return;
        }
        let base = std::env::temp_dir().join(format!("sluice-grant-{}", std::process::id()));
        let dir = base.join("stripe");
        let keeper = || {
            let policy = super::super::join_policy::test_policy("bob", 1000, "password\n", "");
            GrantKeeper::new(
                &dir,
                Some(super::super::datagram::socketpair().unwrap().0),
                policy,
            )
        };
        let mut k = keeper();
        let g = k.grant(20, 8, &[1; 32], "bob").expect("granted");
        let g = StripeGrant::decode(&g).unwrap();
        assert_eq!(g.allowed, 7, "MaxStreams counts the primary");
        assert_eq!(g.session_ref.len(), REF_LEN);
        assert!(k.admission().is_some());
        assert!(
            k.grant(1, 8, &[1; 32], "bob").is_none(),
            "one per connection"
        );
        let mut k = keeper();
        assert_eq!(
            StripeGrant::decode(&k.grant(2, 8, &[1; 32], "bob").unwrap())
                .unwrap()
                .allowed,
            2
        );
        let mut k = keeper();
        assert!(k.grant(3, 1, &[1; 32], "bob").is_none(), "MaxStreams 1");
        assert!(k.admission().is_none());
        let _ = std::fs::remove_dir_all(&base);
    }
}
