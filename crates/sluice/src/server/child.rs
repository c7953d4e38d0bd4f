//! A session's command process, signalled only while it still exists
//! (RFC 4254 6.9 `signal` requests and the HUP at channel close).
//!
//! We run as root, so kill(2) on a stored pid after the child was reaped
//! could hit whatever process got that pid next. A pidfd (pidfd_open,
//! Linux 5.3) names the process itself, not its number: pidfd_send_signal
//! on it fails with ESRCH once the process is gone, whoever reaped it.
//! Without pidfds (older kernels, ENOSYS) we signal by pid only while we
//! have not reaped the child: until then its pid cannot be reused.

use crate::server::session::SIGNALS;
use rustix::process::{Pid, Signal};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::process::{Child, ExitStatus};

/// A spawned command, its pidfd, and whether we reaped it.
pub struct SessionChild {
    child: Child,
    pidfd: Option<OwnedFd>,
    /// Set once a wait returned its status: from then on nothing is signalled.
    reaped: bool,
}

/// The signal for an RFC 4254 name (`TERM`).
fn signal_number(name: &str) -> Option<Signal> {
    SIGNALS
        .iter()
        .find(|(_, s)| *s == name)
        .and_then(|(n, _)| Signal::from_named_raw(*n))
}

impl SessionChild {
    /// Takes a just-spawned child. Its pidfd is opened at once: nothing has
    /// reaped it yet (we are its only waiter), so the pid still names it.
    pub fn new(child: Child) -> SessionChild {
        // Close-on-exec, as every pidfd.
        let pidfd = rustix::process::pidfd_open(
            Pid::from_child(&child),
            rustix::process::PidfdFlags::empty(),
        )
        .ok();
        SessionChild {
            child,
            pidfd,
            reaped: false,
        }
    }

    /// Without a pidfd, as on kernels before 5.3 (for tests of that path).
    pub fn without_pidfd(child: Child) -> SessionChild {
        SessionChild {
            child,
            pidfd: None,
            reaped: false,
        }
    }

    /// The process id (for log lines).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// A descriptor that polls readable once the child exited (its pidfd),
    /// while it is not reaped; None without a pidfd.
    pub fn exit_fd(&self) -> Option<std::os::fd::RawFd> {
        self.pidfd
            .as_ref()
            .filter(|_| !self.reaped)
            .map(|fd| fd.as_raw_fd())
    }

    /// Reaps the child if it has exited.
    pub fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        let r = self.child.try_wait();
        // An error (ECHILD: reaped elsewhere) also ends it: the pid must not
        // be trusted, and its pidfd, readable for good, is no longer polled.
        if !matches!(r, Ok(None)) {
            self.reaped = true;
        }
        r
    }

    /// Waits for the child to exit and reaps it.
    pub fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let r = self.child.wait();
        // Also on error: the status may be gone, the pid must not be trusted.
        self.reaped = true;
        r
    }

    /// Sends the signal named as in RFC 4254 (`TERM`) to the process if it
    /// still exists; false when it does not, or the name is unknown.
    pub fn signal(&self, name: &str) -> bool {
        let Some(sig) = signal_number(name) else {
            return false;
        };
        if self.reaped {
            return false;
        }
        match &self.pidfd {
            Some(fd) => rustix::process::pidfd_send_signal(fd, sig).is_ok(),
            // Our own unreaped child: its pid is still its own.
            None => rustix::process::kill_process(Pid::from_child(&self.child), sig).is_ok(),
        }
    }

    /// Sends the signal to the child's process group (a pty session: the
    /// shell is its session and group leader, so the group id is its pid),
    /// only while the leader is unreaped.
    ///
    /// Why kill(-pgid) is safe then: the kernel frees a pid number only
    /// when no process uses it as pid, process group or session id. While
    /// our child is not reaped (alive or a zombie), its pid, which is also
    /// the group's id, cannot be given to another process or group, so the
    /// signal reaches this session's group and nothing else. After reaping,
    /// the group may be gone and its number reused: nothing is sent.
    pub fn signal_group(&self, name: &str) -> bool {
        let Some(sig) = signal_number(name) else {
            return false;
        };
        if self.reaped {
            return false;
        }
        // A pidfd that says the leader is gone (ESRCH) means it was reaped
        // behind our back: do not trust its number either.
        if let Some(fd) = &self.pidfd {
            if !crate::sys::process::pidfd_alive(fd.as_fd()) {
                return false;
            }
        }
        // The group of our unreaped child (see above).
        rustix::process::kill_process_group(Pid::from_child(&self.child), sig).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::process::Command;

    fn sleeper(group: bool) -> Child {
        let mut c = Command::new("sleep");
        c.arg("30");
        if group {
            c.process_group(0);
        }
        c.spawn().unwrap()
    }

    #[test]
    fn signals_a_live_child_and_nothing_after_reaping() {
        for with_pidfd in [true, false] {
            let c = sleeper(false);
            let mut c = if with_pidfd {
                SessionChild::new(c)
            } else {
                SessionChild::without_pidfd(c)
            };
            assert_eq!(c.pidfd.is_some(), with_pidfd);
            assert!(!c.signal("NOSUCH"));
            assert!(c.signal("TERM"));
            assert_eq!(c.wait().unwrap().signal(), Some(Signal::TERM.as_raw()));
            assert!(!c.signal("TERM"));
            assert!(!c.signal_group("TERM"));
        }
    }

    #[test]
    fn signals_the_group_while_the_leader_is_unreaped() {
        let mut c = SessionChild::new(sleeper(true));
        assert!(c.signal_group("INT"));
        assert_eq!(c.wait().unwrap().signal(), Some(Signal::INT.as_raw()));
        assert!(!c.signal_group("INT"));
        // A zombie leader still holds its group: the signal is allowed.
        let mut z = SessionChild::new(sleeper(true));
        assert!(z.signal("KILL"));
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(z.signal_group("HUP"));
        assert!(z.try_wait().unwrap().is_some());
        assert!(!z.signal_group("HUP"));
    }

    #[test]
    fn the_exit_fd_wakes_a_poll_at_exit_and_goes_once_reaped() {
        let mut c = SessionChild::new(sleeper(false));
        let fd = c.exit_fd().expect("pidfd (Linux 5.3)");
        let poll = |ms: i32| {
            use rustix::event::{PollFd, PollFlags, Timespec};
            let pidfd = c.pidfd.as_ref().unwrap();
            assert_eq!(pidfd.as_raw_fd(), fd);
            let mut p = [PollFd::new(pidfd, PollFlags::IN)];
            let t = Timespec::try_from(std::time::Duration::from_millis(ms as u64)).unwrap();
            rustix::event::poll(&mut p, Some(&t)).unwrap()
        };
        assert_eq!(poll(0), 0, "readable while the child runs");
        assert!(c.signal("TERM"));
        assert_eq!(poll(5000), 1, "not readable after the child exited");
        assert!(c.try_wait().unwrap().is_some());
        assert_eq!(c.exit_fd(), None);
        let mut n = SessionChild::without_pidfd(sleeper(false));
        assert_eq!(n.exit_fd(), None);
        assert!(n.signal("KILL"));
        n.wait().unwrap();
    }
}
