//! File-system calls that rustix lacks or gives other semantics: truncate
//! by path, fchmodat with AT_SYMLINK_NOFOLLOW as glibc does it, and a
//! thread's own cwd and umask (unshare(CLONE_FS)).

use std::ffi::CStr;
use std::io;

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets the size of the file at `path` (truncate(2)), following symlinks;
/// rustix has only ftruncate, and opening the file first would need read
/// or write access the call does not (and would block on a FIFO).
pub fn truncate(path: &CStr, len: u64) -> io::Result<()> {
    let len = libc::off_t::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: a valid C string; truncate(2) keeps no pointer to it.
    check(unsafe { libc::truncate(path.as_ptr(), len) })
}

/// Sets the permission bits of `path` itself, not following a final
/// symlink: fchmodat(AT_FDCWD, path, mode, AT_SYMLINK_NOFOLLOW). glibc
/// changes any file but a symlink (EOPNOTSUPP for one, as Linux cannot
/// chmod a link); rustix's chmodat refuses every path with this flag.
pub fn chmod_nofollow(path: &CStr, mode: u32) -> io::Result<()> {
    // SAFETY: a valid C string; fchmodat keeps no pointer to it.
    check(unsafe {
        libc::fchmodat(
            libc::AT_FDCWD,
            path.as_ptr(),
            mode as libc::mode_t,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })
}

/// Gives the calling thread its own cwd, root and umask
/// (unshare(CLONE_FS)), so a chdir or umask in it leaves the other threads
/// alone. rustix marks unshare unsafe because of the flags that change what
/// the process may assume (CLONE_FILES, CLONE_NEWUSER, ...); CLONE_FS
/// only separates these three attributes, which no Rust code relies on
/// being shared.
pub fn unshare_fs() -> io::Result<()> {
    // SAFETY: unshare(CLONE_FS) copies this thread's fs attributes into
    // its own; memory, descriptors and credentials stay shared.
    check(unsafe { libc::unshare(libc::CLONE_FS) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn truncate_and_chmod_by_path() {
        let dir = std::env::temp_dir().join(format!("sluice-sys-fs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("f");
        std::fs::write(&f, b"hello world").unwrap();
        let c = std::ffi::CString::new(f.to_str().unwrap()).unwrap();
        truncate(&c, 5).unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"hello");
        chmod_nofollow(&c, 0o600).unwrap();
        let mode = std::fs::metadata(&f).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let l = dir.join("l");
        std::os::unix::fs::symlink(&f, &l).unwrap();
        let cl = std::ffi::CString::new(l.to_str().unwrap()).unwrap();
        let e = chmod_nofollow(&cl, 0o644).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
