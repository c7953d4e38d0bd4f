//! What a transfer ends with when it fails: [`TransferError`] (a remote
//! request or a local file operation on a path, a refusal, or the
//! session's end), worded as sftp or scp prints it, and the two helpers
//! every message uses (a remote path shown lossily, an OS error in
//! strerror's words).

use super::session::SftpError;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Why a transfer failed. Its Display is the message sftp and scp print
/// (scp after `scp: `); only [`TransferError::Fatal`] ends the session.
#[derive(Debug)]
pub enum TransferError {
    /// A request about a remote file failed: `OP "PATH": REASON`.
    Remote {
        /// What was asked.
        op: RemoteOp,
        /// The remote path.
        path: Vec<u8>,
        /// The server's answer (never fatal: see [`TransferError::remote`]).
        err: SftpError,
    },
    /// A local file operation failed: `OP "PATH": strerror`.
    Local {
        /// What was done.
        op: LocalOp,
        /// The local path.
        path: PathBuf,
        /// The OS's error.
        err: io::Error,
    },
    /// A batch's request about one file (many/) answered with a reply of
    /// another kind: `OP "PATH": unexpected reply`.
    Unexpected {
        /// What was asked.
        op: RemoteOp,
        /// The remote path.
        path: Vec<u8>,
    },
    /// A batch's upload OPEN answered OK without a handle: `dest open
    /// "PATH": ` (no reason to give).
    NoHandle(Vec<u8>),
    /// A batch's download could not be put in place (cut, times, rename):
    /// `"PATH": strerror`.
    Landing {
        /// The local target.
        path: PathBuf,
        /// The OS's error.
        err: io::Error,
    },
    /// A batch's upload source could not be read: `PATH: strerror`.
    Unreadable {
        /// The local source.
        path: PathBuf,
        /// The OS's error.
        err: io::Error,
    },
    /// The local file could not be read for a resume's hash check.
    LocalHash(io::Error),
    /// The local file's descriptor could not be duplicated for a copy in
    /// ranges.
    Dup(io::Error),
    /// A file not copied, by the rules of the copy.
    Refused(Refusal),
    /// The session cannot go on.
    Fatal(SftpError),
}

/// A request about a remote file, as its failure is worded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteOp {
    /// OPEN of a download's source: `open remote`.
    Open,
    /// STAT of a download's source: `stat remote`.
    Stat,
    /// CLOSE of a download's source: `close remote`.
    Close,
    /// READ: `read`.
    Read,
    /// READ of a batch's download: `read remote`.
    ReadRemote,
    /// WRITE: `Couldn't write to remote file`.
    Write,
    /// OPEN of an upload's destination: `dest open`.
    DestOpen,
    /// fsync@openssh.com: `Couldn't sync file`.
    Sync,
    /// FSETSTAT (-p): `Couldn't set attributes on`.
    SetAttrs,
    /// close-rename@sluice.dev: `Couldn't close and rename file into`.
    CloseRename,
    /// CLOSE of an upload's destination: `Couldn't close file`.
    CloseFile,
    /// The rename into place: `Couldn't rename file into`.
    Rename,
    /// sha256-range@sluice.dev (a resume's check): `Couldn't check`.
    Check,
}

/// A local file operation, as its failure is worded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalOp {
    /// `open local`.
    Open,
    /// `stat local`.
    Stat,
    /// `truncate`.
    Truncate,
    /// `fsync`.
    Fsync,
    /// `set times on`.
    SetTimes,
    /// `write to`.
    WriteTo,
    /// `read local`.
    Read,
    /// `rename to`.
    RenameTo,
}

/// Why a file is not copied, by the copy's own rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The remote file grew or shrank while it was read.
    ChangedDownload(Vec<u8>),
    /// The local file grew or shrank while it was sent.
    ChangedUpload(PathBuf),
    /// The local partial name is a symbolic link.
    PartIsLink(PathBuf),
    /// The local partial name is not a regular file.
    PartNotRegular(PathBuf),
    /// reget: the local file is larger than the remote one.
    LocalLarger(PathBuf),
    /// The remote source is not a regular file.
    RemoteNotRegular(Vec<u8>),
    /// The local source is not a regular file.
    LocalNotRegular(PathBuf),
    /// reput: the destination is as large as the source or larger.
    DestNotSmaller,
}

impl TransferError {
    /// `op` on `path` failed with `e`: fatal if `e` is.
    pub(super) fn remote(op: RemoteOp, path: &[u8], e: SftpError) -> TransferError {
        if e.is_fatal() {
            return TransferError::Fatal(e);
        }
        TransferError::Remote {
            op,
            path: path.to_vec(),
            err: e,
        }
    }

    /// `op` on the local `path` failed with `e`.
    pub(super) fn local(op: LocalOp, path: &Path, e: io::Error) -> TransferError {
        TransferError::Local {
            op,
            path: path.to_path_buf(),
            err: e,
        }
    }
}

impl fmt::Display for TransferError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransferError::Remote { op, path, err } => {
                write!(f, "{op} \"{}\": {err}", show(path))
            }
            TransferError::Local { op, path, err } => {
                write!(f, "{op} \"{}\": {}", path.display(), os_text(err))
            }
            TransferError::Unexpected { op, path } => {
                write!(f, "{op} \"{}\": unexpected reply", show(path))
            }
            TransferError::NoHandle(path) => write!(f, "dest open \"{}\": ", show(path)),
            TransferError::Landing { path, err } => {
                write!(f, "\"{}\": {}", path.display(), os_text(err))
            }
            TransferError::Unreadable { path, err } => {
                write!(f, "{}: {}", path.display(), os_text(err))
            }
            TransferError::LocalHash(e) => write!(f, "read local file: {}", os_text(e)),
            TransferError::Dup(e) => write!(f, "dup: {e}"),
            TransferError::Refused(r) => r.fmt(f),
            TransferError::Fatal(e) => e.fmt(f),
        }
    }
}

