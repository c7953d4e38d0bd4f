//! # sluice: the runtime around `sluice-proto`
//!
//! Everything with a side effect lives here: sockets and their options, the
//! driver loop that feeds bytes to the protocol engine, processes and pipes,
//! configuration files, key files and the agent, logging, and the command
//! line of the `sluice` client and `sluiced` server.

pub mod bench_crypto;
pub mod cli;
pub mod client;
pub mod config;
pub mod datagen;
pub mod demo;
pub mod fds;
pub mod io_error;
pub mod keys;
mod layers;
pub mod log;
pub mod ls_style;
pub mod net;
pub mod path_bench;
pub mod server;
pub mod sys;
pub mod ttymodes;
pub mod users;
