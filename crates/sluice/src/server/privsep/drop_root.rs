//! The post-auth process giving up root, in sshd's order: the user's
//! groups read while /etc/group is reachable, the ChrootDirectory entered
//! as root, then groups, gid and uid set for good (and checked: root
//! cannot come back). Runs in the post-auth process only (postauth.rs).

use crate::server::chroot::ChrootError;
use crate::server::session::{self, UserInfo};
use crate::sys::creds;
use std::path::PathBuf;

/// Why root could not be given up for the user; `Display` is the log's
/// text after "post-auth: " (and postauth.rs's context).
#[derive(Debug)]
pub(super) enum DropRootError {
    /// The user's group list could not be read.
    Groups(std::io::Error),
    /// ChrootDirectory could not be applied.
    Chroot(ChrootError),
    /// ChrootDirectory set but sluiced is not root.
    ChrootNeedsRoot(PathBuf),
    /// Not root, and the user is not the one running sluiced.
    NotRoot,
    /// setgroups(2) failed.
    Setgroups(std::io::Error),
    /// setgid(2) failed.
    Setgid(std::io::Error),
    /// setuid(2) failed.
    Setuid(std::io::Error),
}

impl std::fmt::Display for DropRootError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DropRootError::Groups(e) => write!(f, "{e}"),
            DropRootError::Chroot(e) => write!(f, "{e}"),
            DropRootError::ChrootNeedsRoot(p) => write!(
                f,
                "ChrootDirectory {} needs sluiced to run as root",
                p.display()
            ),
            DropRootError::NotRoot => f.write_str("not running as root"),
            DropRootError::Setgroups(e) => write!(f, "setgroups: {e}"),
            DropRootError::Setgid(e) => write!(f, "setgid: {e}"),
            DropRootError::Setuid(e) => write!(f, "setuid: {e}"),
        }
    }
}

impl std::error::Error for DropRootError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DropRootError::Groups(e)
            | DropRootError::Setgroups(e)
            | DropRootError::Setgid(e)
            | DropRootError::Setuid(e) => Some(e),
            DropRootError::Chroot(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ChrootError> for DropRootError {
    fn from(e: ChrootError) -> Self {
        DropRootError::Chroot(e)
    }
}

/// The user's groups (initgroups' list), read while /etc/group is still
/// reachable; empty when not running as root (nothing to set).
pub(super) fn login_groups(u: &UserInfo) -> Result<Vec<u32>, DropRootError> {
    if !rustix::process::geteuid().is_root() {
        return Ok(Vec::new());
    }
    session::group_list(&u.name, u.gid).map_err(DropRootError::Groups)
}

/// ChrootDirectory for the user (Match blocks applied): tokens, sshd's
/// ownership checks, chroot(2). Only root can chroot; the error says so.
pub(super) fn enter_chroot(template: &str, u: &UserInfo) -> Result<(), DropRootError> {
    let path = crate::server::chroot::expand(template, u)?;
    if !rustix::process::geteuid().is_root() {
        return Err(DropRootError::ChrootNeedsRoot(path));
    }
    Ok(crate::server::chroot::enter(&path)?)
}

/// initgroups, setgid, setuid as sshd's permanently_set_uid; for a user
/// other than root, proof that neither uid 0 nor gid 0 can come back.
pub(super) fn become_user(u: &UserInfo, groups: &[u32]) -> Result<(), DropRootError> {
    let euid = rustix::process::geteuid().as_raw();
    if euid != 0 {
        // A server run by an ordinary user serves only that user.
        return if u.uid == euid {
            Ok(())
        } else {
            Err(DropRootError::NotRoot)
        };
    }
    // libc's process-wide calls (sys/creds.rs), never a per-thread setuid.
    creds::setgroups(groups).map_err(DropRootError::Setgroups)?;
    creds::setgid(u.gid).map_err(DropRootError::Setgid)?;
    creds::setuid(u.uid).map_err(DropRootError::Setuid)?;
    if u.uid != 0 {
        if creds::setuid(0).is_ok() || rustix::process::geteuid().as_raw() != u.uid {
            std::process::abort();
        }
        if u.gid != 0 && creds::setgid(0).is_ok() {
            std::process::abort();
        }
    }
    Ok(())
}
