//! Command lines of `sluice` (as ssh's), `sluiced` (as sshd's),
//! `sluice-sftp` (as sftp's) and `sluice-scp` (as scp's).

pub mod scp_main;
pub mod sftp_main;
pub mod ssh_args;
pub mod ssh_main;
pub mod sshd_args;
pub mod sshd_main;
pub mod xfer_args;
