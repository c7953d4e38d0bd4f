//! # sluice-proto: a sans-IO SSH-2 engine
//!
//! This crate holds the whole SSH-2 protocol (RFC 4250-4254 and extensions)
//! as state machines with **no sockets, threads, files, clocks or randomness
//! of their own**. Bytes and time go in; bytes and events come out. The
//! runtime (the `sluice` crate) owns every buffer and every system call.
//!
//! ```text
//!   socket bytes ──► Connection::handle_input(now, &mut buf) ──► Received { consumed, data: &[u8] }
//!                                   │                                 (channel data, decrypted in place)
//!                                   ├──► poll_event()  ──► Event (auth, channel requests, EOF, close)
//!   runtime decisions ─────────────►│
//!   channel payload ──► send_data(..., &mut out) ───────► sealed packets appended to `out`
//!                       poll_transmit(now, &mut out) ───► control packets appended to `out`
//! ```
//!
//! Cryptography comes from aws-lc-rs through [`crypto`]; entropy comes in
//! through the [`crypto::Rng`] the runtime hands over.

#![forbid(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

pub mod crypto;
pub mod msg;
pub mod wire;

pub mod auth;
pub mod config;
pub mod connection;
mod core;
pub mod error;
pub mod event;
pub mod handover;
pub mod kex;
pub mod negotiate;
pub mod transport;

pub use crate::core::{ChannelData, Connection, Received, Role};
pub use config::{ClientConfig, Config, ServerConfig};
pub use connection::channel::ChannelInfo;
pub use error::{Error, Violation};
pub use event::{AuthMethodRequest, ChannelId, Event};
