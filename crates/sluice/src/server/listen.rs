//! The listener: binds the configured addresses and hands every accepted
//! connection to a freshly executed `sluiced -R` process with the socket as
//! its stdin and stdout (the `sshd -i` convention), so a failure in one
//! connection never touches another or the listener. MaxStartups and
//! PerSourceMaxStartups drop new connections early when too many are still
//! unauthenticated (each child tells the listener through its startup pipe
//! once authenticated); PerSourcePenalties refuses sources whose earlier
//! connections ended badly before authenticating (server/penalty.rs).
//! A SIGHUP restart (server/restart.rs) passes the listening sockets to the
//! new image, which takes back those its configuration still names.

use crate::log;
use crate::server::penalty::{self, Penalty, PenaltyBox};
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::{fcntl_setfd, FdFlags};
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// No address could be bound (each failure was logged): sshd's "Cannot
/// bind any address.".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoListener;

impl std::fmt::Display for NoListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cannot bind any address.")
    }
}

impl std::error::Error for NoListener {}

/// Listening sockets, and the connection processes started from them.
pub struct Listener {
    sockets: Vec<TcpListener>,
    children: Vec<Started>,
    /// The configuration snapshot's fd, passed to each child.
    config_fd: Option<BorrowedFd<'static>>,
    rng_state: u64,
}

impl Listener {
    /// Sets TcpRcvBuf / TcpSndBuf (bytes; 0: the automatic size)
    /// on the listening sockets, which accepted connections inherit, and
    /// says what the kernel granted and what capped it.
    pub fn set_buffers(&self, rcv: u64, snd: u64) {
        use crate::net::sockbuf::{self, Buf};
        use std::os::fd::AsRawFd;
        for s in &self.sockets {
            for (b, n) in [(Buf::Recv, rcv), (Buf::Send, snd)] {
                // Unset: the automatic size, where it beats autotuning.
                let n = if n == 0 {
                    sockbuf::auto_size(b).unwrap_or(0)
                } else {
                    n
                };
                if n == 0 {
                    continue;
                }
                let g = sockbuf::set(s.as_raw_fd(), b, n);
                log!(
                    Verbose,
                    "{}: asked {}, granted {}",
                    b.keyword(),
                    n,
                    g.granted
                );
                if let Some(a) = g.advice {
                    log!(Error, "{a}");
                }
            }
        }
    }

    /// Binds every address, in sshd's words on failure. `kept`: sockets a
    /// restart passed on; one bound to an address still configured is used
    /// as it is (no connection refused meanwhile), the others are closed.
    pub fn bind(addrs: &[SocketAddr], mut kept: Vec<TcpListener>) -> Result<Listener, NoListener> {
        kept.retain(|s| s.local_addr().is_ok_and(|a| addrs.contains(&a)));
        let mut sockets = Vec::new();
        for a in addrs {
            let reused = kept
                .iter()
                .position(|s| s.local_addr().is_ok_and(|l| l == *a))
                .map(|i| kept.swap_remove(i));
            if reused.is_some() {
                log!(Debug1, "listening socket for {a} kept across the restart");
            }
            // IPv6 sockets only for IPv6, as sshd's: `::` beside `0.0.0.0`
            // (the default ListenAddress pair) would fail with EADDRINUSE.
            let fresh = || match a {
                SocketAddr::V6(_) => crate::net::fwdsock::bind_v6only(*a),
                SocketAddr::V4(_) => TcpListener::bind(a),
            };
            match reused.map_or_else(fresh, Ok) {
                Ok(s) => {
                    log!(Info, "Server listening on {} port {}.", a.ip(), a.port());
                    let _ = s.set_nonblocking(true);
                    sockets.push(s);
                }
                Err(e) => {
                    log!(
                        Error,
                        "Bind to port {} on {} failed: {}.",
                        a.port(),
                        a.ip(),
                        crate::io_error::describe_io_error(&e)
                    );
                }
            }
        }
        if sockets.is_empty() {
            return Err(NoListener);
        }
        Ok(Listener {
            sockets,
            children: Vec::new(),
            config_fd: None,
            rng_state: std::process::id() as u64 ^ 0x9e37_79b9_7f4a_7c15,
        })
    }

