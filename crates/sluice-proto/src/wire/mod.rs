//! The SSH wire codec (RFC 4251 section 5): bounded reads, appending writes,
//! and message numbers as named constants.

mod numbers;
mod reader;
mod writer;

pub use numbers::MsgNum;
pub use reader::{NameList, Reader};
pub(crate) use writer::mpint_parts;
pub use writer::Writer;

/// A malformed field in data received from the peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// A field ran past the end of its packet.
    Truncated,
    /// Bytes were left over after the last field of a message.
    TrailingData,
    /// A string that must be UTF-8 was not.
    BadUtf8,
    /// A name-list had an empty name or a character outside printable ASCII.
    BadNameList,
    /// An mpint was negative where only non-negative values are valid.
    NegativeMpint,
    /// A field held a value the protocol does not allow here.
    BadValue,
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WireError::Truncated => "field runs past the end of the packet",
            WireError::TrailingData => "unexpected bytes after the last field",
            WireError::BadUtf8 => "string is not valid UTF-8",
            WireError::BadNameList => "malformed name-list",
            WireError::NegativeMpint => "negative mpint",
            WireError::BadValue => "field value not allowed here",
        })
    }
}

impl std::error::Error for WireError {}
