//! The passenger side of ControlMaster (PROTOCOL.mux): a client with a
//! ControlPath and ControlMaster no or auto asks a running master, sluice's
//! or ssh's, to run its session (MUX_C_NEW_SESSION), passes it stdin,
//! stdout and stderr, and exits with the status the master reports. Also
//! ControlPersist's start: the new master goes to the background and the
//! foreground process rides it for its own session, as ssh does.

use super::forward_spec::{Forward, Kind};
use super::mux_error::MuxError;
use super::mux_wire::{self as mux, Fields, Msg};
use super::plan::SessionPlan;
use crate::log;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;

/// What a passenger asks the master for.
#[derive(Debug, Clone)]
pub struct SessionAsk {
    command: Vec<u8>,
    subsystem: bool,
    tty: bool,
    /// The pty was asked for explicitly (-t, RequestTTY yes/force).
    tty_required: bool,
    agent: bool,
    escape: Option<u8>,
    env: Vec<(String, Vec<u8>)>,
    host: String,
    /// `-W host:port` through the master instead of a session.
    stdio_fwd: Option<(String, u16)>,
    /// Forwardings to ask of the master first, as ssh's passenger does.
    forwards: Vec<(Kind, Forward)>,
    /// ExitOnForwardFailure: a refused forwarding ends the run.
    exit_on_failure: bool,
}

impl SessionAsk {
    /// The session `plan` describes, when a master can run it: a session
    /// on fds 0-2 with no forwarding and no -f (those connect on their own).
    pub fn of(plan: &SessionPlan, host: &str) -> Option<SessionAsk> {
        let f = &plan.forwards;
        let forwards = !f.local.is_empty()
            || !f.remote.is_empty()
            || !f.dynamic.is_empty()
            || f.stdio.is_some();
        if forwards {
            return None;
        }
        Self::session_of(plan, host)
    }

    /// The session of `plan`, leaving its forwardings aside.
    fn session_of(plan: &SessionPlan, host: &str) -> Option<SessionAsk> {
        if plan.no_session || !plan.stdio || plan.fork_after_auth {
            return None;
        }
        Some(SessionAsk {
            command: plan.command.clone().unwrap_or_default(),
            subsystem: plan.subsystem,
            tty: plan.tty.is_some(),
            tty_required: plan.tty.as_ref().is_some_and(|t| t.required),
            agent: plan.agent.enabled,
            escape: plan.tty.as_ref().and_then(|t| t.escape),
            env: plan.env.clone(),
            host: host.to_owned(),
            stdio_fwd: None,
            forwards: Vec::new(),
            exit_on_failure: false,
        })
    }

    /// What a passenger with `plan` asks a running master for: its
    /// forwardings first, then its session or its `-W` forwarding. None
    /// for what connects on its own: -f, and -N without -W.
    pub fn riding(plan: &SessionPlan, host: &str) -> Option<SessionAsk> {
        let f = &plan.forwards;
        if plan.fork_after_auth || (plan.no_session && f.stdio.is_none()) {
            return None;
        }
        let mut ask = match &f.stdio {
            Some(to) => SessionAsk {
                command: Vec::new(),
                subsystem: false,
                tty: false,
                tty_required: false,
                agent: false,
                escape: None,
                env: Vec::new(),
                host: host.to_owned(),
                stdio_fwd: Some(to.clone()),
                forwards: Vec::new(),
                exit_on_failure: false,
            },
            None => SessionAsk::session_of(plan, host)?,
        };
        let tag =
            |k: Kind, v: &[Forward]| v.iter().map(move |x| (k, x.clone())).collect::<Vec<_>>();
        ask.forwards = [
            tag(Kind::Local, &f.local),
            tag(Kind::Remote, &f.remote),
            tag(Kind::Dynamic, &f.dynamic),
        ]
        .concat();
        ask.exit_on_failure = f.exit_on_failure;
        Some(ask)
    }

    /// MUX_C_NEW_STDIO_FWD (the port as a uint32, as ssh sends it).
    fn stdio_message(&self, request_id: u32, host: &str, port: u16) -> Vec<u8> {
        Msg::new()
            .u32(mux::C_NEW_STDIO_FWD)
            .u32(request_id)
            .string(b"")
            .string(host.as_bytes())
            .u32(port.into())
            .finish()
    }

    fn message(&self, request_id: u32) -> Vec<u8> {
        let mut m = Msg::new();
        m.u32(mux::C_NEW_SESSION).u32(request_id).string(b"");
        // The four flags as ssh sends them: uint32 each.
        for flag in [self.tty, false, self.agent, self.subsystem] {
            m.u32(flag as u32);
        }
        m.u32(self.escape.map_or(u32::MAX, u32::from));
        let term = std::env::var("TERM").unwrap_or_default();
        m.string(term.as_bytes()).string(&self.command);
        for (name, value) in &self.env {
            m.string(&[name.as_bytes(), b"=", value].concat());
        }
        m.finish()
    }
}

