//! `sluiced` run: configuration, `-T`/`-t`, the listener, and the
//! per-connection process (`-R` from the listener, or `-i` by hand). The
//! command line is parsed in cli/ (cli/sshd_main.rs).

use crate::config::sshd::{snapshot, MatchContext, ServerConfig as Sshd};
use crate::log::{self, Level};
use crate::server::listen::{self, Listener};
use crate::server::restart;
use rustix::process::Signal;
use std::os::fd::FromRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// What `sluiced`'s command line asks for (parsed by cli/sshd_args.rs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerArgs {
    /// `-A`: make the missing host keys and exit, as `ssh-keygen -A`.
    pub generate_host_keys: bool,
    /// `-D`: stay in the foreground.
    pub foreground: bool,
    /// `-d` count: debug (implies foreground).
    pub debug: u8,
    /// `-e`: log to stderr.
    pub log_stderr: bool,
    /// `-f`.
    pub config_file: Option<String>,
    /// `-p` (repeatable).
    pub ports: Vec<String>,
    /// `-h` (repeatable).
    pub host_keys: Vec<String>,
    /// `-o` (repeatable).
    pub options: Vec<String>,
    /// `-T`: print the effective configuration.
    pub print_config: bool,
    /// `-t`: test the configuration.
    pub test_config: bool,
    /// `-i`: serve one connection on stdin/stdout (inetd mode).
    pub inetd: bool,
    /// `-R`: a connection process started by the listener (internal).
    pub reexec: bool,
    /// `-q`.
    pub quiet: bool,
    /// `-C user=..,host=..,addr=..,laddr=..,lport=..`: the connection `-T` applies Match blocks for.
    pub connection_spec: Option<String>,
}

static STOP: AtomicBool = AtomicBool::new(false);
/// SIGHUP: the listener restarts (server/restart.rs).
static HUP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_term(_: i32) {
    STOP.store(true, Ordering::Relaxed);
}

extern "C" fn on_hup(_: i32) {
    HUP.store(true, Ordering::Relaxed);
}

/// The listener's: SIGTERM and SIGINT stop it, SIGHUP restarts it.
fn install_signal_handlers() {
    // The handlers only store to an atomic.
    crate::sys::signal::set_handler(Signal::TERM.as_raw(), on_term);
    crate::sys::signal::set_handler(Signal::INT.as_raw(), on_term);
    crate::sys::signal::set_handler(Signal::HUP.as_raw(), on_hup);
    crate::sys::signal::ignore(Signal::PIPE.as_raw());
    // A restart blocked them across its exec (restart.rs).
    restart::unblock_listener_signals();
}

/// `-f`, else /etc/sluice/sluiced_config, else (a source build beside
/// openssh-server only) /etc/ssh/sshd_config.
pub fn config_path(args: &ServerArgs) -> String {
    args.config_file
        .clone()
        .unwrap_or_else(|| crate::config::sshd::default_config_path().to_owned())
}

fn load_config(
    args: &ServerArgs,
) -> Result<(Sshd, Vec<String>), crate::config::sshd::error::SshdConfigError> {
    let path = PathBuf::from(config_path(args));
    let mut overrides: Vec<String> = args.options.clone();
    overrides.extend(args.host_keys.iter().map(|h| format!("HostKey {h}")));
    Sshd::load_with_ports(&path, &overrides, &args.ports)
}

/// Runs `sluiced` as `args` say; returns the exit code. `argv` is the
/// command line itself, which the listener passes on (with `-R`, without
/// `-D`) to each connection's process.
pub fn run(args: &ServerArgs, argv: &[String]) -> i32 {
    match run_phases(args, argv) {
        Ok(code) | Err(code) => code,
    }
}

