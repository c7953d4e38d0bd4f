//! Leveled logging in OpenSSH's style (`debug1: ...`), so `-v` output
//! reads like the tools users already know: to stderr, to a file (`-E
//! log_file`, as ssh's and sshd's), or for `sluiced` running as a daemon
//! to syslog (ident `sluiced`, SyslogFacility), as sshd.

use crate::sys::syslog;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// Log levels as OpenSSH names them (`LogLevel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Level {
    /// Nothing.
    Quiet = 0,
    /// Fatal errors only.
    Fatal = 1,
    /// Errors.
    Error = 2,
    /// The default.
    Info = 3,
    /// More detail than INFO.
    Verbose = 4,
    /// `-v`.
    Debug1 = 5,
    /// `-vv`.
    Debug2 = 6,
    /// `-vvv`.
    Debug3 = 7,
}

impl Level {
    /// Parses an OpenSSH `LogLevel` value (case-insensitive); `DEBUG` means `DEBUG1`.
    pub fn parse(s: &str) -> Option<Level> {
        Some(match s.to_ascii_uppercase().as_str() {
            "QUIET" => Level::Quiet,
            "FATAL" => Level::Fatal,
            "ERROR" => Level::Error,
            "INFO" => Level::Info,
            "VERBOSE" => Level::Verbose,
            "DEBUG" | "DEBUG1" => Level::Debug1,
            "DEBUG2" => Level::Debug2,
            "DEBUG3" => Level::Debug3,
            _ => return None,
        })
    }

    /// ssh's choice: `-v` counted (`verbose`), else `-q`, else LogLevel
    /// from the configuration, else INFO.
    pub fn from_flags(verbose: u8, quiet: bool, configured: Option<&str>) -> Level {
        match verbose {
            0 if quiet => Level::Quiet,
            0 => configured.and_then(Level::parse).unwrap_or(Level::Info),
            1 => Level::Debug1,
            2 => Level::Debug2,
            _ => Level::Debug3,
        }
    }

    /// The name as `sshd -T` prints it.
    pub fn name(self) -> &'static str {
        match self {
            Level::Quiet => "QUIET",
            Level::Fatal => "FATAL",
            Level::Error => "ERROR",
            Level::Info => "INFO",
            Level::Verbose => "VERBOSE",
            Level::Debug1 => "DEBUG1",
            Level::Debug2 => "DEBUG2",
            Level::Debug3 => "DEBUG3",
        }
    }

    /// The prefix printed before a message at this level.
    fn prefix(self) -> &'static str {
        match self {
            Level::Debug1 => "debug1: ",
            Level::Debug2 => "debug2: ",
            Level::Debug3 => "debug3: ",
            _ => "",
        }
    }
}

static LEVEL: AtomicU8 = AtomicU8::new(Level::Info as u8);
static PREFIX: std::sync::OnceLock<String> = std::sync::OnceLock::new();
static SYSLOG: AtomicBool = AtomicBool::new(false);

/// Sends every later line to syslog with the ident `sluiced`, the pid and
/// `facility` (SyslogFacility: AUTH, AUTHPRIV, DAEMON, USER, LOCAL0-7).
pub fn use_syslog(facility: &str) {
    use_syslog_as(c"sluiced", facility);
}

/// [`use_syslog`] with another ident (`sluice -y`: "sluice").
pub fn use_syslog_as(ident: &'static std::ffi::CStr, facility: &str) {
    let fac = syslog::Facility::named(facility).unwrap_or(syslog::Facility::AUTH);
    syslog::open(ident, fac);
    SYSLOG.store(true, Ordering::Relaxed);
}

/// The syslog priority of a level, as sshd maps them.
fn priority(level: Level) -> syslog::Priority {
    match level {
        Level::Quiet | Level::Fatal => syslog::Priority::Crit,
        Level::Error => syslog::Priority::Err,
        Level::Info | Level::Verbose => syslog::Priority::Info,
        _ => syslog::Priority::Debug,
    }
}

/// Connects to syslog now if it is in use, so lines still reach it after
/// a chroot (server/chroot.rs) hides /dev/log.
pub fn keep_syslog_open() {
    if SYSLOG.load(Ordering::Relaxed) {
        syslog::connect_now(c"sluiced");
    }
}

