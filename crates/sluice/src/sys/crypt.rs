//! Password hashing with libxcrypt's crypt_rn (libcrypt.so.1, loaded at
//! run time so building needs no -dev package): a library function, not a
//! system call, so not in rustix.

use std::ffi::{c_char, c_int, c_void, CStr};

/// libxcrypt's `char *crypt_rn(const char *phrase, const char *setting,
/// void *data, int size)`: reentrant, NULL on failure.
type CryptRn =
    unsafe extern "C" fn(*const c_char, *const c_char, *mut c_void, c_int) -> *mut c_char;

/// sizeof(struct crypt_data) in libxcrypt: the least `data` given to
/// [`Crypt::crypt_rn`] holds.
pub const CRYPT_DATA_SIZE: usize = 32768;

/// Why libcrypt's crypt_rn could not be loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadError {
    /// libcrypt.so.1 could not be opened.
    NoLibrary,
    /// It has no crypt_rn.
    NoFunction,
}

/// libcrypt.so.1's crypt_rn.
#[derive(Clone, Copy)]
pub struct Crypt {
    f: CryptRn,
}

/// Opens libcrypt.so.1 (kept loaded) and finds crypt_rn; call once and
/// keep the result.
pub fn load() -> Result<Crypt, LoadError> {
    let lib = super::dl::Library::open(c"libcrypt.so.1").map_err(|_| LoadError::NoLibrary)?;
    // SAFETY: libxcrypt's crypt_rn has the prototype CryptRn; the library
    // stays loaded (below) for as long as the pointer lives.
    let f = unsafe { lib.symbol::<CryptRn>(c"crypt_rn") }.ok_or(LoadError::NoFunction)?;
    lib.keep_loaded();
    Ok(Crypt { f })
}

impl Crypt {
    /// crypt_rn(phrase, setting) with `data` as its work area (at least
    /// [`CRYPT_DATA_SIZE`] bytes, or None; zeroed here first, as
    /// crypt_rn asks); the hash, a string inside `data`, or None when
    /// libcrypt refuses.
    pub fn crypt_rn<'d>(
        &self,
        phrase: &CStr,
        setting: &CStr,
        data: &'d mut [u8],
    ) -> Option<&'d CStr> {
        if data.len() < CRYPT_DATA_SIZE {
            return None;
        }
        data[..CRYPT_DATA_SIZE].fill(0);
        // SAFETY: phrase and setting are NUL-terminated and only read; data
        // is CRYPT_DATA_SIZE writable bytes, the size passed; the result is
        // null or points into data.
        let out = unsafe {
            (self.f)(
                phrase.as_ptr(),
                setting.as_ptr(),
                data.as_mut_ptr().cast(),
                CRYPT_DATA_SIZE as c_int,
            )
        };
        // SAFETY: non-null: a NUL-terminated string inside data, which the
        // answer borrows.
        (!out.is_null()).then(|| unsafe { CStr::from_ptr(out) })
    }
}
