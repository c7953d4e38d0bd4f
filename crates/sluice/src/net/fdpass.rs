//! One descriptor at a time over a stream Unix socket, as OpenSSH's
//! multiplexing passes a passenger's stdin, stdout and stderr: each rides
//! on one byte of data with an SCM_RIGHTS message. The receiver must read
//! exactly the bytes before it with plain reads (a read that reaches the
//! descriptor's byte without a control buffer loses the descriptor).

use rustix::event::PollFlags;
use rustix::io::Errno;
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};
use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::Duration;

/// Room for one SCM_RIGHTS header and a few descriptors (12: more than one
/// are received, and closed, rather than cut off).
const CMSG_ROOM: usize = rustix::cmsg_space!(ScmRights(12));

/// Sends `fd` (the receiver gets its own copy) with one zero byte.
pub fn send_fd(sock: &impl AsFd, fd: BorrowedFd<'_>) -> io::Result<()> {
    let byte = [0u8];
    let fds = [fd];
    let mut space = [MaybeUninit::uninit(); CMSG_ROOM];
    loop {
        let mut cbuf = SendAncillaryBuffer::new(&mut space);
        cbuf.push(SendAncillaryMessage::ScmRights(&fds));
        match rustix::net::sendmsg(sock, &[IoSlice::new(&byte)], &mut cbuf, SendFlags::NOSIGNAL) {
            Ok(1) => return Ok(()),
            Ok(_) => return Err(io::Error::other("short sendmsg")),
            Err(Errno::INTR) => continue,
            Err(Errno::AGAIN) => crate::sys::fdio::wait(sock.as_fd(), PollFlags::OUT, None)?,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Receives one descriptor sent by [`send_fd`], waiting at most `timeout`
/// (a blocking or non-blocking socket alike). The descriptor is
/// close-on-exec; a message with none, or with more than one, is an error
/// (extra descriptors are closed).
pub fn recv_fd(sock: &impl AsFd, timeout: Duration) -> io::Result<OwnedFd> {
    let mut byte = [0u8];
    let mut space = [MaybeUninit::uninit(); CMSG_ROOM];
    loop {
        let mut cbuf = RecvAncillaryBuffer::new(&mut space);
        let r = rustix::net::recvmsg(
            sock,
            &mut [IoSliceMut::new(&mut byte)],
            &mut cbuf,
            RecvFlags::CMSG_CLOEXEC,
        );
        let msg = match r {
            Ok(msg) => msg,
            Err(Errno::INTR) => continue,
            Err(Errno::AGAIN) => {
                crate::sys::fdio::wait(sock.as_fd(), PollFlags::IN, Some(timeout))?;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let mut fds: Vec<OwnedFd> = Vec::new();
        for m in cbuf.drain() {
            if let RecvAncillaryMessage::ScmRights(got) = m {
                fds.extend(got);
            }
        }
        if msg.bytes == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        if fds.len() != 1 || msg.flags.contains(ReturnFlags::CTRUNC) {
            return Err(io::Error::other(format!(
                "expected one descriptor, got {}",
                fds.len()
            )));
        }
        return Ok(fds.remove(0));
    }
}

/// The uid of the process at the other end of a Unix socket.
pub fn peer_uid(sock: &impl AsFd) -> io::Result<u32> {
    Ok(rustix::net::sockopt::socket_peercred(sock)?.uid.as_raw())
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
        send_fd(&a, w.as_fd()).unwrap();
        send_fd(&a, w.as_fd()).unwrap();
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
        assert_eq!(peer_uid(&b).unwrap(), rustix::process::getuid().as_raw());
    }
}
