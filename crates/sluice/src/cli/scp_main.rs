//! `sluice-scp`'s main: scp(1)'s command line (cli/xfer_args.rs for the
//! parts shared with sftp), then client/sftp/scp/ copies over SFTP, or
//! client/sftp/scp/legacy/ over the legacy protocol with -O.

use crate::cli::sftp_main::stdout_is_tty;
use crate::cli::usage::UsageError;
use crate::cli::xfer_args::{getopt, parallel, see_page, split_remote, x_option, SshSide, HELP};
use crate::client::sftp::run;
use crate::client::sftp::scp::legacy::{self, Legacy};
use crate::client::sftp::scp::{self, Place};
use std::ffi::OsString;
use std::path::PathBuf;

/// The options getopt takes (cli/manpages.rs checks them against the usage
/// and the manual page); `-D` and `-S` are refused after parsing.
pub const OPTIONS: &str = "346aABCOpqRrsTvc:D:F:i:J:l:o:P:S:X:";

/// The usage text, as OpenSSH's (without the refused `-D` and `-S`).
pub const USAGE: &str =
    "usage: sluice-scp [-346aABCOpqRrsTv] [-c cipher] [-F ssh_config] [-i identity_file]
           [-J destination] [-l limit] [-o ssh_option] [-P port]
           [-X sftp_option] source ... target";

/// Where an operand points: remote when a ':' comes before any '/'
/// (scp's rule; `[v6]:path` too).
fn place(arg: &str) -> Option<(Option<String>, String, String)> {
    let first_colon = if arg.starts_with('[') || arg.contains("@[") {
        arg.find("]:").map(|i| i + 1)
    } else {
        arg.find(':')
    }?;
    if arg[..first_colon].contains('/') || first_colon == 0 {
        return None;
    }
    let (user, host, path) = split_remote(arg);
    Some((user, host, path.unwrap_or_default()))
}

/// Runs `sluice-scp`; returns the exit code.
pub fn main(argv: &[String]) -> i32 {
    let (opts, operands) = match getopt(argv, OPTIONS, false) {
        Ok(p) => p,
        Err(e) => {
            crate::errln!("sluice-scp: {e}\n{USAGE}");
            return 1;
        }
    };
    if opts.iter().any(|(c, _)| *c == HELP) {
        crate::outln!("{USAGE}\n{}", see_page("sluice-scp"));
        return 0;
    }
    let Flags {
        ssh,
        mut set,
        legacy,
        by_origin,
    } = match flags(&opts) {
        Ok(f) => f,
        Err(e) => {
            crate::errln!("{e}");
            return 1;
        }
    };
    if operands.len() < 2 {
        crate::errln!("{USAGE}");
        return 1;
    }
    set.transfer.progress = !ssh.quiet && stdout_is_tty();
    let (srcs, target) = operands.split_at(operands.len() - 1);
    // The settings of the legacy protocol (-O, and copies between hosts).
    let l = Legacy {
        recursive: set.recursive,
        preserve: set.transfer.preserve,
        verbose: ssh.verbose > 0,
        limit: ssh.limit,
        progress: set.transfer.progress,
    };
    let between_hosts = place(&target[0]).is_some() && srcs.iter().any(|a| place(a).is_some());
    if set.transfer.resume && (legacy || between_hosts) {
        crate::errln!(
            "sluice-scp: -a resumes copies over SFTP only: not with -O or between two remote hosts"
        );
        return 1;
    }
    if between_hosts {
        return remote_to_remote(&ssh, srcs, &target[0], &l, by_origin);
    }
    let (sources, target, host) = match places(srcs, &target[0]) {
        Ok(p) => p,
        Err(e) => {
            crate::errln!("{e}");
            return 1;
        }
    };
    let remote_target = matches!(target, Place::Remote(_));
    let mixed = sources
        .iter()
        .any(|s| matches!(s, Place::Remote(_)) == remote_target);
    let Some((user, host)) = host else {
        return local_copy(&sources, &target, set.recursive);
    };
    if mixed {
        crate::errln!(
            "sluice-scp: local and remote sources with a local target in one run are not supported"
        );
        return 1;
    }
    if legacy {
        let cmd = legacy::ssh_command(legacy_ssh_args(&ssh, user.as_deref()), &host);
        return legacy::run(cmd, &sources, &target, &l);
    }
    over_sftp(&ssh, set, user.as_deref(), &host, sources, target)
}

/// What scp's flags say.
struct Flags {
    ssh: SshSide,
    set: scp::Settings,
    /// -O.
    legacy: bool,
    /// -R (else -3).
    by_origin: bool,
}

/// Reads scp's flags (ssh's own into `ssh`); Err is the message to print
/// before exiting 1.
fn flags(opts: &[(char, String)]) -> Result<Flags, UsageError> {
    let mut f = Flags {
        ssh: SshSide::default(),
        set: scp::Settings::default(),
        legacy: false,
        by_origin: false,
    };
    for (c, v) in opts {
        if f.ssh.take(*c, v)? {
            continue;
        }
        match c {
            // Ours (scp has none): resume as sftp's reget and reput.
            'a' => f.set.transfer.resume = true,
            'p' => f.set.transfer.preserve = true,
            'r' => f.set.recursive = true,
            'B' => f.ssh.options.push("BatchMode=yes".into()),
            's' | 'T' => {}
            'X' => x_option(v, &mut f.set.transfer)?,
            // -3 is the default for copies between two remote hosts.
            '3' => f.by_origin = false,
            'R' => f.by_origin = true,
            'O' => f.legacy = true,
            'S' | 'D' => {
                return Err(UsageError::Unsupported {
                    prog: "sluice-scp",
                    opt: *c,
                })
            }
            _ => return Err(UsageError::Usage(USAGE)),
        }
    }
    Ok(f)
}

