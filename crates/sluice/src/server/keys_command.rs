//! AuthorizedKeysCommand and AuthorizedPrincipalsCommand (sshd_config(5)):
//! a program that prints authorized_keys (or principals) lines for a user,
//! as LDAP directories, Git hosting and cloud instance-connect services
//! provide. Run where the decision is made (the privileged monitor, or a
//! single-process server), always as AuthorizedKeysCommandUser /
//! AuthorizedPrincipalsCommandUser (root only when named), after sshd's
//! checks on the program (absolute path, a regular file owned by root and
//! not group or world writable, the same for every directory above it).
//! Its argv is the configured line split as sshd splits it, the tokens
//! (TOKENS in sshd_config(5)) expanded in every argument but the first;
//! it gets sshd's small environment, stdin from /dev/null, stderr
//! discarded. Unlike sshd, the run is bounded: [`TIMEOUT`] and
//! [`MAX_OUTPUT`], past which the program (its whole process group) is
//! killed and the key refused. What it prints goes to the authorized_keys
//! checks the caller uses for files (keys/authorized_keys.rs), nothing else.

use crate::config::sshd::command_line::{expand, split_argv};
use crate::config::sshd::ServerConfig as Sshd;
use crate::keys::cert::Cert;
use crate::keys::identity::fingerprint_sha256;
use crate::keys::known_hosts::base64_encode;
use crate::log;
use crate::users::UserInfo;
use sluice_proto::crypto::hostkey;
use std::io::Read;
use std::net::SocketAddr;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the program may take to print its lines and exit: a directory
/// lookup takes well under a second; one hung on a dead server must not
/// hold the login (nor the monitor, which waits for it) for the whole
/// LoginGraceTime.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);

/// The most output read, as for an authorized_keys file (keys/user_file.rs):
/// thousands of keys; more and the program is killed, the key refused.
pub(crate) const MAX_OUTPUT: usize = crate::keys::user_file::MAX_SIZE as usize;

/// Which of the two commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Which {
    /// AuthorizedKeysCommand.
    Keys,
    /// AuthorizedPrincipalsCommand.
    Principals,
}

impl Which {
    /// The keyword, as sshd names it in messages.
    pub(crate) fn keyword(self) -> &'static str {
        match self {
            Which::Keys => "AuthorizedKeysCommand",
            Which::Principals => "AuthorizedPrincipalsCommand",
        }
    }
}

/// The command's output for this login, named by its command line (as
/// sshd names it in "found at" lines); None when it is not configured or
/// failed (logged). `conn` is (peer, local); `cert` the certificate when
/// the key is one (its CA's tokens for the principals command).
pub(crate) fn output(
    cfg: &Sshd,
    which: Which,
    conn: (SocketAddr, SocketAddr),
    user: &UserInfo,
    key_blob: &[u8],
    cert: Option<&Cert>,
) -> Option<(PathBuf, Vec<u8>)> {
    let (command, run_as) = match which {
        Which::Keys => (
            cfg.authorized_keys_command.as_deref()?,
            cfg.authorized_keys_command_user.as_deref(),
        ),
        Which::Principals => (
            cfg.authorized_principals_command.as_deref()?,
            cfg.authorized_principals_command_user.as_deref(),
        ),
    };
    let req = Request {
        which,
        command,
        run_as,
        user,
        values: values(which, conn, user, key_blob, cert),
    };
    run(&req).map(|out| (PathBuf::from(command), out))
}

