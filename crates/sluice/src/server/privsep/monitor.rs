//! The monitor's pre-auth phase: set up the sandbox and the socketpair,
//! fork the pre-auth child, answer its requests until it hands over (or
//! ends, or misbehaves, or LoginGraceTime runs out), then check the
//! handover and start the post-auth process (postauth.rs).

use super::datagram;
use super::error::PrivsepError;
use super::mauth::{Joined, MonitorAuth};
use super::policy::{Req, Turns};
use super::preauth::{self, ChildSetup};
use super::reap::{kill_and_reap, reap_within};
use super::signer::KeyHolder;
use super::wire::{Handover, Msg, WireError};
use crate::config::sshd::ServerConfig as Sshd;
use crate::log::{self, Level};
use crate::server::penalty::{EXIT_AUTH_ATTEMPTED, EXIT_CHILD_CRASH, EXIT_LOGIN_GRACE};
use crate::server::sandbox::{Sandbox, CHROOT_DIR};
use crate::sys::process::{fork, Forked};
use rustix::process::{Pid, Signal, WaitStatus};
use sluice_proto::handover::TransportState;
use sluice_proto::ServerConfig;
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};
use zeroize::Zeroizing;

/// Cap on the raw input a handover may carry (the pump's input buffer).
const MAX_HANDOVER_INPUT: usize = 2 << 20;

/// One connection on `sock` under privilege separation (the `-R`, `-i`
/// and `-d` connection process); `startup` is closed once the user is
/// authenticated. `argv` re-executes `sluiced` for the post-auth process.
///
/// The host keys are read only after the pre-auth child is forked: no
/// copy of a private key (heap, stack or a buffer of the loader) can be
/// in the memory of the process that parses the peer's bytes. The
/// caller must not have read them either.
pub fn serve(cfg: Sshd, sock: TcpStream, startup: Option<OwnedFd>, argv: &[String]) -> i32 {
    let Some((peer, local)) = super::addresses(&sock) else {
        crate::log!(Error, "stdin is not a socket");
        return 1;
    };
    // Write errors are handled where they occur.
    crate::sys::signal::ignore(Signal::PIPE.as_raw());
    let started = Instant::now();
    // VERBOSE, as sshd logs it.
    crate::log!(
        Verbose,
        "Connection from {} port {} on {} port {}",
        super::show_ip(peer),
        peer.port(),
        super::show_ip(local),
        local.port()
    );
    let order = crate::config::cipher_order::current();
    crate::log!(Debug1, "{}", order.describe(&cfg.ciphers));
    let _ = sock.set_nodelay(true);
    let _ = sock.set_nonblocking(true);
    let sandbox = match sandbox_for(peer) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let (m_end, c_end) = match datagram::socketpair() {
        Ok(p) => p,
        Err(e) => {
            crate::log!(Error, "monitor socketpair: {e}");
            return 255;
        }
    };
    let setup = child_setup(&cfg, &sock, peer);
    // SAFETY: this process has started no thread yet (the listener
    // re-executed us, or -i/-d before any work), so the child may run
    // ordinary code after the fork; it leaves through preauth::run, which
    // never returns (sys::process::exit_now).
    let pid = match unsafe { fork() } {
        Ok(Forked::Parent(pid)) => pid,
        Ok(Forked::Child) => {
            // The child dies with the monitor (whose grace backstop may end it).
            let _ = rustix::process::set_parent_process_death_signal(Some(Signal::KILL));
            // The child keeps no startup fd and no monitor end; no host key
            // was ever read in this image.
            drop(startup);
            drop(m_end);
            preauth::run(setup, sandbox, c_end);
        }
        Err(e) => {
            crate::log!(Error, "fork: {e}");
            return 255;
        }
    };
    drop(c_end);
    drop(setup);
    let mut holder = match keys_for_child(&cfg, &m_end, pid, peer) {
        Ok(h) => h,
        Err(code) => return code,
    };
    let grace = arm_grace(&cfg, pid, peer);
    let mut auth = MonitorAuth::new(cfg.clone(), peer, local);
    let grace_time = Duration::from_secs(cfg.login_grace_time);
    let handover = match preauth_outcome(
        pid,
        &m_end,
        &mut holder,
        &mut auth,
        peer,
        (started, grace_time),
    ) {
        Ok(h) => h,
        Err(code) => return code,
    };
    // The child must be gone before its successor runs.
    if reap_within(pid, Duration::from_secs(5)) != Some(0) {
        crate::log!(
            Error,
            "monitor: pre-auth child did not exit cleanly after the handover"
        );
        return 255;
    }
    drop(grace);
    if let Some(fd) = startup {
        // The listener stops counting us against (PerSource)MaxStartups
        // and will charge no penalty when we end.
        let _ = std::fs::File::from(fd).write_all(&[crate::server::listen::AUTHENTICATED]);
    }
    if let Some(join) = auth.take_join() {
        return hand_over_join(join, handover, &sock, peer);
    }
    start_user_session(&auth, &sock, peer, holder, handover, argv)
}

