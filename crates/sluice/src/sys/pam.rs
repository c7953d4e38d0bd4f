//! PAM's C interface (Linux-PAM's libpam.so.0, loaded at run time so
//! building needs no libpam0g-dev): a [`Handle`] with one safe method per
//! PAM call, and the conversation callback that turns PAM's messages into
//! a [`Conversation`]'s Rust call and its answers into the memory PAM frees.
//!
//! Not in rustix: PAM is a library, not a system call. The handle keeps the
//! conversation (and the `pam_conv` PAM points at) alive until pam_end,
//! which it calls when ended or dropped.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::OnceLock;

/// pam_*'s success code.
pub const PAM_SUCCESS: c_int = 0;
/// pam_authenticate / pam_acct_mgmt: the password must be changed.
pub const PAM_NEW_AUTHTOK_REQD: c_int = 12;
/// A message: input, not echoed.
pub const PAM_PROMPT_ECHO_OFF: c_int = 1;
/// A message: input, echoed.
pub const PAM_PROMPT_ECHO_ON: c_int = 2;
/// A message: an error to show.
pub const PAM_ERROR_MSG: c_int = 3;
/// A message: information to show.
pub const PAM_TEXT_INFO: c_int = 4;
/// pam_authenticate / pam_acct_mgmt flag: an empty password fails.
pub const PAM_DISALLOW_NULL_AUTHTOK: c_int = 0x1;
/// pam_setcred flag: establish the credentials.
pub const PAM_ESTABLISH_CRED: c_int = 0x2;
/// pam_setcred flag: delete them.
pub const PAM_DELETE_CRED: c_int = 0x4;

const PAM_BUF_ERR: c_int = 5;
const PAM_CONV_ERR: c_int = 19;
const PAM_TTY: c_int = 3;
const PAM_RHOST: c_int = 4;
const PAM_FAIL_DELAY: c_int = 10;
/// Linux-PAM's PAM_MAX_NUM_MSG.
const MAX_NUM_MSG: c_int = 32;

#[repr(C)]
struct PamMessage {
    msg_style: c_int,
    msg: *const c_char,
}

#[repr(C)]
struct PamResponse {
    resp: *mut c_char,
    resp_retcode: c_int,
}

type ConvFn =
    extern "C" fn(c_int, *mut *const PamMessage, *mut *mut PamResponse, *mut c_void) -> c_int;

#[repr(C)]
struct PamConv {
    conv: ConvFn,
    appdata_ptr: *mut c_void,
}

type RawHandle = *mut c_void;
type StartFn =
    unsafe extern "C" fn(*const c_char, *const c_char, *const PamConv, *mut RawHandle) -> c_int;
type EndFn = unsafe extern "C" fn(RawHandle, c_int) -> c_int;
type SetItemFn = unsafe extern "C" fn(RawHandle, c_int, *const c_void) -> c_int;
type FlagsFn = unsafe extern "C" fn(RawHandle, c_int) -> c_int;
type StrerrorFn = unsafe extern "C" fn(RawHandle, c_int) -> *const c_char;
type GetenvlistFn = unsafe extern "C" fn(RawHandle) -> *mut *mut c_char;
type DelayFn = extern "C" fn(c_int, c_uint, *mut c_void);

/// libpam.so.0's functions, loaded once ([`load`]).
pub struct Lib {
    start: StartFn,
    end: EndFn,
    set_item: SetItemFn,
    authenticate: FlagsFn,
    acct_mgmt: FlagsFn,
    setcred: FlagsFn,
    open_session: FlagsFn,
    close_session: FlagsFn,
    strerror: StrerrorFn,
    getenvlist: GetenvlistFn,
}

/// libpam.so.0 (dlopen, kept loaded) and its functions; None when the
/// library or one of the functions is missing.
pub fn load() -> Option<&'static Lib> {
    static LIB: OnceLock<Option<Lib>> = OnceLock::new();
    LIB.get_or_init(|| {
        let lib = super::dl::Library::open_global(c"libpam.so.0").ok()?;
        // SAFETY: each symbol is the libpam function of that prototype
        // (Linux-PAM's _pam_types.h / pam_appl.h); the library stays loaded
        // (below) for as long as the pointers live.
        let funcs = unsafe {
            Lib {
                start: lib.symbol(c"pam_start")?,
                end: lib.symbol(c"pam_end")?,
                set_item: lib.symbol(c"pam_set_item")?,
                authenticate: lib.symbol(c"pam_authenticate")?,
                acct_mgmt: lib.symbol(c"pam_acct_mgmt")?,
                setcred: lib.symbol(c"pam_setcred")?,
                open_session: lib.symbol(c"pam_open_session")?,
                close_session: lib.symbol(c"pam_close_session")?,
                strerror: lib.symbol(c"pam_strerror")?,
                getenvlist: lib.symbol(c"pam_getenvlist")?,
            }
        };
        lib.keep_loaded();
        Some(funcs)
    })
    .as_ref()
}

