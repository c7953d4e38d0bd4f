//! What sftp's command files share: how a command fails, the helpers each
//! uses to say so, and the shell's state (`Shell`). The command files take
//! it whole (`use super::common::*`), the names of the session and the
//! transfers with it; mod.rs, which runs the loop, imports them all.

pub(super) use super::super::errors::{os_text, TransferError};
pub(super) use super::super::options::Options;
pub(super) use super::super::remote::{self, absolute, basename, path_of};
pub(super) use super::super::session::{Sftp, SftpError, SftpResult};
pub(super) use super::super::transfer;
use super::first;
use super::settings::Settings;
pub(super) use sluice_proto::sftp::{pflags, Attrs, Status};
pub(super) use std::io::{Read, Write};
pub(super) use std::os::unix::ffi::OsStrExt;
pub(super) use std::path::{Path, PathBuf};

/// A command failed (its message printed), or the session cannot go on.
pub enum Fail {
    /// Failed; the message is printed.
    Failed,
    /// The session cannot go on.
    Fatal(SftpError),
}

pub(super) type Done = Result<bool, Fail>;

pub(super) fn err(msg: &str) -> Fail {
    crate::errln!("{msg}");
    Fail::Failed
}

pub(super) fn remote_err(what: &str, e: SftpError) -> Fail {
    match e {
        e if e.is_fatal() => Fail::Fatal(e),
        e => err(&format!("{what}: {e}")),
    }
}

pub(super) fn transfer_err(e: TransferError) -> Fail {
    match e {
        TransferError::Fatal(e) => Fail::Fatal(e),
        e => err(&e.to_string()),
    }
}

pub(super) fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The shell's state: its commands are methods in listing.rs, ops.rs and
/// xfer.rs, its loop mod.rs's.
pub(super) struct Shell {
    pub(super) s: Sftp,
    pub(super) cwd: Vec<u8>,
    pub(super) set: Settings,
    /// The first command's requests, sent with the session's (first.rs),
    /// and their answers until that command takes them.
    pub(super) guess: Option<first::Guess>,
    pub(super) early: Option<first::Early>,
    /// Bytes of stdin read before connecting (first.rs): the commands'
    /// input starts with them.
    pub(super) stdin: Vec<u8>,
}
