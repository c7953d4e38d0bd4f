//! The password, group and shadow databases (getpwnam_r, getpwuid_r,
//! getgrgid_r, getgrnam_r, getgrouplist, getspnam_r): glibc's NSS lookups,
//! which rustix (system calls only) does not offer.
//!
//! Each lookup owns the buffer the `_r` call fills (grown on ERANGE) and
//! hands the entry, borrowed from that buffer, to a closure that copies out
//! what it needs; the buffer is wiped before it is freed, since passwd and
//! shadow entries may hold password hashes.

use std::ffi::{c_char, c_int, CStr};
use std::sync::atomic::{compiler_fence, Ordering};

/// First size of the buffer of the passwd and group lookups; doubled on
/// ERANGE up to [`MAX_BUF`] (a group with thousands of members needs more
/// than the usual 16 KiB).
const FIRST_BUF: usize = 16 * 1024;
/// Largest buffer tried before a lookup is given up as failed.
const MAX_BUF: usize = 4 << 20;
/// The shadow lookup's one buffer (not grown: an entry is one line).
const SHADOW_BUF: usize = 16 * 1024;

/// A passwd entry, borrowed from the lookup's buffer; a field the entry
/// leaves null is None.
pub struct Passwd<'a> {
    /// Login name.
    pub name: Option<&'a CStr>,
    /// Password field (`x` when the hash is in shadow).
    pub passwd: Option<&'a CStr>,
    /// User id.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
    /// Home directory.
    pub dir: Option<&'a CStr>,
    /// Login shell.
    pub shell: Option<&'a CStr>,
}

/// A group entry, borrowed from the lookup's buffer.
pub struct Group<'a> {
    /// Group name.
    pub name: Option<&'a CStr>,
    /// Group id.
    pub gid: u32,
}

/// A shadow entry, borrowed from the lookup's buffer.
pub struct Shadow<'a> {
    /// The password hash.
    pub hash: Option<&'a CStr>,
    /// The account's expiry day (days since 1970-01-01; -1 for none).
    pub expire: i64,
}

/// Overwrites `buf` with zeroes in a way the optimizer keeps.
fn wipe(buf: &mut [c_char]) {
    for b in buf.iter_mut() {
        // SAFETY: `b` is a valid, aligned, exclusive reference.
        unsafe { std::ptr::write_volatile(b, 0) };
    }
    compiler_fence(Ordering::SeqCst);
}

/// Runs one `get*_r` call with a buffer of `first` bytes that grows while
/// the call says ERANGE, up to `max`; `call` returns the call's result code
/// and what it read out of the entry, if it found one. The buffer is wiped
/// after each try.
fn with_buffer<T>(
    first: usize,
    max: usize,
    mut call: impl FnMut(&mut [c_char]) -> (c_int, Option<T>),
) -> Option<T> {
    let mut size = first;
    loop {
        let mut buf = vec![0 as c_char; size];
        let (rc, found) = call(&mut buf);
        wipe(&mut buf);
        match (rc, found) {
            (0, found) => return found,
            (libc::ERANGE, _) if size < max => size *= 2,
            _ => return None,
        }
    }
}

/// A C string field as a borrowed CStr (None when null).
///
/// # Safety
/// `p` is null or a NUL-terminated string alive and unchanged for `'a`.
unsafe fn field<'a>(p: *const c_char) -> Option<&'a CStr> {
    // SAFETY: non-null and NUL-terminated, as the caller promises.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) })
}

/// Which passwd entry to look up.
enum PwKey<'a> {
    Name(&'a CStr),
    Uid(u32),
}

/// One passwd lookup, getpwnam_r or getpwuid_r.
fn passwd<T>(key: PwKey<'_>, read: impl FnOnce(&Passwd<'_>) -> T) -> Option<T> {
    let mut read = Some(read);
    with_buffer(FIRST_BUF, MAX_BUF, |buf| {
        // SAFETY: passwd is plain data (integers and pointers) that
        // getpw*_r fills; all zeroes is a valid value of it.
        let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call and buf's length is
        // passed; the entry's strings point into buf.
        let rc = unsafe {
            match &key {
                PwKey::Name(n) => libc::getpwnam_r(
                    n.as_ptr(),
                    &mut pw,
                    buf.as_mut_ptr(),
                    buf.len(),
                    &mut result,
                ),
                PwKey::Uid(u) => {
                    libc::getpwuid_r(*u, &mut pw, buf.as_mut_ptr(), buf.len(), &mut result)
                }
            }
        };
        if result.is_null() {
            return (rc, None);
        }
        // SAFETY: the strings of an entry found are null or NUL-terminated
        // inside buf, which lives and stays unchanged until `read` returns
        // (its answer cannot borrow them).
        let entry = unsafe {
            Passwd {
                name: field(pw.pw_name),
                passwd: field(pw.pw_passwd),
                uid: pw.pw_uid,
                gid: pw.pw_gid,
                dir: field(pw.pw_dir),
                shell: field(pw.pw_shell),
            }
        };
        (rc, read.take().map(|f| f(&entry)))
    })
}

