//! One run of `sluice bench`: a client process (sluice or ssh) moving
//! bytes to or from memory at the far end (`cat > /dev/null`, `cat
//! /dev/zero`) for a set time, timed from the moment its connection takes
//! data to the moment it is done, with the client's CPU time.
//!
//! The rate is taken over the run's second half: from the moment half the
//! run's time has passed since the first MiB left for the client, so
//! neither connection setup nor TCP's ramp is counted, whichever client it
//! is (sluice takes its input during the handshake, before its channel is
//! open; ssh only after). The clock stops when the client exits after
//! its input ended (upload: everything sent and acknowledged by the far
//! end's `cat` exiting) or when the run's time is up (download: the bytes
//! that arrived by then). A watchdog kills a client that stops moving.

use crate::net::metrics::system::cpu_children;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bytes per write or read.
const CHUNK: usize = 1 << 20;
/// A client that moved nothing for this long is killed.
const STALL: Duration = Duration::from_secs(20);
/// The most one run moves, whatever its time.
const MAX_BYTES: u64 = 64 << 30;

/// Which way the bytes go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    /// To the server (`cat > /dev/null` there).
    Up,
    /// From the server (`cat /dev/zero` there).
    Down,
}

impl Direction {
    /// "up" or "down".
    pub(super) fn word(self) -> &'static str {
        match self {
            Direction::Up => "up",
            Direction::Down => "down",
        }
    }
}

/// What one run does.
#[derive(Debug, Clone)]
pub(super) struct Spec {
    /// What the table calls it.
    pub(super) name: String,
    /// What data: "random", "text", a file's name, "zeros".
    pub(super) data_name: String,
    /// The client program (this sluice, or ssh).
    pub(super) program: PathBuf,
    /// Its options before the user's (ours win where ssh takes the first
    /// value: -o).
    pub(super) args: Vec<String>,
    /// Up or down.
    pub(super) direction: Direction,
    /// For uploads: the bytes sent, over and over.
    pub(super) data: Arc<Vec<u8>>,
}

/// What one run measured.
#[derive(Debug, Clone, Default)]
pub(super) struct Outcome {
    /// Bytes moved while the clock ran.
    pub(super) bytes: u64,
    /// Seconds the clock ran.
    pub(super) secs: f64,
    /// Bytes and seconds of the run's second half, which the rate is of.
    pub(super) steady: Option<(u64, f64)>,
    /// The client's user+system CPU seconds, the whole run.
    pub(super) cpu: f64,
    /// Why the run failed (its last error line), if it did.
    pub(super) error: Option<String>,
}

impl Outcome {
    /// Megabytes (1e6) per second.
    pub(super) fn rate(&self) -> f64 {
        let (bytes, secs) = self
            .steady
            .filter(|(_, s)| *s > 0.0)
            .unwrap_or((self.bytes, self.secs));
        if secs > 0.0 && self.error.is_none() {
            bytes as f64 / secs / 1e6
        } else {
            0.0
        }
    }

    /// The client's CPU time as a share of the wall time (1.0: one core).
    pub(super) fn cpu_share(&self) -> f64 {
        if self.secs > 0.0 {
            self.cpu / self.secs
        } else {
            0.0
        }
    }
}

/// Kills the client when `moved` stops growing for [`STALL`], until `done`.
fn watchdog(pid: u32, moved: Arc<AtomicU64>, done: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let mut last = (0, Instant::now());
        while !done.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(200));
            let now = moved.load(Ordering::Relaxed);
            if now != last.0 {
                last = (now, Instant::now());
            } else if last.1.elapsed() > STALL {
                if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
                return;
            }
        }
    });
}

/// The last non-empty line of what the client said on stderr.
fn last_line(text: &str) -> Option<String> {
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_owned)
}

