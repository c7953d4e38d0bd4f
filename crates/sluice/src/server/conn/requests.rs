//! Session channel requests (env, exec, shell, pty-req, window-change,
//! subsystem, signals, agent forwarding) and running the session's command,
//! on pipes or on a pty.

use crate::log;
use crate::net::pump::{ChanIo, ChannelFds};
use crate::server::agent_forward;
use crate::server::child::SessionChild;
use crate::server::pty::Pty;
use crate::server::session::{self, SessionSpawn, UserInfo};
use crate::server::session_env;
use crate::server::sftp;
use sluice_proto::msg::ChannelRequestKind;
use sluice_proto::{ChannelId, Connection};
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStringExt;

use super::ServerConn;

impl ServerConn {
    /// Runs the session's command (None: the user's shell) on channel
    /// `id`: on its pty, through its stripe hub, in this process when it
    /// is internal-sftp, else on pipes. False when refused or failed.
    pub(super) fn spawn(
        &mut self,
        id: ChannelId,
        fds: &mut ChannelFds,
        command: Option<Vec<u8>>,
        subsystem: bool,
    ) -> bool {
        let Some(user) = self.user.clone() else {
            return false;
        };
        let auth_info = self.auth_info_path();
        let Some(s) = self.sessions.get(&id) else {
            return false;
        };
        if s.child.is_some() || s.sftp.is_some() {
            return false;
        }
        let env = s.env.clone();
        let (command, server_env) = self.forced_command(&user, auth_info, command);
        let Some(s) = self.sessions.get_mut(&id) else {
            return false;
        };
        let striped = s.stripe.clone();
        if striped.is_some()
            && (s.pty.is_some() || command.as_deref().is_some_and(sftp::is_internal))
        {
            // A striped channel carries bytes only through its hub.
            log!(
                Info,
                "session: refusing a pty or internal-sftp on a striped channel"
            );
            return false;
        }
        if let Some(c) = command.as_deref().filter(|c| sftp::is_internal(c)) {
            return self.start_sftp(id, fds, c, &user);
        }
        let mut spawn = SessionSpawn {
            user,
            command,
            env,
            server_env,
            subsystem,
            client: self.peer,
            server: self.local,
        };
        if let Some(p) = s.pty.as_mut() {
            return match p.spawn(&mut spawn, self.cfg.print_motd) {
                Ok((child, io)) => {
                    fds.insert(id, io);
                    s.child = Some(SessionChild::new(child));
                    true
                }
                Err(e) => {
                    log!(Error, "session: failed to run command on a pty: {e}");
                    false
                }
            };
        }
        let mut child = match session::spawn(&spawn) {
            Ok(c) => c,
            Err(e) => {
                log!(Error, "session: failed to run command: {e}");
                return false;
            }
        };
        let io = match striped {
            Some(hub) => match super::stripe::attach(&hub, &mut child) {
                Ok(io) => io,
                Err(e) => {
                    log!(Error, "session: striped channel: {e}");
                    let _ = child.kill();
                    let _ = child.wait();
                    return false;
                }
            },
            None => command_pipes(&mut child),
        };
        fds.insert(id, io);
        s.child = Some(SessionChild::new(child));
        true
    }

    /// The command to run and the environment the server sets for it. A
    /// forced command replaces what the client asked for, which is kept
    /// in SSH_ORIGINAL_COMMAND. The administrator's ForceCommand comes
    /// before the key's command= (sshd's order).
    fn forced_command(
        &self,
        user: &UserInfo,
        auth_info: Option<std::path::PathBuf>,
        command: Option<Vec<u8>>,
    ) -> (Option<Vec<u8>>, Vec<(OsString, OsString)>) {
        let mut server_env = session_env::server_env(
            &self.cfg,
            &self.pam_env,
            self.key_options.as_ref(),
            user,
            self.agent.env(),
        );
        if let Some(path) = auth_info {
            server_env.push(("SSH_USER_AUTH".into(), path.into_os_string()));
        }
        let forced = self
            .cfg
            .force_command
            .clone()
            .or_else(|| self.key_options.as_ref().and_then(|o| o.command.clone()));
        let command = match forced {
            Some(f) => {
                if let Some(orig) = &command {
                    server_env.push((
                        "SSH_ORIGINAL_COMMAND".into(),
                        OsString::from_vec(orig.clone()),
                    ));
                }
                Some(f.into_bytes())
            }
            None => command,
        };
        (command, server_env)
    }

