//! The crypto pool's threads: started when first needed, parked between
//! batches, joined on drop. [`Workers::run_split`] cuts a batch into parts of
//! about equal bytes, hands all but the first to the threads by pointer, runs
//! the first itself and waits until every part is done.
//!
//! Why hand-made, and why `unsafe`: the jobs borrow the connection's buffers
//! (`CryptoJob<'_>`), so a thread that outlives the call must not see them.
//! `std::thread::scope` guarantees that but starts and joins a thread per
//! part per batch (clone, stack mapping and join: typically tens of
//! microseconds, against batches of 96 KiB to a few MiB that take from
//! about a hundred microseconds to a few milliseconds). rayon's `ThreadPool::scope` would guarantee it too, but boxes
//! every spawned closure (an allocation per part per batch) and its idle
//! workers spin and yield for a while before sleeping: CPU taken from the
//! peer when both ends share two cores, which is the case sluice tunes for.
//! What is needed is small: one caller, at most a few parts, a handoff and a
//! barrier. So the parts travel as raw pointers with their lifetime erased,
//! under one invariant:
//!
//! **SAFETY invariant.** A part handed to the workers is a sub-slice of the
//! `jobs` that `run_split` borrows mutably; parts are disjoint
//! (`split_at_mut`). Before the first part is queued a [`Barrier`] is in
//! scope whose `Drop` blocks until the count of unfinished parts is zero, and
//! a worker lowers that count only after it has stopped touching its part.
//! Every way out of `run_split` (return, or unwinding from the caller's own
//! part) drops the barrier, so the borrow of `jobs` (and of everything the
//! jobs borrow) cannot end while a worker still uses it. Workers catch a
//! panic in a part (`catch_unwind`) and still lower the count; the payload is
//! re-raised on the caller after the barrier, as `std::thread::scope` does.
//! The count and the queue are behind one mutex, which also orders the
//! workers' writes before the caller's reads. No code of ours runs under the
//! lock that could panic, and a poisoned lock is used as is.
//!
//! After fork(2) the child has none of the threads (sluice `-f` forks while
//! the session runs): the pool notices the new process id, forgets the old
//! threads without joining them and starts new ones when next needed.

use sluice_proto::transport::compress_batch::CompressJob;
use sluice_proto::transport::CryptoJob;
use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

/// One unit of work in a batch: one packet's crypto, or one run of
/// packets' compression.
pub trait Job: Send {
    /// Does the work.
    fn run(&mut self);
    /// Its size in bytes, for splitting a batch evenly.
    fn weight(&self) -> usize;
}

impl Job for CompressJob<'_> {
    fn run(&mut self) {
        CompressJob::run(self);
    }
    fn weight(&self) -> usize {
        self.len()
    }
}

impl Job for CryptoJob<'_> {
    fn run(&mut self) {
        CryptoJob::run(self);
    }
    fn weight(&self) -> usize {
        self.len()
    }
}

/// A part of a batch with its type and lifetime erased: `&mut [T]` as a
/// pointer, a length and the function that runs a `[T]`.
struct Part {
    jobs: *mut (),
    len: usize,
    run: unsafe fn(*mut (), usize),
}

// SAFETY: a Part stands for a `&mut [T]` with `T: Job`, and `Job: Send`, so
// `&mut [T]` may move to another thread; the lifetime is the module
// invariant's business.
unsafe impl Send for Part {}

impl Part {
    fn new<T: Job>(jobs: &mut [T]) -> Self {
        Part {
            jobs: jobs.as_mut_ptr().cast(),
            len: jobs.len(),
            run: run_part::<T>,
        }
    }
}

/// Runs the `[T]` a [`Part`] was made from.
///
/// # Safety
/// `jobs` and `len` come from `Part::new::<T>` and the slice is still
/// borrowed by `run_split` (the module invariant).
unsafe fn run_part<T: Job>(jobs: *mut (), len: usize) {
    // SAFETY: see the function's contract.
    let jobs = unsafe { std::slice::from_raw_parts_mut(jobs.cast::<T>(), len) };
    jobs.iter_mut().for_each(T::run);
}

#[derive(Default)]
struct State {
    /// Parts waiting for a worker (capacity kept for one per worker).
    queue: Vec<Part>,
    /// Parts handed out and not finished.
    unfinished: usize,
    /// The first panic of a part in this batch.
    panic: Option<Box<dyn Any + Send>>,
    shutdown: bool,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// Workers wait here for parts.
    work: Condvar,
    /// The caller waits here for `unfinished` to reach zero.
    done: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Waits, when dropped, until no part is unfinished.
struct Barrier<'a>(&'a Shared);

impl Drop for Barrier<'_> {
    fn drop(&mut self) {
        let mut st = self.0.lock();
        while st.unfinished > 0 {
            st = self.0.done.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// The threads of one connection's crypto pool.
pub struct Workers {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    /// The process the threads run in.
    pid: u32,
}

impl std::fmt::Debug for Workers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workers")
            .field("threads", &self.threads.len())
            .finish()
    }
}

