//! The post-auth process giving up root, in sshd's order: the user's
//! groups read while /etc/group is reachable, the ChrootDirectory entered
//! as root, then groups, gid and uid set for good (and checked: root
//! cannot come back). Runs in the post-auth process only (postauth.rs).

use crate::server::chroot::ChrootError;
use crate::server::session::{self, UserInfo};
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
pub(super) fn login_groups(u: &UserInfo) -> Result<Vec<libc::gid_t>, DropRootError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(Vec::new());
    }
    session::group_list(&u.name, u.gid).map_err(DropRootError::Groups)
}

/// ChrootDirectory for the user (Match blocks applied): tokens, sshd's
/// ownership checks, chroot(2). Only root can chroot; the error says so.
pub(super) fn enter_chroot(template: &str, u: &UserInfo) -> Result<(), DropRootError> {
    let path = crate::server::chroot::expand(template, u)?;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(DropRootError::ChrootNeedsRoot(path));
    }
    Ok(crate::server::chroot::enter(&path)?)
}

/// initgroups, setgid, setuid as sshd's permanently_set_uid; for a user
/// other than root, proof that neither uid 0 nor gid 0 can come back.
pub(super) fn become_user(u: &UserInfo, groups: &[libc::gid_t]) -> Result<(), DropRootError> {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        // A server run by an ordinary user serves only that user.
        return if u.uid == euid {
            Ok(())
        } else {
            Err(DropRootError::NotRoot)
        };
    }
    let last = std::io::Error::last_os_error;
    // SAFETY: credential system calls in a process with no other thread yet.
    unsafe {
        if libc::setgroups(groups.len(), groups.as_ptr()) != 0 {
            return Err(DropRootError::Setgroups(last()));
        }
        if libc::setgid(u.gid) != 0 {
            return Err(DropRootError::Setgid(last()));
        }
        if libc::setuid(u.uid) != 0 {
            return Err(DropRootError::Setuid(last()));
        }
        if u.uid != 0 {
            if libc::setuid(0) == 0 || libc::geteuid() != u.uid {
                libc::abort();
            }
            if u.gid != 0 && libc::setgid(0) == 0 {
                libc::abort();
            }
        }
    }
    Ok(())
}