    /// `internal-sftp` (a Subsystem or ForceCommand naming it): the server
    /// runs on the channel in this process, as the user (and in the
    /// ChrootDirectory, where one is set), instead of a program.
    fn start_sftp(
        &mut self,
        id: ChannelId,
        fds: &mut ChannelFds,
        command: &[u8],
        user: &UserInfo,
    ) -> bool {
        let Some(s) = self.sessions.get_mut(&id) else {
            return false;
        };
        let text = String::from_utf8_lossy(command);
        let who = format!(
            "user {} from {} port {}",
            user.name,
            crate::server::privsep::show_ip(self.peer),
            self.peer.port()
        );
        let started = sftp::Options::parse(&text)
            .and_then(|o| sftp::Worker::new(o, &user.name, &user.home, who))
            .and_then(|w| sftp::SftpEndpoint::start(w).map_err(sftp::StartError::Spawn));
        match started {
            Ok((end, exit)) => {
                log!(Debug1, "session: internal-sftp on channel {}", id.0);
                fds.insert(id, ChanIo::in_process(Box::new(end)));
                s.sftp = Some(exit);
                true
            }
            Err(e) => {
                log!(Error, "session: {e}");
                false
            }
        }
    }

    /// A session channel's request: true when done (the reply's
    /// success).
    pub(super) fn on_request(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        id: ChannelId,
        req: ChannelRequestKind,
    ) -> bool {
        match req {
            ChannelRequestKind::Env { name, value } => self.on_env(id, name, value),
            ChannelRequestKind::Other { name, .. } if name == agent_forward::REQUEST => {
                match (&self.user, self.sessions.contains_key(&id)) {
                    (Some(u), true) => self.agent.request(&self.cfg, self.key_options.as_ref(), u),
                    _ => false,
                }
            }
            ChannelRequestKind::Exec { command } => {
                log!(Debug1, "session: exec request for channel {}", id.0);
                self.spawn(id, fds, Some(command), false)
            }
            ChannelRequestKind::Shell => {
                !refuse_interactive(conn, id, "shell") && self.spawn(id, fds, None, false)
            }
            ChannelRequestKind::PtyReq {
                term,
                cols,
                rows,
                width_px,
                height_px,
                modes,
            } => {
                !refuse_interactive(conn, id, "pty-req")
                    && self.on_pty_req(id, &term, (cols, rows, width_px, height_px), &modes)
            }
            ChannelRequestKind::WindowChange {
                cols,
                rows,
                width_px,
                height_px,
            } => {
                if let Some(p) = self.sessions.get(&id).and_then(|s| s.pty.as_ref()) {
                    p.resize((cols, rows, width_px, height_px));
                }
                false
            }
            ChannelRequestKind::Subsystem { name } => self.on_subsystem(id, fds, &name),
            ChannelRequestKind::Other { name, .. } if name == "eow@openssh.com" => {
                // The client can write no more of our output (its stdout
                // went away): stop reading the command's output so it gets
                // SIGPIPE, as OpenSSH's sshd does (PROTOCOL 2.1).
                log!(Debug1, "channel {}: rcvd eow", id.0);
                if let Some(io) = fds.get_mut(id) {
                    io.close_source();
                }
                false
            }
            ChannelRequestKind::Signal { name } => {
                self.on_signal(id, &name);
                false
            }
            _ => false,
        }
    }

    /// env: kept for the command when AcceptEnv names it and it passes
    /// session_env's checks.
    fn on_env(&mut self, id: ChannelId, name: String, value: Vec<u8>) -> bool {
        let Some(s) = self.sessions.get_mut(&id) else {
            return false;
        };
        // Names are the peer's: log at most 64 characters of them.
        let shown: String = name.chars().take(64).collect();
        if !self.cfg.accept_env_matches(&name) {
            log!(Debug1, "Ignoring env request {shown}: disallowed name");
            return false;
        }
        if let Err(why) = session_env::check_request(&name, &value, &s.env) {
            log!(Info, "Ignoring env request {shown}: {why}");
            return false;
        }
        s.env.push((name.into(), OsString::from_vec(value)));
        true
    }

