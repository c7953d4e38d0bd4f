//! A process's credentials: supplementary groups, gid and uid set for the
//! whole process through libc (setgroups, setgid, setuid, setresgid,
//! setresuid, initgroups), and the calling thread's file-system ids
//! (setfsuid, setfsgid: per thread by design).
//!
//! Why not rustix: its `set_thread_groups`, `set_thread_gid`,
//! `set_thread_uid`, `set_thread_res_gid` and `set_thread_res_uid` are raw
//! system calls, and on Linux a raw setuid(2) changes ONE THREAD's
//! credentials, leaving the other threads with root's. glibc's wrappers
//! used here apply the change to every thread of the process (its setxid
//! broadcast), as POSIX requires: a privilege drop must go through them.
//!
//! The calls take no memory that outlives them and allocate nothing, so all
//! but [`initgroups`] (which reads /etc/group) may be made between fork and
//! exec; they report failure as `io::Error` from errno.

use std::ffi::CStr;
use std::io;

/// Ok when a libc call returned 0, else errno as an `io::Error`.
fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets the process's supplementary groups to `groups` (setgroups(2)
/// through glibc, every thread).
pub fn setgroups(groups: &[u32]) -> io::Result<()> {
    // SAFETY: the pointer and length describe `groups`, which the call only
    // reads.
    check(unsafe { libc::setgroups(groups.len(), groups.as_ptr()) })
}

/// Sets the process's real, effective and saved group id to `gid` when
/// root, else its effective one (setgid(2) through glibc, every thread).
pub fn setgid(gid: u32) -> io::Result<()> {
    // SAFETY: no memory arguments.
    check(unsafe { libc::setgid(gid) })
}

/// Sets the process's real, effective and saved user id to `uid` when
/// root, else its effective one (setuid(2) through glibc, every thread).
pub fn setuid(uid: u32) -> io::Result<()> {
    // SAFETY: no memory arguments.
    check(unsafe { libc::setuid(uid) })
}

/// Sets the process's real, effective and saved group ids
/// (setresgid(2) through glibc, every thread).
pub fn setresgid(real: u32, effective: u32, saved: u32) -> io::Result<()> {
    // SAFETY: no memory arguments.
    check(unsafe { libc::setresgid(real, effective, saved) })
}

/// Sets the process's real, effective and saved user ids
/// (setresuid(2) through glibc, every thread).
pub fn setresuid(real: u32, effective: u32, saved: u32) -> io::Result<()> {
    // SAFETY: no memory arguments.
    check(unsafe { libc::setresuid(real, effective, saved) })
}

/// Sets the process's supplementary groups to those of user `name` plus
/// `gid` (initgroups(3): reads the group database, so it allocates and may
/// not be called between fork and exec).
pub fn initgroups(name: &CStr, gid: u32) -> io::Result<()> {
    // SAFETY: `name` is NUL-terminated and only read.
    check(unsafe { libc::initgroups(name.as_ptr(), gid) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setting_what_is_already_set_succeeds() {
        let gid = rustix::process::getegid().as_raw();
        let uid = rustix::process::geteuid().as_raw();
        setgid(gid).unwrap();
        setuid(uid).unwrap();
        if uid != 0 {
            assert!(setuid(0).is_err());
        }
    }
}

/// setfsuid(2): the uid the calling thread's file system checks use;
/// returns the one before (the call reports no error).
pub fn set_fs_uid(uid: u32) -> u32 {
    // SAFETY: an integer argument only.
    (unsafe { libc::setfsuid(uid) }) as u32
}

/// setfsgid(2): the gid the calling thread's file system checks use;
/// returns the one before (the call reports no error).
pub fn set_fs_gid(gid: u32) -> u32 {
    // SAFETY: an integer argument only.
    (unsafe { libc::setfsgid(gid) }) as u32
}
