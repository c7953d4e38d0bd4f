//! What the server sends in the legacy protocol, checked strictly: the
//! `C`/`D` and `T` control lines, and the names it may create.

use super::super::super::remote::plain_name;
use super::MODE_MASK;
use std::ffi::CString;

/// `mtime 0 atime 0` (microseconds ignored, as scp does).
pub(super) fn parse_times(rest: &[u8]) -> Option<(i64, i64)> {
    let s = std::str::from_utf8(rest).ok()?;
    let v: Vec<&str> = s.split(' ').collect();
    let [m, mu, a, au] = v.as_slice() else {
        return None;
    };
    for us in [mu, au] {
        us.parse::<u32>().ok().filter(|u| *u < 1_000_000)?;
    }
    Some((m.parse().ok()?, a.parse().ok()?))
}

/// `mode size name` of a C or D line.
pub(super) fn parse_item(rest: &[u8]) -> Option<(u32, u64, &[u8])> {
    let (mode, rest) = split_space(rest)?;
    let (size, name) = split_space(rest)?;
    if mode.len() != 4 || !mode.iter().all(|c| (b'0'..=b'7').contains(c)) {
        return None;
    }
    let mode = u32::from_str_radix(std::str::from_utf8(mode).ok()?, 8).ok()? & MODE_MASK;
    let size = std::str::from_utf8(size).ok()?.parse().ok()?;
    Some((mode, size, name))
}

fn split_space(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let i = b.iter().position(|c| *c == b' ')?;
    Some((b.get(..i)?, b.get(i + 1..)?))
}

/// A name the server may create: one path component, not `.` or `..`;
/// at the top level, the name asked for or one its glob matches.
pub(super) fn safe_name(name: &[u8], asked: Option<&[u8]>) -> bool {
    if name.is_empty() || !plain_name(name) {
        return false;
    }
    let Some(asked) = asked else {
        return true;
    };
    let trimmed = asked.strip_suffix(b"/").unwrap_or(asked);
    let base = trimmed.rsplit(|c| *c == b'/').next().unwrap_or(trimmed);
    if !base.iter().any(|c| matches!(c, b'*' | b'?' | b'[' | b'{')) {
        // `.` or `~`-style names: the server names the item itself.
        return base == name || base.is_empty() || base == b"." || base.starts_with(b"~");
    }
    let (Ok(p), Ok(n)) = (CString::new(base), CString::new(name)) else {
        return false;
    };
    crate::sys::glob::fnmatch(&p, &n, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_lines_parse_strictly() {
        assert_eq!(parse_item(b"0644 12 a b"), Some((0o644, 12, &b"a b"[..])));
        assert_eq!(parse_item(b"1755 0 d").map(|i| i.0), Some(0o755));
        assert_eq!(parse_item(b"644 12 a"), None);
        assert_eq!(parse_item(b"0648 12 a"), None);
        assert_eq!(parse_item(b"0644 -1 a"), None);
        assert_eq!(parse_item(b"0644 12"), None);
        assert_eq!(
            parse_times(b"1700000000 0 1700000001 0"),
            Some((1700000000, 1700000001))
        );
        assert_eq!(parse_times(b"1700000000 0 1700000001"), None);
        assert_eq!(parse_times(b"1 9999999 2 0"), None);
    }

    #[test]
    fn names_from_the_server_are_checked() {
        assert!(safe_name(b"a.txt", Some(b"/tmp/a.txt")));
        assert!(!safe_name(b"b.txt", Some(b"/tmp/a.txt")));
        assert!(safe_name(b"a.txt", Some(b"/tmp/*.txt")));
        assert!(!safe_name(b"a.sh", Some(b"/tmp/*.txt")));
        assert!(safe_name(b"dir", Some(b"dir/")));
        assert!(safe_name(b"x", None));
        for bad in [&b"../x"[..], b"..", b".", b"a/b", b""] {
            assert!(!safe_name(bad, None), "{bad:?}");
        }
    }
}