impl Default for Workers {
    fn default() -> Self {
        Self::new()
    }
}

impl Workers {
    /// No threads yet: they start with the first batch that needs them.
    pub fn new() -> Self {
        Workers {
            shared: Arc::default(),
            threads: Vec::new(),
            pid: std::process::id(),
        }
    }

    /// Threads started (and not lost to a fork).
    pub fn started(&self) -> usize {
        self.threads.len()
    }

    /// Starts threads until there are `want` (fewer if the system refuses);
    /// returns how many there are.
    fn grow(&mut self, want: usize) -> usize {
        if !self.threads.is_empty() && self.pid != std::process::id() {
            // Forked: the threads stayed in the parent. Their handles are not
            // joinable here and the old state's lock may be held by one of
            // them, so both are left alone.
            std::mem::forget(std::mem::take(&mut self.threads));
            self.shared = Arc::default();
        }
        self.pid = std::process::id();
        if self.threads.len() >= want {
            return self.threads.len();
        }
        while self.threads.len() < want {
            let shared = Arc::clone(&self.shared);
            let spawned = std::thread::Builder::new()
                .name(format!("sluice-crypto-{}", self.threads.len() + 1))
                .spawn(move || work(&shared));
            match spawned {
                Ok(h) => self.threads.push(h),
                Err(_) => break,
            }
        }
        let n = self.threads.len();
        let mut st = self.shared.lock();
        // Empty between batches: room for a part per worker, so queuing
        // never allocates.
        st.queue.reserve(n);
        n
    }

    /// Runs `jobs` on up to `n` threads (this one included) in parts of
    /// about `total / n` bytes; `total` is the sum of the jobs' weights.
    /// Returns when every job has run. A panic in a job is raised here,
    /// after all parts have finished.
    pub fn run_split<T: Job>(&mut self, jobs: &mut [T], n: usize, total: usize) {
        let n = n.min(jobs.len());
        let n = n.min(self.grow(n.saturating_sub(1)) + 1).max(1);
        let share = total.div_ceil(n);
        let shared = &*self.shared;
        // Declared before the lock guard and before any part is queued: on
        // every way out it is dropped last and waits (module invariant).
        let barrier = Barrier(shared);
        let mut first = None;
        let mut handed = 0;
        {
            let mut st = shared.lock();
            st.panic = None;
            let mut rest = jobs;
            while !rest.is_empty() {
                let mut bytes = 0;
                let mut cut = 0;
                for j in rest.iter() {
                    if bytes >= share {
                        break;
                    }
                    bytes += j.weight();
                    cut += 1;
                }
                let (part, tail) = rest.split_at_mut(cut.max(1));
                rest = tail;
                if first.is_none() {
                    first = Some(part);
                } else {
                    st.queue.push(Part::new(part));
                    st.unfinished += 1;
                    handed += 1;
                }
            }
        }
        for _ in 0..handed {
            shared.work.notify_one();
        }
        if let Some(part) = first {
            part.iter_mut().for_each(T::run);
        }
        drop(barrier);
        let payload = shared.lock().panic.take();
        if let Some(p) = payload {
            panic::resume_unwind(p);
        }
    }

    #[cfg(test)]
    fn shared_weak(&self) -> std::sync::Weak<Shared> {
        Arc::downgrade(&self.shared)
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        if self.threads.is_empty() {
            return;
        }
        if self.pid != std::process::id() {
            std::mem::forget(std::mem::take(&mut self.threads));
            return;
        }
        self.shared.lock().shutdown = true;
        self.shared.work.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A worker: waits for a part, runs it, reports it done.
fn work(shared: &Shared) {
    loop {
        let part = {
            let mut st = shared.lock();
            loop {
                if let Some(p) = st.queue.pop() {
                    break p;
                }
                if st.shutdown {
                    return;
                }
                st = shared.work.wait(st).unwrap_or_else(PoisonError::into_inner);
            }
        };
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: the part was queued by `run_split`, whose barrier keeps
            // the slice borrowed until `unfinished` drops below (module
            // invariant); `part` is not used after that.
            unsafe { (part.run)(part.jobs, part.len) }
        }));
        let extra = {
            let mut st = shared.lock();
            let extra = match result {
                Err(p) if st.panic.is_none() => {
                    st.panic = Some(p);
                    None
                }
                Err(p) => Some(p),
                Ok(()) => None,
            };
            st.unfinished = st.unfinished.saturating_sub(1);
            if st.unfinished == 0 {
                shared.done.notify_all();
            }
            extra
        };
        // A second panic's payload, dropped outside the lock.
        drop(extra);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::thread::ThreadId;
    use std::time::Duration;

