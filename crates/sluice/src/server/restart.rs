//! SIGHUP: the listener restarts as sshd does ("Received SIGHUP;
//! restarting."), re-executing the program it was started as with the same
//! arguments, so the configuration (and, after an upgrade, the binary) is
//! read afresh. Unlike sshd it first runs that program with `-t`: a
//! configuration that fails the check leaves the listener serving as it
//! was, with the reason logged.
//!
//! The process keeps its pid (exec, no new daemon fork), so PidFile names
//! the same process; connection processes are its children and live on
//! (an exec sends them nothing; none has a parent-death signal on the
//! listener). Its listening sockets cross the exec, named in
//! [`LISTEN_ENV`], rather than sshd's close and re-bind: connections
//! arriving meanwhile wait in the backlog instead of being refused. The
//! new image takes back those its configuration still names
//! (`Listener::bind`). What it does not know: the connections still
//! unauthenticated (their startup pipes close at the exec), so they no
//! longer count against MaxStartups, and their exit statuses charge no
//! PerSourcePenalties; they are reaped all the same (listen.rs).

use rustix::process::Signal;
use std::ffi::{CString, OsStr};
use std::io::{Read, Seek};
use std::net::TcpListener;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The environment variable naming the listening sockets (comma-separated
/// fds) in a restarted listener.
pub const LISTEN_ENV: &str = "SLUICED_LISTEN_FDS";
/// How long the `-t` check may take (a hung file system must not stop the
/// listener for good; connections wait in the backlog meanwhile).
const CHECK_TIMEOUT: Duration = Duration::from_secs(30);
/// The most of the check's messages logged.
const CHECK_OUTPUT_MAX: u64 = 4096;

/// The program as it was started, made absolute now (before the daemon
/// changes directory): argv[0], or for a bare name the PATH entry it was
/// found in. Not /proc/self/exe: that names the image running now, which
/// after a package upgrade is the replaced (deleted) file; sshd re-executes
/// its argv[0] so that the upgraded binary is what runs.
pub fn own_path() -> Option<PathBuf> {
    let a0 = PathBuf::from(std::env::args_os().next()?);
    if a0.is_absolute() {
        return Some(a0);
    }
    if a0.as_os_str().as_bytes().contains(&b'/') {
        return std::path::absolute(a0).ok();
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(&a0))
        .find(|p| is_executable(p))
        .and_then(|p| std::path::absolute(p).ok())
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Why the configuration check before a restart failed; `Display` is the
/// text after "not restarting: ".
#[derive(Debug)]
pub enum CheckError {
    /// The buffer for the program's messages could not be made.
    Buffer(std::io::Error),
    /// The program could not be started.
    Run(PathBuf, std::io::Error),
    /// It did not finish within [`CHECK_TIMEOUT`].
    Timeout(PathBuf),
    /// Waiting for it failed.
    Wait(PathBuf, std::io::Error),
    /// It failed: its status and what it printed (lines, trimmed).
    Failed {
        /// The program.
        exe: PathBuf,
        /// How it ended.
        status: std::process::ExitStatus,
        /// Its non-empty stderr lines.
        said: Vec<String>,
    },
}

impl std::fmt::Display for CheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckError::Buffer(e) => write!(f, "check: {e}"),
            CheckError::Run(exe, e) => write!(f, "cannot run {}: {e}", exe.display()),
            CheckError::Timeout(exe) => write!(
                f,
                "`{} -t` did not finish in {} s",
                exe.display(),
                CHECK_TIMEOUT.as_secs()
            ),
            CheckError::Wait(exe, e) => write!(f, "waiting for `{} -t`: {e}", exe.display()),
            CheckError::Failed { exe, status, said } => {
                if !said.is_empty() {
                    write!(f, "{} (", said.join("; "))?;
                }
                match status.code() {
                    Some(c) => write!(f, "`{} -t` exited with {c}", exe.display())?,
                    None => write!(f, "`{} -t` ended by {status}", exe.display())?,
                }
                if !said.is_empty() {
                    f.write_str(")")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for CheckError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CheckError::Buffer(e) | CheckError::Run(_, e) | CheckError::Wait(_, e) => Some(e),
            _ => None,
        }
    }
}

/// Runs `exe args... -t` (the configuration and program a restart would
/// start); Err: why it failed, from its messages.
pub fn check(exe: &Path, args: &[String]) -> Result<(), CheckError> {
    let out = memfd()?;
    let mut child = Command::new(exe)
        .args(args)
        .arg("-t")
        .env_remove(LISTEN_ENV)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(out.try_clone().map_err(CheckError::Buffer)?))
        .spawn()
        .map_err(|e| CheckError::Run(exe.to_owned(), e))?;
    let deadline = Instant::now() + CHECK_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(CheckError::Timeout(exe.to_owned()));
            }
            Err(e) => return Err(CheckError::Wait(exe.to_owned(), e)),
        }
    };
    if status.success() {
        return Ok(());
    }
    let mut f = std::fs::File::from(out);
    let mut text = String::new();
    let _ = f.rewind();
    let _ = f.take(CHECK_OUTPUT_MAX).read_to_string(&mut text);
    let said = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    Err(CheckError::Failed {
        exe: exe.to_owned(),
        status,
        said,
    })
}

