//! Sockets and the driver loop.

pub mod compress_ctl;
pub mod crypto_pool;
pub mod crypto_workers;
pub mod fdpass;
pub mod fwdsock;
pub mod hwzlib;
pub mod local_addr;
pub mod metrics;
pub mod path;
pub mod pump;
pub mod qos;
pub mod sockbuf;
pub mod socket_bridge;
pub mod stripe;
pub mod tcp_info;
