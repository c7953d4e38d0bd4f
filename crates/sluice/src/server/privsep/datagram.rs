//! The monitor socket itself: a SOCK_SEQPACKET socketpair and one message
//! per datagram each way (the codec of the messages is wire.rs). A
//! datagram larger than [`MAX_MSG`] is an error (MSG_TRUNC tells), never a
//! partial message. A message may carry descriptors (SCM_RIGHTS): the
//! monitor hands the user's process its pty that way.

use super::wire::{Msg, WireError, MAX_MSG};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
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
    // SAFETY: socketpair returned two new descriptors we now own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Most descriptors one message carries (a pty's master and slave).
const MAX_FDS: usize = 2;

/// Sends one message (blocking).
pub fn send(fd: &impl AsRawFd, m: &Msg) -> Result<(), WireError> {
    send_fds(fd, m, &[])
}

/// Sends one message with descriptors attached (SCM_RIGHTS, at most
/// [`MAX_FDS`]); the receiver gets its own copies.
pub fn send_fds(fd: &impl AsRawFd, m: &Msg, fds: &[BorrowedFd<'_>]) -> Result<(), WireError> {
    let b = m.encode();
    if b.len() > MAX_MSG || fds.len() > MAX_FDS {
        return Err(WireError::Malformed("message too long to send"));
    }
    let mut cbuf = CmsgBuf::default();
    let mut iov = libc::iovec {
        iov_base: b.as_ptr() as *mut libc::c_void,
        iov_len: b.len(),
    };
    // SAFETY: msghdr is plain data; the fields set below point at live buffers.
    let mut mh: libc::msghdr = unsafe { std::mem::zeroed() };
    mh.msg_iov = &mut iov;
    mh.msg_iovlen = 1;
    if !fds.is_empty() {
        let bytes = std::mem::size_of_val(fds) as u32;
        // SAFETY: CMSG_SPACE is a pure size computation.
        mh.msg_controllen = unsafe { libc::CMSG_SPACE(bytes) } as usize;
        mh.msg_control = cbuf.0.as_mut_ptr().cast();
        // SAFETY: the control buffer is large enough for MAX_FDS
        // descriptors (CmsgBuf) and aligned; CMSG_FIRSTHDR is non-null
        // because msg_controllen covers one header.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&mh);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(bytes) as usize;
            let data = libc::CMSG_DATA(c).cast::<libc::c_int>();
            for (i, f) in fds.iter().enumerate() {
                data.add(i).write_unaligned(f.as_raw_fd());
            }
        }
    }
    loop {
        // SAFETY: mh points at b and cbuf, both alive for the call.
        let n = unsafe { libc::sendmsg(fd.as_raw_fd(), &mh, libc::MSG_NOSIGNAL) };
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

/// Room for one SCM_RIGHTS header and [`MAX_FDS`] descriptors, aligned
/// for `cmsghdr`.
#[repr(C, align(8))]
struct CmsgBuf([u8; 64]);

impl Default for CmsgBuf {
    fn default() -> Self {
        CmsgBuf([0; 64])
    }
}

/// Receives one message, waiting at most `timeout_ms` (-1: forever);
/// `Ok(None)` when the time ran out. Descriptors sent with it are closed.
pub fn recv(fd: &impl AsRawFd, timeout_ms: i32) -> Result<Option<Msg>, WireError> {
    Ok(recv_fds(fd, timeout_ms)?.map(|(m, _)| m))
}

/// As [`recv`], with the descriptors that came with the message (owned,
/// close-on-exec).
pub fn recv_fds(
    fd: &impl AsRawFd,
    timeout_ms: i32,
) -> Result<Option<(Msg, Vec<OwnedFd>)>, WireError> {
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
    let mut cbuf = CmsgBuf::default();
    loop {
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: msghdr is plain data; the fields set point at live buffers.
        let mut mh: libc::msghdr = unsafe { std::mem::zeroed() };
        mh.msg_iov = &mut iov;
        mh.msg_iovlen = 1;
        mh.msg_control = cbuf.0.as_mut_ptr().cast();
        mh.msg_controllen = cbuf.0.len();
        // SAFETY: mh points at buf and cbuf. MSG_TRUNC makes the call
        // return the datagram's real length, so an oversized one is seen.
        let n = unsafe {
            libc::recvmsg(
                fd.as_raw_fd(),
                &mut mh,
                libc::MSG_TRUNC | libc::MSG_CMSG_CLOEXEC,
            )
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ECONNRESET) => return Err(WireError::Closed),
                _ => return Err(WireError::Io(e)),
            }
        }
        // Take ownership of whatever descriptors came first, so every
        // error path below closes them.
        let fds = crate::net::fdpass::take_fds(&mh);
        if n == 0 {
            return Err(WireError::Closed);
        }
        if mh.msg_flags & libc::MSG_CTRUNC != 0 {
            return Err(WireError::Malformed("too many descriptors"));
        }
        let n = n as usize;
        let Some(dgram) = buf.get(..n) else {
            return Err(WireError::Malformed("message too long"));
        };
        return Msg::decode(dgram).map(|m| Some((m, fds)));
    }
}
