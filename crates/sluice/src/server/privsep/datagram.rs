//! The monitor socket itself: a SOCK_SEQPACKET socketpair and one message
//! per datagram each way (the codec of the messages is wire.rs). A
//! datagram larger than [`MAX_MSG`] is an error (MSG_TRUNC tells), never a
//! partial message.

use super::wire::{Msg, WireError, MAX_MSG};
use std::os::fd::{AsRawFd, OwnedFd};
use zeroize::Zeroizing;

/// A SOCK_SEQPACKET socketpair, close-on-exec.
pub fn socketpair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1; 2];
    // SAFETY: fds has room for two descriptors.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    use std::os::fd::FromRawFd;
    // SAFETY: socketpair returned two new descriptors we now own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Sends one message (blocking).
pub fn send(fd: &impl AsRawFd, m: &Msg) -> Result<(), WireError> {
    let b = m.encode();
    if b.len() > MAX_MSG {
        return Err(WireError::Malformed("message too long to send"));
    }
    loop {
        // SAFETY: b is valid for its length.
        let n = unsafe {
            libc::send(
                fd.as_raw_fd(),
                b.as_ptr().cast(),
                b.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if n >= 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EPIPE) | Some(libc::ECONNRESET) => return Err(WireError::Closed),
            _ => return Err(WireError::Io(e)),
        }
    }
}

/// Receives one message, waiting at most `timeout_ms` (-1: forever);
/// `Ok(None)` when the time ran out.
pub fn recv(fd: &impl AsRawFd, timeout_ms: i32) -> Result<Option<Msg>, WireError> {
    let mut p = [libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }];
    loop {
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(p.as_mut_ptr(), 1, timeout_ms) };
        if n == 0 {
            return Ok(None);
        }
        if n > 0 {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(WireError::Io(e));
        }
    }
    let mut buf = Zeroizing::new(vec![0u8; MAX_MSG]);
    loop {
        // SAFETY: buf is valid for its length; MSG_TRUNC makes the call
        // return the datagram's real length, so an oversized one is seen.
        let n = unsafe {
            libc::recv(
                fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_TRUNC,
            )
        };
        if n == 0 {
            return Err(WireError::Closed);
        }
        if n < 0 {
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ECONNRESET) => return Err(WireError::Closed),
                _ => return Err(WireError::Io(e)),
            }
        }
        let n = n as usize;
        let Some(dgram) = buf.get(..n) else {
            return Err(WireError::Malformed("message too long"));
        };
        return Msg::decode(dgram).map(Some);
    }
}
