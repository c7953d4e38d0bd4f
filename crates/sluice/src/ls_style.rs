//! How `ls -l` shows a file's mode and modification time, as OpenSSH's
//! ls_file does for sftp: the server's long names (server/sftp) and the
//! client's listings (client/sftp) print the same columns.

/// strmode(3) without its trailing space: the type letter and nine
/// permission letters, with s/S and t/T for the set-id and sticky bits.
pub fn mode_string(mode: u32) -> String {
    let kind = match mode & 0o170000 {
        0o040000 => 'd',
        0o020000 => 'c',
        0o060000 => 'b',
        0o100000 => '-',
        0o120000 => 'l',
        0o140000 => 's',
        0o010000 => 'p',
        _ => '?',
    };
    let mut s = String::from(kind);
    for (shift, special, lower, upper) in [
        (6, 0o4000, 's', 'S'),
        (3, 0o2000, 's', 'S'),
        (0, 0o1000, 't', 'T'),
    ] {
        let bits = (mode >> shift) & 7;
        s.push(if bits & 4 != 0 { 'r' } else { '-' });
        s.push(if bits & 2 != 0 { 'w' } else { '-' });
        s.push(match (bits & 1 != 0, mode & special != 0) {
            (true, true) => lower,
            (false, true) => upper,
            (true, false) => 'x',
            (false, false) => '-',
        });
    }
    s
}

/// `Nov 24 15:30` for a time within the half year before now, else
/// `Nov 24  2025` (also for times ahead of now); local time.
pub fn mtime_string(t: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let recent = now - 365 * 24 * 60 * 60 / 2 < t && now >= t;
    let Some(tm) = crate::sys::time::localtime(t) else {
        return String::new();
    };
    let fmt = if recent { c"%b %e %H:%M" } else { c"%b %e  %Y" };
    crate::sys::time::strftime(fmt, &tm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_as_strmode_prints() {
        assert_eq!(mode_string(0o100644), "-rw-r--r--");
        assert_eq!(mode_string(0o040755), "drwxr-xr-x");
        assert_eq!(mode_string(0o120777), "lrwxrwxrwx");
        assert_eq!(mode_string(0o104711), "-rws--x--x");
        assert_eq!(mode_string(0o102644), "-rw-r-Sr--");
        assert_eq!(mode_string(0o041777), "drwxrwxrwt");
        assert_eq!(mode_string(0o041776), "drwxrwxrwT");
        assert_eq!(mode_string(0), "?---------");
    }

    #[test]
    fn old_and_future_times_show_the_year() {
        assert!(mtime_string(0).ends_with("1970"), "{}", mtime_string(0));
        let ahead = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
            + 400 * 86400;
        assert!(!mtime_string(ahead).contains(':'));
    }
}