/// `run`'s steps in order; `Err` is an exit code for a step that stops
/// early.
fn run_phases(args: &ServerArgs, argv: &[String]) -> Result<i32, i32> {
    let cfg = configure(args)?;
    if args.generate_host_keys {
        return Ok(generate_host_keys(&cfg));
    }
    let ctx = match args
        .connection_spec
        .as_deref()
        .map(MatchContext::parse_spec)
    {
        Some(Err(e)) => {
            crate::errln!("{e}");
            return Err(1);
        }
        Some(Ok(c)) => Some(c),
        None => None,
    };
    if let Some(fd) = crate::server::privsep::postauth_fd_from_env() {
        // The post-auth process of privilege separation: no host keys here.
        if args.log_stderr {
            log::set_prefix(format!("sluiced[{}]: ", std::process::id()));
        }
        return Ok(crate::server::privsep::postauth::run(cfg, fd));
    }
    if args.inetd {
        // Pipes from a ProxyCommand: a relay makes fd 0 a socket, before
        // the host keys are in this process's memory.
        if let Err(e) = crate::server::inetd::socket_on_stdin() {
            crate::log!(Fatal, "inetd mode: {e}");
            return Err(255);
        }
    }
    check_host_keys_at_start(args, &cfg)?;
    if args.print_config {
        return Ok(print_config(&cfg, ctx));
    }
    if args.test_config {
        return Ok(0);
    }
    if args.reexec || args.inetd {
        return Ok(serve_accepted(args, cfg, argv));
    }
    listen_and_serve(args, cfg, argv)
}

/// The configuration read (as the listener read it, in a connection's
/// process) and the log set up as it and the command line say.
fn configure(args: &ServerArgs) -> Result<Sshd, i32> {
    let path = &config_path(args);
    // A connection's processes parse the files as the listener read them.
    if let Err(e) = snapshot::load_from_env() {
        crate::errln!("{e}");
        return Err(255);
    }
    if snapshot::replaying() {
        // Started through /proc/self/exe: "exe" in ps otherwise (the
        // main thread's name is the process's).
        let _ = rustix::thread::set_name(c"sluiced");
    } else if let Err(e) = std::fs::metadata(path) {
        crate::errln!("{path}: {}", crate::io_error::describe_io_error(&e));
        return Err(1);
    }
    let (cfg, warnings) = load_config(args).map_err(|e| {
        crate::errln!("{e}");
        255
    })?;
    log::set_level(match args.debug {
        0 if args.quiet => Level::Quiet,
        0 => cfg.log_level,
        1 => Level::Debug1,
        2 => Level::Debug2,
        _ => Level::Debug3,
    });
    log::escape_messages();
    // As sshd: syslog unless -e or -d (stderr), or -T/-t (a person reads them).
    if !(args.log_stderr || args.print_config || args.test_config) {
        log::use_syslog(&cfg.syslog_facility);
    }
    for w in &warnings {
        crate::log!(Verbose, "{w}");
    }
    Ok(cfg)
}

/// The host keys are checked at start, as sshd does, but never read by
/// a process that will fork a pre-auth child: a connection's monitor
/// (`-R`, `-i`, `-d`) reads them after that fork (privsep/monitor.rs).
/// The listener reads them here; its connections are fresh images.
fn check_host_keys_at_start(args: &ServerArgs, cfg: &Sshd) -> Result<(), i32> {
    let serves_here = args.reexec || args.inetd || args.debug > 0;
    let checked = if serves_here && !(args.print_config || args.test_config) {
        if args.reexec {
            Ok(())
        } else {
            check_host_keys_apart(cfg).map_err(|e| e.to_string())
        }
    } else {
        crate::keys::host_keys::load(&cfg.host_keys)
            .map(drop)
            .map_err(|e| e.to_string())
    };
    checked.map_err(|e| {
        crate::log!(Fatal, "{e}");
        1
    })
}

/// `-T`: the effective configuration; without -C, a blank spec (only
/// `Match All` blocks apply).
fn print_config(cfg: &Sshd, ctx: Option<MatchContext>) -> i32 {
    match cfg.for_test(&ctx.unwrap_or_default()) {
        Ok(eff) => {
            crate::out!("{}", eff.dump());
            crate::outln!("{}", crate::server::privsep::DUMP_LINE);
            0
        }
        Err(e) => {
            crate::errln!("{e}");
            255
        }
    }
}

