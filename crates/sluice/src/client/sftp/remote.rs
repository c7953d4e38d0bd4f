//! Remote paths as sftp treats them: made absolute against the remote
//! working directory, and globbed (`*`, `?`, `[...]` in the last
//! component, fnmatch(3) rules, a leading dot matched only explicitly).

use super::session::{Sftp, SftpResult};
use sluice_proto::sftp::Attrs;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// Whether a name the server lists names a file in that directory: no
/// `/`, not `.` or `..`. Others are dropped, so a server cannot steer
/// where a copy lands.
pub fn plain_name(name: &[u8]) -> bool {
    !(name.contains(&b'/') || name == b"." || name == b"..")
}

/// A remote name or path as a local path, byte for byte.
pub fn path_of(b: &[u8]) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(b))
}

/// `p` against the working directory `cwd` (absolute).
pub fn absolute(cwd: &[u8], p: &[u8]) -> Vec<u8> {
    if p.first() == Some(&b'/') {
        return p.to_vec();
    }
    if p.is_empty() || p == b"." {
        return cwd.to_vec();
    }
    let mut out = cwd.to_vec();
    if out.last() != Some(&b'/') {
        out.push(b'/');
    }
    out.extend_from_slice(p);
    out
}

/// The last component of `p` (trailing slashes ignored).
pub fn basename(p: &[u8]) -> &[u8] {
    let t = match p.iter().rposition(|b| *b != b'/') {
        Some(i) => p.get(..=i).unwrap_or_default(),
        None => return p,
    };
    match t.iter().rposition(|b| *b == b'/') {
        Some(i) => t.get(i + 1..).unwrap_or_default(),
        None => t,
    }
}

/// `dir/name`.
pub fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut out = dir.to_vec();
    if !out.is_empty() && out.last() != Some(&b'/') {
        out.push(b'/');
    }
    out.extend_from_slice(name);
    out
}

/// Whether `p` holds glob characters.
pub fn has_glob(p: &[u8]) -> bool {
    p.iter().any(|b| matches!(b, b'*' | b'?' | b'['))
}

/// fnmatch(3) with FNM_PERIOD: a leading dot only matches a dot.
pub fn fnmatch(pattern: &[u8], name: &[u8]) -> bool {
    let (Ok(p), Ok(n)) = (
        std::ffi::CString::new(pattern),
        std::ffi::CString::new(name),
    ) else {
        return false;
    };
    crate::sys::glob::fnmatch(&p, &n, true)
}

/// The absolute paths `p` names with their attributes: itself when it
/// has no glob characters (whether or not it exists: the caller's request
/// reports that), else the matches in its directory, sorted. An empty list
/// means the pattern matched nothing.
pub fn glob(s: &mut Sftp, cwd: &[u8], p: &[u8]) -> SftpResult<Vec<(Vec<u8>, Option<Attrs>)>> {
    let abs = absolute(cwd, p);
    if !has_glob(&abs) {
        return Ok(vec![(abs, None)]);
    }
    let (dir, pat) = match abs.iter().rposition(|b| *b == b'/') {
        Some(0) => (b"/".to_vec(), abs.get(1..).unwrap_or_default().to_vec()),
        Some(i) => (
            abs.get(..i).unwrap_or_default().to_vec(),
            abs.get(i + 1..).unwrap_or_default().to_vec(),
        ),
        None => (cwd.to_vec(), abs.clone()),
    };
    if has_glob(&dir) {
        // Globs in directory components are not expanded (see README).
        return Ok(Vec::new());
    }
    let entries = match s.read_dir(&dir) {
        Ok(e) => e,
        Err(super::session::SftpError::Remote { .. }) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out: Vec<(Vec<u8>, Option<Attrs>)> = entries
        .into_iter()
        .filter(|e| plain_name(&e.filename))
        .filter(|e| fnmatch(&pat, &e.filename))
        .map(|e| (join(&dir, &e.filename), Some(e.attrs)))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(absolute(b"/home/u", b"x"), b"/home/u/x");
        assert_eq!(absolute(b"/", b"x"), b"/x");
        assert_eq!(absolute(b"/h", b"/y"), b"/y");
        assert_eq!(basename(b"/a/b/"), b"b");
        assert_eq!(basename(b"b"), b"b");
        assert_eq!(join(b"/", b"x"), b"/x");
        assert!(fnmatch(b"*.txt", b"a.txt"));
        assert!(!fnmatch(b"*", b".hidden"));
        assert!(fnmatch(b"\xff*", b"\xff\xfe"));
    }
}
