//! What the session sends ahead of knowing it is wanted: the first
//! command's STAT and OPEN with the session's first requests ([`First`]),
//! and the WRITEs or READs behind an OPEN where the server takes a handle
//! named by the client (open-as@sluice.dev, [`Behind`]).

use super::error::SftpResult;
use sluice_proto::sftp::Attrs;

/// A WRITE (or READ) sent and not yet answered: id, offset, length.
pub type InFlight = (u32, u64, usize);

/// What goes right behind an OPEN ahead, where the server takes a handle
/// named by the client (sluiced: open-as@sluice.dev).
#[derive(Clone, Copy, Default)]
pub enum Behind<'a> {
    /// Nothing: a plain OPEN.
    #[default]
    Nothing,
    /// An upload: WRITEs of this local file's first bytes.
    Write(&'a std::fs::File),
    /// A download: READs of the file's first bytes.
    Read,
}

/// What the session asks with its first requests, besides the limits and
/// the start directory: scp knows its one file before the session starts.
#[derive(Default)]
pub struct First<'a> {
    /// STAT this path (following links).
    pub stat: Option<&'a [u8]>,
    /// OPEN this, on the guess that the STAT will show it is the file to
    /// use (a round trip less).
    pub open: Option<&'a OpenAhead>,
    /// The WRITEs or READs that go right behind that open, where the
    /// server takes a handle named by the client (sluiced:
    /// open-as@sluice.dev); another round trip less. Only toward a sluiced
    /// (sent before VERSION says what it offers).
    pub behind: Behind<'a>,
}

/// An OPEN sent on a guess, ahead of the answer that decides it.
#[derive(Clone)]
pub struct OpenAhead {
    /// The path.
    pub path: Vec<u8>,
    /// pflags.
    pub flags: u32,
    /// The attributes of a file it creates.
    pub attrs: Attrs,
}

/// The answer to [`First::open`].
pub struct EarlyOpen {
    /// The path as opened.
    pub path: Vec<u8>,
    /// It was opened to create a file (to be removed if not used).
    pub created: bool,
    /// The handle, or the server's refusal.
    pub result: SftpResult<Vec<u8>>,
    /// WRITEs or READs of the file's first bytes sent behind the open
    /// and not yet taken ([`First::behind`]): the taker reads their answers
    /// ([`Sftp::take_sent_ahead`]).
    pub sent: Vec<InFlight>,
}
