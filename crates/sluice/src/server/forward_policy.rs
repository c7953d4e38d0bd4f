//! What sluiced lets a client forward, from sshd_config (AllowTcpForwarding,
//! AllowStreamLocalForwarding, DisableForwarding, PermitOpen, PermitListen,
//! GatewayPorts) and the key's authorized_keys options (no-port-forwarding,
//! permitopen=, permitlisten=), as sshd decides it; and Unix-socket operations done with
//! the user's filesystem credentials.

use crate::config::sshd::ServerConfig as Sshd;
use crate::keys::authorized_keys::KeyOptions;
use crate::server::session::UserInfo;

/// Why a forward is refused: the setting an admin would change.
pub type Refusal = &'static str;

fn allows(setting: &str, direction: &str) -> bool {
    matches!(setting.to_ascii_lowercase().as_str(), "yes" | "all") || setting == direction
}

/// Forwarding in `direction` ("local" or "remote") of TCP or Unix sockets.
pub fn forwarding_allowed(
    cfg: &Sshd,
    key: Option<&KeyOptions>,
    unix: bool,
    direction: &str,
) -> Result<(), Refusal> {
    if cfg.disable_forwarding {
        return Err("DisableForwarding");
    }
    if key.is_some_and(|k| k.no_port_forwarding) {
        return Err("no-port-forwarding in authorized_keys");
    }
    if unix {
        if !allows(&cfg.allow_stream_local_forwarding, direction) {
            return Err("AllowStreamLocalForwarding");
        }
    } else if !allows(&cfg.allow_tcp_forwarding, direction) {
        return Err("AllowTcpForwarding");
    }
    Ok(())
}

/// `host:port` against a PermitOpen / PermitListen / permitopen= list:
/// empty or `any` allows all, `none` nothing, `*` matches any host or port.
/// Listen hosts are matched as sshd's remote_open_match does (the entry a
/// wildcard pattern, the asked host lower-cased); open hosts exactly.
fn listed(list: &[String], host: &str, port: u16, listen: bool) -> bool {
    if list.is_empty() || list.iter().any(|e| e.eq_ignore_ascii_case("any")) {
        return true;
    }
    list.iter().any(|e| {
        let (h, p) = match e.rsplit_once(':') {
            Some((h, p)) => (h.trim_start_matches('[').trim_end_matches(']'), p),
            None if listen => ("*", e.as_str()),
            None => return false,
        };
        let host_ok = if listen {
            crate::keys::pattern::match_pattern(&host.to_ascii_lowercase(), h)
        } else {
            h == "*" || h.eq_ignore_ascii_case(host)
        };
        let port_ok = p == "*" || p.parse::<u16>().ok() == Some(port);
        host_ok && port_ok
    })
}

/// A direct-tcpip target against PermitOpen and the key's permitopen=.
pub fn open_permitted(
    cfg: &Sshd,
    key: Option<&KeyOptions>,
    host: &str,
    port: u16,
) -> Result<(), Refusal> {
    if !listed(&cfg.permit_open, host, port, false) {
        return Err("PermitOpen");
    }
    if let Some(k) = key {
        if !k.permitopen.is_empty() && !listed(&k.permitopen, host, port, false) {
            return Err("permitopen in authorized_keys");
        }
    }
    Ok(())
}

/// A tcpip-forward against PermitListen, the key's permitlisten= and the
/// privileged ports. Both lists must allow it when both are set, as in sshd.
pub fn listen_permitted(
    cfg: &Sshd,
    key: Option<&KeyOptions>,
    user: &UserInfo,
    host: &str,
    port: u16,
) -> Result<(), Refusal> {
    if port != 0 && port < 1024 && user.uid != 0 {
        return Err("privileged port (only root may listen below 1024)");
    }
    // PermitListen entries name the host the client asked for, or only a port.
    if !listed(&cfg.permit_listen, host, port, true) {
        return Err("PermitListen");
    }
    if let Some(k) = key {
        if !k.permitlisten.is_empty() && !listed(&k.permitlisten, host, port, true) {
            return Err("permitlisten in authorized_keys");
        }
    }
    Ok(())
}

/// The host to bind for a client's tcpip-forward, per GatewayPorts: `no`
/// keeps loopback (an explicit 127.0.0.1 or ::1 included), `yes` every
/// address, `clientspecified` what it asked.
pub fn bind_host(cfg: &Sshd, asked: &str) -> Option<String> {
    match cfg.gateway_ports.to_ascii_lowercase().as_str() {
        "yes" => Some(String::new()),
        "clientspecified" => match asked {
            "" | "*" => Some(String::new()),
            "localhost" => None,
            a => Some(a.to_owned()),
        },
        // An explicit loopback address is honoured (lets the client pick
        // the family), as sshd does.
        _ if asked == "127.0.0.1" || asked == "::1" => Some(asked.to_owned()),
        _ => None,
    }
}

/// Runs `f` with the user's uid, gid and groups for filesystem checks
/// (setfsuid/setfsgid and the supplementary groups), so a Unix socket is
/// reached or created as the user would, without forking: the connection
/// process is single-threaded between crypto batches. Restores root's after.
pub fn as_user<T>(user: &UserInfo, f: impl FnOnce() -> T) -> std::io::Result<T> {
    use crate::sys::creds::{set_fs_gid, set_fs_uid, setgroups};
    if !rustix::process::geteuid().is_root() || user.uid == 0 {
        return Ok(f());
    }
    let groups = user_groups(user);
    // The supplementary groups to put back (none if they cannot be read,
    // as before).
    let saved: Vec<u32> = rustix::process::getgroups()
        .map(|v| v.into_iter().map(|g| g.as_raw()).collect())
        .unwrap_or_default();
    setgroups(&groups)?;
    set_fs_gid(user.gid);
    set_fs_uid(user.uid);
    let r = f();
    // Back to root's credentials.
    set_fs_uid(0);
    set_fs_gid(0);
    let _ = setgroups(&saved);
    Ok(r)
}

fn user_groups(user: &UserInfo) -> Vec<u32> {
    crate::users::group_ids(&user.name, user.gid).unwrap_or_else(|_| vec![user.gid])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists() {
        let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(listed(&[], "h", 1, false));
        assert!(!listed(&l(&["none"]), "h", 1, false));
        assert!(listed(&l(&["h:1"]), "h", 1, false));
        assert!(!listed(&l(&["h:1"]), "h", 2, false));
        assert!(listed(&l(&["*:2", "x:1"]), "h", 2, false));
        assert!(listed(&l(&["h:*"]), "h", 9, false));
        assert!(listed(&l(&["[::1]:22"]), "::1", 22, false));
        assert!(listed(&l(&["8080"]), "", 8080, true));
        assert!(!listed(&l(&["8080"]), "", 8080, false));
        assert!(listed(&l(&["*:8080"]), "localhost", 8080, true));
        assert!(listed(&l(&["127.0.0.*:8080"]), "127.0.0.1", 8080, true));
        assert!(!listed(&l(&["127.0.0.1:8080"]), "localhost", 8080, true));
        assert!(!listed(&l(&["127.0.0.1:8080"]), "127.0.0.1", 0, true));
    }
}
