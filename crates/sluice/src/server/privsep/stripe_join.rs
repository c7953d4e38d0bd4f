//! The primary's monitor as the judge of joins (PROTOCOL.md "Channel
//! striping", ARCHITECTURE.md's striping plan, *Join* and *Handover*): M
//! keeps the admission of the grant it issued and answers on a Unix socket
//! in a root-only directory, named after a hash of the session reference;
//! a secondary connection's monitor M' connects there with what its own
//! pre-auth child saw (its session identifier, the user name, the join
//! request) and the secondary's addresses, and gets the join number
//! admitted or a refusal with its reason (for the secondary's log; the
//! client sees only USERAUTH_FAILURE). A proof that verifies uses its
//! number up; the join is then judged as a login from the secondary's
//! address with the primary's credentials (join_policy.rs) and may still
//! be refused. Once admitted, M' hands the secondary's transport
//! state, unread input and TCP socket (SCM_RIGHTS) over the same
//! connection; M passes them on to the primary's user process U on a
//! socketpair of their own (postauth.rs), and confirms.
//!
//! Only root reaches the socket: the directory is 0700 root (checked, not
//! trusted: a directory someone else owns or may write is refused) and
//! every accepted peer's SO_PEERCRED uid must be 0. The socket is
//! SOCK_SEQPACKET and speaks the monitor protocol (wire.rs), decoded
//! strictly; one join per connection, each message within a time limit.

use super::datagram;
pub use super::join_error::JoinError;
use super::join_policy::JoinPolicy;
use super::wire::{Msg, WireError, INPUT_CHUNK};
use aws_lc_rs::digest;
use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};
use sluice_proto::stripe::codec::JoinRequest;
use sluice_proto::stripe::token::Admission;
use std::net::SocketAddr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Where the join sockets live (beside sshd's privsep directory).
pub const STRIPE_DIR: &str = "/run/sluiced/stripe";
/// How long one side may take to send its next message (milliseconds).
const IO_TIMEOUT_MS: i32 = 10_000;
/// Cap on the raw input a joined connection's handover may carry (as for
/// a login's handover, monitor.rs).
const MAX_INPUT: usize = 2 << 20;

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
fn root_only_dir(dir: &Path) -> Result<(), JoinError> {
    if let Some(parent) = dir.parent() {
        let _ = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(parent);
    }
    // The parent too: whoever may write there could swap the directory.
    if let Some(parent) = dir.parent() {
        let md = std::fs::metadata(parent).map_err(|err| JoinError::Path {
            path: parent.to_owned(),
            err,
        })?;
        let sticky_tmp = md.mode() & 0o1000 != 0; // /tmp-like: entries stay their owner's
        if md.uid() != 0 || (md.mode() & 0o022 != 0 && !sticky_tmp) {
            return Err(JoinError::ParentNotRootOnly(parent.to_owned()));
        }
    }
    let _ = std::fs::DirBuilder::new().mode(0o700).create(dir);
    let md = std::fs::symlink_metadata(dir).map_err(|err| JoinError::Path {
        path: dir.to_owned(),
        err,
    })?;
    if !md.is_dir() || md.uid() != 0 || md.mode() & 0o077 != 0 {
        return Err(JoinError::DirNotRootOnly(dir.to_owned()));
    }
    Ok(())
}

/// The size of `sockaddr_un`'s path: a path must fit with its NUL.
const SUN_PATH_LEN: usize = 108;

/// A SOCK_SEQPACKET Unix socket (close-on-exec) and `path` as its address.
fn seqpacket(path: &Path) -> Result<(OwnedFd, SocketAddrUnix), JoinError> {
    let bytes = path.as_os_str().as_bytes();
    if bytes.len() >= SUN_PATH_LEN {
        return Err(JoinError::PathTooLong(path.to_owned()));
    }
    // Fits (above); a NUL inside the path is the only other refusal.
    let addr = SocketAddrUnix::new(path).map_err(|_| JoinError::PathTooLong(path.to_owned()))?;
    let fd = rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|e| JoinError::Socket(e.into()))?;
    Ok((fd, addr))
}

/// The listening side, in the primary's monitor; the socket file goes
/// when this is dropped (the session's end).
pub struct JoinService {
    path: PathBuf,
}

