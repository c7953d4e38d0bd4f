//! Thin, non-panicking wrappers over the fd system calls the data path uses,
//! reading into a `Vec`'s spare capacity so no buffer is zero-filled first.
//!
//! They take descriptors by number, as the pump holds them: one poll set
//! mixes the connection's socket, each channel's fds (owned by the channel
//! or lent by the caller: our own stdin and stdout) and the handler's (its
//! listeners, signal pipe, terminal), whose owners all outlive the loop.
//! None of these calls can break memory safety whatever the number (a
//! closed one is EBADF); giving the pump owned or borrowed descriptors
//! throughout is the step after this one.

use std::io;
use std::os::fd::RawFd;

/// Sets or clears O_NONBLOCK; returns the previous flags for restoring.
pub fn set_nonblocking(fd: RawFd, on: bool) -> io::Result<i32> {
    // SAFETY: fcntl on an fd we were given; no memory is passed.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    let new = if on {
        flags | libc::O_NONBLOCK
    } else {
        flags & !libc::O_NONBLOCK
    };
    // SAFETY: as above.
    if new != flags && unsafe { libc::fcntl(fd, libc::F_SETFL, new) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(flags)
}

/// Restores flags saved by [`set_nonblocking`].
pub fn restore_flags(fd: RawFd, flags: i32) {
    // SAFETY: fcntl with integer flags only.
    unsafe { libc::fcntl(fd, libc::F_SETFL, flags) };
}

/// Reads up to `max` bytes appended to `buf` without initialising them first.
/// Ok(0) is end of file; WouldBlock when nothing is ready.
pub fn read_append(fd: RawFd, buf: &mut Vec<u8>, max: usize) -> io::Result<usize> {
    buf.reserve(max);
    let len = buf.len();
    loop {
        // SAFETY: `reserve` guarantees `max` writable bytes after `len`; the
        // kernel writes at most `max`, and only the bytes it reports become part of `buf`.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().add(len).cast(), max) };
        if n >= 0 {
            // SAFETY: the kernel initialised exactly `n` bytes.
            unsafe { buf.set_len(len + n as usize) };
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Writes as much of `data` as the fd takes now.
pub fn write_some(fd: RawFd, data: &[u8]) -> io::Result<usize> {
    loop {
        // SAFETY: `data` is a valid slice for its length.
        let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Writes `parts` in order with one writev(2), without blocking on a
/// non-blocking fd; returns the bytes taken (a prefix of the parts joined).
/// Empty parts are skipped.
pub fn write_parts(fd: RawFd, parts: [&[u8]; 2]) -> io::Result<usize> {
    if parts[1].is_empty() {
        return write_some(fd, parts[0]);
    }
    let iov = parts.map(io::IoSlice::new);
    loop {
        // SAFETY: std guarantees `IoSlice` is ABI-compatible with `struct
        // iovec` on Unix; both slices are valid for their lengths and the
        // kernel only reads them.
        let n = unsafe { libc::writev(fd, iov.as_ptr().cast(), iov.len() as libc::c_int) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// poll(2) over `fds`, retrying on EINTR; `timeout_ms` < 0 waits forever.
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> io::Result<usize> {
    loop {
        // SAFETY: `fds` is a valid, exclusively borrowed array of pollfd.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Shuts down the write side of socket `fd` (the far end sees EOF while
/// it can still send); errors (not a socket, not connected) are ignored.
pub fn shutdown_write(fd: RawFd) {
    // SAFETY: shutdown(2) takes no memory.
    unsafe { libc::shutdown(fd, libc::SHUT_WR) };
}

/// True if the error only means "try again later".
pub fn would_block(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
}

/// Asks the kernel to acknowledge what a TCP socket has received now rather
/// than after the delayed-ACK timer (TCP_QUICKACK; the kernel clears it again
/// by itself). A peer with Nagle on (OpenSSH when no tty is asked for) holds a
/// small packet until the one before it is acknowledged, so a delayed ACK
/// costs it up to 40 ms per such pair. False when the fd is not a TCP socket
/// (a pipe, a Unix socket): the caller stops asking.
pub fn quick_ack(fd: RawFd) -> bool {
    set_int_opt(fd, libc::IPPROTO_TCP, libc::TCP_QUICKACK, 1)
}

/// setsockopt with an int value; false when the socket refuses it.
pub fn set_int_opt(fd: RawFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> bool {
    // SAFETY: setsockopt reads one c_int from `value`.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    r == 0
}

/// Enlarges a pipe's buffer (F_SETPIPE_SZ) so bulk data moves in large
/// writes; the kernel caps it at /proc/sys/fs/pipe-max-size. Best effort.
pub fn set_pipe_size(fd: RawFd, size: usize) {
    // SAFETY: fcntl with an integer argument; failure is harmless.
    unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, size as libc::c_int) };
}

/// Waits for `events` on `fd` (poll(2), retried on EINTR; `None` waits
/// for ever); a timeout is an error.
pub fn wait(
    fd: std::os::fd::BorrowedFd<'_>,
    events: rustix::event::PollFlags,
    timeout: Option<std::time::Duration>,
) -> io::Result<()> {
    // As many whole milliseconds as poll(2)'s int takes, as before.
    let ts = timeout.map(|t| {
        let ms = t.as_millis().min(i32::MAX as u128) as i64;
        rustix::event::Timespec {
            tv_sec: ms / 1000,
            tv_nsec: (ms % 1000) * 1_000_000,
        }
    });
    loop {
        let mut p = [rustix::event::PollFd::from_borrowed_fd(fd, events)];
        match rustix::event::poll(&mut p, ts.as_ref()) {
            Ok(0) => return Err(io::ErrorKind::TimedOut.into()),
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}
