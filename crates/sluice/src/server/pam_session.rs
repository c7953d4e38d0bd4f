//! The PAM steps around a login that are not authentication, as sshd runs
//! them with UsePAM yes: the account check (pam_acct_mgmt) for methods PAM
//! did not authenticate (publickey), and the session (pam_setcred and
//! pam_open_session before the user's process starts, pam_close_session
//! and pam_setcred(DELETE) after it ends), so pam_limits, pam_loginuid,
//! pam_systemd and pam_env apply to sluiced's logins as to sshd's. Both run
//! in the monitor (root), on the service PAMServiceName names. Messages modules send
//! (pam_motd, pam_mail) are logged at DEBUG1; prompts cannot be answered
//! here and fail the step. What the modules put in PAM's environment
//! (pam_env's /etc/environment and /etc/security/pam_env.conf, pam_systemd's
//! XDG_RUNTIME_DIR) goes into the user's sessions, as sshd's do_setup_env.

use crate::server::pam::{c_names, lib, strerror, PamError};
use crate::sys::pam::{
    Conversation, Handle, Message, StrItem, PAM_DELETE_CRED, PAM_ERROR_MSG, PAM_ESTABLISH_CRED,
    PAM_SUCCESS, PAM_TEXT_INFO,
};
use std::ffi::{c_int, OsString};
use std::os::unix::ffi::OsStringExt;

/// The conversation of these steps: module messages are logged, prompts
/// refused.
struct Quiet;

impl Conversation for Quiet {
    type Answer = Vec<u8>;

    fn converse(&self, msgs: &[Message]) -> Option<Vec<Option<Vec<u8>>>> {
        for m in msgs {
            if m.style != PAM_TEXT_INFO && m.style != PAM_ERROR_MSG {
                return None;
            }
            if let Some(text) = &m.text {
                crate::log!(Debug1, "PAM: {}", text.trim_end());
            }
        }
        // All empty.
        Some(vec![None; msgs.len()])
    }
}

/// A PAM handle for one user; ended on drop.
struct Pam {
    h: Handle<Quiet>,
}

impl Pam {
    fn start(service: &str, user: &str, rhost: &str) -> Result<Pam, PamError> {
        let lib = lib()?;
        let (service, user, rhost) = c_names(service, user, rhost)?;
        let h = lib.start(&service, &user, Quiet).map_err(PamError::Start)?;
        h.set_item(StrItem::Rhost, &rhost);
        h.set_item(StrItem::Tty, c"ssh");
        Ok(Pam { h })
    }

    /// One step's result `rc`; its error in PAM's words.
    fn step(&self, rc: c_int, call: &'static str) -> Result<(), PamError> {
        if rc == PAM_SUCCESS {
            return Ok(());
        }
        Err(PamError::Step {
            call,
            code: rc,
            text: strerror(&self.h, rc),
        })
    }
}

/// pam_acct_mgmt for `user` from `rhost`: an expired or locked account, or
/// an account module's refusal (pam_access, pam_nologin) ends the login
/// even when the key was right, as sshd's "Access denied for user X by PAM
/// account configuration".
pub fn account(service: &str, user: &str, rhost: &str) -> Result<(), PamError> {
    let pam = Pam::start(service, user, rhost)?;
    pam.step(pam.h.acct_mgmt(0), "pam_acct_mgmt")
}

/// An open PAM session; [`Session::close`] ends it (drop ends the handle
/// without closing the session, for paths that never opened one).
pub struct Session {
    pam: Pam,
}

impl Session {
    /// pam_setcred(ESTABLISH) and pam_open_session for `user`.
    pub fn open(service: &str, user: &str, rhost: &str) -> Result<Session, PamError> {
        let pam = Pam::start(service, user, rhost)?;
        pam.step(pam.h.setcred(PAM_ESTABLISH_CRED), "pam_setcred")?;
        pam.step(pam.h.open_session(0), "pam_open_session")?;
        Ok(Session { pam })
    }

    /// PAM's environment after the session opened (pam_getenvlist), as
    /// `(name, value)`, without the names sshd keeps PAM from setting
    /// (SSH_AUTH_SOCK, SSH_CONNECTION) and within the bounds of client env
    /// requests.
    pub fn env(&self) -> Vec<(OsString, OsString)> {
        let raw = self.pam.h.getenvlist();
        pam_env_entries(raw)
    }

    /// pam_close_session and pam_setcred(DELETE); failures are logged.
    pub fn close(self) {
        let pam = &self.pam;
        let rc = pam.h.close_session(0);
        if let Err(e) = pam.step(rc, "pam_close_session") {
            crate::log!(Verbose, "{e}");
        }
        let rc = pam.h.setcred(PAM_DELETE_CRED);
        if let Err(e) = pam.step(rc, "pam_setcred") {
            crate::log!(Verbose, "{e}");
        }
    }
}

/// `NAME=value` entries from PAM, kept as sshd keeps them: not the
/// denied names, not malformed, bounded like the client's env requests.
fn pam_env_entries(raw: Vec<Vec<u8>>) -> Vec<(OsString, OsString)> {
    use crate::server::session_env::check_request;
    let mut out: Vec<(OsString, OsString)> = Vec::new();
    for entry in raw {
        let Some(eq) = entry.iter().position(|&b| b == b'=') else {
            continue;
        };
        let (name, value) = (&entry[..eq], &entry[eq + 1..]);
        let Ok(name) = std::str::from_utf8(name) else {
            continue;
        };
        if matches!(name, "SSH_AUTH_SOCK" | "SSH_CONNECTION") {
            continue;
        }
        if let Err(e) = check_request(name, value, &out) {
            crate::log!(Verbose, "PAM environment {name} not passed on: {e}");
            continue;
        }
        out.push((name.into(), OsString::from_vec(value.to_vec())));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pam_env_keeps_what_sshd_keeps() {
        let raw = vec![
            b"LANG=C.UTF-8".to_vec(),
            b"SSH_AUTH_SOCK=/tmp/evil".to_vec(),
            b"SSH_CONNECTION=1 2 3 4".to_vec(),
            b"NOEQUALS".to_vec(),
            b"=empty".to_vec(),
            b"XDG_RUNTIME_DIR=/run/user/1000".to_vec(),
        ];
        let got = pam_env_entries(raw);
        assert_eq!(
            got,
            vec![
                ("LANG".into(), "C.UTF-8".into()),
                ("XDG_RUNTIME_DIR".into(), "/run/user/1000".into())
            ]
        );
    }
}
