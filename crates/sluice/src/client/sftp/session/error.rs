//! Why a request failed ([`SftpError`]: the server's status, or the
//! session's end) and the texts sftp prints for it.

use sluice_proto::sftp::Status;

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SftpError {
    /// The server answered with a status other than OK.
    Remote(Status),
    /// The session cannot go on: the connection ended or the server broke
    /// the protocol (sftp exits 255).
    Fatal(String),
}

impl SftpError {
    /// The text sftp shows for the error (OpenSSH's fx2txt for a status).
    pub fn text(&self) -> String {
        match self {
            SftpError::Remote(s) => fx2txt(*s).to_owned(),
            SftpError::Fatal(m) => m.clone(),
        }
    }
}

impl std::fmt::Display for SftpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text())
    }
}

/// A status code as OpenSSH's sftp prints it.
pub fn fx2txt(s: Status) -> &'static str {
    match s.0 {
        0 => "No error",
        1 => "End of file",
        2 => "No such file or directory",
        3 => "Permission denied",
        4 => "Failure",
        5 => "Bad message",
        6 => "No connection",
        7 => "Connection lost",
        8 => "Operation unsupported",
        _ => "Unknown status",
    }
}

/// Result of a request.
pub type SftpResult<T> = Result<T, SftpError>;

pub(super) fn bad(what: &str) -> SftpError {
    SftpError::Fatal(format!(
        "Server sent a malformed or unexpected reply ({what})"
    ))
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

/// A session error as the message that ends the run.
pub(in crate::client::sftp) fn fatal(e: SftpError) -> String {
    match e {
        SftpError::Fatal(m) => m,
        e => e.to_string(),
    }
}
