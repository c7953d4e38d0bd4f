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
//!   channel payload ──► send_data(now, ..)       ───────► sealed packets appended to `out`
//!                       poll_transmit(now, &mut out) ───► control packets appended to `out`
//! ```
//!
//! ## The contract
//!
//! - **Time** comes in as `now` on every call that may depend on it
//!   (`handle_input`, `handle_timeout`, `poll_transmit`, `data_slot`,
//!   `send_data`); the engine never reads a clock. [`Connection::poll_timeout`]
//!   says when it next needs `handle_timeout`.
//! - **Entropy** comes only from the [`crypto::Rng`] handed to
//!   [`Connection::client`] / [`Connection::server`]: cookies, padding and
//!   ephemeral keys are drawn from it through the crypto provider.
//! - **Cryptography** comes from the [`crypto::CryptoProvider`] in
//!   [`Config::provider`]: tables of key exchange methods, ciphers, MACs
//!   and signature checks. The default, [`crypto::aws_lc_provider`], uses
//!   aws-lc-rs; where aws-lc takes no outside entropy (ML-KEM key generation
//!   and encapsulation, ECDSA nonces) it uses its own DRBG, so only the
//!   insecure provider below makes a whole run reproducible.
//!
//! ## Features for tests and fuzzing (never for the runtime)
//!
//! - `insecure-test-crypto` (also on under `cfg(fuzzing)`): `crypto::insecure`,
//!   a deterministic provider whose kex, cipher and signatures are trivially
//!   breakable, all named `insecure-test@sluice.dev` so no real peer ever
//!   negotiates them, plus a seeded Rng. Same seeds, same bytes on the wire.
//! - `test-hooks` (also on under `cfg(fuzzing)`): `force_send_window`,
//!   `force_remote_channel`, `seal_raw` and `set_noise` (IGNORE/DEBUG packets
//!   before every packet) on [`Connection`], for bad-input tests and fuzzing.

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
pub mod sftp;
pub mod stripe;
mod test_hooks;
pub mod transport;

pub use crate::core::{ChannelData, Connection, Received, Role};
pub use config::{ClientConfig, Config, ServerConfig};
pub use connection::channel::ChannelInfo;
pub use error::{AlgorithmKind, Error, FloodKind, Phase, Violation};
pub use event::{AuthMethodRequest, ChannelId, Event};
pub use kex::SessionBinding;
