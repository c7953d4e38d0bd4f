//! A TCP socket's state for the path measurements: the bytes in its send
//! queue (SIOCOUTQ), its receive queue (FIONREAD) and the raw TCP_INFO
//! record; and the one option the level controller sets
//! (TCP_NOTSENT_LOWAT). rustix offers none of them.
//!
//! They take a descriptor by number, as the pump holds its socket: reading
//! from a number changes nothing, the option is set only on the pump's own
//! socket, and one that is not a socket (a ProxyCommand's pipe) or not
//! open is an error, not a fault.

use std::os::fd::RawFd;

/// Bytes in the socket's send queue, sent or not, not yet acknowledged
/// (ioctl SIOCOUTQ, TIOCOUTQ's number); None when `fd` is not a socket.
pub fn send_queue(fd: RawFd) -> Option<u64> {
    let mut n: libc::c_int = 0;
    // SAFETY: TIOCOUTQ (SIOCOUTQ) writes one int to the pointer, ours.
    let r = unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut n) };
    (r == 0).then_some(u64::try_from(n).unwrap_or(0))
}

/// getsockopt(IPPROTO_TCP, TCP_INFO) into `buf`: the bytes the kernel
/// wrote (its struct tcp_info, as long as this kernel's, cut at
/// `buf.len()`); None when `fd` is not a TCP socket.
pub fn tcp_info(fd: RawFd, buf: &mut [u8]) -> Option<usize> {
    let mut len = libc::socklen_t::try_from(buf.len()).unwrap_or(libc::socklen_t::MAX);
    // SAFETY: getsockopt writes at most `len` bytes into `buf`, which is
    // that long, and the length back into `len`.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    (r == 0).then_some((len as usize).min(buf.len()))
}

/// Bytes waiting in socket `fd`'s receive queue, not yet read
/// (FIONREAD, alias SIOCINQ); None when the call fails.
pub fn recv_queue(fd: RawFd) -> Option<u64> {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int to the pointer, a live local.
    let r = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) };
    (r == 0).then_some(u64::try_from(n).unwrap_or(0))
}

/// setsockopt(IPPROTO_TCP, TCP_NOTSENT_LOWAT): the socket takes more data
/// (and polls writable) only while fewer than `bytes` of it are unsent; 0
/// gives the system's setting back (net.ipv4.tcp_notsent_lowat, no limit
/// by default). Which rustix does not offer. False when the call fails
/// (not a TCP socket).
pub fn set_notsent_lowat(fd: RawFd, bytes: u32) -> bool {
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: setsockopt reads one int from the pointer, ours, of the
    // length given.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NOTSENT_LOWAT,
            std::ptr::from_ref(&v).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    r == 0
}
