//! What a transfer ends with when it fails: [`TransferError`], the message
//! sftp or scp prints, and the two helpers every message uses (a remote
//! path shown lossily, an OS error in strerror's words).

use super::session::SftpError;
use std::io;

/// Why a transfer failed: the message sftp prints.
#[derive(Debug)]
pub enum TransferError {
    /// A message for the user; the session goes on.
    Failed(String),
    /// The session cannot go on.
    Fatal(SftpError),
}

impl TransferError {
    pub(super) fn remote(what: String, e: SftpError) -> TransferError {
        match e {
            e if e.is_fatal() => TransferError::Fatal(e),
            e => TransferError::Failed(format!("{what}: {e}")),
        }
    }
    pub(super) fn local(what: String, e: io::Error) -> TransferError {
        TransferError::Failed(format!("{what}: {}", os_text(&e)))
    }
}

/// The result of a transfer.
pub type TransferResult<T> = Result<T, TransferError>;

/// An error's text as strerror(3) gives it (what sftp and scp print).
pub fn os_text(e: &io::Error) -> String {
    let Some(n) = e.raw_os_error() else {
        return e.to_string();
    };
    // SAFETY: strerror returns a pointer to a static (or thread-local) C
    // string, copied out before anything else runs on this thread.
    unsafe {
        let p = libc::strerror(n);
        if p.is_null() {
            return e.to_string();
        }
        std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// A path in quotes for messages (bytes shown lossily).
pub fn show(p: &[u8]) -> String {
    String::from_utf8_lossy(p).into_owned()
}
