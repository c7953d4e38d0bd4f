//! The listener: binds the configured addresses and hands every accepted
//! connection to a freshly executed `sluiced -R` process with the socket as
//! its stdin and stdout (the `sshd -i` convention), so a failure in one
//! connection never touches another or the listener. MaxStartups drops new
//! connections early when too many are still unauthenticated.

use crate::log;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Listening sockets.
pub struct Listener {
    sockets: Vec<TcpListener>,
}

impl Listener {
    /// Sets TcpRcvBuf / TcpSndBuf (bytes; 0: the automatic size)
    /// on the listening sockets, which accepted connections inherit, and
    /// says what the kernel granted and what capped it.
    pub fn set_buffers(&self, rcv: u64, snd: u64) {
        use crate::net::sockbuf::{self, Buf};
        use std::os::fd::AsRawFd;
        for s in &self.sockets {
            for (b, n) in [(Buf::Recv, rcv), (Buf::Send, snd)] {
                // Unset: the automatic size, where it beats autotuning.
                let n = if n == 0 {
                    sockbuf::auto_size(b).unwrap_or(0)
                } else {
                    n
                };
                if n == 0 {
                    continue;
                }
                let g = sockbuf::set(s.as_raw_fd(), b, n);
                log!(
                    Verbose,
                    "{}: asked {}, granted {}",
                    b.keyword(),
                    n,
                    g.granted
                );
                if let Some(a) = g.advice {
                    log!(Error, "{a}");
                }
            }
        }
    }

    /// Binds every address, in sshd's words on failure.
    pub fn bind(addrs: &[SocketAddr]) -> Result<Listener, String> {
        let mut sockets = Vec::new();
        for a in addrs {
            match TcpListener::bind(a) {
                Ok(s) => {
                    log!(Info, "Server listening on {} port {}.", a.ip(), a.port());
                    let _ = s.set_nonblocking(true);
                    sockets.push(s);
                }
                Err(e) => {
                    log!(
                        Error,
                        "Bind to port {} on {} failed: {}.",
                        a.port(),
                        a.ip(),
                        crate::net::describe_io_error(&e)
                    );
                }
            }
        }
        if sockets.is_empty() {
            return Err("Cannot bind any address.".into());
        }
        Ok(Listener { sockets })
    }

    /// The bound addresses.
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.sockets
            .iter()
            .filter_map(|s| s.local_addr().ok())
            .collect()
    }

    /// Accepts until `stop` is set, starting one `exe args...` per connection.
    pub fn serve(
        &mut self,
        exe: &std::path::Path,
        args: &[String],
        max_startups: (u32, u32, u32),
        grace: Duration,
        stop: &AtomicBool,
    ) {
        let mut children: Vec<(Child, Instant)> = Vec::new();
        let mut rng_state = std::process::id() as u64 ^ 0x9e37_79b9_7f4a_7c15;
        while !stop.load(Ordering::Relaxed) {
            children.retain_mut(|(c, _)| !matches!(c.try_wait(), Ok(Some(_))));
            let mut fds: Vec<libc::pollfd> = self
                .sockets
                .iter()
                .map(|s| libc::pollfd {
                    fd: s.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect();
            if crate::net::fdio::poll(&mut fds, 500).is_err() {
                continue;
            }
            for s in &self.sockets {
                let Ok((stream, peer)) = s.accept() else {
                    continue;
                };
                // Connections younger than LoginGraceTime count as pending
                // (unauthenticated) for MaxStartups.
                let pending = children.iter().filter(|(_, t)| t.elapsed() < grace).count() as u32;
                rng_state ^= rng_state << 13;
                rng_state ^= rng_state >> 7;
                rng_state ^= rng_state << 17;
                if drop_connection(pending, max_startups, (rng_state % 100) as u32) {
                    log!(
                        Info,
                        "drop connection #{pending} from [{}]:{} past MaxStartups",
                        peer.ip(),
                        peer.port()
                    );
                    continue;
                }
                match spawn_child(exe, args, stream) {
                    Ok(c) => children.push((c, Instant::now())),
                    Err(e) => log!(Error, "could not start a process for {peer}: {e}"),
                }
            }
        }
        // Reap what has already exited; live connections keep running, as sshd's do.
        children.retain_mut(|(c, _)| !matches!(c.try_wait(), Ok(Some(_))));
    }
}

fn spawn_child(
    exe: &std::path::Path,
    args: &[String],
    stream: TcpStream,
) -> std::io::Result<Child> {
    let _ = stream.set_nonblocking(false);
    let out = stream.try_clone()?;
    Command::new(exe)
        .args(args)
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(stream)))
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(out)))
        .spawn()
}

/// sshd's random early drop: below `start` pending never drop; at `full` or
/// more always; between, with probability rising linearly from `rate`%.
pub fn drop_connection(pending: u32, (start, rate, full): (u32, u32, u32), roll: u32) -> bool {
    if pending < start {
        return false;
    }
    if pending >= full {
        return true;
    }
    let span = full.saturating_sub(start).max(1);
    let p = rate + (100u32.saturating_sub(rate)) * (pending - start) / span;
    roll < p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_startups_early_drop() {
        assert!(!drop_connection(9, (10, 30, 100), 0));
        assert!(drop_connection(100, (10, 30, 100), 99));
        assert!(drop_connection(10, (10, 30, 100), 29));
        assert!(!drop_connection(10, (10, 30, 100), 30));
    }
}
