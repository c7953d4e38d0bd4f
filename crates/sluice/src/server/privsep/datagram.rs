//! The monitor socket itself: a SOCK_SEQPACKET socketpair and one message
//! per datagram each way (the codec of the messages is wire.rs). A
//! datagram larger than [`MAX_MSG`] is an error (MSG_TRUNC tells), never a
//! partial message. A message may carry descriptors (SCM_RIGHTS): the
//! monitor hands the user's process its pty that way.

use super::wire::{Msg, WireError, MAX_MSG};
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags,
    SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};
use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use zeroize::Zeroizing;

/// A SOCK_SEQPACKET socketpair, close-on-exec.
pub fn socketpair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::net::socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )?)
}

/// Most descriptors one message carries (a pty's master and slave).
const MAX_FDS: usize = 2;

/// Sends one message (blocking).
pub fn send(fd: &impl AsFd, m: &Msg) -> Result<(), WireError> {
    send_fds(fd, m, &[])
}

/// Sends one message with descriptors attached (SCM_RIGHTS, at most
/// [`MAX_FDS`]); the receiver gets its own copies.
pub fn send_fds(fd: &impl AsFd, m: &Msg, fds: &[BorrowedFd<'_>]) -> Result<(), WireError> {
    let b = m.encode();
    if b.len() > MAX_MSG || fds.len() > MAX_FDS {
        return Err(WireError::Malformed("message too long to send"));
    }
    let mut space = CmsgSpace::default();
    let mut cbuf = SendAncillaryBuffer::new(&mut space.0);
    // No control message at all when no descriptor goes (as before).
    if !fds.is_empty() && !cbuf.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(WireError::Malformed("message too long to send"));
    }
    loop {
        match rustix::net::sendmsg(fd, &[IoSlice::new(&b)], &mut cbuf, SendFlags::NOSIGNAL) {
            Ok(_) => return Ok(()),
            Err(Errno::INTR) => continue,
            Err(Errno::PIPE) | Err(Errno::CONNRESET) => return Err(WireError::Closed),
            Err(e) => return Err(WireError::Io(e.into())),
        }
    }
}

/// Room for one SCM_RIGHTS header and 12 descriptors (64 bytes), aligned
/// for `cmsghdr` so that all of it is used: a message with more than
/// [`MAX_FDS`] but at most 12 arrives whole (its descriptors owned, then
/// closed by the caller's checks); one with more is cut (MSG_CTRUNC) and
/// refused.
#[repr(C, align(8))]
struct CmsgSpace([MaybeUninit<u8>; 64]);

impl Default for CmsgSpace {
    fn default() -> Self {
        CmsgSpace([MaybeUninit::uninit(); 64])
    }
}

/// Receives one message, waiting at most `timeout_ms` (-1: forever);
/// `Ok(None)` when the time ran out. Descriptors sent with it are closed.
pub fn recv(fd: &impl AsFd, timeout_ms: i32) -> Result<Option<Msg>, WireError> {
    Ok(recv_fds(fd, timeout_ms)?.map(|(m, _)| m))
}

