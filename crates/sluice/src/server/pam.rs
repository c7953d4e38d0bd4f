//! PAM (UsePAM yes, the service PAMServiceName names) through libpam.so.0 loaded at run time,
//! so building needs no libpam0g-dev. Each check runs on its own thread:
//! pam_authenticate may block (pam_unix's 2 s failure delay, a slow
//! directory) and, for keyboard-interactive, its conversation waits for the
//! client's answers; the connection's loop meanwhile polls [`Worker`].
//! PAM's failure delay is handed back (PAM_FAIL_DELAY) instead of slept,
//! so the caller applies it without blocking the loop.

use crate::sys::pam::{
    Conversation, Handle, Lib, Message, StrItem, PAM_DISALLOW_NULL_AUTHTOK, PAM_ERROR_MSG,
    PAM_NEW_AUTHTOK_REQD, PAM_PROMPT_ECHO_OFF, PAM_PROMPT_ECHO_ON, PAM_SUCCESS, PAM_TEXT_INFO,
};
use std::ffi::{c_int, CStr, CString};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::time::Duration;
use zeroize::Zeroizing;

/// Why PAM could not run or said no; `Display` is sshd's log text.
#[derive(Debug)]
pub enum PamError {
    /// libpam.so.0 or one of its functions could not be loaded.
    NoLibrary,
    /// The service name holds a NUL byte.
    BadService,
    /// The user name holds a NUL byte.
    BadUser,
    /// The remote host holds a NUL byte.
    BadAddress,
    /// pam_start returned this code.
    Start(c_int),
    /// The conversation's thread could not be started.
    Thread(std::io::Error),
    /// The conversation's thread ended without an answer.
    ThreadEnded,
    /// pam_authenticate or pam_acct_mgmt: PAM_NEW_AUTHTOK_REQD.
    PasswordExpired,
    /// pam_authenticate or pam_acct_mgmt failed: PAM's words for `code`.
    Refused {
        /// PAM's return code.
        code: c_int,
        /// pam_strerror's text.
        text: String,
    },
    /// A session or account step failed.
    Step {
        /// The PAM function ("pam_acct_mgmt", "pam_setcred", ...).
        call: &'static str,
        /// PAM's return code.
        code: c_int,
        /// pam_strerror's text.
        text: String,
    },
}

impl std::fmt::Display for PamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PamError::NoLibrary => f.write_str(
                "PAM: cannot load libpam.so.0 (install libpam0g, or set UsePAM no)",
            ),
            PamError::BadService => f.write_str("PAM: bad service name"),
            PamError::BadUser => f.write_str("PAM: bad user name"),
            PamError::BadAddress => f.write_str("PAM: bad address"),
            PamError::Start(rc) => write!(f, "PAM: pam_start failed ({rc})"),
            PamError::Thread(e) => write!(f, "PAM: cannot start a thread: {e}"),
            PamError::ThreadEnded => f.write_str("PAM thread ended"),
            PamError::PasswordExpired => f.write_str(
                "password expired: sluiced cannot change it; change it with passwd, or log in with ssh",
            ),
            PamError::Refused { text, .. } => f.write_str(text),
            PamError::Step { call, text, .. } => write!(f, "PAM: {call}(): {text}"),
        }
    }
}

impl std::error::Error for PamError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PamError::Thread(e) => Some(e),
            _ => None,
        }
    }
}

/// The C strings PAM is started with: service, user, remote host.
pub(crate) fn c_names(
    service: &str,
    user: &str,
    rhost: &str,
) -> Result<(CString, CString, CString), PamError> {
    Ok((
        CString::new(service).map_err(|_| PamError::BadService)?,
        CString::new(user).map_err(|_| PamError::BadUser)?,
        CString::new(rhost).map_err(|_| PamError::BadAddress)?,
    ))
}

/// pam_strerror's text for `rc` on the live handle `h`.
pub(crate) fn strerror<C: Conversation>(h: &Handle<C>, rc: c_int) -> String {
    h.strerror(rc).unwrap_or_else(|| format!("error {rc}"))
}

/// libpam.so.0, loaded once (sys/pam.rs).
pub(crate) fn lib() -> Result<&'static Lib, PamError> {
    crate::sys::pam::load().ok_or(PamError::NoLibrary)
}

/// What the check answers the conversation with.
pub enum Mode {
    /// Every hidden prompt gets this password (sshd's password method).
    Password(Zeroizing<String>),
    /// Prompts go to the client as keyboard-interactive rounds.
    Interactive,
}

/// A message from the PAM thread.
pub enum FromPam {
    /// Prompts (text, echo) for the client, after any PAM info text.
    Prompts {
        /// PAM_TEXT_INFO / PAM_ERROR_MSG lines shown with the prompts.
        instruction: String,
        /// The prompts.
        prompts: Vec<(String, bool)>,
    },
    /// Finished: Ok, or the PAM error text; and the delay PAM asked for.
    Done(Result<(), PamError>, Duration),
}

/// The conversation's state, shared with the PAM thread's callbacks.
struct Conv {
    mode: Mode,
    to_loop: Sender<FromPam>,
    answers: Receiver<Vec<Zeroizing<String>>>,
    info: std::sync::Mutex<String>,
    delay_us: AtomicU32,
}

