//! Login records, as sshd writes them for a session with a pty: a utmp
//! entry (USER_PROCESS while it runs, DEAD_PROCESS after), the same two
//! appended to wtmp, and the user's lastlog slot. Root's work: the
//! privsep monitor, which allocates the pty, records the login and, when
//! the connection's post-auth process is gone, the logout; the user's
//! process never touches these files. Failures are logged, never fatal
//! (sshd goes on without records too).

use crate::sys::utmp::{self, Kind, Record};
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::FileExt;

/// The files, as glibc's paths.h names them.
const WTMP: &std::ffi::CStr = c"/var/log/wtmp";
const LASTLOG: &str = "/var/log/lastlog";

/// One pty session's record: what its logout entry repeats.
struct Login {
    line: String,
    pid: i32,
}

/// The pty logins of one connection; their logouts are recorded when this
/// is dropped (the monitor drops it once the post-auth process is reaped).
pub struct Logins {
    pid: i32,
    peer: SocketAddr,
    open: Vec<Login>,
}

impl Logins {
    /// Logins of the connection from `peer` whose user's process is `pid`.
    pub fn new(pid: i32, peer: SocketAddr) -> Logins {
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
        let mut ut = entry(Kind::Login, &line, self.pid);
        ut.user = user.as_bytes().to_vec();
        ut.host = host.as_bytes().to_vec();
        ut.addr_v6 = addr_v6(self.peer.ip());
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
            write(&entry(Kind::Logout, &l.line, l.pid));
            crate::log!(Debug1, "recorded logout on {}", l.line);
        }
    }
}

impl Drop for Logins {
    fn drop(&mut self) {
        for l in self.open.drain(..) {
            write(&entry(Kind::Logout, &l.line, l.pid));
            crate::log!(Debug1, "recorded logout on {}", l.line);
        }
    }
}

/// A record for `line` with type, pid, id and the time now; the rest empty
/// (a logout names no user or host, as login(3)'s logout).
fn entry(kind: Kind, line: &str, pid: i32) -> Record {
    let line = line.as_bytes();
    Record {
        kind,
        pid,
        line: line.to_vec(),
        // The id is the line's last four bytes ("ts/3" for pts/3), as sshd's.
        id: line[line.len().saturating_sub(4)..].to_vec(),
        user: Vec::new(),
        host: Vec::new(),
        addr_v6: [0; 4],
        time: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default(),
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
fn write(ut: &Record) {
    if let Err(e) = utmp::pututxline(ut) {
        crate::log!(
            Verbose,
            "utmp: {e} (records of logged-in users are not kept)"
        );
    }
    utmp::append_wtmp(WTMP, ut);
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
        let ut = entry(Kind::Login, "pts/13", 7);
        assert_eq!(ut.id, b"s/13");
        let a = addr_v6("127.0.0.1".parse().unwrap());
        assert_eq!(a[0].to_ne_bytes(), [127, 0, 0, 1]);
        assert_eq!(&a[1..], &[0, 0, 0]);
        assert_eq!(
            addr_v6("::ffff:10.0.0.2".parse().unwrap())[0].to_ne_bytes(),
            [10, 0, 0, 2]
        );
    }
}