/// The token values (sshd_config(5) TOKENS): %C the connection (client
/// address and port, server address and port), %D the routing domain
/// (the VRF the connection's socket is bound to; empty without one), %f %k %t the key (a certificate's
/// fingerprint is its key's, as in OpenSSH), %h %U %u the user; for the
/// principals command also %F %K %T the CA key, %i the key ID, %s the serial.
fn values(
    which: Which,
    (peer, local): (SocketAddr, SocketAddr),
    user: &UserInfo,
    key_blob: &[u8],
    cert: Option<&Cert>,
) -> Vec<(char, String)> {
    let ip = crate::server::privsep::show_ip;
    let key_type = hostkey::blob_key_type(key_blob).unwrap_or("unknown");
    let mut v = vec![
        (
            'C',
            format!(
                "{} {} {} {}",
                ip(peer),
                peer.port(),
                ip(local),
                local.port()
            ),
        ),
        (
            'D',
            crate::config::sshd::connection_rdomain()
                .unwrap_or_default()
                .to_owned(),
        ),
        (
            'f',
            cert.map_or_else(|| fingerprint_sha256(key_blob), Cert::fingerprint),
        ),
        ('h', user.home.clone()),
        ('k', base64_encode(key_blob)),
        ('t', key_type.to_owned()),
        ('U', user.uid.to_string()),
        ('u', user.name.clone()),
    ];
    if let (Which::Principals, Some(c)) = (which, cert) {
        v.extend([
            ('F', c.ca_fingerprint()),
            ('K', base64_encode(&c.ca)),
            (
                'T',
                hostkey::blob_key_type(&c.ca)
                    .unwrap_or("unknown")
                    .to_owned(),
            ),
            ('i', c.key_id().to_owned()),
            ('s', c.serial().to_string()),
        ]);
    }
    v
}

/// One run: the command line as configured, the user it runs as
/// (None: unset), the user logging in and the token values.
struct Request<'a> {
    which: Which,
    /// The command line as written in the configuration.
    command: &'a str,
    /// AuthorizedKeysCommandUser / AuthorizedPrincipalsCommandUser.
    run_as: Option<&'a str>,
    /// The user logging in (`%u`, and the old single argument).
    user: &'a UserInfo,
    /// Token values ([`values`]).
    values: Vec<(char, String)>,
}

/// Runs the command; its output, or None with the reason logged in sshd's
/// words where sshd has them.
fn run(req: &Request<'_>) -> Option<Vec<u8>> {
    let tag = req.which.keyword();
    let Some(run_as) = req.run_as else {
        log!(Error, "No user for {tag} specified, skipping");
        return None;
    };
    let Some(runner) = crate::users::by_name(run_as) else {
        log!(Error, "{tag}User \"{run_as}\" not found");
        return None;
    };
    let mut argv = match split_argv(req.command) {
        Ok(v) if !v.is_empty() => v,
        Ok(_) => {
            log!(Error, "{tag} \"{}\" yielded no arguments", req.command);
            return None;
        }
        Err(e) => {
            log!(Error, "{tag} \"{}\" {e}", req.command);
            return None;
        }
    };
    for a in argv.iter_mut().skip(1) {
        match expand(a, &req.values) {
            Ok(x) => *a = x,
            Err(e) => {
                log!(Error, "{tag} \"{}\": {e}", req.command);
                return None;
            }
        }
    }
    // sshd: a keys command given no arguments gets the user name.
    if argv.len() == 1 && req.which == Which::Keys {
        argv.push(req.user.name.clone());
    }
    let shown = argv.join(" ");
    let program = Path::new(&argv[0]);
    if !program.is_absolute() {
        log!(Error, "{tag} path is not absolute");
        return None;
    }
    if let Err(e) = std::fs::metadata(program) {
        log!(Error, "Could not stat {tag} \"{}\": {e}", program.display());
        return None;
    }
    if let Err(e) = safe_path(program) {
        log!(Error, "Unsafe {tag} \"{}\": {e}", program.display());
        return None;
    }
    log!(
        Debug1,
        "subprocess: {tag} command \"{shown}\" running as {}",
        runner.name
    );
    let child = match spawn(&argv, &runner) {
        Ok(c) => c,
        Err(e) => {
            log!(
                Error,
                "{tag} {shown}: cannot run it as {}: {e}",
                runner.name
            );
            return None;
        }
    };
    match collect(child) {
        Ok(out) => Some(out),
        Err(e) => {
            log!(Error, "{tag} {shown} {e}");
            None
        }
    }
}

/// Why a command's program is not trusted (sshd's safe_path wording).
#[derive(Debug)]
enum UnsafePath {
    /// stat failed.
    Stat(std::io::Error),
    /// realpath failed.
    Realpath(PathBuf, std::io::Error),
    /// Not a regular file.
    NotFile(PathBuf),
    /// The file not owned by root or writable by others.
    File(PathBuf),
    /// A directory above it not owned by root or writable by others.
    Dir(PathBuf),
}

