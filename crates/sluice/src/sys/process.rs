//! Processes: fork, execve, _exit, the signal mask, a peek at an exited
//! child and a pidfd's liveness check. (Credentials are sys/creds.rs's.)
//!
//! # After fork in a threaded process
//! A child forked from a process with other threads has one thread, and
//! the memory of the others as they were: a lock one of them held (the
//! allocator's, stdio's, the log's) stays held for good. Until it execs
//! (or leaves with [`exit_now`]) such a child may only make
//! async-signal-safe calls: raw system calls, the functions of this file
//! and sys/signal.rs (none allocates, locks or formats), rustix's calls;
//! no allocation, no `format!`, no logging, no `Mutex`. That is also the
//! rule for the closures given to `CommandExt::pre_exec`. A child forked
//! before any thread started may run ordinary code.

use rustix::process::{Pid, Signal};
use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Which side of a [`fork`] this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forked {
    /// The new process.
    Child,
    /// The process that forked, with the child's pid.
    Parent(Pid),
}

/// fork(2), as libc's fork (its atfork handlers run; rustix has no fork).
///
/// # Safety
/// In the child, until it execs or calls [`exit_now`], the caller makes
/// only async-signal-safe calls if the process had other threads at the
/// fork (see the module's doc); with one thread, anything goes. The child
/// must leave with [`exit_now`], never by returning into code that would
/// run the parent's destructors or exit handlers twice.
pub unsafe fn fork() -> io::Result<Forked> {
    // SAFETY: fork(2) takes no arguments; what the child may do is the
    // caller's contract above.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(Forked::Child),
        pid => Pid::from_raw(pid)
            .map(Forked::Parent)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL)),
    }
}

/// Ends this process at once with `code` (_exit(2)): no exit handlers, no
/// destructors, no stdio flush; async-signal-safe (a forked child's way
/// out).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit(2) takes an integer and never returns.
    unsafe { libc::_exit(code) }
}

/// Replaces this process's image: execve(2) of `path` with `argv` and
/// `envp` (libc's, not rustix's runtime execve, which is for programs
/// without libc). Returns only on failure, with the error. Not for a
/// forked child of a threaded process: it allocates the pointer arrays.
pub fn execve(path: &CStr, argv: &[CString], envp: &[CString]) -> io::Error {
    let ptrs = |v: &[CString]| -> Vec<*const libc::c_char> {
        v.iter()
            .map(|s| s.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect()
    };
    let (argv_p, envp_p) = (ptrs(argv), ptrs(envp));
    // SAFETY: NUL-terminated strings and null-terminated arrays of them,
    // all alive for the call.
    unsafe { libc::execve(path.as_ptr(), argv_p.as_ptr(), envp_p.as_ptr()) };
    io::Error::last_os_error()
}

/// A thread's signal mask, as [`block_signals`] and [`unblock_signals`]
/// return the one before.
#[derive(Clone, Copy)]
pub struct SignalMask(libc::sigset_t);

/// Blocks `sigs` in the calling thread (pthread_sigmask SIG_BLOCK; the
/// mask is kept across an exec); returns the mask before, None on
/// failure. libc's, not rustix's kernel_sigprocmask (a runtime call that
/// bypasses libc's reserved signals).
pub fn block_signals(sigs: &[Signal]) -> Option<SignalMask> {
    change_mask(libc::SIG_BLOCK, &set_of(sigs))
}

/// Unblocks `sigs` in the calling thread (pthread_sigmask SIG_UNBLOCK);
/// returns the mask before, None on failure.
pub fn unblock_signals(sigs: &[Signal]) -> Option<SignalMask> {
    change_mask(libc::SIG_UNBLOCK, &set_of(sigs))
}

/// Sets the calling thread's whole signal mask to `mask`
/// (pthread_sigmask SIG_SETMASK).
pub fn set_signal_mask(mask: &SignalMask) {
    change_mask(libc::SIG_SETMASK, &mask.0);
}

fn set_of(sigs: &[Signal]) -> libc::sigset_t {
    let mut s = std::mem::MaybeUninit::<libc::sigset_t>::zeroed();
    // SAFETY: sigemptyset initialises the set; sigaddset adds valid signal
    // numbers (rustix's Signal) to it.
    unsafe {
        libc::sigemptyset(s.as_mut_ptr());
        for sig in sigs {
            libc::sigaddset(s.as_mut_ptr(), sig.as_raw());
        }
        s.assume_init()
    }
}

fn change_mask(how: libc::c_int, set: &libc::sigset_t) -> Option<SignalMask> {
    let mut old = std::mem::MaybeUninit::<libc::sigset_t>::zeroed();
    // SAFETY: `set` is an initialised sigset_t; pthread_sigmask writes the
    // old mask into `old`, all-zero (an empty set) before.
    let r = unsafe { libc::pthread_sigmask(how, set, old.as_mut_ptr()) };
    // SAFETY: zeroed, then filled by the call.
    (r == 0).then(|| SignalMask(unsafe { old.assume_init() }))
}

/// The pid of a child of ours that has exited, left unreaped (waitid(2)
/// P_ALL with WEXITED | WNOHANG | WNOWAIT); None when none has, or on
/// error (no child). rustix's waitid returns the status without the pid.
pub fn peek_exited_child() -> Option<Pid> {
    let mut info = std::mem::MaybeUninit::<libc::siginfo_t>::zeroed();
    let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
    // SAFETY: waitid fills the siginfo_t, zeroed before (si_pid stays 0
    // when no child has exited).
    if unsafe { libc::waitid(libc::P_ALL, 0, info.as_mut_ptr(), flags) } != 0 {
        return None;
    }
    // SAFETY: zeroed, then written by waitid; si_pid reads the sigchld
    // fields waitid fills.
    let pid = unsafe { info.assume_init().si_pid() };
    Pid::from_raw(pid)
}

/// Whether the process a pidfd names still exists (pidfd_send_signal(2)
/// with signal 0, which checks without sending): rustix's Signal cannot
/// be 0.
pub fn pidfd_alive(pidfd: BorrowedFd<'_>) -> bool {
    // SAFETY: pidfd_send_signal with a borrowed (open) pidfd, signal 0, no
    // siginfo and no flags reads no memory.
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            0,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        ) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocked_signal_is_unblocked_and_the_mask_restored() {
        let before = block_signals(&[Signal::USR2]).unwrap();
        let during = unblock_signals(&[Signal::USR2]).unwrap();
        set_signal_mask(&before);
        // SAFETY: sigismember reads an initialised set.
        let member = unsafe { libc::sigismember(&during.0, libc::SIGUSR2) };
        assert_eq!(member, 1, "blocked in between");
    }

    #[test]
    fn a_pidfd_is_alive_until_its_process_is_reaped() {
        let mut c = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let fd =
            rustix::process::pidfd_open(Pid::from_child(&c), rustix::process::PidfdFlags::empty())
                .unwrap();
        use std::os::fd::AsFd;
        assert!(pidfd_alive(fd.as_fd()));
        c.kill().unwrap();
        c.wait().unwrap();
        assert!(!pidfd_alive(fd.as_fd()));
    }
}
