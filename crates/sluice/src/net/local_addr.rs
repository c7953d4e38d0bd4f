//! The source address of an outgoing connection: ssh_config's BindAddress
//! (`-b`), else BindInterface (`-B`: the interface's own address), for the
//! family of the address being dialled. As in ssh, BindAddress wins when
//! both are set, and neither applies through a ProxyCommand.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

/// The address to bind before connecting to `target` (port 0: any), or
/// None when neither setting is given.
pub fn for_target(
    target: &SocketAddr,
    address: Option<&str>,
    interface: Option<&str>,
) -> Result<Option<SocketAddr>, String> {
    let same_family = |ip: &IpAddr| ip.is_ipv4() == target.is_ipv4();
    if let Some(a) = address {
        let found = (a, 0)
            .to_socket_addrs()
            .map_err(|e| format!("getaddrinfo: {a}: {e}"))?
            .find(|s| same_family(&s.ip()));
        return found.map(Some).ok_or_else(|| {
            format!(
                "getaddrinfo: {a}: no address of the family of {}",
                target.ip()
            )
        });
    }
    let Some(name) = interface else {
        return Ok(None);
    };
    let addrs = interface_addrs(Some(name))?;
    if addrs.is_empty() {
        return Err(format!(
            "BindInterface {name}: no such interface or no address on it"
        ));
    }
    // As ssh: an IPv6 link-local address only for a link-local target.
    let link_local =
        |ip: &IpAddr| matches!(ip, IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80);
    let want_ll = link_local(&target.ip());
    addrs
        .into_iter()
        .find(|ip| same_family(ip) && link_local(ip) == want_ll)
        .map(|ip| Some(SocketAddr::new(ip, 0)))
        .ok_or_else(|| {
            format!(
                "BindInterface {name}: no address of the family of {}",
                target.ip()
            )
        })
}

/// The addresses of interface `name`, or of every interface (getifaddrs(3)).
pub fn interface_addrs(name: Option<&str>) -> Result<Vec<IpAddr>, String> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list we free below.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(format!("getifaddrs: {}", std::io::Error::last_os_error()));
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
        let n = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) };
        if name.is_some_and(|name| n.to_bytes() != name.as_bytes()) {
            continue;
        }
        // SAFETY: ifa_addr points to a sockaddr whose family says its size.
        let family = i32::from(unsafe { (*ifa.ifa_addr).sa_family });
        if family == libc::AF_INET {
            // SAFETY: an AF_INET sockaddr is a sockaddr_in.
            let sin = unsafe { &*ifa.ifa_addr.cast::<libc::sockaddr_in>() };
            out.push(IpAddr::from(
                u32::from_be(sin.sin_addr.s_addr).to_be_bytes(),
            ));
        } else if family == libc::AF_INET6 {
            // SAFETY: an AF_INET6 sockaddr is a sockaddr_in6.
            let sin6 = unsafe { &*ifa.ifa_addr.cast::<libc::sockaddr_in6>() };
            out.push(IpAddr::from(sin6.sin6_addr.s6_addr));
        }
    }
    // SAFETY: `head` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_or_the_interfaces_address_of_the_targets_family() {
        let v4: SocketAddr = "127.0.0.1:22".parse().unwrap();
        assert_eq!(for_target(&v4, None, None), Ok(None));
        assert_eq!(
            for_target(&v4, Some("127.0.0.2"), Some("lo")),
            Ok(Some("127.0.0.2:0".parse().unwrap()))
        );
        assert_eq!(
            for_target(&v4, None, Some("lo")),
            Ok(Some("127.0.0.1:0".parse().unwrap()))
        );
        assert!(for_target(&v4, Some("::1"), None).is_err());
        let e = for_target(&v4, None, Some("nosuchif0")).unwrap_err();
        assert!(e.contains("nosuchif0"), "{e}");
    }
}
