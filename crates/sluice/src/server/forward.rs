//! sluiced's port forwarding: `direct-tcpip` and
//! `direct-streamlocal@openssh.com` channels connect to their target
//! (connects finish in `tick`, the channel is confirmed once connected);
//! `tcpip-forward` and `streamlocal-forward@openssh.com` bind listeners
//! whose connections open `forwarded-tcpip` / `forwarded-streamlocal@openssh.com`
//! channels back to the client. Policy is in `forward_policy`.
//!
//! Unix sockets are connected and bound with the user's filesystem
//! credentials (setfsuid/setfsgid and groups, see `forward_policy::as_user`);
//! TCP connects and binds happen as root, as the policy allows them, like
//! sshd's listeners (privileged ports need a root login).

use crate::config::sshd::ServerConfig as Sshd;
use crate::keys::authorized_keys::KeyOptions;
use crate::log;
use crate::net::fwdsock::{self, Connecting};
use crate::net::pump::ChannelFds;
use crate::server::forward_policy as policy;
use crate::server::session::UserInfo;
use sluice_proto::wire::{Reader, Writer};
use sluice_proto::{ChannelId, Connection};
use std::collections::BTreeMap;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::UnixListener;

const ADMINISTRATIVELY_PROHIBITED: u32 = 1;
/// SSH_OPEN_RESOURCE_SHORTAGE (RFC 4254 5.1).
const RESOURCE_SHORTAGE: u32 = 4;
pub use crate::server::forward_error::{ForwardError, ListenError};
use fwdsock::CONNECT_FAILED;
/// Connections accepted per listener per loop turn.
const ACCEPT_BATCH: usize = 16;
/// Listeners one connection may hold (sshd has no explicit limit; bounded here).
const MAX_LISTENERS: usize = 256;

/// A listener the client asked for.
struct Listener {
    fd: OwnedFd,
    /// Address and port as the client asked (port as bound), or the path.
    host: String,
    port: u16,
    unix: bool,
}

/// Forwarding state of one connection.
#[derive(Default)]
pub struct ServerForward {
    listeners: Vec<Listener>,
    /// direct-tcpip channels waiting for their connect.
    connecting: Vec<(ChannelId, Connecting)>,
    /// forwarded-* channels we opened, with their socket and type, until confirmed.
    opening: BTreeMap<ChannelId, (OwnedFd, &'static str)>,
    /// Open forwarding channels.
    channels: Vec<ChannelId>,
    /// A channel waits for our EOF (see `fwdsock::close_finished`).
    half_closed: bool,
}

/// Who asked, for policy and logs.
pub struct Ctx<'a> {
    /// sshd_config.
    pub cfg: &'a Sshd,
    /// The authenticated user.
    pub user: Option<&'a UserInfo>,
    /// The key's authorized_keys options.
    pub key: Option<&'a KeyOptions>,
}

fn parse_direct_tcpip(data: &[u8]) -> Option<(String, u16, String, u16)> {
    let mut r = Reader::new(data);
    let host = r.utf8().ok()?.to_owned();
    let port = u16::try_from(r.u32().ok()?).ok()?;
    let oh = r.utf8().ok()?.to_owned();
    let op = u16::try_from(r.u32().ok()?).unwrap_or(0);
    Some((host, port, oh, op))
}

fn parse_host_port(data: &[u8]) -> Option<(String, u32)> {
    let mut r = Reader::new(data);
    Some((r.utf8().ok()?.to_owned(), r.u32().ok()?))
}

fn parse_path(data: &[u8]) -> Option<String> {
    let mut r = Reader::new(data);
    r.utf8().ok().map(str::to_owned)
}

/// For the fuzz target (fuzz/fuzz_targets/request_data.rs): `data` as
/// each forwarding request's type-specific data sluiced reads
/// (direct-tcpip, tcpip-forward and its cancel, streamlocal paths); how
/// many of the readings succeeded.
#[doc(hidden)]
pub fn parse_request_data(data: &[u8]) -> usize {
    usize::from(parse_direct_tcpip(data).is_some())
        + usize::from(parse_host_port(data).is_some())
        + usize::from(parse_path(data).is_some())
}