/// Never parse the peer's bytes as root: no sandbox, no connection (Err:
/// the exit code). A server run by an ordinary user (`sluice demo`) has
/// no root to protect and cannot chroot or change users: its child runs
/// as itself (None).
fn sandbox_for(peer: SocketAddr) -> Result<Option<Sandbox>, i32> {
    if !rustix::process::geteuid().is_root() {
        crate::log!(
            Debug1,
            "not running as root: the pre-auth child keeps this user and is not chrooted"
        );
        return Ok(None);
    }
    match Sandbox::prepare(Path::new(CHROOT_DIR)) {
        Ok(s) => Ok(Some(s)),
        Err(e) => {
            crate::log!(
                Error,
                "Refusing connection from {} port {}: privilege separation cannot be set up: {e}",
                peer.ip(),
                peer.port()
            );
            Err(255)
        }
    }
}

/// What the pre-auth child starts from: the engine's configuration
/// without host keys (their public halves come over the socketpair).
fn child_setup(cfg: &Sshd, sock: &TcpStream, peer: SocketAddr) -> ChildSetup {
    let banner = cfg
        .banner
        .as_ref()
        .and_then(|p| crate::server::auth::read_banner(p));
    ChildSetup {
        server_cfg: ServerConfig {
            common: crate::config::sshd::proto::proto_config(cfg),
            host_keys: Vec::new(),
            auth_methods: crate::server::auth::offered_methods(cfg),
            max_auth_tries: cfg.max_auth_tries,
            banner,
        },
        sock: sock.as_raw_fd(),
        peer,
        stripe_join: cfg.striping_possible(),
    }
}

/// The host keys, read now that the child `pid` is forked, in the monitor
/// alone; the child gets their public halves (Err: the exit code, the
/// child killed).
fn keys_for_child(
    cfg: &Sshd,
    m_end: &OwnedFd,
    pid: Pid,
    peer: SocketAddr,
) -> Result<KeyHolder, i32> {
    let holder = match crate::keys::host_keys::load(&cfg.host_keys) {
        Ok(k) => KeyHolder::new(k).with_host_key_algorithms(&cfg.host_key_algorithms),
        Err(e) => {
            crate::log!(Fatal, "{e}");
            kill_and_reap(pid);
            return Err(1);
        }
    };
    if let Err(e) = send(m_end, &Msg::HostKeys(holder.public_blobs())) {
        crate::log!(
            Error,
            "monitor: pre-auth child for {} port {}: {e}",
            peer.ip(),
            peer.port()
        );
        kill_and_reap(pid);
        return Err(255);
    }
    Ok(holder)
}

/// LoginGraceTime even when the monitor blocks (a hung home directory,
/// a FIFO as Banner): a thread (now that the child is forked) kills the
/// child and ends the monitor, as server/grace.rs does for one process.
fn arm_grace(cfg: &Sshd, pid: Pid, peer: SocketAddr) -> Option<crate::server::grace::GraceTimer> {
    let (ip, port) = (peer.ip(), peer.port());
    (cfg.login_grace_time > 0)
        .then(|| {
            crate::server::grace::GraceTimer::arm(
                Duration::from_secs(cfg.login_grace_time) + crate::server::grace::SLACK,
                move || {
                    crate::log!(Info, "Timeout before authentication for {ip} port {port}");
                    // Our unreaped child; then the process ends at once.
                    let _ = rustix::process::kill_process(pid, Signal::KILL);
                    crate::sys::process::exit_now(EXIT_LOGIN_GRACE);
                },
            )
        })
        .flatten()
}