    /// A job over a borrowed buffer: fills it from its seed; records the
    /// thread it ran on; may sleep first or panic.
    struct Fill<'a> {
        buf: &'a mut [u8],
        seed: u8,
        ran_on: Option<ThreadId>,
        sleep: Duration,
        boom: bool,
    }

    impl Job for Fill<'_> {
        fn run(&mut self) {
            std::thread::sleep(self.sleep);
            if self.boom {
                panic!("job failed on purpose");
            }
            for (i, b) in self.buf.iter_mut().enumerate() {
                *b = self.seed.wrapping_mul(31).wrapping_add(i as u8) ^ (i >> 8) as u8;
            }
            self.ran_on = Some(std::thread::current().id());
        }
        fn weight(&self) -> usize {
            self.buf.len()
        }
    }

    /// Jobs over consecutive pieces of `buf` with the given sizes.
    fn jobs<'a>(buf: &'a mut [u8], sizes: &[usize]) -> Vec<Fill<'a>> {
        let mut out = Vec::new();
        let mut rest = buf;
        for (i, &n) in sizes.iter().enumerate() {
            let (piece, tail) = rest.split_at_mut(n);
            rest = tail;
            out.push(Fill {
                buf: piece,
                seed: i as u8,
                ran_on: None,
                sleep: Duration::ZERO,
                boom: false,
            });
        }
        out
    }

    const MIXED: &[usize] = &[1, 35_000, 17, 70_000, 4096, 9, 300_000, 64, 32_768, 5];

    #[test]
    fn mixed_batches_match_inline_and_reuse_the_threads() {
        let total: usize = MIXED.iter().sum();
        let mut inline = vec![0u8; total];
        jobs(&mut inline, MIXED).iter_mut().for_each(Job::run);
        let mut w = Workers::new();
        let mut threads = HashSet::new();
        for round in 0..20 {
            let mut pooled = vec![0u8; total];
            let mut js = jobs(&mut pooled, MIXED);
            w.run_split(&mut js, 2 + round % 2, total);
            assert!(js.iter().all(|j| j.ran_on.is_some()));
            threads.extend(js.iter().filter_map(|j| j.ran_on));
            drop(js);
            assert_eq!(pooled, inline, "round {round}");
        }
        // The caller and two workers, started once and used again.
        assert_eq!(w.started(), 2);
        assert!(threads.len() >= 2 && threads.len() <= 3, "{threads:?}");
        assert!(threads.contains(&std::thread::current().id()));
    }

    #[test]
    fn one_thread_or_one_job_runs_inline() {
        let mut buf = vec![0u8; 1000];
        let mut w = Workers::new();
        let mut js = jobs(&mut buf, &[1000]);
        w.run_split(&mut js, 4, 1000);
        assert_eq!(js[0].ran_on, Some(std::thread::current().id()));
        let mut js = jobs(&mut buf, &[500, 500]);
        w.run_split(&mut js, 1, 1000);
        assert!(js
            .iter()
            .all(|j| j.ran_on == Some(std::thread::current().id())));
        drop(js);
        assert_eq!(w.started(), 0);
    }

    #[test]
    fn a_panic_on_the_caller_waits_for_the_workers() {
        let mut buf = vec![0u8; 2000];
        let mut w = Workers::new();
        let mut js = jobs(&mut buf, &[1000, 1000]);
        // The caller's part fails at once; the worker's still writes into
        // the borrowed buffer 100 ms later.
        js[0].boom = true;
        js[1].sleep = Duration::from_millis(100);
        let r = panic::catch_unwind(AssertUnwindSafe(|| w.run_split(&mut js, 2, 2000)));
        assert!(r.is_err());
        // Unwinding out of run_split waited: the worker's part is done.
        assert!(js[1].ran_on.is_some());
        drop(js);
        assert!(buf[1000..].iter().any(|&b| b != 0));
    }

    #[test]
    fn a_panic_on_a_worker_reaches_the_caller_and_the_pool_goes_on() {
        let mut buf = vec![0u8; 3000];
        let mut w = Workers::new();
        let mut js = jobs(&mut buf, &[1000, 1000, 1000]);
        js[2].boom = true;
        js[0].sleep = Duration::from_millis(20);
        let r = panic::catch_unwind(AssertUnwindSafe(|| w.run_split(&mut js, 3, 3000)));
        let msg = r.expect_err("the worker's panic is raised on the caller");
        assert_eq!(msg.downcast_ref::<&str>(), Some(&"job failed on purpose"));
        assert!(js[0].ran_on.is_some() && js[1].ran_on.is_some());
        // The same threads take the next batch.
        let mut js = jobs(&mut buf, &[1000, 1000, 1000]);
        w.run_split(&mut js, 3, 3000);
        assert!(js.iter().all(|j| j.ran_on.is_some()));
        assert_eq!(w.started(), 2);
    }

    #[test]
    fn drop_joins_the_workers() {
        let mut buf = vec![0u8; 4000];
        let mut w = Workers::new();
        let mut js = jobs(&mut buf, &[1000, 1000, 1000, 1000]);
        w.run_split(&mut js, 4, 4000);
        assert_eq!(w.started(), 3);
        let weak = w.shared_weak();
        assert_eq!(weak.strong_count(), 4);
        drop(w);
        // Each thread held the shared state until it returned; joined means
        // none holds it any more.
        assert_eq!(weak.strong_count(), 0);
    }
}
