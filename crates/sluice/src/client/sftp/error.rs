//! Why an SFTP request or session failed ([`SftpError`]: the server's
//! status, the connection's end, or the server breaking the protocol), in
//! the words sftp(1) and scp(1) print.
//!
//! A [`SftpError::Remote`] fails one request and the session goes on; the
//! others end the session (sftp and scp exit 255): [`SftpError::is_fatal`]
//! says which, so exit codes follow from the kind, never from the text.

use sluice_proto::sftp::{DecodeError, FrameError, Status};
use std::fmt;

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SftpError {
    /// The server answered with a status other than OK (shown as
    /// OpenSSH's fx2txt shows it; the server's own message kept for -v).
    Remote {
        /// The status code.
        code: Status,
        /// The server's message (lossily decoded; may be empty).
        message: String,
    },
    /// The channel or the connection is gone.
    Gone(Gone),
    /// The server broke the protocol.
    Protocol(ProtocolError),
}

/// How the session's channel ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gone {
    /// The connection or the channel closed (EOF, or the connection ended).
    Closed,
    /// The server's bytes could not be cut into packets.
    BadFrame(FrameError),
}

/// How the server broke the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtocolError {
    /// A reply of the wrong kind, or with the wrong id, or whose fields
    /// do not hold: what was expected.
    Unexpected(&'static str),
    /// A lone request's reply that does not decode.
    Undecodable(DecodeError),
    /// A pipelined reply that does not decode.
    Malformed(DecodeError),
    /// A reply to no request in flight.
    UnknownId(u32),
    /// A reply of a kind the request cannot have.
    UnexpectedReply,
    /// A reply of a kind that request (READ, WRITE) cannot have.
    UnexpectedReplyTo(&'static str),
    /// More data (or none) than a READ asked for.
    BadReadLength {
        /// The bytes the DATA held.
        got: usize,
        /// The bytes the READ asked for.
        asked: u32,
    },
    /// A sha256-range@sluice.dev reply whose data does not decode.
    BadHashReply,
}

impl SftpError {
    /// A STATUS reply's `code` and `message` as an error.
    pub fn status(code: Status, message: &[u8]) -> SftpError {
        SftpError::Remote {
            code,
            message: String::from_utf8_lossy(message).into_owned(),
        }
    }

    /// Whether the session cannot go on (sftp and scp exit 255).
    pub fn is_fatal(&self) -> bool {
        !matches!(self, SftpError::Remote { .. })
    }

    /// The text sftp shows for the error (OpenSSH's fx2txt for a status).
    pub fn text(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for SftpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SftpError::Remote { code, .. } => f.write_str(fx2txt(*code)),
            SftpError::Gone(g) => g.fmt(f),
            SftpError::Protocol(p) => p.fmt(f),
        }
    }
}

impl fmt::Display for Gone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Gone::Closed => f.write_str("Connection closed"),
            Gone::BadFrame(e) => write!(f, "bad reply from the server: {e}"),
        }
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::Unexpected(what) => {
                write!(f, "Server sent a malformed or unexpected reply ({what})")
            }
            ProtocolError::Undecodable(e) => e.fmt(f),
            ProtocolError::Malformed(e) => write!(f, "Server sent a malformed reply: {e}"),
            ProtocolError::UnknownId(id) => write!(f, "Unexpected reply id {id} from the server"),
            ProtocolError::UnexpectedReply => f.write_str("Server sent an unexpected reply"),
            ProtocolError::UnexpectedReplyTo(req) => {
                write!(f, "Server sent an unexpected reply to {req}")
            }
            ProtocolError::BadReadLength { got, asked } => {
                write!(f, "Server sent {got} bytes for a read of {asked}")
            }
            ProtocolError::BadHashReply => {
                f.write_str("Server sent a malformed sha256-range reply")
            }
        }
    }
}

impl std::error::Error for SftpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SftpError::Remote { .. } => None,
            SftpError::Gone(g) => Some(g),
            SftpError::Protocol(p) => Some(p),
        }
    }
}

impl std::error::Error for Gone {}

impl std::error::Error for ProtocolError {}

impl From<Gone> for SftpError {
    fn from(g: Gone) -> SftpError {
        SftpError::Gone(g)
    }
}

impl From<ProtocolError> for SftpError {
    fn from(p: ProtocolError) -> SftpError {
        SftpError::Protocol(p)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_words() {
        let e = SftpError::status(Status::NO_SUCH_FILE, b"/x: gone");
        assert!(!e.is_fatal());
        assert!(matches!(
            &e,
            SftpError::Remote { code: Status::NO_SUCH_FILE, message } if message == "/x: gone"
        ));
        assert_eq!(e.to_string(), "No such file or directory");
        let e = SftpError::from(Gone::Closed);
        assert!(e.is_fatal());
        assert_eq!(e.to_string(), "Connection closed");
        let e = SftpError::from(ProtocolError::UnknownId(7));
        assert!(matches!(
            e,
            SftpError::Protocol(ProtocolError::UnknownId(7))
        ));
        assert_eq!(e.to_string(), "Unexpected reply id 7 from the server");
        let e = SftpError::from(ProtocolError::Unexpected("limits"));
        assert_eq!(
            e.to_string(),
            "Server sent a malformed or unexpected reply (limits)"
        );
        let e = SftpError::from(ProtocolError::BadReadLength { got: 9, asked: 4 });
        assert_eq!(e.to_string(), "Server sent 9 bytes for a read of 4");
        assert_eq!(
            SftpError::from(ProtocolError::UnexpectedReplyTo("READ")).to_string(),
            "Server sent an unexpected reply to READ"
        );
    }
}
