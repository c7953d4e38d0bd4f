//! The password and group databases (getpwnam_r, getpwuid_r, getgrouplist,
//! getgrgid_r, getgrnam_r) behind safe wrappers, for the client (`~user`,
//! `%u`, the local user's name), the server (who logs in, their groups,
//! their shell) and sshd_config's `Match Group`.
//!
//! It sits low in the runtime, above only sys/ (sys/users.rs makes the
//! calls), so config/, keys/, net/, client/ and server/ may all call it.
//! The shadow database (getspnam_r) stays with password checking in
//! server/shadow.rs.

use crate::sys;
use std::ffi::{CStr, CString};
use zeroize::Zeroizing;

/// A user from the password database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    /// Login name.
    pub name: String,
    /// User id.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
    /// Home directory.
    pub home: String,
    /// Login shell.
    pub shell: String,
}

/// Most supplementary groups asked for (Linux's NGROUPS_MAX is 65536).
const MAX_GROUPS: i32 = 65536;

/// A C string field as an owned String (empty when null).
fn field(s: Option<&CStr>) -> String {
    s.map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn user_info(pw: &sys::users::Passwd<'_>) -> UserInfo {
    UserInfo {
        name: field(pw.name),
        uid: pw.uid,
        gid: pw.gid,
        home: field(pw.dir),
        shell: field(pw.shell),
    }
}

/// The user named `name`, or None when there is none (or the lookup failed).
pub fn by_name(name: &str) -> Option<UserInfo> {
    let c = CString::new(name).ok()?;
    sys::users::getpwnam(&c, user_info)
}

/// The user with id `uid`.
pub fn by_uid(uid: u32) -> Option<UserInfo> {
    sys::users::getpwuid(uid, user_info)
}

/// The user this process runs as (its real uid).
pub fn current() -> Option<UserInfo> {
    by_uid(rustix::process::getuid().as_raw())
}

/// The passwd entry's password field (`x` when the hash is in shadow),
/// kept in memory that is wiped when dropped; None for no user or no field.
pub fn password_field(name: &str) -> Option<Zeroizing<String>> {
    let c = CString::new(name).ok()?;
    sys::users::getpwnam(&c, |pw| pw.passwd.map(|p| Zeroizing::new(field(Some(p))))).flatten()
}

/// The ids of `name`'s groups, `gid` (the primary group) included, as
/// initgroups sets them (getgrouplist).
pub fn group_ids(name: &str, gid: u32) -> std::io::Result<Vec<u32>> {
    let cname = CString::new(name).map_err(std::io::Error::other)?;
    let mut n: i32 = 64;
    for _ in 0..8 {
        let asked = n.max(1);
        let mut groups = vec![0u32; asked as usize];
        match sys::users::getgrouplist(&cname, gid, &mut groups) {
            Ok(got) => {
                groups.truncate(got);
                return Ok(groups);
            }
            // glibc reports the count needed; others may not: double instead.
            Err(got) => {
                n = if got > asked {
                    got
                } else {
                    asked.saturating_mul(2)
                }
                .min(MAX_GROUPS)
            }
        }
    }
    Err(std::io::Error::other(format!(
        "getgrouplist {name}: too many groups"
    )))
}

/// The name of group `gid` (getgrgid_r).
pub fn group_name(gid: u32) -> Option<String> {
    sys::users::getgrgid(gid, |gr| gr.name.map(|n| field(Some(n)))).flatten()
}

/// The id of the group named `name` (getgrnam_r).
pub fn group_id(name: &str) -> Option<u32> {
    let c = CString::new(name).ok()?;
    sys::users::getgrnam(&c, |gr| gr.gid)
}

/// The names of `user`'s groups (primary and supplementary); groups
/// without a name are left out, and a failed getgrouplist gives the
/// primary group alone.
pub fn group_names(user: &UserInfo) -> Vec<String> {
    group_ids(&user.name, user.gid)
        .unwrap_or_else(|_| vec![user.gid])
        .into_iter()
        .filter_map(group_name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_exists() {
        let root = by_name("root").expect("root in passwd");
        assert_eq!((root.uid, root.gid), (0, 0));
        assert!(!root.home.is_empty());
        assert_eq!(by_uid(0).map(|u| u.name), Some("root".to_owned()));
    }

    #[test]
    fn unknown_user_is_none() {
        assert_eq!(by_name("no-such-user-sluice-test"), None);
        assert_eq!(by_name("nul\0byte"), None);
        assert_eq!(password_field("no-such-user-sluice-test"), None);
        assert_eq!(group_id("no-such-group-sluice-test"), None);
    }

    #[test]
    fn groups_of_root_include_0() {
        let ids = group_ids("root", 0).expect("getgrouplist");
        assert!(ids.contains(&0));
        assert_eq!(group_id("root"), Some(0));
        assert_eq!(group_name(0).as_deref(), Some("root"));
        let root = by_name("root").expect("root");
        assert!(group_names(&root).iter().any(|g| g == "root"));
    }

    #[test]
    fn current_user_is_found() {
        let uid = rustix::process::getuid().as_raw();
        assert_eq!(current().map(|u| u.uid), Some(uid));
    }
}
