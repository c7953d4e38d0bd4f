//! The server `sluiced`: the listener that hands each connection to a fresh
//! process, the per-connection handler, and running commands as the user.

pub mod agent_forward;
pub mod allow;
pub mod auth;
pub mod auth_info;
pub mod child;
pub mod chroot;
pub mod conn;
pub mod daemon;
pub mod error;
pub mod forward;
pub mod forward_error;
pub mod forward_policy;
pub mod grace;
pub mod idle;
pub mod inetd;
pub mod keepalive;
pub(crate) mod keys_command;
pub mod listen;
pub mod logins;
pub mod notify;
pub mod pam;
pub mod pam_session;
pub mod penalty;
pub mod privsep;
pub mod pty;
pub mod restart;
pub mod sandbox;
pub mod session;
pub mod session_env;
pub mod sftp;
pub mod shadow;
