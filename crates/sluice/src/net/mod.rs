//! Sockets and the driver loop.

pub mod compress_ctl;
pub mod crypto_pool;
pub mod crypto_workers;
pub mod fdio;
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

/// An I/O error in the words OpenSSH uses ("Connection refused").
pub fn describe_io_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "Connection refused".to_owned(),
        std::io::ErrorKind::TimedOut => "Connection timed out".to_owned(),
        _ => {
            let s = e.to_string();
            s.split(" (os error").next().unwrap_or(&s).to_owned()
        }
    }
}
