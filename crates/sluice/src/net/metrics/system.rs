//! What the system says about this process and the host for the metrics:
//! the process's clock, its CPU time (getrusage), the cores it may use, and
//! the kernel's caps on socket buffers (`net.core.rmem_max`, `wmem_max`,
//! the third value of `net.ipv4.tcp_rmem` / `tcp_wmem`).

use crate::net::sockbuf::{self, Buf};
use crate::sys::time::{cpu_time, Who};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

static START: OnceLock<Instant> = OnceLock::new();
static CAPS: OnceLock<Caps> = OnceLock::new();

/// Starts the process's metrics clock (first call wins); call it early, so
/// that CPU time since the process began and time since this mark cover
/// nearly the same span.
pub fn mark_start() {
    START.get_or_init(Instant::now);
}

/// Time since [`mark_start`] (which this calls if nobody did).
pub fn elapsed() -> Duration {
    START.get_or_init(Instant::now).elapsed()
}

fn rusage(who: Who) -> Duration {
    cpu_time(who).unwrap_or(Duration::ZERO)
}

/// CPU time (user and system) of the children waited for so far (`sluice
/// demo` and `sluice bench` time their clients and servers by it).
pub fn cpu_children() -> Duration {
    rusage(Who::Children)
}

/// CPU time (user and system) of the whole process: every thread,
/// crypto workers included.
pub fn cpu_process() -> Duration {
    rusage(Who::Process)
}

/// CPU time of the calling thread (the driver loop's, when it calls): the
/// serial part of the work, which no worker thread takes over.
pub fn cpu_thread() -> Duration {
    rusage(Who::Thread)
}

/// Cores this process may run on (affinity and cgroup limits applied).
pub fn cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(1))
}

/// The kernel's caps on socket buffers, bytes; None where unreadable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Caps {
    /// `net.core.rmem_max`: the most SO_RCVBUF may be set to.
    pub rmem_max: Option<u64>,
    /// `net.core.wmem_max`: the most SO_SNDBUF may be set to.
    pub wmem_max: Option<u64>,
    /// `net.ipv4.tcp_rmem`'s third value: what autotuning grows a receive
    /// buffer to.
    pub tcp_rmem_max: Option<u64>,
    /// `net.ipv4.tcp_wmem`'s third value, for send buffers.
    pub tcp_wmem_max: Option<u64>,
}

/// The caps, read once: sluiced's post-auth process reads them before a
/// ChrootDirectory hides /proc (see `server/privsep/postauth.rs`).
pub fn caps() -> Caps {
    *CAPS.get_or_init(|| {
        let third = |p: &str| sockbuf::read_sysctl(p).and_then(|v| v.get(2).copied());
        Caps {
            rmem_max: sockbuf::sysctl_max(Buf::Recv),
            wmem_max: sockbuf::sysctl_max(Buf::Send),
            tcp_rmem_max: third("/proc/sys/net/ipv4/tcp_rmem"),
            tcp_wmem_max: third("/proc/sys/net/ipv4/tcp_wmem"),
        }
    })
}

/// The size sluice sets a buffer to when no option asks for one
/// (`sockbuf::auto_size`'s rule, from the caps read once): the sysctl cap
/// where it beats autotuning, else 0 (autotuned).
pub fn auto_size(buf: Buf) -> u64 {
    let c = caps();
    let (core, autotune) = match buf {
        Buf::Recv => (c.rmem_max, c.tcp_rmem_max),
        Buf::Send => (c.wmem_max, c.tcp_wmem_max),
    };
    match (core, autotune) {
        (Some(core), Some(autotune)) if core * 2 > autotune => core,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_and_caps_read() {
        mark_start();
        // Spin until this thread's CPU time moves by 5 ms (on a loaded
        // machine that takes longer than 5 ms of wall time).
        let (start, wall) = (cpu_thread(), Instant::now());
        let mut x = 0u64;
        while cpu_thread() < start + Duration::from_millis(5) {
            assert!(wall.elapsed() < Duration::from_secs(10), "no CPU time");
            for _ in 0..10_000 {
                x = x.wrapping_mul(31).wrapping_add(7);
            }
        }
        assert!(x != 1);
        assert!(cpu_process() >= cpu_thread());
        assert!(cores() >= 1);
        for b in [Buf::Recv, Buf::Send] {
            assert_eq!(auto_size(b), sockbuf::auto_size(b).unwrap_or(0));
        }
        let c = caps();
        if std::path::Path::new("/proc/sys/net/core/rmem_max").exists() {
            assert!(c.rmem_max.is_some() && c.tcp_rmem_max.is_some(), "{c:?}");
        }
    }
}