/// A running check; poll it from the connection's loop.
pub struct Worker {
    from_pam: Receiver<FromPam>,
    answers: Sender<Vec<Zeroizing<String>>>,
}

impl Worker {
    /// The next message, if any. A thread that died reports failure.
    pub fn poll(&self) -> Option<FromPam> {
        match self.from_pam.try_recv() {
            Ok(m) => Some(m),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => {
                Some(FromPam::Done(Err(PamError::ThreadEnded), Duration::ZERO))
            }
        }
    }

    /// Answers the last prompts, in order.
    pub fn answer(&self, answers: Vec<Zeroizing<String>>) {
        let _ = self.answers.send(answers);
    }
}

/// Starts pam_authenticate + pam_acct_mgmt for `user` from `rhost`, with
/// the PAM service `service` (PAMServiceName).
pub fn start(
    service: &str,
    user: &str,
    rhost: &str,
    mode: Mode,
    permit_empty: bool,
) -> Result<Worker, PamError> {
    let lib = lib()?;
    let (service, user, rhost) = c_names(service, user, rhost)?;
    let (to_loop, from_pam) = channel();
    let (answers, answers_rx) = channel();
    let conv = Conv {
        mode,
        to_loop: to_loop.clone(),
        answers: answers_rx,
        info: Default::default(),
        delay_us: AtomicU32::new(0),
    };
    std::thread::Builder::new()
        .name("pam".into())
        .spawn(move || {
            let r = run(lib, &service, &user, &rhost, &conv, permit_empty);
            let delay = Duration::from_micros(u64::from(conv.delay_us.load(Ordering::Relaxed)));
            let _ = to_loop.send(FromPam::Done(r, delay));
        })
        .map_err(PamError::Thread)?;
    Ok(Worker { from_pam, answers })
}

fn run(
    lib: &'static Lib,
    service: &CStr,
    user: &CStr,
    rhost: &CStr,
    conv: &Conv,
    permit_empty: bool,
) -> Result<(), PamError> {
    let h = lib.start(service, user, conv).map_err(PamError::Start)?;
    h.set_item(StrItem::Rhost, rhost);
    h.set_item(StrItem::Tty, c"ssh");
    h.set_fail_delay();
    let flags = if permit_empty {
        0
    } else {
        PAM_DISALLOW_NULL_AUTHTOK
    };
    let rc = match h.authenticate(flags) {
        PAM_SUCCESS => h.acct_mgmt(flags),
        rc => rc,
    };
    let r = match rc {
        PAM_SUCCESS => Ok(()),
        PAM_NEW_AUTHTOK_REQD => Err(PamError::PasswordExpired),
        rc => Err(PamError::Refused {
            code: rc,
            text: strerror(&h, rc),
        }),
    };
    h.end(rc);
    r
}

impl Conversation for Conv {
    type Answer = Zeroizing<String>;

    /// Answers come from the password, or (keyboard-interactive) from the
    /// client through the connection's loop.
    fn converse(&self, msgs: &[Message]) -> Option<Vec<Option<Zeroizing<String>>>> {
        let msgs: Vec<(c_int, String)> = msgs
            .iter()
            .map(|m| (m.style, m.text.clone().unwrap_or_default()))
            .collect();
        answers_for(self, &msgs)
    }

    /// PAM_FAIL_DELAY: remember the delay instead of sleeping it here.
    fn fail_delay(&self, usec: u32) {
        self.delay_us.fetch_max(usec, Ordering::Relaxed);
    }
}

/// One answer per message (None for info text); None fails the conversation.
fn answers_for(conv: &Conv, msgs: &[(c_int, String)]) -> Option<Vec<Option<Zeroizing<String>>>> {
    let mut info = conv.info.lock().ok()?;
    for (style, text) in msgs {
        if matches!(*style, PAM_ERROR_MSG | PAM_TEXT_INFO) {
            info.push_str(text);
            info.push('\n');
        }
    }
    let prompts: Vec<(String, bool)> = msgs
        .iter()
        .filter(|(s, _)| matches!(*s, PAM_PROMPT_ECHO_OFF | PAM_PROMPT_ECHO_ON))
        .map(|(s, t)| (t.clone(), *s == PAM_PROMPT_ECHO_ON))
        .collect();
    let mut given: std::vec::IntoIter<Zeroizing<String>> = match &conv.mode {
        Mode::Password(pw) => {
            // As sshd: a password answers hidden prompts; anything asked
            // in the clear cannot be answered.
            if prompts.iter().any(|(_, echo)| *echo) {
                return None;
            }
            info.clear();
            vec![pw.clone(); prompts.len()].into_iter()
        }
        Mode::Interactive if prompts.is_empty() => Vec::new().into_iter(),
        Mode::Interactive => {
            let instruction = std::mem::take(&mut *info);
            drop(info);
            conv.to_loop
                .send(FromPam::Prompts {
                    instruction,
                    prompts: prompts.clone(),
                })
                .ok()?;
            let a = conv.answers.recv().ok()?;
            if a.len() != prompts.len() {
                return None;
            }
            a.into_iter()
        }
    };
    msgs.iter()
        .map(|(s, _)| match *s {
            PAM_PROMPT_ECHO_OFF | PAM_PROMPT_ECHO_ON => given.next().map(Some),
            PAM_ERROR_MSG | PAM_TEXT_INFO => Some(None),
            _ => None,
        })
        .collect()
}
