//! Who may log in at all, as sshd's allowed_user: the login shell must
//! exist, without PAM the account must be neither expired nor locked
//! (server/shadow.rs), then DenyUsers, AllowUsers, DenyGroups, AllowGroups
//! in that order.
//! User patterns may be `user@host` (host as a pattern, an address or a
//! CIDR block, matched against the client's address: sluiced does no DNS).

use crate::config::sshd::ServerConfig as Sshd;
use crate::keys::pattern::{match_host_and_ip, match_pattern};
use crate::server::session::UserInfo;
use std::net::IpAddr;

/// sshd's match_user: `user` or `user@host`.
fn match_user(user: &str, addr: IpAddr, pat: &str) -> bool {
    match pat.rsplit_once('@') {
        Some((u, host)) => match_pattern(user, u) && match_host_and_ip(addr, None, host),
        None => match_pattern(user, pat),
    }
}

/// Why a user may not log in; `Display` is the line sshd logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotAllowed {
    /// The login shell does not exist.
    NoShell {
        /// The user.
        user: String,
        /// The shell.
        shell: String,
    },
    /// The login shell is not executable.
    ShellNotExecutable {
        /// The user.
        user: String,
        /// The shell.
        shell: String,
    },
    /// The shadow entry refuses the account (locked, expired): shadow.rs's
    /// line.
    Account(String),
    /// AllowUsers/DenyUsers/AllowGroups/DenyGroups refuse the user.
    Listed {
        /// The user.
        user: String,
        /// The client's address.
        addr: IpAddr,
        /// Which rule, in sshd's words ("listed in DenyUsers", ...).
        why: &'static str,
    },
}

impl std::fmt::Display for NotAllowed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotAllowed::NoShell { user, shell } => write!(
                f,
                "User {user} not allowed because shell {shell} does not exist"
            ),
            NotAllowed::ShellNotExecutable { user, shell } => write!(
                f,
                "User {user} not allowed because shell {shell} is not executable"
            ),
            NotAllowed::Account(why) => f.write_str(why),
            NotAllowed::Listed { user, addr, why } => {
                write!(f, "User {user} from {addr} not allowed because {why}")
            }
        }
    }
}

impl std::error::Error for NotAllowed {}

/// Ok when `info` may log in from `addr`; otherwise the line sshd logs.
pub fn check(cfg: &Sshd, info: &UserInfo, addr: IpAddr) -> Result<(), NotAllowed> {
    let user = &info.name;
    let shell = if info.shell.is_empty() {
        "/bin/sh"
    } else {
        info.shell.as_str()
    };
    match std::fs::metadata(shell) {
        Err(_) => {
            return Err(NotAllowed::NoShell {
                user: user.clone(),
                shell: shell.to_owned(),
            })
        }
        Ok(m) if std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 == 0 => {
            return Err(NotAllowed::ShellNotExecutable {
                user: user.clone(),
                shell: shell.to_owned(),
            })
        }
        Ok(_) => {}
    }
    if !cfg.use_pam {
        if let Some(why) = crate::server::shadow::account_refusal(user) {
            return Err(NotAllowed::Account(why));
        }
    }
    let deny = |why: &'static str| {
        Err(NotAllowed::Listed {
            user: user.clone(),
            addr,
            why,
        })
    };
    if cfg.deny_users.iter().any(|p| match_user(user, addr, p)) {
        return deny("listed in DenyUsers");
    }
    if !cfg.allow_users.is_empty() && !cfg.allow_users.iter().any(|p| match_user(user, addr, p)) {
        return deny("not listed in AllowUsers");
    }
    if cfg.deny_groups.is_empty() && cfg.allow_groups.is_empty() {
        return Ok(());
    }
    let groups = crate::users::group_names(info);
    if groups.is_empty() {
        return deny("not in any group");
    }
    let any = |pats: &[String]| {
        groups
            .iter()
            .any(|g| pats.iter().any(|p| match_pattern(g, p)))
    };
    if any(&cfg.deny_groups) {
        return deny("a group is listed in DenyGroups");
    }
    if !cfg.allow_groups.is_empty() && !any(&cfg.allow_groups) {
        return deny("none of user's groups are listed in AllowGroups");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> UserInfo {
        crate::server::session::lookup_user("root").unwrap()
    }

    #[test]
    fn users_and_groups_as_sshd() {
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let mut cfg = Sshd::default();
        assert!(check(&cfg, &root(), lo).is_ok());
        cfg.deny_users = vec!["ro*@127.0.0.0/8".into()];
        let e = check(&cfg, &root(), lo).unwrap_err();
        assert!(matches!(
            e,
            NotAllowed::Listed {
                why: "listed in DenyUsers",
                ..
            }
        ));
        let e = e.to_string();
        assert_eq!(
            e,
            "User root from 127.0.0.1 not allowed because listed in DenyUsers"
        );
        assert!(check(&cfg, &root(), "10.0.0.1".parse().unwrap()).is_ok());
        cfg.deny_users.clear();
        cfg.allow_users = vec!["alice".into(), "bob@10.*".into()];
        assert!(check(&cfg, &root(), lo)
            .unwrap_err()
            .to_string()
            .ends_with("not listed in AllowUsers"));
        cfg.allow_users = vec!["r?ot".into()];
        assert!(check(&cfg, &root(), lo).is_ok());
        cfg.deny_groups = vec!["root".into()];
        assert!(check(&cfg, &root(), lo)
            .unwrap_err()
            .to_string()
            .ends_with("listed in DenyGroups"));
        cfg.deny_groups.clear();
        cfg.allow_groups = vec!["wheel".into()];
        assert!(check(&cfg, &root(), lo)
            .unwrap_err()
            .to_string()
            .ends_with("listed in AllowGroups"));
        cfg.allow_groups = vec!["ro*".into()];
        assert!(check(&cfg, &root(), lo).is_ok());
    }
}