/// As [`recv`], with the descriptors that came with the message (owned,
/// close-on-exec). A message whose descriptors did not all fit is refused
/// (those that came are closed).
pub fn recv_fds(fd: &impl AsFd, timeout_ms: i32) -> Result<Option<(Msg, Vec<OwnedFd>)>, WireError> {
    // A negative timeout waits for ever, as poll(2)'s.
    let timeout = u32::try_from(timeout_ms).ok().map(|ms| Timespec {
        tv_sec: i64::from(ms / 1000),
        tv_nsec: i64::from(ms % 1000) * 1_000_000,
    });
    loop {
        let mut p = [PollFd::new(fd, PollFlags::IN)];
        match rustix::event::poll(&mut p, timeout.as_ref()) {
            Ok(0) => return Ok(None),
            Ok(_) => break,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(WireError::Io(e.into())),
        }
    }
    let mut buf = Zeroizing::new(vec![0u8; MAX_MSG]);
    let mut space = CmsgSpace::default();
    loop {
        let mut cbuf = RecvAncillaryBuffer::new(&mut space.0);
        // MSG_TRUNC makes the call return the datagram's real length, so
        // an oversized one is seen.
        let r = rustix::net::recvmsg(
            fd,
            &mut [IoSliceMut::new(&mut buf[..])],
            &mut cbuf,
            RecvFlags::TRUNC | RecvFlags::CMSG_CLOEXEC,
        );
        let msg = match r {
            Ok(msg) => msg,
            Err(Errno::INTR) => continue,
            Err(Errno::CONNRESET) => return Err(WireError::Closed),
            Err(e) => return Err(WireError::Io(e.into())),
        };
        // Take ownership of whatever descriptors came first, so every
        // error path below closes them.
        let mut fds = Vec::new();
        for m in cbuf.drain() {
            if let RecvAncillaryMessage::ScmRights(got) = m {
                fds.extend(got);
            }
        }
        if msg.bytes == 0 {
            return Err(WireError::Closed);
        }
        if msg.flags.contains(ReturnFlags::CTRUNC) {
            return Err(WireError::Malformed("too many descriptors"));
        }
        let Some(dgram) = buf.get(..msg.bytes) else {
            return Err(WireError::Malformed("message too long"));
        };
        return Msg::decode(dgram).map(|m| Some((m, fds)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    /// Sends `Msg::End` with `n` copies of `fd`, past send_fds's limit.
    fn send_copies(s: &OwnedFd, fd: BorrowedFd<'_>, n: usize) {
        let fds = vec![fd; n];
        let mut space = vec![MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(n))];
        let mut cbuf = SendAncillaryBuffer::new(&mut space);
        assert!(cbuf.push(SendAncillaryMessage::ScmRights(&fds)));
        let b = Msg::End.encode();
        rustix::net::sendmsg(s, &[IoSlice::new(&b)], &mut cbuf, SendFlags::empty()).unwrap();
    }

    /// Whether every copy of a pipe's write end is closed: its read end
    /// reads EOF (within a second, for a forked child's brief copy).
    fn all_closed(r: &OwnedFd) -> bool {
        let mut p = [PollFd::new(r, PollFlags::IN)];
        let limit = Timespec {
            tv_sec: 1,
            tv_nsec: 0,
        };
        rustix::event::poll(&mut p, Some(&limit)).unwrap() == 1
            && rustix::io::read(r, &mut [0u8; 1]).unwrap() == 0
    }

    #[test]
    fn descriptors_cut_off_are_refused_and_none_is_kept() {
        let (a, b) = socketpair().unwrap();
        // Two, as a pty: they arrive, close-on-exec.
        let (r, w) = rustix::pipe::pipe().unwrap();
        send_fds(&a, &Msg::End, &[w.as_fd(), w.as_fd()]).unwrap();
        let (m, fds) = recv_fds(&b, 1000).unwrap().unwrap();
        assert!(matches!(m, Msg::End));
        assert_eq!(fds.len(), 2);
        for f in &fds {
            let flags = rustix::io::fcntl_getfd(f).unwrap();
            assert!(flags.contains(rustix::io::FdFlags::CLOEXEC));
        }
        drop(fds);
        // Twelve fill the control buffer exactly: all arrive (recv closes
        // them).
        send_copies(&a, w.as_fd(), 12);
        assert!(matches!(recv(&b, 1000), Ok(Some(Msg::End))));
        // Thirteen do not fit: refused, and the ones that came are closed.
        send_copies(&a, w.as_fd(), 13);
        assert!(matches!(
            recv_fds(&b, 1000),
            Err(WireError::Malformed("too many descriptors"))
        ));
        drop(w);
        assert!(all_closed(&r), "a received copy stayed open");
        // Nothing waiting: the time runs out; a closed peer ends it.
        assert!(matches!(recv(&b, 0), Ok(None)));
        drop(a);
        assert!(matches!(recv(&b, -1), Err(WireError::Closed)));
    }

    #[test]
    fn more_than_two_descriptors_are_not_sent() {
        let (a, _b) = socketpair().unwrap();
        let f = a.as_fd();
        assert!(matches!(
            send_fds(&a, &Msg::End, &[f, f, f]),
            Err(WireError::Malformed("message too long to send"))
        ));
    }
}
