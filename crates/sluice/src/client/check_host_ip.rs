//! CheckHostIP (ssh_config(5)): besides the host's name, the address the
//! connection reached is looked up in known_hosts. A new address is added
//! beside a known name (ssh's "Permanently added the ... host key for IP
//! address" warning), a name added at the prompt is added with its
//! address, and an address known with another key is warned of (refused
//! under StrictHostKeyChecking yes), as ssh 9.2 does. Off with a proxy, a
//! HostKeyAlias, a host given as an address or a loopback peer (ssh turns
//! it off there too).

use crate::config::ssh::Resolved;
use crate::keys::known_hosts::{self, HostKeyStatus};
use crate::log;
use std::path::PathBuf;

/// Whether CheckHostIP applies to this destination (the address itself is
/// read when the check runs: the connection is made by then).
pub(super) fn enabled(r: &Resolved, host: &str) -> bool {
    let set = |k: &str| r.get(k).is_some_and(|v| !v.eq_ignore_ascii_case("none"));
    if !r.flag("checkhostip", false)
        || set("proxycommand")
        || set("proxyjump")
        || r.get("hostkeyalias").is_some()
        || host
            .trim_matches(|c| c == '[' || c == ']')
            .parse::<std::net::IpAddr>()
            .is_ok()
    {
        return false;
    }
    true
}

/// The peer's address once connected; never a loopback one (ssh does not
/// store an address for localhost).
fn peer() -> Option<String> {
    super::PEER_IP
        .get()
        .filter(|ip| !ip.is_loopback())
        .map(|ip| ip.to_string())
}

/// The name was found with this key: check (and learn) the address.
#[allow(clippy::too_many_arguments)]
pub(super) fn after_known(
    files: &[PathBuf],
    user_files: &[PathBuf],
    (host, port): (&str, u16),
    blob: &[u8],
    shown: &str,
    strict: &str,
    batch: bool,
    hash: bool,
) -> Result<(), crate::client::error::HostKeyError> {
    let name = known_hosts::host_name(host, port);
    let Some(ip) = peer() else { return Ok(()) };
    let ip_name = known_hosts::host_name(&ip, port);
    match known_hosts::check(files, &ip, port, blob) {
        HostKeyStatus::Known => Ok(()),
        HostKeyStatus::Unknown => {
            if let Some(f) = user_files.first() {
                if known_hosts::append(f, &ip, port, blob, hash).is_ok() {
                    log!(
                        Info,
                        "Warning: Permanently added the {shown} host key for IP address '{ip_name}' to the list of known hosts."
                    );
                }
            }
            Ok(())
        }
        HostKeyStatus::Changed { file, line } => {
            let matching = known_hosts::find_key(files, host, port, blob)
                .map(|(f, l)| format!("\nMatching host key in {}:{l}", f.display()))
                .unwrap_or_default();
            log!(
                Info,
                "Warning: the {shown} host key for '{name}' differs from the key for the IP address '{ip_name}'\nOffending key for IP in {}:{line}{matching}",
                file.display()
            );
            // As ssh: accept-new is strict about a changed key too.
            let refuse = match strict {
                "yes" | "accept-new" => true,
                "no" | "off" => false,
                _ => batch || !confirm(),
            };
            if refuse {
                return Err(crate::client::error::HostKeyError::AddressChangedStrict);
            }
            Ok(())
        }
        HostKeyStatus::Revoked => Ok(()),
    }
}

/// The address to add with a new name: the peer's, unless it is already
/// known with this key.
pub(super) fn new_address(files: &[PathBuf], port: u16, blob: &[u8]) -> Option<String> {
    peer().filter(|ip| known_hosts::check(files, ip, port, blob) != HostKeyStatus::Known)
}

/// ssh's question for StrictHostKeyChecking ask, on /dev/tty.
fn confirm() -> bool {
    use std::io::{BufRead, Write};
    let Ok(tty) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
    else {
        return false;
    };
    let _ = write!(
        &tty,
        "Are you sure you want to continue connecting (yes/no)? "
    );
    let mut line = String::new();
    let _ = std::io::BufReader::new(&tty).read_line(&mut line);
    line.trim() == "yes"
}
