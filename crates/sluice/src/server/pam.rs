//! PAM (UsePAM yes, the service PAMServiceName names) through libpam.so.0 loaded at run time,
//! so building needs no libpam0g-dev. Each check runs on its own thread:
//! pam_authenticate may block (pam_unix's 2 s failure delay, a slow
//! directory) and, for keyboard-interactive, its conversation waits for the
//! client's answers; the connection's loop meanwhile polls [`Worker`].
//! PAM's failure delay is handed back (PAM_FAIL_DELAY) instead of slept,
//! so the caller applies it without blocking the loop.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::sync::OnceLock;
use std::time::Duration;
use zeroize::Zeroizing;

pub(crate) const PAM_SUCCESS: c_int = 0;
pub(crate) const PAM_BUF_ERR: c_int = 5;
pub(crate) const PAM_NEW_AUTHTOK_REQD: c_int = 12;
pub(crate) const PAM_CONV_ERR: c_int = 19;
pub(crate) const PAM_TTY: c_int = 3;
pub(crate) const PAM_RHOST: c_int = 4;
const PAM_FAIL_DELAY: c_int = 10;
const PAM_DISALLOW_NULL_AUTHTOK: c_int = 0x1;
const PAM_PROMPT_ECHO_OFF: c_int = 1;
const PAM_PROMPT_ECHO_ON: c_int = 2;
pub(crate) const PAM_ERROR_MSG: c_int = 3;
pub(crate) const PAM_TEXT_INFO: c_int = 4;
/// Linux-PAM's PAM_MAX_NUM_MSG.
pub(crate) const MAX_NUM_MSG: c_int = 32;

#[repr(C)]
pub(crate) struct PamMessage {
    pub(crate) msg_style: c_int,
    pub(crate) msg: *const c_char,
}

#[repr(C)]
pub(crate) struct PamResponse {
    pub(crate) resp: *mut c_char,
    pub(crate) resp_retcode: c_int,
}

pub(crate) type ConvFn =
    extern "C" fn(c_int, *mut *const PamMessage, *mut *mut PamResponse, *mut c_void) -> c_int;

#[repr(C)]
pub(crate) struct PamConv {
    pub(crate) conv: ConvFn,
    pub(crate) appdata_ptr: *mut c_void,
}

pub(crate) type Handle = *mut c_void;

pub(crate) type StartFn =
    unsafe extern "C" fn(*const c_char, *const c_char, *const PamConv, *mut Handle) -> c_int;
pub(crate) type EndFn = unsafe extern "C" fn(Handle, c_int) -> c_int;
pub(crate) type SetItemFn = unsafe extern "C" fn(Handle, c_int, *const c_void) -> c_int;
pub(crate) type FlagsFn = unsafe extern "C" fn(Handle, c_int) -> c_int;
pub(crate) type StrerrorFn = unsafe extern "C" fn(Handle, c_int) -> *const c_char;
pub(crate) type GetenvlistFn = unsafe extern "C" fn(Handle) -> *mut *mut c_char;

