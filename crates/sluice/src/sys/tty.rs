//! Terminals where rustix falls short: a terminal's name where /proc
//! cannot say it (ttyname_r(3)), and termios by descriptor number.
//!
//! The rest (pty allocation, window sizes, the controlling terminal,
//! termios) goes through `rustix::pty`, `rustix::termios` and
//! `rustix::process` directly.

use rustix::termios::Termios;
use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};

/// The path of the terminal open on `fd` (`/dev/pts/3`), as ttyname_r(3)
/// finds it.
///
/// Not `rustix::termios::ttyname`: that one only reads the
/// /proc/self/fd link and checks it, while glibc, when /proc is not
/// mounted or its link does not resolve (a ChrootDirectory that has
/// /dev/pts but no /proc), goes on to look for the device in /dev/pts and
/// /dev.
pub fn ttyname(fd: BorrowedFd<'_>) -> io::Result<String> {
    let mut buf = [0u8; 128];
    // SAFETY: `buf` is writable for its whole length, which is the length
    // passed; ttyname_r writes at most that many bytes, NUL included, and
    // touches no other memory.
    let r = unsafe { libc::ttyname_r(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    let name =
        CStr::from_bytes_until_nul(&buf).map_err(|_| io::Error::from_raw_os_error(libc::ERANGE))?;
    Ok(name.to_string_lossy().into_owned())
}

/// The termios of the terminal open on descriptor number `fd`
/// (tcgetattr(3), as `rustix::termios::tcgetattr` makes it).
///
/// For callers that hold only the number (client/mux_session.rs hands a
/// passenger's stdin so); rustix wants a `BorrowedFd`, which a number is
/// not. The call reads the terminal's settings and changes nothing, so a
/// number that is not open just fails with EBADF (a negative one too).
pub fn tcgetattr_of_number(fd: RawFd) -> io::Result<Termios> {
    if fd < 0 {
        // -1 cannot even be borrowed; tcgetattr(3) would say EBADF.
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    // SAFETY: the borrow lives for this one ioctl (TCGETS2) and is not kept;
    // the ioctl takes no memory of ours beyond its result, closes nothing
    // and changes nothing, and a number not open gives EBADF.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    Ok(rustix::termios::tcgetattr(fd)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::pty::{ioctl_tiocgptpeer, openpt, ptsname, unlockpt, OpenptFlags};
    use std::os::fd::AsFd;

    #[test]
    fn a_pty_slave_is_named_as_ptsname_says() {
        let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
        let master = openpt(flags).unwrap();
        unlockpt(&master).unwrap();
        let slave = ioctl_tiocgptpeer(&master, flags).unwrap();
        let want = ptsname(&master, Vec::new()).unwrap();
        assert_eq!(ttyname(slave.as_fd()).unwrap(), want.to_str().unwrap());
        // Not a terminal: the error ttyname_r gives.
        let (r, _w) = rustix::pipe::pipe().unwrap();
        assert_eq!(
            ttyname(r.as_fd()).unwrap_err().raw_os_error(),
            Some(libc::ENOTTY)
        );
        assert!(tcgetattr_of_number(slave.as_raw_fd()).is_ok());
        assert!(tcgetattr_of_number(r.as_raw_fd()).is_err());
        assert!(tcgetattr_of_number(-1).is_err());
    }
}
