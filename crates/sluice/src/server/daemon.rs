//! `sluiced`'s main: configuration, `-T`/`-t`, the listener, and the
//! per-connection process (`-R` from the listener, or `-i` by hand).

use crate::cli::sshd_args::{self, ServerArgs};
use crate::config::sshd::ServerConfig as Sshd;
use crate::log::{self, Level};
use crate::net::pump::{Pump, PumpError};
use crate::server::conn::ServerConn;
use crate::server::listen::Listener;
use sluice_proto::crypto::SystemRng;
use sluice_proto::{Config, Connection, ServerConfig};
use std::os::fd::FromRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_term(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn load_config(args: &ServerArgs) -> Result<(Sshd, Vec<String>), String> {
    let path = PathBuf::from(
        args.config_file
            .clone()
            .unwrap_or_else(|| "/etc/ssh/sshd_config".into()),
    );
    let mut overrides: Vec<String> = args.options.clone();
    overrides.extend(args.ports.iter().map(|p| format!("Port {p}")));
    overrides.extend(args.host_keys.iter().map(|h| format!("HostKey {h}")));
    Sshd::load(&path, &overrides)
}

/// The protocol settings from the server config.
pub fn proto_config(cfg: &Sshd) -> Config {
    let compression = match cfg.compression.as_str() {
        "no" => vec!["none".to_owned()],
        _ => vec!["none".to_owned(), "zlib@openssh.com".to_owned()],
    };
    Config {
        kex: cfg.kex.clone(),
        host_key_algs: cfg.host_key_algorithms.clone(),
        ciphers: cfg.ciphers.clone(),
        macs: cfg.macs.clone(),
        compression,
        rekey_bytes: if cfg.rekey_limit.0 == 0 {
            Config::default().rekey_bytes
        } else {
            cfg.rekey_limit.0
        },
        rekey_time: (cfg.rekey_limit.1 > 0).then(|| Duration::from_secs(cfg.rekey_limit.1)),
        pubkey_algs: cfg.pubkey_algorithms.clone(),
        window: cfg.channel_window,
        window_max: cfg.channel_window_max,
        stock_openssh_window_max: crate::config::stock_openssh_window_max(),
        ..Config::default()
    }
}

/// Runs `sluiced`; returns the exit code.
pub fn main(argv: &[String]) -> i32 {
    let args = match sshd_args::parse(argv) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    let (cfg, warnings) = match load_config(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return 255;
        }
    };
    log::set_level(if args.debug > 0 {
        Level::Debug1
    } else if args.quiet {
        Level::Quiet
    } else {
        cfg.log_level
    });
    for w in &warnings {
        crate::log!(Verbose, "{w}");
    }
    if args.print_config {
        print!("{}", cfg.dump());
        return 0;
    }
    let host_keys = match crate::keys::host_keys::load(&cfg.host_keys) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    if args.test_config {
        return 0;
    }
    if args.reexec || args.inetd {
        log::set_prefix(format!("sluiced[{}]: ", std::process::id()));
        return serve_connection(cfg, host_keys);
    }
    let addrs = match cfg.listen_addrs() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return 255;
        }
    };
    let mut listener = match Listener::bind(&addrs) {
        Ok(l) => l,
        Err(e) => {
            crate::log!(Fatal, "{e}");
            return 255;
        }
    };
    listener.set_buffers(cfg.tcp_rcvbuf, cfg.tcp_sndbuf);
    if !args.foreground && !daemonize() {
        return 255;
    }
    if let Some(p) = &cfg.pid_file {
        if let Err(e) = std::fs::write(p, format!("{}\n", std::process::id())) {
            crate::log!(Error, "Couldn't create pid file \"{}\": {e}", p.display());
        }
    }
    // SAFETY: installing a handler that only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGTERM, on_term as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_term as *const () as libc::sighandler_t);
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let exe = std::fs::read_link("/proc/self/exe").unwrap_or_else(|_| PathBuf::from("sluiced"));
    let mut child_args: Vec<String> = argv.iter().filter(|a| *a != "-D").cloned().collect();
    child_args.push("-R".into());
    listener.serve(
        &exe,
        &child_args,
        cfg.max_startups,
        Duration::from_secs(cfg.login_grace_time.max(1)),
        &STOP,
    );
    crate::log!(Info, "Received signal; terminating.");
    if let Some(p) = &cfg.pid_file {
        let _ = std::fs::remove_file(p);
    }
    0
}

fn daemonize() -> bool {
    // SAFETY: fork/setsid/dup2 in a single-threaded process before any threads start.
    unsafe {
        match libc::fork() {
            -1 => return false,
            0 => {}
            _ => libc::_exit(0),
        }
        libc::setsid();
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null >= 0 {
            libc::dup2(null, 0);
            libc::dup2(null, 1);
            libc::dup2(null, 2);
        }
    }
    let _ = std::env::set_current_dir(Path::new("/"));
    true
}

/// One connection on fd 0 (a socket).
fn serve_connection(
    cfg: Sshd,
    host_keys: Vec<std::sync::Arc<dyn sluice_proto::crypto::hostkey::Signer>>,
) -> i32 {
    // SAFETY: fd 0 is the accepted socket handed over by the listener (or inetd).
    let sock = unsafe { std::net::TcpStream::from_raw_fd(0) };
    let (Ok(peer), Ok(local)) = (sock.peer_addr(), sock.local_addr()) else {
        crate::log!(Error, "stdin is not a socket");
        return 1;
    };
    // The socket is also fd 1; move stdout away so a stray print cannot corrupt the stream.
    // SAFETY: dup2 onto fd 1 of /dev/null.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
        if null >= 0 {
            libc::dup2(null, 1);
            libc::close(null);
        }
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    crate::log!(
        Info,
        "Connection from {} port {} on {} port {}",
        peer.ip(),
        peer.port(),
        local.ip(),
        local.port()
    );
    let _ = sock.set_nodelay(true);
    let _ = sock.set_nonblocking(true);
    let banner = cfg
        .banner
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok());
    let server_cfg = ServerConfig {
        common: proto_config(&cfg),
        host_keys,
        auth_methods: crate::server::auth::offered_methods(&cfg),
        max_auth_tries: cfg.max_auth_tries,
        banner,
    };
    let mut conn = Connection::server(server_cfg, Box::new(SystemRng));
    let threads = cfg.crypto_threads;
    let mut handler = ServerConn::new(cfg, peer, local, None);
    handler.set_socket(std::os::fd::AsRawFd::as_raw_fd(&sock));
    let mut pump = Pump::new(std::os::fd::AsRawFd::as_raw_fd(&sock));
    pump.set_crypto_threads(&mut conn, threads);
    let r = pump.run(&mut conn, &mut handler);
    match r {
        Ok(()) | Err(PumpError::PeerClosed) => {
            crate::log!(
                Info,
                "Connection closed by {} port {}",
                peer.ip(),
                peer.port()
            );
            0
        }
        Err(PumpError::Protocol(sluice_proto::Error::PeerDisconnected { description, .. })) => {
            crate::log!(
                Info,
                "Received disconnect from {} port {}: {description}",
                peer.ip(),
                peer.port()
            );
            0
        }
        Err(e) => {
            crate::log!(
                Error,
                "Connection from {} port {}: {e}",
                peer.ip(),
                peer.port()
            );
            1
        }
    }
}