    /// The listening sockets' fds (for a restart to pass on).
    pub fn socket_fds(&self) -> Vec<BorrowedFd<'_>> {
        self.sockets.iter().map(|s| s.as_fd()).collect()
    }

    /// The configuration snapshot (config/sshd/snapshot.rs) each child
    /// gets: `fd` stays close-on-exec here, so only connection processes
    /// inherit it, not a restart's `-t` check or the restarted image.
    pub fn pass_config(&mut self, fd: Option<RawFd>) {
        self.config_fd = fd.map(|fd| {
            // SAFETY: the snapshot's descriptor (config/sshd/snapshot.rs)
            // is held in a static for the process's life, never closed.
            unsafe { BorrowedFd::borrow_raw(fd) }
        });
    }

    /// The bound addresses.
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.sockets
            .iter()
            .filter_map(|s| s.local_addr().ok())
            .collect()
    }

    /// sshd -d: waits for one connection and closes the listening sockets.
    pub fn accept_one(self) -> Option<TcpStream> {
        loop {
            let mut fds = self.pollfds();
            match rustix::event::poll(&mut fds, Some(&ms(1000))) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(_) => return None,
            }
            for s in &self.sockets {
                if let Ok((stream, _)) = s.accept() {
                    let _ = stream.set_nonblocking(false);
                    return Some(stream);
                }
            }
        }
    }

    fn pollfds(&self) -> Vec<PollFd<'_>> {
        self.sockets
            .iter()
            .map(|s| PollFd::new(s, PollFlags::IN))
            .collect()
    }

    /// Accepts until `stop` or `hup` is set, starting one `exe args...`
    /// per connection; called again after a SIGHUP that did not restart, it
    /// carries on with the same children. Each child holds the write end
    /// of a pipe, writes [`AUTHENTICATED`] to it once its user is
    /// authenticated and closes it (sshd's startup pipe): until then it
    /// counts against MaxStartups and PerSourceMaxStartups, and if it ends
    /// first its exit status decides the penalty its source is charged
    /// (server/penalty.rs).
    pub fn serve(
        &mut self,
        exe: &std::path::Path,
        args: &[String],
        limits: &mut SourceLimits,
        stop: &AtomicBool,
        hup: &AtomicBool,
    ) {
        let mut children = std::mem::take(&mut self.children);
        while !stop.load(Ordering::Relaxed) && !hup.load(Ordering::Relaxed) {
            children.retain_mut(|c| !c.reap(limits.penalties.as_mut()));
            reap_strays(&children);
            let mut fds = self.pollfds();
            let n = fds.len();
            fds.extend(
                children
                    .iter()
                    .filter_map(|c| c.startup.as_ref())
                    .map(|f| PollFd::new(f, PollFlags::IN)),
            );
            // No retry on EINTR: a signal's flag is looked at now.
            if rustix::event::poll(&mut fds, Some(&ms(500))).is_err() {
                continue;
            }
            // A readable startup pipe: that child authenticated or ended.
            let ready: Vec<RawFd> = fds
                .iter()
                .skip(n)
                .filter(|p| !p.revents().is_empty())
                .map(|p| p.as_fd().as_raw_fd())
                .collect();
            drop(fds);
            for fd in ready {
                for c in children.iter_mut() {
                    if c.startup.as_ref().is_some_and(|f| f.as_raw_fd() == fd) {
                        c.read_startup();
                    }
                }
            }
            for s in &self.sockets {
                let Ok((stream, peer)) = s.accept() else {
                    continue;
                };
                let pending = children.iter().filter(|c| c.startup.is_some()).count() as u32;
                let r = &mut self.rng_state;
                *r ^= *r << 13;
                *r ^= *r >> 7;
                *r ^= *r << 17;
                let roll = (*r % 100) as u32;
                if let Some(reason) = limits.refusal(&children, peer, pending, roll) {
                    refuse(stream, peer, pending, &reason);
                    continue;
                }
                match spawn_child(exe, args, self.config_fd, stream, peer) {
                    Ok(c) => children.push(c),
                    Err(e) => log!(Error, "could not start a process for {peer}: {e}"),
                }
            }
        }
        // Reap what has already exited; live connections keep running, as sshd's do.
        children.retain_mut(|c| !c.reap(limits.penalties.as_mut()));
        self.children = children;
    }
}