impl std::fmt::Display for UnsafePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnsafePath::Stat(e) => write!(f, "could not stat it: {e}"),
            UnsafePath::Realpath(p, e) => write!(f, "realpath {} failed: {e}", p.display()),
            UnsafePath::NotFile(p) => write!(f, "{} is not a regular file", p.display()),
            UnsafePath::File(p) => write!(f, "bad ownership or modes for file {}", p.display()),
            UnsafePath::Dir(p) => {
                write!(f, "bad ownership or modes for directory {}", p.display())
            }
        }
    }
}

impl std::error::Error for UnsafePath {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            UnsafePath::Stat(e) | UnsafePath::Realpath(_, e) => Some(e),
            _ => None,
        }
    }
}

/// Why a command's output was not used; `Display` follows the program's
/// name in sshd's log line.
#[derive(Debug)]
enum RunError {
    /// The child has no stdout pipe.
    NoPipe,
    /// Exited with a status other than 0.
    Status(i32),
    /// Killed by a signal.
    Signal(i32),
    /// Neither an exit status nor a signal.
    Odd,
    /// Still running at the deadline.
    NoExit,
    /// Still writing at the deadline.
    SlowOutput,
    /// Printed more than [`MAX_OUTPUT`] bytes.
    TooMuch,
    /// A system call failed ("wait", "poll", "read").
    Os(&'static str, std::io::Error),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::NoPipe => f.write_str("has no output pipe"),
            RunError::Status(c) => write!(f, "failed, status {c}"),
            RunError::Signal(s) => write!(f, "exited on signal {s}"),
            RunError::Odd => f.write_str("ended oddly"),
            RunError::NoExit => write!(
                f,
                "did not exit within {} seconds; killed",
                TIMEOUT.as_secs()
            ),
            RunError::SlowOutput => write!(
                f,
                "did not finish its output within {} seconds; killed",
                TIMEOUT.as_secs()
            ),
            RunError::TooMuch => write!(f, "printed more than {MAX_OUTPUT} bytes; killed"),
            RunError::Os(call, e) => write!(f, "{call}: {e}"),
        }
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunError::Os(_, e) => Some(e),
            _ => None,
        }
    }
}

/// sshd's safe_path with no home directory: the program a regular file
/// owned by root and writable by nobody else, each directory above it
/// (after symbolic links are resolved) the same.
fn safe_path(program: &Path) -> Result<(), UnsafePath> {
    let meta = std::fs::metadata(program).map_err(UnsafePath::Stat)?;
    let real =
        std::fs::canonicalize(program).map_err(|e| UnsafePath::Realpath(program.to_owned(), e))?;
    if !meta.is_file() {
        return Err(UnsafePath::NotFile(real));
    }
    let unsafe_meta = |m: &std::fs::Metadata| m.uid() != 0 || m.mode() & 0o022 != 0;
    if unsafe_meta(&meta) {
        return Err(UnsafePath::File(real));
    }
    let mut dir = real.parent();
    while let Some(d) = dir {
        match std::fs::metadata(d) {
            Ok(m) if !unsafe_meta(&m) => {}
            _ => return Err(UnsafePath::Dir(d.to_owned())),
        }
        dir = d.parent();
    }
    Ok(())
}