/// One level more (`up`) or less verbose, within QUIET..DEBUG3 (ssh's
/// `~v` and `~V`); returns the new level.
pub fn step_level(up: bool) -> Level {
    const ALL: [Level; 8] = [
        Level::Quiet,
        Level::Fatal,
        Level::Error,
        Level::Info,
        Level::Verbose,
        Level::Debug1,
        Level::Debug2,
        Level::Debug3,
    ];
    let now = usize::from(LEVEL.load(Ordering::Relaxed)).min(ALL.len() - 1);
    let next = if up {
        (now + 1).min(ALL.len() - 1)
    } else {
        now.saturating_sub(1)
    };
    set_level(ALL[next]);
    ALL[next]
}

/// Sets the process-wide log level.
pub fn set_level(level: Level) {
    LEVEL.store(level as u8, Ordering::Relaxed);
}

/// Sets a prefix for every line (e.g. `sluiced[1234]: `); first call wins.
pub fn set_prefix(prefix: String) {
    let _ = PREFIX.set(prefix);
}

thread_local! {
    /// What every line this thread logs starts with ([`with_context`]).
    static CONTEXT: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Runs `f` with every line this thread logs meanwhile starting with
/// `context`: checks shared with logins (server/privsep/join_policy.rs)
/// keep sshd's words and name what they were run for.
pub fn with_context<T>(context: &str, f: impl FnOnce() -> T) -> T {
    struct Restore(String);
    impl Drop for Restore {
        fn drop(&mut self) {
            let old = std::mem::take(&mut self.0);
            CONTEXT.with(|c| *c.borrow_mut() = old);
        }
    }
    let old = CONTEXT.with(|c| std::mem::replace(&mut *c.borrow_mut(), context.to_owned()));
    let _restore = Restore(old);
    f()
}

/// True if messages at `level` are printed.
pub fn enabled(level: Level) -> bool {
    level as u8 <= LEVEL.load(Ordering::Relaxed)
}

/// The client's terminal is in raw mode (no output processing): log lines
/// end in "\r\n", as ssh's do, so `-v` output stays readable in a session.
pub static RAW_TERMINAL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

static SINK: std::sync::OnceLock<fn(Level, &str)> = std::sync::OnceLock::new();

/// Sends every later line to `sink` instead of syslog or stderr (a
/// chrooted pre-auth process hands its lines to the privsep monitor).
pub fn use_sink(sink: fn(Level, &str)) {
    let _ = SINK.set(sink);
}

static FILE: std::sync::OnceLock<std::fs::File> = std::sync::OnceLock::new();

/// `-E log_file` could not be opened.
#[derive(Debug)]
pub struct LogFileError {
    /// As given.
    pub path: String,
    /// Why.
    pub error: std::io::Error,
}

impl std::fmt::Display for LogFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Couldn't open logfile {}: {}",
            self.path,
            crate::io_error::describe_io_error(&self.error)
        )
    }
}

impl std::error::Error for LogFileError {}

/// `-E log_file`: every later line (and [`print`]'s messages) is appended
/// to `path` instead of going to stderr, as ssh and sshd do. The file is
/// created mode 0600; it stays open across fork and chroot. First call wins.
pub fn use_file(path: &str) -> Result<(), LogFileError> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
        .map_err(|error| LogFileError {
            path: path.to_owned(),
            error,
        })?;
    let _ = FILE.set(f);
    Ok(())
}

/// Writes `text` (a line with its end) to the log file, or to stderr.
fn emit(text: &str) {
    use std::io::Write;
    // One write per line: O_APPEND keeps lines whole when processes share the file.
    let _ = match FILE.get() {
        Some(mut f) => f.write_all(text.as_bytes()),
        None => std::io::stderr().lock().write_all(text.as_bytes()),
    };
}

/// Prints a message the user must see whatever the log level (the reason
/// a run failed): to stderr, or to the `-E` log file, as ssh's are.
pub fn print(msg: &str) {
    emit(&format!("{msg}{}", line_end()));
}

/// "\r\n" on a raw terminal (no output processing), else "\n".
fn line_end() -> &'static str {
    if RAW_TERMINAL.load(Ordering::Relaxed) && FILE.get().is_none() {
        "\r\n"
    } else {
        "\n"
    }
}

