//! Descriptors by number: ranges closed or marked close-on-exec
//! (close_range(2)) and the fcntl fallbacks for older kernels.
//!
//! rustix offers no close_range; all of these are async-signal-safe, for a
//! process's start and a child between fork and exec.
//!
//! Closing by number is what `OwnedFd` exists to prevent; [`close_range`]
//! and [`close`] are for the moments nothing in the process owns the
//! numbers yet (sluiced's start, before it opens anything) — their callers
//! in `fds` are the only ones.

use std::io;
use std::os::fd::RawFd;

/// Closes every descriptor in `first..=last` (close_range(2), Linux 5.9).
///
/// # Safety
/// Nothing in the process may own a descriptor in the range (an `OwnedFd`,
/// a `File`): a process's start, before it opens anything there.
pub unsafe fn close_range(first: u32, last: u32) -> io::Result<()> {
    // SAFETY: close_range(2) takes no memory; the caller vouches that
    // nothing owns what it closes.
    let r = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0 as libc::c_uint) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Marks every descriptor in `first..=last` close-on-exec
/// (close_range(2) with CLOSE_RANGE_CLOEXEC, Linux 5.11); closes nothing.
pub fn cloexec_range(first: u32, last: u32) -> io::Result<()> {
    // SAFETY: close_range(2) takes no memory, and with this flag it closes
    // nothing now.
    let r = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first,
            last,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether descriptor number `fd` is open (fcntl F_GETFD succeeds).
pub fn is_open(fd: RawFd) -> bool {
    // SAFETY: fcntl(F_GETFD) on a number reads its flags and changes
    // nothing; EBADF for one that is not open.
    unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
}

/// Marks descriptor number `fd` close-on-exec when it is open and is not
/// already; one that is not open is left alone (Ok).
pub fn set_cloexec(fd: RawFd) -> io::Result<()> {
    // SAFETY: as in `is_open`.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
        // SAFETY: F_SETFD only changes the flag close-on-exec; the
        // descriptor stays open and owned by whoever owns it.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Closes descriptor number `fd`, ignoring errors (EBADF for one not
/// open).
///
/// # Safety
/// As [`close_range`]: nothing in the process owns `fd`.
pub unsafe fn close(fd: RawFd) {
    // SAFETY: close(2) takes no memory; the caller vouches that nothing
    // owns `fd`; at worst EBADF.
    unsafe { libc::close(fd) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_descriptor_marked_close_on_exec_stays_open() {
        let held = rustix::io::dup(std::io::stdin()).unwrap();
        let n = held.as_raw_fd();
        assert!(is_open(n));
        assert!(!rustix::io::fcntl_getfd(&held)
            .unwrap()
            .contains(rustix::io::FdFlags::CLOEXEC));
        set_cloexec(n).unwrap();
        assert!(rustix::io::fcntl_getfd(&held)
            .unwrap()
            .contains(rustix::io::FdFlags::CLOEXEC));
        drop(held);
        assert!(!is_open(n));
        // One not open is left alone.
        set_cloexec(n).unwrap();
    }
}
