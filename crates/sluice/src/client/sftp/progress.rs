//! The progress meter, in the shape of OpenSSH's progressmeter.c: file
//! name, percent, bytes, rate and ETA on one line rewritten in place
//! (about once a second), the elapsed time once done. Only drawn when
//! asked for (stdout a terminal, not -q, not batch mode).
//!
//! A recursive copy moves its small files many at a time (many/, on
//! several connections with spread.rs), so no one file has a meter
//! running: [`Tally`] prints each file's finished line as it
//! lands (the line scp leaves behind for a fast file) and, at the end, one
//! total line for the tree.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One file's meter.
pub struct Meter {
    on: bool,
    name: String,
    total: u64,
    done: u64,
    start_at: u64,
    started: Instant,
    last_draw: Option<Instant>,
}

impl Meter {
    /// A meter for `name` of `total` bytes, `already` of them there (resume).
    pub fn new(on: bool, name: &str, total: u64, already: u64) -> Meter {
        let base = name.rsplit('/').next().unwrap_or(name).to_owned();
        Meter {
            on,
            name: base,
            total,
            done: already,
            start_at: already,
            started: Instant::now(),
            last_draw: None,
        }
    }

    /// `n` more bytes moved.
    pub fn add(&mut self, n: u64) {
        self.done += n;
        if !self.on {
            return;
        }
        let now = Instant::now();
        if self
            .last_draw
            .is_none_or(|t| now.duration_since(t) >= Duration::from_secs(1))
        {
            self.last_draw = Some(now);
            self.draw(false);
        }
    }

    /// The transfer finished: the last line, with the elapsed time.
    pub fn done(&mut self) {
        if self.on {
            self.draw(true);
            crate::outln!();
        }
    }

    /// The finished line of a file moved whole since `since` (no meter
    /// ran while it was in flight).
    fn finished_line(name: &str, size: u64, since: Instant) {
        let mut m = Meter::new(true, name, size, 0);
        m.started = since;
        m.done = size;
        m.done();
    }

    fn draw(&self, finished: bool) {
        let elapsed = self.started.elapsed().as_secs_f64().max(0.001);
        let moved = self.done.saturating_sub(self.start_at);
        let rate = moved as f64 / elapsed;
        let pct = (self.done.min(self.total).saturating_mul(100))
            .checked_div(self.total)
            .unwrap_or(100) as u32;
        let secs = if finished {
            elapsed as u64
        } else if rate > 0.0 {
            (self.total.saturating_sub(self.done) as f64 / rate) as u64
        } else {
            0
        };
        let time = if secs >= 3600 {
            format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
        } else {
            format!("   {:02}:{:02}", secs / 60, secs % 60)
        };
        let width = terminal_width();
        let right = format!(
            " {pct:3}% {} {}/s {time} {}",
            units(self.done),
            units(rate as u64),
            if finished { "   " } else { "ETA" }
        );
        let room = width.saturating_sub(right.len() + 1).max(1);
        let name: String = self.name.chars().take(room).collect();
        let mut out = std::io::stdout().lock();
        let _ = write!(out, "\r{name:<room$}{right}");
        let _ = out.flush();
    }
}

/// The files of one recursive copy, shared by every connection taking a
/// share of them: one finished line per file and a total at the end, when
/// the meter is on.
#[derive(Debug)]
pub struct Tally {
    on: bool,
    started: Instant,
    /// Files and bytes so far; the lock also keeps lines whole.
    seen: Mutex<(u64, u64)>,
}

impl Tally {
    /// A tally that prints only when `on` (the meter's own switch).
    pub fn new(on: bool) -> Arc<Tally> {
        Arc::new(Tally {
            on,
            started: Instant::now(),
            seen: Mutex::new((0, 0)),
        })
    }

    /// A small file of `size` bytes landed, started at `since`: its line.
    pub fn file(&self, name: &str, size: u64, since: Instant) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        *seen = (seen.0 + 1, seen.1 + size);
        if self.on {
            Meter::finished_line(name, size, since);
        }
    }

    /// A large file landed; its own meter already drew its line.
    pub fn counted(&self, size: u64) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        *seen = (seen.0 + 1, seen.1 + size);
    }

    /// The line that ends a copy of more than one file:
    /// `1000 files, 31.9MB in 00:02, 15.9MB/s`.
    pub fn total(&self) {
        let (files, bytes) = *self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if self.on && files > 1 {
            crate::outln!("{}", total_line(files, bytes, self.started.elapsed()));
        }
    }
}

fn total_line(files: u64, bytes: u64, took: Duration) -> String {
    let secs = took.as_secs_f64().max(0.001);
    let s = took.as_secs();
    format!(
        "{files} files, {} in {:02}:{:02}, {}/s",
        units(bytes).trim_start(),
        s / 60,
        s % 60,
        units((bytes as f64 / secs) as u64).trim_start()
    )
}

/// Bytes as progressmeter.c prints them: 5 columns and a unit.
fn units(n: u64) -> String {
    const U: [&str; 7] = ["B ", "KB", "MB", "GB", "TB", "PB", "EB"];
    let mut v = n;
    let mut i = 0;
    while v >= 100_000 && i + 1 < U.len() {
        v /= 1024;
        i += 1;
    }
    format!("{v:5}{}", U.get(i).copied().unwrap_or("B "))
}

/// The terminal's width (80 when stdout is not one).
pub fn terminal_width() -> usize {
    let Ok(ws) = rustix::termios::tcgetwinsize(std::io::stdout()) else {
        return 80;
    };
    if ws.ws_col == 0 {
        80
    } else {
        ws.ws_col as usize
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn units_fit_five_columns() {
        assert_eq!(super::units(0), "    0B ");
        assert_eq!(super::units(99_999), "99999B ");
        assert_eq!(super::units(10 << 20), "10240KB");
        assert_eq!(super::units(300 << 20), "  300MB");
    }

    #[test]
    fn total_line_names_files_bytes_time_and_rate() {
        let l = super::total_line(1000, 32 << 20, std::time::Duration::from_secs(2));
        assert_eq!(l, "1000 files, 32768KB in 00:02, 16384KB/s");
    }
}
