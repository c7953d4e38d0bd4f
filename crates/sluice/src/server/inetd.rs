//! `sluiced -i` on any pair of descriptors. inetd and systemd hand over a
//! connected socket on stdin and stdout, but a ProxyCommand (`ssh -o
//! ProxyCommand='sshd -i'`, how OpenSSH's own regression suite reaches a
//! server) gives two pipes. The connection's processes (monitor, pre-auth
//! child, post-auth process) all serve one socket, so for pipes a relay
//! copies bytes between them and a socketpair whose other end becomes
//! fd 0.
//!
//! The relay is forked before the host keys are loaded, gives up root
//! (user `nobody`, no groups, not dumpable) and never looks at the bytes.

use crate::sys::process::{exit_now, fork, Forked};
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};

/// The bytes a relay direction moves per read.
const CHUNK: usize = 64 * 1024;

/// A system call the relay's setup needed failed: `call: error`.
#[derive(Debug)]
pub struct RelayError {
    /// The call ("socketpair", "fork", "dup2").
    pub call: &'static str,
    /// Its error.
    pub err: std::io::Error,
}

impl std::fmt::Display for RelayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.call, self.err)
    }
}

impl std::error::Error for RelayError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.err)
    }
}

/// Makes fd 0 a socket for the connection: nothing to do when stdin is a
/// socket that is also stdout (inetd, systemd's `Accept=yes`); otherwise
/// starts the relay. Call before any thread starts.
pub fn socket_on_stdin() -> Result<(), RelayError> {
    if stdin_is_a_socket_that_is_stdout() {
        return Ok(());
    }
    // Close-on-exec (std's) does not matter here: fd 0 becomes a dup2 of
    // ours, and the relay execs nothing.
    let (ours, relay_end) = std::os::unix::net::UnixStream::pair().map_err(|err| RelayError {
        call: "socketpair",
        err,
    })?;
    let (ours, relay_end) = (OwnedFd::from(ours), OwnedFd::from(relay_end));
    // SAFETY: the caller has started no thread: the child may run ordinary
    // code; it leaves with exit_now.
    match unsafe { fork() } {
        Err(err) => Err(RelayError { call: "fork", err }),
        Ok(Forked::Child) => {
            drop(ours);
            let code = relay(relay_end);
            // Leave without running the parent's exit handlers.
            exit_now(code)
        }
        Ok(Forked::Parent(_)) => {
            drop(relay_end);
            // Onto stdin; stdout goes to /dev/null later.
            rustix::stdio::dup2_stdin(&ours).map_err(|e| RelayError {
                call: "dup2",
                err: e.into(),
            })
        }
    }
}

/// inetd's and systemd's case: fd 0 is a socket and fd 1 the same one.
fn stdin_is_a_socket_that_is_stdout() -> bool {
    use rustix::fs::{fstat, FileType};
    let (Ok(i), Ok(o)) = (fstat(std::io::stdin()), fstat(std::io::stdout())) else {
        return false;
    };
    FileType::from_raw_mode(i.st_mode) == FileType::Socket
        && (i.st_dev, i.st_ino) == (o.st_dev, o.st_ino)
}

/// The relay process: stdin to the socket, the socket to stdout, each
/// direction until its EOF; returns when both are done.
fn relay(sock: OwnedFd) -> i32 {
    drop_privileges();
    let sock = std::os::unix::net::UnixStream::from(sock);
    let Ok(mut sock_w) = sock.try_clone() else {
        return 1;
    };
    // Copies of fds 0 and 1 (std's Stdin and Stdout buffer), each closed
    // when its direction is done; the process's end closes 0 and 1.
    let dup = |fd: std::os::fd::BorrowedFd<'_>| fd.try_clone_to_owned().map(std::fs::File::from);
    let (Ok(mut stdin), Ok(mut stdout)) = (
        dup(std::io::stdin().as_fd()),
        dup(std::io::stdout().as_fd()),
    ) else {
        return 1;
    };
    let up = std::thread::spawn(move || {
        copy(&mut stdin, &mut sock_w);
        let _ = sock_w.shutdown(std::net::Shutdown::Write);
    });
    let mut sock_r = sock;
    copy(&mut sock_r, &mut stdout);
    drop(stdout);
    // The server is done: a peer that never closes its side must not keep
    // us (and the ProxyCommand's pipeline) alive.
    if !up.is_finished() {
        return 0;
    }
    let _ = up.join();
    0
}

fn copy(from: &mut impl Read, to: &mut impl Write) {
    let mut buf = vec![0u8; CHUNK];
    loop {
        match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                let Some(b) = buf.get(..n) else { return };
                if to.write_all(b).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        }
    }
}

/// Root is not needed to copy bytes: become `nobody`, no groups, not
/// dumpable. Nothing to do when not root.
fn drop_privileges() {
    use crate::sys::creds::{setgid, setgroups, setuid};
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
    if !rustix::process::geteuid().is_root() {
        return;
    }
    // The ids come from the password database.
    let (uid, gid) = crate::users::by_name("nobody").map_or((65534, 65534), |u| (u.uid, u.gid));
    if let Err(e) = setgroups(&[])
        .and_then(|()| setgid(gid))
        .and_then(|()| setuid(uid))
    {
        crate::log!(Error, "inetd relay: cannot drop root: {e}");
        exit_now(1);
    }
}
