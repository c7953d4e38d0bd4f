//! `sluice-sftp`'s main: sftp(1)'s command line (cli/xfer_args.rs for
//! the parts shared with scp), then client/sftp/ does the session.

use crate::cli::usage::UsageError;
use crate::cli::xfer_args::{
    buffer, getopt, parallel, requests, see_page, split_remote, x_option, SshSide, HELP,
};
use crate::client::sftp::{commands, run};

/// The options getopt takes (cli/manpages.rs checks them against the usage
/// and the manual page); `-D` and `-S` are refused after parsing.
pub const OPTIONS: &str = "46AaCfNpqrvB:b:c:D:F:i:J:l:o:P:R:S:s:X:";

/// The usage text, as OpenSSH's (without the refused `-D` and `-S`).
pub const USAGE: &str =
    "usage: sluice-sftp [-46AaCfNpqrv] [-B buffer_size] [-b batchfile] [-c cipher]
          [-F ssh_config] [-i identity_file] [-J destination] [-l limit]
          [-o ssh_option] [-P port] [-R num_requests] [-s subsystem]
          [-X sftp_option] destination";

/// Runs `sluice-sftp`; returns the exit code.
pub fn main(argv: &[String]) -> i32 {
    let (opts, operands) = match getopt(argv, OPTIONS, true) {
        Ok(p) => p,
        Err(e) => {
            crate::errln!("{e}\n{USAGE}");
            return 1;
        }
    };
    if opts.iter().any(|(c, _)| *c == HELP) {
        crate::outln!("{USAGE}\n{}", see_page("sluice-sftp"));
        return 0;
    }
    let mut ssh = SshSide::default();
    let mut set = commands::Settings::default();
    let mut subsystem = "sftp".to_owned();
    let mut quiet = false;
    for (c, v) in &opts {
        match ssh.take(*c, v) {
            Ok(true) => {
                if *c == 'q' {
                    quiet = true;
                }
                continue;
            }
            Ok(false) => {}
            Err(e) => {
                crate::errln!("{e}");
                return 1;
            }
        }
        let r: Result<(), UsageError> = match c {
            'a' => {
                set.transfer.resume = true;
                Ok(())
            }
            'f' => {
                set.transfer.fsync = true;
                Ok(())
            }
            'p' => {
                set.transfer.preserve = true;
                Ok(())
            }
            'r' => {
                set.recursive = true;
                Ok(())
            }
            'N' => Ok(()),
            'b' => {
                set.batch = Some(v.clone());
                Ok(())
            }
            's' => {
                subsystem = v.clone();
                Ok(())
            }
            'B' => buffer(v).map(|b| set.transfer.buffer = b),
            'R' => requests(v).map(|n| set.transfer.requests = n),
            'X' => x_option(v, &mut set.transfer),
            'S' | 'D' => Err(UsageError::Unsupported {
                prog: "sluice-sftp",
                opt: *c,
            }),
            _ => Err(UsageError::Usage(USAGE)),
        };
        if let Err(e) = r {
            crate::errln!("{e}");
            return 1;
        }
    }
    let [dest] = operands.as_slice() else {
        crate::errln!("{USAGE}");
        return 1;
    };
    let (user, host, path) = split_remote(dest);
    if host.is_empty() {
        crate::errln!("{USAGE}");
        return 1;
    }
    set.quiet = quiet || set.batch.is_some();
    set.transfer.progress = !set.quiet && stdout_is_tty();
    set.start_path = path;
    let copts = match ssh.client_options(user.as_deref(), &host, &subsystem) {
        Ok(o) => o,
        Err(e) => {
            crate::log::print(&e.to_string());
            return 255;
        }
    };
    set.transfer.limit = ssh
        .limit
        .map(|k| std::sync::Arc::new(crate::client::sftp::bwlimit::BwLimit::new(k)));
    set.transfer.parallel = parallel(&ssh, &copts, user.as_deref(), &host, &subsystem);
    set.transfer.place = format!("{}@{}:{}", copts.user, copts.host, copts.port);
    set.transfer.keep_partial = copts.keep_partial;
    run(copts, move |link| {
        let par = set.transfer.parallel.clone();
        let code = commands::main(link, set);
        if let Some(p) = par {
            p.shutdown();
        }
        code
    })
}

/// Whether fd 1 is a terminal (the progress meter's condition).
pub fn stdout_is_tty() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stdout())
}