    /// pty-req: a pty (from the monitor under privilege separation) unless
    /// PermitTTY, the key's no-pty or an earlier pty or command refuses it.
    fn on_pty_req(
        &mut self,
        id: ChannelId,
        term: &str,
        size: (u32, u32, u32, u32),
        modes: &[u8],
    ) -> bool {
        if !self.cfg.permit_tty {
            log!(Info, "Pty allocation disabled.");
            return false;
        }
        let Some(s) = self.sessions.get_mut(&id) else {
            return false;
        };
        if s.pty.is_some() || s.child.is_some() {
            return false;
        }
        if self.key_options.as_ref().is_some_and(|k| k.no_pty) {
            log!(Info, "channel {}: pty-req refused: key option no-pty", id.0);
            return false;
        }
        let opened = match self.monitor.as_mut() {
            Some(m) => Pty::open(term, size, modes, || m.pty()),
            None => Pty::open(term, size, modes, crate::server::pty::openpty),
        };
        match opened {
            Ok(p) => {
                log!(
                    Debug1,
                    "session: allocated pty {} for channel {}",
                    p.name(),
                    id.0
                );
                s.pty = Some(p);
                true
            }
            Err(e) => {
                log!(Info, "channel {}: pty-req refused: {e}", id.0);
                false
            }
        }
    }

    /// subsystem: the Subsystem line's command, run as a command is.
    fn on_subsystem(&mut self, id: ChannelId, fds: &mut ChannelFds, name: &str) -> bool {
        match self.cfg.subsystem_command(name) {
            Some(cmd) => {
                log!(
                    Verbose,
                    "subsystem request for {name} by user {}",
                    self.user.as_ref().map_or("", |u| u.name.as_str())
                );
                self.spawn(id, fds, Some(cmd.into_bytes()), true)
            }
            None => {
                log!(
                    Info,
                    "subsystem request for {name} failed, subsystem not found"
                );
                false
            }
        }
    }

    /// signal: only a command that still exists is signalled (child.rs):
    /// after it was reaped its pid may belong to anyone.
    fn on_signal(&self, id: ChannelId, name: &str) {
        let Some(s) = self.sessions.get(&id) else {
            return;
        };
        let sent = match (&s.child, &s.pty) {
            (Some(c), Some(_)) => c.signal_group(name),
            (Some(c), None) => c.signal(name),
            _ => false,
        };
        if !sent {
            log!(
                Debug1,
                "channel {}: signal {name} not sent: no such process",
                id.0
            );
        }
    }
}

/// A command's stdin, stdout and stderr as the channel's ends: pipes made
/// non-blocking and enlarged (command_pipe_size); the command's input
/// closes at the channel's EOF.
fn command_pipes(child: &mut std::process::Child) -> ChanIo {
    let mut io = ChanIo::owned(
        child.stdout.take().map(OwnedFd::from),
        child.stderr.take().map(OwnedFd::from),
        child.stdin.take().map(OwnedFd::from),
        None,
    );
    io.close_sink_on_eof = true;
    let pipe = command_pipe_size();
    for fd in io.raw_fds() {
        let _ = crate::sys::fdio::set_nonblocking(fd, true);
        if pipe > 0 {
            crate::sys::fdio::set_pipe_size(fd, pipe);
        }
    }
    io
}

/// A pty or shell makes the connection interactive: NONE is withdrawn from
/// later re-keys, and the request is refused (true) when the NONE cipher
/// is already in use, as interactive sessions must stay encrypted.
pub(super) fn refuse_interactive(conn: &mut Connection, id: ChannelId, what: &str) -> bool {
    if !conn.mark_interactive() {
        return false;
    }
    log!(
        Info,
        "channel {}: {what} request refused: the NONE cipher is in use and interactive sessions must stay encrypted",
        id.0
    );
    true
}

/// Capacity of the pipes to and from a session's command: 1 MiB (the
/// default /proc/sys/fs/pipe-max-size) lets one write or read move a whole
/// packet's data instead of 64 KiB. `SLUICE_PIPE_SIZE` overrides it for
/// measurements (bytes; 0 keeps the kernel's 64 KiB); see BENCHMARKS.md.
pub(super) fn command_pipe_size() -> usize {
    std::env::var("SLUICE_PIPE_SIZE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1 << 20)
}
