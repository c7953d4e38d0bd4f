//! Running a session's command as the authenticated user, as sshd does:
//! the user's shell with `-c`, in their home directory, with sshd's
//! environment, after setgid/initgroups/setuid when we run as root.

use rustix::io::Errno;
use rustix::process::Signal;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};

/// The user record and its lookup live in the bottom layer (users.rs);
/// named here too for the server's callers.
pub use crate::users::{by_name as lookup_user, UserInfo};

/// What to run for a session.
pub struct SessionSpawn {
    /// The user to run as.
    pub user: UserInfo,
    /// The command line; None runs the login shell.
    pub command: Option<Vec<u8>>,
    /// The client's env requests (AcceptEnv); the basics override them.
    pub env: Vec<(OsString, OsString)>,
    /// Set after the basics: SSH_AUTH_SOCK, environment=, SetEnv,
    /// SSH_ORIGINAL_COMMAND (see session_env).
    pub server_env: Vec<(OsString, OsString)>,
    /// A subsystem (logged differently by sshd; same execution).
    pub subsystem: bool,
    /// The client's address.
    pub client: SocketAddr,
    /// Our address.
    pub server: SocketAddr,
}

/// Starts the command with piped stdin, stdout and stderr.
pub fn spawn(s: &SessionSpawn) -> std::io::Result<Child> {
    let mut cmd = command(s, None)?;
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.spawn()
}

/// Work for the child before privileges are dropped (a pty's setsid and
/// controlling terminal); async-signal-safe only.
pub type PreExec = Box<dyn FnMut() -> std::io::Result<()> + Send + Sync>;

/// The command for a session, without its stdio: the user's shell, the
/// environment, and the privilege drop in the child (after `pre`).
pub fn command(s: &SessionSpawn, pre: Option<PreExec>) -> std::io::Result<Command> {
    let u = &s.user;
    let shell = if u.shell.is_empty() {
        "/bin/sh".to_owned()
    } else {
        u.shell.clone()
    };
    let mut cmd = Command::new(&shell);
    match &s.command {
        Some(c) => {
            cmd.arg("-c").arg(std::ffi::OsStr::from_bytes(c));
        }
        None => {
            // A login shell: argv[0] starts with '-'.
            let base = shell.rsplit('/').next().unwrap_or("sh");
            cmd.arg0(format!("-{base}"));
        }
    }
    set_environment(&mut cmd, s, &shell);
    let home_ok = std::path::Path::new(&u.home).is_dir();
    cmd.current_dir(if home_ok { u.home.as_str() } else { "/" });
    if let Some(pre) = pre {
        // SAFETY: the caller's closure is async-signal-safe (see PreExec).
        unsafe { cmd.pre_exec(pre) };
    }
    drop_privileges_in_child(&mut cmd, u)?;
    // Last, after the pty's and the user's setup: the program holds 0, 1
    // and 2 and nothing else of the server's (the monitor's socket, other
    // channels' sockets, what sluiced itself inherited).
    // SAFETY: cloexec_from_3 makes system calls only (async-signal-safe).
    unsafe { cmd.pre_exec(crate::fds::cloexec_from_3) };
    Ok(cmd)
}

/// The session's environment: the client's accepted variables, then the
/// login's (USER, HOME, PATH, ...), the server's, and SSH_CONNECTION and
/// SSH_CLIENT; nothing of sluiced's own.
fn set_environment(cmd: &mut Command, s: &SessionSpawn, shell: &str) {
    let u = &s.user;
    let root_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    let user_path = "/usr/local/bin:/usr/bin:/bin:/usr/games";
    cmd.env_clear();
    for (k, v) in &s.env {
        cmd.env(k, v);
    }
    cmd.env("USER", &u.name)
        .env("LOGNAME", &u.name)
        .env("HOME", &u.home)
        .env("SHELL", shell)
        .env("PATH", if u.uid == 0 { root_path } else { user_path })
        .env("MAIL", format!("/var/mail/{}", u.name));
    for (k, v) in &s.server_env {
        cmd.env(k, v);
    }
    // A connection on pipes (sluiced -i) has no addresses: UNKNOWN, as sshd.
    let ip = crate::server::privsep::show_ip;
    cmd.env(
        "SSH_CONNECTION",
        format!(
            "{} {} {} {}",
            ip(s.client),
            s.client.port(),
            ip(s.server),
            s.server.port()
        ),
    )
    .env(
        "SSH_CLIENT",
        format!("{} {} {}", ip(s.client), s.client.port(), s.server.port()),
    );
}