/// Reaps connection processes this image did not start: those a listener
/// before a SIGHUP restart started (the same pid, so their parent) that
/// have ended. Only peeks (WNOWAIT) until the exited one is not ours:
/// `known` reap their own, for their exit status.
fn reap_strays(known: &[Started]) {
    use rustix::process::{waitpid, Pid, WaitOptions};
    while let Some(pid) = crate::sys::process::peek_exited_child() {
        if known.iter().any(|c| Pid::from_child(&c.child) == pid) {
            return;
        }
        // Reaping a child of ours that has exited.
        let status = match waitpid(Some(pid), WaitOptions::NOHANG) {
            Ok(Some((_, s))) => s.as_raw(),
            _ => 0,
        };
        log!(
            Debug1,
            "connection process {}, started before the restart, ended ({})",
            pid.as_raw_pid(),
            std::process::ExitStatus::from_raw(status)
        );
    }
}

/// A poll timeout of `n` milliseconds.
fn ms(n: u64) -> Timespec {
    Timespec {
        tv_sec: (n / 1000) as _,
        tv_nsec: ((n % 1000) * 1_000_000) as _,
    }
}

/// The byte a connection process writes to its startup pipe once its user
/// is authenticated (then it closes the pipe); a pipe closed without it
/// means the process ended before authentication.
pub const AUTHENTICATED: u8 = 1;

/// What may refuse a connection at accept: MaxStartups,
/// PerSourceMaxStartups (per PerSourceNetBlockSize block) and
/// PerSourcePenalties.
pub struct SourceLimits {
    /// MaxStartups start:rate:full.
    pub max_startups: (u32, u32, u32),
    /// PerSourceMaxStartups (None: no limit).
    pub per_source_max: Option<u32>,
    /// PerSourceNetBlockSize (v4, v6).
    pub bits: (u8, u8),
    /// PerSourcePenalties (None: `no`).
    pub penalties: Option<PenaltyBox>,
}

impl SourceLimits {
    /// Why a connection from `peer` is refused now, in sshd's words (None: accepted).
    fn refusal(
        &mut self,
        children: &[Started],
        peer: SocketAddr,
        pending: u32,
        roll: u32,
    ) -> Option<String> {
        if let Some(pb) = self.penalties.as_mut() {
            if let Err(r) = pb.check(peer.ip(), Instant::now()) {
                return Some(r.to_owned());
            }
        }
        if drop_connection(pending, self.max_startups, roll) {
            return Some("past MaxStartups".into());
        }
        let limit = self.per_source_max?;
        let block = penalty::mask(peer.ip(), self.bits);
        let same = children
            .iter()
            .filter(|c| c.startup.is_some() && penalty::mask(c.peer.ip(), self.bits) == block)
            .count();
        if same < limit as usize {
            return None;
        }
        let bits = if peer.is_ipv4() {
            self.bits.0
        } else {
            self.bits.1
        };
        log!(
            Verbose,
            "{same} unauthenticated connections from {block}/{bits}: at PerSourceMaxStartups {limit}"
        );
        // sshd says "past MaxStartups" for both limits.
        Some("past MaxStartups".into())
    }
}

/// Closes a refused connection with sshd's log line and its notice to the client.
fn refuse(stream: TcpStream, peer: SocketAddr, pending: u32, reason: &str) {
    let local = stream.local_addr().map_or_else(
        |_| "[?]:0".to_owned(),
        |a| format!("[{}]:{}", a.ip(), a.port()),
    );
    log!(
        Info,
        "drop connection #{pending} from [{}]:{} on {local} {reason}",
        peer.ip(),
        peer.port()
    );
    // Best effort, never blocking the listener.
    let _ = stream.set_nonblocking(true);
    let _ = (&stream).write(b"Not allowed at this time\r\n");
}

/// A connection process and, until it authenticates or ends, its startup pipe.
struct Started {
    child: Child,
    startup: Option<OwnedFd>,
    peer: SocketAddr,
    authenticated: bool,
}

impl Started {
    /// Reads what the startup pipe holds: the authentication byte, or its end.
    fn read_startup(&mut self) {
        let Some(fd) = self.startup.as_ref() else {
            return;
        };
        let mut b = [0u8; 1];
        // Non-blocking: EAGAIN while the child has said nothing yet.
        let r = rustix::io::read(fd, &mut b);
        if r == Ok(1) && b[0] == AUTHENTICATED {
            self.authenticated = true;
            self.startup = None;
        } else if matches!(r, Ok(0) | Ok(1)) {
            self.startup = None;
        } else if r != Err(rustix::io::Errno::AGAIN) {
            self.startup = None;
        }
    }

