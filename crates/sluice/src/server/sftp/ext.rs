//! OpenSSH's extended requests (PROTOCOL 4.x) and copy-data,
//! home-directory (draft-ietf-secsh-filexfer-extensions).

use super::files::{self, status_of};
use super::handles::Server;
use sluice_proto::sftp::reply::{self, Statvfs};
use sluice_proto::sftp::{Extended, Status, MAX_HASH_RANGE, MAX_PACKET, MAX_READ_WRITE};
use std::io;
use std::os::unix::fs::FileExt;

/// Answers `e` into `out`, or the status to send instead.
pub(super) fn answer(
    s: &mut Server,
    id: u32,
    e: Extended<'_>,
    out: &mut Vec<u8>,
) -> Result<(), Status> {
    let ok = |out: &mut Vec<u8>| reply::status(out, id, Status::OK, "");
    match e {
        Extended::PosixRename { from, to } => {
            posix_rename(s, from, to)?;
            ok(out);
        }
        Extended::Hardlink { target, link } => {
            hardlink(s, target, link)?;
            ok(out);
        }
        Extended::Statvfs { path } => {
            let v = statvfs(path)?;
            reply::statvfs(out, id, &v);
        }
        Extended::Fstatvfs { handle } => {
            let v = fstatvfs(s, handle)?;
            reply::statvfs(out, id, &v);
        }
        Extended::Fsync { handle } => {
            let f = s.file(handle).ok_or(Status::FAILURE)?;
            f.file.sync_all().map_err(|e| status_of(&e))?;
            ok(out);
        }
        Extended::Lsetstat { path, attrs } => {
            s.log(&format!(
                "set \"{}\" attributes (lsetstat)",
                files::show(path)
            ));
            files::set_attrs(path, &attrs, false).map_err(|e| status_of(&e))?;
            ok(out);
        }
        Extended::Limits => limits(s, id, out),
        Extended::ExpandPath { path } => {
            let p = expand_tilde(s, path)?;
            let p = files::realpath(&p).map_err(|e| status_of(&e))?;
            files::one_name(out, id, p);
        }
        Extended::HomeDirectory { user } => {
            let home = home_directory(s, user)?;
            files::one_name(out, id, home.into_bytes());
        }
        Extended::UsersGroupsById { uids, gids } => users_groups_by_id(s, id, &uids, &gids, out),
        Extended::CopyData {
            read_handle,
            read_offset,
            read_len,
            write_handle,
            write_offset,
        } => {
            copy_data(
                s,
                read_handle,
                read_offset,
                read_len,
                write_handle,
                write_offset,
            )?;
            ok(out);
        }
        Extended::CloseRename { handle, to } => {
            close_rename(s, handle, to)?;
            ok(out);
        }
        Extended::OpenAs {
            handle,
            path,
            pflags,
            attrs,
        } => {
            // Checked first: nothing is created for a handle refused.
            let hid = s.client_handle(handle)?;
            let h = s.open_file(path, pflags, &attrs)?;
            s.insert_handle(hid, h);
            ok(out);
        }
        Extended::Sha256Range { path, offset, len } => {
            let (n, hash) = sha256_range(path, offset, len)?;
            reply::extended(out, id, |w| {
                w.u64(n).string(&hash);
            });
        }
    }
    Ok(())
}

/// posix-rename@openssh.com: rename(2), replacing the target.
fn posix_rename(s: &mut Server, from: &[u8], to: &[u8]) -> Result<(), Status> {
    s.log(&format!(
        "posix-rename old \"{}\" new \"{}\"",
        files::show(from),
        files::show(to)
    ));
    std::fs::rename(files::path(from), files::path(to)).map_err(|e| status_of(&e))
}

/// hardlink@openssh.com: link(2).
fn hardlink(s: &mut Server, target: &[u8], link: &[u8]) -> Result<(), Status> {
    s.log(&format!(
        "hardlink old \"{}\" new \"{}\"",
        files::show(target),
        files::show(link)
    ));
    std::fs::hard_link(files::path(target), files::path(link)).map_err(|e| status_of(&e))
}