impl fmt::Display for RemoteOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RemoteOp::Open => "open remote",
            RemoteOp::Stat => "stat remote",
            RemoteOp::Close => "close remote",
            RemoteOp::Read => "read",
            RemoteOp::ReadRemote => "read remote",
            RemoteOp::Write => "Couldn't write to remote file",
            RemoteOp::DestOpen => "dest open",
            RemoteOp::Sync => "Couldn't sync file",
            RemoteOp::SetAttrs => "Couldn't set attributes on",
            RemoteOp::CloseRename => "Couldn't close and rename file into",
            RemoteOp::CloseFile => "Couldn't close file",
            RemoteOp::Rename => "Couldn't rename file into",
            RemoteOp::Check => "Couldn't check",
        })
    }
}

impl fmt::Display for LocalOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LocalOp::Open => "open local",
            LocalOp::Stat => "stat local",
            LocalOp::Truncate => "truncate",
            LocalOp::Fsync => "fsync",
            LocalOp::SetTimes => "set times on",
            LocalOp::WriteTo => "write to",
            LocalOp::Read => "read local",
            LocalOp::RenameTo => "rename to",
        })
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::ChangedDownload(r) => {
                write!(f, "\"{}\" changed during the download", show(r))
            }
            Refusal::ChangedUpload(l) => {
                write!(f, "\"{}\" changed during the upload", l.display())
            }
            Refusal::PartIsLink(p) => write!(
                f,
                "\"{}\" is a symbolic link: not writing through it (remove it to download)",
                p.display()
            ),
            Refusal::PartNotRegular(p) => write!(
                f,
                "\"{}\" is not a regular file: remove it to download",
                p.display()
            ),
            Refusal::LocalLarger(l) => write!(
                f,
                "Unable to resume download of \"{}\": local file is larger than remote",
                l.display()
            ),
            Refusal::RemoteNotRegular(r) => {
                write!(f, "download \"{}\": not a regular file", show(r))
            }
            Refusal::LocalNotRegular(l) => write!(f, "\"{}\" is not a regular file", l.display()),
            Refusal::DestNotSmaller => {
                f.write_str("destination file bigger or same size as source file")
            }
        }
    }
}

impl std::error::Error for TransferError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TransferError::Remote { err, .. } | TransferError::Fatal(err) => Some(err),
            TransferError::Local { err, .. }
            | TransferError::Landing { err, .. }
            | TransferError::Unreadable { err, .. }
            | TransferError::LocalHash(err)
            | TransferError::Dup(err) => Some(err),
            TransferError::Refused(_)
            | TransferError::Unexpected { .. }
            | TransferError::NoHandle(_) => None,
        }
    }
}

impl From<Refusal> for TransferError {
    fn from(r: Refusal) -> TransferError {
        TransferError::Refused(r)
    }
}

/// The result of a transfer.
pub type TransferResult<T> = Result<T, TransferError>;

/// An error's text as strerror(3) gives it (what sftp and scp print).
pub fn os_text(e: &io::Error) -> String {
    let Some(n) = e.raw_os_error() else {
        return e.to_string();
    };
    // std's text for an OS error is strerror's (strerror_r), then the
    // number; the number is dropped.
    let text = e.to_string();
    match text.strip_suffix(&format!(" (os error {n})")) {
        Some(t) => t.to_owned(),
        None => text,
    }
}

/// A path in quotes for messages (bytes shown lossily).
pub fn show(p: &[u8]) -> String {
    String::from_utf8_lossy(p).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::sftp::error::Gone;
    use sluice_proto::sftp::Status;

    #[test]
    fn kinds_and_words() {
        let e = TransferError::remote(RemoteOp::Open, b"/d/f", SftpError::status(Status(2), b""));
        assert!(matches!(
            e,
            TransferError::Remote {
                op: RemoteOp::Open,
                ..
            }
        ));
        assert_eq!(
            e.to_string(),
            "open remote \"/d/f\": No such file or directory"
        );
        // A session's end is fatal whatever was asked.
        let e = TransferError::remote(RemoteOp::Sync, b"/f", Gone::Closed.into());
        assert!(matches!(
            e,
            TransferError::Fatal(SftpError::Gone(Gone::Closed))
        ));
        assert_eq!(e.to_string(), "Connection closed");
        let e = TransferError::local(
            LocalOp::Truncate,
            Path::new("/l"),
            io::Error::from(rustix::io::Errno::NOSPC),
        );
        assert_eq!(e.to_string(), "truncate \"/l\": No space left on device");
        let e: TransferError = Refusal::RemoteNotRegular(b"/dev".to_vec()).into();
        assert!(matches!(
            e,
            TransferError::Refused(Refusal::RemoteNotRegular(_))
        ));
        assert_eq!(e.to_string(), "download \"/dev\": not a regular file");
        assert_eq!(
            TransferError::from(Refusal::DestNotSmaller).to_string(),
            "destination file bigger or same size as source file"
        );
    }
}
