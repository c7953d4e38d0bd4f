//! A fresh private directory under a template's name (mkdtemp(3), which
//! rustix does not offer: the random name and the retries are libc's).

use std::ffi::{CString, OsString};
use std::io;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

/// Makes a directory (mode 0700, ours) named as `template` with its
/// trailing `XXXXXX` replaced by random characters (mkdtemp(3)); returns
/// its path. EINVAL for a template that does not end in six `X` or holds
/// a NUL.
pub fn make_temp_dir(template: &str) -> io::Result<PathBuf> {
    let mut buf = CString::new(template)
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?
        .into_bytes_with_nul();
    // SAFETY: `buf` is a writable NUL-terminated buffer we own; mkdtemp
    // rewrites its last six characters before the NUL in place.
    let p = unsafe { libc::mkdtemp(buf.as_mut_ptr().cast()) };
    if p.is_null() {
        return Err(io::Error::last_os_error());
    }
    buf.pop();
    Ok(PathBuf::from(OsString::from_vec(buf)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_private_directory_is_made_under_the_template() {
        let d = super::make_temp_dir("/tmp/sluice-test-XXXXXX").unwrap();
        let s = d.to_str().unwrap();
        assert!(
            s.starts_with("/tmp/sluice-test-") && !s.ends_with("XXXXXX"),
            "{s}"
        );
        use std::os::unix::fs::PermissionsExt;
        let m = std::fs::metadata(&d).unwrap();
        assert!(m.is_dir());
        assert_eq!(m.permissions().mode() & 0o777, 0o700);
        std::fs::remove_dir(&d).unwrap();
        assert!(super::make_temp_dir("/tmp/no-x").is_err());
    }
}
