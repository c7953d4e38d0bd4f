//! Password checks against the shadow file (UsePAM no), as sshd's
//! sys_auth_passwd: getspnam, then crypt() of the given password with the
//! stored hash as its setting (Debian stores yescrypt `$y$`), compared in
//! constant time. crypt comes from libcrypt.so.1 loaded at run time, so
//! building needs no -dev package. Locked accounts (`!`, `*`) never match.
//! [`account_refusal`] is sshd's expired and locked account check.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::OnceLock;
use zeroize::Zeroizing;

/// libxcrypt's `char *crypt_rn(const char *phrase, const char *setting,
/// void *data, int size)`: reentrant, NULL on failure.
type CryptRn =
    unsafe extern "C" fn(*const c_char, *const c_char, *mut c_void, c_int) -> *mut c_char;

/// sizeof(struct crypt_data) in libxcrypt.
const CRYPT_DATA_SIZE: usize = 32768;

fn crypt_rn() -> Option<CryptRn> {
    static F: OnceLock<Option<usize>> = OnceLock::new();
    let addr = *F.get_or_init(|| {
        // SAFETY: dlopen/dlsym with NUL-terminated names; the library stays loaded.
        unsafe {
            let h = libc::dlopen(c"libcrypt.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
            if h.is_null() {
                crate::log!(
                    Error,
                    "shadow: cannot load libcrypt.so.1 (install libcrypt1)"
                );
                return None;
            }
            let f = libc::dlsym(h, c"crypt_rn".as_ptr());
            (!f.is_null()).then_some(f as usize)
        }
    });
    // SAFETY: the address is crypt_rn from libcrypt, whose signature is CryptRn.
    addr.map(|a| unsafe { std::mem::transmute::<usize, CryptRn>(a) })
}

/// The stored hash for `user`: the shadow entry, or the passwd field when
/// there is no shadow entry (and it is not the `x` placeholder).
fn stored_hash(user: &str) -> Option<Zeroizing<String>> {
    if let Some((hash, _)) = shadow_entry(user) {
        return Some(hash);
    }
    let field = crate::users::password_field(user)?;
    (field.as_str() != "x").then_some(field)
}

/// `user`'s shadow entry: the hash and the account's expiry day (days
/// since 1970-01-01; -1 for none).
fn shadow_entry(user: &str) -> Option<(Zeroizing<String>, i64)> {
    let name = CString::new(user).ok()?;
    let mut buf = Zeroizing::new(vec![0 as c_char; 16 * 1024]);
    // SAFETY: spwd is plain data filled by getspnam_r.
    let mut sp: libc::spwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::spwd = std::ptr::null_mut();
    // SAFETY: all pointers are valid for the call; buf outlives the use of sp.
    let rc = unsafe {
        libc::getspnam_r(
            name.as_ptr(),
            &mut sp,
            buf.as_mut_ptr(),
            buf.len(),
            &mut result,
        )
    };
    if rc == 0 && !result.is_null() && !sp.sp_pwdp.is_null() {
        // SAFETY: getspnam_r returned a NUL-terminated string inside buf.
        let s = unsafe { CStr::from_ptr(sp.sp_pwdp) };
        let hash = Zeroizing::new(s.to_string_lossy().into_owned());
        return Some((hash, i64::from(sp.sp_expire)));
    }
    None
}

/// sshd's own account checks when PAM does not make them (UsePAM no, its
/// allowed_user): an account whose expiry day has passed, or whose
/// password is locked (Linux's `!` prefix, as `passwd -l` and a bare
/// `useradd` leave it), may not log in by any method, keys included.
/// Returns sshd's log line. Nothing is refused when the shadow file cannot
/// be read (a sluiced run by an ordinary user).
pub fn account_refusal(user: &str) -> Option<String> {
    let (hash, expire) = shadow_entry(user)?;
    let today = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400) as i64;
    if expire != -1 && expire < today {
        return Some(format!("Account {user} has expired"));
    }
    hash.starts_with('!')
        .then(|| format!("User {user} not allowed because account is locked"))
}

/// crypt(password, setting), or None when libcrypt refuses the setting.
fn crypt(password: &str, setting: &str) -> Option<Zeroizing<Vec<u8>>> {
    let f = crypt_rn()?;
    let phrase = Zeroizing::new(CString::new(password).ok()?.into_bytes_with_nul());
    let setting = CString::new(setting).ok()?;
    let mut data = Zeroizing::new(vec![0u8; CRYPT_DATA_SIZE]);
    // SAFETY: phrase and setting are NUL-terminated; data is CRYPT_DATA_SIZE
    // zeroed bytes as crypt_rn requires; the result points into data.
    let out = unsafe {
        f(
            phrase.as_ptr().cast(),
            setting.as_ptr(),
            data.as_mut_ptr().cast(),
            CRYPT_DATA_SIZE as c_int,
        )
    };
    if out.is_null() {
        return None;
    }
    // SAFETY: crypt_rn returned a NUL-terminated string inside data.
    let s = unsafe { CStr::from_ptr(out) }.to_bytes().to_vec();
    // A failed hash starts with '*' (libxcrypt's failure token).
    (!s.starts_with(b"*")).then(|| Zeroizing::new(s))
}

/// Whether `password` is `user`'s password. An empty stored hash matches
/// only an empty password, and only when PermitEmptyPasswords allows it.
pub fn check(user: &str, password: &str, permit_empty: bool) -> bool {
    let Some(hash) = stored_hash(user) else {
        // Unknown user: spend the time a real check takes anyway.
        let _ = crypt(password, "$y$j9T$F5Jx5fExrKuPp53xLKQ..1$");
        return false;
    };
    if hash.is_empty() {
        return password.is_empty() && permit_empty;
    }
    if password.is_empty() && !permit_empty {
        return false;
    }
    if hash.starts_with('!') || hash.starts_with('*') {
        crate::log!(Debug1, "shadow: account of {user} is locked");
        return false;
    }
    match crypt(password, &hash) {
        Some(out) => {
            aws_lc_rs::constant_time::verify_slices_are_equal(&out, hash.as_bytes()).is_ok()
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crypt_matches_known_hashes() {
        // `openssl passwd -6 -salt saltsalt secret`.
        let sha512 = "$6$saltsalt$TVLlQcbpFVof5W3Yz4DTP6gRstiNuHwwTt6GLc1E5n0U0aDehy0S5knV8wiOQSpT0Y77vwPZN.Pq.H91p5hVO1";
        let out = crypt("secret", sha512).unwrap();
        assert_eq!(out.as_slice(), sha512.as_bytes());
        assert_ne!(
            crypt("wrong", sha512).unwrap().as_slice(),
            sha512.as_bytes()
        );
        assert!(crypt("secret", "!locked").is_none());
    }
}
