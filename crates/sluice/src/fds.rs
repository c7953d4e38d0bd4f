//! Descriptor hygiene, as sshd's closefrom: a process holds only the
//! descriptors it was given on purpose. sluiced closes what it inherited
//! from whatever started it (a shell, a supervisor) before it opens
//! anything, and every program it starts for a user (a command, a shell,
//! a subsystem, a pty session) gets 0, 1 and 2 and nothing else, whatever
//! the server held at the time: the monitor's socket, a listener, a
//! socket of another channel.

use crate::sys::fd;
use std::os::fd::RawFd;

/// Closes every descriptor from 3 up except those in `keep` (descriptors
/// a parent of ours passed on purpose).
///
/// # Safety
/// For a process's start: nothing in it may own a descriptor from 3 up
/// but those in `keep`.
pub unsafe fn close_inherited(keep: &[RawFd]) {
    let mut keep: Vec<RawFd> = keep.iter().copied().filter(|f| *f > 2).collect();
    keep.sort_unstable();
    keep.dedup();
    let mut from: u32 = 3;
    for k in keep {
        let k = k as u32;
        if k > from {
            // SAFETY: this function's own precondition.
            unsafe { close_span(from, k - 1) };
        }
        from = k + 1;
    }
    // SAFETY: as above.
    unsafe { close_span(from, u32::MAX) };
}

/// Marks every descriptor from 3 up close-on-exec. For a child between
/// fork and exec (async-signal-safe: system calls only, nothing
/// allocated), so that the program run holds exactly 0, 1 and 2; std's
/// own exec-error pipe is close-on-exec already, so a failed exec is
/// still reported.
pub fn cloexec_from_3() -> std::io::Result<()> {
    cloexec_except(&[])
}

/// As [`cloexec_from_3`], except the descriptors in `keep` (sorted,
/// ascending): those a sluiced child is given on purpose.
pub fn cloexec_except(keep: &[RawFd]) -> std::io::Result<()> {
    let mut from: u32 = 3;
    for &k in keep {
        let Ok(k) = u32::try_from(k) else {
            continue;
        };
        if k > from {
            cloexec_span(from, k - 1)?;
        }
        from = from.max(k.saturating_add(1));
    }
    cloexec_span(from, u32::MAX)
}

/// Marks `first..=last` close-on-exec; async-signal-safe.
fn cloexec_span(first: u32, last: u32) -> std::io::Result<()> {
    if fd::cloexec_range(first, last).is_ok() {
        return Ok(());
    }
    // Kernels before 5.11: one fcntl per possible descriptor.
    let lim = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    // No limit (None) counts as the largest, as RLIM_INFINITY did.
    let max = lim.current.unwrap_or(u64::MAX).min(1 << 20) as u32;
    for n in first..max.min(last.saturating_add(1)) {
        fd::set_cloexec(n as RawFd)?;
    }
    Ok(())
}

/// Closes `first..=last`.
///
/// # Safety
/// Nothing in the process owns a descriptor in the range.
unsafe fn close_span(first: u32, last: u32) {
    // SAFETY: the caller's precondition.
    if unsafe { fd::close_range(first, last) }.is_ok() {
        return;
    }
    // Kernels before 5.9: the open ones, from /proc.
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    let open: Vec<u32> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|fd| (first..=last).contains(fd))
        .collect();
    // The directory's own descriptor is closed by now (the iterator was
    // consumed), so at worst EBADF.
    for n in open {
        // SAFETY: the caller's precondition.
        unsafe { fd::close(n as RawFd) };
    }
}

/// The descriptors open in this process (from /proc/self/fd), for tests
/// and diagnostics.
pub fn open_fds() -> Vec<RawFd> {
    let mut v: Vec<RawFd> = std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    // The directory's own descriptor was open while listing.
    v.retain(|&n| fd::is_open(n));
    v.sort_unstable();
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    #[test]
    fn a_child_marked_from_3_holds_only_its_stdio() {
        // A descriptor that is not close-on-exec, as one inherited would be.
        // dup(2) returns it without close-on-exec.
        let held = rustix::io::dup(std::io::stdin()).unwrap();
        let leaked = std::os::fd::AsRawFd::as_raw_fd(&held);
        assert!(leaked > 2);
        let list = |mark: bool| {
            let mut c = Command::new("/bin/sh");
            c.args(["-c", "echo $$; exec sleep 1"]);
            c.stdout(std::process::Stdio::piped());
            if mark {
                // SAFETY: cloexec_from_3 is async-signal-safe.
                unsafe { c.pre_exec(cloexec_from_3) };
            }
            let mut child = c.spawn().unwrap();
            let mut line = String::new();
            use std::io::BufRead;
            std::io::BufReader::new(child.stdout.take().unwrap())
                .read_line(&mut line)
                .unwrap();
            let pid: u32 = line.trim().parse().unwrap();
            std::thread::sleep(std::time::Duration::from_millis(100));
            let mut fds: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/fd"))
                .unwrap()
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect();
            fds.sort_unstable();
            let _ = child.kill();
            let _ = child.wait();
            fds
        };
        assert!(list(false).contains(&leaked), "the probe sees a leak");
        assert_eq!(list(true), vec![0, 1, 2]);
        drop(held);
    }
}
