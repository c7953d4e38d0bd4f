//! One large file over several connections (mscp's trick, against any
//! SFTP server, stock sshd included): the file is cut into ranges, and
//! each connection copies whichever range is next with its own READs or
//! WRITEs at their offsets (pread/pwrite on both ends). One TCP
//! connection is held by its buffers (a stock sshd's 2 MiB channel window,
//! net.core.*mem_max), by losses that halve it, and by one core for its
//! crypto; several are not.
//!
//! Extra connections are sluice's own client again, with the same
//! ssh_config, host keys and identities, in BatchMode: one that would need
//! a password or a question is not opened (the transfer goes on with the
//! connections it has). `Streams N` opens N in all; `Streams auto` (the
//! default) adds them in steps while each step raises the total rate by a
//! tenth or more (see `steer`), and gives back a step that did not.
//!
//! Safety: a connection that dies hands its range back to the others; the
//! file is renamed into place (partial/) only when every range was
//! acknowledged, so a short file never appears under the final name.
//! Each range acknowledged is added to the copy's record (resume.rs), so
//! a killed copy resumes without copying completed ranges again.

use super::errors::{show, TransferError, TransferResult};
use super::pipeline::{self, Pace, Span};
use super::progress::Meter;
use super::resume::{self, Record};
use super::session::{Sftp, SftpError};
use crate::client::streams::Streams;
use crate::client::streams_auto::{Steer, Step};
use crate::client::ClientOptions;
use sluice_proto::sftp::{pflags, Attrs};
use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A file smaller than this goes over one connection: splitting it would
/// cost more in connection setup than it saves.
pub const MIN_SPLIT: u64 = 64 << 20;
pub use crate::client::streams_auto::AUTO_MAX;
/// Makes the options of one more connection (BatchMode on).
pub type Connector = Arc<dyn Fn() -> Result<ClientOptions, String> + Send + Sync>;

/// The extra connections of one sftp or scp run (cheap to clone: shared).
#[derive(Clone)]
pub struct Parallel {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Parallel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Parallel(Streams {})", self.shared.streams)
    }
}

struct Shared {
    streams: Streams,
    connect: Connector,
    state: Mutex<State>,
    cv: Condvar,
    /// Bytes every connection moved, for the rate `auto` steers by.
    moved: AtomicU64,
    steer: Mutex<Option<Steer>>,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Range>,
    /// Extra connections taking ranges.
    live: usize,
    /// Extra connections still connecting.
    starting: usize,
    /// Extra connections asked to stop after their range.
    retire: usize,
    /// No more connections are added.
    settled: bool,
    /// The run is over: workers end their sessions.
    closed: bool,
    /// Auto's first step was taken ([`Parallel::start_auto`]).
    auto_started: bool,
}

/// One file being copied in ranges.
struct Copy {
    up: bool,
    /// The local file (read for an upload, written for a download).
    file: File,
    local: PathBuf,
    /// The path extra connections open on the server (a temporary name).
    remote: Vec<u8>,
    pace: Pace,
    meter: Mutex<Meter>,
    /// Ranges not yet finished, and the first error (changed under state's
    /// lock so the waiter never misses the last one).
    left: Mutex<(usize, Option<TransferError>)>,
    /// Ranges in progress by start: their end and the bytes acknowledged,
    /// so each is added to `record` the moment it is whole.
    acked: Mutex<BTreeMap<u64, (u64, u64)>>,
    /// Where completed ranges are kept for a resume (resume.rs).
    record: Option<Arc<Record>>,
}

impl Copy {
    /// `n` bytes at `off` were acknowledged (an upload) or written (a
    /// download).
    fn acked(&self, off: u64, n: u64) {
        let mut m = self.acked.lock().unwrap_or_else(|e| e.into_inner());
        let Some((&start, v)) = m.range_mut(..=off).next_back() else {
            return;
        };
        if off >= v.0 {
            return;
        }
        v.1 += n;
        if v.1 >= v.0 - start {
            let end = v.0;
            m.remove(&start);
            drop(m);
            if let Some(r) = &self.record {
                if !self.up {
                    // The data before the record that vouches for it.
                    let _ = self.file.sync_data();
                }
                r.add(start, end);
            }
        }
    }