impl ServerForward {
    /// A channel open of a forwarding type; false if the type is not ours.
    pub fn open_request(
        &mut self,
        ctx: &Ctx<'_>,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        id: ChannelId,
        channel_type: &str,
        data: &[u8],
    ) -> Result<bool, ForwardError> {
        let reject = |conn: &mut Connection, reason, desc: &str| {
            conn.reject_channel(id, reason, desc)
                .map_err(ForwardError::Protocol)
        };
        let forwarding = matches!(
            channel_type,
            "direct-tcpip" | "direct-streamlocal@openssh.com"
        );
        if forwarding && self.open_count() >= ctx.cfg.max_forward_channels as usize {
            log!(
                Info,
                "refused {channel_type} channel: {} forwarding channels open (MaxForwardChannels)",
                self.open_count()
            );
            reject(conn, RESOURCE_SHORTAGE, "too many forwarding channels")?;
            return Ok(true);
        }
        match channel_type {
            "direct-tcpip" => {
                let Some((host, port, oh, op)) = parse_direct_tcpip(data) else {
                    reject(conn, ADMINISTRATIVELY_PROHIBITED, "open failed")?;
                    return Ok(true);
                };
                let verdict = policy::forwarding_allowed(ctx.cfg, ctx.key, false, "local")
                    .and_then(|()| policy::open_permitted(ctx.cfg, ctx.key, &host, port));
                if let Err(why) = verdict.and(ctx.user.map(|_| ()).ok_or("not authenticated")) {
                    log!(
                        Info,
                        "refused local port forward: originator {oh} port {op}, target {host} port {port}: {why}"
                    );
                    reject(conn, ADMINISTRATIVELY_PROHIBITED, "open failed")?;
                    return Ok(true);
                }
                log!(
                    Debug1,
                    "server_request_direct_tcpip: originator {oh} port {op}, target {host} port {port}"
                );
                let c = Connecting::start_filtered(&host, port, ctx.cfg.family_filter());
                self.connecting.push((id, c));
                Ok(true)
            }
            "direct-streamlocal@openssh.com" => {
                let path = parse_path(data);
                let verdict = policy::forwarding_allowed(ctx.cfg, ctx.key, true, "local");
                let (Some(path), Ok(()), Some(user)) = (path, verdict, ctx.user) else {
                    log!(
                        Info,
                        "refused streamlocal port forward: {}",
                        verdict.err().unwrap_or("malformed request")
                    );
                    reject(conn, ADMINISTRATIVELY_PROHIBITED, "open failed")?;
                    return Ok(true);
                };
                log!(Debug1, "server_request_direct_streamlocal: target {path}");
                match policy::as_user(user, || fwdsock::connect_unix(&path)).and_then(|r| r) {
                    Ok(s) => self.confirm(conn, fds, id, s)?,
                    Err(e) => {
                        log!(Info, "connect to {path} failed: {e}");
                        reject(
                            conn,
                            CONNECT_FAILED,
                            &crate::io_error::describe_io_error(&e),
                        )?;
                    }
                }
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn confirm(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        id: ChannelId,
        sock: OwnedFd,
    ) -> Result<(), ForwardError> {
        fwdsock::accept_connected(conn, fds, &mut self.channels, id, sock)
            .map_err(ForwardError::Channel)
    }

    /// A global request; false if it is not about forwarding.
    pub fn global_request(
        &mut self,
        ctx: &Ctx<'_>,
        conn: &mut Connection,
        name: &str,
        want_reply: bool,
        data: &[u8],
    ) -> bool {
        let reply = |conn: &mut Connection, ok: bool, data: &[u8]| {
            if want_reply {
                conn.answer_global(ok, data);
            }
        };
        match name {
            "tcpip-forward" | "streamlocal-forward@openssh.com" => {
                let unix = name != "tcpip-forward";
                match self.listen(ctx, unix, want_reply, data) {
                    Ok(Some(port)) => {
                        let mut d = Vec::new();
                        Writer::new(&mut d).u32(port.into());
                        reply(conn, true, &d);
                    }
                    Ok(None) => reply(conn, true, &[]),
                    Err(msg) => {
                        log!(Info, "{msg}");
                        reply(conn, false, &[]);
                    }
                }
                true
            }
            "cancel-tcpip-forward" | "cancel-streamlocal-forward@openssh.com" => {
                let unix = name != "cancel-tcpip-forward";
                let target = if unix {
                    parse_path(data).map(|p| (p, 0))
                } else {
                    // A port past 65535 names no listener (not its low 16 bits).
                    parse_host_port(data).and_then(|(h, p)| Some((h, u16::try_from(p).ok()?)))
                };
                let before = self.listeners.len();
                if let Some((h, p)) = target {
                    self.listeners
                        .retain(|l| !(l.unix == unix && l.host == h && (unix || l.port == p)));
                }
                reply(conn, self.listeners.len() < before, &[]);
                true
            }
            _ => false,
        }
    }

    /// Binds for a tcpip-forward (Some(port) to report when 0 was asked) or
    /// a streamlocal-forward; Err is the log line.
    fn listen(
        &mut self,
        ctx: &Ctx<'_>,
        unix: bool,
        want_reply: bool,
        data: &[u8],
    ) -> Result<Option<u16>, ListenError> {
        let user = ctx.user.ok_or(ListenError::NotAuthenticated)?;
        if self.listeners.len() >= MAX_LISTENERS {
            return Err(ListenError::TooManyListeners { max: MAX_LISTENERS });
        }
        if unix {
            let path = parse_path(data).ok_or(ListenError::Malformed { unix: true })?;
            if let Err(why) = policy::forwarding_allowed(ctx.cfg, ctx.key, true, "remote") {
                return Err(ListenError::StreamlocalRefused { path, why });
            }
            let unlink = ctx.cfg.stream_local_bind_unlink;
            let mask = rustix::fs::Mode::from_raw_mode(ctx.cfg.stream_local_bind_mask as _);
            let l = policy::as_user(user, || {
                if unlink {
                    let _ = std::fs::remove_file(&path);
                }
                // StreamLocalBindMask (default 0177: the socket is the user's alone).
                // Restored right after.
                let old = rustix::process::umask(mask);
                let r = UnixListener::bind(&path);
                rustix::process::umask(old);
                r
            })
            .and_then(|r| r)
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|err| ListenError::StreamlocalBind {
                path: path.clone(),
                err,
            })?;
            log!(Verbose, "streamlocal remote forward listening on {path}");
            self.listeners.push(Listener {
                fd: l.into(),
                host: path,
                port: 0,
                unix: true,
            });
            return Ok(None);
        }
        let (host, port) = parse_host_port(data).ok_or(ListenError::Malformed { unix: false })?;
        let port = u16::try_from(port).map_err(|_| ListenError::BadPort(port))?;
        if port == 0 && !want_reply {
            // The client could never learn the port, as sshd reasons.
            return Err(ListenError::PortZeroNoReply);
        }
        if let Err(why) = policy::forwarding_allowed(ctx.cfg, ctx.key, false, "remote")
            .and_then(|()| policy::listen_permitted(ctx.cfg, ctx.key, user, &host, port))
        {
            return Err(ListenError::Refused { host, port, why });
        }
        let bind = policy::bind_host(ctx.cfg, &host);
        let mut addrs = match fwdsock::bind_addrs(bind.as_deref(), port, false) {
            Ok(a) => a,
            Err(err) => return Err(ListenError::Resolve { host, err }),
        };
        addrs.retain(|a| ctx.cfg.family_allowed(a));
        if addrs.is_empty() {
            return Err(ListenError::NoAddressAllowed {
                host,
                family: ctx.cfg.address_family.to_string(),
            });
        }
        let (ls, bound) = fwdsock::listen_tcp(&addrs).map_err(|e| ListenError::Listen {
            port,
            why: e.to_string(),
        })?;
        log!(Verbose, "remote forward listening on {host} port {bound}");
        for l in ls {
            self.listeners.push(Listener {
                fd: l.into(),
                host: host.clone(),
                port: bound,
                unix: false,
            });
        }
        Ok((port == 0).then_some(bound))
    }

    /// Forwarding channels open or being opened, either way.
    fn open_count(&self) -> usize {
        self.connecting.len() + self.opening.len() + self.channels.len()
    }

    /// Accepts on listeners, finishes connects, closes finished channels.
    /// Past `max_channels` forwarding channels, connections to the
    /// listeners are accepted and closed at once.
    pub fn tick(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        max_channels: usize,
    ) -> Result<(), ForwardError> {
        for l in &self.listeners {
            for (sock, peer) in fwdsock::accept_all(l.fd.as_fd(), ACCEPT_BATCH) {
                let open = self.open_count();
                if open >= max_channels {
                    log!(
                        Info,
                        "refused a connection to forwarded port {}: {open} forwarding channels open (MaxForwardChannels)",
                        l.port
                    );
                    drop(sock);
                    continue;
                }
                let mut d = Vec::new();
                let ty = if l.unix {
                    Writer::new(&mut d).utf8(&l.host).utf8("");
                    "forwarded-streamlocal@openssh.com"
                } else {
                    let (oh, op) = fwdsock::originator(peer);
                    Writer::new(&mut d)
                        .utf8(&l.host)
                        .u32(l.port.into())
                        .utf8(&oh)
                        .u32(op.into());
                    "forwarded-tcpip"
                };
                match conn.open_channel(ty, &d) {
                    Ok(id) => {
                        self.opening.insert(id, (sock, ty));
                    }
                    Err(e) => log!(Info, "{ty}: cannot open a channel: {e}"),
                }
            }
        }
        fwdsock::poll_connects(conn, fds, &mut self.channels, &mut self.connecting)
            .map_err(ForwardError::Channel)?;
        self.half_closed = fwdsock::close_finished(conn, fds, &self.channels);
        Ok(())
    }

    /// Our forwarded-* channel was confirmed or refused.
    pub fn on_open_result(&mut self, fds: &mut ChannelFds, id: ChannelId, ok: bool) -> bool {
        let Some((sock, _)) = self.opening.remove(&id) else {
            return false;
        };
        if ok {
            if let Ok(io) = fwdsock::socket_io(sock) {
                fds.insert(id, io);
                self.channels.push(id);
            }
        }
        true
    }

    /// The type of a forwarded-* channel we opened and the client has
    /// not answered yet (ChannelTimeout's name for it).
    pub fn opening_type(&self, id: ChannelId) -> Option<&'static str> {
        self.opening.get(&id).map(|(_, ty)| *ty)
    }

    /// How soon `tick` should run again.
    pub fn tick_interval(&self) -> Option<std::time::Duration> {
        if self.connecting.iter().any(|(_, c)| c.resolving()) {
            return Some(fwdsock::RESOLVE_TICK);
        }
        self.half_closed.then_some(fwdsock::HALF_CLOSED_TICK)
    }

    /// A channel closed.
    pub fn on_closed(&mut self, id: ChannelId) {
        self.channels.retain(|c| *c != id);
    }

    /// Listeners and connects in progress to wake for.
    pub fn watch_fds(&self, out: &mut Vec<libc::pollfd>) {
        for l in &self.listeners {
            out.push(libc::pollfd {
                fd: l.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        for (_, c) in &self.connecting {
            if let Some(fd) = c.fd() {
                out.push(libc::pollfd {
                    fd,
                    events: libc::POLLOUT,
                    revents: 0,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_refusals_read_as_sshd_logs_them() {
        let e = ListenError::Refused {
            host: "localhost".into(),
            port: 8080,
            why: "disallowed by PermitListen",
        };
        assert_eq!(
            e.to_string(),
            "refused remote port forward: listen host localhost port 8080: disallowed by PermitListen"
        );
        assert_eq!(
            ListenError::Malformed { unix: true }.to_string(),
            "malformed streamlocal-forward request"
        );
        assert_eq!(
            ListenError::BadPort(70000).to_string(),
            "tcpip-forward: bad port 70000"
        );
    }
}