impl JoinService {
    /// Listens for joins to `admission`'s session in `dir`, answering on a
    /// thread of its own for as long as the process lives; joins `policy`
    /// allows go to the user's process on `to_user`.
    pub fn start(
        dir: &Path,
        admission: Arc<Mutex<Admission>>,
        policy: JoinPolicy,
        to_user: OwnedFd,
    ) -> Result<JoinService, JoinError> {
        root_only_dir(dir)?;
        let path = {
            let a = admission.lock().map_err(|_| JoinError::Poisoned)?;
            socket_path(dir, a.session_ref())
        };
        let _ = std::fs::remove_file(&path);
        let (listener, addr) = seqpacket(&path)?;
        let err = |call: &'static str, e: Errno| JoinError::Listen {
            path: path.clone(),
            call,
            err: e.into(),
        };
        rustix::net::bind(&listener, &addr).map_err(|e| err("bind", e))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).map_err(|err| {
            JoinError::Path {
                path: path.clone(),
                err,
            }
        })?;
        rustix::net::listen(&listener, 16).map_err(|e| err("listen", e))?;
        std::thread::Builder::new()
            .name("stripe-join".into())
            .spawn(move || loop {
                // No address wanted.
                let conn = match rustix::net::accept_with(&listener, SocketFlags::CLOEXEC) {
                    Ok(conn) => conn,
                    Err(Errno::INTR) => continue,
                    Err(e) => {
                        crate::log!(
                            Error,
                            "monitor: striping join socket: {}",
                            std::io::Error::from(e)
                        );
                        return;
                    }
                };
                if let Err(why) = answer(&conn, &admission, &policy, &to_user) {
                    crate::log!(Info, "monitor: striping join refused: {why}");
                }
            })
            .map_err(JoinError::Thread)?;
        Ok(JoinService { path })
    }
}

