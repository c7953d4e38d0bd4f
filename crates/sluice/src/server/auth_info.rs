//! ExposeAuthInfo (sshd_config(5)): the methods and public credentials a
//! user authenticated with, one line per method in sshd's form (`password`,
//! `keyboard-interactive`, `publickey TYPE BASE64`), written to a file
//! that SSH_USER_AUTH names. The file is made by the user's own process
//! (post-auth, after the uid change), private, with an unguessable name in
//! /tmp as sshd's `/tmp/sshauth.XXXXXXXXXXXXXXX`, and removed when the
//! connection ends.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The longest auth info passed from the monitor (a few lines with keys;
/// certificates make the longest).
pub const MAX_AUTH_INFO: usize = 32 * 1024;

/// The line for one successful method; `key_blob` for publickey.
pub fn method_line(method: &str, key_blob: Option<&[u8]>) -> String {
    match key_blob {
        Some(blob) => {
            let key_type = sluice_proto::crypto::hostkey::blob_key_type(blob).unwrap_or("unknown");
            let b64 = crate::keys::known_hosts::base64_encode(blob);
            format!("{method} {key_type} {b64}\n")
        }
        None => format!("{method}\n"),
    }
}

/// The file SSH_USER_AUTH names; removed on drop.
pub struct AuthInfoFile {
    path: PathBuf,
}

impl AuthInfoFile {
    /// Writes `text` to a new file in /tmp, mode 0600, owned by the
    /// calling process's user.
    pub fn create(text: &str) -> std::io::Result<Self> {
        let mut last = None;
        for _ in 0..8 {
            let path = PathBuf::from(format!("/tmp/sshauth.{}", random_suffix()));
            // O_EXCL: never an existing file or a planted symlink.
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
                .open(&path)
            {
                Ok(mut f) => {
                    remove_on_signal(&path);
                    let file = AuthInfoFile { path };
                    f.write_all(text.as_bytes())?;
                    return Ok(file);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no free name")))
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for AuthInfoFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The file's path for the signal handler (one file per process).
static ON_SIGNAL: std::sync::OnceLock<std::ffi::CString> = std::sync::OnceLock::new();

/// The process also ends by SIGTERM (its monitor died: PR_SET_PDEATHSIG)
/// or SIGHUP, with no destructors run: the file goes then too.
fn remove_on_signal(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return;
    };
    if ON_SIGNAL.set(c).is_err() {
        return;
    }
    extern "C" fn handler(sig: std::ffi::c_int) {
        // Only async-signal-safe calls: unlink (rustix's, with a CStr: no
        // allocation), signal, raise.
        if let Some(p) = ON_SIGNAL.get() {
            let _ = rustix::fs::unlink(p.as_c_str());
        }
        // Back to the default action, then die of the signal.
        crate::sys::signal::default(sig);
        crate::sys::signal::raise(sig);
    }
    // The handler makes async-signal-safe calls only.
    use rustix::process::Signal;
    crate::sys::signal::set_handler(Signal::TERM.as_raw(), handler);
    crate::sys::signal::set_handler(Signal::HUP.as_raw(), handler);
}

/// 15 characters from [A-Za-z0-9], as mkstemp's template has.
fn random_suffix() -> String {
    use sluice_proto::crypto::Rng;
    const SET: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut raw = [0u8; 15];
    sluice_proto::crypto::SystemRng.fill(&mut raw);
    raw.iter()
        .map(|b| SET[usize::from(*b) % SET.len()] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_is_private_and_removed() {
        use std::os::unix::fs::PermissionsExt;
        let f = AuthInfoFile::create("password\n").unwrap();
        let p = f.path().to_path_buf();
        assert!(p.to_string_lossy().starts_with("/tmp/sshauth."));
        let m = std::fs::metadata(&p).unwrap();
        assert_eq!(m.permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "password\n");
        drop(f);
        assert!(!p.exists());
    }

    #[test]
    fn lines_as_sshd_writes_them() {
        assert_eq!(method_line("password", None), "password\n");
        let blob = [
            0, 0, 0, 11, b's', b's', b'h', b'-', b'e', b'd', b'2', b'5', b'5', b'1', b'9',
        ];
        let line = method_line("publickey", Some(&blob));
        assert!(
            line.starts_with("publickey ssh-ed25519 AAAAC3NzaC1lZDI1NTE5"),
            "{line}"
        );
    }
}
