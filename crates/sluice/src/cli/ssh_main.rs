//! `sluice`'s main: argv parsed (cli/ssh_args.rs), `-o` and the flags that
//! stand for options folded into ssh_config in ssh's precedence, the Host
//! resolved, the log level set, then the client library does the rest
//! (client/app.rs turns the resolved Host into `ClientOptions`,
//! `client::connect` runs it). Also `-V`, `-Q`, `--help`, `demo`, `bench` and `bench-crypto`.

use crate::cli::ssh_args::{self, ClientArgs, Invocation};
use crate::client::app;
use crate::client::request::SessionRequest;
use crate::client::setting_error::SettingError;
use crate::client::{self, ClientError};
use crate::config::ssh::ClientConfig;
use crate::log;
use crate::log::Level;
use std::path::Path;

/// Runs `sluice`; returns the exit code.
pub fn main(argv: &[String]) -> i32 {
    let inv = match ssh_args::parse(argv) {
        Ok(i) => i,
        Err(e) => {
            crate::errln!("{e}");
            return 255;
        }
    };
    match inv {
        Invocation::Version => {
            crate::errln!("{}", super::VERSION);
            0
        }
        Invocation::Help(text) => {
            crate::outln!("{text}");
            0
        }
        Invocation::Query(what) => app::query(&what),
        Invocation::DemoHelper(args) => crate::datagen::helper_main(&args),
        Invocation::Demo {
            size,
            cipher,
            verbose,
        } => crate::demo::run(&crate::demo::DemoOptions {
            size,
            cipher,
            verbose,
        }),
        Invocation::BenchCrypto(opts) => crate::bench_crypto::run(&opts),
        Invocation::Bench(opts) => crate::path_bench::run(&opts),
        Invocation::Connect(args) => {
            // As ssh: the log file is opened before the configuration is read.
            if let Some(f) = &args.log_file {
                if let Err(e) = log::use_file(f) {
                    crate::errln!("{e}");
                    return 1;
                }
            } else if args.syslog {
                log::use_syslog_as(c"sluice", "USER");
            }
            match connect(&args) {
                Ok(code) => code,
                Err(e) => {
                    log::print(&e.to_string());
                    e.exit_code()
                }
            }
        }
    }
}

/// Command-line settings as `-o` options, first wins, in ssh's
/// precedence: -c, -m, -C, -e and -J, which ssh applies whatever -o says,
/// then -o, -l, -p and the destination's user and port in the order they
/// were given (ssh takes the first of those; the parser keeps that order).
pub fn options(args: &ClientArgs) -> Vec<String> {
    let mut opts = Vec::new();
    if let Some(c) = &args.ciphers {
        opts.push(format!("Ciphers={c}"));
    }
    if let Some(m) = &args.macs {
        opts.push(format!("MACs={m}"));
    }
    if args.compression {
        opts.push("Compression=yes".into());
    }
    if let Some(e) = &args.escape {
        opts.push(format!("EscapeChar={e}"));
    }
    if let Some(j) = &args.jump {
        opts.push(format!("ProxyJump={j}"));
    }
    if let Some(s) = &args.control_path {
        opts.push(format!("ControlPath={s}"));
    }
    match args.control_master {
        0 => {}
        1 => opts.push("ControlMaster=yes".into()),
        _ => opts.push("ControlMaster=ask".into()),
    }
    opts.extend(args.options.iter().cloned());
    opts
}

/// The command line's parts that are not options.
fn request(args: &ClientArgs) -> SessionRequest {
    SessionRequest {
        command: args.command.clone(),
        subsystem: args.subsystem,
        tty: args.tty,
        no_command: args.no_command,
        fork: args.fork,
        null_stdin: args.null_stdin,
        family: args.family,
        identities: args.identities.clone(),
        local_forwards: args.local_forwards.clone(),
        remote_forwards: args.remote_forwards.clone(),
        dynamic_forwards: args.dynamic_forwards.clone(),
        stdio_forward: args.stdio_forward.clone(),
        config_file: args.config_file.clone(),
        verbose: args.verbose,
    }
}

/// Loads ssh_config for the destination and runs the client (or prints
/// the configuration for `-G`).
fn connect(args: &ClientArgs) -> Result<i32, ClientError> {
    let opts = options(args);
    super::dest_check::check(&args.host, &opts).map_err(SettingError::Conflict)?;
    let mut cfg = ClientConfig::load(&opts, args.config_file.as_deref().map(Path::new))?;
    // As ssh, -G prints the configuration without looking names up.
    cfg.canonicalize = !args.print_config;
    let mut r = cfg.resolve(&args.host)?;
    if args.stdio_forward.is_some() {
        // As ssh: -W means no session and no tty, and makes these two
        // default to yes (ssh_config may say otherwise).
        r.set("requesttty", "no");
        r.set("sessiontype", "none");
        r.set_default("exitonforwardfailure", "yes");
        r.set_default("clearallforwardings", "yes");
    }
    log::set_level(Level::from_flags(
        args.verbose,
        args.quiet,
        r.get("loglevel"),
    ));
    for w in &cfg.warnings {
        log!(Debug1, "{w}");
    }
    // -y: SyslogFacility read now, as ssh re-opens its log after the config.
    if args.syslog && args.log_file.is_none() {
        if let Some(f) = r.get("syslogfacility") {
            log::use_syslog_as(c"sluice", &f.to_ascii_uppercase());
        }
    }
    let req = request(args);
    if args.print_config {
        crate::out!("{}", app::print_config(&r, &req)?);
        return Ok(0);
    }
    if let Some(cmd) = &args.control_command {
        let path = r
            .path("controlpath")?
            .filter(|p| !p.eq_ignore_ascii_case("none"));
        let forwards = match cmd.as_str() {
            "forward" | "cancel" => {
                use crate::client::forward_spec::Kind;
                let plan = crate::client::forward_args::plan(&req, &r)?;
                let tag = |k: Kind, v: Vec<crate::client::forward_spec::Forward>| {
                    v.into_iter().map(move |f| (k, f))
                };
                tag(Kind::Local, plan.local)
                    .chain(tag(Kind::Remote, plan.remote))
                    .chain(tag(Kind::Dynamic, plan.dynamic))
                    .collect()
            }
            _ => Vec::new(),
        };
        return Ok(crate::client::mux_control::client_command(
            path.as_deref(),
            cmd,
            &forwards,
        ));
    }
    // What sluice lacks: refused, or said (config/ssh/limits.rs); -G and
    // -O connect nowhere, so they print or ask without it.
    crate::config::ssh::limits::report(&r.limited)?;
    client::connect(app::resolve(&r, &req)?)
}
