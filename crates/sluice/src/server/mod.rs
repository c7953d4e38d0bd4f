//! The server `sluiced`: the listener that hands each connection to a fresh
//! process, the per-connection handler, and running commands as the user.

pub mod conn;
pub mod daemon;
pub mod forward;
pub mod forward_policy;
pub mod listen;
pub mod session;
