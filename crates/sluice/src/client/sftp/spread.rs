//! Many small files over several connections (mscp's way, against any
//! SFTP server): when `Streams` allows more than one connection, the
//! small files of a recursive copy are dealt out in turn to this session
//! and to extra ones, each running its own many/ batch.
//! One session's round trips cap how many files a second it moves; N
//! sessions move N times as many.
//!
//! `Streams N` opens N-1 extra connections at the first small file;
//! `Streams auto` opens one more for every `FILES_PER_CONN` small files
//! seen so far (the files seen are the guess of the files to come), up
//! to parallel/'s `AUTO_MAX`, so a tree of a few files never pays for a
//! connection's setup. Extra connections are made as parallel/ makes
//! them (BatchMode); one that cannot be made costs nothing but its share,
//! which this session takes back in `Spread::take`.
//!
//! Failures: a file that fails is reported by the session that had it
//! (its name in the message) and counted; a connection that dies hands
//! the files it had not yet confirmed back to the others.

use super::options::Options;
use super::parallel::{Connector, AUTO_MAX};
use super::session::{Sftp, SftpResult};
use crate::client::streams::Streams;
use sluice_proto::sftp::Attrs;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Small files that pay for one more connection under `Streams auto`.
pub const FILES_PER_CONN: usize = 128;
/// A worker confirms its files (waits for their replies) at least this
/// often, so a dying connection hands back at most this many.
const CONFIRM_EVERY: usize = 256;

/// One small file to copy.
#[derive(Clone)]
pub(super) enum Job {
    /// Upload `local` to `remote`.
    Up { local: PathBuf, remote: Vec<u8> },
    /// Download `remote` (listed with `attrs`) to `local`.
    Down {
        remote: Vec<u8>,
        local: PathBuf,
        attrs: Attrs,
    },
}

/// One direction's batch of small files as an extra connection runs it
/// (many/'s `Uploads` and `Downloads`): each hands
/// `Spread::new` the way to make one, so this file names neither.
pub(super) trait Batch {
    /// Starts `job` (one of this batch's direction); Err ends the session.
    fn start(&mut self, s: &mut Sftp, job: Job, say: &mut dyn FnMut(&str)) -> SftpResult<()>;
    /// Waits for the replies of every file started; Ok(all went well).
    fn finish(&mut self, s: &mut Sftp, say: &mut dyn FnMut(&str)) -> SftpResult<bool>;
}

/// Makes an extra connection's batch from the workers' settings.
pub(super) type MakeBatch = fn(&Options) -> Box<dyn Batch>;

/// The extra connections of one recursive copy (ended when dropped).
pub struct Spread {
    sh: Arc<Shared>,
    seen: usize,
}

struct Shared {
    streams: Streams,
    connect: Connector,
    /// The workers' settings (no parallel copies of their own).
    o: Options,
    make: MakeBatch,
    state: Mutex<State>,
    cv: Condvar,
    failed: AtomicBool,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Job>,
    /// Connections asked for (made or not).
    opened: usize,
    starting: usize,
    live: usize,
    /// Workers with files not yet confirmed.
    busy: usize,
    closed: bool,
}

impl Spread {
    /// Some when `o` allows more than one connection; each extra one runs
    /// a batch that `make` makes.
    pub(super) fn new(o: &Options, make: MakeBatch) -> Option<Spread> {
        let p = o.parallel.as_ref()?;
        if p.streams() == Streams::Fixed(1) {
            return None;
        }
        let mut wo = o.clone();
        wo.parallel = None;
        wo.progress = false;
        Some(Spread {
            sh: Arc::new(Shared {
                streams: p.streams(),
                connect: p.connector(),
                o: wo,
                make,
                state: Mutex::new(State::default()),
                cv: Condvar::new(),
                failed: AtomicBool::new(false),
            }),
            seen: 0,
        })
    }

    /// Deals `job` out: Some(job) when this session takes it, None when it
    /// was queued for another.
    pub(super) fn offer(&mut self, job: Job) -> Option<Job> {
        self.seen += 1;
        self.grow();
        let mut st = self.sh.lock();
        let n = 1 + st.live + st.starting;
        if n == 1 || self.seen.is_multiple_of(n) {
            return Some(job);
        }
        st.queue.push_back(job);
        drop(st);
        self.sh.cv.notify_one();
        None
    }