/// Writes one log line if `level` is enabled: to the sink, syslog, the
/// `-E` file or stderr.
pub fn write(level: Level, args: std::fmt::Arguments<'_>) {
    if !enabled(level) {
        return;
    }
    let msg = CONTEXT.with(|c| {
        let c = c.borrow();
        if c.is_empty() {
            args.to_string()
        } else {
            format!("{c}{args}")
        }
    });
    let msg = if ESCAPE.load(Ordering::Relaxed) {
        escape_controls(&msg)
    } else {
        msg
    };
    if let Some(sink) = SINK.get() {
        sink(level, &msg);
    } else if SYSLOG.load(Ordering::Relaxed) {
        let line = format!("{}{msg}", level.prefix()).replace('\0', "");
        if let Ok(c) = std::ffi::CString::new(line) {
            syslog::send(priority(level), &c);
        }
    } else {
        let prefix = PREFIX.get().map(String::as_str).unwrap_or("");
        emit(&format!("{prefix}{}{msg}{}", level.prefix(), line_end()));
    }
}

static ESCAPE: AtomicBool = AtomicBool::new(false);

/// From now on every message has its control characters escaped (sluiced:
/// user names, commands and versions come from the wire, and a newline in
/// one must not forge a log line), as sshd's log does for syslog.
pub fn escape_messages() {
    ESCAPE.store(true, Ordering::Relaxed);
}

/// `\n`, `\r` and `\t` in C style, other control characters (and DEL) as
/// three octal digits; everything else as it is, so escaping twice changes
/// nothing more.
pub fn escape_controls(s: &str) -> String {
    if !s.chars().any(|c| c.is_ascii_control()) {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_ascii_control() => out.push_str(&format!("\\{:03o}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

impl Level {
    /// The level numbered `n` (as `Level as u8`), for a line from another process.
    pub fn from_u8(n: u8) -> Option<Level> {
        [
            Level::Quiet,
            Level::Fatal,
            Level::Error,
            Level::Info,
            Level::Verbose,
            Level::Debug1,
            Level::Debug2,
            Level::Debug3,
        ]
        .get(usize::from(n))
        .copied()
    }
}

/// Logs at a level: `log!(Debug1, "connecting to {host}")`.
#[macro_export]
macro_rules! log {
    ($lvl:ident, $($arg:tt)*) => {
        $crate::log::write($crate::log::Level::$lvl, format_args!($($arg)*))
    };
}

/// `eprintln!` that never panics: a closed stderr (`sluiced -Z 2>&1 | head
/// -1`) loses the line, as a C program's fprintf would, instead of ending
/// the program with a panic.
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

/// `println!` that never panics on a closed stdout (`sluice -G host | head
/// -1`): the rest is dropped, as with ssh.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// `eprint!` that never panics (see [`errln!`]).
#[macro_export]
macro_rules! err {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr().lock(), $($arg)*);
    }};
}

/// `print!` that never panics (see [`outln!`]).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout().lock(), $($arg)*);
    }};
}

#[cfg(test)]
mod tests {
    #[test]
    fn control_characters_are_escaped_once() {
        let forged = "bob\nsluiced[1]: Accepted password for root\x1b[2J\x7f";
        let e = super::escape_controls(forged);
        assert_eq!(
            e,
            "bob\\nsluiced[1]: Accepted password for root\\033[2J\\177"
        );
        assert_eq!(super::escape_controls(&e), e);
        assert_eq!(super::escape_controls("ünïcode ok"), "ünïcode ok");
    }

    #[test]
    fn context_prefixes_this_threads_lines_for_a_while() {
        fn seen() -> String {
            super::CONTEXT.with(|c| c.borrow().clone())
        }
        let inner = super::with_context("join 1: ", || {
            std::thread::spawn(|| assert_eq!(seen(), ""))
                .join()
                .unwrap();
            seen()
        });
        assert_eq!(inner, "join 1: ");
        assert_eq!(seen(), "", "restored");
        let caught = std::panic::catch_unwind(|| super::with_context("x: ", || panic!("inside")));
        assert!(caught.is_err());
        assert_eq!(seen(), "", "restored after a panic");
    }
}
