//! The post-auth phase. The monitor re-executes `sluiced` (a fresh image:
//! no host private key ever was in the memory of a process the user will
//! own) with the peer's socket on fd 0 and a new monitor socket named by
//! [`super::POSTAUTH_ENV`]; sends who authenticated, the key's options,
//! the host public keys and the handover; then answers sign requests
//! (re-keys) and RemoteRcvBuf/SndBuf (root passes the sysctl cap on its
//! copy of the socket, capped by RemoteBufMax) until the process ends.
//!
//! The post-auth process takes nothing about the user from the pre-auth
//! child: the name comes from the monitor, the account from the password
//! database, the Match configuration from the config file. It reads the
//! user's groups and applies the Match blocks, enters the ChrootDirectory
//! if one applies (as root, server/chroot.rs), sets the groups, gid and
//! uid (and checks root cannot come back) before it decodes the state,
//! then serves the connection as that user.

use super::accepted::Accepted;
use super::datagram;
use super::error::PrivsepError;
use super::policy::{Req, Turns};
use super::reap::{kill_and_reap, reap};
use super::signer::{KeyHolder, Link, ProxySigner};
use super::wire::{Handover, Msg, WireError, INPUT_CHUNK};
use crate::config::sshd::ServerConfig as Sshd;
use crate::keys::authorized_keys::KeyOptions;
use crate::net::pump::Pump;
use crate::server::conn::ServerConn;
use crate::server::logins::Logins;
use crate::server::pty::{PtyError, PtyPair};
use crate::server::session::{self, UserInfo};
use rustix::process::{DumpableBehavior, Pid, Signal};
use sluice_proto::crypto::hostkey::Signer;
use sluice_proto::crypto::SystemRng;
use sluice_proto::handover::TransportState;
use sluice_proto::{Connection, ServerConfig};
use std::ffi::OsString;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

/// The fd the monitor socket gets in the post-auth process.
const CHILD_FD: i32 = 3;
/// The fd of the socket joined striping connections arrive on
/// (stripe_join.rs), named to the post-auth process by [`JOIN_ENV`].
const CHILD_JOIN_FD: i32 = 4;
/// The environment variable naming [`CHILD_JOIN_FD`].
pub(crate) const JOIN_ENV: &str = "SLUICED_JOIN_FD";

/// What the monitor starts the post-auth process with.
pub struct Start<'a> {
    /// sluiced's arguments (without the program name).
    pub argv: &'a [String],
    /// The peer's socket.
    pub sock: &'a TcpStream,
    /// The client's address.
    pub peer: SocketAddr,
    /// The host keys, for re-keys.
    pub holder: KeyHolder,
    /// Who authenticated.
    pub accepted: Accepted,
    /// The configuration for that user.
    pub cfg: Sshd,
    /// The checked handover.
    pub handover: Handover,
    /// PAM's environment for the user's sessions (UsePAM).
    pub pam_env: Vec<(OsString, OsString)>,
}

/// Monitor side: starts the post-auth process and serves it; returns its
/// exit code.
pub fn start(s: Start<'_>) -> i32 {
    let spawned = spawn_postauth(&s);
    let (child, fd, join_fd) = match spawned {
        Ok(x) => x,
        Err(e) => {
            crate::log!(Error, "monitor: {e}");
            return 255;
        }
    };
    let pid = Pid::from_child(&child);
    let Start {
        sock,
        peer,
        mut holder,
        accepted,
        cfg,
        handover,
        pam_env,
        ..
    } = s;
    let mut logins = Logins::new(pid.as_raw_pid(), peer);
    let served = serve_postauth(
        &fd,
        join_fd,
        sock,
        peer,
        &mut holder,
        &accepted,
        &cfg,
        handover,
        &pam_env,
        &mut logins,
    );
    let code = match served {
        Ok(()) => reap(pid, "post-auth process"),
        Err(why) => {
            crate::log!(
                Error,
                "monitor: post-auth process: {why}; ending the connection"
            );
            kill_and_reap(pid);
            255
        }
    };
    // The sessions ended with the process that ran them: their logouts.
    drop(logins);
    code
}

