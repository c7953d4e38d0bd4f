//! Replies read into results: a STATUS, ATTRS, HANDLE or one NAME.

use super::error::{bad, SftpError, SftpResult};
use sluice_proto::sftp::{Attrs, Reply, Status};

/// A STATUS reply: Ok for OK, else its code.
pub fn status_of(body: &[u8]) -> SftpResult<()> {
    match Reply::decode(body) {
        Ok(Reply::Status {
            code: Status::OK, ..
        }) => Ok(()),
        Ok(Reply::Status { code, message, .. }) => Err(SftpError::status(code, message)),
        _ => Err(bad("expected STATUS")),
    }
}

pub(super) fn attrs_of(body: &[u8]) -> SftpResult<Attrs> {
    match Reply::decode(body) {
        Ok(Reply::Attrs { attrs, .. }) => Ok(attrs),
        Ok(Reply::Status { code, message, .. }) => Err(SftpError::status(code, message)),
        _ => Err(bad("expected ATTRS")),
    }
}

pub(super) fn handle_of(body: &[u8]) -> SftpResult<Vec<u8>> {
    match Reply::decode(body) {
        Ok(Reply::Handle { handle, .. }) if handle.len() <= 256 => Ok(handle.to_vec()),
        Ok(Reply::Status { code, message, .. }) => Err(SftpError::status(code, message)),
        _ => Err(bad("expected HANDLE")),
    }
}

pub(super) fn one_name(body: &[u8]) -> SftpResult<Vec<u8>> {
    match Reply::decode(body) {
        Ok(Reply::Name { mut entries, .. }) if entries.len() == 1 => {
            Ok(entries.pop().map(|e| e.filename).unwrap_or_default())
        }
        Ok(Reply::Status { code, message, .. }) => Err(SftpError::status(code, message)),
        _ => Err(bad("expected one NAME")),
    }
}