/// The user's credentials for the program, set in the child between fork
/// and exec (as root), or a refusal when sluiced runs as another user
/// than the one to serve.
fn drop_privileges_in_child(cmd: &mut Command, u: &UserInfo) -> std::io::Result<()> {
    let euid = rustix::process::geteuid().as_raw();
    if euid == 0 && u.uid != 0 {
        let (uid, gid) = (u.uid, u.gid);
        // initgroups reads /etc/group and allocates, which is not safe
        // between fork and exec in a threaded process: the list is made here.
        let groups = group_list(&u.name, gid)?;
        // io::Error::other boxes its message: made before the fork too.
        let mut kept = Some(std::io::Error::other("privileges were not dropped"));
        // SAFETY: only async-signal-safe calls between fork and exec (the
        // process-wide credential calls and sigaction of sys/, which
        // neither allocate nor lock); `groups` and `kept` were allocated
        // before the fork.
        unsafe {
            cmd.pre_exec(move || {
                use crate::sys::creds::{setgid, setgroups, setuid};
                // sshd's order: setgid, the supplementary groups, setuid.
                setgid(gid)?;
                setgroups(&groups)?;
                setuid(uid)?;
                if setuid(0).is_ok() {
                    return Err(kept.take().unwrap_or_else(|| Errno::PERM.into()));
                }
                crate::sys::signal::default(Signal::PIPE.as_raw());
                Ok(())
            });
        }
    } else if euid != 0 && u.uid != euid {
        return Err(std::io::Error::other(format!(
            "cannot run commands as {} without root privileges",
            u.name
        )));
    } else {
        // SAFETY: async-signal-safe signal reset only (sigaction).
        unsafe {
            cmd.pre_exec(|| {
                crate::sys::signal::default(Signal::PIPE.as_raw());
                Ok(())
            });
        }
    }
    Ok(())
}

/// The user's groups (getgrouplist), `gid` included, as initgroups sets them.
pub(crate) fn group_list(name: &str, gid: u32) -> std::io::Result<Vec<u32>> {
    crate::users::group_ids(name, gid)
}

/// How a command ended, in RFC 4254 6.10 terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExitResult {
    /// exit-status.
    Status(u32),
    /// exit-signal: name without "SIG".
    Signal {
        /// Signal name (`TERM`, `KILL`, ...).
        name: String,
        /// A core was dumped.
        core_dumped: bool,
    },
}

pub(crate) const SIGNALS: &[(i32, &str)] = &[
    (Signal::ABORT.as_raw(), "ABRT"),
    (Signal::ALARM.as_raw(), "ALRM"),
    (Signal::FPE.as_raw(), "FPE"),
    (Signal::HUP.as_raw(), "HUP"),
    (Signal::ILL.as_raw(), "ILL"),
    (Signal::INT.as_raw(), "INT"),
    (Signal::KILL.as_raw(), "KILL"),
    (Signal::PIPE.as_raw(), "PIPE"),
    (Signal::QUIT.as_raw(), "QUIT"),
    (Signal::SEGV.as_raw(), "SEGV"),
    (Signal::TERM.as_raw(), "TERM"),
    (Signal::USR1.as_raw(), "USR1"),
    (Signal::USR2.as_raw(), "USR2"),
];

/// Converts a wait status.
pub fn exit_result(status: ExitStatus) -> ExitResult {
    if let Some(sig) = status.signal() {
        let name = SIGNALS
            .iter()
            .find(|(n, _)| *n == sig)
            .map_or_else(|| format!("{sig}@sluice"), |(_, s)| (*s).to_owned());
        return ExitResult::Signal {
            name,
            core_dumped: status.core_dumped(),
        };
    }
    ExitResult::Status(status.code().unwrap_or(255) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> UserInfo {
        let uid = rustix::process::getuid().as_raw();
        let name = std::env::var("USER")
            .ok()
            .filter(|n| lookup_user(n).is_some_and(|u| u.uid == uid))
            .unwrap_or_else(|| "root".into());
        lookup_user(&name).unwrap()
    }

    fn run(cmd: &str, user: UserInfo) -> (String, String, ExitResult) {
        let a: SocketAddr = "127.0.0.1:5555".parse().unwrap();
        let s = SessionSpawn {
            user,
            command: Some(cmd.as_bytes().to_vec()),
            env: vec![],
            server_env: vec![],
            subsystem: false,
            client: a,
            server: a,
        };
        let out = spawn(&s).unwrap().wait_with_output().unwrap();
        (
            String::from_utf8_lossy(&out.stdout).into(),
            String::from_utf8_lossy(&out.stderr).into(),
            exit_result(out.status),
        )
    }

    #[test]
    fn status_streams_env_and_signals() {
        let (o, e, r) = run("echo hi; echo err >&2; echo $SSH_CONNECTION; exit 3", me());
        assert_eq!(o, "hi\n127.0.0.1 5555 127.0.0.1 5555\n");
        assert_eq!(e, "err\n");
        assert_eq!(r, ExitResult::Status(3));
        let (_, _, r) = run("kill -TERM $$", me());
        assert_eq!(
            r,
            ExitResult::Signal {
                name: "TERM".into(),
                core_dumped: false
            }
        );
    }

    #[test]
    fn drops_to_the_target_user_when_root() {
        if !rustix::process::geteuid().is_root() {
            return;
        }
        let Some(mut nobody) = lookup_user("nobody") else {
            return;
        };
        // nobody's shell is nologin (which is honoured); run the check with sh.
        nobody.shell = "/bin/sh".into();
        nobody.home = "/".into();
        let uid = nobody.uid;
        let (o, _, _) = run("id -u", nobody);
        assert_eq!(o.trim(), uid.to_string());
    }
}