/// Runs the session through the master on `path`. None when no master
/// answered there or it would not run the session (the caller connects on
/// its own); else the exit status, as ssh's.
pub fn ride(path: &str, ask: &SessionAsk) -> Option<i32> {
    let mut s = match UnixStream::connect(path) {
        Ok(s) => s,
        Err(e) => {
            log!(
                Debug1,
                "Control socket connect({path}): {}",
                crate::io_error::describe_io_error(&e)
            );
            return None;
        }
    };
    let master = match hello_and_pid(&mut s) {
        Ok(pid) => pid,
        Err(e) => {
            log!(Error, "master hello exchange failed: {e}");
            return None;
        }
    };
    log!(Debug1, "multiplex: master pid {master}");
    // The master makes them non-blocking (one file description each, ours
    // too): their flags go back as they were once the session is over.
    let saved: Vec<(i32, i32)> = {
        use std::os::fd::{AsFd, AsRawFd};
        let (i, o, e) = (std::io::stdin(), std::io::stdout(), std::io::stderr());
        [i.as_fd(), o.as_fd(), e.as_fd()]
            .into_iter()
            .filter_map(|fd| {
                let flags = rustix::fs::fcntl_getfl(fd).ok()?;
                Some((fd.as_raw_fd(), flags.bits() as i32))
            })
            .collect()
    };
    if !ask.forwards.is_empty() {
        let r = super::mux_control::ask_master(
            &mut s,
            false,
            &ask.forwards,
            super::mux_control::Asker::Passenger {
                exit_on_failure: ask.exit_on_failure,
            },
        );
        if let Err(e) = r {
            log!(Error, "{e}");
            return Some(255);
        }
    }
    let sent = (|| -> std::io::Result<()> {
        match &ask.stdio_fwd {
            Some((host, port)) => {
                s.write_all(&ask.stdio_message(2, host, *port))?;
                crate::net::fdpass::send_fd(&s, std::io::stdin().as_fd())?;
                crate::net::fdpass::send_fd(&s, std::io::stdout().as_fd())?;
            }
            None => {
                s.write_all(&ask.message(2))?;
                crate::net::fdpass::send_fd(&s, std::io::stdin().as_fd())?;
                crate::net::fdpass::send_fd(&s, std::io::stdout().as_fd())?;
                crate::net::fdpass::send_fd(&s, std::io::stderr().as_fd())?;
            }
        }
        Ok(())
    })();
    if let Err(e) = sent {
        log!(
            Error,
            "multiplex: session request to the master failed: {e}"
        );
        return None;
    }
    let reply = match mux::read_message(&mut s) {
        Ok(m) => m,
        Err(e) => {
            log!(Error, "multiplex: read from master failed: {e}");
            return None;
        }
    };
    match mux::word(&reply, 0) {
        Some(mux::S_SESSION_OPENED) => {}
        Some(mux::S_PERMISSION_DENIED) => {
            log!(
                Error,
                "Master refused session request: {}",
                mux::reason(&reply, 2)
            );
            return None;
        }
        Some(mux::S_FAILURE) => {
            log!(Error, "session request failed: {}", mux::reason(&reply, 2));
            return None;
        }
        other => {
            log!(
                Error,
                "multiplex: unexpected response {other:?} from master"
            );
            return None;
        }
    }
    log!(
        Debug1,
        "multiplex: session opened (id {})",
        mux::word(&reply, 2).unwrap_or(0)
    );
    let code = if ask.stdio_fwd.is_some() {
        // The master closes the connection when the forwarding ends.
        while mux::read_message(&mut s).is_ok() {}
        0
    } else {
        wait_for_exit(&mut s, ask)
    };
    for (fd, flags) in saved {
        crate::sys::fdio::restore_flags(fd, flags);
    }
    Some(code)
}

/// The master's hello, ours, and an alive check for its pid.
fn hello_and_pid(s: &mut UnixStream) -> std::io::Result<u32> {
    let bad = |what: &str| std::io::Error::other(what.to_owned());
    let m = mux::read_message(s)?;
    if mux::word(&m, 0) != Some(mux::HELLO) {
        return Err(bad("expected HELLO"));
    }
    if mux::word(&m, 1) != Some(mux::VERSION) {
        return Err(bad("unsupported multiplexing protocol version"));
    }
    s.write_all(&mux::frame(&[mux::HELLO, mux::VERSION], None))?;
    s.write_all(&mux::frame(&[mux::C_ALIVE_CHECK, 1], None))?;
    let m = mux::read_message(s)?;
    let mut f = Fields(&m);
    match (f.u32(), f.u32(), f.u32()) {
        (Some(mux::S_ALIVE), Some(1), Some(pid)) => Ok(pid),
        _ => Err(bad("bad reply to the alive check")),
    }
}