impl Drop for JoinService {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The uid at the other end (SO_PEERCRED), None if it cannot be read.
fn peer_uid(s: &OwnedFd) -> Option<u32> {
    crate::net::fdpass::peer_uid(s).ok()
}

/// The next message within the time limit.
fn next(fd: &OwnedFd) -> Result<(Msg, Vec<OwnedFd>), JoinError> {
    match datagram::recv_fds(fd, IO_TIMEOUT_MS) {
        Ok(Some(m)) => Ok(m),
        Ok(None) => Err(JoinError::TimedOut),
        Err(e) => Err(JoinError::Wire(e)),
    }
}

/// One asker: its request, the verdict; after an admission, the
/// connection itself, passed on to the user's process.
fn answer(
    conn: &OwnedFd,
    admission: &Mutex<Admission>,
    policy: &JoinPolicy,
    to_user: &OwnedFd,
) -> Result<(), JoinError> {
    if peer_uid(conn) != Some(0) {
        return Err(JoinError::NotRoot);
    }
    let verdict = match next(conn)? {
        (
            Msg::JoinAsk {
                session_id,
                user,
                request,
                peer,
                local,
            },
            fds,
        ) if fds.is_empty() => {
            let admitted = {
                let mut a = admission.lock().map_err(|_| JoinError::Poisoned)?;
                a.admit(&session_id, &user, &request)
                    .map_err(JoinError::Refused)
            };
            // The number is used up: a join refused from here on admits
            // nothing again.
            admitted.and_then(|n| {
                let (ip, port) = (super::show_ip(peer), peer.port());
                let context = format!("stripe-join {n} for {user} from {ip} port {port}: ");
                crate::log::with_context(&context, || policy.check(peer, local))
                    .map(|()| (n, user))
                    .map_err(JoinError::Policy)
            })
        }
        _ => Err(JoinError::Malformed),
    };
    let (n, user) = match verdict {
        Ok(v) => v,
        Err(why) => {
            let _ = datagram::send(conn, &Msg::JoinRefused(why.to_string()));
            return Err(why);
        }
    };
    datagram::send(conn, &Msg::JoinAdmitted(n)).map_err(JoinError::Wire)?;
    crate::log!(Verbose, "monitor: striping join {n} admitted for {user}");
    // The join number is used up: whatever fails from here, it admits
    // nothing again.
    let (state, sock) = match next(conn)? {
        (Msg::State(state), fds) if fds.len() == 1 => (state, fds),
        _ => return Err(JoinError::ExpectedHandover(n)),
    };
    let mut input = Vec::new();
    loop {
        match next(conn)? {
            (Msg::Input(b), fds) if fds.is_empty() && input.len() + b.len() <= MAX_INPUT => {
                input.extend_from_slice(&b)
            }
            (Msg::End, fds) if fds.is_empty() => break,
            _ => return Err(JoinError::MalformedHandover(n)),
        }
    }
    pass_on(to_user, &state, &input, sock[0].as_fd()).map_err(|e| JoinError::PassOn(n, e))?;
    datagram::send(conn, &Msg::Accept).map_err(JoinError::Wire)
}

/// A joined connection's handover on `fd`: its state with the socket
/// attached, its unread input, the end.
fn pass_on(
    fd: &OwnedFd,
    state: &[u8],
    input: &[u8],
    sock: BorrowedFd<'_>,
) -> Result<(), WireError> {
    datagram::send_fds(
        fd,
        &Msg::State(zeroize::Zeroizing::new(state.to_vec())),
        &[sock],
    )?;
    for chunk in input.chunks(INPUT_CHUNK) {
        datagram::send(fd, &Msg::Input(chunk.to_vec()))?;
    }
    datagram::send(fd, &Msg::End)
}

/// A join admitted by the session's monitor, whose connection is still to
/// be handed over ([`Joining::hand_over`]).
pub struct Joining {
    s: OwnedFd,
    /// The join number admitted.
    pub number: u32,
}

/// The asking side, in a secondary's monitor: the join admitted for a
/// secondary whose session identifier is `session_id`, connected from
/// `peer` to `local`, or why not (for the secondary's log; its client
/// sees USERAUTH_FAILURE either way, and the reason is the primary's
/// monitor's, never text of the client's).
pub fn ask(
    dir: &Path,
    session_id: &[u8],
    user: &str,
    req: &JoinRequest,
    (peer, local): (SocketAddr, SocketAddr),
) -> Result<Joining, JoinError> {
    let path = socket_path(dir, &req.session_ref);
    let (s, addr) = seqpacket(&path)?;
    if rustix::net::connect(&s, &addr).is_err() {
        return Err(JoinError::NoSession);
    }
    let m = Msg::JoinAsk {
        session_id: session_id.to_vec(),
        user: user.to_owned(),
        request: req.clone(),
        peer,
        local,
    };
    datagram::send(&s, &m).map_err(JoinError::Ask)?;
    match datagram::recv(&s, IO_TIMEOUT_MS) {
        Ok(Some(Msg::JoinAdmitted(number))) => Ok(Joining { s, number }),
        Ok(Some(Msg::JoinRefused(why))) => Err(JoinError::RefusedThere(why)),
        Ok(None) => Err(JoinError::NoAnswer),
        Ok(Some(_)) => Err(JoinError::UnexpectedAnswer),
        Err(e) => Err(JoinError::Monitor(e)),
    }
}

impl Joining {
    /// Hands the secondary over to the session: its checked transport
    /// state, the raw input its engine had not read, its TCP socket. Ok
    /// once the session's monitor passed it to the user's process.
    pub fn hand_over(
        self,
        state: &[u8],
        input: &[u8],
        sock: BorrowedFd<'_>,
    ) -> Result<(), JoinError> {
        pass_on(&self.s, state, input, sock).map_err(JoinError::HandingOver)?;
        match datagram::recv(&self.s, IO_TIMEOUT_MS) {
            Ok(Some(Msg::Accept)) => Ok(()),
            Ok(None) => Err(JoinError::NotConfirmed),
            _ => Err(JoinError::NotTaken),
        }
    }
}

/// In the primary's user process: a joined connection from its monitor,
/// if one is waiting on `fd` (not waiting when none is); after its first
/// message the rest must follow within the time limit.
pub fn receive(
    fd: &OwnedFd,
) -> Result<Option<(zeroize::Zeroizing<Vec<u8>>, Vec<u8>, OwnedFd)>, JoinError> {
    let (state, mut fds) = match datagram::recv_fds(fd, 0) {
        Ok(None) => return Ok(None),
        Ok(Some((Msg::State(s), fds))) if fds.len() == 1 => (s, fds),
        Ok(Some(_)) => return Err(JoinError::UnexpectedOnJoinSocket),
        Err(e) => return Err(JoinError::Wire(e)),
    };
    let mut input = Vec::new();
    loop {
        match next(fd)? {
            (Msg::Input(b), f) if f.is_empty() && input.len() + b.len() <= MAX_INPUT => {
                input.extend_from_slice(&b)
            }
            (Msg::End, f) if f.is_empty() => break,
            _ => return Err(JoinError::MalformedOnJoinSocket),
        }
    }
    let sock = fds.pop().ok_or(JoinError::NoSocket)?;
    Ok(Some((state, input, sock)))
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
        if !rustix::process::geteuid().is_root() {
            crate::errln!("skipping: needs root");
            return;
        }
        let dir = tmp_dir("join");
        let primary = [7u8; 32];
        let (admission, grant) =
            Admission::issue(vec![3; 32], [9; 32], &primary, "bob", 3, 7).unwrap();
        let (to_user, at_user) = datagram::socketpair().unwrap();
        // bob logged in with a password; not allowed from 10.0.0.0/8.
        let policy = || {
            super::super::join_policy::test_policy(
                "bob",
                1000,
                "password\n",
                "Match Address 10.0.0.0/8\n  PasswordAuthentication no\n",
            )
        };
        let service =
            JoinService::start(&dir, Arc::new(Mutex::new(admission)), policy(), to_user).unwrap();
        let here = (
            "127.0.0.1:40000".parse().unwrap(),
            "127.0.0.1:22".parse().unwrap(),
        );
        let number = |r: Result<Joining, JoinError>| r.map(|j| j.number).map_err(|e| e.to_string());
        let md = std::fs::metadata(&dir).unwrap();
        assert_eq!(md.mode() & 0o777, 0o700);
        let mut joiner = Joiner::new(&grant, &primary);
        let req = joiner.join(&[1; 32], "bob").unwrap();
        // Admitted, then the connection passes to the user's process.
        let joining = ask(&dir, &[1; 32], "bob", &req, here).unwrap();
        assert_eq!(joining.number, 1);
        assert!(receive(&at_user).unwrap().is_none(), "nothing yet");
        let (sock, _peer) = std::os::unix::net::UnixStream::pair().unwrap();
        let input = vec![5u8; 100_000];
        joining.hand_over(b"state", &input, sock.as_fd()).unwrap();
        let (state, got, _fd) = receive(&at_user).unwrap().expect("handed over");
        assert_eq!((&state[..], got), (&b"state"[..], input));
        assert!(
            number(ask(&dir, &[1; 32], "bob", &req, here)).is_err(),
            "replayed"
        );
        let req2 = joiner.join(&[2; 32], "bob").unwrap();
        assert!(
            number(ask(&dir, &[3; 32], "bob", &req2, here)).is_err(),
            "other session id"
        );
        assert!(
            number(ask(&dir, &[2; 32], "alice", &req2, here)).is_err(),
            "other user"
        );
        // Admitted but never handed over: the number stays used.
        assert_eq!(number(ask(&dir, &[2; 32], "bob", &req2, here)), Ok(2));
        // A proof that verifies, from where bob's password would not do:
        // refused, and its number used up.
        let req3 = joiner.join(&[5; 32], "bob").unwrap();
        let far = ("10.1.2.3:40000".parse().unwrap(), here.1);
        let why = number(ask(&dir, &[5; 32], "bob", &req3, far)).unwrap_err();
        assert!(
            why.starts_with("password authentication for bob refused"),
            "{why}"
        );
        assert!(matches!(
            ask(&dir, &[5; 32], "bob", &req3, here),
            Err(JoinError::RefusedThere(_))
        ));
        assert_eq!(
            number(ask(&dir, &[5; 32], "bob", &req3, here)),
            Err("join number already used".into())
        );
        // A key from another grant of the same reference does not verify.
        let (_, other) = Admission::issue(vec![3; 32], [8; 32], &primary, "bob", 2, 7).unwrap();
        let forged = Joiner::new(&other, &primary).join(&[4; 32], "bob").unwrap();
        assert!(
            number(ask(&dir, &[4; 32], "bob", &forged, here)).is_err(),
            "forged"
        );
        // A reference naming no session.
        let (_, none) = Admission::issue(vec![5; 32], [9; 32], &primary, "bob", 2, 7).unwrap();
        let stray = Joiner::new(&none, &primary).join(&[4; 32], "bob").unwrap();
        assert_eq!(
            number(ask(&dir, &[4; 32], "bob", &stray, here)),
            Err("no such session".into())
        );
        // The reason reaches the asker's log.
        assert_eq!(
            number(ask(&dir, &[1; 32], "bob", &req, here)),
            Err("join number already used".into())
        );
        drop(service);
        assert!(!socket_path(&dir, &[3; 32]).exists(), "socket removed");
        // A directory group or others may enter is refused.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (a, _) = Admission::issue(vec![6; 32], [9; 32], &primary, "bob", 2, 7).unwrap();
        let fd = || datagram::socketpair().unwrap().0;
        assert!(JoinService::start(&dir, Arc::new(Mutex::new(a)), policy(), fd()).is_err());
        // So is one whose parent others may write.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let parent = dir.parent().unwrap();
        std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o777)).unwrap();
        let (a, _) = Admission::issue(vec![6; 32], [9; 32], &primary, "bob", 2, 7).unwrap();
        assert!(JoinService::start(&dir, Arc::new(Mutex::new(a)), policy(), fd()).is_err());
        let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    }
}
