//! The post-auth process giving up root, in sshd's order: the user's
//! groups read while /etc/group is reachable, the ChrootDirectory entered
//! as root, then groups, gid and uid set for good (and checked: root
//! cannot come back). Runs in the post-auth process only (postauth.rs).

use crate::server::session::{self, UserInfo};

/// The user's groups (initgroups' list), read while /etc/group is still
/// reachable; empty when not running as root (nothing to set).
pub(super) fn login_groups(u: &UserInfo) -> Result<Vec<libc::gid_t>, String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(Vec::new());
    }
    session::group_list(&u.name, u.gid).map_err(|e| e.to_string())
}

/// ChrootDirectory for the user (Match blocks applied): tokens, sshd's
/// ownership checks, chroot(2). Only root can chroot; the error says so.
pub(super) fn enter_chroot(template: &str, u: &UserInfo) -> Result<(), String> {
    let path = crate::server::chroot::expand(template, u)?;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(format!(
            "ChrootDirectory {} needs sluiced to run as root",
            path.display()
        ));
    }
    crate::server::chroot::enter(&path)
}

/// initgroups, setgid, setuid as sshd's permanently_set_uid; for a user
/// other than root, proof that neither uid 0 nor gid 0 can come back.
pub(super) fn become_user(u: &UserInfo, groups: &[libc::gid_t]) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        // A server run by an ordinary user serves only that user.
        return if u.uid == euid {
            Ok(())
        } else {
            Err("not running as root".into())
        };
    }
    let last = || std::io::Error::last_os_error().to_string();
    // SAFETY: credential system calls in a process with no other thread yet.
    unsafe {
        if libc::setgroups(groups.len(), groups.as_ptr()) != 0 {
            return Err(format!("setgroups: {}", last()));
        }
        if libc::setgid(u.gid) != 0 {
            return Err(format!("setgid: {}", last()));
        }
        if libc::setuid(u.uid) != 0 {
            return Err(format!("setuid: {}", last()));
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
