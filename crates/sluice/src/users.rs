//! The password and group databases (getpwnam_r, getpwuid_r, getgrouplist,
//! getgrgid_r, getgrnam_r) behind safe wrappers, for the client (`~user`,
//! `%u`, the local user's name), the server (who logs in, their groups,
//! their shell) and sshd_config's `Match Group`.
//!
//! This is the bottom layer of the runtime: it uses only libc, so config/,
//! keys/, net/, client/ and server/ may all call it. The shadow database
//! (getspnam_r) stays with password checking in server/shadow.rs.

use std::ffi::{c_char, CStr, CString};
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

/// First size of the buffer the `_r` calls fill; doubled on ERANGE up to
/// [`MAX_BUF`] (a group with thousands of members needs more than the
/// usual 16 KiB).
const FIRST_BUF: usize = 16 * 1024;
/// Largest buffer tried before a lookup is given up as failed.
const MAX_BUF: usize = 4 << 20;
/// Most supplementary groups asked for (Linux's NGROUPS_MAX is 65536).
const MAX_GROUPS: usize = 65536;

/// Runs one `get*_r` call with a buffer that grows while the call says
/// ERANGE; `call` returns the call's result code and whether it found an
/// entry, and reads the entry out before the buffer is dropped.
fn with_buffer<T>(mut call: impl FnMut(&mut [c_char]) -> (i32, Option<T>)) -> Option<T> {
    let mut size = FIRST_BUF;
    loop {
        let mut buf = Zeroizing::new(vec![0 as c_char; size]);
        match call(&mut buf) {
            (0, found) => return found,
            (libc::ERANGE, _) if size < MAX_BUF => size *= 2,
            _ => return None,
        }
    }
}

/// A C string field as an owned String (empty when null).
///
/// # Safety
/// `p` is null or a NUL-terminated string that is alive for the call.
unsafe fn field(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: non-null and NUL-terminated, as the caller promises.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// Which passwd entry to look up.
enum Key<'a> {
    Name(&'a CStr),
    Uid(u32),
}

/// One passwd lookup; `read` copies what it needs out of the entry.
fn passwd<T>(key: Key<'_>, read: impl Fn(&libc::passwd) -> T) -> Option<T> {
    with_buffer(|buf| {
        // SAFETY: passwd is plain data that getpw*_r fills.
        let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call and buf's length is
        // passed; the entry's strings point into buf, read before it drops.
        let rc = unsafe {
            match &key {
                Key::Name(n) => libc::getpwnam_r(
                    n.as_ptr(),
                    &mut pw,
                    buf.as_mut_ptr(),
                    buf.len(),
                    &mut result,
                ),
                Key::Uid(u) => {
                    libc::getpwuid_r(*u, &mut pw, buf.as_mut_ptr(), buf.len(), &mut result)
                }
            }
        };
        (rc, (!result.is_null()).then(|| read(&pw)))
    })
}

fn user_info(pw: &libc::passwd) -> UserInfo {
    // SAFETY: getpw*_r's strings are NUL-terminated inside the live buffer.
    unsafe {
        UserInfo {
            name: field(pw.pw_name),
            uid: pw.pw_uid,
            gid: pw.pw_gid,
            home: field(pw.pw_dir),
            shell: field(pw.pw_shell),
        }
    }
}

/// The user named `name`, or None when there is none (or the lookup failed).
pub fn by_name(name: &str) -> Option<UserInfo> {
    let c = CString::new(name).ok()?;
    passwd(Key::Name(&c), user_info)
}

/// The user with id `uid`.
pub fn by_uid(uid: u32) -> Option<UserInfo> {
    passwd(Key::Uid(uid), user_info)
}

/// The user this process runs as (its real uid).
pub fn current() -> Option<UserInfo> {
    // SAFETY: getuid cannot fail.
    by_uid(unsafe { libc::getuid() })
}

/// The passwd entry's password field (`x` when the hash is in shadow),
/// kept in memory that is wiped when dropped; None for no user or no field.
pub fn password_field(name: &str) -> Option<Zeroizing<String>> {
    let c = CString::new(name).ok()?;
    passwd(Key::Name(&c), |pw| {
        // SAFETY: as in user_info.
        (!pw.pw_passwd.is_null()).then(|| Zeroizing::new(unsafe { field(pw.pw_passwd) }))
    })
    .flatten()
}

/// The ids of `name`'s groups, `gid` (the primary group) included, as
/// initgroups sets them (getgrouplist).
pub fn group_ids(name: &str, gid: u32) -> std::io::Result<Vec<u32>> {
    let cname = CString::new(name).map_err(std::io::Error::other)?;
    let mut n: libc::c_int = 64;
    for _ in 0..8 {
        let asked = n.max(1);
        let mut groups = vec![0 as libc::gid_t; asked as usize];
        let mut got = asked;
        // SAFETY: groups holds `asked` entries; getgrouplist writes at most
        // that many and stores the count it needs in `got`.
        let rc = unsafe { libc::getgrouplist(cname.as_ptr(), gid, groups.as_mut_ptr(), &mut got) };
        if rc >= 0 {
            groups.truncate(got.max(0) as usize);
            return Ok(groups);
        }
        // glibc reports the count needed; others may not: double instead.
        n = if got > asked {
            got
        } else {
            asked.saturating_mul(2)
        }
        .min(MAX_GROUPS as libc::c_int);
    }
    Err(std::io::Error::other(format!(
        "getgrouplist {name}: too many groups"
    )))
}

/// The name of group `gid` (getgrgid_r).
pub fn group_name(gid: u32) -> Option<String> {
    with_buffer(|buf| {
        // SAFETY: group is plain data that getgrgid_r fills.
        let mut gr: libc::group = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::group = std::ptr::null_mut();
        // SAFETY: pointers valid for the call; the name is copied out of buf
        // before it is dropped.
        let rc =
            unsafe { libc::getgrgid_r(gid, &mut gr, buf.as_mut_ptr(), buf.len(), &mut result) };
        let found = (!result.is_null() && !gr.gr_name.is_null())
            // SAFETY: NUL-terminated inside buf.
            .then(|| unsafe { field(gr.gr_name) });
        (rc, found)
    })
}

/// The id of the group named `name` (getgrnam_r).
pub fn group_id(name: &str) -> Option<u32> {
    let c = CString::new(name).ok()?;
    with_buffer(|buf| {
        // SAFETY: group is plain data that getgrnam_r fills.
        let mut gr: libc::group = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::group = std::ptr::null_mut();
        // SAFETY: all pointers are valid for the call.
        let rc = unsafe {
            libc::getgrnam_r(
                c.as_ptr(),
                &mut gr,
                buf.as_mut_ptr(),
                buf.len(),
                &mut result,
            )
        };
        (rc, (!result.is_null()).then_some(gr.gr_gid))
    })
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
        // SAFETY: getuid cannot fail.
        let uid = unsafe { libc::getuid() };
        assert_eq!(current().map(|u| u.uid), Some(uid));
    }
}
