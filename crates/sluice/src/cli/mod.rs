//! Command lines of `sluice` (as ssh's), `sluiced` (as sshd's),
//! `sluice-sftp` (as sftp's) and `sluice-scp` (as scp's).

/// The `-V` line of `sluice` and `sluiced` (as ssh's and sshd's: release,
/// then the crypto library), on stderr.
pub const VERSION: &str = concat!("sluice_", env!("CARGO_PKG_VERSION"), ", aws-lc-rs");

mod dest_check;
mod manpages;
pub mod scp_main;
pub mod sftp_main;
pub mod ssh_args;
pub mod ssh_main;
pub mod sshd_args;
pub mod sshd_main;
pub mod usage;
pub mod xfer_args;
