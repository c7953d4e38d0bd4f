//! Agent forwarding, client side (OpenSSH's PROTOCOL.agent): with
//! ForwardAgent (or -A) the session asks for `auth-agent-req@openssh.com`
//! before its shell or command, and each `auth-agent@openssh.com` channel
//! the server then opens is bridged to a fresh connection to the local
//! agent. A server opening agent channels unasked is refused and logged:
//! it is trying to use our keys.

use crate::client::setting_error::SettingError;
use crate::log;
use crate::net::pump::ChannelFds;
use crate::net::socket_bridge;
use sluice_proto::msg::ChannelRequestKind;
use sluice_proto::{ChannelId, Connection};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

pub use crate::keys::agent::{FORWARD_CHANNEL as CHANNEL, FORWARD_REQUEST as REQUEST};
/// RFC 4254 5.1.
const ADMINISTRATIVELY_PROHIBITED: u32 = 1;
const RESOURCE_SHORTAGE: u32 = 4;
/// Agent channels open at once: a server must not exhaust our fds.
const MAX_CHANNELS: usize = 64;

/// What ForwardAgent resolved to, and the agent channels open now.
#[derive(Debug, Default)]
pub struct AgentForward {
    /// Forwarding was asked for.
    pub enabled: bool,
    /// The agent socket to bridge to (None: none known, opens fail).
    pub socket: Option<PathBuf>,
    channels: Vec<ChannelId>,
}

impl AgentForward {
    /// ForwardAgent `yes|no|path|$ENV` (`expand` gives a path's `~`,
    /// `${VAR}` and tokens); `yes` forwards IdentityAgent's socket when one is set,
    /// else SSH_AUTH_SOCK, as ssh does.
    pub fn from_config(
        value: Option<&str>,
        identity_agent: Option<PathBuf>,
        expand: impl Fn(&str) -> Result<PathBuf, SettingError>,
    ) -> Result<AgentForward, SettingError> {
        let env_sock = || std::env::var_os("SSH_AUTH_SOCK").map(PathBuf::from);
        let socket = match value {
            None => return Ok(AgentForward::default()),
            Some(v) => match crate::config::yes_no(v) {
                Some(false) => return Ok(AgentForward::default()),
                Some(true) => match identity_agent {
                    Some(p) if p.as_os_str() == "none" => env_sock(),
                    Some(p) if p.as_os_str() == "SSH_AUTH_SOCK" => env_sock(),
                    Some(p) => Some(p),
                    None => env_sock(),
                },
                // A path (`~`, `${VAR}` and tokens expanded), or `$VAR`
                // naming the variable that holds one, as ssh reads it.
                None => {
                    let p = expand(v)?;
                    match p.to_str().and_then(|s| s.strip_prefix('$')) {
                        Some(var) => {
                            Some(std::env::var_os(var).map(PathBuf::from).ok_or_else(|| {
                                SettingError::EnvUnset {
                                    keyword: "ForwardAgent",
                                    var: var.to_owned(),
                                }
                            })?)
                        }
                        None => Some(p),
                    }
                }
            },
        };
        Ok(AgentForward {
            enabled: true,
            socket,
            channels: Vec::new(),
        })
    }

    /// On the session channel, before shell/exec: asks for forwarding.
    pub fn request(
        &self,
        conn: &mut Connection,
        session: ChannelId,
    ) -> Result<(), sluice_proto::Error> {
        if !self.enabled {
            return Ok(());
        }
        log!(Debug1, "Requesting authentication agent forwarding.");
        let req = ChannelRequestKind::Other {
            name: REQUEST.into(),
            data: Vec::new(),
        };
        conn.channel_request(session, req, false)
    }

    /// The server opened an agent channel: bridge it to the local agent,
    /// or refuse it when forwarding was not asked for.
    pub fn on_open(&mut self, conn: &mut Connection, fds: &mut ChannelFds, channel: ChannelId) {
        if !self.enabled {
            log!(Error, "Warning: ssh server tried agent forwarding.");
            log!(
                Error,
                "This is probably a break-in attempt by a malicious server."
            );
            let _ = conn.reject_channel(channel, ADMINISTRATIVELY_PROHIBITED, "open failed");
            return;
        }
        if self.channels.len() >= MAX_CHANNELS {
            log!(
                Info,
                "agent forwarding: {MAX_CHANNELS} agent channels open, refusing another"
            );
            let _ = conn.reject_channel(channel, RESOURCE_SHORTAGE, "too many agent channels");
            return;
        }
        let connected = match &self.socket {
            Some(p) => UnixStream::connect(p).map_err(|e| format!("{}: {e}", p.display())),
            None => Err("SSH_AUTH_SOCK is not set".to_owned()),
        };
        // As ssh: the agent learns that this connection is forwarded to
        // the server it was bound to, the hop `ssh-add -h` constraints
        // are checked against. An agent without the extension still serves.
        let connected = connected.map(|mut s| {
            if let Some(b) = conn.session_binding() {
                let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(30)));
                match crate::keys::agent::bind_session(&mut s, &b, true) {
                    Ok(()) => log!(Debug1, "client_request_agent: bound agent to hostkey"),
                    Err(e) => log!(Debug1, "client_request_agent: ssh_agent_bind_hostkey: {e}"),
                }
                let _ = s.set_read_timeout(None);
            }
            s
        });
        let attached = connected.and_then(|s| {
            socket_bridge::attach(fds, channel, s).map_err(|e| format!("agent socket: {e}"))
        });
        match attached {
            Ok(()) => {
                log!(Debug1, "client_input_channel_open: ctype {CHANNEL}");
                if conn.accept_channel(channel).is_ok() {
                    self.channels.push(channel);
                } else {
                    fds.remove(channel);
                }
            }
            Err(e) => {
                log!(Debug1, "Could not connect to the agent for forwarding: {e}");
                let _ = conn.reject_channel(channel, ADMINISTRATIVELY_PROHIBITED, "open failed");
            }
        }
    }

    /// Closes agent channels that are done both ways.
    pub fn tick(&mut self, conn: &mut Connection, fds: &ChannelFds) {
        socket_bridge::close_finished(conn, fds, &mut self.channels);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forward_agent_values() {
        // Expansion leaves `$VAR` (no braces) for the variable lookup.
        let ex = |s: &str| -> Result<PathBuf, SettingError> {
            Ok(PathBuf::from(if s.starts_with('$') {
                s.to_owned()
            } else {
                format!("/x/{s}")
            }))
        };
        let f = AgentForward::from_config(Some("no"), None, ex).unwrap();
        assert!(!f.enabled);
        assert!(!AgentForward::from_config(None, None, ex).unwrap().enabled);
        let f = AgentForward::from_config(Some("yes"), Some("/a/s".into()), ex).unwrap();
        assert_eq!((f.enabled, f.socket), (true, Some("/a/s".into())));
        let f = AgentForward::from_config(Some("sock"), None, ex).unwrap();
        assert_eq!(f.socket, Some("/x/sock".into()));
        std::env::set_var("SLUICE_TEST_AGENT_SOCK", "/e/s");
        let f = AgentForward::from_config(Some("$SLUICE_TEST_AGENT_SOCK"), None, ex).unwrap();
        assert_eq!(f.socket, Some("/e/s".into()));
        assert!(AgentForward::from_config(Some("$SLUICE_NO_SUCH_VAR_X"), None, ex).is_err());
    }
}
