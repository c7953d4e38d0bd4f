//! Our children's ends, as the monitor sees them: the exit code of the
//! pre-auth child and the post-auth process (signals logged), with a
//! time limit or by force.

use rustix::io::Errno;
use rustix::process::{Pid, Signal, WaitOptions, WaitStatus};
use std::time::{Duration, Instant};

/// Waits for `pid`; its exit code (signals logged, 255).
pub(super) fn reap(pid: Pid, what: &str) -> i32 {
    match wait(pid) {
        Some(status) => exit_code(status, what),
        None => 255,
    }
}

/// Waits for our child `pid` (retried on EINTR); its wait status, None on
/// another error (it was reaped already).
pub(super) fn wait(pid: Pid) -> Option<WaitStatus> {
    loop {
        match rustix::process::waitpid(Some(pid), WaitOptions::empty()) {
            Ok(Some((_, status))) => return Some(status),
            // Only WNOHANG answers "nothing yet".
            Ok(None) => continue,
            Err(Errno::INTR) => continue,
            Err(_) => return None,
        }
    }
}

fn exit_code(status: WaitStatus, what: &str) -> i32 {
    if let Some(code) = status.exit_status() {
        code
    } else {
        if let Some(sig) = status.terminating_signal() {
            crate::log!(Error, "monitor: {what} killed by signal {sig}");
        }
        255
    }
}

/// The exit code of `pid` if it ends within `limit`; killed otherwise.
pub(super) fn reap_within(pid: Pid, limit: Duration) -> Option<i32> {
    let end = Instant::now() + limit;
    loop {
        match rustix::process::waitpid(Some(pid), WaitOptions::NOHANG) {
            Ok(Some((_, status))) => return Some(exit_code(status, "pre-auth child")),
            Ok(None) if Instant::now() < end => {}
            Ok(None) | Err(_) => {
                kill_and_reap(pid);
                return None;
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Ends an unreaped child of ours (its pid cannot have been reused).
pub(super) fn kill_and_reap(pid: Pid) {
    let _ = rustix::process::kill_process(pid, Signal::KILL);
    let _ = wait(pid);
}