/// statvfs@openssh.com: the file system holding `path`.
fn statvfs(path: &[u8]) -> Result<Statvfs, Status> {
    let c = std::ffi::CString::new(files::path(path).as_os_str().as_encoded_bytes())
        .map_err(|_| Status::BAD_MESSAGE)?;
    let v = rustix::fs::statvfs(&c).map_err(|e| status_of(&e.into()))?;
    Ok(statvfs_of(&v))
}

/// fstatvfs@openssh.com: the file system holding an open file.
fn fstatvfs(s: &mut Server, handle: &[u8]) -> Result<Statvfs, Status> {
    let f = s.file(handle).ok_or(Status::FAILURE)?;
    let v = rustix::fs::fstatvfs(&f.file).map_err(|e| status_of(&e.into()))?;
    Ok(statvfs_of(&v))
}

/// limits@openssh.com: packet and read/write sizes, open handles.
fn limits(s: &Server, id: u32, out: &mut Vec<u8>) {
    let handles = s.max_handles() as u64;
    reply::extended(out, id, |w| {
        w.u64(u64::from(MAX_PACKET))
            .u64(u64::from(MAX_READ_WRITE))
            .u64(u64::from(MAX_READ_WRITE))
            .u64(handles);
    });
}

/// home-directory: the session user's home, or another user's.
fn home_directory(s: &Server, user: &[u8]) -> Result<String, Status> {
    if user.is_empty() || user == s.w.user.as_bytes() {
        return Ok(s.w.home.clone());
    }
    let name = std::str::from_utf8(user).map_err(|_| Status::NO_SUCH_FILE)?;
    Ok(crate::users::by_name(name)
        .ok_or(Status::NO_SUCH_FILE)?
        .home)
}

/// users-groups-by-id@openssh.com: names for ids, empty when unknown.
fn users_groups_by_id(s: &mut Server, id: u32, uids: &[u32], gids: &[u32], out: &mut Vec<u8>) {
    let users: Vec<String> = uids
        .iter()
        .map(|u| s.names.user(*u).unwrap_or_default())
        .collect();
    let groups: Vec<String> = gids
        .iter()
        .map(|g| s.names.group(*g).unwrap_or_default())
        .collect();
    reply::extended(out, id, |w| {
        w.nested(|w| {
            for u in &users {
                w.utf8(u);
            }
        });
        w.nested(|w| {
            for g in &groups {
                w.utf8(g);
            }
        });
    });
}

/// close-rename@sluice.dev: closed whatever follows, as CLOSE; renamed
/// only when every WRITE landed (PROTOCOL.md).
fn close_rename(s: &mut Server, handle: &[u8], to: &[u8]) -> Result<(), Status> {
    let f = match s.close(handle)? {
        super::files::Handle::File(f) => f,
        super::files::Handle::Dir(_) => return Err(Status::FAILURE),
    };
    drop(f.file);
    if f.failed {
        s.log(&format!(
            "close-rename \"{}\": a write failed, not renamed",
            files::show(&f.path)
        ));
        return Err(Status::FAILURE);
    }
    s.log(&format!(
        "posix-rename old \"{}\" new \"{}\"",
        files::show(&f.path),
        files::show(to)
    ));
    std::fs::rename(files::path(&f.path), files::path(to)).map_err(|e| status_of(&e))
}

