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

mod grow;
mod ranges;

use super::errors::{TransferError, TransferResult};
use super::pipeline::Pace;
use super::progress::Meter;
use super::resume::{self, Record};
use super::session::Sftp;
use crate::client::streams::Streams;
use crate::client::streams_auto::Steer;
use crate::client::{ClientError, ClientOptions};
use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// A file smaller than this goes over one connection: splitting it would
/// cost more in connection setup than it saves.
pub const MIN_SPLIT: u64 = 64 << 20;
pub use crate::client::streams_auto::AUTO_MAX;
/// Makes the options of one more connection (BatchMode on).
pub type Connector = Arc<dyn Fn() -> Result<ClientOptions, ClientError> + Send + Sync>;

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
        let file = file.try_clone().map_err(TransferError::Dup)?;
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
        self.enqueue(&copy, todo);
        if self.shared.streams == Streams::Auto {
            self.start_auto(s, up);
        }
        self.grow();
        // This connection takes ranges too, with the handle it has.
        let mut open: Open = Some((copy.clone(), handle.to_vec()));
        while let Some(r) = self.next_range(&copy) {
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

    /// Queues `copy`'s ranges for every connection.
    fn enqueue(&self, copy: &Arc<Copy>, todo: Vec<(u64, u64)>) {
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
    }

    /// The next range of `copy` for this connection, waiting (and letting
    /// connections grow) while others hold the rest; None once all are
    /// done.
    fn next_range(&self, copy: &Arc<Copy>) -> Option<Range> {
        let mut st = self.shared.lock();
        loop {
            if let Some(i) = st.queue.iter().position(|r| Arc::ptr_eq(&r.copy, copy)) {
                return st.queue.remove(i);
            }
            if copy.left.lock().unwrap_or_else(|e| e.into_inner()).0 == 0 {
                return None;
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
    }

    fn max(&self) -> usize {
        match self.shared.streams {
            Streams::Auto => AUTO_MAX,
            Streams::Fixed(n) => n,
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
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