    /// A queued file for this session to take (no worker has taken it),
    /// after waiting for the workers; None when every file is confirmed.
    pub(super) fn take(&self) -> Option<Job> {
        let mut st = self.sh.lock();
        loop {
            if let Some(j) = st.queue.pop_front() {
                return Some(j);
            }
            if st.busy == 0 {
                return None;
            }
            st = self.sh.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Whether a file failed on another connection (reported there);
    /// cleared by asking.
    pub fn failed(&self) -> bool {
        self.sh.failed.swap(false, Ordering::Relaxed)
    }

    fn grow(&mut self) {
        let mut st = self.sh.lock();
        let want = match self.sh.streams {
            Streams::Fixed(n) => n,
            Streams::Auto => (1 + self.seen / FILES_PER_CONN).min(AUTO_MAX),
        };
        if 1 + st.opened >= want || st.closed {
            return;
        }
        match self.sh.streams {
            Streams::Fixed(n) => crate::log!(
                Debug1,
                "Streams {n}: opening {} more connection(s) for small files",
                want - 1 - st.opened
            ),
            Streams::Auto => crate::log!(
                Debug1,
                "Streams auto: {} small files so far: opening connection {want} (one per {FILES_PER_CONN} files)",
                self.seen
            ),
        }
        while 1 + st.opened < want {
            st.opened += 1;
            st.starting += 1;
            let sh = self.sh.clone();
            let started = std::thread::Builder::new()
                .name("sftp-spread".into())
                .spawn(move || sh.connect_and_work());
            if let Err(e) = started {
                crate::log!(Debug1, "Streams: no thread for a connection: {e}");
                st.starting -= 1;
            }
        }
    }
}

impl Drop for Spread {
    fn drop(&mut self) {
        self.sh.lock().closed = true;
        self.sh.cv.notify_all();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn gone(&self, why: &str) {
        crate::log!(Debug1, "Streams: no extra connection: {why}");
        self.lock().starting -= 1;
        self.cv.notify_all();
    }

    fn connect_and_work(self: Arc<Self>) {
        let opts = match (self.connect)() {
            Ok(o) => o,
            Err(e) => return self.gone(&e.to_string()),
        };
        let sh = self.clone();
        super::run_quiet(opts, move |link| {
            match Sftp::init(link) {
                Ok(s) => sh.work(s),
                Err(e) => sh.gone(&e.text()),
            }
            0
        });
    }

    /// An extra connection's program: queued files until the copy ends.
    fn work(&self, mut s: Sftp) {
        {
            let mut st = self.lock();
            st.starting -= 1;
            st.live += 1;
            crate::log!(Debug1, "Streams: {} connections", 1 + st.live);
        }
        let tag = self.o.tag;
        let mut say = |m: &str| crate::errln!("{tag}{m}");
        let mut batch = (self.make)(&self.o);
        let mut taken: Vec<Job> = Vec::new();
        let dead = loop {
            let job = {
                let mut st = self.lock();
                loop {
                    if let Some(j) = st.queue.pop_front() {
                        if taken.is_empty() {
                            st.busy += 1;
                        }
                        break Some(j);
                    }
                    if !taken.is_empty() || st.closed {
                        break None;
                    }
                    st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
                }
            };
            match job {
                Some(j) => {
                    let r = batch.start(&mut s, j.clone(), &mut say);
                    taken.push(j);
                    if let Err(e) = r {
                        break Some(e);
                    }
                    if taken.len() < CONFIRM_EVERY {
                        continue;
                    }
                }
                None if taken.is_empty() => break None,
                None => {}
            }
            // Nothing queued (or many taken): confirm what this one has.
            match batch.finish(&mut s, &mut say) {
                Ok(ok) => {
                    if !ok {
                        self.failed.store(true, Ordering::Relaxed);
                    }
                    taken.clear();
                    self.lock().busy -= 1;
                    self.cv.notify_all();
                }
                Err(e) => break Some(e),
            }
        };
        let mut st = self.lock();
        if let Some(e) = dead {
            crate::log!(
                Debug1,
                "Streams: a connection failed ({e}); its {} file(s) go again",
                taken.len()
            );
            for j in taken.into_iter().rev() {
                st.queue.push_front(j);
            }
            st.busy -= 1;
        }
        st.live -= 1;
        drop(st);
        self.cv.notify_all();
        s.finish();
    }
}
