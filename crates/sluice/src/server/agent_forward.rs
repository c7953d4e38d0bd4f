//! Agent forwarding, server side (OpenSSH's PROTOCOL.agent): on the
//! client's `auth-agent-req@openssh.com` we listen on a Unix socket in a
//! fresh `/tmp/ssh-XXXXXXXXXX` directory (mode 0700, owned by the user),
//! name it in SSH_AUTH_SOCK, and bridge every connection to it over an
//! `auth-agent@openssh.com` channel to the client. Socket and directory go
//! when the connection ends. As in sshd, one listener per connection.

use crate::config::sshd::ServerConfig as Sshd;
use crate::keys::authorized_keys::KeyOptions;
use crate::log;
use crate::net::pump::ChannelFds;
use crate::net::socket_bridge;
use crate::server::session::UserInfo;
use sluice_proto::{ChannelId, Connection, Event};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;

pub use crate::keys::agent::{FORWARD_CHANNEL as CHANNEL, FORWARD_REQUEST as REQUEST};

/// Agent connections open (or being opened) at once; more are closed at
/// accept: a runaway local process must not exhaust our fds.
const MAX_AGENT_CHANNELS: usize = 64;

/// The connection's agent forwarding state.
#[derive(Default)]
pub struct ServerAgent {
    listener: Option<Listener>,
    /// The request was seen (sshd honours only the first).
    requested: bool,
}

struct Listener {
    sock: UnixListener,
    dir: PathBuf,
    path: PathBuf,
    uid: u32,
    /// Accepted, waiting for the client to confirm the channel.
    pending: BTreeMap<ChannelId, UnixStream>,
    open: Vec<ChannelId>,
}

impl ServerAgent {
    /// `auth-agent-req@openssh.com` on a session channel: true when
    /// forwarding is now set up.
    pub fn request(&mut self, cfg: &Sshd, key: Option<&KeyOptions>, user: &UserInfo) -> bool {
        if !cfg.allow_agent_forwarding || cfg.disable_forwarding {
            log!(
                Info,
                "agent forwarding refused for {}: disabled by sshd_config",
                user.name
            );
            return false;
        }
        if key.is_some_and(|k| k.no_agent_forwarding) {
            log!(
                Info,
                "agent forwarding refused for {}: no-agent-forwarding in authorized_keys",
                user.name
            );
            return false;
        }
        if std::mem::replace(&mut self.requested, true) {
            log!(Debug1, "session_auth_agent_req: already requested");
            return false;
        }
        match Listener::create(user) {
            Ok(l) => {
                log!(
                    Debug1,
                    "agent forwarding: listening on {}",
                    l.path.display()
                );
                self.listener = Some(l);
                true
            }
            Err(e) => {
                log!(Error, "agent forwarding for {}: {e}", user.name);
                false
            }
        }
    }

    /// SSH_AUTH_SOCK for sessions started from now on.
    pub fn env(&self) -> Option<(OsString, OsString)> {
        let l = self.listener.as_ref()?;
        Some(("SSH_AUTH_SOCK".into(), l.path.clone().into_os_string()))
    }

