//! `delayline`: a WAN emulator for benchmarks, for kernels without netem.
//! Two network namespaces joined by TUN devices; this process forwards the
//! packets between them with a delay, a rate and a drop-tail queue. See
//! `delayline --help` and VALIDATION.md.

mod args;
mod fwd;
mod impair;
mod netns;
mod sched;
mod tun;

use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use args::{Cmd, Up};

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let res = match args::parse(&argv) {
        Ok(Cmd::Help) => {
            print!("{}", args::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("delayline: {e}\n(delayline --help for usage)");
            return ExitCode::from(2);
        }
        Ok(Cmd::Up(up)) => preflight().and_then(|()| run_up(&up)),
        Ok(Cmd::Down { ns_a, ns_b }) => preflight().and_then(|()| run_down(&[&ns_a, &ns_b])),
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("delayline: {e}");
            ExitCode::FAILURE
        }
    }
}

fn preflight() -> io::Result<()> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "must run as root (creates network namespaces and TUN devices)",
        ));
    }
    if !Path::new("/dev/net/tun").exists() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            "/dev/net/tun is missing (modprobe tun; in a container, pass the device in)",
        ));
    }
    Ok(())
}

fn run_down(names: &[&str]) -> io::Result<()> {
    for name in names {
        if netns::remove(name)? {
            println!("removed namespace {name}");
        } else {
            println!("namespace {name} not present");
        }
    }
    Ok(())
}

/// Block SIGINT/SIGTERM in this thread (and the threads it spawns later), so
/// that they are only taken by `sigtimedwait` in the main loop and cleanup
/// always runs. Children started by std::process get a clean mask.
fn block_signals() -> libc::sigset_t {
    // SAFETY: sigset operations on a local, zero-initialized set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGHUP);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// Wait up to `ms` for one of the blocked signals; returns it, if any.
fn wait_signal(set: &libc::sigset_t, ms: i64) -> Option<i32> {
    let ts = libc::timespec {
        tv_sec: ms / 1000,
        tv_nsec: (ms % 1000) * 1_000_000,
    };
    // SAFETY: valid set and timeout; no siginfo wanted.
    let sig = unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &ts) };
    (sig > 0).then_some(sig)
}

/// A seed when none is given: the clock and the pid.
fn clock_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    t ^ (u64::from(std::process::id()) << 32)
}

fn mbit(bps: u64) -> String {
    format!("{} Mbit/s", bps as f64 / 1e6)
}

fn run_up(up: &Up) -> io::Result<()> {
    let sigs = block_signals();
    let plan = up.plan();
    let [n0, n1, n2] = up.net;
    let (addr_a, addr_b) = (format!("{n0}.{n1}.{n2}.1"), format!("{n0}.{n1}.{n2}.2"));

    // Dropped last (declared first): deletes the namespaces on every exit path.
    let mut owned = netns::Owned::new();
    owned.add(&up.ns_a)?;
    owned.add(&up.ns_b)?;
    let tun_a = netns::create_tun(&up.ns_a, "dla", up.offload)?;
    let tun_b = netns::create_tun(&up.ns_b, "dlb", up.offload)?;
    netns::configure(&up.ns_a, "dla", &addr_a)?;
    netns::configure(&up.ns_b, "dlb", &addr_b)?;
    if let Some(sig) = wait_signal(&sigs, 0) {
        return Err(io::Error::other(format!(
            "interrupted by signal {sig} during setup"
        )));
    }

    // Both rings up front, so a size the machine cannot hold fails before
    // "ready" instead of aborting later.
    let ring = usize::try_from(plan.ring_bytes).unwrap_or(usize::MAX);
    let no_mem = || io::Error::other(format!("cannot allocate a {ring}-byte ring (see --ring)"));
    let line_ab = sched::Line::try_new(ring).ok_or_else(no_mem)?;
    let line_ba = sched::Line::try_new(ring).ok_or_else(no_mem)?;
    let stop = AtomicBool::new(false);
    let (fa, fb) = (tun_a.as_raw_fd(), tun_b.as_raw_fd());
    let link = |i: usize| sched::Link::new(plan.rate_bps, plan.delay_ns[i], plan.queue_ns);
    let seed = up.seed.unwrap_or_else(clock_seed);
    let seeds = impair::direction_seeds(seed);
    let imp = |i: usize| impair::Impair::new(up.loss_ppb, plan.half_jitter_ns, seeds[i]);
    let result = std::thread::scope(|s| {
        let ab = s.spawn(|| fwd::run(fa, fb, link(0), line_ab, imp(0), up.offload, &stop));
        let ba = s.spawn(|| fwd::run(fb, fa, link(1), line_ba, imp(1), up.offload, &stop));

        let rate = match up.rate_bps {
            Some(r) => mbit(r),
            None => "unlimited".into(),
        };
        let queue = match up.rate_bps {
            Some(_) => format!(
                "{} bytes ({} ms)",
                plan.queue_bytes,
                plan.queue_ns as f64 / 1e6
            ),
            None => "none".into(),
        };
        let mut out = io::stdout().lock();
        // A closed stdout must not stop the forwarder: ignore write errors.
        let _ = writeln!(
            out,
            "ready: {} {addr_a} <-> {} {addr_b}, rtt {} ms, rate {rate}, queue {queue}, \
             loss {}% per direction, jitter +-{} ms per round trip, seed {seed}, \
             ring {} MiB per direction, offload {}",
            up.ns_a,
            up.ns_b,
            up.rtt_ns as f64 / 1e6,
            up.loss_ppb as f64 / 1e7,
            up.jitter_ns as f64 / 1e6,
            plan.ring_bytes >> 20,
            if up.offload { "on" } else { "off" },
        );
        let _ = out.flush();
        drop(out);

        let mut why = String::new();
        while why.is_empty() {
            if let Some(sig) = wait_signal(&sigs, 250) {
                why = format!("signal {sig}");
            } else if ab.is_finished() || ba.is_finished() {
                why = "a forwarding thread stopped".into();
            }
        }
        stop.store(true, Ordering::Relaxed);
        let res = [("a->b", ab.join()), ("b->a", ba.join())];
        let mut failed = None;
        for (dir, r) in res {
            match r {
                Ok(Ok(st)) => eprintln!(
                    "delayline: {dir}: {} packets, {} wire bytes, dropped {} (queue full) \
                     {} (ring full) {} (random loss), {} write errors, ring peak {} bytes of {ring}",
                    st.pkts,
                    st.wire_bytes,
                    st.drop_queue,
                    st.drop_ring,
                    st.drop_loss,
                    st.write_err,
                    st.peak_ring
                ),
                Ok(Err(e)) => failed = Some(io::Error::new(e.kind(), format!("{dir}: {e}"))),
                Err(_) => failed = Some(io::Error::other(format!("{dir}: thread panicked"))),
            }
        }
        eprintln!(
            "delayline: stopping ({why}), removing {} and {}",
            up.ns_a, up.ns_b
        );
        failed.map_or(Ok(()), Err)
    });
    drop((tun_a, tun_b));
    drop(owned);
    result
}