/// The passwd entry of the user named `name` (getpwnam_r), given to
/// `read`; None when there is none or the lookup failed.
pub fn getpwnam<T>(name: &CStr, read: impl FnOnce(&Passwd<'_>) -> T) -> Option<T> {
    passwd(PwKey::Name(name), read)
}

/// The passwd entry of user id `uid` (getpwuid_r), given to `read`.
pub fn getpwuid<T>(uid: u32, read: impl FnOnce(&Passwd<'_>) -> T) -> Option<T> {
    passwd(PwKey::Uid(uid), read)
}

/// Which group entry to look up.
enum GrKey<'a> {
    Name(&'a CStr),
    Gid(u32),
}

/// One group lookup, getgrnam_r or getgrgid_r.
fn group<T>(key: GrKey<'_>, read: impl FnOnce(&Group<'_>) -> T) -> Option<T> {
    let mut read = Some(read);
    with_buffer(FIRST_BUF, MAX_BUF, |buf| {
        // SAFETY: group is plain data that getgr*_r fills; all zeroes is a
        // valid value of it.
        let mut gr: libc::group = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::group = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call and buf's length is
        // passed; the entry's strings point into buf.
        let rc = unsafe {
            match &key {
                GrKey::Name(n) => libc::getgrnam_r(
                    n.as_ptr(),
                    &mut gr,
                    buf.as_mut_ptr(),
                    buf.len(),
                    &mut result,
                ),
                GrKey::Gid(g) => {
                    libc::getgrgid_r(*g, &mut gr, buf.as_mut_ptr(), buf.len(), &mut result)
                }
            }
        };
        if result.is_null() {
            return (rc, None);
        }
        let entry = Group {
            // SAFETY: null or NUL-terminated inside buf, alive until `read`
            // returns.
            name: unsafe { field(gr.gr_name) },
            gid: gr.gr_gid,
        };
        (rc, read.take().map(|f| f(&entry)))
    })
}

/// The group entry of group id `gid` (getgrgid_r), given to `read`.
pub fn getgrgid<T>(gid: u32, read: impl FnOnce(&Group<'_>) -> T) -> Option<T> {
    group(GrKey::Gid(gid), read)
}

/// The group entry of the group named `name` (getgrnam_r), given to `read`.
pub fn getgrnam<T>(name: &CStr, read: impl FnOnce(&Group<'_>) -> T) -> Option<T> {
    group(GrKey::Name(name), read)
}

/// The groups of user `name`, `gid` included, as initgroups sets them
/// (getgrouplist), written into `groups`: Ok with how many, or Err with
/// the count the call reported when they did not fit (glibc's: the count
/// needed; other libcs may leave it).
pub fn getgrouplist(name: &CStr, gid: u32, groups: &mut [u32]) -> Result<usize, i32> {
    let mut count = c_int::try_from(groups.len()).unwrap_or(c_int::MAX);
    // SAFETY: `groups` holds at least `count` entries; getgrouplist writes
    // at most that many and stores the count it has (or needs) in `count`.
    let rc = unsafe { libc::getgrouplist(name.as_ptr(), gid, groups.as_mut_ptr(), &mut count) };
    if rc >= 0 {
        Ok(usize::try_from(count).unwrap_or(0).min(groups.len()))
    } else {
        Err(count)
    }
}

/// The shadow entry of the user named `name` (getspnam_r), given to
/// `read`; None when there is none or it cannot be read (not root).
pub fn getspnam<T>(name: &CStr, read: impl FnOnce(&Shadow<'_>) -> T) -> Option<T> {
    let mut read = Some(read);
    with_buffer(SHADOW_BUF, SHADOW_BUF, |buf| {
        // SAFETY: spwd is plain data that getspnam_r fills; all zeroes is a
        // valid value of it.
        let mut sp: libc::spwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::spwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call and buf's length is
        // passed; the entry's strings point into buf.
        let rc = unsafe {
            libc::getspnam_r(
                name.as_ptr(),
                &mut sp,
                buf.as_mut_ptr(),
                buf.len(),
                &mut result,
            )
        };
        if result.is_null() {
            return (rc, None);
        }
        let entry = Shadow {
            // SAFETY: null or NUL-terminated inside buf, alive until `read`
            // returns.
            hash: unsafe { field(sp.sp_pwdp) },
            // A `long`: 64 bits here, 32 on some targets.
            expire: sp.sp_expire as i64,
        };
        (rc, read.take().map(|f| f(&entry)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_by_name_and_uid() {
        let uid = getpwnam(c"root", |p| p.uid);
        assert_eq!(uid, Some(0));
        let name = getpwuid(0, |p| p.name.map(|n| n.to_bytes().to_vec()));
        assert_eq!(name.flatten().as_deref(), Some(&b"root"[..]));
        assert_eq!(getgrnam(c"root", |g| g.gid), Some(0));
        let mut groups = [0u32; 64];
        let n = getgrouplist(c"root", 0, &mut groups).expect("fits");
        assert!(groups[..n].contains(&0));
        assert!(getpwnam(c"no-such-user-sluice-test", |_| ()).is_none());
    }
}
