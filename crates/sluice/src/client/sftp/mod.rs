//! sluice's own SFTP client, used by `sluice-sftp` and `sluice-scp`
//! (scp speaks SFTP, as OpenSSH 9's does). The connection is sluice's own
//! client in this process: ssh_config, host keys, identities and the agent
//! exactly as `sluice` uses them; the session channel asks for the "sftp"
//! subsystem and its other end is in-process (channel.rs), so no ssh
//! program runs and the channel keeps sluice's window growth.
//!
//! Threads: the pump runs on the calling thread; the program (the command
//! interpreter or scp, over session/ and transfer.rs) runs on its own,
//! so disk waits never hold the connection.
//!
//! - `channel.rs`: the in-process channel end and the program's [`Link`].
//! - `session/`: requests and replies, the version exchange, limits.
//! - `transfer.rs`: whole-file downloads and uploads; `options.rs` how
//!   (sftp's and scp's flags); `errors.rs` why one failed;
//! - `error.rs`: why a request or the session failed ([`error::SftpError`]);
//!   `pipeline/`: the request loop both directions run (`read.rs`,
//!   `write.rs`); `depth.rs`: how many requests it keeps in flight;
//!   `partial/`: the partial file every copy writes and what a resume
//!   takes from it (`down.rs`, `up.rs`, `hash.rs` the SHA-256 check).
//! - `progress.rs`: the progress meter; `bwlimit.rs`: `-l`.
//! - `many/`: small files, many in flight on one session (`up.rs`, `down.rs`).
//! - `spread.rs`: many small files dealt out over several connections.
//! - `parallel/`: a large file over several connections (Streams);
//!   `resume.rs`: the record of a copy's completed ranges.
//! - `commands/`: sftp's commands (batch files and the prompt): `mod.rs` the
//!   loop and dispatch, `xfer.rs` get and put, `ops.rs` the others,
//!   `words.rs` command lines.
//! - `scp/`: scp's copies over SFTP (`mod.rs`) and over the legacy
//!   protocol (`legacy/`, `-O`).
//! - `remote.rs`: remote paths: joining, globbing, names checked;
//!   `tree.rs`: the walk of a remote tree for a recursive download.

pub mod bwlimit;
pub mod channel;
pub mod commands;
pub mod depth;
pub mod error;
pub mod errors;
pub mod many;
pub mod options;
pub mod parallel;
pub mod partial;
pub mod pipeline;
pub mod progress;
pub mod remote;
pub mod resume;
pub mod scp;
pub mod session;
pub mod spread;
pub mod transfer;
mod tree;

#[cfg(test)]
mod tests;

pub use channel::Link;

use crate::client::ClientOptions;
use std::sync::mpsc;
use std::time::Duration;

/// Connects with `opts` (its plan naming the subsystem or command), runs
/// `program` on the session's channel and returns its exit code; when the
/// connection fails first, ssh's message and "Connection closed", 255.
pub fn run<F>(opts: ClientOptions, program: F) -> i32
where
    F: FnOnce(Link) -> i32 + Send + 'static,
{
    run_with(opts, program, false)
}

/// [`run`] for an extra connection (parallel/): its failure is a debug
/// line, since the copy goes on without it.
pub fn run_quiet<F>(opts: ClientOptions, program: F) -> i32
where
    F: FnOnce(Link) -> i32 + Send + 'static,
{
    run_with(opts, program, true)
}

fn run_with<F>(mut opts: ClientOptions, program: F, quiet: bool) -> i32
where
    F: FnOnce(Link) -> i32 + Send + 'static,
{
    let (end, link) = match channel::pair() {
        Ok(p) => p,
        Err(e) => {
            crate::errln!("eventfd: {e}");
            return 255;
        }
    };
    opts.plan.channel_end = Some(Box::new(end));
    opts.plan.stdio = false;
    let (tx, rx) = mpsc::channel();
    let program_link = link.clone();
    let spawned = std::thread::Builder::new()
        .name("sftp-client".into())
        .spawn(move || {
            let code = program(program_link);
            let _ = tx.send(code);
        });
    if let Err(e) = spawned {
        crate::errln!("starting the sftp thread: {e}");
        return 255;
    }
    let r = crate::client::connect(opts);
    match &r {
        Err(e) if quiet => crate::log!(Debug1, "Streams: extra connection: {e}"),
        Err(e) => crate::log::print(&e.to_string()),
        Ok(_) => {}
    }
    link.close();
    // The program ends once its replies stop; one still reading a prompt
    // from the terminal is not waited for.
    rx.recv_timeout(Duration::from_secs(5)).unwrap_or(255)
}
