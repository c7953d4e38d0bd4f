//! A child process made by fork(2), and the way a forked child leaves
//! (_exit(2)): rustix has no fork, and its exit is for programs without
//! libc.
//!
//! # After fork
//! A child forked from a process with other threads has one thread and
//! the memory of the others as they were: a lock one of them held (the
//! allocator's, the log's) stays held for good. Until it execs or leaves
//! with [`exit_now`], such a child may only make async-signal-safe calls
//! (raw system calls, rustix's, no allocation, no formatting, no `Mutex`).
//! A child forked before any thread started may run ordinary code.

use rustix::process::Pid;
use std::io;

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
/// out, or a watchdog thread's).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit(2) takes an integer and never returns.
    unsafe { libc::_exit(code) }
}
