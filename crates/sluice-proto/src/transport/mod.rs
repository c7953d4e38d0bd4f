//! The transport layer (RFC 4253): version exchange, binary packets in each
//! direction, and compression. Key exchange is in [`crate::kex`].

pub mod batch;
pub mod compress;
pub(crate) mod recv;
pub(crate) mod send;
pub(crate) mod version;

pub use batch::CryptoJob;
pub use recv::MAX_PACKET_LEN;
