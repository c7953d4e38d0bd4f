//! The addresses of the network interfaces (getifaddrs(3), which rustix
//! does not offer), as plain (name, address) pairs.

use std::io;
use std::net::IpAddr;

/// Every interface's IPv4 and IPv6 addresses with the interface's name, in
/// getifaddrs(3)'s order; entries without an address, or of another
/// family, are left out.
pub fn addresses() -> io::Result<Vec<(Vec<u8>, IpAddr)>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list we free below.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out = Vec::new();
    let mut p = head;
    while !p.is_null() {
        // SAFETY: `p` is a node of the list getifaddrs returned, not yet freed.
        let ifa = unsafe { &*p };
        p = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) };
        // SAFETY: ifa_addr points to a sockaddr whose family says its size.
        let family = i32::from(unsafe { (*ifa.ifa_addr).sa_family });
        let ip = if family == libc::AF_INET {
            // SAFETY: an AF_INET sockaddr is a sockaddr_in.
            let sin = unsafe { &*ifa.ifa_addr.cast::<libc::sockaddr_in>() };
            IpAddr::from(u32::from_be(sin.sin_addr.s_addr).to_be_bytes())
        } else if family == libc::AF_INET6 {
            // SAFETY: an AF_INET6 sockaddr is a sockaddr_in6.
            let sin6 = unsafe { &*ifa.ifa_addr.cast::<libc::sockaddr_in6>() };
            IpAddr::from(sin6.sin6_addr.s6_addr)
        } else {
            continue;
        };
        out.push((name.to_bytes().to_vec(), ip));
    }
    // SAFETY: `head` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn loopback_has_its_address() {
        let all = super::addresses().unwrap();
        assert!(
            all.iter()
                .any(|(n, ip)| n.as_slice() == b"lo" && ip.is_loopback()),
            "{all:?}"
        );
    }
}
