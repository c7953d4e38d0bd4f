//! Login records in utmp and wtmp (glibc's pututxline and updwtmpx): file
//! formats and locking of the C library, which rustix does not offer.
//!
//! A [`Record`] is plain Rust data; it becomes a `struct utmpx` here, each
//! text field truncated to its width as utmp does (no NUL needed when it
//! fills the field).

use std::ffi::CStr;
use std::io;
use std::sync::Mutex;
use std::time::Duration;

extern "C" {
    // glibc's, not in the libc crate: appends one record to a wtmp file.
    fn updwtmpx(file: *const libc::c_char, ut: *const libc::utmpx);
}

/// What a record says of its line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A user logged in (USER_PROCESS).
    Login,
    /// The line's session ended (DEAD_PROCESS).
    Logout,
}

/// One utmp/wtmp record; fields left empty are zero in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Login or logout.
    pub kind: Kind,
    /// The session's process.
    pub pid: i32,
    /// The terminal without `/dev/` (`pts/3`).
    pub line: Vec<u8>,
    /// The line's id (4 bytes kept).
    pub id: Vec<u8>,
    /// The user's name.
    pub user: Vec<u8>,
    /// The remote host.
    pub host: Vec<u8>,
    /// The remote address as utmp holds it (IPv4 in the first word).
    pub addr_v6: [i32; 4],
    /// The time, since the epoch.
    pub time: Duration,
}

/// Copies `s` into a fixed field, truncated.
fn copy(field: &mut [libc::c_char], s: &[u8]) {
    for (d, &b) in field.iter_mut().zip(s) {
        *d = b as libc::c_char;
    }
}

impl Record {
    /// The C record.
    fn utmpx(&self) -> libc::utmpx {
        // SAFETY: utmpx is plain data; all zeroes is its empty value.
        let mut ut: libc::utmpx = unsafe { std::mem::zeroed() };
        ut.ut_type = match self.kind {
            Kind::Login => libc::USER_PROCESS,
            Kind::Logout => libc::DEAD_PROCESS,
        };
        ut.ut_pid = self.pid;
        copy(&mut ut.ut_line, &self.line);
        copy(&mut ut.ut_id, &self.id);
        copy(&mut ut.ut_user, &self.user);
        copy(&mut ut.ut_host, &self.host);
        ut.ut_addr_v6 = self.addr_v6;
        // The field widths differ between architectures (32-bit on x86_64).
        ut.ut_tv.tv_sec = self.time.as_secs() as _;
        ut.ut_tv.tv_usec = self.time.subsec_micros() as _;
        ut
    }
}

/// Serializes the utmpx calls, whose position in the file is glibc's
/// global state.
static UTMP: Mutex<()> = Mutex::new(());

/// Puts `rec` in utmp, replacing the entry of its line (setutxent,
/// pututxline, endutxent); the error is pututxline's.
pub fn pututxline(rec: &Record) -> io::Result<()> {
    let ut = rec.utmpx();
    let _held = UTMP.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: `ut` is a valid record, only read; glibc's utmp state is used
    // by no other thread meanwhile (the lock above; nothing else in the
    // program calls these functions).
    unsafe {
        libc::setutxent();
        let r = if libc::pututxline(&ut).is_null() {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        };
        libc::endutxent();
        r
    }
}

/// Appends `rec` to the wtmp file `file` (updwtmpx, which locks the file
/// itself); failures are not reported (glibc's returns nothing).
pub fn append_wtmp(file: &CStr, rec: &Record) {
    let ut = rec.utmpx();
    // SAFETY: a NUL-terminated path and a valid record, both only read.
    unsafe { updwtmpx(file.as_ptr(), &ut) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_truncated_to_their_width() {
        let rec = Record {
            kind: Kind::Login,
            pid: 7,
            line: b"pts/13".to_vec(),
            id: b"s/13xyz".to_vec(),
            user: vec![b'u'; 100],
            host: b"192.0.2.1".to_vec(),
            addr_v6: [1, 2, 3, 4],
            time: Duration::from_micros(5_000_007),
        };
        let ut = rec.utmpx();
        let id: Vec<u8> = ut.ut_id.iter().map(|&c| c as u8).collect();
        assert_eq!(id, b"s/13");
        assert_eq!(ut.ut_user.len(), 32);
        assert_eq!(ut.ut_type, libc::USER_PROCESS);
        assert_eq!((ut.ut_tv.tv_sec, ut.ut_tv.tv_usec), (5, 7));
    }
}