/// The sources and the target as places, and the one remote host among
/// them (user, host), if any.
#[allow(clippy::type_complexity)]
fn places(
    srcs: &[String],
    target: &str,
) -> Result<(Vec<Place>, Place, Option<(Option<String>, String)>), UsageError> {
    let mut host: Option<(Option<String>, String)> = None;
    let mut to_place = |a: &str| -> Result<Place, UsageError> {
        match place(a) {
            None => Ok(Place::Local(PathBuf::from(a))),
            Some((u, h, p)) => {
                match &host {
                    Some(prev) if prev != &(u.clone(), h.clone()) => {
                        return Err(UsageError::Refused(
                            "sluice-scp: sources on more than one remote host are not supported with a local target",
                        ))
                    }
                    _ => host = Some((u, h)),
                }
                Ok(Place::Remote(p.into_bytes()))
            }
        }
    };
    let s = srcs
        .iter()
        .map(|a| to_place(a))
        .collect::<Result<Vec<_>, _>>()?;
    let t = to_place(target)?;
    Ok((s, t, host))
}

/// Copies over SFTP with sluice's own connection to `host`.
fn over_sftp(
    ssh: &SshSide,
    mut set: scp::Settings,
    user: Option<&str>,
    host: &str,
    sources: Vec<Place>,
    target: Place,
) -> i32 {
    let copts = match ssh.client_options(user, host, "sftp") {
        Ok(o) => o,
        Err(e) => {
            crate::log::print(&e.to_string());
            return 255;
        }
    };
    set.transfer.limit = ssh
        .limit
        .map(|k| std::sync::Arc::new(crate::client::sftp::bwlimit::BwLimit::new(k)));
    set.transfer.parallel = parallel(ssh, &copts, user, host, "sftp");
    set.transfer.place = format!("{}@{}:{}", copts.user, copts.host, copts.port);
    set.transfer.keep_partial = copts.keep_partial;
    run(copts, move |link| {
        let par = set.transfer.parallel.clone();
        let code = scp::main(link, set, sources, target);
        if let Some(p) = par {
            p.shutdown();
        }
        code
    })
}

/// The `sluice` client's arguments for -O, from scp's own (as scp hands
/// them to ssh).
fn legacy_ssh_args(ssh: &SshSide, user: Option<&str>) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    if !ssh.options.iter().any(|o| o == "ForwardAgent=yes") {
        a.extend(["-o".into(), "ForwardAgent=no".into()]);
    }
    for o in &ssh.options {
        a.extend(["-o".into(), o.into()]);
    }
    if let Some(f) = &ssh.config_file {
        a.extend(["-F".into(), f.into()]);
    }
    for i in &ssh.identities {
        a.extend(["-i".into(), i.into()]);
    }
    match ssh.family {
        Some(4) => a.push("-4".into()),
        Some(6) => a.push("-6".into()),
        _ => {}
    }
    for _ in 0..ssh.verbose {
        a.push("-v".into());
    }
    if ssh.quiet {
        a.push("-q".into());
    }
    if let Some(u) = user {
        a.extend(["-l".into(), u.into()]);
    }
    a
}

/// Copies between two remote hosts: through this one (-3, the default),
/// or by the source host's own scp connecting to the target (-R).
fn remote_to_remote(
    ssh: &SshSide,
    srcs: &[String],
    target: &str,
    l: &Legacy,
    by_origin: bool,
) -> i32 {
    let Some((tu, th, tp)) = place(target) else {
        return 1;
    };
    let mut code = 0;
    for src in srcs {
        let Some((su, sh, sp)) = place(src) else {
            crate::errln!("sluice-scp: {src}: local and remote sources with a remote target in one run are not supported");
            code = 1;
            continue;
        };
        let from = legacy::ssh_command(legacy_ssh_args(ssh, su.as_deref()), &sh);
        let r = if by_origin {
            // The origin's scp, with its own keys and config, reaches the target.
            let mut c = from;
            let cmd = format!("scp{} -- {sp} {target}", l.flags());
            c.arg(cmd).stdin(std::process::Stdio::null());
            match c.status() {
                Ok(st) if st.success() => 0,
                _ => 1,
            }
        } else {
            let to = legacy::ssh_command(legacy_ssh_args(ssh, tu.as_deref()), &th);
            legacy::relay(from, sp.as_bytes(), to, tp.as_bytes(), srcs.len() > 1, l)
        };
        if r != 0 {
            code = 1;
        }
    }
    code
}

/// Both sides local: cp, as scp runs it.
fn local_copy(sources: &[Place], target: &Place, recursive: bool) -> i32 {
    let mut cmd = std::process::Command::new("cp");
    if recursive {
        cmd.arg("-r");
    }
    for p in sources.iter().chain(std::iter::once(target)) {
        if let Place::Local(p) = p {
            cmd.arg(p);
        }
    }
    match cmd.status() {
        Ok(s) if s.success() => 0,
        _ => 1,
    }
}
