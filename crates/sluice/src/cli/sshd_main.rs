//! `sluiced`'s main: argv parsed as sshd's (cli/sshd_args.rs), then the
//! server runs (server/daemon.rs), or `-V` prints the version, `--help`
//! the usage.

use crate::cli::sshd_args::{self, Invocation};

/// Runs `sluiced`; returns the exit code.
pub fn main(argv: &[String]) -> i32 {
    match sshd_args::parse(argv) {
        Ok(Invocation::Version) => {
            crate::errln!("{}", super::VERSION);
            0
        }
        Ok(Invocation::Help) => {
            crate::outln!("{}\n{}", sshd_args::USAGE, sshd_args::SEE_PAGE);
            0
        }
        Ok(Invocation::Serve(args, log_file)) => {
            // First: nothing inherited reaches a connection or a user's command.
            crate::server::daemon::close_inherited_fds(&args);
            // -E: opened here, before the daemon forks, re-executes (each
            // connection's process opens it again from argv) or chroots.
            if let Some(f) = log_file {
                if let Err(e) = crate::log::use_file(&f) {
                    crate::errln!("{e}");
                    return 1;
                }
            }
            crate::server::daemon::run(&args, argv)
        }
        Err(e) => {
            crate::errln!("{e}");
            1
        }
    }
}