/// Runs `spec` against the destination in `user_args` for `secs` seconds;
/// `progress(bytes, secs)` is called as bytes move.
pub(super) fn run(
    spec: &Spec,
    user_args: &[String],
    secs: f64,
    progress: &mut dyn FnMut(u64, f64),
) -> Outcome {
    let remote = match spec.direction {
        Direction::Up => "cat > /dev/null",
        Direction::Down => "cat /dev/zero",
    };
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .args(user_args)
        .arg(remote)
        .stderr(Stdio::piped());
    match spec.direction {
        Direction::Up => cmd.stdin(Stdio::piped()).stdout(Stdio::null()),
        Direction::Down => cmd.stdin(Stdio::null()).stdout(Stdio::piped()),
    };
    let cpu0 = cpu_children().as_secs_f64();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Outcome {
                error: Some(format!("{}: {e}", spec.program.display())),
                ..Outcome::default()
            }
        }
    };
    let stderr = child.stderr.take().map(|mut e| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = e.read_to_string(&mut s);
            s
        })
    });
    let moved = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    watchdog(child.id(), moved.clone(), done.clone());
    let mut meter = Meter {
        limit: Duration::from_secs_f64(secs),
        clock: None,
        half: None,
        total: 0,
        moved,
    };
    let mut stopped_at = None;
    let failed = match spec.direction {
        Direction::Up => feed(child.stdin.take(), &spec.data, &mut meter, progress),
        Direction::Down => {
            let failed = drain(child.stdout.take(), &mut meter, progress);
            // Time is up: the bytes are counted, the client is stopped.
            if failed.is_none() {
                stopped_at = Some(Instant::now());
            }
            let _ = child.kill();
            failed
        }
    };
    let Meter {
        clock, half, total, ..
    } = meter;
    let status = child.wait();
    let end = stopped_at.unwrap_or_else(Instant::now);
    done.store(true, Ordering::Relaxed);
    let said = stderr.and_then(|h| h.join().ok()).unwrap_or_default();
    let cpu = cpu_children().as_secs_f64() - cpu0;
    let error = match status {
        _ if stopped_at.is_some() => None,
        Ok(s) if s.success() && failed.is_none() => None,
        Ok(s) => Some(
            last_line(&said)
                .or(failed)
                .unwrap_or_else(|| match s.code() {
                    Some(c) => format!("exit status {c}"),
                    None => "killed (stalled)".into(),
                }),
        ),
        Err(e) => Some(format!("waiting for the client: {e}")),
    };
    let (bytes, secs) = match clock {
        Some((t0, b0)) => (total - b0, end.duration_since(t0).as_secs_f64()),
        None => (0, 0.0),
    };
    let steady = half.map(|(t, b)| (total - b, end.duration_since(t).as_secs_f64()));
    Outcome {
        bytes,
        secs,
        steady,
        cpu,
        error,
    }
}

/// Bytes moved and when: the clock starts at the first bytes, the steady
/// rate is taken from the second half on.
struct Meter {
    limit: Duration,
    clock: Option<(Instant, u64)>,
    half: Option<(Instant, u64)>,
    total: u64,
    /// What the watchdog sees.
    moved: Arc<AtomicU64>,
}

impl Meter {
    /// `n` more bytes; true when the time (or the byte cap) is up.
    fn count(&mut self, n: usize, progress: &mut dyn FnMut(u64, f64)) -> bool {
        self.total += n as u64;
        self.moved.store(self.total, Ordering::Relaxed);
        let (t0, b0) = *self.clock.get_or_insert((Instant::now(), self.total));
        progress(self.total - b0, t0.elapsed().as_secs_f64());
        if self.half.is_none() && t0.elapsed() >= self.limit / 2 {
            self.half = Some((Instant::now(), self.total));
        }
        t0.elapsed() >= self.limit || self.total >= MAX_BYTES
    }
}

/// An upload: `data` over and over into the client's stdin until the time
/// is up, then EOF (the client finishes and exits). Some(why) if it failed.
fn feed(
    mut input: Option<std::process::ChildStdin>,
    data: &[u8],
    meter: &mut Meter,
    progress: &mut dyn FnMut(u64, f64),
) -> Option<String> {
    let mut at = 0usize;
    while let Some(w) = input.as_mut() {
        let end = (at + CHUNK).min(data.len());
        let chunk = data.get(at..end).unwrap_or_default();
        if let Err(e) = w.write_all(chunk) {
            return Some(format!("writing to the client: {e}"));
        }
        at = if end >= data.len() { 0 } else { end };
        if meter.count(chunk.len(), progress) {
            input = None;
        }
    }
    None
}

/// A download: the client's stdout read until the time is up.
fn drain(
    mut out: Option<std::process::ChildStdout>,
    meter: &mut Meter,
    progress: &mut dyn FnMut(u64, f64),
) -> Option<String> {
    let mut buf = vec![0u8; CHUNK];
    while let Some(r) = out.as_mut() {
        match r.read(&mut buf) {
            Ok(0) => return Some("the stream ended early".into()),
            Ok(n) => {
                if meter.count(n, progress) {
                    out = None;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Some(format!("reading from the client: {e}")),
        }
    }
    None
}
