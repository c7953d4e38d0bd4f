//! Who authenticated, as the monitor decided it: what the monitor's
//! authentication (mauth.rs) hands the post-auth process (postauth.rs) and
//! the join checks (join_policy.rs).

use crate::keys::authorized_keys::KeyOptions;
use crate::server::session::UserInfo;

/// Who authenticated, as the monitor decided it.
#[derive(Debug, Clone)]
pub struct Accepted {
    /// The account.
    pub user: UserInfo,
    /// authorized_keys options of the key used, if publickey.
    pub key_options: Option<KeyOptions>,
    /// The method that succeeded, as ExposeAuthInfo shows it
    /// (server/auth_info.rs).
    pub auth_info: String,
}
