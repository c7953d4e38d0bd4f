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

/// Why ChrootDirectory could not be applied; `Display` is sshd's log text.
#[derive(Debug)]
pub enum ChrootError {
    /// A `%` token other than %h, %u, %U, %% (None: `%` at the end).
    UnknownToken {
        /// The ChrootDirectory value.
        template: String,
        /// The character after `%`.
        token: Option<char>,
    },
    /// The expanded path is not absolute.
    NotAbsolute {
        /// The ChrootDirectory value.
        template: String,
    },
    /// A component could not be stat'ed.
    Stat {
        /// The component's path.
        path: String,
        /// Why.
        err: std::io::Error,
    },
    /// A component not owned by root, or group or other writable.
    BadOwnership {
        /// A parent component (true) or the directory itself.
        component: bool,
        /// Its path.
        path: String,
    },
    /// A component that is not a directory.
    NotDirectory {
        /// A parent component (true) or the directory itself.
        component: bool,
        /// Its path.
        path: String,
    },
    /// The path holds a NUL byte.
    NulByte(PathBuf),
    /// chdir to the path failed.
    Chdir(PathBuf, std::io::Error),
    /// chroot(2) failed.
    Chroot(PathBuf, std::io::Error),
    /// chdir("/") after the chroot failed.
    ChdirRoot(std::io::Error),
}

impl std::fmt::Display for ChrootError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let which = |c: &bool| if *c { "component " } else { "" };
        match self {
            ChrootError::UnknownToken { template, token } => write!(
                f,
                "ChrootDirectory {template}: unknown token %{}",
                token.map(String::from).unwrap_or_default()
            ),
            ChrootError::NotAbsolute { template } => write!(
                f,
                "ChrootDirectory {template}: chroot path does not begin at root"
            ),
            ChrootError::Stat { path, err } => write!(f, "stat(\"{path}\"): {err}"),
            ChrootError::BadOwnership { component, path } => write!(
                f,
                "bad ownership or modes for chroot directory {}\"{path}\"",
                which(component)
            ),
            ChrootError::NotDirectory { component, path } => write!(
                f,
                "chroot path {}\"{path}\" is not a directory",
                which(component)
            ),
            ChrootError::NulByte(p) => {
                write!(f, "chroot path \"{}\" holds a NUL byte", p.display())
            }
            ChrootError::Chdir(p, e) => {
                write!(f, "Unable to chdir to chroot path \"{}\": {e}", p.display())
            }
            ChrootError::Chroot(p, e) => write!(f, "chroot(\"{}\"): {e}", p.display()),
            ChrootError::ChdirRoot(e) => write!(f, "chdir(/) after chroot: {e}"),
        }
    }
}

impl std::error::Error for ChrootError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ChrootError::Stat { err, .. }
            | ChrootError::Chdir(_, err)
            | ChrootError::Chroot(_, err)
            | ChrootError::ChdirRoot(err) => Some(err),
            _ => None,
        }
    }
}

/// `template` with %h (home), %u (user), %U (uid) and %% expanded; the
/// result must be absolute.
pub fn expand(template: &str, u: &UserInfo) -> Result<PathBuf, ChrootError> {
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
            token => {
                return Err(ChrootError::UnknownToken {
                    template: template.to_owned(),
                    token,
                })
            }
        }
    }
    if !out.starts_with('/') {
        return Err(ChrootError::NotAbsolute {
            template: template.to_owned(),
        });
    }
    Ok(PathBuf::from(out))
}

/// sshd's ownership rule: "/", each component, and the directory itself
/// are directories owned by root with no group or other write bit.
pub fn check(path: &std::path::Path) -> Result<(), ChrootError> {
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
        let component = i != last;
        let m = std::fs::metadata(c).map_err(|err| ChrootError::Stat {
            path: c.clone(),
            err,
        })?;
        if m.uid() != 0 || m.mode() & 0o022 != 0 {
            return Err(ChrootError::BadOwnership {
                component,
                path: c.clone(),
            });
        }
        if !m.is_dir() {
            return Err(ChrootError::NotDirectory {
                component,
                path: c.clone(),
            });
        }
    }
    Ok(())
}

/// Checks `path` and makes it the process's root, the working directory
/// "/" (as root: call before giving up privileges).
pub fn enter(path: &std::path::Path) -> Result<(), ChrootError> {
    check(path)?;
    let shown = path.display();
    let c = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| ChrootError::NulByte(path.to_owned()))?;
    crate::log::keep_syslog_open();
    rustix::process::chdir(c.as_c_str())
        .map_err(|e| ChrootError::Chdir(path.to_owned(), e.into()))?;
    rustix::process::chroot(c.as_c_str())
        .map_err(|e| ChrootError::Chroot(path.to_owned(), e.into()))?;
    rustix::process::chdir(c"/").map_err(|e| ChrootError::ChdirRoot(e.into()))?;
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
        assert!(matches!(
            expand("srv/%u", &bob()),
            Err(ChrootError::NotAbsolute { .. })
        ));
        let e = expand("/srv/%x", &bob()).unwrap_err();
        assert!(matches!(
            e,
            ChrootError::UnknownToken {
                token: Some('x'),
                ..
            }
        ));
        assert_eq!(e.to_string(), "ChrootDirectory /srv/%x: unknown token %x");
        assert_eq!(
            expand("/srv/%", &bob()).unwrap_err().to_string(),
            "ChrootDirectory /srv/%: unknown token %"
        );
    }

    #[test]
    fn ownership_rule() {
        // /tmp is world-writable: a directory below it is refused there.
        let e = check(std::path::Path::new("/tmp/x")).unwrap_err();
        assert!(matches!(
            e,
            ChrootError::BadOwnership {
                component: true,
                ..
            } | ChrootError::Stat { .. }
        ));
        let e = e.to_string();
        assert!(
            e.contains("bad ownership or modes for chroot directory component \"/tmp/\"")
                || e.contains("stat"),
            "{e}"
        );
        if rustix::process::geteuid().is_root() {
            assert!(check(std::path::Path::new("/usr/share")).is_ok());
        }
        let e = check(std::path::Path::new("/etc/passwd")).unwrap_err();
        assert!(matches!(
            e,
            ChrootError::NotDirectory {
                component: false,
                ..
            }
        ));
        let e = e.to_string();
        assert!(e.contains("is not a directory"), "{e}");
    }
}
