//! The services database (/etc/services, through NSS): a service name's
//! TCP port, as ssh's a2port reads it (libc's getservbyname; not in
//! rustix).

use std::ffi::CStr;

/// The TCP port of the service `name` (`ssh` is 22), None when unknown.
pub fn tcp_port(name: &CStr) -> Option<u16> {
    // SAFETY: valid C strings; getservbyname returns NULL or a pointer to
    // static storage, read at once below.
    let p = unsafe { libc::getservbyname(name.as_ptr(), c"tcp".as_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: p is non-NULL and points at a servent.
    Some(u16::from_be(unsafe { (*p).s_port } as u16))
}
