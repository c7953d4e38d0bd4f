//! What the session's calls fail with: [`SftpError`] (the server's status,
//! the session's end; client/sftp/error.rs), a reply of the wrong kind, and
//! [`WriteFromError`] for a WRITE filled from the local file.

use super::super::error::ProtocolError;
pub use super::super::error::{fx2txt, SftpError, SftpResult};

pub(super) fn bad(what: &'static str) -> SftpError {
    SftpError::Protocol(ProtocolError::Unexpected(what))
}

/// Why [`Sftp::send_write_from`] failed: reading the local data, or the
/// connection.
#[derive(Debug)]
pub enum WriteFromError {
    /// The fill function's error.
    Local(std::io::Error),
    /// The connection is gone.
    Remote(SftpError),
}
