//! Network namespaces and their configuration, through iproute2 (`ip`) so
//! that what is created is exactly what `ip netns` shows and removes.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::process::Command;

use crate::tun;

/// Run `ip ARGS`, turning a failure into an error carrying its stderr.
pub(crate) fn ip(args: &[&str]) -> io::Result<()> {
    let out = Command::new("ip").args(args).output().map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            io::Error::new(e.kind(), "`ip` not found: install iproute2")
        } else {
            io::Error::new(e.kind(), format!("running ip: {e}"))
        }
    })?;
    if out.status.success() {
        return Ok(());
    }
    let msg = String::from_utf8_lossy(&out.stderr);
    Err(io::Error::other(format!(
        "ip {}: {}",
        args.join(" "),
        msg.trim()
    )))
}

pub(crate) fn exists(name: &str) -> bool {
    Path::new("/run/netns").join(name).exists()
}

/// Namespaces created by this process; deleted on drop, so every early
/// return during setup cleans up too.
pub(crate) struct Owned(Vec<String>);

impl Owned {
    pub(crate) fn new() -> Self {
        Owned(Vec::new())
    }

    pub(crate) fn add(&mut self, name: &str) -> io::Result<()> {
        if exists(name) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("namespace {name} already exists (leftover? `delayline down` removes it)"),
            ));
        }
        ip(&["netns", "add", name])?;
        self.0.push(name.to_string());
        Ok(())
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        for name in self.0.drain(..).rev() {
            if let Err(e) = ip(&["netns", "del", &name]) {
                eprintln!("delayline: {e}");
            }
        }
    }
}

/// Create TUN `dev` inside namespace `ns`. The device belongs to the
/// namespace of the thread that creates it, so a short-lived thread enters
/// the namespace (setns only affects the calling thread) and hands the fd
/// back; the fd works from any thread afterwards.
pub(crate) fn create_tun(ns: &str, dev: &str, offload: bool) -> io::Result<OwnedFd> {
    let path = Path::new("/run/netns").join(ns);
    let nsfd = std::fs::File::open(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("open {}: {e}", path.display())))?;
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: setns on a valid namespace fd; affects this thread only.
            if unsafe { libc::setns(nsfd.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                let e = io::Error::last_os_error();
                return Err(io::Error::new(e.kind(), format!("setns {ns}: {e}")));
            }
            tun::create(dev, offload)
        })
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("TUN creation thread panicked")))
    })
}

/// Bring up lo and `dev` with MTU 1500 and `addr`/24.
pub(crate) fn configure(ns: &str, dev: &str, addr: &str) -> io::Result<()> {
    ip(&["-n", ns, "link", "set", "lo", "up"])?;
    ip(&["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev])?;
    ip(&["-n", ns, "link", "set", dev, "mtu", "1500", "up"])
}

/// `delayline down`: SIGTERM to whatever still runs in the namespace, then
/// delete it. Returns whether it existed.
pub(crate) fn remove(name: &str) -> io::Result<bool> {
    if !exists(name) {
        return Ok(false);
    }
    if let Ok(out) = Command::new("ip").args(["netns", "pids", name]).output() {
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            if let Ok(pid) = pid.parse::<libc::pid_t>() {
                // SAFETY: kill(2) with a pid the kernel reported; no memory involved.
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
        }
    }
    ip(&["netns", "del", name])?;
    Ok(true)
}