/// `-R` (from the listener) or `-i`: the connection on fd 0 served.
fn serve_accepted(args: &ServerArgs, cfg: Sshd, argv: &[String]) -> i32 {
    if args.log_stderr {
        log::set_prefix(format!("sluiced[{}]: ", std::process::id()));
    }
    // SAFETY: fd 0 is the accepted socket handed over by the listener (or inetd).
    let sock = unsafe { std::net::TcpStream::from_raw_fd(0) };
    // The socket is also fd 1; move stdout away so a stray print cannot corrupt the stream.
    if let Ok(null) = open_dev_null(rustix::fs::OFlags::WRONLY) {
        let _ = rustix::stdio::dup2_stdout(&null);
    }
    let startup = listen::startup_fd_from_env();
    crate::server::privsep::serve(cfg, sock, startup, argv)
}

/// The listener: bound (or its sockets kept across a SIGHUP restart),
/// then one connection with -d, else daemonized and serving until
/// SIGTERM.
fn listen_and_serve(args: &ServerArgs, cfg: Sshd, argv: &[String]) -> Result<i32, i32> {
    let addrs = cfg.listen_addrs().map_err(|e| {
        crate::log!(Fatal, "{e}");
        255
    })?;
    // A listener restarted by SIGHUP gets its sockets back (restart.rs).
    let kept = restart::inherited();
    let restarted = kept.is_some();
    let mut listener = Listener::bind(&addrs, kept.unwrap_or_default()).map_err(|e| {
        crate::log!(Fatal, "{e}");
        255
    })?;
    listener.set_buffers(cfg.tcp_rcvbuf, cfg.tcp_sndbuf);
    // As root, sshd's check of its privilege separation directory, made
    // here when missing (root's, 0755) as Debian's ssh.service makes /run/sshd.
    if rustix::process::geteuid().is_root() {
        if let Err(e) = crate::server::sandbox::ensure_chroot_dir() {
            crate::log!(Fatal, "{e}");
            return Err(255);
        }
    }
    if args.debug > 0 {
        // sshd -d: one connection, served in this process, then exit.
        // Write errors are handled where they occur.
        crate::sys::signal::ignore(Signal::PIPE.as_raw());
        return Ok(match listener.accept_one() {
            Some(sock) => crate::server::privsep::serve(cfg, sock, None, argv),
            None => 255,
        });
    }
    // Before the daemon changes directory (a relative argv[0]).
    let own_path = restart::own_path();
    // Restarted, this process is the daemon already: the same pid.
    if !args.foreground && !restarted && !daemonize() {
        return Err(255);
    }
    if let Some(p) = &cfg.pid_file {
        if let Err(e) = std::fs::write(p, format!("{}\n", std::process::id())) {
            crate::log!(Error, "Couldn't create pid file \"{}\": {e}", p.display());
        }
    }
    install_signal_handlers();
    // Bound, daemonized and the pid file written: systemd's Type=notify
    // may call the service started (again after a SIGHUP re-exec).
    crate::server::notify::ready();
    serve_until_stopped(&mut listener, &cfg, argv, own_path.as_deref());
    crate::log!(Info, "Received signal 15; terminating.");
    if let Some(p) = &cfg.pid_file {
        let _ = std::fs::remove_file(p);
    }
    Ok(0)
}

