//! The client as a library: [`connect`] takes [`ClientOptions`] (built by
//! hand, as `sluice demo` does, or from ssh_config by [`app::resolve`]),
//! runs one session and returns the remote command's exit status, or a
//! [`ClientError`] whose text is the line `ssh` would print (exit 255).

pub mod add_to_agent;
pub mod agent_forward;
pub mod app;
pub mod auth;
pub mod check_host_ip;
pub mod dial;
pub mod error;
pub mod escape;
pub mod forward;
pub mod forward_args;
pub mod forward_spec;
pub mod host_trust;
pub mod identities;
pub mod keepalive;
pub mod known_hosts_command;
pub mod local_command;
pub mod metrics;
pub mod mux;
pub mod mux_client;
pub mod mux_control;
pub mod mux_error;
pub mod mux_forward;
pub mod mux_session;
pub mod mux_wire;
pub mod options;
pub mod plan;
pub mod prompt;
pub mod proxy;
pub mod request;
pub mod session;
pub mod setting_error;
pub mod setup;
pub mod sftp;
pub mod socks;
pub mod streams;
pub mod streams_auto;
pub mod stripe;
pub mod stripe_error;
pub mod stripe_secondary;
pub mod tty;
pub mod update_host_keys;

use crate::log;
use crate::net::crypto_pool::CryptoThreads;
use crate::net::pump::{Pump, PumpError};
use crate::net::sockbuf::{self, Buf};
use crate::sys::fdio;
use dial::tcp_connect;
pub use dial::Dial;
pub use error::{ClientError, ConnectError, HostKeyError, SessionError};
pub use options::ClientOptions;
use plan::SessionPlan;
use session::ClientSession;
use sluice_proto::crypto::SystemRng;
use sluice_proto::{ClientConfig, Connection};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

/// The address the connection reached (not through a proxy), for
/// CheckHostIP and NoHostAuthenticationForLocalhost (client/host_trust.rs):
/// one connection per process, the first one set.
pub(crate) static PEER_IP: std::sync::OnceLock<std::net::IpAddr> = std::sync::OnceLock::new();

