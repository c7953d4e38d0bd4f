//! Socket options that rustix does not read: the device a socket is bound
//! to (SO_BINDTODEVICE).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// The name of the device `sock` is bound to (getsockopt SO_BINDTODEVICE;
/// a VRF under `ip vrf exec`), empty when it is bound to none.
pub fn bound_device(sock: BorrowedFd<'_>) -> io::Result<Vec<u8>> {
    let mut buf = [0u8; libc::IFNAMSIZ];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: the buffer and its length are valid for the call, which
    // writes at most `len` bytes and updates `len`.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_BINDTODEVICE,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let name = buf.get(..len as usize).unwrap_or_default();
    Ok(name.split(|b| *b == 0).next().unwrap_or_default().to_vec())
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;

    #[test]
    fn an_unbound_socket_names_no_device() {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_eq!(super::bound_device(s.as_fd()).unwrap(), b"");
    }
}