/// The pre-auth phase with child `pid` run to its end: the handover, or
/// the exit code of a connection that never authenticated (for
/// PerSourcePenalties) or whose child broke the monitor's rules.
/// `(started, grace)`: when the connection came and LoginGraceTime.
fn preauth_outcome(
    pid: Pid,
    m_end: &OwnedFd,
    holder: &mut KeyHolder,
    auth: &mut MonitorAuth,
    peer: SocketAddr,
    (started, grace): (Instant, Duration),
) -> Result<Handover, i32> {
    match preauth_phase(Some(pid), m_end, holder, auth) {
        Ok(Some(h)) => Ok(h),
        Ok(None) => {
            let status = super::reap::wait(pid);
            let grace_out = auth.timed_out() || (!grace.is_zero() && started.elapsed() >= grace);
            Err(unauthenticated_exit(status, grace_out, auth.attempted()))
        }
        Err(why) => {
            crate::log!(
                Error,
                "monitor: pre-auth child for {} port {}: {why}; ending the connection",
                peer.ip(),
                peer.port()
            );
            kill_and_reap(pid);
            // A child that breaks the monitor's rules is treated as a crash.
            Err(EXIT_CHILD_CRASH)
        }
    }
}

/// The authenticated user's session: PAM's (UsePAM) opened before the
/// user's process starts (which inherits what it set up: limits, login
/// uid) and closed after it ends; returns the connection's exit code.
fn start_user_session(
    auth: &MonitorAuth,
    sock: &TcpStream,
    peer: SocketAddr,
    holder: KeyHolder,
    handover: Handover,
    argv: &[String],
) -> i32 {
    let Some(accepted) = auth.accepted().cloned() else {
        return 255;
    };
    let user_cfg = auth.config().clone();
    let session = if user_cfg.use_pam {
        match crate::server::pam_session::Session::open(
            &user_cfg.pam_service(),
            &accepted.user.name,
            &peer.ip().to_string(),
        ) {
            Ok(s) => Some(s),
            Err(e) => {
                crate::log!(Error, "{e}: refusing the session of {}", accepted.user.name);
                return 255;
            }
        }
    } else {
        None
    };
    let pam_env = session.as_ref().map(|s| s.env()).unwrap_or_default();
    let code = super::postauth::start(super::postauth::Start {
        argv,
        pam_env,
        sock,
        peer,
        holder,
        accepted,
        cfg: user_cfg,
        handover,
    });
    if let Some(s) = session {
        s.close();
    }
    code
}