/// Connects directly, ConnectionAttempts times with a second between
/// tries (as ssh), or starts the ProxyCommand.
fn transport(opts: &ClientOptions) -> Result<(OwnedFd, Option<proxy::Proxy>), ConnectError> {
    if let Some(cmd) = &opts.proxy_command {
        let p = proxy::spawn(cmd)?;
        let fd =
            p.fd.try_clone()
                .map_err(|error| ConnectError::Socket { what: "dup", error })?;
        return Ok((fd, Some(p)));
    }
    let mut attempt = 1;
    loop {
        match tcp_connect(&Dial::of(opts)) {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                s.set_nonblocking(true)
                    .map_err(|error| ConnectError::Socket {
                        what: "sluice: socket",
                        error,
                    })?;
                if let Ok(a) = s.peer_addr() {
                    let _ = PEER_IP.set(a.ip());
                }
                return Ok((OwnedFd::from(s), None));
            }
            Err(e) if attempt >= opts.connection_attempts.max(1) => return Err(e),
            Err(e) => {
                log!(Debug1, "{e}");
                attempt += 1;
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }
}

/// Connects and runs one session; returns the remote command's exit
/// status (255 when it died of a signal or the session ended without one,
/// as ssh), or why the run failed.
pub fn connect(mut opts: ClientOptions) -> Result<i32, ClientError> {
    if opts.null_stdin || opts.plan.fork_after_auth {
        forward_args::stdin_from_dev_null()?;
    }
    if let Some(path) = &opts.control_ride {
        if let Some(ask) = mux_client::SessionAsk::riding(&opts.plan, &opts.host) {
            if let Some(code) = mux_client::ride(path, &ask) {
                return Ok(code);
            }
        }
    }
    let mux = opts
        .control_master
        .as_ref()
        .and_then(|(path, auto)| mux::Master::listen(path, *auto));
    let mut plan = std::mem::replace(&mut opts.plan, SessionPlan::exec(None));
    let persist = persist_plan(&opts, mux.is_some(), &mut plan);
    let identities = std::mem::take(&mut opts.identities);
    let host_key_check = std::mem::replace(
        &mut opts.host_key_check,
        Box::new(|_, _| Err(HostKeyError::NotVerified)),
    );
    let order = crate::config::cipher_order::current();
    log!(Debug1, "{}", order.describe(&opts.proto.ciphers));
    let (sock, _proxy) = transport(&opts).map_err(ClientError::Connect)?;
    let saved = if plan.stdio {
        prepare_stdio()
    } else {
        Vec::new()
    };
    let stripe = stripe::ClientStripe::plan(&opts, &plan);
    // With a pty `~I` may ask for the figures at any time.
    let metrics = (opts.metrics.summary || opts.metrics.path.is_some() || plan.tty.is_some())
        .then(|| metrics::ClientMetrics::new(opts.metrics.clone(), buffers_asked(&opts)))
        .transpose()
        .map_err(|e| ClientError::Config(setting_error::SettingError::Metrics(e)))?;
    let mut handler = ClientSession::new(
        opts.user.clone(),
        &opts.host,
        identities,
        host_key_check,
        plan,
    );
    handler.stripe = stripe;
    handler.metrics = metrics;
    handler.set_auth_prefs(opts.auth.clone());
    handler.host_key_update = opts
        .update_host_keys
        .clone()
        .map(update_host_keys::HostKeyUpdate::new);
    handler.mux = mux;
    handler.persist = persist;
    handler.keepalive = Some(keepalive::Keepalive::new(
        &opts.host,
        opts.port,
        opts.server_alive.0,
        opts.server_alive.1,
        opts.connect_timeout,
    ));
    let started = std::time::Instant::now();
    let run = run_connection(&opts, &mut handler, sock, _proxy);
    restore(saved);
    let (conn, result) = run?;
    outcome(&mut handler, &conn, result, started)
}

/// ControlPersist: the master's own session is ridden from the foreground
/// once the master is in the background, so the master's plan loses it.
fn persist_plan(
    opts: &ClientOptions,
    listening: bool,
    plan: &mut SessionPlan,
) -> Option<mux_client::Persist> {
    match (listening, &opts.control_master, opts.control_persist) {
        (true, Some((path, _)), Some(idle)) => {
            let ask = mux_client::SessionAsk::of(plan, &opts.host);
            if ask.is_some() {
                plan.no_session = true;
                plan.stdio = false;
                plan.tty = None;
            }
            Some(mux_client::Persist::new(path, ask, idle))
        }
        _ => None,
    }
}

/// Stdin and stdout for bulk: a pipe on either (`zfs send | sluice ...`,
/// `sluice ... | tar x`) moves a whole packet per syscall at 1 MiB instead
/// of 64 KiB (fcntl refuses anything that is not a pipe, which is fine);
/// fds 0-2 non-blocking. Returns the flags to restore.
fn prepare_stdio() -> Vec<(i32, i32)> {
    for fd in [0, 1] {
        fdio::set_pipe_size(fd, 1 << 20);
    }
    [0, 1, 2]
        .iter()
        .filter_map(|&fd| fdio::set_nonblocking(fd, true).ok().map(|f| (fd, f)))
        .collect()
}

/// The pump over `sock` until the connection ends. A server that takes a
/// wrong KEX guess as real (paramiko) fails the exchange before anything
/// else happened (no host key, no auth): one new connection without the
/// guess, as if KexGuess=no had been given.
fn run_connection(
    opts: &ClientOptions,
    handler: &mut ClientSession,
    mut sock: OwnedFd,
    mut _proxy: Option<proxy::Proxy>,
) -> Result<(Connection, Result<(), PumpError<SessionError>>), ClientError> {
    let mut proto = opts.proto.clone();
    loop {
        let common = proto.clone();
        let mut conn = Connection::client(ClientConfig { common }, Box::new(SystemRng));
        if let Some(st) = handler.stripe.as_mut() {
            st.set_primary_fd(sock.as_raw_fd());
        }
        if let Some(m) = handler.metrics.as_mut() {
            m.set_socket(Some(sock.as_raw_fd()));
        }
        let result = run_pump(
            &mut conn,
            handler,
            &sock,
            opts.crypto_threads,
            opts.compression_level.is_some(),
        );
        let guess_refused = matches!(
            &result,
            Err(PumpError::Protocol(sluice_proto::Error::Protocol(
                sluice_proto::Violation::KexGuessNotIgnored
            )))
        );
        if !(guess_refused && proto.kex_guess) {
            return Ok((conn, result));
        }
        log!(
            Debug1,
            "{} does not ignore a wrong KEX guess: reconnecting without one",
            conn.peer_version().unwrap_or("the server")
        );
        proto.kex_guess = false;
        (sock, _proxy) = transport(opts).map_err(ClientError::Connect)?;
    }
}

/// The run's exit code once the connection is over (see [`connect`]).
fn outcome(
    handler: &mut ClientSession,
    conn: &Connection,
    result: Result<(), PumpError<SessionError>>,
    started: std::time::Instant,
) -> Result<i32, ClientError> {
    crate::net::compress_ctl::log_summary(conn);
    log_transferred(started.elapsed());
    if let Some(m) = handler.metrics.as_mut() {
        if let Some(st) = handler.stripe.as_ref() {
            m.set_streams(st.connections());
        }
        m.finish(conn);
    }
    if crate::net::pump::data_lost() {
        // What the remote command sent did not all arrive (logged where
        // the write failed): never a success, whatever its status.
        return Ok(255);
    }
    // A striped channel's output is written by its own thread: all of it
    // before the exit status counts.
    if let (Ok(()), Some(st)) = (&result, handler.stripe.as_mut()) {
        if let Err(e) = st.finish() {
            return Err(ClientError::Session(SessionError::Stripe(e)));
        }
    }
    if let (Err(_), Some(text)) = (
        &result,
        handler.stripe.as_ref().and_then(|s| s.failure_text()),
    ) {
        return Err(ClientError::Session(SessionError::Stripe(text)));
    }
    match result {
        Ok(()) if handler.finished_cleanly() => {
            if let Some(sig) = &handler.exit_signal {
                // ssh says nothing; the output may be cut short, so say why.
                log!(Error, "Remote command killed by signal {sig}");
                return Ok(255);
            }
            Ok(handler.exit_status.map_or(255, |s| (s & 0xff) as i32))
        }
        Ok(()) => Ok(255),
        Err(PumpError::Handler(e)) => Err(ClientError::Session(e)),
        Err(e) => Err(ClientError::Connection(e.map_handler(|e| e.to_string()))),
    }
}

/// The socket buffer sizes [`tcp_connect`] sets (0: autotuned), for the
/// metrics: TcpRcvBuf / TcpSndBuf, else the automatic size.
fn buffers_asked(opts: &ClientOptions) -> (u64, u64) {
    let size = |asked: u64, b: Buf| match asked {
        0 => sockbuf::auto_size(b).unwrap_or(0),
        n => n,
    };
    (
        size(opts.tcp_rcvbuf, Buf::Recv),
        size(opts.tcp_sndbuf, Buf::Send),
    )
}

/// ssh's two end-of-session lines (VERBOSE, so `-v` shows them): bytes on
/// the connection's socket each way, and the rates over the session.
fn log_transferred(elapsed: std::time::Duration) {
    let (received, sent) = crate::net::pump::socket_totals();
    let secs = elapsed.as_secs_f64();
    log!(
        Verbose,
        "Transferred: sent {sent}, received {received} bytes, in {secs:.1} seconds"
    );
    if secs > 0.0 {
        log!(
            Verbose,
            "Bytes per second: sent {:.1}, received {:.1}",
            sent as f64 / secs,
            received as f64 / secs
        );
    }
}

/// Puts back the file status flags of fds 0-2. Reversed: fds sharing one
/// open file (a terminal) get the flags the first of them saw, from before
/// any change.
fn restore(saved: Vec<(i32, i32)>) {
    for (fd, flags) in saved.into_iter().rev() {
        fdio::restore_flags(fd, flags);
    }
}

/// One connection's loop over `sock`.
fn run_pump(
    conn: &mut Connection,
    handler: &mut ClientSession,
    sock: &impl AsRawFd,
    threads: CryptoThreads,
    fixed_level: bool,
) -> Result<(), PumpError<SessionError>> {
    let mut pump = Pump::new(sock.as_raw_fd());
    pump.set_crypto_threads(conn, threads);
    if fixed_level {
        pump.fix_compression_level();
    }
    pump.run(conn, handler)
}