/// One message of a conversation.
pub struct Message {
    /// PAM_PROMPT_ECHO_OFF, PAM_PROMPT_ECHO_ON, PAM_ERROR_MSG,
    /// PAM_TEXT_INFO (or another value a module sends).
    pub style: c_int,
    /// The text (lossily UTF-8); None when the module gave none.
    pub text: Option<String>,
}

/// The application's side of a PAM conversation.
pub trait Conversation {
    /// An answer's text (its bytes, without NUL).
    type Answer: AsRef<[u8]>;

    /// One answer per message, in order (None: no answer, as for info
    /// text); None fails the conversation (PAM_CONV_ERR). Answers past the
    /// messages' count are ignored; one holding a NUL byte is given as none.
    fn converse(&self, msgs: &[Message]) -> Option<Vec<Option<Self::Answer>>>;

    /// PAM's failure delay (PAM_FAIL_DELAY, [`Handle::set_fail_delay`]):
    /// `usec` microseconds that PAM would otherwise sleep.
    fn fail_delay(&self, usec: u32) {
        let _ = usec;
    }
}

impl<T: Conversation + ?Sized> Conversation for &T {
    type Answer = T::Answer;
    fn converse(&self, msgs: &[Message]) -> Option<Vec<Option<Self::Answer>>> {
        (**self).converse(msgs)
    }
    fn fail_delay(&self, usec: u32) {
        (**self).fail_delay(usec)
    }
}

/// What PAM points at for the life of a handle: the pam_conv and the
/// conversation its appdata_ptr names (on the heap, held by the handle as
/// a raw pointer so that nothing asserts unique access while PAM holds
/// pointers into it; freed after pam_end).
struct Shared<C> {
    pam_conv: PamConv,
    conv: C,
}

/// A string item of a handle (pam_set_item), which PAM copies.
#[derive(Debug, Clone, Copy)]
pub enum StrItem {
    /// PAM_RHOST: the remote host.
    Rhost,
    /// PAM_TTY: the terminal (sshd gives "ssh").
    Tty,
}

/// A PAM transaction (pam_start .. pam_end) whose conversation is `C`.
pub struct Handle<C: Conversation> {
    lib: &'static Lib,
    h: RawHandle,
    /// From Box::into_raw; freed in Drop, after pam_end.
    shared: *mut Shared<C>,
}

impl Lib {
    /// pam_start for `user` on `service`, with `conv` as the conversation;
    /// Err with PAM's code when it fails.
    pub fn start<C: Conversation>(
        &'static self,
        service: &CStr,
        user: &CStr,
        conv: C,
    ) -> Result<Handle<C>, c_int> {
        let shared = Box::into_raw(Box::new(Shared {
            pam_conv: PamConv {
                conv: converse::<C>,
                appdata_ptr: std::ptr::null_mut(),
            },
            conv,
        }));
        // SAFETY: `shared` is a live allocation of ours; only field
        // addresses are taken.
        let (pam_conv, conv) = unsafe {
            (
                std::ptr::addr_of_mut!((*shared).pam_conv),
                std::ptr::addr_of!((*shared).conv),
            )
        };
        // SAFETY: as above; nothing else refers to it yet.
        unsafe { (*pam_conv).appdata_ptr = conv as *mut c_void };
        // From here the Handle owns `shared` (and frees it on every path).
        let mut handle = Handle {
            lib: self,
            h: std::ptr::null_mut(),
            shared,
        };
        let mut h: RawHandle = std::ptr::null_mut();
        // SAFETY: NUL-terminated strings, only read; the pam_conv and the
        // conversation live until the Handle is dropped, after pam_end.
        let rc = unsafe { (self.start)(service.as_ptr(), user.as_ptr(), pam_conv, &mut h) };
        if rc != PAM_SUCCESS || h.is_null() {
            // As before: a failed pam_start leaves no handle to end (the
            // conversation is freed with `handle`).
            return Err(rc);
        }
        handle.h = h;
        Ok(handle)
    }
}

