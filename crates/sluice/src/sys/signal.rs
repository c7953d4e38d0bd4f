//! Signal dispositions: a handler, ignore, the default, and an ignore that
//! is put back later; the handlers given must be async-signal-safe.

use std::mem::MaybeUninit;

/// A signal's disposition as it was before [`ignore_for_now`].
pub struct Saved {
    sig: libc::c_int,
    action: libc::sigaction,
}

impl Saved {
    /// Puts the saved disposition back.
    pub fn restore(self) {
        // SAFETY: `action` was filled by sigaction(2) for this signal.
        unsafe { libc::sigaction(self.sig, &self.action, std::ptr::null_mut()) };
    }
}

/// Runs `handler` on `sig` (SA_RESTART: interrupted reads and writes go
/// on). `handler` must make only async-signal-safe calls.
pub fn set_handler(sig: libc::c_int, handler: extern "C" fn(libc::c_int)) {
    let mut sa = zeroed_action();
    sa.sa_sigaction = handler as usize;
    sa.sa_flags = libc::SA_RESTART;
    // SAFETY: `sa` is a valid sigaction with an empty mask.
    unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) };
}

/// Ignores `sig` from now on.
pub fn ignore(sig: libc::c_int) {
    set_plain(sig, libc::SIG_IGN);
}

/// `sig`'s default action from now on (a child about to exec, a handler
/// about to re-raise).
pub fn default(sig: libc::c_int) {
    set_plain(sig, libc::SIG_DFL);
}

/// Ignores `sig` until the returned [`Saved`] is restored.
pub fn ignore_for_now(sig: libc::c_int) -> Saved {
    let mut sa = zeroed_action();
    sa.sa_sigaction = libc::SIG_IGN;
    let mut old = zeroed_action();
    // SAFETY: both are valid sigaction structures.
    unsafe { libc::sigaction(sig, &sa, &mut old) };
    Saved { sig, action: old }
}

/// Sends `sig` to this process (async-signal-safe).
pub fn raise(sig: libc::c_int) {
    // SAFETY: raise(3) has no memory arguments.
    unsafe { libc::raise(sig) };
}

fn set_plain(sig: libc::c_int, disposition: libc::sighandler_t) {
    let mut sa = zeroed_action();
    sa.sa_sigaction = disposition;
    // SAFETY: `sa` is a valid sigaction with an empty mask.
    unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) };
}

/// A sigaction with no handler, no flags and an empty mask.
fn zeroed_action() -> libc::sigaction {
    let mut sa = MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: all-zero is a valid sigaction (SIG_DFL, no flags); the mask
    // is then emptied as POSIX asks.
    unsafe {
        libc::sigemptyset(&mut (*sa.as_mut_ptr()).sa_mask);
        sa.assume_init()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    static GOT: AtomicBool = AtomicBool::new(false);

    extern "C" fn note(_: libc::c_int) {
        GOT.store(true, Ordering::SeqCst);
    }

    #[test]
    fn handler_ignore_and_restore() {
        set_handler(libc::SIGUSR2, note);
        raise(libc::SIGUSR2);
        assert!(GOT.swap(false, Ordering::SeqCst));
        let saved = ignore_for_now(libc::SIGUSR2);
        raise(libc::SIGUSR2);
        assert!(!GOT.load(Ordering::SeqCst));
        saved.restore();
        raise(libc::SIGUSR2);
        assert!(GOT.swap(false, Ordering::SeqCst));
        ignore(libc::SIGUSR2);
    }
}
