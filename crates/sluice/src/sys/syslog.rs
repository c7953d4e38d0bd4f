//! The system log through libc's openlog and syslog (the /dev/log socket,
//! its format and reconnects are libc's; rustix has none of it).

use std::ffi::CStr;

/// A syslog facility (SyslogFacility's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facility(libc::c_int);

impl Facility {
    /// LOG_AUTH, sshd's default.
    pub const AUTH: Facility = Facility(libc::LOG_AUTH);

    /// The facility named `name` (AUTH, AUTHPRIV, DAEMON, USER,
    /// LOCAL0-7); None for another name.
    pub fn named(name: &str) -> Option<Facility> {
        Some(Facility(match name {
            "AUTH" => libc::LOG_AUTH,
            "DAEMON" => libc::LOG_DAEMON,
            "USER" => libc::LOG_USER,
            "AUTHPRIV" => libc::LOG_AUTHPRIV,
            "LOCAL0" => libc::LOG_LOCAL0,
            "LOCAL1" => libc::LOG_LOCAL1,
            "LOCAL2" => libc::LOG_LOCAL2,
            "LOCAL3" => libc::LOG_LOCAL3,
            "LOCAL4" => libc::LOG_LOCAL4,
            "LOCAL5" => libc::LOG_LOCAL5,
            "LOCAL6" => libc::LOG_LOCAL6,
            "LOCAL7" => libc::LOG_LOCAL7,
            _ => return None,
        }))
    }
}

/// A syslog priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    /// LOG_CRIT.
    Crit,
    /// LOG_ERR.
    Err,
    /// LOG_INFO.
    Info,
    /// LOG_DEBUG.
    Debug,
}

/// openlog(ident, LOG_PID, facility): later lines carry `ident` and the
/// pid. The connection is made at the first line.
pub fn open(ident: &'static CStr, facility: Facility) {
    // SAFETY: the ident is a static C string, as openlog keeps the pointer.
    unsafe { libc::openlog(ident.as_ptr(), libc::LOG_PID, facility.0) };
}

/// openlog(ident, LOG_PID | LOG_NDELAY, 0): connects now, keeping the
/// facility set by [`open`] (so lines reach syslog after a chroot hides
/// /dev/log).
pub fn connect_now(ident: &'static CStr) {
    // SAFETY: as in `open`; facility 0 keeps the one already set.
    unsafe { libc::openlog(ident.as_ptr(), libc::LOG_PID | libc::LOG_NDELAY, 0) };
}

/// syslog(priority, "%s", line): one line, sent as is.
pub fn send(priority: Priority, line: &CStr) {
    let p = match priority {
        Priority::Crit => libc::LOG_CRIT,
        Priority::Err => libc::LOG_ERR,
        Priority::Info => libc::LOG_INFO,
        Priority::Debug => libc::LOG_DEBUG,
    };
    // SAFETY: the format "%s" with one valid NUL-terminated string.
    unsafe { libc::syslog(p, c"%s".as_ptr(), line.as_ptr()) };
}
