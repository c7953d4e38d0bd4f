//! One direction of the delay line: read packets from one TUN, hold them in
//! the ring until due, write them to the other TUN.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::args::MAX_PKT;
use crate::impair::Impair;
use crate::sched::{Line, Link, Pkt};
use crate::tun;

/// Longest sleep, so a stop request is seen promptly.
const IDLE_WAIT_NS: u64 = 100_000_000;
/// How early a long sleep ends, see the wait below.
const EARLY_NS: u64 = 1_000_000;
/// Reads per round before delivering again, so a flood of arrivals cannot
/// delay departures that are already due.
const READ_BATCH: usize = 16;

/// Per-direction counters, reported at exit.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Stats {
    pub(crate) pkts: u64,
    pub(crate) wire_bytes: u64,
    pub(crate) drop_queue: u64,
    pub(crate) drop_ring: u64,
    /// Lost at random (`--loss`).
    pub(crate) drop_loss: u64,
    pub(crate) write_err: u64,
    /// Largest number of bytes held in the ring at once.
    pub(crate) peak_ring: u64,
}

/// Forward `from` -> `to` until `stop` is set, losing and jittering packets
/// as `impair` draws. Only a read error that is not
/// EAGAIN/EINTR ends it early (the device is gone); write errors are
/// counted, as a real link would lose the packet.
pub(crate) fn run(
    from: RawFd,
    to: RawFd,
    mut link: Link,
    mut line: Line,
    mut impair: Impair,
    vnet: bool,
    stop: &AtomicBool,
) -> io::Result<Stats> {
    // Timer slack defaults to 50 us; 1 us keeps delivery times tight.
    // SAFETY: prctl with integer arguments, affects this thread only.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
    // Only used when the ring has no room for a maximal read.
    let mut scratch = vec![0u8; MAX_PKT];
    let mut st = Stats::default();
    let mut held: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..READ_BATCH {
            // Read straight into the ring when a maximal packet fits there.
            let slot = line.reserve(MAX_PKT);
            let n = match slot {
                Some(off) => tun::read(from, &mut line.buf[off..off + MAX_PKT])?,
                None => tun::read(from, &mut scratch)?,
            };
            let Some(n) = n.filter(|&n| n > 0) else { break };
            let now = tun::now_ns();
            if impair.lose() {
                st.drop_loss += 1;
                continue;
            }
            let off = match slot {
                Some(off) => off,
                None => match line.reserve(n) {
                    Some(off) => {
                        line.buf[off..off + n].copy_from_slice(&scratch[..n]);
                        off
                    }
                    None => {
                        st.drop_ring += 1;
                        continue;
                    }
                },
            };
            let wire = tun::wire_len(&line.buf[off..off + n], vnet);
            match link.admit(now, wire) {
                Some(due) => {
                    let due = impair.deliver_at(due, link.delay_ns());
                    line.push(Pkt { off, len: n, due });
                    held += n as u64;
                    st.peak_ring = st.peak_ring.max(held);
                }
                None => st.drop_queue += 1,
            }
        }
        let now = tun::now_ns();
        while let Some(&p) = line.queue.front() {
            if p.due > now {
                break;
            }
            match tun::write(to, &line.buf[p.off..p.off + p.len]) {
                Ok(()) => {
                    st.pkts += 1;
                    st.wire_bytes += tun::wire_len(&line.buf[p.off..p.off + p.len], vnet) as u64;
                }
                Err(_) => st.write_err += 1,
            }
            line.queue.pop_front();
            held -= p.len as u64;
        }
        let wait = match line.queue.front() {
            Some(p) => p.due.saturating_sub(tun::now_ns()),
            None => IDLE_WAIT_NS,
        };
        // ppoll's timer slack is 0.1% of the timeout (50 us at 50 ms), more
        // than PR_SET_TIMERSLACK: stop 1 ms short, then wait the rest with
        // ~1 us slack.
        let wait = if wait > 2 * EARLY_NS {
            wait - EARLY_NS
        } else {
            wait
        };
        if wait > 0 {
            tun::wait_readable(from, wait.min(IDLE_WAIT_NS));
        }
    }
    Ok(st)
}
