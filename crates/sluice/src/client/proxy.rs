//! ProxyCommand: the command runs through `sh -c "exec ..."` with its stdin
//! and stdout on one end of a socketpair and its stderr on ours; the pump
//! uses the other end like a TCP socket (TCP_INFO just fails on it). At the
//! end the command gets SIGHUP and is reaped, as ssh does.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Child, Command, Stdio};

/// A running proxy command and our end of its socketpair.
pub struct Proxy {
    /// Our end (non-blocking).
    pub fd: OwnedFd,
    child: Child,
}

/// Starts `command` (tokens already expanded).
pub fn spawn(command: &str) -> Result<Proxy, String> {
    let mut sv = [0i32; 2];
    // SAFETY: sv has room for the two fds socketpair writes.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            sv.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(format!("socketpair: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: both fds are fresh and owned by nobody else.
    let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(sv[0]), OwnedFd::from_raw_fd(sv[1])) };
    let theirs2 = theirs.try_clone().map_err(|e| format!("dup: {e}"))?;
    let shell = std::env::var("SHELL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "/bin/sh".into());
    crate::log!(Debug1, "Executing proxy command: exec {command}");
    let child = Command::new(&shell)
        .arg("-c")
        .arg(format!("exec {command}"))
        .stdin(Stdio::from(theirs))
        .stdout(Stdio::from(theirs2))
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("proxy command {shell}: {e}"))?;
    crate::net::fdio::set_nonblocking(ours.as_raw_fd(), true)
        .map_err(|e| format!("proxy socket: {e}"))?;
    Ok(Proxy { fd: ours, child })
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // SAFETY: kill on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGHUP);
        }
        let _ = self.child.wait();
    }
}
