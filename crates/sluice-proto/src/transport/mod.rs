//! The transport layer (RFC 4253): version exchange, binary packets in each
//! direction, and compression (the engine slot in [`compress`], batches in
//! [`compress_batch`], zlib in [`zlib`]). Key exchange is in [`crate::kex`].

pub mod batch;
pub mod compress;
pub mod compress_batch;
pub(crate) mod compress_state;
pub mod pzlib;
pub(crate) mod recv;
pub(crate) mod send;
pub(crate) mod version;
pub mod zlib;
pub mod zstd;
pub(crate) mod zstd_in;

pub use batch::CryptoJob;
pub use compress_batch::CompressJob;
pub use recv::MAX_PACKET_LEN;