fn memfd() -> Result<OwnedFd, CheckError> {
    rustix::fs::memfd_create(c"sluiced-check", rustix::fs::MemfdFlags::CLOEXEC)
        .map_err(|e| CheckError::Buffer(e.into()))
}

/// Re-executes `exe` with `args` (argv without argv[0]), the listening
/// `sockets` open across the exec and named in [`LISTEN_ENV`]. Returns
/// only when the exec failed, with the error (the sockets close-on-exec
/// again).
pub fn exec(exe: &Path, args: &[String], sockets: &[BorrowedFd<'_>]) -> std::io::Error {
    use rustix::io::{fcntl_setfd, FdFlags};
    let c = |b: &[u8]| CString::new(b).unwrap_or_default();
    let path = c(exe.as_os_str().as_bytes());
    let argv: Vec<CString> = std::iter::once(path.clone())
        .chain(args.iter().map(|a| c(a.as_bytes())))
        .collect();
    let fds = sockets
        .iter()
        .map(|f| f.as_raw_fd().to_string())
        .collect::<Vec<_>>()
        .join(",");
    let mut envp: Vec<CString> = std::env::vars_os()
        .filter(|(k, _)| k != OsStr::new(LISTEN_ENV))
        .map(|(k, v)| {
            let mut b = k.as_bytes().to_vec();
            b.push(b'=');
            b.extend_from_slice(v.as_bytes());
            c(&b)
        })
        .collect();
    envp.push(c(format!("{LISTEN_ENV}={fds}").as_bytes()));
    for fd in sockets {
        // Our listening sockets, kept open across the exec.
        let _ = fcntl_setfd(fd, FdFlags::empty());
    }
    // The signals the listener handles stay blocked across the exec (the
    // mask is kept) until the new image has its handlers: a SIGTERM or
    // another SIGHUP meanwhile waits for them instead of killing it.
    let old = crate::sys::process::block_signals(&LISTENER_SIGNALS);
    // The listener is single-threaded.
    let e = crate::sys::process::execve(&path, &argv, &envp);
    match old {
        Some(m) => crate::sys::process::set_signal_mask(&m),
        None => unblock_listener_signals(),
    };
    for fd in sockets {
        // As above, back to close-on-exec.
        let _ = fcntl_setfd(fd, FdFlags::CLOEXEC);
    }
    e
}

/// The signals the listener handles (daemon.rs): blocked across a
/// restart's exec.
const LISTENER_SIGNALS: [Signal; 3] = [Signal::HUP, Signal::TERM, Signal::INT];

/// Unblocks SIGHUP, SIGTERM and SIGINT (blocked across a restart's exec).
pub fn unblock_listener_signals() {
    crate::sys::process::unblock_signals(&LISTENER_SIGNALS);
}

/// The fd numbers [`LISTEN_ENV`] names, unchecked and left in the
/// environment: what a start that closes inherited descriptors must keep.
pub fn inherited_fd_numbers() -> Vec<RawFd> {
    std::env::var(LISTEN_ENV)
        .map(|v| v.split(',').filter_map(|f| f.parse().ok()).collect())
        .unwrap_or_default()
}

/// In a listener: None unless a restart started it; then the listening
/// sockets it passed, each checked to be a listening TCP socket (anything
/// else named is left alone). The variable is removed.
pub fn inherited() -> Option<Vec<TcpListener>> {
    std::env::var_os(LISTEN_ENV)?;
    let mut fds = inherited_fd_numbers();
    std::env::remove_var(LISTEN_ENV);
    fds.sort_unstable();
    fds.dedup();
    Some(
        fds.into_iter()
            .filter(|fd| *fd > 2 && crate::sys::fd::is_open(*fd))
            .filter_map(|fd| {
                // SAFETY: open (just checked), named by our previous image
                // on purpose and owned by nothing else here; borrowed for
                // the checks only.
                let b = unsafe { BorrowedFd::borrow_raw(fd) };
                if !is_tcp_listener(b) {
                    return None;
                }
                let _ = rustix::io::fcntl_setfd(b, rustix::io::FdFlags::CLOEXEC);
                // SAFETY: a listening socket our previous image passed to
                // us on purpose, owned by nothing else here.
                Some(unsafe { TcpListener::from_raw_fd(fd) })
            })
            .collect(),
    )
}

fn is_tcp_listener(fd: BorrowedFd<'_>) -> bool {
    use rustix::net::{sockopt, AddressFamily, SocketType};
    sockopt::socket_acceptconn(fd).unwrap_or(false)
        && sockopt::socket_type(fd).is_ok_and(|t| t == SocketType::STREAM)
        && sockopt::socket_protocol(fd).is_ok_and(|p| p == Some(rustix::net::ipproto::TCP))
        && sockopt::socket_domain(fd)
            .is_ok_and(|d| d == AddressFamily::INET || d == AddressFamily::INET6)
}

/// SIGHUP in the listener: checks `exe args -t`, then re-executes with
/// `sockets` kept, unless `stop` was set meanwhile (SIGTERM). Returns only
/// when it did not restart (logged why).
pub fn on_sighup(
    exe: Option<&Path>,
    args: &[String],
    sockets: &[BorrowedFd<'_>],
    pid_file: Option<&Path>,
    stop: &std::sync::atomic::AtomicBool,
) {
    let Some(exe) = exe else {
        crate::log!(
            Error,
            "Received SIGHUP; not restarting: the path sluiced was started as is unknown (argv[0] {:?})",
            std::env::args_os().next()
        );
        return;
    };
    if let Err(why) = check(exe, args) {
        crate::log!(
            Error,
            "Received SIGHUP; sluiced: configuration check failed; not restarting: {why}"
        );
        return;
    }
    if stop.load(std::sync::atomic::Ordering::Relaxed) {
        return; // SIGTERM during the check: terminating instead
    }
    crate::log!(Info, "Received SIGHUP; restarting.");
    // As sshd: the new image writes it again (the same pid).
    if let Some(p) = pid_file {
        let _ = std::fs::remove_file(p);
    }
    let e = exec(exe, args, sockets);
    crate::log!(
        Error,
        "RESTART FAILED: av[0]='{}', error: {e}; still serving",
        exe.display()
    );
    if let Some(p) = pid_file {
        let _ = std::fs::write(p, format!("{}\n", std::process::id()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn only_listening_tcp_sockets_are_taken_back() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        assert!(is_tcp_listener(l.as_fd()));
        let s = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        assert!(!is_tcp_listener(s.as_fd()));
        let u = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        assert!(!is_tcp_listener(u.as_fd()));
        let f = std::fs::File::open("/dev/null").unwrap();
        assert!(!is_tcp_listener(f.as_fd()));
    }

    #[test]
    fn the_check_reports_what_the_program_said() {
        assert!(check(Path::new("/bin/true"), &[]).is_ok());
        let e = check(
            Path::new("/bin/sh"),
            &["-c".into(), "echo 'line 3: Bad' >&2; exit 255".into()],
        )
        .unwrap_err();
        assert!(matches!(&e, CheckError::Failed { said, .. } if said.len() == 1));
        let e = e.to_string();
        // sh gets "-t" as $0; the message and status come back.
        assert!(
            e.starts_with("line 3: Bad (`/bin/sh -t` exited with 255)"),
            "{e}"
        );
        let e = check(Path::new("/nonexistent/sluiced"), &[]).unwrap_err();
        assert!(matches!(e, CheckError::Run(..)));
        let e = e.to_string();
        assert!(e.contains("cannot run /nonexistent/sluiced"), "{e}");
    }
}