/// sha256-range@sluice.dev (PROTOCOL.md): the SHA-256 of the file's bytes
/// from `offset`, `len` of them or up to its end, and how many that was.
/// The range is bounded (`MAX_HASH_RANGE`) so one request's work is too.
fn sha256_range(path: &[u8], offset: u64, len: u64) -> Result<(u64, Vec<u8>), Status> {
    if len > MAX_HASH_RANGE {
        return Err(Status::BAD_MESSAGE);
    }
    let f = std::fs::File::open(files::path(path)).map_err(|e| status_of(&e))?;
    let mut ctx = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0u64;
    while done < len {
        let want = (len - done).min(buf.len() as u64) as usize;
        let Some(chunk) = buf.get_mut(..want) else {
            break;
        };
        let n =
            files::read_at(&f, chunk, offset.saturating_add(done)).map_err(|e| status_of(&e))?;
        if n == 0 {
            break;
        }
        ctx.update(chunk.get(..n).unwrap_or_default());
        done += n as u64;
    }
    Ok((done, ctx.finish().as_ref().to_vec()))
}

fn statvfs_of(v: &rustix::fs::StatVfs) -> Statvfs {
    use rustix::fs::StatVfsMountFlags;
    let mut flag = 0;
    if v.f_flag.contains(StatVfsMountFlags::RDONLY) {
        flag |= 1;
    }
    if v.f_flag.contains(StatVfsMountFlags::NOSUID) {
        flag |= 2;
    }
    Statvfs {
        bsize: v.f_bsize,
        frsize: v.f_frsize,
        blocks: v.f_blocks,
        bfree: v.f_bfree,
        bavail: v.f_bavail,
        files: v.f_files,
        ffree: v.f_ffree,
        favail: v.f_favail,
        fsid: v.f_fsid,
        flag,
        namemax: v.f_namemax,
    }
}

/// `~` and `~/x` (our home), `~user/x` (theirs), as expand-path@openssh.com.
fn expand_tilde(s: &Server, p: &[u8]) -> Result<Vec<u8>, Status> {
    let Some(rest) = p.strip_prefix(b"~") else {
        return Ok(p.to_vec());
    };
    let (user, tail) = match rest.iter().position(|b| *b == b'/') {
        Some(i) => (
            rest.get(..i).unwrap_or_default(),
            rest.get(i..).unwrap_or_default(),
        ),
        None => (rest, &b""[..]),
    };
    let home = if user.is_empty() {
        s.w.home.clone()
    } else {
        let name = std::str::from_utf8(user).map_err(|_| Status::NO_SUCH_FILE)?;
        crate::users::by_name(name)
            .ok_or(Status::NO_SUCH_FILE)?
            .home
    };
    let mut out = home.into_bytes();
    out.extend_from_slice(tail);
    Ok(out)
}

/// copy-data: read from one handle, write to another, in the server; a
/// range that overlaps itself in the same file is refused.
fn copy_data(
    s: &mut Server,
    rh: &[u8],
    mut roff: u64,
    len: u64,
    wh: &[u8],
    mut woff: u64,
) -> Result<(), Status> {
    let st = |e: io::Error| status_of(&e);
    let src = s
        .file(rh)
        .ok_or(Status::FAILURE)?
        .file
        .try_clone()
        .map_err(st)?;
    let dst = s
        .file(wh)
        .ok_or(Status::FAILURE)?
        .file
        .try_clone()
        .map_err(st)?;
    if rh == wh {
        let end = |o: u64| {
            if len == 0 {
                u64::MAX
            } else {
                o.saturating_add(len)
            }
        };
        if roff < end(woff) && woff < end(roff) {
            return Err(Status::FAILURE);
        }
    }
    let mut left = if len == 0 { u64::MAX } else { len };
    let mut buf = vec![0u8; 256 * 1024];
    while left > 0 {
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = files::read_at(&src, buf.get_mut(..want).unwrap_or_default(), roff).map_err(st)?;
        if n == 0 {
            if len != 0 {
                return Err(Status::EOF);
            }
            break;
        }
        if let Err(e) = dst.write_all_at(buf.get(..n).unwrap_or_default(), woff) {
            if let Some(f) = s.file(wh) {
                f.failed = true;
            }
            return Err(st(e));
        }
        roff += n as u64;
        woff += n as u64;
        left -= n as u64;
    }
    Ok(())
}
