//! One descriptor at a time over a stream Unix socket, as OpenSSH's
//! multiplexing passes a passenger's stdin, stdout and stderr: each rides
//! on one byte of data with an SCM_RIGHTS message. The receiver must read
//! exactly the bytes before it with plain reads (a read that reaches the
//! descriptor's byte without a control buffer loses the descriptor).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Room for one SCM_RIGHTS header and a few descriptors, aligned for
/// `cmsghdr`.
#[repr(C, align(8))]
struct CmsgBuf([u8; 64]);

/// Sends `fd` (the receiver gets its own copy) with one zero byte.
pub fn send_fd(sock: &impl AsRawFd, fd: RawFd) -> io::Result<()> {
    let byte = [0u8];
    let mut iov = libc::iovec {
        iov_base: byte.as_ptr() as *mut libc::c_void,
        iov_len: 1,
    };
    let mut cbuf = CmsgBuf([0; 64]);
    let bytes = std::mem::size_of::<libc::c_int>() as u32;
    // SAFETY: msghdr is plain data; its pointers are set to live buffers.
    let mut mh: libc::msghdr = unsafe { std::mem::zeroed() };
    mh.msg_iov = &mut iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cbuf.0.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE is a pure size computation.
    mh.msg_controllen = unsafe { libc::CMSG_SPACE(bytes) } as usize;
    // SAFETY: the control buffer holds one header and one int and is
    // aligned; CMSG_FIRSTHDR is non-null as msg_controllen covers a header.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&mh);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(bytes) as usize;
        libc::CMSG_DATA(c).cast::<libc::c_int>().write_unaligned(fd);
    }
    loop {
        // SAFETY: mh points at byte and cbuf, alive for the call.
        let n = unsafe { libc::sendmsg(sock.as_raw_fd(), &mh, libc::MSG_NOSIGNAL) };
        if n == 1 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EAGAIN) => wait(sock.as_raw_fd(), libc::POLLOUT, None)?,
            _ if n >= 0 => return Err(io::Error::other("short sendmsg")),
            _ => return Err(e),
        }
    }
}

/// Receives one descriptor sent by [`send_fd`], waiting at most `timeout`
/// (a blocking or non-blocking socket alike). The descriptor is
/// close-on-exec; a message with none, or with more than one, is an error
/// (extra descriptors are closed).
pub fn recv_fd(sock: &impl AsRawFd, timeout: Duration) -> io::Result<OwnedFd> {
    let fd = sock.as_raw_fd();
    let mut byte = [0u8];
    let mut cbuf = CmsgBuf([0; 64]);
    loop {
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        // SAFETY: msghdr is plain data; its pointers are set to live buffers.
        let mut mh: libc::msghdr = unsafe { std::mem::zeroed() };
        mh.msg_iov = &mut iov;
        mh.msg_iovlen = 1;
        mh.msg_control = cbuf.0.as_mut_ptr().cast();
        mh.msg_controllen = cbuf.0.len();
        // SAFETY: mh points at byte and cbuf, alive for the call.
        let n = unsafe { libc::recvmsg(fd, &mut mh, libc::MSG_CMSG_CLOEXEC) };
        if n < 0 {
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN) => {
                    wait(fd, libc::POLLIN, Some(timeout))?;
                    continue;
                }
                _ => return Err(e),
            }
        }
        let mut fds = take_fds(&mh);
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        if fds.len() != 1 || mh.msg_flags & libc::MSG_CTRUNC != 0 {
            return Err(io::Error::other(format!(
                "expected one descriptor, got {}",
                fds.len()
            )));
        }
        return Ok(fds.remove(0));
    }
}

/// Waits for `events` on `fd`; a timeout is an error.
fn wait(fd: RawFd, events: i16, timeout: Option<Duration>) -> io::Result<()> {
    let mut p = [libc::pollfd {
        fd,
        events,
        revents: 0,
    }];
    let ms = timeout.map_or(-1, |t| t.as_millis().min(i32::MAX as u128) as i32);
    match crate::net::fdio::poll(&mut p, ms)? {
        0 => Err(io::ErrorKind::TimedOut.into()),
        _ => Ok(()),
    }
}

/// The SCM_RIGHTS descriptors of a received message, owned (the privsep
/// monitor socket uses it too).
pub(crate) fn take_fds(mh: &libc::msghdr) -> Vec<OwnedFd> {
    let mut out = Vec::new();
    // SAFETY: mh was filled by recvmsg; the CMSG_* macros walk its control
    // buffer within msg_controllen; each SCM_RIGHTS descriptor is new and
    // ours to own.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(mh);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let head = libc::CMSG_LEN(0) as usize;
                let count = ((*c).cmsg_len as usize).saturating_sub(head)
                    / std::mem::size_of::<libc::c_int>();
                let data = libc::CMSG_DATA(c).cast::<libc::c_int>();
                for i in 0..count {
                    out.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            c = libc::CMSG_NXTHDR(mh, c);
        }
    }
    out
}

/// The uid of the process at the other end of a Unix socket.
pub fn peer_uid(sock: &impl AsRawFd) -> io::Result<u32> {
    // SAFETY: ucred is plain data filled by getsockopt.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: valid fd, pointer and length.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cred.uid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;

    #[test]
    fn descriptors_cross_after_exact_reads() {
        let (mut a, b) = UnixStream::pair().unwrap();
        let (mut r, w) = UnixStream::pair().unwrap();
        a.write_all(b"msg").unwrap();
        send_fd(&a, w.as_raw_fd()).unwrap();
        send_fd(&a, w.as_raw_fd()).unwrap();
        drop(w);
        let mut head = [0u8; 3];
        (&b).read_exact(&mut head).unwrap();
        assert_eq!(&head, b"msg");
        let one = recv_fd(&b, Duration::from_secs(1)).unwrap();
        let two = recv_fd(&b, Duration::from_secs(1)).unwrap();
        let mut s = UnixStream::from(one);
        s.write_all(b"x").unwrap();
        drop((s, two));
        let mut got = Vec::new();
        r.read_to_end(&mut got).unwrap();
        assert_eq!(got, b"x");
        // Plain data where a descriptor is wanted: an error, not a hang.
        a.write_all(b"y").unwrap();
        assert!(recv_fd(&b, Duration::from_secs(1)).is_err());
        drop(a);
        assert!(recv_fd(&b, Duration::from_secs(1)).is_err());
        // SAFETY: getuid has no preconditions.
        assert_eq!(peer_uid(&b).unwrap(), unsafe { libc::getuid() });
    }
}
