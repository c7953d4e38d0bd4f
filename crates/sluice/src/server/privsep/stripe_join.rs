//! The primary's monitor as the judge of joins (PROTOCOL.md "Channel
//! striping", ARCHITECTURE.md's striping plan, *Join*): M keeps the
//! admission of the grant it issued and answers on a Unix socket in a
//! root-only directory, named after a hash of the session reference; a
//! secondary connection's monitor M' connects there with what its own
//! pre-auth child saw (its session identifier, the user name, the join
//! request) and gets the join number admitted or a refusal.
//!
//! Only root reaches the socket: the directory is 0700 root (checked, not
//! trusted: a directory someone else owns or may write is refused) and
//! every accepted peer's SO_PEERCRED uid must be 0. One request per
//! connection, bounded in size; whatever is wrong, the asker gets a plain
//! refusal and the primary's log says why.

use super::wire::{R, W};
use aws_lc_rs::digest;
use sluice_proto::stripe::codec::JoinRequest;
use sluice_proto::stripe::token::{Admission, JoinRefused};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where the join sockets live (beside sshd's privsep directory).
pub const STRIPE_DIR: &str = "/run/sluiced/stripe";
/// Largest request read: a session id, a user name, a join request.
const MAX_REQUEST: u64 = 2048;
/// How long one asker may take to send its request or read the answer.
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// The socket of the session `session_ref` names in `dir`: a hash, so the
/// reference (a credential's half) is never in a file name.
pub fn socket_path(dir: &Path, session_ref: &[u8]) -> PathBuf {
    let h = digest::digest(&digest::SHA256, session_ref);
    let name: String = h.as_ref()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    dir.join(format!("{name}.sock"))
}

/// Creates `dir` (and its parent) if missing, and checks that it is a real
/// directory owned by root with no access for group or others.
fn root_only_dir(dir: &Path) -> Result<(), String> {
    if let Some(parent) = dir.parent() {
        let _ = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(parent);
    }
    // The parent too: whoever may write there could swap the directory.
    if let Some(parent) = dir.parent() {
        let md = std::fs::metadata(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        let sticky_tmp = md.mode() & 0o1000 != 0; // /tmp-like: entries stay their owner's
        if md.uid() != 0 || (md.mode() & 0o022 != 0 && !sticky_tmp) {
            return Err(format!(
                "{}: must be owned by root and writable by root only",
                parent.display()
            ));
        }
    }
    let _ = std::fs::DirBuilder::new().mode(0o700).create(dir);
    let md = std::fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !md.is_dir() || md.uid() != 0 || md.mode() & 0o077 != 0 {
        return Err(format!(
            "{}: must be a directory owned by root, mode 0700 (fix or remove it)",
            dir.display()
        ));
    }
    Ok(())
}

/// The listening side, in the primary's monitor; the socket file goes
/// when this is dropped (the session's end).
pub struct JoinService {
    path: PathBuf,
}

impl JoinService {
    /// Listens for joins to `admission`'s session in `dir`, answering on a
    /// thread of its own for as long as the process lives.
    pub fn start(dir: &Path, admission: Arc<Mutex<Admission>>) -> Result<JoinService, String> {
        root_only_dir(dir)?;
        let path = {
            let a = admission.lock().map_err(|_| "admission lock poisoned")?;
            socket_path(dir, a.session_ref())
        };
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        std::thread::Builder::new()
            .name("stripe-join".into())
            .spawn(move || {
                for conn in listener.incoming().flatten() {
                    if let Err(why) = answer(conn, &admission) {
                        crate::log!(Info, "monitor: striping join refused: {why}");
                    }
                }
            })
            .map_err(|e| format!("join thread: {e}"))?;
        Ok(JoinService { path })
    }
}

impl Drop for JoinService {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn peer_uid(s: &UnixStream) -> Option<u32> {
    use std::os::fd::AsRawFd;
    // SAFETY: ucred is plain data; getsockopt fills at most len bytes.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: valid fd, pointer and length.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(cred.uid)
}

/// One asker: its request, the verdict (u8 1 + u32 join number, or u8 0).
fn answer(mut conn: UnixStream, admission: &Mutex<Admission>) -> Result<(), String> {
    if peer_uid(&conn) != Some(0) {
        return Err("asker is not root".into());
    }
    let _ = conn.set_read_timeout(Some(IO_TIMEOUT));
    let _ = conn.set_write_timeout(Some(IO_TIMEOUT));
    let mut buf = Vec::new();
    (&mut conn)
        .take(MAX_REQUEST + 1)
        .read_to_end(&mut buf)
        .map_err(|e| format!("reading the request: {e}"))?;
    let verdict = if buf.len() as u64 > MAX_REQUEST {
        Err("request too long".to_owned())
    } else {
        decode(&buf).and_then(|(sid, user, req)| {
            let mut a = admission.lock().map_err(|_| "admission lock poisoned")?;
            a.admit(&sid, &user, &req)
                .map(|n| (n, user))
                .map_err(|r: JoinRefused| r.to_string())
        })
    };
    let mut w = W(Vec::new());
    match &verdict {
        Ok((n, user)) => {
            w.u8(1).u32(*n);
            crate::log!(Verbose, "monitor: striping join {n} admitted for {user}");
        }
        Err(_) => {
            w.u8(0);
        }
    };
    let _ = conn.write_all(&w.0);
    verdict.map(|_| ())
}

fn decode(buf: &[u8]) -> Result<(Vec<u8>, String, JoinRequest), String> {
    let mut r = R(buf);
    let bad = |e: super::wire::WireError| format!("malformed request: {e}");
    let sid = r.bytes(64).map_err(bad)?.to_vec();
    let user = r.string(256).map_err(bad)?;
    let req = JoinRequest::decode(r.bytes(512).map_err(bad)?).map_err(|e| e.to_string())?;
    r.finish().map_err(bad)?;
    Ok((sid, user, req))
}

/// The asking side, in a secondary's monitor: the join number admitted
/// for a secondary whose session identifier is `session_id`, or why not
/// (for the secondary's log; its client sees USERAUTH_FAILURE either way).
pub fn ask(dir: &Path, session_id: &[u8], user: &str, req: &JoinRequest) -> Result<u32, String> {
    let path = socket_path(dir, &req.session_ref);
    let mut s = UnixStream::connect(&path).map_err(|_| "no such session".to_owned())?;
    let _ = s.set_read_timeout(Some(IO_TIMEOUT));
    let _ = s.set_write_timeout(Some(IO_TIMEOUT));
    let mut w = W(Vec::new());
    w.bytes(session_id)
        .bytes(user.as_bytes())
        .bytes(&req.encode());
    s.write_all(&w.0)
        .and_then(|()| s.shutdown(std::net::Shutdown::Write))
        .map_err(|e| format!("asking the session's monitor: {e}"))?;
    let mut reply = Vec::new();
    (&mut s)
        .take(16)
        .read_to_end(&mut reply)
        .map_err(|e| format!("the session's monitor: {e}"))?;
    let mut r = R(&reply);
    match r.u8() {
        Ok(1) => {
            let n = r.u32().map_err(|e| e.to_string())?;
            r.finish().map_err(|e| e.to_string())?;
            Ok(n)
        }
        _ => Err("refused by the session's monitor (see its log)".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_proto::stripe::token::Joiner;

    fn tmp_dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("sluice-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d.join("stripe")
    }

    #[test]
    fn admits_each_number_once_and_only_with_the_key() {
        // The socket directory must be root's; the suite runs as root (CI).
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipping: needs root");
            return;
        }
        let dir = tmp_dir("join");
        let primary = [7u8; 32];
        let (admission, grant) =
            Admission::issue(vec![3; 32], [9; 32], &primary, "bob", 2, 7).unwrap();
        let service = JoinService::start(&dir, Arc::new(Mutex::new(admission))).unwrap();
        let md = std::fs::metadata(&dir).unwrap();
        assert_eq!(md.mode() & 0o777, 0o700);
        let mut joiner = Joiner::new(&grant, &primary);
        let req = joiner.join(&[1; 32], "bob").unwrap();
        assert_eq!(ask(&dir, &[1; 32], "bob", &req), Ok(1));
        assert!(ask(&dir, &[1; 32], "bob", &req).is_err(), "replayed");
        let req2 = joiner.join(&[2; 32], "bob").unwrap();
        assert!(
            ask(&dir, &[3; 32], "bob", &req2).is_err(),
            "other session id"
        );
        assert!(ask(&dir, &[2; 32], "alice", &req2).is_err(), "other user");
        assert_eq!(ask(&dir, &[2; 32], "bob", &req2), Ok(2));
        // A key from another grant of the same reference does not verify.
        let (_, other) = Admission::issue(vec![3; 32], [8; 32], &primary, "bob", 2, 7).unwrap();
        let forged = Joiner::new(&other, &primary).join(&[4; 32], "bob").unwrap();
        assert!(ask(&dir, &[4; 32], "bob", &forged).is_err(), "forged");
        // A reference naming no session.
        let (_, none) = Admission::issue(vec![5; 32], [9; 32], &primary, "bob", 2, 7).unwrap();
        let stray = Joiner::new(&none, &primary).join(&[4; 32], "bob").unwrap();
        assert_eq!(
            ask(&dir, &[4; 32], "bob", &stray),
            Err("no such session".into())
        );
        drop(service);
        assert!(!socket_path(&dir, &[3; 32]).exists(), "socket removed");
        // A directory group or others may enter is refused.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (a, _) = Admission::issue(vec![6; 32], [9; 32], &primary, "bob", 2, 7).unwrap();
        assert!(JoinService::start(&dir, Arc::new(Mutex::new(a))).is_err());
        // So is one whose parent others may write.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let parent = dir.parent().unwrap();
        std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o777)).unwrap();
        let (a, _) = Admission::issue(vec![6; 32], [9; 32], &primary, "bob", 2, 7).unwrap();
        assert!(JoinService::start(&dir, Arc::new(Mutex::new(a))).is_err());
        let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    }
}
