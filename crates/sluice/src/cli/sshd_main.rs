//! `sluiced`'s main: argv parsed as sshd's (cli/sshd_args.rs), then the
//! server runs (server/daemon.rs).

use crate::cli::sshd_args;

/// Runs `sluiced`; returns the exit code.
pub fn main(argv: &[String]) -> i32 {
    match sshd_args::parse(argv) {
        Ok(args) => crate::server::daemon::run(&args, argv),
        Err(e) => {
            eprintln!("{e}");
            1
        }
    }
}