/// Answers the child until it hands over (`Some`), ends by itself (`None`:
/// a failed login, a closed connection), or breaks a rule (`Err`): each
/// request is checked against the monitor's table (policy.rs) first.
/// `pid` is the child's, killed when LoginGraceTime runs out (None: the
/// caller's harness has no process).
pub(super) fn preauth_phase(
    pid: Option<Pid>,
    fd: &OwnedFd,
    keys: &mut KeyHolder,
    auth: &mut MonitorAuth,
) -> Result<Option<Handover>, PrivsepError> {
    let mut out = Vec::new();
    let mut turns = Turns::new();
    loop {
        let timeout = auth
            .tick_interval()
            .map_or(-1, |d| d.as_millis().min(60_000) as i32);
        let msg = match datagram::recv(fd, timeout) {
            Ok(m) => m,
            Err(WireError::Closed) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        if let Some(m) = &msg {
            let state = auth.phase(keys.session_id().is_some());
            turns.pre(state, Req::of(m), auth.config().max_auth_tries)?;
        }
        match msg {
            None => auth.tick(),
            Some(Msg::Log { level, line }) => {
                relay_log(level, &auth.child_line(&line), " [preauth]")?
            }
            Some(Msg::SignExchange {
                key,
                alg,
                hash,
                transcript,
            }) => {
                let sig = keys.sign_exchange(key, &alg, hash, &transcript)?;
                send(fd, &Msg::Signature(sig))?;
            }
            Some(Msg::Auth { user, method }) => auth.on_request(keys, user, method, &mut out)?,
            Some(Msg::InfoResponse(answers)) => auth.on_info_response(answers)?,
            Some(Msg::State(state)) => {
                return receive_handover(fd, keys, auth.handover_user(), state).map(Some)
            }
            // The table lets nothing else through.
            Some(_) => return Err(PrivsepError::UnexpectedRequest),
        }
        for m in out.drain(..) {
            send(fd, &m)?;
        }
        if let Some(v) = auth.take_verdict() {
            send(fd, &v)?;
        }
        if auth.timed_out() {
            // The log line is ServerAuth's ("Timeout before authentication").
            if let Some(pid) = pid {
                kill_and_reap(pid);
            }
            return Ok(None);
        }
    }
}

/// A striping secondary admitted into its session: its checked handover
/// and socket go to the session's monitor, and this connection's monitor
/// ends (the secondary lives on in the session's user process).
fn hand_over_join(join: Joined, handover: Handover, sock: &TcpStream, peer: SocketAddr) -> i32 {
    let (ip, port) = (super::show_ip(peer), peer.port());
    let n = join.joining.number;
    match join
        .joining
        .hand_over(&handover.state, &handover.rest, sock.as_fd())
    {
        Ok(()) => {
            crate::log!(
                Verbose,
                "monitor: stripe secondary {ip} port {port} (join {n} for {}) passed to its session",
                join.user
            );
            0
        }
        Err(e) => {
            crate::log!(
                Error,
                "monitor: stripe secondary {ip} port {port} (join {n}): {e}; ending the connection"
            );
            255
        }
    }
}

/// The rest of a handover after its `State`: input chunks up to `End`;
/// then the state is checked against what the monitor knows: its session
/// id, and `user` (the user accepted or admitted).
fn receive_handover(
    fd: &OwnedFd,
    keys: &KeyHolder,
    user: Option<&str>,
    state: Zeroizing<Vec<u8>>,
) -> Result<Handover, PrivsepError> {
    let user = user.ok_or(PrivsepError::HandoverBeforeAuth)?;
    let mut rest = Vec::new();
    loop {
        match datagram::recv(fd, 10_000)? {
            Some(Msg::Input(b)) if rest.len() + b.len() <= MAX_HANDOVER_INPUT => {
                rest.extend_from_slice(&b)
            }
            Some(Msg::End) => break,
            Some(Msg::Log { level, line }) => relay_log(level, &line, " [preauth]")?,
            None => return Err(PrivsepError::HandoverTimedOut),
            Some(_) => return Err(PrivsepError::UnexpectedInHandover),
        }
    }
    let decoded = TransportState::decode(&state).map_err(PrivsepError::HandoverState)?;
    let sid = keys
        .session_id()
        .ok_or(PrivsepError::NoKeyExchange { what: "handover" })?;
    if aws_lc_rs::constant_time::verify_slices_are_equal(decoded.session_id(), sid).is_err() {
        return Err(PrivsepError::OtherSession);
    }
    // The engine keeps the name as sent (`user:style` included).
    let sent = decoded
        .user()
        .map(|u| crate::server::auth::without_style(u.to_owned()));
    if sent.as_deref() != Some(user) {
        return Err(PrivsepError::OtherUser);
    }
    Ok(Handover { state, rest })
}

/// A child's log line, logged here at its level with `mark` after it
/// (sshd's " [preauth]"), so that no child's line reads as one of the
/// monitor's; bounded by the decoder, control characters replaced so a
/// line cannot forge another.
pub(super) fn relay_log(level: u8, line: &str, mark: &str) -> Result<(), PrivsepError> {
    let level = Level::from_u8(level).ok_or(PrivsepError::BadLogLevel)?;
    let clean: String = line
        .chars()
        .map(|c| if c.is_control() && c != '\t' { '?' } else { c })
        .collect();
    log::write(level, format_args!("{clean}{mark}"));
    Ok(())
}

fn send(fd: &OwnedFd, m: &Msg) -> Result<(), PrivsepError> {
    Ok(datagram::send(fd, m)?)
}

/// How a connection that never authenticated ends, as the listener reads
/// its exit status for PerSourcePenalties (server/penalty.rs): the pre-auth
/// child's wait `status` (None: already reaped), whether LoginGraceTime ran
/// out and whether a method other than `none` was tried.
fn unauthenticated_exit(status: Option<WaitStatus>, grace_out: bool, attempted: bool) -> i32 {
    if grace_out {
        return EXIT_LOGIN_GRACE;
    }
    if let Some(sig) = status.and_then(|s| s.terminating_signal()) {
        crate::log!(Error, "monitor: pre-auth child killed by signal {sig}");
        if crate::server::penalty::is_crash(sig) {
            return EXIT_CHILD_CRASH;
        }
    }
    if attempted {
        EXIT_AUTH_ATTEMPTED
    } else {
        255
    }
}
