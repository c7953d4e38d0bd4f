//! Login records, as sshd writes them for a session with a pty: a utmp
//! entry (USER_PROCESS while it runs, DEAD_PROCESS after), the same two
//! appended to wtmp, and the user's lastlog slot. Root's work: the
//! privsep monitor, which allocates the pty, records the login and, when
//! the connection's post-auth process is gone, the logout; the user's
//! process never touches these files. Failures are logged, never fatal
//! (sshd goes on without records too).

use std::ffi::CString;
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::FileExt;

/// The files, as glibc's paths.h names them.
const WTMP: &str = "/var/log/wtmp";
const LASTLOG: &str = "/var/log/lastlog";

extern "C" {
    // glibc's, not in the libc crate: appends one record to a wtmp file.
    fn updwtmpx(file: *const libc::c_char, ut: *const libc::utmpx);
}

/// One pty session's record: what its logout entry repeats.
struct Login {
    line: String,
    pid: libc::pid_t,
}

/// The pty logins of one connection; their logouts are recorded when this
/// is dropped (the monitor drops it once the post-auth process is reaped).
pub struct Logins {
    pid: libc::pid_t,
    peer: SocketAddr,
    open: Vec<Login>,
}

impl Logins {
    /// Logins of the connection from `peer` whose user's process is `pid`.
    pub fn new(pid: libc::pid_t, peer: SocketAddr) -> Logins {
        Logins {
            pid,
            peer,
            open: Vec::new(),
        }
    }

    /// Records `user` (uid `uid`) logging in on `tty` (a /dev path): utmp,
    /// wtmp and lastlog.
    pub fn login(&mut self, tty: &str, user: &str, uid: u32) {
        let line = tty.strip_prefix("/dev/").unwrap_or(tty).to_owned();
        let host = self.peer.ip().to_string();
        let mut ut = entry(libc::USER_PROCESS, &line, self.pid);
        copy(&mut ut.ut_user, user.as_bytes());
        copy(&mut ut.ut_host, host.as_bytes());
        ut.ut_addr_v6 = addr_v6(self.peer.ip());
        write(&ut);
        lastlog(uid, &line, &host);
        crate::log!(Debug1, "recorded login of {user} on {line} from {host}");
        self.open.push(Login {
            line,
            pid: self.pid,
        });
    }
}

impl Logins {
    /// The session on `tty` ended: its logout record, now.
    pub fn logout(&mut self, tty: &str) {
        let line = tty.strip_prefix("/dev/").unwrap_or(tty);
        if let Some(i) = self.open.iter().position(|l| l.line == line) {
            let l = self.open.swap_remove(i);
            write(&entry(libc::DEAD_PROCESS, &l.line, l.pid));
            crate::log!(Debug1, "recorded logout on {}", l.line);
        }
    }
}

impl Drop for Logins {
    fn drop(&mut self) {
        for l in self.open.drain(..) {
            write(&entry(libc::DEAD_PROCESS, &l.line, l.pid));
            crate::log!(Debug1, "recorded logout on {}", l.line);
        }
    }
}

/// A record for `line` with type, pid, id and the time now; the rest zero
/// (a logout names no user or host, as login(3)'s logout).
fn entry(kind: libc::c_short, line: &str, pid: libc::pid_t) -> libc::utmpx {
    // SAFETY: utmpx is plain data; all zeroes is its empty value.
    let mut ut: libc::utmpx = unsafe { std::mem::zeroed() };
    ut.ut_type = kind;
    ut.ut_pid = pid;
    let line = line.as_bytes();
    copy(&mut ut.ut_line, line);
    // The id is the line's last four bytes ("ts/3" for pts/3), as sshd's.
    copy(&mut ut.ut_id, &line[line.len().saturating_sub(4)..]);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    // The field widths differ between architectures (32-bit on x86_64).
    ut.ut_tv.tv_sec = now.as_secs() as _;
    ut.ut_tv.tv_usec = now.subsec_micros() as _;
    ut
}

/// Copies `s` into a fixed field, truncated as utmp does (no NUL needed
/// when it fills the field).
fn copy(field: &mut [libc::c_char], s: &[u8]) {
    for (d, &b) in field.iter_mut().zip(s) {
        *d = b as libc::c_char;
    }
}

/// The address as utmp holds it: IPv4 in the first word, network order.
fn addr_v6(ip: IpAddr) -> [i32; 4] {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    };
    let bytes: [u8; 16] = match ip {
        IpAddr::V4(v4) => {
            let mut b = [0; 16];
            b[..4].copy_from_slice(&v4.octets());
            b
        }
        IpAddr::V6(v6) => v6.octets(),
    };
    let mut out = [0i32; 4];
    for (o, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
        *o = i32::from_ne_bytes([c[0], c[1], c[2], c[3]]);
    }
    out
}

/// Puts `ut` in utmp (replacing the line's entry) and appends it to wtmp.
fn write(ut: &libc::utmpx) {
    // SAFETY: ut is a valid record; the utmpx calls use glibc's own state,
    // which only this (single-threaded) monitor process uses.
    unsafe {
        libc::setutxent();
        let ok = !libc::pututxline(ut).is_null();
        libc::endutxent();
        if !ok {
            crate::log!(
                Verbose,
                "utmp: {} (records of logged-in users are not kept)",
                std::io::Error::last_os_error()
            );
        }
    }
    let wtmp = CString::new(WTMP).expect("no NUL in a constant");
    // SAFETY: a NUL-terminated path and a valid record.
    unsafe { updwtmpx(wtmp.as_ptr(), ut) };
}

/// Size of glibc's `struct lastlog` on Linux: a 32-bit time, the line (32)
/// and the host (256).
const LASTLOG_SIZE: usize = 4 + 32 + 256;

/// Writes the user's lastlog slot (index: the uid), if the file exists.
fn lastlog(uid: u32, line: &str, host: &str) {
    let Ok(f) = std::fs::OpenOptions::new().write(true).open(LASTLOG) else {
        return;
    };
    let mut rec = [0u8; LASTLOG_SIZE];
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    rec[..4].copy_from_slice(&(now as u32).to_ne_bytes());
    for (d, b) in rec[4..36].iter_mut().zip(line.bytes()) {
        *d = b;
    }
    for (d, b) in rec[36..].iter_mut().zip(host.bytes()) {
        *d = b;
    }
    if let Err(e) = f.write_all_at(&rec, u64::from(uid) * LASTLOG_SIZE as u64) {
        crate::log!(Verbose, "{LASTLOG}: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_and_address_as_sshd_writes_them() {
        let ut = entry(libc::USER_PROCESS, "pts/13", 7);
        let id: Vec<u8> = ut.ut_id.iter().map(|&c| c as u8).collect();
        assert_eq!(id, b"s/13");
        let a = addr_v6("127.0.0.1".parse().unwrap());
        assert_eq!(a[0].to_ne_bytes(), [127, 0, 0, 1]);
        assert_eq!(&a[1..], &[0, 0, 0]);
        assert_eq!(
            addr_v6("::ffff:10.0.0.2".parse().unwrap())[0].to_ne_bytes(),
            [10, 0, 0, 2]
        );
    }
}
