//! ProxyCommand: the command runs through `sh -c "exec ..."` with its stdin
//! and stdout on two pipes and its stderr on ours, as ssh does (a server run
//! as the command, `sshd -i`, tells pipes from a socket: over a socket it
//! reports `SSH_CONNECTION` as "UNKNOWN 65535  65535" instead of "UNKNOWN
//! 65535 UNKNOWN 65535"). The pump serves one socket, so a relay process
//! copies between the pipes and a socketpair whose other end the pump uses
//! like a TCP socket (TCP_INFO just fails on it). The relay is a forked
//! process, not a thread, so it survives `-f`'s fork. At the end the command
//! gets SIGHUP and is reaped, as ssh does; the relay ends with the socket.

use super::error::ConnectError;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};

/// A running proxy command and our end of its socketpair.
pub struct Proxy {
    /// Our end (non-blocking).
    pub fd: OwnedFd,
    child: Child,
    relay: libc::pid_t,
}

/// Starts `command` (tokens already expanded).
pub fn spawn(command: &str) -> Result<Proxy, ConnectError> {
    let (ours, relay_end) = socketpair()?;
    let shell = std::env::var("SHELL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "/bin/sh".into());
    crate::log!(Debug1, "Executing proxy command: exec {command}");
    // Stdio::piped makes close-on-exec pipes: the command gets only its ends.
    let mut child = Command::new(&shell)
        .arg("-c")
        .arg(format!("exec {command}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|error| ConnectError::ProxySpawn {
            shell: shell.clone(),
            error,
        })?;
    let (Some(to_cmd), Some(from_cmd)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(ConnectError::ProxyPipes);
    };
    let relay = fork_relay(relay_end, OwnedFd::from(to_cmd), OwnedFd::from(from_cmd))?;
    crate::sys::fdio::set_nonblocking(ours.as_raw_fd(), true).map_err(|error| {
        ConnectError::Socket {
            what: "proxy socket",
            error,
        }
    })?;
    Ok(Proxy {
        fd: ours,
        child,
        relay,
    })
}

/// A close-on-exec Unix stream pair (std sets SOCK_CLOEXEC).
fn socketpair() -> Result<(OwnedFd, OwnedFd), ConnectError> {
    let (a, b) = UnixStream::pair().map_err(|error| ConnectError::Socket {
        what: "socketpair",
        error,
    })?;
    Ok((a.into(), b.into()))
}

/// Forks the relay; the parent keeps none of the three fds it hands over.
fn fork_relay(
    sock: OwnedFd,
    to_cmd: OwnedFd,
    from_cmd: OwnedFd,
) -> Result<libc::pid_t, ConnectError> {
    use crate::sys::process::{fork, Forked};
    // SAFETY: the child only makes async-signal-safe calls (fcntl, dup2,
    // close_range, poll, read, write, shutdown, close, _exit) on a stack
    // buffer, so forking a process that may have threads is sound.
    match unsafe { fork() } {
        Err(error) => Err(ConnectError::Socket {
            what: "fork",
            error,
        }),
        Ok(Forked::Child) => relay_child(sock, to_cmd, from_cmd),
        Ok(Forked::Parent(pid)) => Ok(pid.as_raw_nonzero().get()),
    }
}

/// The relay, in the forked child: moves its three fds to 3, 4 and 5,
/// closes every other one (the client's end of the socketpair above all,
/// or EOF would never come) and copies each direction until its EOF.
fn relay_child(sock: OwnedFd, to_cmd: OwnedFd, from_cmd: OwnedFd) -> ! {
    use crate::sys::{fd, inherit, process::exit_now, signal};
    signal::ignore(libc::SIGPIPE);
    let high = [&sock, &to_cmd, &from_cmd].map(|f| inherit::dup_cloexec_from(f.as_raw_fd(), 10));
    let [Ok(a), Ok(b), Ok(c)] = high else {
        exit_now(1)
    };
    // The originals are about to be closed by number with everything else.
    std::mem::forget((sock, to_cmd, from_cmd));
    for (i, high) in [a, b, c].into_iter().enumerate() {
        // SAFETY: a forked child: nothing that runs from here on owns
        // 3, 4 or 5 (the parent's owners never run again).
        if unsafe { inherit::place_at(high, 3 + i as i32) }.is_err() {
            exit_now(1)
        }
    }
    // SAFETY: as above: only 3, 4 and 5 are used from here on, and they
    // are taken up below.
    unsafe {
        if fd::close_range(6, u32::MAX).is_err() {
            // Before Linux 5.9: one by one, up to the descriptor limit.
            let max = rustix::process::getrlimit(rustix::process::Resource::Nofile)
                .current
                .unwrap_or(1 << 20)
                .clamp(6, 1 << 20) as i32;
            for n in 6..max {
                fd::close(n);
            }
        }
        fd::close(0);
        fd::close(1);
    }
    // SAFETY: 3, 4 and 5 were just made by dup2 and nothing else owns them.
    let (sock, to_cmd, from_cmd) = unsafe {
        (
            OwnedFd::from_raw_fd(3),
            OwnedFd::from_raw_fd(4),
            OwnedFd::from_raw_fd(5),
        )
    };
    pump_both(UnixStream::from(sock), to_cmd, from_cmd);
    exit_now(0)
}

/// Socket -> command's stdin and command's stdout -> socket, each until its
/// EOF (passed on: the pipe closed, the socket shut for writing); both done
/// or an error ends it. Only raw system calls (rustix's) on a stack buffer:
/// it runs in the forked child.
fn pump_both(sock: UnixStream, to_cmd: OwnedFd, from_cmd: OwnedFd) {
    use rustix::event::{poll, PollFd, PollFlags};
    let mut buf = [0u8; 64 * 1024];
    // socket->cmd while the command's stdin is open; cmd->socket while `down`.
    let mut to_cmd = Some(to_cmd);
    let mut down = true;
    while to_cmd.is_some() || down {
        let up = to_cmd.is_some();
        let mut fds = [
            PollFd::new(&sock, PollFlags::IN),
            PollFd::new(&from_cmd, PollFlags::IN),
        ];
        let live = match (up, down) {
            (true, true) => &mut fds[..],
            (true, false) => &mut fds[..1],
            _ => &mut fds[1..],
        };
        match poll(live, None) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return,
        }
        let (up_ready, down_ready) = (
            up && !fds[0].revents().is_empty(),
            down && !fds[1].revents().is_empty(),
        );
        if let (true, Some(to)) = (up_ready, &to_cmd) {
            if copy_once(sock.as_fd(), to.as_fd(), &mut buf) != Some(true) {
                // Closed: the command sees EOF on its stdin.
                to_cmd = None;
            }
        }
        if down_ready {
            match copy_once(from_cmd.as_fd(), sock.as_fd(), &mut buf) {
                Some(true) => {}
                Some(false) => {
                    down = false;
                    // The client reads EOF.
                    let _ = sock.shutdown(std::net::Shutdown::Write);
                }
                // The client is gone: nothing more to do either way.
                None => return,
            }
        }
    }
}

