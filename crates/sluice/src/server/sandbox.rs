//! The pre-authentication sandbox, sshd's privilege separation model: the
//! process that parses the peer's first bytes runs as an unprivileged user
//! (`_sluiced`, the package's, else sshd's `sshd`, else `nobody`), chrooted
//! to an empty root-owned directory (/run/sluiced/empty), unable to regain root, to create files, to open more
//! descriptors or to start processes, and under a seccomp-bpf allow-list
//! of the system calls a pre-auth protocol engine needs.
//!
//! Applied by sluiced's privilege separation (server/privsep/): the monitor
//! calls [`Sandbox::prepare`] as root, its pre-auth child [`Sandbox::apply`]
//! before it reads the peer's first byte; from then on the child talks to
//! the monitor over an already open socket and hands it its log lines (its
//! socket() gets EACCES, and RLIMIT_FSIZE 0 forbids writing a log file).

use crate::log;
use crate::server::session::{self, UserInfo};
use rustix::process::{Resource, Rlimit};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod filter;

/// Other architectures: no filter yet (the audit arch and system call
/// numbers are written for x86_64 and aarch64); the rest still applies.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod filter {
    pub(super) fn install() -> Result<bool, std::io::Error> {
        crate::log!(
            Error,
            "sandbox: no seccomp filter for this architecture; running without a system call filter"
        );
        Ok(false)
    }
}

/// The empty directory the sandbox is chrooted to, sluiced's own (as
/// Debian's sshd has /run/sshd); made at start when missing.
pub const CHROOT_DIR: &str = "/run/sluiced/empty";

/// The unprivileged user the package creates.
pub const SANDBOX_USER: &str = "_sluiced";

/// sshd's, used when [`SANDBOX_USER`] does not exist (a source build on a
/// machine with openssh-server).
pub const FALLBACK_USER: &str = "sshd";

/// Why the sandbox could not be set up or applied.
#[derive(Debug)]
pub enum SandboxError {
    /// Neither `sshd` nor `nobody` exists.
    NoUser,
    /// The chroot directory is missing and could not be made, or unsafe.
    Directory(String),
    /// Counting the open descriptors (for RLIMIT_NOFILE) failed.
    CountFds(std::io::Error),
    /// chroot(2) or chdir("/") failed.
    Chroot(std::io::Error),
    /// setgroups, setgid or setuid failed.
    Drop(&'static str, std::io::Error),
    /// setuid(0) or setgid(0) succeeded after the drop.
    RootRegained,
    /// A resource limit could not be lowered.
    Rlimit(&'static str, std::io::Error),
    /// The seccomp filter was refused for another reason than a kernel
    /// without seccomp.
    Seccomp(std::io::Error),
}

impl std::fmt::Display for SandboxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SandboxError::NoUser => write!(
                f,
                "Privilege separation user {SANDBOX_USER} does not exist (nor do {FALLBACK_USER} or nobody): \
                 create it, e.g. `useradd --system --user-group --home-dir {CHROOT_DIR} --shell /usr/sbin/nologin {SANDBOX_USER}`"
            ),
            SandboxError::Directory(why) => f.write_str(why),
            SandboxError::CountFds(e) => write!(f, "sandbox: counting open descriptors: {e}"),
            SandboxError::Chroot(e) => write!(f, "chroot(\"{CHROOT_DIR}\"): {e}"),
            SandboxError::Drop(what, e) => write!(f, "sandbox: {what}: {e}"),
            SandboxError::RootRegained => f.write_str("sandbox: root privileges could be regained"),
            SandboxError::Rlimit(what, e) => write!(f, "sandbox: setrlimit {what}: {e}"),
            SandboxError::Seccomp(e) => write!(f, "sandbox: installing the seccomp filter: {e}"),
        }
    }
}

impl std::error::Error for SandboxError {}

/// What [`Sandbox::apply`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The user the process now runs as.
    pub user: String,
    /// Whether the seccomp filter is in force (false on kernels without it).
    pub seccomp: bool,
}

/// A sandbox ready to apply: the user found, the directory checked.
#[derive(Debug, Clone)]
pub struct Sandbox {
    user: UserInfo,
    dir: PathBuf,
}

impl Sandbox {
    /// As root, before anything of the peer's is read: finds the user and
    /// makes sure `dir` (normally [`CHROOT_DIR`]) exists, owned by root and
    /// writable by nobody else (created 0755 if missing).
    pub fn prepare(dir: &Path) -> Result<Sandbox, SandboxError> {
        let user = find_user()?;
        ensure_dir(dir)?;
        Ok(Sandbox {
            user,
            dir: dir.to_owned(),
        })
    }

    /// The user the sandbox runs as.
    pub fn user(&self) -> &UserInfo {
        &self.user
    }