impl<C: Conversation> Handle<C> {
    /// pam_set_item of a string item (PAM copies it); PAM's code.
    pub fn set_item(&self, item: StrItem, value: &CStr) -> c_int {
        let item = match item {
            StrItem::Rhost => PAM_RHOST,
            StrItem::Tty => PAM_TTY,
        };
        // SAFETY: h is live; for a string item PAM copies the
        // NUL-terminated string.
        unsafe { (self.lib.set_item)(self.h, item, value.as_ptr().cast()) }
    }

    /// pam_set_item(PAM_FAIL_DELAY): PAM's failure delay goes to the
    /// conversation's [`Conversation::fail_delay`] instead of being slept.
    pub fn set_fail_delay(&self) -> c_int {
        let f: DelayFn = fail_delay::<C>;
        // SAFETY: h is live; the item is a function of the signature
        // PAM_FAIL_DELAY expects, called with the conversation's
        // appdata_ptr, which points at the boxed `C` (alive until pam_end).
        unsafe { (self.lib.set_item)(self.h, PAM_FAIL_DELAY, f as *const c_void) }
    }

    /// Runs one of the flags-taking calls on the live handle.
    fn call(&self, f: FlagsFn, flags: c_int) -> c_int {
        // SAFETY: h is live; the call's conversation callbacks find the
        // boxed conversation alive.
        unsafe { f(self.h, flags) }
    }

    /// pam_authenticate; PAM's code.
    pub fn authenticate(&self, flags: c_int) -> c_int {
        self.call(self.lib.authenticate, flags)
    }

    /// pam_acct_mgmt; PAM's code.
    pub fn acct_mgmt(&self, flags: c_int) -> c_int {
        self.call(self.lib.acct_mgmt, flags)
    }

    /// pam_setcred; PAM's code.
    pub fn setcred(&self, flags: c_int) -> c_int {
        self.call(self.lib.setcred, flags)
    }

    /// pam_open_session; PAM's code.
    pub fn open_session(&self, flags: c_int) -> c_int {
        self.call(self.lib.open_session, flags)
    }

    /// pam_close_session; PAM's code.
    pub fn close_session(&self, flags: c_int) -> c_int {
        self.call(self.lib.close_session, flags)
    }

