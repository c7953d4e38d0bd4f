//! Command lines of `sluice` (as ssh's) and `sluiced` (as sshd's).

pub mod ssh_args;
pub mod ssh_main;
pub mod sshd_args;
pub mod sshd_main;