    /// Applies the sandbox to the whole process (every thread): chroot,
    /// the user's ids with no way back, resource limits, no_new_privs and
    /// the seccomp filter. Where the kernel has no seccomp filter this is
    /// logged and the rest stays in force.
    pub fn apply(self) -> Result<Applied, SandboxError> {
        let nofile = count_open_fds()?;
        let dir = std::ffi::CString::new(self.dir.as_os_str().as_encoded_bytes())
            .map_err(|e| SandboxError::Directory(e.to_string()))?;
        let last = |e: rustix::io::Errno| std::io::Error::from(e);
        rustix::process::chroot(dir.as_c_str())
            .and_then(|()| rustix::process::chdir(c"/"))
            .map_err(|e| SandboxError::Chroot(last(e)))?;
        drop_privileges(&self.user)?;
        let zero = Rlimit {
            current: Some(0),
            maximum: Some(0),
        };
        let fds = Rlimit {
            current: Some(nofile),
            maximum: Some(nofile),
        };
        // No file may grow (RLIMIT_FSIZE 0), no descriptor number past the
        // ones open now, no process may be started (RLIMIT_NPROC 0 for a
        // non-root user): each a second fence behind the seccomp filter.
        for (what, res, lim) in [
            ("RLIMIT_FSIZE", Resource::Fsize, &zero),
            ("RLIMIT_NOFILE", Resource::Nofile, &fds),
            ("RLIMIT_NPROC", Resource::Nproc, &zero),
        ] {
            rustix::process::setrlimit(res, *lim)
                .map_err(|e| SandboxError::Rlimit(what, last(e)))?;
        }
        let seccomp = filter::install().map_err(SandboxError::Seccomp)?;
        Ok(Applied {
            user: self.user.name,
            seccomp,
        })
    }
}

/// `_sluiced`, else `sshd`, else `nobody` with a warning; never a user
/// with uid 0.
fn find_user() -> Result<UserInfo, SandboxError> {
    for name in [SANDBOX_USER, FALLBACK_USER] {
        if let Some(u) = session::lookup_user(name).filter(|u| u.uid != 0) {
            log!(Debug1, "privilege separation user: {name}");
            return Ok(u);
        }
    }
    let u = session::lookup_user("nobody")
        .filter(|u| u.uid != 0)
        .ok_or(SandboxError::NoUser)?;
    log!(
        Info,
        "Privilege separation user {SANDBOX_USER} does not exist; using nobody (create {SANDBOX_USER} to keep pre-auth processes apart from anything else run as nobody)"
    );
    Ok(u)
}

/// At the listener's start, as root: the chroot directory made when
/// missing (as Debian's ssh.service makes /run/sshd), so the first
/// connection does not pay for it and a problem shows at once.
pub fn ensure_chroot_dir() -> Result<(), SandboxError> {
    ensure_dir(Path::new(CHROOT_DIR))
}

/// sshd's checks on its privilege separation directory, after creating it
/// (0755, root's) if missing.
fn ensure_dir(dir: &Path) -> Result<(), SandboxError> {
    let bad = |why: String| Err(SandboxError::Directory(why));
    if std::fs::symlink_metadata(dir).is_err() {
        // Root's, 0755, parents too (whatever the umask).
        let made = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(dir)
            .and_then(|()| std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)));
        if let Err(e) = made {
            return bad(format!(
                "Missing privilege separation directory: {} ({e})",
                dir.display()
            ));
        }
        log!(
            Verbose,
            "created privilege separation directory {}",
            dir.display()
        );
    }
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() && m.uid() == 0 && m.mode() & 0o022 == 0 => {
            // Nothing there can be opened past the filter, but an empty
            // root leaves nothing to find where the kernel has no filter.
            if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
                log!(
                    Info,
                    "privilege separation directory {} is not empty",
                    dir.display()
                );
            }
            Ok(())
        }
        Ok(_) => bad(format!(
            "{} must be a directory owned by root and not group or world-writable.",
            dir.display()
        )),
        Err(e) => bad(format!(
            "Missing privilege separation directory: {} ({e})",
            dir.display()
        )),
    }
}

/// The descriptors open now (the one reading /proc/self/fd left out).
fn count_open_fds() -> Result<u64, SandboxError> {
    let n = std::fs::read_dir("/proc/self/fd")
        .map_err(SandboxError::CountFds)?
        .count() as u64;
    Ok(n.saturating_sub(1).max(1))
}

/// sshd's permanently_set_uid: no groups, the user's gid and uid (glibc's
/// wrappers change every thread), then proof that root is gone.
fn drop_privileges(u: &UserInfo) -> Result<(), SandboxError> {
    use crate::sys::creds::{setgid, setgroups, setuid};
    setgroups(&[]).map_err(|e| SandboxError::Drop("setgroups", e))?;
    setgid(u.gid).map_err(|e| SandboxError::Drop("setgid", e))?;
    setuid(u.uid).map_err(|e| SandboxError::Drop("setuid", e))?;
    if setuid(0).is_ok() || setgid(0).is_ok() || rustix::process::geteuid().as_raw() != u.uid {
        return Err(SandboxError::RootRegained);
    }
    Ok(())
}
