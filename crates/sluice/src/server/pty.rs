//! Pseudo-terminals for sessions (RFC 4254 6.2, 6.7), as sshd does them:
//! a pty-req allocates one (openpty, the client's terminal modes, its
//! window size); the shell or command then runs on the slave as its
//! controlling terminal, and the master carries the channel's data both
//! ways (stderr included: no extended data with a pty).

use crate::net::pump::ChanIo;
use crate::server::privsep::wire::WireError;
use crate::server::session::{self, PreExec, SessionSpawn};
use crate::ttymodes;
use rustix::fs::{Gid, Mode, Uid};
use rustix::pty::OpenptFlags;
use rustix::termios::{OptionalActions, Winsize};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::process::{Child, Stdio};

/// Most of /etc/motd shown at login.
const MOTD_MAX: u64 = 64 << 10;

/// An allocated pty: the master, and the slave until the session starts.
pub struct Pty {
    master: OwnedFd,
    slave: Option<OwnedFd>,
    name: String,
    term: String,
    /// The slave's owner and mode were set when it was allocated (by the
    /// privsep monitor, as root).
    owner_set: bool,
}

/// A pty's two ends as allocated, before the session's setup.
pub struct PtyPair {
    /// The master side.
    pub master: OwnedFd,
    /// The slave side.
    pub slave: OwnedFd,
    /// Owner, group and mode are already the user's (see [`set_owner`]).
    pub owner_set: bool,
}

/// Why a pty could not be set up or a session started on it; `Display`
/// is the text logged after "pty-req refused: " or "failed to run command
/// on a pty: ".
#[derive(Debug)]
pub enum PtyError {
    /// The pty-req's terminal modes are malformed.
    Modes(crate::ttymodes::ModesError),
    /// A system call failed (openpty, ttyname).
    Os {
        /// The call.
        call: &'static str,
        /// Its error.
        err: std::io::Error,
    },
    /// The monitor could not be asked (the link's error).
    Link(WireError),
    /// The monitor refused the pty (its log says why).
    MonitorRefused,
    /// The monitor's answer carried not exactly two descriptors.
    MonitorFds,
    /// The monitor answered with another message.
    MonitorUnexpected,
    /// A command already runs on the pty.
    InUse,
    /// PermitTTY no (the monitor's check).
    PermitTtyNo,
    /// The key's `no-pty` option (the monitor's check).
    KeyNoPty,
    /// Starting the session's process failed.
    Spawn(std::io::Error),
}

impl std::fmt::Display for PtyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PtyError::Modes(e) => write!(f, "{e}"),
            PtyError::Os { call, err } => write!(f, "{call}: {err}"),
            PtyError::Link(e) => write!(f, "{e}"),
            PtyError::MonitorRefused => f.write_str("refused by the monitor (see its log)"),
            PtyError::MonitorFds => {
                f.write_str("the monitor sent a pty without its two descriptors")
            }
            PtyError::MonitorUnexpected => f.write_str("unexpected answer from the monitor"),
            PtyError::InUse => f.write_str("the pty is already in use by a command"),
            PtyError::PermitTtyNo => f.write_str("PermitTTY no"),
            PtyError::KeyNoPty => f.write_str("key option no-pty"),
            PtyError::Spawn(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for PtyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PtyError::Os { err, .. } | PtyError::Spawn(err) => Some(err),
            PtyError::Link(e) => Some(e),
            _ => None,
        }
    }
}

fn os_err(call: &'static str, e: impl Into<std::io::Error>) -> PtyError {
    PtyError::Os {
        call,
        err: e.into(),
    }
}

/// openpty(3) in this process, as glibc does it (/dev/ptmx read-write,
/// no controlling terminal; grantpt, unlockpt; the slave through
/// TIOCGPTPEER, by its name on kernels before 4.13); both ends
/// close-on-exec from the start. Any step's error is openpty's.
pub fn openpty() -> Result<PtyPair, PtyError> {
    let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
    let e = |e| os_err("openpty", e);
    let master = rustix::pty::openpt(flags).map_err(e)?;
    rustix::pty::grantpt(&master).map_err(e)?;
    rustix::pty::unlockpt(&master).map_err(e)?;
    let slave = match rustix::pty::ioctl_tiocgptpeer(&master, flags) {
        Ok(s) => s,
        Err(_) => {
            let name = rustix::pty::ptsname(&master, Vec::new()).map_err(e)?;
            rustix::fs::open(name.as_c_str(), flags.into(), Mode::empty()).map_err(e)?
        }
    };
    Ok(PtyPair {
        master,
        slave,
        owner_set: false,
    })
}

/// The privsep monitor's side of a pty-req: openpty as root, the slave
/// given to `uid` (group tty, 0620) before the user's process gets it.
pub fn allocate_for(uid: u32) -> Result<PtyPair, PtyError> {
    let mut p = openpty()?;
    set_owner(p.slave.as_fd(), uid);
    p.owner_set = true;
    Ok(p)
}

/// The slave's path, from the descriptor itself.
pub fn slave_name(slave: &OwnedFd) -> Result<String, PtyError> {
    crate::sys::tty::ttyname(slave.as_fd()).map_err(|e| os_err("ttyname", e))
}

