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
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
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
    crate::net::fdio::set_nonblocking(ours.as_raw_fd(), true).map_err(|error| {
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
    let (a, b) = std::os::unix::net::UnixStream::pair().map_err(|error| ConnectError::Socket {
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
    // SAFETY: the child only makes async-signal-safe calls (fcntl, dup2,
    // close_range, poll, read, write, shutdown, close, _exit) on a stack
    // buffer, so forking a process that may have threads is sound.
    match unsafe { libc::fork() } {
        -1 => Err(ConnectError::Socket {
            what: "fork",
            error: std::io::Error::last_os_error(),
        }),
        0 => {
            // SAFETY: as above; never returns.
            unsafe { relay_child(sock.as_raw_fd(), to_cmd.as_raw_fd(), from_cmd.as_raw_fd()) }
        }
        pid => Ok(pid),
    }
}

/// The relay: moves its three fds to 3, 4 and 5, closes every other one
/// (the client's end of the socketpair above all, or EOF would never come)
/// and copies each direction until its EOF.
///
/// # Safety
/// Only in the child of `fork`.
unsafe fn relay_child(sock: RawFd, to_cmd: RawFd, from_cmd: RawFd) -> ! {
    // SAFETY: plain fd calls on fds this process owns.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        let high = [sock, to_cmd, from_cmd].map(|fd| libc::fcntl(fd, libc::F_DUPFD, 10));
        if high.iter().any(|&fd| fd < 0) {
            libc::_exit(1);
        }
        for (i, fd) in high.iter().enumerate() {
            if libc::dup2(*fd, 3 + i as i32) < 0 {
                libc::_exit(1);
            }
        }
        if libc::syscall(libc::SYS_close_range, 6u32, u32::MAX, 0u32) != 0 {
            // Before Linux 5.9: one by one, up to the descriptor limit.
            let max = libc::sysconf(libc::_SC_OPEN_MAX).clamp(6, 1 << 20) as i32;
            for fd in 6..max {
                libc::close(fd);
            }
        }
        libc::close(0);
        libc::close(1);
        pump_both(3, 4, 5);
        libc::_exit(0)
    }
}

/// Socket -> command's stdin and command's stdout -> socket, each until its
/// EOF (passed on: the pipe closed, the socket shut for writing); both done
/// or an error ends it.
///
/// # Safety
/// Only in the relay child, on fds it owns.
unsafe fn pump_both(sock: RawFd, to_cmd: RawFd, from_cmd: RawFd) {
    let mut buf = [0u8; 64 * 1024];
    let (mut up, mut down) = (true, true); // socket->cmd, cmd->socket
    while up || down {
        let mut fds = [
            libc::pollfd {
                fd: if up { sock } else { -1 },
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: if down { from_cmd } else { -1 },
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: two valid pollfds.
        if unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) } < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if up && fds[0].revents != 0 {
            // SAFETY: buf is ours; the fds are open.
            match unsafe { copy_once(sock, to_cmd, &mut buf) } {
                Some(true) => {}
                _ => {
                    up = false;
                    // SAFETY: our fd; the command sees EOF on its stdin.
                    unsafe { libc::close(to_cmd) };
                }
            }
        }
        if down && fds[1].revents != 0 {
            // SAFETY: as above.
            match unsafe { copy_once(from_cmd, sock, &mut buf) } {
                Some(true) => {}
                Some(false) => {
                    down = false;
                    // SAFETY: our fd; the client reads EOF.
                    unsafe { libc::shutdown(sock, libc::SHUT_WR) };
                }
                // The client is gone: nothing more to do either way.
                None => return,
            }
        }
    }
}

/// One read from `from` written whole to `to` (blocking fds): Some(true)
/// when bytes moved, Some(false) at EOF on `from`, None on a write error.
///
/// # Safety
/// `from` and `to` are open fds.
unsafe fn copy_once(from: RawFd, to: RawFd, buf: &mut [u8]) -> Option<bool> {
    let n = loop {
        // SAFETY: buf is valid for its length.
        let n = unsafe { libc::read(from, buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            break n as usize;
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return Some(false);
        }
    };
    if n == 0 {
        return Some(false);
    }
    let mut done = 0;
    while done < n {
        let rest = buf.get(done..n)?;
        // SAFETY: rest is valid for its length.
        let w = unsafe { libc::write(to, rest.as_ptr().cast(), rest.len()) };
        if w > 0 {
            done += w as usize;
        } else if w < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
        {
            continue;
        } else {
            return None;
        }
    }
    Some(true)
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // SAFETY: kill on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGHUP);
        }
        let _ = self.child.wait();
        // The relay ends once its socket and the command are gone; stop it
        // anyway (a command's grandchild may hold the pipes) and reap it.
        // SAFETY: our own child's pid; status is a plain int.
        unsafe {
            libc::kill(self.relay, libc::SIGTERM);
            let mut status = 0;
            libc::waitpid(self.relay, &mut status, 0);
        }
    }
}
