//! The session environment beyond the basics (sshd's do_setup_env order):
//! the client's `env` requests first (the basics override them), then
//! PAM's environment (UsePAM), SSH_AUTH_SOCK, authorized_keys `environment=` and ~/.ssh/environment
//! (both only with PermitUserEnvironment), then SetEnv from sshd_config.
//! Client env requests are bounded in count and size.

use crate::config::sshd::ServerConfig as Sshd;
use crate::keys::authorized_keys::KeyOptions;
use crate::log;
use crate::server::session::UserInfo;
use rustix::fs::OFlags;
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

/// Env requests kept per session (sshd's limit).
pub const MAX_ENV_VARS: usize = 128;
/// Longest `name=value` accepted: well under execve's 128 KiB per string,
/// which would otherwise make the command fail to start.
pub const MAX_ENV_ENTRY: usize = 32 * 1024;
/// All env requests of a session together.
pub const MAX_ENV_TOTAL: usize = 256 * 1024;
/// Longest ~/.ssh/environment read.
const MAX_ENV_FILE: u64 = 64 * 1024;

/// Why a client env request is refused; `Display` is the log's reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvRefusal {
    /// An empty name, `=` or NUL in the name, NUL in the value.
    Malformed,
    /// The session has [`MAX_ENV_VARS`] already.
    TooMany,
    /// `NAME=value` is this many bytes, past [`MAX_ENV_ENTRY`].
    TooLong(usize),
    /// Together past [`MAX_ENV_TOTAL`].
    TooMuch,
}

impl std::fmt::Display for EnvRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EnvRefusal::Malformed => f.write_str("malformed name or value"),
            EnvRefusal::TooMany => write!(f, "too many env vars (more than {MAX_ENV_VARS})"),
            EnvRefusal::TooLong(len) => {
                write!(f, "{len} bytes, more than the {MAX_ENV_ENTRY} allowed")
            }
            EnvRefusal::TooMuch => write!(
                f,
                "the session's env requests would exceed {MAX_ENV_TOTAL} bytes"
            ),
        }
    }
}

impl std::error::Error for EnvRefusal {}

/// Whether a client env request may join `current` (the session's
/// accepted ones); Err says why not, for the log.
pub fn check_request(
    name: &str,
    value: &[u8],
    current: &[(OsString, OsString)],
) -> Result<(), EnvRefusal> {
    if name.is_empty() || name.contains('=') || name.contains('\0') || value.contains(&0) {
        return Err(EnvRefusal::Malformed);
    }
    if current.len() >= MAX_ENV_VARS {
        return Err(EnvRefusal::TooMany);
    }
    let len = name.len() + 1 + value.len();
    if len > MAX_ENV_ENTRY {
        return Err(EnvRefusal::TooLong(len));
    }
    let total: usize = current.iter().map(|(k, v)| k.len() + 1 + v.len()).sum();
    if total + len > MAX_ENV_TOTAL {
        return Err(EnvRefusal::TooMuch);
    }
    Ok(())
}

/// What the server adds after the basics, in sshd's order.
pub fn server_env(
    cfg: &Sshd,
    pam: &[(OsString, OsString)],
    key: Option<&KeyOptions>,
    user: &UserInfo,
    agent: Option<(OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = pam.to_vec();
    env.extend(agent);
    if cfg.permit_user_environment {
        if let Some(k) = key {
            env.extend(k.environment.iter().map(|(n, v)| (n.into(), v.into())));
        }
        env.extend(user_environment_file(user));
    }
    for kv in &cfg.set_env {
        if let Some((k, v)) = kv.split_once('=') {
            env.push((k.into(), v.into()));
        }
    }
    env
}

/// ~/.ssh/environment: `NAME=value` lines, `#` comments. We read it as
/// root, so only a regular file the user owns, not through a symlink
/// (sshd reads it as the user).
fn user_environment_file(user: &UserInfo) -> Vec<(OsString, OsString)> {
    let path = std::path::Path::new(&user.home).join(".ssh/environment");
    let Ok(f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32)
        .open(&path)
    else {
        return Vec::new();
    };
    match f.metadata() {
        Ok(m) if m.is_file() && m.uid() == user.uid => {}
        _ => {
            log!(
                Info,
                "{}: not a regular file owned by {}, ignored",
                path.display(),
                user.name
            );
            return Vec::new();
        }
    }
    let mut text = Vec::new();
    if f.take(MAX_ENV_FILE).read_to_end(&mut text).is_err() {
        return Vec::new();
    }
    text.split(|&b| b == b'\n')
        .filter_map(|line| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let start = line.iter().position(|b| !b.is_ascii_whitespace())?;
            let line = line.get(start..)?;
            if line.first() == Some(&b'#') || line.contains(&0) {
                return None;
            }
            let eq = line.iter().position(|&b| b == b'=')?;
            let (k, v) = (line.get(..eq)?, line.get(eq + 1..)?);
            (!k.is_empty()).then(|| {
                (
                    OsString::from_vec(k.to_vec()),
                    OsString::from_vec(v.to_vec()),
                )
            })
        })
        .take(MAX_ENV_VARS)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_requests_are_bounded() {
        let mut cur = Vec::new();
        assert!(check_request("LANG", b"C", &cur).is_ok());
        assert_eq!(check_request("A=B", b"C", &cur), Err(EnvRefusal::Malformed));
        assert!(check_request("A", b"C\0", &cur).is_err());
        assert_eq!(
            check_request("BIG", &vec![b'x'; MAX_ENV_ENTRY], &cur),
            Err(EnvRefusal::TooLong(MAX_ENV_ENTRY + 4))
        );
        for i in 0..MAX_ENV_VARS {
            cur.push((format!("V{i}").into(), "x".into()));
        }
        assert!(check_request("ONE_MORE", b"x", &cur).is_err());
        let cur = vec![("V".into(), OsString::from("x".repeat(MAX_ENV_TOTAL - 100)))];
        assert!(check_request("W", &[b'y'; 200], &cur).is_err());
    }
}
