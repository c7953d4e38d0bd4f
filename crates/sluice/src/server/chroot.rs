//! ChrootDirectory, as sshd applies it (sshd_config(5); session.c's
//! safely_chroot): the path's tokens expanded for the user, every
//! component from "/" down checked to be a directory owned by root and
//! writable by no one else, then chroot(2) and chdir("/"). It runs as root
//! in the post-auth process before the uid change (privsep/postauth.rs),
//! so the whole session (internal-sftp, or any command, which then finds
//! only what the administrator put inside) lives under the new root.

use crate::users::UserInfo;
use std::ffi::CString;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// `template` with %h (home), %u (user), %U (uid) and %% expanded; the
/// result must be absolute.
pub fn expand(template: &str, u: &UserInfo) -> Result<PathBuf, String> {
    let mut out = String::new();
    let mut chars = template.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some('h') => out.push_str(&u.home),
            Some('u') => out.push_str(&u.name),
            Some('U') => out.push_str(&u.uid.to_string()),
            other => {
                return Err(format!(
                    "ChrootDirectory {template}: unknown token %{}",
                    other.map(String::from).unwrap_or_default()
                ))
            }
        }
    }
    if !out.starts_with('/') {
        return Err(format!(
            "ChrootDirectory {template}: chroot path does not begin at root"
        ));
    }
    Ok(PathBuf::from(out))
}

/// sshd's ownership rule: "/", each component, and the directory itself
/// are directories owned by root with no group or other write bit.
pub fn check(path: &std::path::Path) -> Result<(), String> {
    let text = path.to_string_lossy();
    let mut components = vec!["/".to_owned()];
    let mut at = 0;
    while let Some(i) = text.get(at + 1..).and_then(|r| r.find('/')) {
        at += i + 1;
        components.push(text.get(..=at).unwrap_or_default().to_owned());
    }
    if !text.ends_with('/') {
        components.push(text.clone().into_owned());
    }
    let last = components.len().saturating_sub(1);
    for (i, c) in components.iter().enumerate() {
        let which = if i == last { "" } else { "component " };
        let m = std::fs::metadata(c).map_err(|e| format!("stat(\"{c}\"): {e}"))?;
        if m.uid() != 0 || m.mode() & 0o022 != 0 {
            return Err(format!(
                "bad ownership or modes for chroot directory {which}\"{c}\""
            ));
        }
        if !m.is_dir() {
            return Err(format!("chroot path {which}\"{c}\" is not a directory"));
        }
    }
    Ok(())
}

/// Checks `path` and makes it the process's root, the working directory
/// "/" (as root: call before giving up privileges).
pub fn enter(path: &std::path::Path) -> Result<(), String> {
    check(path)?;
    let shown = path.display();
    let c = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| format!("chroot path \"{shown}\" holds a NUL byte"))?;
    crate::log::keep_syslog_open();
    // SAFETY: valid C strings; plain system calls.
    unsafe {
        if libc::chdir(c.as_ptr()) != 0 {
            return Err(format!(
                "Unable to chdir to chroot path \"{shown}\": {}",
                std::io::Error::last_os_error()
            ));
        }
        if libc::chroot(c.as_ptr()) != 0 {
            return Err(format!(
                "chroot(\"{shown}\"): {}",
                std::io::Error::last_os_error()
            ));
        }
        if libc::chdir(c"/".as_ptr()) != 0 {
            return Err(format!(
                "chdir(/) after chroot: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    crate::log!(Verbose, "Changed root directory to \"{shown}\"");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bob() -> UserInfo {
        UserInfo {
            name: "bob".into(),
            uid: 1001,
            gid: 1001,
            home: "/home/bob".into(),
            shell: "/bin/sh".into(),
        }
    }

    #[test]
    fn tokens_and_absolute_paths() {
        assert_eq!(
            expand("/srv/%u/%U%%", &bob()).unwrap(),
            PathBuf::from("/srv/bob/1001%")
        );
        assert_eq!(expand("%h", &bob()).unwrap(), PathBuf::from("/home/bob"));
        assert!(expand("srv/%u", &bob()).is_err());
        assert!(expand("/srv/%x", &bob()).is_err());
    }

    #[test]
    fn ownership_rule() {
        // /tmp is world-writable: a directory below it is refused there.
        let e = check(std::path::Path::new("/tmp/x")).unwrap_err();
        assert!(
            e.contains("bad ownership or modes for chroot directory component \"/tmp/\"")
                || e.contains("stat"),
            "{e}"
        );
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            assert!(check(std::path::Path::new("/usr/share")).is_ok());
        }
        let e = check(std::path::Path::new("/etc/passwd")).unwrap_err();
        assert!(e.contains("is not a directory"), "{e}");
    }
}