/// The daemon's loop: connections accepted and re-executed until
/// SIGTERM; SIGHUP restarts (or, when the check fails, serving goes on).
fn serve_until_stopped(
    listener: &mut Listener,
    cfg: &Sshd,
    argv: &[String],
    own_path: Option<&Path>,
) {
    // Connections run this very image, even if the file was replaced or
    // removed since (sshd's re-exec fallback), with the configuration as
    // read now (snapshot.rs), which the children inherit.
    let exe = PathBuf::from("/proc/self/exe");
    listener.pass_config(snapshot::fd_for_children());
    let mut child_args: Vec<String> = argv.iter().filter(|a| *a != "-D").cloned().collect();
    child_args.push("-R".into());
    let mut limits = listen::SourceLimits {
        max_startups: cfg.max_startups,
        per_source_max: cfg.per_source_max_startups,
        bits: cfg.per_source_net_block_size,
        penalties: cfg.per_source_penalties.resolve().map(|p| {
            crate::server::penalty::PenaltyBox::new(
                p,
                cfg.per_source_net_block_size,
                cfg.per_source_penalty_exempt.clone(),
            )
        }),
    };
    loop {
        listener.serve(&exe, &child_args, &mut limits, &STOP, &HUP);
        if STOP.load(Ordering::Relaxed) {
            break;
        }
        HUP.store(false, Ordering::Relaxed);
        // Returns only when it did not restart; serving goes on.
        restart::on_sighup(
            own_path,
            argv,
            &listener.socket_fds(),
            cfg.pid_file.as_deref(),
            &STOP,
        );
    }
}

/// `-A`: every missing host key made (the HostKey files, else the defaults
/// beside the configuration file: Ed25519, ECDSA, RSA), on one line as
/// `ssh-keygen -A` says it; nothing printed when none is missing. 0 when
/// all were made, 1 when one could not be.
fn generate_host_keys(cfg: &Sshd) -> i32 {
    use crate::keys::host_keygen::{self, KeyType};
    let mut missing: Vec<(KeyType, PathBuf)> = cfg
        .host_key_targets()
        .into_iter()
        .filter(|p| std::fs::symlink_metadata(p).is_err())
        .map(|p| (KeyType::for_path(&p), p))
        .collect();
    if missing.is_empty() {
        return 0;
    }
    // ssh-keygen -A's order and comment.
    missing.sort_by_key(|(k, _)| {
        [KeyType::Ed25519, KeyType::Ecdsa, KeyType::Rsa]
            .iter()
            .position(|x| x == k)
    });
    let host = crate::config::ssh::tokens::local_hostname();
    let comment = format!("root@{}", if host.is_empty() { "localhost" } else { &host });
    let mut made = Vec::new();
    let mut failed = false;
    for (kind, path) in &missing {
        match host_keygen::generate(*kind, &comment).and_then(|k| host_keygen::write(&k, path)) {
            Ok(()) => made.push(kind.label()),
            Err(e) => {
                crate::errln!("sluiced: {}: {e}", path.display());
                failed = true;
            }
        }
    }
    if !made.is_empty() {
        crate::outln!("sluiced: generating new host keys: {}", made.join(" "));
    }
    i32::from(failed)
}

/// Why the host keys could not be checked apart; `Display` is the exit
/// message.
#[derive(Debug)]
enum HostKeyCheckError {
    /// The checking child could not be forked.
    Fork(std::io::Error),
    /// The child found no host key it could load (its lines say why).
    NoHostKeys,
}

impl std::fmt::Display for HostKeyCheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostKeyCheckError::Fork(e) => write!(f, "fork: {e}"),
            HostKeyCheckError::NoHostKeys => {
                f.write_str("sluiced: no hostkeys available -- exiting.")
            }
        }
    }
}

impl std::error::Error for HostKeyCheckError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HostKeyCheckError::Fork(e) => Some(e),
            HostKeyCheckError::NoHostKeys => None,
        }
    }
}