/// The libpam functions used.
pub(crate) struct Lib {
    pub(crate) start: StartFn,
    pub(crate) end: EndFn,
    pub(crate) set_item: SetItemFn,
    authenticate: FlagsFn,
    pub(crate) acct_mgmt: FlagsFn,
    pub(crate) setcred: FlagsFn,
    pub(crate) open_session: FlagsFn,
    pub(crate) close_session: FlagsFn,
    pub(crate) strerror: StrerrorFn,
    pub(crate) getenvlist: GetenvlistFn,
}

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
pub(crate) fn strerror(lib: &Lib, h: Handle, rc: c_int) -> String {
    // SAFETY: h is a live handle; pam_strerror returns a static string or null.
    let p = unsafe { (lib.strerror)(h, rc) };
    if p.is_null() {
        format!("error {rc}")
    } else {
        // SAFETY: NUL-terminated static string.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

pub(crate) fn lib() -> Result<&'static Lib, PamError> {
    static LIB: OnceLock<Option<Lib>> = OnceLock::new();
    LIB.get_or_init(|| {
        // SAFETY: dlopen/dlsym with NUL-terminated names; the library stays
        // loaded, and each symbol is the libpam function of that signature.
        unsafe {
            let h = libc::dlopen(c"libpam.so.0".as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL);
            if h.is_null() {
                return None;
            }
            let sym = |name: &CStr| {
                let p = libc::dlsym(h, name.as_ptr());
                (!p.is_null()).then_some(p)
            };
            Some(Lib {
                start: std::mem::transmute::<*mut c_void, StartFn>(sym(c"pam_start")?),
                end: std::mem::transmute::<*mut c_void, EndFn>(sym(c"pam_end")?),
                set_item: std::mem::transmute::<*mut c_void, SetItemFn>(sym(c"pam_set_item")?),
                authenticate: std::mem::transmute::<*mut c_void, FlagsFn>(sym(
                    c"pam_authenticate",
                )?),
                acct_mgmt: std::mem::transmute::<*mut c_void, FlagsFn>(sym(c"pam_acct_mgmt")?),
                setcred: std::mem::transmute::<*mut c_void, FlagsFn>(sym(c"pam_setcred")?),
                open_session: std::mem::transmute::<*mut c_void, FlagsFn>(sym(
                    c"pam_open_session",
                )?),
                close_session: std::mem::transmute::<*mut c_void, FlagsFn>(sym(
                    c"pam_close_session",
                )?),
                strerror: std::mem::transmute::<*mut c_void, StrerrorFn>(sym(c"pam_strerror")?),
                getenvlist: std::mem::transmute::<*mut c_void, GetenvlistFn>(sym(
                    c"pam_getenvlist",
                )?),
            })
        }
    })
    .as_ref()
    .ok_or(PamError::NoLibrary)
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
    lib: &Lib,
    service: &CStr,
    user: &CStr,
    rhost: &CStr,
    conv: &Conv,
    permit_empty: bool,
) -> Result<(), PamError> {
    let pc = PamConv {
        conv: converse,
        appdata_ptr: conv as *const Conv as *mut c_void,
    };
    let mut h: Handle = std::ptr::null_mut();
    // SAFETY: valid NUL-terminated strings; pc and conv outlive the handle
    // (pam_end below runs before they go out of scope).
    let rc = unsafe { (lib.start)(service.as_ptr(), user.as_ptr(), &pc, &mut h) };
    if rc != PAM_SUCCESS || h.is_null() {
        return Err(PamError::Start(rc));
    }
    // SAFETY: h is live; items are copied by PAM; the delay function has
    // the signature PAM_FAIL_DELAY expects.
    let rc = unsafe {
        (lib.set_item)(h, PAM_RHOST, rhost.as_ptr().cast());
        (lib.set_item)(h, PAM_TTY, c"ssh".as_ptr().cast());
        (lib.set_item)(h, PAM_FAIL_DELAY, fail_delay as *const c_void);
        let flags = if permit_empty {
            0
        } else {
            PAM_DISALLOW_NULL_AUTHTOK
        };
        match (lib.authenticate)(h, flags) {
            PAM_SUCCESS => (lib.acct_mgmt)(h, flags),
            rc => rc,
        }
    };
    let r = match rc {
        PAM_SUCCESS => Ok(()),
        PAM_NEW_AUTHTOK_REQD => Err(PamError::PasswordExpired),
        rc => Err(PamError::Refused {
            code: rc,
            text: strerror(lib, h, rc),
        }),
    };
    // SAFETY: h is live and not used after.
    unsafe { (lib.end)(h, rc) };
    r
}

/// PAM_FAIL_DELAY: remember the delay instead of sleeping it here.
extern "C" fn fail_delay(_retval: c_int, usec: c_uint, appdata: *mut c_void) {
    if appdata.is_null() {
        return;
    }
    // SAFETY: appdata is the Conv given to pam_start, alive during PAM calls.
    let conv = unsafe { &*(appdata as *const Conv) };
    conv.delay_us.fetch_max(usec, Ordering::Relaxed);
}

/// The PAM conversation: answers come from the password, or (keyboard-
/// interactive) from the client through the connection's loop.
extern "C" fn converse(
    n: c_int,
    msg: *mut *const PamMessage,
    resp: *mut *mut PamResponse,
    appdata: *mut c_void,
) -> c_int {
    if n <= 0 || n > MAX_NUM_MSG || msg.is_null() || resp.is_null() || appdata.is_null() {
        return PAM_CONV_ERR;
    }
    // SAFETY: appdata is the Conv given to pam_start; msg holds n pointers
    // (Linux-PAM's layout), each to a message with a NUL-terminated text.
    let (conv, msgs) = unsafe {
        let conv = &*(appdata as *const Conv);
        let msgs: Vec<(c_int, String)> = (0..n as usize)
            .map(|i| {
                let m = &**msg.add(i);
                let text = if m.msg.is_null() {
                    String::new()
                } else {
                    CStr::from_ptr(m.msg).to_string_lossy().into_owned()
                };
                (m.msg_style, text)
            })
            .collect();
        (conv, msgs)
    };
    let answers = match answers_for(conv, &msgs) {
        Some(a) => a,
        None => return PAM_CONV_ERR,
    };
    // SAFETY: PAM frees the array and each resp with free(), so both come
    // from calloc/strdup; n is bounded above.
    unsafe {
        let arr = libc::calloc(n as usize, std::mem::size_of::<PamResponse>()) as *mut PamResponse;
        if arr.is_null() {
            return PAM_BUF_ERR;
        }
        for (i, a) in answers.iter().enumerate() {
            if let Some(a) = a {
                let c =
                    Zeroizing::new(a.as_bytes().iter().copied().chain([0]).collect::<Vec<u8>>());
                if c[..c.len() - 1].contains(&0) {
                    continue;
                }
                (*arr.add(i)).resp = libc::strdup(c.as_ptr().cast());
            }
        }
        *resp = arr;
    }
    PAM_SUCCESS
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
