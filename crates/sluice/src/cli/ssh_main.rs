//! `sluice`'s main: argv parsed (cli/ssh_args.rs), `-o` and the flags that
//! stand for options folded into ssh_config in ssh's precedence, the Host
//! resolved, the log level set, then the client library does the rest
//! (client/app.rs turns the resolved Host into `ClientOptions`,
//! `client::connect` runs it). Also `-V`, `-Q`, `--help`, `demo`, `bench` and `bench-crypto`.

use crate::cli::ssh_args::{self, ClientArgs, Invocation};
use crate::client::app::{self, SessionRequest};
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
    let cfg = ClientConfig::load(&opts, args.config_file.as_deref().map(Path::new))?;
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
    // Said aloud only when asked for on the command line: Debian's own
    // /etc/ssh/ssh_config turns GSSAPIAuthentication on for every host,
    // and a warning on every connection would be noise ssh does not make.
    for (key, w) in not_honoured(&r) {
        if on_command_line(&args.options, key) {
            log!(Info, "Warning: {w}");
        } else {
            log!(Debug1, "{w}");
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
        return Ok(crate::client::mux::client_command(path.as_deref(), cmd));
    }
    client::connect(app::resolve(&r, &req)?)
}

/// Whether `-o` (or a flag standing for it) set `key`.
fn on_command_line(options: &[String], key: &str) -> bool {
    options.iter().any(|o| {
        let k = o.split(['=', ' ', '\t']).next().unwrap_or("");
        k.eq_ignore_ascii_case(key)
    })
}

/// Features asked for (by a flag or a keyword) that sluice does not have,
/// and what it says of each: where ssh would go on without them (no X11
/// display, a server that refuses a tunnel), so does sluice, but the user
/// hears why nothing happened (as a warning when the command line asked).
const NOT_HONOURED: [(&str, &str); 4] = [
    (
        "forwardx11",
        "X11 forwarding is not supported by sluice (-X, -Y, ForwardX11): not requested.",
    ),
    (
        "gssapiauthentication",
        "GSSAPI authentication is not supported by sluice (-K, GSSAPIAuthentication): not tried.",
    ),
    (
        "pkcs11provider",
        "PKCS#11 tokens are not supported by sluice (-I, PKCS11Provider): its keys are not offered.",
    ),
    (
        "tunnel",
        "tun/tap forwarding is not supported by sluice (-w, Tunnel): not requested.",
    ),
];

fn not_honoured(
    r: &crate::config::ssh::Resolved,
) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
    NOT_HONOURED.into_iter().filter(|(k, _)| {
        r.get(k)
            .is_some_and(|v| !matches!(v.to_ascii_lowercase().as_str(), "no" | "false" | "none"))
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_the_command_line_makes_a_missing_feature_a_warning() {
        let o = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(super::on_command_line(
            &o(&["GSSAPIAuthentication=yes"]),
            "gssapiauthentication"
        ));
        assert!(super::on_command_line(
            &o(&["forwardx11 yes"]),
            "forwardx11"
        ));
        assert!(!super::on_command_line(
            &o(&["ForwardX11Trusted=yes"]),
            "forwardx11"
        ));
        assert!(!super::on_command_line(&[], "tunnel"));
    }
}