/// Waits for the session's end, the terminal in raw mode meanwhile when it
/// has a pty. The descriptors' flags are left alone until then: the
/// master's writes to them must not block.
fn wait_for_exit(s: &mut UnixStream, ask: &SessionAsk) -> i32 {
    let raw = ask.tty && crate::client::tty::stdin_is_tty();
    if raw {
        crate::client::tty::enter_raw();
    }
    let code = loop {
        let m = match mux::read_message(s) {
            Ok(m) => m,
            Err(e) => {
                crate::client::tty::leave_raw();
                log!(
                    Error,
                    "Shared connection to {} closed by the master: {e}",
                    ask.host
                );
                break 255;
            }
        };
        match (mux::word(&m, 0), mux::word(&m, 2)) {
            (Some(mux::S_TTY_ALLOC_FAIL), _) => {
                crate::client::tty::leave_raw();
                if ask.tty_required {
                    log!(Error, "PTY allocation request failed");
                }
            }
            (Some(mux::S_EXIT_MESSAGE), Some(status)) => break (status & 0xff) as i32,
            _ => {}
        }
    };
    crate::client::tty::leave_raw();
    if raw {
        log!(Info, "Shared connection to {} closed.", ask.host);
    }
    code
}

/// ControlPersist: after authentication the master goes on in the
/// background (a new session, stdio on /dev/null) and this process rides
/// it for `ask`'s session, then exits with its status; without a session
/// (-N) it just exits. Returns in the background master.
pub fn persist_detach(path: &str, ask: Option<&SessionAsk>) -> Result<(), MuxError> {
    log!(
        Debug1,
        "Backgrounding the multiplexing master (ControlPersist)"
    );
    // SAFETY: fork between batches, as client/forward.rs's go_background:
    // the other threads are parked crypto workers the child does not use.
    match unsafe { crate::sys::process::fork() } {
        Err(error) => Err(MuxError::Io {
            what: "fork",
            error,
        }),
        Ok(crate::sys::process::Forked::Child) => {
            let _ = rustix::process::setsid();
            let null = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/null")
                .map_err(|error| MuxError::Io {
                    what: "/dev/null",
                    error,
                })?;
            let _ = rustix::stdio::dup2_stdin(&null);
            let _ = rustix::stdio::dup2_stdout(&null);
            let _ = rustix::stdio::dup2_stderr(&null);
            Ok(())
        }
        Ok(crate::sys::process::Forked::Parent(_)) => {
            let code = match ask {
                Some(ask) => ride(path, ask).unwrap_or(255),
                None => 0,
            };
            let _ = std::io::stderr().flush();
            // Leave without running destructors that would touch the
            // connection (and the control socket) the master now owns.
            crate::sys::process::exit_now(code)
        }
    }
}

/// ControlPersist on a master: when it goes to the background, and when an
/// idle master ends.
pub struct Persist {
    path: String,
    ask: Option<SessionAsk>,
    /// None: the master stays until `-O exit` (ControlPersist yes or 0).
    idle_limit: Option<std::time::Duration>,
    /// Not yet in the background (done once authenticated and forwarding
    /// is set up).
    pub pending: bool,
    idle_since: Option<std::time::Instant>,
}

impl Persist {
    /// For the master on `path` whose own session, if any, `ask` is.
    pub fn new(
        path: &str,
        ask: Option<SessionAsk>,
        idle_limit: Option<std::time::Duration>,
    ) -> Self {
        Persist {
            path: path.to_owned(),
            ask,
            idle_limit,
            pending: false,
            idle_since: None,
        }
    }

    /// Goes to the background (see [`persist_detach`]).
    pub fn detach(&mut self) -> Result<(), MuxError> {
        self.pending = false;
        persist_detach(&self.path, self.ask.take().as_ref())
    }

    /// Whether the master has been idle (`busy` false: no passenger, no
    /// forwarded connection) for ControlPersist's time.
    pub fn expired(&mut self, busy: bool, now: std::time::Instant) -> bool {
        if busy || self.pending {
            self.idle_since = None;
            return false;
        }
        let since = *self.idle_since.get_or_insert(now);
        self.idle_limit
            .is_some_and(|limit| now.saturating_duration_since(since) >= limit)
    }

    /// When to look again at the idle time.
    pub fn tick_interval(&self) -> Option<std::time::Duration> {
        self.idle_limit
            .map(|l| l.min(std::time::Duration::from_secs(1)))
    }
}