    /// Wakes the loop when a local process connects.
    pub fn watch_fds(&self, out: &mut Vec<libc::pollfd>) {
        if let Some(l) = &self.listener {
            out.push(libc::pollfd {
                fd: l.sock.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
    }

    /// Accepts local connections (each opens an agent channel) and closes
    /// agent channels that are done.
    pub fn tick(&mut self, conn: &mut Connection, fds: &ChannelFds) {
        let Some(l) = self.listener.as_mut() else {
            return;
        };
        socket_bridge::close_finished(conn, fds, &mut l.open);
        while let Ok((stream, _)) = l.sock.accept() {
            if l.pending.len() + l.open.len() >= MAX_AGENT_CHANNELS {
                log!(
                    Info,
                    "agent forwarding: {MAX_AGENT_CHANNELS} agent connections open, refusing another"
                );
                continue;
            }
            match peer_uid(&stream) {
                Some(uid) if uid == l.uid || uid == 0 => {}
                other => {
                    log!(
                        Error,
                        "agent forwarding: connection from uid {other:?} refused (not the user)"
                    );
                    continue;
                }
            }
            match conn.open_channel(CHANNEL, &[]) {
                Ok(id) => {
                    l.pending.insert(id, stream);
                }
                Err(e) => log!(Error, "agent forwarding: cannot open a channel: {e}"),
            }
        }
    }

    /// An agent channel we opened that the client has not answered yet.
    pub fn is_opening(&self, id: ChannelId) -> bool {
        self.listener
            .as_ref()
            .is_some_and(|l| l.pending.contains_key(&id))
    }

    /// The client's answer to an agent channel we opened: true when the
    /// event was ours.
    pub fn on_event(&mut self, conn: &mut Connection, fds: &mut ChannelFds, ev: &Event) -> bool {
        let Some(l) = self.listener.as_mut() else {
            return false;
        };
        match ev {
            Event::ChannelOpened(id) => {
                let Some(stream) = l.pending.remove(id) else {
                    return false;
                };
                match socket_bridge::attach(fds, *id, stream) {
                    Ok(()) => l.open.push(*id),
                    Err(e) => {
                        log!(Error, "agent forwarding: {e}");
                        let _ = conn.close_channel(*id);
                    }
                }
                true
            }
            Event::ChannelOpenFailed {
                channel,
                description,
                ..
            } => {
                if l.pending.remove(channel).is_none() {
                    return false;
                }
                log!(
                    Debug1,
                    "agent forwarding: the client refused the agent channel: {description}"
                );
                true
            }
            _ => false,
        }
    }
}

/// Why the agent socket could not be set up: the step, the path and the
/// system's error.
#[derive(Debug)]
struct SocketError {
    /// "mkdtemp", "bind", "chown", or empty (setting it non-blocking).
    step: &'static str,
    /// The path it was about.
    path: PathBuf,
    /// The system's error.
    err: std::io::Error,
}

impl std::fmt::Display for SocketError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.step.is_empty() {
            write!(f, "{}: {}", self.path.display(), self.err)
        } else {
            write!(f, "{} {}: {}", self.step, self.path.display(), self.err)
        }
    }
}

impl std::error::Error for SocketError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.err)
    }
}

impl Listener {
    fn create(user: &UserInfo) -> Result<Listener, SocketError> {
        let dir = crate::sys::tempdir::make_temp_dir("/tmp/ssh-XXXXXXXXXX").map_err(|err| {
            SocketError {
                step: "mkdtemp",
                path: PathBuf::from("/tmp/ssh-XXXXXXXXXX"),
                err,
            }
        })?;
        let path = dir.join(format!("agent.{}", std::process::id()));
        // From here on, Drop removes what exists.
        let cleanup = |step: &'static str, p: &PathBuf, err: std::io::Error| {
            let _ = std::fs::remove_file(&path);
            let _ = std::fs::remove_dir(&dir);
            SocketError {
                step,
                path: p.clone(),
                err,
            }
        };
        let sock = UnixListener::bind(&path).map_err(|e| cleanup("bind", &path, e))?;
        sock.set_nonblocking(true)
            .map_err(|e| cleanup("", &path, e))?;
        // mkdtemp made the directory 0700 and ours; hand it and the socket
        // to the user (sshd creates both as the user).
        if rustix::process::geteuid().is_root() && user.uid != 0 {
            for p in [&path, &dir] {
                std::os::unix::fs::chown(p, Some(user.uid), Some(user.gid))
                    .map_err(|e| cleanup("chown", p, e))?;
            }
        }
        Ok(Listener {
            sock,
            dir,
            path,
            uid: user.uid,
            pending: BTreeMap::new(),
            open: Vec::new(),
        })
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The uid of the process at the other end of a Unix socket.
fn peer_uid(s: &UnixStream) -> Option<u32> {
    rustix::net::sockopt::socket_peercred(s)
        .ok()
        .map(|c| c.uid.as_raw())
}