/// Reads the host keys in a short-lived child, so that this process (which
/// forks the pre-auth child later) never held them; the child's log lines
/// say which key failed; the error is the exit message.
fn check_host_keys_apart(cfg: &Sshd) -> Result<(), HostKeyCheckError> {
    use crate::sys::process::{exit_now, fork, Forked};
    // SAFETY: no thread has been started yet; the child only loads keys
    // (log lines go to stderr or syslog) and leaves with exit_now.
    let pid = match unsafe { fork() } {
        Err(e) => return Err(HostKeyCheckError::Fork(e)),
        Ok(Forked::Child) => {
            let code = match crate::keys::host_keys::load(&cfg.host_keys) {
                Ok(_) => 0,
                Err(_) => 1,
            };
            // Without the parent's destructors.
            exit_now(code)
        }
        Ok(Forked::Parent(pid)) => pid,
    };
    // Our own child; a wait that fails otherwise than EINTR counts as a
    // clean exit, as the status it leaves (0) always did.
    let code = loop {
        match rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty()) {
            Ok(Some((_, status))) => break status.exit_status(),
            Err(rustix::io::Errno::INTR) => continue,
            Ok(None) | Err(_) => break Some(0),
        }
    };
    if code == Some(0) {
        Ok(())
    } else {
        Err(HostKeyCheckError::NoHostKeys)
    }
}

/// /dev/null opened with `flags` (not close-on-exec: it may land on one
/// of 0, 1 and 2 when one was closed).
fn open_dev_null(flags: rustix::fs::OFlags) -> rustix::io::Result<std::os::fd::OwnedFd> {
    rustix::fs::open(c"/dev/null", flags, rustix::fs::Mode::empty())
}

fn daemonize() -> bool {
    use crate::sys::process::{exit_now, fork, Forked};
    // SAFETY: a single-threaded process before any thread starts: the
    // child runs on as the daemon.
    match unsafe { fork() } {
        Err(_) => return false,
        Ok(Forked::Child) => {}
        Ok(Forked::Parent(_)) => exit_now(0),
    }
    let _ = rustix::process::setsid();
    if let Ok(null) = open_dev_null(rustix::fs::OFlags::RDWR) {
        let _ = rustix::stdio::dup2_stdin(&null);
        let _ = rustix::stdio::dup2_stdout(&null);
        let _ = rustix::stdio::dup2_stderr(&null);
        if std::os::fd::AsRawFd::as_raw_fd(&null) <= 2 {
            // It is one of 0, 1 and 2 now (one was closed): keep it open.
            let _ = std::os::fd::IntoRawFd::into_raw_fd(null);
        }
    }
    let _ = std::env::set_current_dir(Path::new("/"));
    true
}

/// At start, before anything is opened: closes every descriptor above 2
/// that sluiced inherited (sshd's closefrom), except those a sluiced
/// parent passed on purpose and named in the environment: the listener's
/// startup pipe and configuration snapshot for a connection process
/// (`-R`), the monitor's sockets and the snapshot for a post-auth process,
/// the listening sockets a restarting listener passed to its new image.
/// Anywhere else those variables mean nothing and are dropped.
pub fn close_inherited_fds(args: &ServerArgs) {
    use crate::server::privsep::{postauth::JOIN_ENV, POSTAUTH_ENV};
    let named = |var: &str| -> Option<std::os::fd::RawFd> { std::env::var(var).ok()?.parse().ok() };
    let postauth = std::env::var_os(POSTAUTH_ENV).is_some();
    let keep: Vec<std::os::fd::RawFd> = if postauth {
        [POSTAUTH_ENV, JOIN_ENV, snapshot::CONFIG_ENV]
            .iter()
            .filter_map(|v| named(v))
            .collect()
    } else if args.reexec {
        [listen::STARTUP_ENV, snapshot::CONFIG_ENV]
            .iter()
            .filter_map(|v| named(v))
            .collect()
    } else {
        for v in [
            POSTAUTH_ENV,
            JOIN_ENV,
            listen::STARTUP_ENV,
            snapshot::CONFIG_ENV,
        ] {
            std::env::remove_var(v);
        }
        // A listener re-executed by a SIGHUP restart keeps its listening
        // sockets (restart.rs checks each is one).
        crate::server::restart::inherited_fd_numbers()
    };
    // SAFETY: sluiced's first step (cli/sshd_main.rs), before it opens
    // anything: what is open from 3 up it inherited, but for `keep`.
    unsafe { crate::fds::close_inherited(&keep) };
}
