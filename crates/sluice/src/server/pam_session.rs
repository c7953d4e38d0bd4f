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

use crate::server::pam::{
    c_names, lib, strerror, Handle, Lib, PamConv, PamError, PamMessage, PamResponse, MAX_NUM_MSG,
    PAM_BUF_ERR, PAM_CONV_ERR, PAM_ERROR_MSG, PAM_RHOST, PAM_SUCCESS, PAM_TEXT_INFO, PAM_TTY,
};
use std::ffi::{c_int, c_void, CStr, OsString};
use std::os::unix::ffi::OsStringExt;

const PAM_ESTABLISH_CRED: c_int = 0x2;
const PAM_DELETE_CRED: c_int = 0x4;

/// A PAM handle for one user; ended on drop.
struct Pam {
    lib: &'static Lib,
    h: Handle,
    /// The conversation PAM points at; kept alive as long as the handle.
    _conv: Box<PamConv>,
}

impl Pam {
    fn start(service: &str, user: &str, rhost: &str) -> Result<Pam, PamError> {
        let lib = lib()?;
        let (service, user, rhost) = c_names(service, user, rhost)?;
        let conv = Box::new(PamConv {
            conv: quiet,
            appdata_ptr: std::ptr::null_mut(),
        });
        let mut h: Handle = std::ptr::null_mut();
        // SAFETY: valid NUL-terminated strings; `conv` lives in the returned
        // Pam, which ends the handle before dropping it.
        let rc = unsafe { (lib.start)(service.as_ptr(), user.as_ptr(), &*conv, &mut h) };
        if rc != PAM_SUCCESS || h.is_null() {
            return Err(PamError::Start(rc));
        }
        // SAFETY: h is live; PAM copies items.
        unsafe {
            (lib.set_item)(h, PAM_RHOST, rhost.as_ptr().cast());
            (lib.set_item)(h, PAM_TTY, c"ssh".as_ptr().cast());
        }
        Ok(Pam {
            lib,
            h,
            _conv: conv,
        })
    }

    /// Runs one step; its error in PAM's words.
    fn step(
        &self,
        f: unsafe extern "C" fn(Handle, c_int) -> c_int,
        flags: c_int,
        call: &'static str,
    ) -> Result<(), PamError> {
        // SAFETY: h is live.
        let rc = unsafe { f(self.h, flags) };
        if rc == PAM_SUCCESS {
            return Ok(());
        }
        Err(PamError::Step {
            call,
            code: rc,
            text: strerror(self.lib, self.h, rc),
        })
    }
}

impl Drop for Pam {
    fn drop(&mut self) {
        // SAFETY: h is live and not used after.
        unsafe { (self.lib.end)(self.h, PAM_SUCCESS) };
    }
}

/// pam_acct_mgmt for `user` from `rhost`: an expired or locked account, or
/// an account module's refusal (pam_access, pam_nologin) ends the login
/// even when the key was right, as sshd's "Access denied for user X by PAM
/// account configuration".
pub fn account(service: &str, user: &str, rhost: &str) -> Result<(), PamError> {
    let pam = Pam::start(service, user, rhost)?;
    pam.step(pam.lib.acct_mgmt, 0, "pam_acct_mgmt")
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
        pam.step(pam.lib.setcred, PAM_ESTABLISH_CRED, "pam_setcred")?;
        pam.step(pam.lib.open_session, 0, "pam_open_session")?;
        Ok(Session { pam })
    }

    /// PAM's environment after the session opened (pam_getenvlist), as
    /// `(name, value)`, without the names sshd keeps PAM from setting
    /// (SSH_AUTH_SOCK, SSH_CONNECTION) and within the bounds of client env
    /// requests.
    pub fn env(&self) -> Vec<(OsString, OsString)> {
        // SAFETY: h is live; the list and its strings are ours to free.
        let list = unsafe { (self.pam.lib.getenvlist)(self.pam.h) };
        if list.is_null() {
            return Vec::new();
        }
        let mut raw = Vec::new();
        let mut i = 0;
        loop {
            // SAFETY: the list is NULL-terminated; each entry a C string
            // malloc'ed by PAM, freed here once read.
            let p = unsafe { *list.add(i) };
            if p.is_null() {
                break;
            }
            // SAFETY: see above.
            raw.push(unsafe { CStr::from_ptr(p) }.to_bytes().to_vec());
            // SAFETY: see above.
            unsafe { libc::free(p.cast()) };
            i += 1;
        }
        // SAFETY: the array itself is malloc'ed too.
        unsafe { libc::free(list.cast()) };
        pam_env_entries(raw)
    }

    /// pam_close_session and pam_setcred(DELETE); failures are logged.
    pub fn close(self) {
        for (f, flags, what) in [
            (self.pam.lib.close_session, 0, "pam_close_session"),
            (self.pam.lib.setcred, PAM_DELETE_CRED, "pam_setcred"),
        ] {
            if let Err(e) = self.pam.step(f, flags, what) {
                crate::log!(Verbose, "{e}");
            }
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

/// The conversation of these steps: module messages are logged, prompts
/// refused.
extern "C" fn quiet(
    n: c_int,
    msg: *mut *const PamMessage,
    resp: *mut *mut PamResponse,
    _appdata: *mut c_void,
) -> c_int {
    if n <= 0 || n > MAX_NUM_MSG || msg.is_null() || resp.is_null() {
        return PAM_CONV_ERR;
    }
    let count = n as usize;
    for i in 0..count {
        // SAFETY: msg holds n pointers (Linux-PAM's layout), each to a
        // message whose text is NUL-terminated or null.
        let m = unsafe { &**msg.add(i) };
        if m.msg_style != PAM_TEXT_INFO && m.msg_style != PAM_ERROR_MSG {
            return PAM_CONV_ERR;
        }
        if !m.msg.is_null() {
            // SAFETY: see above.
            let text = unsafe { CStr::from_ptr(m.msg) }.to_string_lossy();
            crate::log!(Debug1, "PAM: {}", text.trim_end());
        }
    }
    // PAM frees the responses with free(): calloc them, all empty.
    // SAFETY: calloc of n zeroed responses (resp null, retcode 0).
    let r = unsafe { libc::calloc(count, std::mem::size_of::<PamResponse>()) };
    if r.is_null() {
        return PAM_BUF_ERR;
    }
    // SAFETY: resp is PAM's out pointer.
    unsafe { *resp = r.cast() };
    PAM_SUCCESS
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