    /// pam_strerror's text for `rc`; None when PAM has none.
    pub fn strerror(&self, rc: c_int) -> Option<String> {
        // SAFETY: h is live; pam_strerror returns a static string or null.
        let p = unsafe { (self.lib.strerror)(self.h, rc) };
        // SAFETY: non-null: a NUL-terminated static string.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }

    /// PAM's environment (pam_getenvlist), its `NAME=value` entries as
    /// bytes; the list PAM hands over is freed here.
    pub fn getenvlist(&self) -> Vec<Vec<u8>> {
        // SAFETY: h is live; the list and its strings are ours to free.
        let list = unsafe { (self.lib.getenvlist)(self.h) };
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
        raw
    }

    /// pam_end with `status` (the last call's code).
    pub fn end(mut self, status: c_int) {
        self.finish(status);
    }

    fn finish(&mut self, status: c_int) {
        if !self.h.is_null() {
            // SAFETY: h is live and not used after (set to null).
            unsafe { (self.lib.end)(self.h, status) };
            self.h = std::ptr::null_mut();
        }
    }
}

impl<C: Conversation> Drop for Handle<C> {
    /// pam_end(PAM_SUCCESS) unless [`Handle::end`] ran; then the
    /// conversation is freed.
    fn drop(&mut self) {
        self.finish(PAM_SUCCESS);
        // SAFETY: from Box::into_raw in `start`, freed only here; PAM holds
        // no pointer into it after pam_end (or a failed pam_start).
        drop(unsafe { Box::from_raw(self.shared) });
    }
}

/// PAM_FAIL_DELAY's function: hands the delay to the conversation.
extern "C" fn fail_delay<C: Conversation>(_retval: c_int, usec: c_uint, appdata: *mut c_void) {
    if appdata.is_null() {
        return;
    }
    // SAFETY: appdata is the conversation's appdata_ptr, the boxed `C` of
    // the handle that set this function, alive during PAM calls.
    let conv = unsafe { &*(appdata as *const C) };
    conv.fail_delay(usec);
}

/// The conversation callback: PAM's messages read into [`Message`]s, the
/// conversation's answers copied into the response array PAM frees with
/// free(3) (so calloc'ed, each answer malloc'ed).
extern "C" fn converse<C: Conversation>(
    n: c_int,
    msg: *mut *const PamMessage,
    resp: *mut *mut PamResponse,
    appdata: *mut c_void,
) -> c_int {
    if n <= 0 || n > MAX_NUM_MSG || msg.is_null() || resp.is_null() || appdata.is_null() {
        return PAM_CONV_ERR;
    }
    let count = n as usize;
    // SAFETY: appdata is the boxed `C` given to pam_start, alive during PAM
    // calls; msg holds n pointers (Linux-PAM's layout), each to a message
    // whose text is NUL-terminated or null.
    let (conv, msgs) = unsafe {
        let conv = &*(appdata as *const C);
        let msgs: Vec<Message> = (0..count)
            .map(|i| {
                let m = &**msg.add(i);
                let text = (!m.msg.is_null())
                    .then(|| CStr::from_ptr(m.msg).to_string_lossy().into_owned());
                Message {
                    style: m.msg_style,
                    text,
                }
            })
            .collect();
        (conv, msgs)
    };
    let Some(answers) = conv.converse(&msgs) else {
        return PAM_CONV_ERR;
    };
    // SAFETY: calloc of `count` (at most MAX_NUM_MSG) zeroed responses
    // (resp null, retcode 0), which PAM frees with free(3).
    let arr =
        unsafe { libc::calloc(count, std::mem::size_of::<PamResponse>()) } as *mut PamResponse;
    if arr.is_null() {
        return PAM_BUF_ERR;
    }
    for (i, a) in answers.iter().enumerate().take(count) {
        let Some(a) = a else { continue };
        let a = a.as_ref();
        if a.contains(&0) {
            continue;
        }
        // SAFETY: malloc of the answer and its NUL, freed by PAM with
        // free(3); a null result leaves the response empty.
        let p = unsafe { libc::malloc(a.len() + 1) } as *mut u8;
        if p.is_null() {
            continue;
        }
        // SAFETY: `p` has room for a.len() + 1 bytes; `i` < count, inside
        // the calloc'ed array.
        unsafe {
            std::ptr::copy_nonoverlapping(a.as_ptr(), p, a.len());
            *p.add(a.len()) = 0;
            (*arr.add(i)).resp = p.cast();
        }
    }
    // SAFETY: resp is PAM's out pointer, checked non-null.
    unsafe { *resp = arr };
    PAM_SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// Answers every prompt with "pw" and notes the delay.
    struct Fixed(Cell<u32>);

    impl Conversation for Fixed {
        type Answer = &'static str;
        fn converse(&self, msgs: &[Message]) -> Option<Vec<Option<&'static str>>> {
            Some(
                msgs.iter()
                    .map(|m| (m.style == PAM_PROMPT_ECHO_OFF).then_some("pw"))
                    .collect(),
            )
        }
        fn fail_delay(&self, usec: u32) {
            self.0.set(usec);
        }
    }

    #[test]
    fn the_callbacks_answer_in_memory_pam_frees() {
        let shared = Box::new(Fixed(Cell::new(0)));
        let appdata = &*shared as *const Fixed as *mut c_void;
        let m = [
            PamMessage {
                msg_style: PAM_TEXT_INFO,
                msg: c"hello".as_ptr(),
            },
            PamMessage {
                msg_style: PAM_PROMPT_ECHO_OFF,
                msg: c"Password: ".as_ptr(),
            },
        ];
        let mut ptrs = [&m[0] as *const PamMessage, &m[1] as *const PamMessage];
        let mut resp: *mut PamResponse = std::ptr::null_mut();
        assert_eq!(
            converse::<Fixed>(2, ptrs.as_mut_ptr(), &mut resp, appdata),
            PAM_SUCCESS
        );
        // SAFETY: two responses calloc'ed by `converse`, freed as PAM would.
        unsafe {
            assert!((*resp).resp.is_null());
            let r1 = (*resp.add(1)).resp;
            assert_eq!(CStr::from_ptr(r1).to_bytes(), b"pw");
            libc::free(r1.cast());
            libc::free(resp.cast());
        }
        assert_eq!(
            converse::<Fixed>(0, ptrs.as_mut_ptr(), &mut resp, appdata),
            PAM_CONV_ERR
        );
        fail_delay::<Fixed>(0, 2_000_000, appdata);
        assert_eq!(shared.0.get(), 2_000_000);
    }
}
