//! Descriptors a process hands to the program it starts, by number:
//! placed between fork and exec at the numbers the new image expects
//! (dup2, close-on-exec cleared), as the privsep monitor places the
//! post-auth process's sockets.
//!
//! rustix's dup2 replaces an `OwnedFd` and its fcntls take a `BorrowedFd`;
//! between fork and exec the numbers are the parent's, owned by nothing
//! the child runs, so these take plain numbers. Each is one raw fcntl(2)
//! or dup2(2): async-signal-safe, no allocation (a `pre_exec` closure may
//! call them).

use std::io;
use std::os::fd::RawFd;

fn ok_or_errno(r: libc::c_int) -> io::Result<()> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// A copy of descriptor number `fd` at the lowest free number `min` or
/// above, close-on-exec (fcntl F_DUPFD_CLOEXEC): moves it out of the way
/// of numbers about to be filled. Returns the copy's number, which
/// nothing owns (it goes at exec).
pub fn dup_cloexec_from(fd: RawFd, min: RawFd) -> io::Result<RawFd> {
    // SAFETY: fcntl(F_DUPFD_CLOEXEC) takes no memory; it adds a
    // descriptor and closes none (EBADF for a number not open).
    let r = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, min) };
    ok_or_errno(r).map(|()| r)
}

/// Clears the close-on-exec flag of descriptor number `fd` (fcntl F_SETFD
/// 0): the program exec'd next inherits it.
pub fn keep_across_exec(fd: RawFd) -> io::Result<()> {
    // SAFETY: F_SETFD changes only the descriptor's flag; it stays open
    // and owned by whoever owns it.
    ok_or_errno(unsafe { libc::fcntl(fd, libc::F_SETFD, 0) })
}

/// Makes descriptor number `fd` reach the program exec'd next as number
/// `target`: dup2'd there, or, when it is `target` already, its
/// close-on-exec flag cleared (dup2 onto itself would leave the flag).
///
/// # Safety
/// dup2 closes whatever is open at `target`: nothing in the process may
/// own that number (a child between fork and exec, whose owners never run
/// again).
pub unsafe fn place_at(fd: RawFd, target: RawFd) -> io::Result<()> {
    if fd == target {
        return keep_across_exec(fd);
    }
    // SAFETY: dup2(2) takes no memory; the caller vouches that nothing
    // owns `target`, which it replaces.
    ok_or_errno(unsafe { libc::dup2(fd, target) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};

    #[test]
    fn a_descriptor_placed_at_a_number_is_inherited_there() {
        let held = rustix::io::dup(std::io::stdin()).unwrap();
        let copy = dup_cloexec_from(held.as_raw_fd(), 100).unwrap();
        assert!(copy >= 100);
        // SAFETY: `copy` was just made and nothing else owns it.
        let copy = unsafe { OwnedFd::from_raw_fd(copy) };
        let flags = |fd: &OwnedFd| rustix::io::fcntl_getfd(fd).unwrap();
        assert!(flags(&copy).contains(rustix::io::FdFlags::CLOEXEC));
        // A number nothing owns: its OwnedFd gives it up.
        let n = rustix::io::fcntl_dupfd_cloexec(&held, 200)
            .unwrap()
            .into_raw_fd();
        // SAFETY: nothing owns `n` (above).
        unsafe { place_at(copy.as_raw_fd(), n).unwrap() };
        // SAFETY: dup2 put a copy at `n`, which nothing else owns.
        let target = unsafe { OwnedFd::from_raw_fd(n) };
        assert!(!flags(&target).contains(rustix::io::FdFlags::CLOEXEC));
        // SAFETY: a number onto itself closes nothing.
        unsafe { place_at(copy.as_raw_fd(), copy.as_raw_fd()).unwrap() };
        assert!(!flags(&copy).contains(rustix::io::FdFlags::CLOEXEC));
        assert!(dup_cloexec_from(-1, 10).is_err());
    }
}