    /// True once the process has ended (and is reaped); a process that
    /// ended before authenticating gets its source penalised.
    fn reap(&mut self, penalties: Option<&mut PenaltyBox>) -> bool {
        let Ok(Some(status)) = self.child.try_wait() else {
            return false;
        };
        // A byte written just before the exit still counts.
        self.read_startup();
        self.startup = None;
        if self.authenticated {
            return true;
        }
        let kind = Penalty::for_exit(status);
        log!(
            Debug1,
            "connection process {} for {} ended before authentication ({status}){}",
            self.child.id(),
            self.peer,
            kind.map(|k| format!(": {}", k.reason()))
                .unwrap_or_default()
        );
        if let (Some(pb), Some(k)) = (penalties, kind) {
            pb.penalise(self.peer.ip(), k, Instant::now());
        }
        true
    }
}

/// The environment variable naming the startup pipe's fd in the child.
pub(crate) const STARTUP_ENV: &str = "SLUICED_STARTUP_FD";

fn spawn_child(
    exe: &std::path::Path,
    args: &[String],
    config_fd: Option<BorrowedFd<'static>>,
    stream: TcpStream,
    peer: SocketAddr,
) -> std::io::Result<Started> {
    let _ = stream.set_nonblocking(false);
    let out = stream.try_clone()?;
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    // The listener's end never blocks it.
    rustix::io::ioctl_fionbio(&r, true)?;
    // The child inherits the write end (not close-on-exec); the listener
    // is single-threaded, so no other child can inherit it by accident.
    fcntl_setfd(&w, FdFlags::empty())?;
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .env(STARTUP_ENV, w.as_raw_fd().to_string())
        .stdin(Stdio::from(OwnedFd::from(stream)))
        .stdout(Stdio::from(OwnedFd::from(out)));
    // The snapshot likewise, open across this one exec only.
    if let Some(fd) = config_fd {
        cmd.env(
            crate::config::sshd::snapshot::CONFIG_ENV,
            fd.as_raw_fd().to_string(),
        );
        // Not close-on-exec, as above.
        let _ = fcntl_setfd(fd, FdFlags::empty());
    }
    // The connection process gets its socket, its startup pipe and the
    // configuration; nothing else of the listener's (its listening
    // sockets, kept open for a restart, included).
    let mut keep = vec![w.as_raw_fd()];
    keep.extend(config_fd.map(|fd| fd.as_raw_fd()));
    keep.sort_unstable();
    // SAFETY: cloexec_except makes system calls only (async-signal-safe).
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(move || crate::fds::cloexec_except(&keep));
    }
    let child = cmd.spawn();
    if let Some(fd) = config_fd {
        // Setting it back.
        let _ = fcntl_setfd(fd, FdFlags::CLOEXEC);
    }
    let child = child?;
    drop(w);
    Ok(Started {
        child,
        startup: Some(r),
        peer,
        authenticated: false,
    })
}

/// In a connection process: the startup pipe the listener gave us (made
/// close-on-exec so the user's commands never hold it).
pub fn startup_fd_from_env() -> Option<OwnedFd> {
    let fd: RawFd = std::env::var(STARTUP_ENV).ok()?.parse().ok()?;
    std::env::remove_var(STARTUP_ENV);
    // One not open (or not settable) is not ours to take.
    if fd < 3 || !crate::sys::fd::is_open(fd) || crate::sys::fd::set_cloexec(fd).is_err() {
        return None;
    }
    // SAFETY: the listener passed this fd to us and nothing else owns it.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// sshd's random early drop: below `start` pending never drop; at `full` or
/// more always; between, with probability rising linearly from `rate`%.
pub fn drop_connection(pending: u32, (start, rate, full): (u32, u32, u32), roll: u32) -> bool {
    if pending < start {
        return false;
    }
    if pending >= full {
        return true;
    }
    let span = full.saturating_sub(start).max(1);
    let p = rate + (100u32.saturating_sub(rate)) * (pending - start) / span;
    roll < p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_startups_early_drop() {
        assert!(!drop_connection(9, (10, 30, 100), 0));
        assert!(drop_connection(100, (10, 30, 100), 99));
        assert!(drop_connection(10, (10, 30, 100), 29));
        assert!(!drop_connection(10, (10, 30, 100), 30));
    }
}