    /// A range goes again from its start (its connection died).
    fn again(&self, r: &Range) {
        let mut m = self.acked.lock().unwrap_or_else(|e| e.into_inner());
        m.insert(r.start, (r.end, 0));
    }
}

struct Range {
    copy: Arc<Copy>,
    start: u64,
    end: u64,
}

/// An open remote handle, kept across the ranges of one file.
type Open = Option<(Arc<Copy>, Vec<u8>)>;

impl Parallel {
    /// Copies may use `streams` connections, more made by `connect`.
    pub fn new(streams: Streams, connect: Connector) -> Parallel {
        Parallel {
            shared: Arc::new(Shared {
                streams,
                connect,
                state: Mutex::new(State::default()),
                cv: Condvar::new(),
                moved: AtomicU64::new(0),
                steer: Mutex::new(None),
            }),
        }
    }

    /// What ssh_config Streams says.
    pub fn streams(&self) -> Streams {
        self.shared.streams
    }

    /// What makes one more connection.
    pub fn connector(&self) -> Connector {
        self.shared.connect.clone()
    }

    /// Whether a file of `size` bytes goes in ranges over the session `s`.
    /// `auto` copies on one connection where one can fill the path: into
    /// sluiced (whose windows follow the path; its sha256-range extension
    /// says it is sluiced) when one socket's buffer cap covers the path's
    /// bandwidth-delay product, as a striped channel decides (stripe.rs).
    /// Measuring would open a second connection to find that out, and its
    /// slow start and split ranges cost more than it gives (at 240 ms with
    /// raised buffers: 1-2 s of a 1 GiB upload).
    pub fn splits(&self, s: &Sftp, size: u64) -> bool {
        if size < MIN_SPLIT {
            return false;
        }
        match self.shared.streams {
            Streams::Fixed(n) => n > 1,
            Streams::Auto => {
                let sluiced = s.has("sha256-range@sluice.dev", "1");
                match s.rtt.filter(|_| sluiced) {
                    Some(rtt) => {
                        let (bdp, cap) = crate::client::streams_auto::bdp_and_cap(rtt);
                        crate::log!(
                            Debug2,
                            "Streams auto: round trip {rtt:?}, bandwidth-delay product at 1 Gbit/s {} against one socket's send buffer cap {}",
                            crate::net::sockbuf::human(bdp),
                            crate::net::sockbuf::human(cap)
                        );
                        bdp > cap
                    }
                    None => true,
                }
            }
        }
    }

    /// Ends the extra connections (their sessions close cleanly).
    pub fn shutdown(&self) {
        self.shared.lock().closed = true;
        self.shared.cv.notify_all();
    }

    /// Copies `size` bytes between `file` and the remote file open as
    /// `handle` (named `remote` for the other connections) in ranges on
    /// every connection, this one included; returns when all are done.
    /// Ranges in `done` are complete already (a resume) and are skipped;
    /// each range completed is added to `record`.
    #[allow(clippy::too_many_arguments)]
    pub fn copy(
        &self,
        s: &mut Sftp,
        handle: &[u8],
        up: bool,
        file: &File,
        local: &std::path::Path,
        remote: &[u8],
        size: u64,
        pace: &Pace,
        meter: Meter,
        done: &[(u64, u64)],
        record: Option<Arc<Record>>,
    ) -> TransferResult<()> {
        let file = file
            .try_clone()
            .map_err(|e| TransferError::Failed(format!("dup: {e}")))?;
        let step = range_size(size, self.max());
        let todo = resume::missing(size, done, step);
        if !done.is_empty() {
            let skipped: u64 = resume::merge(done.to_vec())
                .iter()
                .map(|(a, b)| b - a)
                .sum();
            crate::log!(
                Debug1,
                "resume: skipping {} completed range(s), {skipped} bytes; copying {} range(s)",
                done.len(),
                todo.len()
            );
        }
        let n = todo.len();
        let copy = Arc::new(Copy {
            up,
            file,
            local: local.to_path_buf(),
            remote: remote.to_vec(),
            pace: pace.clone(),
            meter: Mutex::new(meter),
            left: Mutex::new((n, None)),
            acked: Mutex::new(todo.iter().map(|&(a, b)| (a, (b, 0))).collect()),
            record,
        });
        if let Some(r) = &copy.record {
            r.reset(done);
        }
        {
            let mut st = self.shared.lock();
            for (start, end) in todo {
                st.queue.push_back(Range {
                    copy: copy.clone(),
                    start,
                    end,
                });
            }
        }
        self.shared.cv.notify_all();
        if self.shared.streams == Streams::Auto {
            self.start_auto(s, up);
        }
        self.grow();
        // This connection takes ranges too, with the handle it has.
        let mut open: Open = Some((copy.clone(), handle.to_vec()));
        loop {
            let next = {
                let mut st = self.shared.lock();
                loop {
                    if let Some(i) = st.queue.iter().position(|r| Arc::ptr_eq(&r.copy, &copy)) {
                        break st.queue.remove(i);
                    }
                    if copy.left.lock().unwrap_or_else(|e| e.into_inner()).0 == 0 {
                        break None;
                    }
                    st = self
                        .shared
                        .cv
                        .wait_timeout(st, Duration::from_millis(100))
                        .map(|(g, _)| g)
                        .unwrap_or_else(|e| e.into_inner().0);
                    drop(st);
                    self.grow();
                    st = self.shared.lock();
                }
            };
            let Some(r) = next else { break };
            // An error here (this session gone, too) ends the copy.
            // Between ranges, `Streams auto` measures and adds connections.
            let (held, res) = self.shared.run(s, &mut open, r, false, &|| self.grow());
            self.shared.finish(&held, res.err());
            self.grow();
        }
        // Not closed here: the caller closes `handle`.
        let (_, err) = std::mem::take(&mut *copy.left.lock().unwrap_or_else(|e| e.into_inner()));
        match err {
            Some(e) => Err(e),
            None => {
                copy.meter.lock().unwrap_or_else(|e| e.into_inner()).done();
                Ok(())
            }
        }
    }