impl Pty {
    /// Sets up a pty for a pty-req: the modes are checked first, so a
    /// malformed request is refused before `alloc` is asked for one
    /// ([`openpty`] here, or the privsep monitor).
    pub fn open(
        term: &str,
        size: (u32, u32, u32, u32),
        modes: &[u8],
        alloc: impl FnOnce() -> Result<PtyPair, PtyError>,
    ) -> Result<Pty, PtyError> {
        // ttymodes' text (to_string: whatever type it reports in).
        let modes = ttymodes::parse(modes).map_err(PtyError::Modes)?;
        let PtyPair {
            master,
            slave,
            owner_set,
        } = alloc()?;
        let name = slave_name(&slave)?;
        if let Ok(mut tio) = rustix::termios::tcgetattr(&slave) {
            ttymodes::apply(&mut tio, &modes);
            let _ = rustix::termios::tcsetattr(&slave, OptionalActions::Now, &tio);
        }
        let pty = Pty {
            master,
            slave: Some(slave),
            name,
            term: term.to_owned(),
            owner_set,
        };
        pty.resize(size);
        Ok(pty)
    }

    /// The slave's path (`/dev/pts/3`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sets the window size (cols, rows, width and height in pixels); the
    /// foreground process group gets SIGWINCH.
    pub fn resize(&self, (cols, rows, wpx, hpx): (u32, u32, u32, u32)) {
        let c = |v: u32| v.min(u32::from(u16::MAX)) as u16;
        let ws = Winsize {
            ws_row: c(rows),
            ws_col: c(cols),
            ws_xpixel: c(wpx),
            ws_ypixel: c(hpx),
        };
        let _ = rustix::termios::tcsetwinsize(&self.master, ws);
    }

    /// Runs the session on the slave: its own session (setsid) with the
    /// slave as controlling terminal and stdin/out/err, TERM and SSH_TTY
    /// set, privileges dropped as for any command. A login shell (no
    /// command) first sees /etc/motd when `motd` is on and the user has no
    /// ~/.hushlogin. Returns the child and the channel's fds on the master.
    pub fn spawn(&mut self, s: &mut SessionSpawn, motd: bool) -> Result<(Child, ChanIo), PtyError> {
        let slave = self.slave.take().ok_or(PtyError::InUse)?;
        if !self.owner_set {
            set_owner(slave.as_fd(), s.user.uid);
        }
        if !self.term.is_empty() {
            s.env.push(("TERM".into(), self.term.clone().into()));
        }
        s.env.push(("SSH_TTY".into(), self.name.clone().into()));
        let hush = std::path::Path::new(&s.user.home).join(".hushlogin");
        let motd: Vec<u8> = if motd && s.command.is_none() && !hush.exists() {
            read_capped("/etc/motd", MOTD_MAX)
        } else {
            Vec::new()
        };
        let pre: PreExec = Box::new(move || {
            // Between fork and exec: rustix's raw system calls only (no
            // allocation, no lock; an Errno becomes an io::Error without
            // allocating); motd was read before the fork.
            rustix::process::setsid()?;
            rustix::process::ioctl_tiocsctty(rustix::stdio::stdin())?;
            let mut rest: &[u8] = &motd;
            while !rest.is_empty() {
                match rustix::io::write(rustix::stdio::stdout(), rest) {
                    Ok(n) if n > 0 => rest = rest.get(n..).unwrap_or_default(),
                    _ => break,
                }
            }
            Ok(())
        });
        let e = PtyError::Spawn;
        let mut cmd = session::command(s, Some(pre)).map_err(e)?;
        cmd.stdin(Stdio::from(slave.try_clone().map_err(e)?))
            .stdout(Stdio::from(slave.try_clone().map_err(e)?))
            .stderr(Stdio::from(slave));
        let child = cmd.spawn().map_err(e)?;
        // Our copies of the slave go now: the master reads EIO once the
        // session's last process closed it.
        drop(cmd);
        let src = self.master.try_clone().map_err(e)?;
        let sink = self.master.try_clone().map_err(e)?;
        let _ = crate::sys::fdio::set_nonblocking(src.as_raw_fd(), true);
        let io = ChanIo::owned(Some(src), None, Some(sink), None);
        Ok((child, io))
    }
}

/// The user owns the slave, group tty, mode 0620 (OpenSSH's pty_setowner);
/// 0600 when the group cannot be tty. Done on the descriptor, not a path.
pub fn set_owner(slave: BorrowedFd<'_>, uid: u32) {
    let gid = tty_group();
    // No group: left as it is (-1). Unchecked: the numbers go as they are,
    // as fchown(2) took them before.
    let (u, g) = (
        Uid::from_raw_unchecked(uid),
        gid.map(Gid::from_raw_unchecked),
    );
    let _ = rustix::fs::fchown(slave, Some(u), g);
    // A process that is not root (no privilege separation, sluiced run by
    // a user) cannot chown to group tty unless devpts already gave it
    // (mount option gid=5): then the group is the user's own, and 0620
    // would let its other members write to the terminal. Only the owner.
    let group_is_tty = gid.is_some_and(|g| rustix::fs::fstat(slave).is_ok_and(|st| st.st_gid == g));
    let mode = if group_is_tty { 0o620 } else { 0o600 };
    let _ = rustix::fs::fchmod(slave, Mode::from_raw_mode(mode));
}

fn tty_group() -> Option<u32> {
    crate::users::group_id("tty")
}

fn read_capped(path: &str, max: u64) -> Vec<u8> {
    use std::io::Read;
    let mut v = Vec::new();
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(max).read_to_end(&mut v);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_keep_their_kind_and_wording() {
        let e = Pty::open("xterm", (80, 24, 0, 0), &[0x80], || {
            Err(PtyError::MonitorRefused)
        });
        assert!(
            matches!(e, Err(PtyError::Modes(_))),
            "malformed modes first"
        );
        let e = Pty::open("xterm", (80, 24, 0, 0), &[0], || {
            Err(PtyError::MonitorRefused)
        });
        assert!(matches!(e, Err(PtyError::MonitorRefused)));
        assert_eq!(PtyError::KeyNoPty.to_string(), "key option no-pty");
        assert_eq!(PtyError::PermitTtyNo.to_string(), "PermitTTY no");
    }
}
