//! Seals and opens batches of packets on several cores.
//!
//! The engine hands over one [`CryptoJob`] per packet (see
//! `sluice_proto::transport::batch`); this splits a batch into runs of about
//! equal bytes and hands them to the connection's worker threads
//! (net/crypto_workers.rs: started when first needed, parked between
//! batches, joined on drop), the calling thread taking the first run. Order
//! on the wire is the engine's business: jobs only fill disjoint slices of
//! the buffer.
//!
//! How many threads: `CryptoThreads` (1 = off, N = up to N), or by default
//! what is free. Every 250 ms [`CpuSampler`] reads the idle time of the
//! machine (/proc/stat) plus this process's own CPU time (/proc/self/stat):
//! the cores this process could use. When both ends of a transfer share the
//! cores (or anything else is busy), that is about one, and batches run
//! inline at no cost (and no worker thread is ever started).

use super::crypto_workers::Job;
use super::crypto_workers::Workers;
use sluice_proto::transport::compress_batch::CompressJob;
use sluice_proto::transport::CryptoJob;
use std::time::{Duration, Instant};

/// Below this many bytes a batch is not worth a thread.
const MIN_PARALLEL_BYTES: usize = 96 * 1024;
/// How often the free cores are re-measured.
const SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// How many threads to use, as configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CryptoThreads {
    /// Up to the cores that are free, measured while running.
    Auto,
    /// At most this many (1: all crypto on the connection's thread).
    Fixed(usize),
}

impl CryptoThreads {
    /// Parses `auto` or a positive count.
    pub fn parse(s: &str) -> Option<Self> {
        if s.eq_ignore_ascii_case("auto") {
            return Some(CryptoThreads::Auto);
        }
        match s.parse::<usize>() {
            Ok(n) if (1..=256).contains(&n) => Some(CryptoThreads::Fixed(n)),
            _ => None,
        }
    }
}

impl std::fmt::Display for CryptoThreads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CryptoThreads::Auto => f.write_str("auto"),
            CryptoThreads::Fixed(n) => write!(f, "{n}"),
        }
    }
}

/// Runs crypto batches; one per connection.
#[derive(Debug)]
pub struct CryptoPool {
    setting: CryptoThreads,
    cores: usize,
    sampler: CpuSampler,
    /// Threads the last sample allows.
    threads: usize,
    /// Cores the last sample found free for this process.
    free: Option<f64>,
    workers: Workers,
}

impl CryptoPool {
    /// A pool for this machine.
    pub fn new(setting: CryptoThreads) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = match setting {
            CryptoThreads::Fixed(n) => n.min(cores.max(1)),
            CryptoThreads::Auto => 1,
        };
        CryptoPool {
            setting,
            cores,
            sampler: CpuSampler::default(),
            threads,
            free: None,
            workers: Workers::new(),
        }
    }

    /// Batch crypto is worth turning on in the engine at all.
    pub fn enabled(&self) -> bool {
        self.cores > 1 && self.setting != CryptoThreads::Fixed(1)
    }

    /// Threads the pool uses now.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `jobs`, spread over the threads allowed now. Leaves them to the
    /// engine (which runs them inline) when one thread is all there is.
    pub fn run(&mut self, jobs: &mut [CryptoJob<'_>]) {
        self.run_jobs(jobs);
    }

    /// Runs a batch of compression jobs (a batch-capable engine's packets,
    /// see `sluice_proto::transport::compress_batch`) on the same workers,
    /// under the same rules as crypto batches.
    pub fn run_compress(&mut self, jobs: &mut [CompressJob<'_>]) {
        self.run_jobs(jobs);
    }

    fn run_jobs<T: Job>(&mut self, jobs: &mut [T]) {
        if self.setting == CryptoThreads::Auto {
            if let Some(free) = self.sampler.sample(self.cores) {
                self.free = Some(free);
                // Round down: half a free core is not worth the handoffs.
                self.threads = (free + 0.25).floor().clamp(1.0, self.cores as f64) as usize;
            }
        }
        let total: usize = jobs.iter().map(Job::weight).sum();
        let n = self.threads.min(jobs.len());
        if n < 2 || total < MIN_PARALLEL_BYTES {
            return;
        }
        self.workers.run_split(jobs, n, total);
    }

    /// Runs `jobs` on `n` threads (this one included), split by bytes,
    /// whatever the setting and the batch size: `sluice bench-crypto`.
    pub fn run_on(&mut self, jobs: &mut [CryptoJob<'_>], n: usize) {
        let total = jobs.iter().map(CryptoJob::len).sum();
        self.workers.run_split(jobs, n, total);
    }

    /// Cores the last sample found free for this process (its own use
    /// included); None before the first sample or with a fixed setting.
    pub fn free_cores(&self) -> Option<f64> {
        self.free
    }

    /// Worker threads started so far.
    pub fn started(&self) -> usize {
        self.workers.started()
    }
}

/// Measures the cores this process could use: idle time of the machine plus
/// the process's own CPU time, over the last interval.
#[derive(Debug, Default)]
pub struct CpuSampler {
    last: Option<(Instant, u64, u64, u64)>,
}

impl CpuSampler {
    /// Cores free to this process since the last sample, once per interval.
    pub fn sample(&mut self, cores: usize) -> Option<f64> {
        let now = Instant::now();
        if let Some((at, ..)) = self.last {
            if now.duration_since(at) < SAMPLE_EVERY {
                return None;
            }
        }
        let (idle, total) = machine_jiffies()?;
        let own = own_jiffies()?;
        let prev = self.last.replace((now, idle, total, own));
        let (_, idle0, total0, own0) = prev?;
        let dt = total.checked_sub(total0).filter(|d| *d > 0)? as f64;
        let di = idle.saturating_sub(idle0) as f64;
        let d_own = own.saturating_sub(own0) as f64;
        // Jiffies of all cores together: scale to cores.
        Some(cores as f64 * (di + d_own) / dt)
    }
}

/// Idle and total jiffies over all CPUs (first line of /proc/stat).
fn machine_jiffies() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let line = s.lines().next()?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal
    let idle = v.get(3)? + v.get(4).copied().unwrap_or(0);
    let total = v.iter().take(8).sum();
    Some((idle, total))
}

/// User plus system jiffies of this process, all threads.
fn own_jiffies() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = s.get(s.rfind(')')? + 2..)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 here.
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_batches_and_one_thread_start_no_worker() {
        let mut pool = CryptoPool::new(CryptoThreads::Fixed(1));
        assert!(!pool.enabled());
        pool.run(&mut []);
        assert_eq!(pool.started(), 0);
        assert_eq!(CryptoThreads::parse("auto"), Some(CryptoThreads::Auto));
        assert_eq!(CryptoThreads::parse("0"), None);
    }
}
