//! The runtime side of channel striping (PROTOCOL.md, "Channel striping"):
//! one striped channel's sender and reassembler in one process, shared by
//! the primary's channel and the carriers on every connection of the
//! session, each connection's pump in its own thread.
//!
//! - `hub.rs`: the shared state ([`Hub`]): sender, reassembler, pending
//!   acknowledgement, failure; a mutex, a condition variable for the local
//!   threads and wake fds for the pumps.
//! - `carrier.rs`: a carrier channel's in-process end ([`CarrierEnd`]):
//!   chunks filled straight into the packet slot, chunks received into
//!   the reassembler.
//! - `striped.rs`: the striped channel's own end on the primary
//!   ([`StripedEnd`]): no data of its own, EOF once everything sent is
//!   acknowledged, stderr as usual; the acknowledgements it sends and takes.
//! - `local.rs`: the threads between the hub and the local fds (a
//!   command's pipes on the server, stdin and stdout on the client).
//! - `registry.rs`: the striped channels of this process by number, for
//!   carriers opened on any connection.

mod carrier;
mod conn_key;
mod hub;
mod local;
mod registry;
mod striped;

pub use carrier::CarrierEnd;
pub use conn_key::ConnKey;
pub use hub::Failure;
pub use hub::Hub;
pub use local::{spawn_input, spawn_output, spawn_stderr, LocalThreads};
pub use registry::{find, register};
pub use striped::{handle_ack, tick, Stderr, StripedEnd, TickError};

/// Bytes a sender keeps (sent and not acknowledged, or not yet sent), and
/// a receiver's reassembly budget: several connections' worth of a long
/// path in flight, bounded. Acknowledgements come every quarter of it.
/// 32 MiB held 8 connections to 55-64 MB/s at 240 ms and 64 MiB one carrier
/// to about 94 MB/s steady there; with 128 MiB one carrier moves 110-115
/// (256 MiB: no better, one run; BENCHMARKS.md).
pub const WINDOW: usize = 128 << 20;

#[cfg(test)]
mod tests;
