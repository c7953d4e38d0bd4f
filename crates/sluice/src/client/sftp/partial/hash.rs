//! Whether a local file and a remote one hold the same bytes in a range,
//! by sha256-range@sluice.dev (sluiced only): what a resume checks before
//! it trusts the record (resume.rs) or the target's prefix (down.rs, up.rs).

use super::super::error::ProtocolError;
use super::super::errors::{RemoteOp, TransferError, TransferResult};
use super::super::session::{Sftp, SftpError};
use sluice_proto::sftp::{Reply, Request, MAX_HASH_RANGE};
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// SHA-256 of `f`'s bytes in `[off, off + len)`.
fn local_hash(f: &File, off: u64, len: u64) -> io::Result<(u64, [u8; 32])> {
    let mut ctx = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0u64;
    while done < len {
        let want = (len - done).min(buf.len() as u64) as usize;
        let b = buf.get_mut(..want).unwrap_or_default();
        let n = f.read_at(b, off + done)?;
        if n == 0 {
            break;
        }
        ctx.update(b.get(..n).unwrap_or_default());
        done += n as u64;
    }
    let mut h = [0u8; 32];
    h.copy_from_slice(ctx.finish().as_ref());
    Ok((done, h))
}

/// Whether `local` and `remote` hold the same bytes in `[at, at + len)`
/// (see `same_prefix`). Pieces of `MAX_HASH_RANGE`, two in flight, so
/// the server hashes one while we hash ours.
pub(in super::super) fn same_range(
    s: &mut Sftp,
    remote: &[u8],
    local: &File,
    at: u64,
    len: u64,
) -> TransferResult<Option<bool>> {
    if !s.has("sha256-range@sluice.dev", "1") {
        return Ok(None);
    }
    let mut sent = 0;
    let mut pending: std::collections::VecDeque<(u32, u64, u64)> = Default::default();
    let mut answers: HashMap<u32, Vec<u8>> = HashMap::new();
    let mut same = true;
    loop {
        while same && pending.len() < 2 && sent < len {
            let n = (len - sent).min(MAX_HASH_RANGE);
            let req = Request::Extended(sluice_proto::sftp::Extended::Sha256Range {
                path: remote,
                offset: at + sent,
                len: n,
            });
            let id = s
                .send(&req)
                .map_err(|e| TransferError::remote(RemoteOp::Check, remote, e))?;
            pending.push_back((id, at + sent, n));
            sent += n;
        }
        let Some((id, off, n)) = pending.pop_front() else {
            break;
        };
        let ours = if same {
            Some(local_hash(local, off, n).map_err(TransferError::LocalHash)?)
        } else {
            None
        };
        while !answers.contains_key(&id) {
            let body = s
                .recv()
                .map_err(|e| TransferError::remote(RemoteOp::Check, remote, e))?;
            let rid = Reply::decode(&body).ok().and_then(|r| r.id()).unwrap_or(0);
            if !pending.iter().any(|p| p.0 == rid) && rid != id {
                return Err(TransferError::Fatal(ProtocolError::UnknownId(rid).into()));
            }
            answers.insert(rid, body);
        }
        let body = answers.remove(&id).unwrap_or_default();
        let theirs = match Reply::decode(&body) {
            Ok(Reply::ExtendedReply { data, .. }) => {
                sluice_proto::sftp::response::sha256_range(data)
                    .map_err(|_| TransferError::Fatal(ProtocolError::BadHashReply.into()))?
            }
            Ok(Reply::Status { code, message, .. }) => {
                return Err(TransferError::remote(
                    RemoteOp::Check,
                    remote,
                    SftpError::status(code, message),
                ))
            }
            _ => return Err(TransferError::Fatal(ProtocolError::UnexpectedReply.into())),
        };
        if ours.is_some_and(|o| o != theirs) {
            same = false;
        }
    }
    Ok(Some(same))
}