/// One read from `from` written whole to `to` (blocking fds): Some(true)
/// when bytes moved, Some(false) at EOF or a read error on `from`, None on
/// a write error.
fn copy_once(from: BorrowedFd<'_>, to: BorrowedFd<'_>, buf: &mut [u8]) -> Option<bool> {
    use rustix::io::{read, write, Errno};
    let n = loop {
        match read(from, &mut *buf) {
            Ok(n) => break n,
            Err(Errno::INTR) => continue,
            Err(_) => return Some(false),
        }
    };
    if n == 0 {
        return Some(false);
    }
    let mut done = 0;
    while done < n {
        match write(to, buf.get(done..n)?) {
            Ok(w) if w > 0 => done += w,
            Err(Errno::INTR) => continue,
            _ => return None,
        }
    }
    Some(true)
}

impl Drop for Proxy {
    fn drop(&mut self) {
        use rustix::process::{kill_process, waitpid, Pid, Signal, WaitOptions};
        if let Some(pid) = Pid::from_raw(self.child.id() as i32) {
            let _ = kill_process(pid, Signal::HUP);
        }
        let _ = self.child.wait();
        // The relay ends once its socket and the command are gone; stop it
        // anyway (a command's grandchild may hold the pipes) and reap it.
        if let Some(pid) = Pid::from_raw(self.relay) {
            let _ = kill_process(pid, Signal::TERM);
            let _ = waitpid(Some(pid), WaitOptions::empty());
        }
    }
}
