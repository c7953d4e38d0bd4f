//! The source address of an outgoing connection: ssh_config's BindAddress
//! (`-b`), else BindInterface (`-B`: the interface's own address), for the
//! family of the address being dialled. As in ssh, BindAddress wins when
//! both are set, and neither applies through a ProxyCommand.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

/// Why no source address could be chosen; `Display` gives ssh's words.
#[derive(Debug)]
pub enum LocalAddrError {
    /// BindAddress does not resolve.
    Resolve {
        /// BindAddress as given.
        host: String,
        /// getaddrinfo's reason.
        error: std::io::Error,
    },
    /// BindAddress has no address of the target's family.
    AddressFamily {
        /// BindAddress as given.
        host: String,
        /// The address being dialled.
        target: IpAddr,
    },
    /// BindInterface names no interface, or one without an address.
    NoInterface(String),
    /// BindInterface has no address of the target's family (or scope).
    InterfaceFamily {
        /// BindInterface as given.
        name: String,
        /// The address being dialled.
        target: IpAddr,
    },
    /// getifaddrs(3) failed.
    Getifaddrs(std::io::Error),
}

impl std::fmt::Display for LocalAddrError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LocalAddrError::Resolve { host, error } => write!(f, "getaddrinfo: {host}: {error}"),
            LocalAddrError::AddressFamily { host, target } => write!(
                f,
                "getaddrinfo: {host}: no address of the family of {target}"
            ),
            LocalAddrError::NoInterface(name) => write!(
                f,
                "BindInterface {name}: no such interface or no address on it"
            ),
            LocalAddrError::InterfaceFamily { name, target } => write!(
                f,
                "BindInterface {name}: no address of the family of {target}"
            ),
            LocalAddrError::Getifaddrs(e) => write!(f, "getifaddrs: {e}"),
        }
    }
}

impl std::error::Error for LocalAddrError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LocalAddrError::Resolve { error: e, .. } | LocalAddrError::Getifaddrs(e) => Some(e),
            _ => None,
        }
    }
}

/// The address to bind before connecting to `target` (port 0: any), or
/// None when neither setting is given.
pub fn for_target(
    target: &SocketAddr,
    address: Option<&str>,
    interface: Option<&str>,
) -> Result<Option<SocketAddr>, LocalAddrError> {
    let same_family = |ip: &IpAddr| ip.is_ipv4() == target.is_ipv4();
    if let Some(a) = address {
        let found = (a, 0)
            .to_socket_addrs()
            .map_err(|error| LocalAddrError::Resolve {
                host: a.to_owned(),
                error,
            })?
            .find(|s| same_family(&s.ip()));
        return found
            .map(Some)
            .ok_or_else(|| LocalAddrError::AddressFamily {
                host: a.to_owned(),
                target: target.ip(),
            });
    }
    let Some(name) = interface else {
        return Ok(None);
    };
    let addrs = interface_addrs(Some(name))?;
    if addrs.is_empty() {
        return Err(LocalAddrError::NoInterface(name.to_owned()));
    }
    // As ssh: an IPv6 link-local address only for a link-local target.
    let link_local =
        |ip: &IpAddr| matches!(ip, IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80);
    let want_ll = link_local(&target.ip());
    addrs
        .into_iter()
        .find(|ip| same_family(ip) && link_local(ip) == want_ll)
        .map(|ip| Some(SocketAddr::new(ip, 0)))
        .ok_or_else(|| LocalAddrError::InterfaceFamily {
            name: name.to_owned(),
            target: target.ip(),
        })
}

/// The addresses of interface `name`, or of every interface (getifaddrs(3)).
pub fn interface_addrs(name: Option<&str>) -> Result<Vec<IpAddr>, LocalAddrError> {
    let all = crate::sys::ifaddrs::addresses().map_err(LocalAddrError::Getifaddrs)?;
    Ok(all
        .into_iter()
        .filter(|(n, _)| name.is_none_or(|name| n.as_slice() == name.as_bytes()))
        .map(|(_, ip)| ip)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_or_the_interfaces_address_of_the_targets_family() {
        let v4: SocketAddr = "127.0.0.1:22".parse().unwrap();
        assert_eq!(for_target(&v4, None, None).unwrap(), None);
        assert_eq!(
            for_target(&v4, Some("127.0.0.2"), Some("lo")).unwrap(),
            Some("127.0.0.2:0".parse().unwrap())
        );
        assert_eq!(
            for_target(&v4, None, Some("lo")).unwrap(),
            Some("127.0.0.1:0".parse().unwrap())
        );
        let e = for_target(&v4, Some("::1"), None).unwrap_err();
        assert!(
            matches!(&e, LocalAddrError::AddressFamily { host, .. } if host == "::1"),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            "getaddrinfo: ::1: no address of the family of 127.0.0.1"
        );
        let e = for_target(&v4, None, Some("nosuchif0")).unwrap_err();
        assert!(
            matches!(&e, LocalAddrError::NoInterface(n) if n == "nosuchif0"),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            "BindInterface nosuchif0: no such interface or no address on it"
        );
    }
}