    fn max(&self) -> usize {
        match self.shared.streams {
            Streams::Auto => AUTO_MAX,
            Streams::Fixed(n) => n,
        }
    }

    /// `Streams auto`'s first step, once per run: as many connections as
    /// the path needs when each carries what one may have in flight
    /// (streams_auto::start_count): toward sluiced, whose windows follow
    /// the path, one socket's buffer cap; toward another server, its
    /// channel window for an upload (a stock sshd keeps it at 2 MiB: 20
    /// MB/s per connection at 100 ms) and what autotuning lets its socket
    /// buffer for a download. Measured steps go on from there: ramping up
    /// from one connection cost seconds of a copy (each step waits for its
    /// connections' rate to settle).
    fn start_auto(&self, s: &Sftp, up: bool) {
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
    fn grow(&self) {
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
                super::run_quiet(opts, move |link| {
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

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An extra connection's program: ranges until the run ends, it is
    /// retired, or its session fails (its range then goes back).
    fn work(&self, link: super::Link) {
        let mut s = match Sftp::init(link) {
            Ok(s) => s,
            Err(e) => {
                crate::log!(Debug1, "Streams: extra connection's SFTP failed: {e}");
                self.lock().starting -= 1;
                return;
            }
        };
        {
            let mut st = self.lock();
            st.starting -= 1;
            st.live += 1;
            crate::log!(Debug1, "Streams: {} connections", 1 + st.live);
        }
        let mut open: Open = None;
        loop {
            let r = {
                let mut st = self.lock();
                loop {
                    if st.closed {
                        break None;
                    }
                    if st.retire > 0 {
                        st.retire -= 1;
                        break None;
                    }
                    if let Some(r) = st.queue.pop_front() {
                        break Some(r);
                    }
                    st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
                }
            };
            let Some(r) = r else { break };
            match self.run(&mut s, &mut open, r, true, &|| {}) {
                (held, Err(TransferError::Fatal(m))) => {
                    crate::log!(
                        Debug1,
                        "Streams: a connection failed ({m}); its ranges go again"
                    );
                    let mut st = self.lock();
                    for r in held.into_iter().rev() {
                        r.copy.again(&r);
                        st.queue.push_front(r);
                    }
                    drop(st);
                    self.cv.notify_all();
                    open = None;
                    break;
                }
                (held, res) => self.finish(&held, res.err()),
            }
        }
        if let Some((_, h)) = open.take() {
            let _ = s.close(&h);
        }
        self.lock().live -= 1;
        self.cv.notify_all();
        s.finish();
    }

    /// Copies range `r` on `s` (opening the file there first if needed),
    /// then, on the same pipeline with no pause between them, more ranges
    /// of the same file while the queue has them (a worker that may
    /// retire stops taking them when asked to). Returns every range it
    /// held, for the caller to count done or hand back.
    fn run(
        &self,
        s: &mut Sftp,
        open: &mut Open,
        r: Range,
        may_retire: bool,
        between: &dyn Fn(),
    ) -> (Vec<Range>, TransferResult<()>) {
        let c = r.copy.clone();
        let mut held = vec![r];
        let res = self.run_held(s, open, &c, &mut held, may_retire, between);
        (held, res)
    }

    fn run_held(
        &self,
        s: &mut Sftp,
        open: &mut Open,
        c: &Arc<Copy>,
        held: &mut Vec<Range>,
        may_retire: bool,
        between: &dyn Fn(),
    ) -> TransferResult<()> {
        if c.left.lock().unwrap_or_else(|e| e.into_inner()).1.is_some() {
            return Ok(()); // the copy failed elsewhere: skip
        }
        if !open.as_ref().is_some_and(|(o, _)| Arc::ptr_eq(o, c)) {
            if let Some((_, h)) = open.take() {
                s.close(&h)
                    .map_err(|e| TransferError::Fatal(e.to_string()))
                    .or_else(|e| match e {
                        TransferError::Fatal(_) => Err(e),
                        _ => Ok(()),
                    })?;
            }
            let what = format!("open remote \"{}\"", show(&c.remote));
            let h = if c.up {
                s.open(&c.remote, pflags::WRITE, Attrs::default())
            } else {
                s.open_read(&c.remote)
            }
            .map_err(|e| match e {
                SftpError::Fatal(m) => TransferError::Fatal(m),
                e => TransferError::Failed(format!("{what}: {e}")),
            })?;
            *open = Some((c.clone(), h));
        }
        let h = open.as_ref().map(|(_, h)| h.clone()).unwrap_or_default();
        let span = |r: &Range| Span {
            start: r.start,
            end: Some(r.end),
            exact: true,
        };
        let first = held.first().map(span).unwrap_or(Span {
            start: 0,
            end: Some(0),
            exact: true,
        });
        let mut more = || {
            between();
            let mut st = self.lock();
            if may_retire && (st.retire > 0 || st.closed) {
                return None;
            }
            let i = st.queue.iter().position(|q| Arc::ptr_eq(&q.copy, c))?;
            let r = st.queue.remove(i)?;
            let sp = span(&r);
            held.push(r);
            Some(sp)
        };
        let mut tally = |off: u64, n: u64| {
            self.moved.fetch_add(n, Ordering::Relaxed);
            c.meter.lock().unwrap_or_else(|e| e.into_inner()).add(n);
            c.acked(off, n);
        };
        let (file, local, remote, pace) = (&c.file, &c.local, &c.remote, &c.pace);
        if c.up {
            pipeline::send_file(
                s,
                &h,
                file,
                first,
                &[],
                local,
                remote,
                pace,
                &mut more,
                &mut tally,
                pipeline::Closing::No,
            )
            .map(|_| ())
        } else {
            // An exact span fails on an early EOF: the file shrank.
            pipeline::fetch(
                s,
                &h,
                remote,
                file,
                first,
                &[],
                local,
                pace,
                &mut more,
                &mut tally,
            )
            .map(|_| ())
        }
    }

    /// Ranges of one copy are done (or failed for good): count them,
    /// wake the waiter.
    fn finish(&self, held: &[Range], err: Option<TransferError>) {
        let Some(r) = held.first() else { return };
        let _st = self.lock();
        let mut left = r.copy.left.lock().unwrap_or_else(|e| e.into_inner());
        left.0 = left.0.saturating_sub(held.len());
        if left.1.is_none() {
            left.1 = err;
        }
        drop(left);
        self.cv.notify_all();
    }
}

/// Ranges of a few per connection, so a slow connection holds back at
/// most one small range at the end: 8-128 MiB.
fn range_size(size: u64, conns: usize) -> u64 {
    (size / (conns.max(1) as u64 * 4)).clamp(8 << 20, 128 << 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_stay_within_bounds() {
        assert_eq!(range_size(1 << 30, 8), 32 << 20);
        assert_eq!(range_size(64 << 20, 8), 8 << 20);
        assert_eq!(range_size(1 << 40, 4), 128 << 20);
    }
}
