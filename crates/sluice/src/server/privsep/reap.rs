//! Our children's ends, as the monitor sees them: the exit code of the
//! pre-auth child and the post-auth process (signals logged), with a
//! time limit or by force.

use std::time::{Duration, Instant};

/// Waits for `pid`; its exit code (signals logged, 255).
pub(super) fn reap(pid: libc::pid_t, what: &str) -> i32 {
    let mut status = 0;
    // SAFETY: waiting for our own child.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return 255;
        }
    }
    exit_code(status, what)
}

fn exit_code(status: libc::c_int, what: &str) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        if libc::WIFSIGNALED(status) {
            crate::log!(
                Error,
                "monitor: {what} killed by signal {}",
                libc::WTERMSIG(status)
            );
        }
        255
    }
}

/// The exit code of `pid` if it ends within `limit`; killed otherwise.
pub(super) fn reap_within(pid: libc::pid_t, limit: Duration) -> Option<i32> {
    let end = Instant::now() + limit;
    loop {
        let mut status = 0;
        // SAFETY: polling our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            return Some(exit_code(status, "pre-auth child"));
        }
        if r < 0 || Instant::now() >= end {
            kill_and_reap(pid);
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Ends an unreaped child of ours (its pid cannot have been reused).
pub(super) fn kill_and_reap(pid: libc::pid_t) {
    // SAFETY: our own child, not yet reaped.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let mut status = 0;
    // SAFETY: reaping it.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
    {}
}