/// Starts the program as `runner` in a process group of its own (so a
/// timeout kills what it started too), with sshd's environment for it.
fn spawn(argv: &[String], runner: &UserInfo) -> std::io::Result<Child> {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .env_clear()
        .env("PATH", "/usr/bin:/bin:/usr/sbin:/sbin")
        .env("USER", &runner.name)
        .env("LOGNAME", &runner.name)
        .env("HOME", &runner.home)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Ok(lang) = std::env::var("LANG") {
        cmd.env("LANG", lang);
    }
    // Made before the fork: initgroups reads /etc/group and allocates.
    let groups = crate::users::group_ids(&runner.name, runner.gid)?;
    let (uid, gid) = (runner.uid, runner.gid);
    // Made before the fork too: io::Error::other boxes its message.
    let mut kept = Some(std::io::Error::other("privileges were not dropped"));
    // SAFETY: system calls only between fork and exec (rustix's, and the
    // process-wide credential calls and sigaction of sys/, which neither
    // allocate nor lock); `groups` and `kept` were allocated before the
    // fork.
    unsafe {
        cmd.pre_exec(move || {
            use crate::sys::creds::{setgroups, setresgid, setresuid, setuid};
            rustix::process::setsid()?;
            if rustix::process::geteuid().is_root() {
                setgroups(&groups)?;
                setresgid(gid, gid, gid)?;
                setresuid(uid, uid, uid)?;
            }
            if uid != 0 && setuid(0).is_ok() {
                return Err(kept
                    .take()
                    .unwrap_or_else(|| rustix::io::Errno::PERM.into()));
            }
            crate::sys::signal::default(rustix::process::Signal::PIPE.as_raw());
            Ok(())
        });
        cmd.pre_exec(crate::fds::cloexec_from_3);
    }
    cmd.spawn()
}

/// Reads the output and waits for the exit within [`TIMEOUT`]; a status
/// other than 0 refuses the output, as sshd's exited_cleanly does.
fn collect(mut child: Child) -> Result<Vec<u8>, RunError> {
    let deadline = Instant::now() + TIMEOUT;
    let read = child
        .stdout
        .take()
        .map_or_else(|| Err(RunError::NoPipe), |out| read_bounded(out, deadline));
    let out = match read {
        Ok(o) => o,
        Err(e) => {
            kill_group(&mut child);
            return Err(e);
        }
    };
    loop {
        match child.try_wait() {
            Ok(Some(st)) => {
                use std::os::unix::process::ExitStatusExt;
                return match (st.code(), st.signal()) {
                    (Some(0), _) => Ok(out),
                    (Some(c), _) => Err(RunError::Status(c)),
                    (None, Some(s)) => Err(RunError::Signal(s)),
                    _ => Err(RunError::Odd),
                };
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                kill_group(&mut child);
                return Err(RunError::NoExit);
            }
            Err(e) => return Err(RunError::Os("wait", e)),
        }
    }
}

/// The output up to EOF, at most [`MAX_OUTPUT`] bytes, before `deadline`.
fn read_bounded(
    mut out: std::process::ChildStdout,
    deadline: Instant,
) -> Result<Vec<u8>, RunError> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(RunError::SlowOutput);
        }
        use rustix::event::{PollFd, PollFlags, Timespec};
        let mut pfd = [PollFd::new(&out, PollFlags::IN)];
        // Whole milliseconds, at least one.
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as u64;
        let timeout = Timespec {
            tv_sec: (ms / 1000) as _,
            tv_nsec: ((ms % 1000) * 1_000_000) as _,
        };
        let r = match rustix::event::poll(&mut pfd, Some(&timeout)) {
            Ok(r) => r,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(RunError::Os("poll", e.into())),
        };
        if r == 0 {
            continue; // the deadline check above ends it
        }
        match out.read(&mut chunk) {
            Ok(0) => return Ok(buf),
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() > MAX_OUTPUT {
                    return Err(RunError::TooMuch);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(RunError::Os("read", e)),
        }
    }
}

/// Kills the program's process group (itself and what it started) and reaps it.
fn kill_group(child: &mut Child) {
    // The group setsid made, whose leader is our child.
    let _ = rustix::process::kill_process_group(
        rustix::process::Pid::from_child(child),
        rustix::process::Signal::KILL,
    );
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_world_writable_directory_is_unsafe() {
        assert!(
            safe_path(Path::new("/bin/cat")).is_ok()
                || safe_path(Path::new("/usr/bin/cat")).is_ok()
        );
        let e = safe_path(Path::new("/tmp")).unwrap_err();
        assert!(matches!(e, UnsafePath::NotFile(_)), "{e}");
        let e = e.to_string();
        assert!(e.contains("not a regular file"), "{e}");
    }
}
