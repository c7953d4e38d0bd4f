//! How many connections a copy in ranges uses: all of `Streams N` at
//! once, or `Streams auto`'s steps (streams_auto.rs), each extra
//! connection started on its own thread.

use super::super::session::Sftp;
use super::{Parallel, State};
use crate::client::streams::Streams;
use crate::client::streams_auto::{Steer, Step};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

impl Parallel {
    /// `Streams auto`'s first step, once per run: as many connections as
    /// the path needs when each carries what one may have in flight
    /// (streams_auto::start_count): toward sluiced, whose windows follow
    /// the path, one socket's buffer cap; toward another server, its
    /// channel window for an upload (a stock sshd keeps it at 2 MiB: 20
    /// MB/s per connection at 100 ms) and what autotuning lets its socket
    /// buffer for a download. Measured steps go on from there: ramping up
    /// from one connection cost seconds of a copy (each step waits for its
    /// connections' rate to settle).
    pub(super) fn start_auto(&self, s: &Sftp, up: bool) {
        use crate::client::streams_auto::{autotune_cap, socket_cap, start_count};
        let Some(rtt) = s.rtt else { return };
        let mut st = self.shared.lock();
        if st.auto_started || st.settled || st.closed {
            return;
        }
        st.auto_started = true;
        let sluiced = s.has("sha256-range@sluice.dev", "1");
        let (per_conn, what) = match (sluiced, up) {
            (true, _) => (socket_cap(), "one socket's buffer cap"),
            (false, true) if s.peer_window() > 0 => (
                u64::from(s.peer_window()).min(socket_cap()),
                "the server's channel window",
            ),
            (false, _) => (autotune_cap(), "the server's autotuned socket buffer"),
        };
        let n = start_count(rtt, per_conn);
        crate::log!(
            Debug1,
            "Streams auto: round trip {rtt:?}, {} in flight per connection ({what}): starting with {n}",
            crate::net::sockbuf::human(per_conn)
        );
        let add = n.saturating_sub(1 + st.live + st.starting);
        for _ in 0..add {
            self.spawn(&mut st);
        }
    }

    /// Opens connections: all of `Streams N` at once; for auto, the next
    /// one when the rate says so (called often, cheap).
    pub(super) fn grow(&self) {
        let sh = &self.shared;
        let mut st = sh.lock();
        if st.settled || st.closed || st.queue.len() < 2 {
            return;
        }
        match sh.streams {
            Streams::Fixed(n) => {
                crate::log!(
                    Debug1,
                    "Streams {n}: opening {} more connection(s)",
                    n.saturating_sub(1 + st.live + st.starting)
                );
                while 1 + st.live + st.starting < n {
                    if !self.spawn(&mut st) {
                        break;
                    }
                }
                st.settled = true;
            }
            Streams::Auto => {
                drop(st);
                self.steer();
            }
        }
    }

    /// `Streams auto` (streams_auto.rs), measured over a second once a
    /// step's connections are up, and decided once the rate stops growing
    /// (connections start cold: slow start is not a buffer cap).
    fn steer(&self) {
        let sh = &self.shared;
        let mut g = sh.steer.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let moved = sh.moved.load(Ordering::Relaxed);
        let steer =
            g.get_or_insert_with(|| Steer::new(now, moved, Duration::from_secs(1)).on_plateaus());
        let mut st = sh.lock();
        if st.starting > 0 {
            // Measure from when the new ones are up.
            steer.mark(now, moved);
            return;
        }
        match steer.decide(now, moved, 1 + st.live) {
            Step::Wait => {}
            Step::GiveBack(added) => {
                st.retire += added;
                st.settled = true;
                sh.cv.notify_all();
            }
            Step::Settle => st.settled = true,
            Step::Add(add) => {
                for _ in 0..add {
                    self.spawn(&mut st);
                }
            }
        }
    }

    /// Starts one extra connection on its own threads, counted in
    /// `st.starting` (the caller holds the state's lock); false if no
    /// thread could be made.
    fn spawn(&self, st: &mut State) -> bool {
        st.starting += 1;
        let sh = self.shared.clone();
        let started = std::thread::Builder::new()
            .name("sftp-stream".into())
            .spawn(move || {
                let opts = match (sh.connect)() {
                    Ok(o) => o,
                    Err(e) => {
                        crate::log!(Debug1, "Streams: no extra connection: {e}");
                        sh.lock().starting -= 1;
                        return;
                    }
                };
                let w = sh.clone();
                super::super::run_quiet(opts, move |link| {
                    w.work(link);
                    0
                });
            });
        if let Err(e) = started {
            crate::log!(Debug1, "Streams: no thread for a connection: {e}");
            st.starting -= 1;
            return false;
        }
        true
    }
}
