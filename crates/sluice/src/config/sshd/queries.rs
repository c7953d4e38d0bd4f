//! What the server asks of a resolved configuration: the host key files
//! to make, ChannelTimeout's rules, the PAM service, the methods enabled,
//! AddressFamily, per-user file names, AcceptEnv, Subsystem commands and
//! the addresses to listen on.

use super::{default_host_key_paths, keyword_table, timeouts, ServerConfig};
use std::path::{Path, PathBuf};

impl ServerConfig {
    /// The host key files `sluiced -A` makes when missing: the HostKey
    /// lines (`-h` included), else the default keys beside the
    /// configuration file.
    pub fn host_key_targets(&self) -> Vec<PathBuf> {
        let given: Vec<PathBuf> = self
            .lines
            .iter()
            .filter(|l| keyword_table::canonical(&l.kw) == "hostkey" && l.active(None))
            .filter_map(|l| l.args.first().map(PathBuf::from))
            .collect();
        if given.is_empty() {
            default_host_key_paths(&self.config_dir)
        } else {
            given
        }
    }

    /// ChannelTimeout's rules in order (the first matching type wins).
    pub fn channel_timeouts(&self) -> Vec<timeouts::ChannelTimeoutRule> {
        timeouts::channel_timeout_rules(&self.channel_timeout)
    }
    /// The PAM service (UsePAM): PAMServiceName, else "sluiced" when
    /// /etc/pam.d/sluiced exists (the package's), else sshd's "sshd".
    pub fn pam_service(&self) -> String {
        if let Some(s) = &self.pam_service_name {
            return s.clone();
        }
        if Path::new("/etc/pam.d/sluiced").exists() {
            "sluiced".into()
        } else {
            "sshd".into()
        }
    }
    /// Authentication methods enabled here (PubkeyAuthentication,
    /// PasswordAuthentication, KbdInteractiveAuthentication), in sshd's
    /// order, before AuthenticationMethods is applied.
    pub fn enabled_methods(&self) -> Vec<String> {
        let mut m = Vec::new();
        for (on, name) in [
            (self.pubkey_authentication, "publickey"),
            (self.password_authentication, "password"),
            (self.kbd_interactive_authentication, "keyboard-interactive"),
        ] {
            if on {
                m.push(name.to_owned());
            }
        }
        m
    }
    /// AddressFamily allows an address of this family (listening, forwarding).
    pub fn family_allowed(&self, a: &std::net::SocketAddr) -> bool {
        self.family_filter()(a)
    }
    /// AddressFamily as a filter on addresses.
    pub fn family_filter(&self) -> fn(&std::net::SocketAddr) -> bool {
        match self.address_family.as_str() {
            "inet" => std::net::SocketAddr::is_ipv4,
            "inet6" => std::net::SocketAddr::is_ipv6,
            _ => |_| true,
        }
    }
    /// AuthorizedKeysFile with tokens expanded and relative paths under home.
    pub fn authorized_keys_files(&self, user: &str, home: &str, uid: u32) -> Vec<PathBuf> {
        self.authorized_keys_file
            .iter()
            .filter(|t| t.as_str() != "none")
            .map(|t| user_path(t, user, home, uid))
            .collect()
    }
    /// AuthorizedPrincipalsFile with tokens expanded, relative to home.
    pub fn authorized_principals_path(&self, user: &str, home: &str, uid: u32) -> Option<PathBuf> {
        let t = self.authorized_principals_file.as_ref()?;
        Some(user_path(t, user, home, uid))
    }
    /// AcceptEnv allows this variable.
    pub fn accept_env_matches(&self, name: &str) -> bool {
        self.accept_env
            .iter()
            .any(|p| crate::keys::pattern::match_pattern(name, p))
    }
    /// The command of a Subsystem.
    pub fn subsystem_command(&self, name: &str) -> Option<String> {
        self.subsystems
            .iter()
            .find(|(s, _)| s == name)
            .map(|(_, c)| c.clone())
    }
    /// Addresses to listen on.
    pub fn listen_addrs(&self) -> Result<Vec<std::net::SocketAddr>, ListenError> {
        use std::net::ToSocketAddrs;
        let hosts: Vec<String> = if self.listen.is_empty() {
            match self.address_family.as_str() {
                "inet" => vec!["0.0.0.0".into()],
                "inet6" => vec!["::".into()],
                _ => vec!["0.0.0.0".into(), "::".into()],
            }
        } else {
            self.listen.clone()
        };
        let mut out = Vec::new();
        for h in hosts {
            let (host, port) = split_host_port(&h);
            let ports = match port {
                Some(p) => vec![p],
                None => self.ports.clone(),
            };
            for p in ports {
                let addrs: Vec<_> = (host.as_str(), p)
                    .to_socket_addrs()
                    .map_err(|error| ListenError::Resolve {
                        addr: h.clone(),
                        error,
                    })?
                    .filter(|a| self.family_allowed(a))
                    .collect();
                if addrs.is_empty() {
                    return Err(ListenError::NoAddressOfFamily {
                        addr: h,
                        family: self.address_family.clone(),
                    });
                }
                out.extend(addrs);
            }
        }
        Ok(out)
    }
}

/// `host`, `host:port`, `[v6]:port`, bare v6.
/// A ListenAddress that gives nothing to listen on.
#[derive(Debug)]
pub enum ListenError {
    /// The name does not resolve: `ListenAddress ADDR: ERROR`.
    Resolve {
        /// The ListenAddress as written.
        addr: String,
        /// The resolver's error.
        error: std::io::Error,
    },
    /// No address of the family AddressFamily allows.
    NoAddressOfFamily {
        /// The ListenAddress as written.
        addr: String,
        /// AddressFamily.
        family: String,
    },
}

impl std::fmt::Display for ListenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListenError::Resolve { addr, error } => write!(f, "ListenAddress {addr}: {error}"),
            ListenError::NoAddressOfFamily { addr, family } => write!(
                f,
                "ListenAddress {addr}: no address of the family AddressFamily {family} allows"
            ),
        }
    }
}

impl std::error::Error for ListenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ListenError::Resolve { error, .. } => Some(error),
            ListenError::NoAddressOfFamily { .. } => None,
        }
    }
}

fn split_host_port(s: &str) -> (String, Option<u16>) {
    if let Some(rest) = s.strip_prefix('[') {
        if let Some((h, p)) = rest.split_once("]:") {
            return (h.to_owned(), p.parse().ok());
        }
        return (rest.trim_end_matches(']').to_owned(), None);
    }
    match s.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => (h.to_owned(), p.parse().ok()),
        _ => (s.to_owned(), None),
    }
}

/// A per-user file name (AuthorizedKeysFile, AuthorizedPrincipalsFile):
/// %% %h %u %U expanded, relative names under the home directory.
fn user_path(template: &str, user: &str, home: &str, uid: u32) -> PathBuf {
    let s = template
        .replace("%%", "\0")
        .replace("%h", home)
        .replace("%u", user)
        .replace("%U", &uid.to_string())
        .replace('\0', "%");
    if s.starts_with('/') {
        PathBuf::from(s)
    } else {
        Path::new(home).join(s)
    }
}