/// The post-auth process: `sluiced` re-executed with the peer's socket on
/// fd 0, its monitor socket at [`CHILD_FD`], the join socket at
/// [`CHILD_JOIN_FD`], the configuration's snapshot, and nothing else of
/// the monitor's. Returns it and the monitor's ends of both sockets.
fn spawn_postauth(s: &Start<'_>) -> Result<(std::process::Child, OwnedFd, OwnedFd), PrivsepError> {
    let (m_end, u_end) = datagram::socketpair().map_err(PrivsepError::Os)?;
    // Joined connections get a socket of their own: M's request loop
    // owns the first, its join thread writes to this one.
    let (join_m, join_u) = datagram::socketpair().map_err(PrivsepError::Os)?;
    let sock = s.sock.try_clone().map_err(PrivsepError::Os)?;
    let raw = u_end.as_raw_fd();
    let join_raw = join_u.as_raw_fd();
    let mut cmd = Command::new("/proc/self/exe");
    cmd.args(s.argv)
        .env(super::POSTAUTH_ENV, CHILD_FD.to_string())
        .env(JOIN_ENV, CHILD_JOIN_FD.to_string())
        .stdin(Stdio::from(OwnedFd::from(sock)))
        .stdout(Stdio::null());
    // The configuration as this monitor parsed it (fd 10 or above).
    let config = crate::config::sshd::snapshot::fd_for_children();
    if let Some(fd) = config {
        cmd.env(crate::config::sshd::snapshot::CONFIG_ENV, fd.to_string());
    }
    // SAFETY: pre_exec is unsafe by its signature; the closure makes only
    // raw fcntl/dup2 calls (sys/inherit.rs) and fds.rs's cloexec_except,
    // all async-signal-safe, between fork and exec, and replaces only the
    // numbers CHILD_FD and CHILD_JOIN_FD, which nothing in the child owns
    // (place_at's contract: the child's owners never run again).
    unsafe {
        cmd.pre_exec(move || {
            use crate::sys::inherit::{dup_cloexec_from, keep_across_exec, place_at};
            // The join end first out of the way (fd 10 or above, closed
            // at exec), in case it sits at CHILD_FD.
            let join_tmp = dup_cloexec_from(join_raw, 10);
            let mut ok = join_tmp.is_ok();
            // A monitor end already at CHILD_FD only loses its
            // close-on-exec flag.
            ok &= place_at(raw, CHILD_FD).is_ok();
            ok &= place_at(join_tmp.unwrap_or(-1), CHILD_JOIN_FD).is_ok();
            if let Some(fd) = config {
                ok &= keep_across_exec(fd).is_ok();
            }
            // Nothing else of the monitor's reaches the user's process:
            // a descriptor a PAM module opened without close-on-exec,
            // say.
            let keep = [CHILD_FD, CHILD_JOIN_FD, config.unwrap_or(CHILD_JOIN_FD)];
            ok &= crate::fds::cloexec_except(&keep).is_ok();
            if ok {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    let child = cmd.spawn().map_err(PrivsepError::StartPostauth)?;
    drop(u_end);
    drop(join_u);
    Ok((child, m_end, join_m))
}

fn serve_postauth(
    fd: &OwnedFd,
    join_fd: OwnedFd,
    sock: &TcpStream,
    peer: SocketAddr,
    keys: &mut KeyHolder,
    accepted: &Accepted,
    cfg: &Sshd,
    handover: Handover,
    pam_env: &[(OsString, OsString)],
    logins: &mut Logins,
) -> Result<(), PrivsepError> {
    let send = |m: &Msg| datagram::send(fd, m);
    send(&Msg::Start {
        user: accepted.user.name.clone(),
        key_options: accepted.key_options.as_ref().map(super::keyopts::encode),
        host_keys: keys.public_blobs(),
        auth_info: if cfg.expose_auth_info {
            accepted.auth_info.clone()
        } else {
            String::new()
        },
        pam_env: pam_env
            .iter()
            .map(|(k, v)| (k.clone().into_vec(), v.clone().into_vec()))
            .collect(),
    })?;
    send(&Msg::State(handover.state))?;
    for chunk in handover.rest.chunks(INPUT_CHUNK) {
        send(&Msg::Input(chunk.to_vec()))?;
    }
    send(&Msg::End)?;
    let policy = super::join_policy::JoinPolicy::new(accepted, cfg);
    let mut stripe =
        super::stripe::GrantKeeper::new(super::stripe_join::STRIPE_DIR, Some(join_fd), policy);
    serve_requests(fd, sock, peer, keys, accepted, cfg, &mut stripe, logins)
}

/// The post-auth process's requests, each checked against the monitor's
/// table (policy.rs) first, until it closes the socket (`Ok`) or breaks a
/// rule (`Err`: the caller kills it).
pub(super) fn serve_requests(
    fd: &OwnedFd,
    sock: &TcpStream,
    peer: SocketAddr,
    keys: &mut KeyHolder,
    accepted: &Accepted,
    cfg: &Sshd,
    stripe: &mut super::stripe::GrantKeeper,
    logins: &mut Logins,
) -> Result<(), PrivsepError> {
    let send = |m: &Msg| datagram::send(fd, m);
    let mut turns = Turns::new();
    // The ptys given out and still open, by name.
    let mut ptys: Vec<String> = Vec::new();
    loop {
        let msg = match datagram::recv(fd, -1) {
            Err(WireError::Closed) => return Ok(()),
            Err(e) => return Err(e.into()),
            Ok(None) => continue,
            Ok(Some(m)) => m,
        };
        turns.post(Req::of(&msg), cfg.max_sessions)?;
        match msg {
            Msg::SignExchange {
                key,
                alg,
                hash,
                transcript,
            } => {
                let sig = keys.sign_exchange(key, &alg, hash, &transcript)?;
                send(&Msg::Signature(sig))?;
            }
            Msg::ProveHostKey { key, alg } => {
                let sig = keys.prove(key, &alg)?;
                send(&Msg::Signature(sig))?;
            }
            Msg::SockBuf { rcvbuf, sndbuf } => {
                let g = crate::server::conn::sockbuf::remote_sockbuf(
                    cfg,
                    Some(sock.as_raw_fd()),
                    peer,
                    rcvbuf,
                    sndbuf,
                );
                send(&Msg::SockBufGranted(g))?;
            }
            Msg::StripeGrant { wanted } => {
                let sid = keys
                    .session_id()
                    .ok_or(PrivsepError::NoKeyExchange { what: "striping" })?;
                let g = stripe.grant(wanted, cfg.max_streams, sid, &accepted.user.name);
                send(&Msg::StripeGranted(g))?;
            }
            Msg::PtyRequest => match pty_for(accepted, cfg).and_then(|p| {
                let tty = crate::server::pty::slave_name(&p.slave)?;
                Ok((p, tty))
            }) {
                Ok((p, tty)) => {
                    logins.login(&tty, &accepted.user.name, accepted.user.uid);
                    let fds = [p.master.as_fd(), p.slave.as_fd()];
                    datagram::send_fds(fd, &Msg::PtyGranted, &fds)?;
                    ptys.push(tty);
                }
                Err(why) => {
                    turns.pty_released();
                    crate::log!(Info, "monitor: pty for {}: {why}", accepted.user.name);
                    send(&Msg::Reject)?;
                }
            },
            Msg::PtyRelease { tty } => {
                let i = ptys
                    .iter()
                    .position(|t| *t == tty)
                    .ok_or(PrivsepError::UnknownPty)?;
                ptys.swap_remove(i);
                turns.pty_released();
                logins.logout(&tty);
            }
            // The table lets nothing else through.
            _ => return Err(PrivsepError::UnexpectedRequest),
        }
    }
}

/// A pty for the authenticated user, unless PermitTTY (`cfg` has the
/// user's Match blocks applied) or the key's `no-pty` forbids it: the
/// monitor checks again what the user's process checked.
fn pty_for(accepted: &Accepted, cfg: &Sshd) -> Result<PtyPair, PtyError> {
    if !cfg.permit_tty {
        return Err(PtyError::PermitTtyNo);
    }
    if accepted.key_options.as_ref().is_some_and(|k| k.no_pty) {
        return Err(PtyError::KeyNoPty);
    }
    let p = crate::server::pty::allocate_for(accepted.user.uid)?;
    crate::log!(
        Verbose,
        "monitor: allocated a pty for {}",
        accepted.user.name
    );
    Ok(p)
}

/// Post-auth process side (`sluiced` started with [`super::POSTAUTH_ENV`]):
/// `cfg` is the startup configuration; returns the exit code.
pub fn run(cfg: Sshd, fd: i32) -> i32 {
    match run_as_user(cfg, fd) {
        Ok(code) | Err(code) => code,
    }
}

/// `run`'s steps: what the monitor sends, root given up, the transport
/// imported, then the connection served. `Err` is the exit code of a step
/// that failed (logged).
fn run_as_user(cfg: Sshd, fd: i32) -> Result<i32, i32> {
    let fail = |e: String| {
        crate::log!(Error, "post-auth: {e}");
        255
    };
    // The monitor's socket is this process's alone: close-on-exec, so no
    // command of the user's holds it.
    if !crate::sys::fd::is_open(fd) || crate::sys::fd::set_cloexec(fd).is_err() {
        return Err(fail(format!("the monitor socket (fd {fd}) is not open")));
    }
    // SAFETY: the monitor put its socket at this fd for us (the
    // environment names it, once); nothing else in this process owns it.
    let link = Link::new(unsafe { OwnedFd::from_raw_fd(fd) });
    let got = receive(&link).map_err(|e| fail(e.to_string()))?;
    let Some(info) = session::lookup_user(&got.user) else {
        return Err(fail(format!("user {} vanished", got.user)));
    };
    // Started through /proc/self/exe (the monitor's own image, even if the
    // file was replaced since), the process would be called "exe" in ps.
    let _ = rustix::thread::set_name(c"sluiced");
    let monitor_pid = rustix::process::getppid();
    // The metrics' clock starts with the process, and the kernel's socket
    // buffer caps are read while /proc is still there (a ChrootDirectory
    // hides it): `path-info-v00@sluice.dev` reports them.
    crate::net::metrics::system::mark_start();
    let _ = crate::net::metrics::system::caps();
    // SAFETY: fd 0 is the peer's socket, handed over by the monitor;
    // nothing else in this process owns it (std's stdin only borrows).
    let sock = unsafe { TcpStream::from_raw_fd(0) };
    let Some((peer, local)) = super::addresses(&sock) else {
        return Err(255);
    };
    let ctx = crate::config::sshd::MatchContext::connection(&got.user, peer, local);
    let matched = give_up_root(&cfg, &ctx, &info, monitor_pid)?;
    let state =
        TransportState::decode(&got.state).map_err(|e| fail(format!("handover state: {e}")))?;
    let announced = got.host_keys.clone();
    let host_keys = got
        .host_keys
        .into_iter()
        .enumerate()
        .map(|(i, b)| {
            let k: Arc<dyn Signer> = Arc::new(ProxySigner::new(link.clone(), i as u32, b));
            k
        })
        .collect();
    let server_cfg = ServerConfig {
        common: crate::config::sshd::proto::post_auth_proto_config(&cfg),
        host_keys,
        auth_methods: Vec::new(),
        max_auth_tries: cfg.max_auth_tries,
        banner: None,
    };
    let user = got.user;
    // The engine kept the name as sent (`user:style`, which logs in `user`).
    let sent = state
        .user()
        .filter(|u| crate::server::auth::without_style((*u).to_owned()) == user)
        .unwrap_or(&user)
        .to_owned();
    let keepalive = matched.tcp_keep_alive;
    let joins = join_fd_from_env().map(|fd| {
        super::join_inbox::JoinInbox::new(fd, server_cfg.clone(), user.clone(), keepalive)
    });
    let mut conn = Connection::import_server(
        server_cfg,
        Box::new(SystemRng),
        state,
        &sent,
        Instant::now(),
    )
    .map_err(|e| fail(format!("importing the transport: {e}")))?;
    let threads = cfg.crypto_threads;
    let monitor = Box::new(super::monitor_link::MonitorLink(link.clone(), false));
    let mut handler =
        ServerConn::authenticated(cfg, matched, peer, local, info, got.key_options, monitor);
    handler.set_socket(sock.as_raw_fd());
    handler.set_auth_info(got.auth_info);
    handler.set_pam_env(got.pam_env);
    handler.set_host_keys(announced);
    handler.authenticated_on(&mut conn);
    if let Some(j) = joins {
        handler.set_join_source(Box::new(j));
    }
    let mut pump = Pump::new(sock.as_raw_fd());
    pump.set_crypto_threads(&mut conn, threads);
    pump.preload_input(&got.rest);
    let r = pump.run(&mut conn, &mut handler);
    crate::net::compress_ctl::log_summary(&conn);
    Ok(super::log_end(r, &format!("user {user} "), peer))
}

/// Root given up for the user `info` (drop_root.rs), before anything of
/// the peer's is decoded: the groups read before a chroot hides
/// /etc/group, the chroot made as root, then the uid changed (sshd's
/// order); the process made undumpable and tied to its monitor
/// `monitor_pid`. Returns the configuration with the user's Match blocks.
fn give_up_root(
    cfg: &Sshd,
    ctx: &crate::config::sshd::MatchContext,
    info: &UserInfo,
    monitor_pid: Option<Pid>,
) -> Result<Sshd, i32> {
    let fail = |e: String| {
        crate::log!(Error, "post-auth: {e}");
        255
    };
    let groups = super::drop_root::login_groups(info)
        .map_err(|e| fail(format!("groups of {}: {e}", info.name)))?;
    let matched = cfg.for_connection(ctx);
    if let Some(template) = matched.chroot_directory.clone() {
        super::drop_root::enter_chroot(&template, info).map_err(|e| fail(e.to_string()))?;
    }
    super::drop_root::become_user(info, &groups)
        .map_err(|e| fail(format!("becoming {}: {e}", info.name)))?;
    // Not dumpable, as sshd's post-auth process: the user may not ptrace
    // it nor open its /proc/PID/fd or mem, which would reach the monitor's
    // socket. The uid change leaves /proc/sys/fs/suid_dumpable's value,
    // which an administrator may have set to 1; this does not depend on it.
    let _ = rustix::process::set_dumpable_behavior(DumpableBehavior::NotDumpable);
    // The connection lives as long as its monitor: a killed monitor (an
    // administrator ending the session, as with sshd's [priv] process)
    // ends it now, not at the next re-key. Set after the uid change,
    // which clears it; the parent check closes the race with its death.
    crate::sys::signal::default(Signal::TERM.as_raw());
    let _ = rustix::process::set_parent_process_death_signal(Some(Signal::TERM));
    if rustix::process::getppid() != monitor_pid {
        return Err(fail("the monitor is gone".into()));
    }
    Ok(matched)
}

/// The join socket the monitor put at [`CHILD_JOIN_FD`], if it did.
fn join_fd_from_env() -> Option<OwnedFd> {
    let v = std::env::var(JOIN_ENV).ok()?;
    std::env::remove_var(JOIN_ENV);
    let fd: i32 = v.parse().ok().filter(|fd| *fd == CHILD_JOIN_FD)?;
    // Close-on-exec: no command inherits it.
    let _ = crate::sys::fd::set_cloexec(fd);
    // SAFETY: the monitor put the socket at this fd for us; nothing else
    // in this process owns it.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// What the monitor sends the post-auth process before anything else.
struct Received {
    /// The authenticated user.
    user: String,
    /// The key's authorized_keys options, if a key was used.
    key_options: Option<KeyOptions>,
    /// Host key public blobs, in the monitor's order.
    host_keys: Vec<Vec<u8>>,
    /// The transport state's encoding.
    state: zeroize::Zeroizing<Vec<u8>>,
    /// Raw peer bytes the engine had not consumed.
    rest: Vec<u8>,
    /// ExposeAuthInfo's text.
    auth_info: String,
    /// PAM's environment for sessions.
    pam_env: Vec<(OsString, OsString)>,
}

/// The `Start` message and the handover, strictly in that order.
fn receive(link: &Link) -> Result<Received, PrivsepError> {
    let Msg::Start {
        user,
        key_options,
        host_keys,
        auth_info,
        pam_env,
    } = link.next()?
    else {
        return Err(PrivsepError::ExpectedStart);
    };
    let key_options = match key_options {
        Some(b) => Some(super::keyopts::decode(&b)?),
        None => None,
    };
    let Msg::State(state) = link.next()? else {
        return Err(PrivsepError::ExpectedState);
    };
    let mut rest = Vec::new();
    loop {
        match link.next()? {
            Msg::Input(b) => rest.extend_from_slice(&b),
            Msg::End => break,
            _ => return Err(PrivsepError::UnexpectedInHandover),
        }
    }
    let pam_env = pam_env
        .into_iter()
        .map(|(k, v)| (OsString::from_vec(k), OsString::from_vec(v)))
        .collect();
    Ok(Received {
        user,
        key_options,
        host_keys,
        state,
        rest,
        auth_info,
        pam_env,
    })
}
