//! A FIDO middleware library (SecurityKeyProvider, SSH_SK_PROVIDER) loaded
//! with dlopen and asked to sign, through the C interface OpenSSH defines
//! for such libraries (sk-api.h, API version 10, `0x000a0000`, OpenSSH 8.9
//! and later): `uint32_t sk_api_version(void)` and
//!
//! ```text
//! int sk_sign(uint32_t alg, const uint8_t *data, size_t data_len,
//!             const char *application, const uint8_t *key_handle,
//!             size_t key_handle_len, uint8_t flags, const char *pin,
//!             struct sk_option **options, struct sk_sign_response **resp);
//! struct sk_sign_response { uint8_t flags; uint32_t counter;
//!     uint8_t *sig_r; size_t sig_r_len; uint8_t *sig_s; size_t sig_s_len; };
//! ```
//!
//! The library hashes `data` itself and allocates the response with
//! malloc; it is freed here with free. Only signing is used: keys are made
//! by `ssh-keygen -w`. sluice has no built-in FIDO support ("internal").

use std::ffi::{c_char, c_int, CStr, CString};
use std::fmt;

use crate::sys::dl::{self, Library};

/// The API major version this speaks (sk-api.h SSH_SK_VERSION_MAJOR).
const VERSION_MAJOR: u32 = 0x000a_0000;
/// sk-api.h SSH_SK_VERSION_MAJOR_MASK.
const VERSION_MAJOR_MASK: u32 = 0xffff_0000;
/// sk-api.h algorithm numbers.
pub(crate) const ALG_ECDSA: u32 = 0;
/// Ed25519.
pub(crate) const ALG_ED25519: u32 = 1;
/// sk-api.h SSH_SK_ERR_PIN_REQUIRED.
const ERR_PIN_REQUIRED: c_int = -3;
/// sk-api.h SSH_SK_ERR_DEVICE_NOT_FOUND.
const ERR_DEVICE_NOT_FOUND: c_int = -4;

#[repr(C)]
struct SignResponse {
    flags: u8,
    counter: u32,
    sig_r: *mut u8,
    sig_r_len: usize,
    sig_s: *mut u8,
    sig_s_len: usize,
}

/// sk-api.h `struct sk_option`; none are sent, the list is only its NULL.
#[repr(C)]
struct SkOption {
    name: *mut c_char,
    value: *mut c_char,
    required: u8,
}

type ApiVersion = unsafe extern "C" fn() -> u32;
type Sign = unsafe extern "C" fn(
    u32,
    *const u8,
    usize,
    *const c_char,
    *const u8,
    usize,
    u8,
    *const c_char,
    *mut *mut SkOption,
    *mut *mut SignResponse,
) -> c_int;

/// A loaded middleware library; never unloaded (its code may have left
/// threads or handlers behind, as OpenSSH's ssh-sk-helper assumes too).
pub struct SkProvider {
    name: String,
    sign: Sign,
}

// Send and Sync: only a function pointer into a library that is never
// unloaded; calls are serialised by the caller (one signature at a time).

impl fmt::Debug for SkProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SkProvider({})", self.name)
    }
}

/// What a signature by the authenticator came back as.
pub struct SkSignOutput {
    /// The flags byte (user present, user verified).
    pub flags: u8,
    /// The signature counter.
    pub counter: u32,
    /// Ed25519: the 64-byte signature; ECDSA: r.
    pub sig_r: Vec<u8>,
    /// ECDSA: s; empty for Ed25519.
    pub sig_s: Vec<u8>,
}

/// Why the library cannot be loaded (`Load*`, `NoSymbol`, `ApiVersion`:
/// shown after `SecurityKeyProvider PATH: `) or did not sign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkError {
    /// The path holds a NUL byte.
    NulInPath {
        /// The library's path.
        path: String,
    },
    /// dlopen failed.
    Load {
        /// The library's path.
        path: String,
        /// dlerror's text.
        dl: String,
    },
    /// A function of sk-api.h is missing.
    NoSymbol {
        /// The library's path.
        path: String,
        /// The function.
        symbol: &'static str,
    },
    /// The library speaks another major API version.
    ApiVersion {
        /// The library's path.
        path: String,
        /// What sk_api_version returned.
        version: u32,
    },
    /// The key file's application string holds a NUL byte.
    NulInApplication,
    /// The key needs a PIN (SSH_SK_ERR_PIN_REQUIRED).
    PinRequired,
    /// No authenticator present (SSH_SK_ERR_DEVICE_NOT_FOUND).
    DeviceNotFound,
    /// sk_sign failed otherwise.
    SignFailed {
        /// The library's path.
        provider: String,
        /// sk_sign's return code.
        code: c_int,
    },
}

impl fmt::Display for SkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkError::NulInPath { path } => {
                write!(f, "SecurityKeyProvider {path}: NUL in the name")
            }
            SkError::Load { path, dl } => write!(f, "SecurityKeyProvider {path}: cannot load: {dl}"),
            SkError::NoSymbol { path, symbol } => write!(
                f,
                "SecurityKeyProvider {path}: no symbol {symbol}: not a FIDO middleware library"
            ),
            SkError::ApiVersion { path, version } => write!(
                f,
                "SecurityKeyProvider {path}: API version 0x{version:08x}, not 0x{VERSION_MAJOR:08x} (OpenSSH 8.9 to 10's)"
            ),
            SkError::NulInApplication => f.write_str("application with a NUL"),
            SkError::PinRequired => f.write_str("the security key needs a PIN, which sluice cannot ask for; add the key to ssh-agent (ssh-add) and use the agent"),
            SkError::DeviceNotFound => f.write_str("no security key found: is it plugged in?"),
            SkError::SignFailed { provider, code } => {
                write!(f, "{provider}: signing failed (error {code})")
            }
        }
    }
}

impl std::error::Error for SkError {}

impl SkProvider {
    /// Opens the library at `path` and checks its API version.
    pub fn load(path: &str) -> Result<SkProvider, SkError> {
        let c = CString::new(path).map_err(|_| SkError::NulInPath {
            path: path.to_owned(),
        })?;
        // The library's constructors run here, as they do when ssh loads it.
        let lib = Library::open(&c).map_err(|dl| SkError::Load {
            path: path.to_owned(),
            dl: dl.unwrap_or_else(|| "unknown error".into()),
        })?;
        let checked = Self::check(&lib, path);
        // Never unloaded, even when refused (as before sys::dl): its
        // constructors ran at dlopen and may have left threads or handlers
        // behind.
        lib.keep_loaded();
        checked
    }

    /// The library's sk_sign, once its API version is checked.
    fn check(lib: &Library, path: &str) -> Result<SkProvider, SkError> {
        let missing = |s: &'static CStr| SkError::NoSymbol {
            path: path.to_owned(),
            symbol: s.to_str().unwrap_or_default(),
        };
        // SAFETY: the symbols are sk-api.h's functions, whose prototypes
        // the target types spell; the library is kept loaded (`load`).
        let version: ApiVersion =
            unsafe { lib.symbol(c"sk_api_version") }.ok_or_else(|| missing(c"sk_api_version"))?;
        // SAFETY: as above, sk_sign's prototype.
        let sign: Sign = unsafe { lib.symbol(c"sk_sign") }.ok_or_else(|| missing(c"sk_sign"))?;
        // SAFETY: sk_api_version takes nothing and returns a number.
        let v = unsafe { version() };
        if v & VERSION_MAJOR_MASK != VERSION_MAJOR {
            return Err(SkError::ApiVersion {
                path: path.to_owned(),
                version: v,
            });
        }
        Ok(SkProvider {
            name: path.to_owned(),
            sign,
        })
    }

    /// Asks the authenticator to sign `data` with the key `key_handle` of
    /// `application` (the key file's fields); `flags` are the key's.
    pub fn sign(
        &self,
        alg: u32,
        data: &[u8],
        application: &str,
        key_handle: &[u8],
        flags: u8,
    ) -> Result<SkSignOutput, SkError> {
        let app = CString::new(application).map_err(|_| SkError::NulInApplication)?;
        let mut options: [*mut SkOption; 1] = [std::ptr::null_mut()];
        let mut resp: *mut SignResponse = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the length given and lives
        // across the call; `options` is a NULL-terminated list; the
        // library writes a malloc'd response to `resp` on success.
        let rc = unsafe {
            (self.sign)(
                alg,
                data.as_ptr(),
                data.len(),
                app.as_ptr(),
                key_handle.as_ptr(),
                key_handle.len(),
                flags,
                std::ptr::null(),
                options.as_mut_ptr(),
                &mut resp,
            )
        };
        if rc != 0 || resp.is_null() {
            return Err(match rc {
                ERR_PIN_REQUIRED => SkError::PinRequired,
                ERR_DEVICE_NOT_FOUND => SkError::DeviceNotFound,
                _ => SkError::SignFailed {
                    provider: self.name.clone(),
                    code: rc,
                },
            });
        }
        // SAFETY: resp is the library's response; its buffers are
        // sig_r_len / sig_s_len long (or NULL), all from malloc, and each
        // is freed once, after it is copied.
        unsafe {
            let r = &*resp;
            let take = |p: *mut u8, n: usize| {
                if p.is_null() {
                    Vec::new()
                } else {
                    std::slice::from_raw_parts(p, n).to_vec()
                }
            };
            let out = SkSignOutput {
                flags: r.flags,
                counter: r.counter,
                sig_r: take(r.sig_r, r.sig_r_len),
                sig_s: take(r.sig_s, r.sig_s_len),
            };
            dl::free_malloced(r.sig_r.cast());
            dl::free_malloced(r.sig_s.cast());
            dl::free_malloced(resp.cast());
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_errors_by_kind() {
        let e = SkProvider::load("/nonexistent/libsk.so").unwrap_err();
        assert!(matches!(&e, SkError::Load { path, .. } if path == "/nonexistent/libsk.so"));
        assert!(e
            .to_string()
            .starts_with("SecurityKeyProvider /nonexistent/libsk.so: cannot load: "));
        assert!(matches!(
            SkProvider::load("a\0b"),
            Err(SkError::NulInPath { .. })
        ));
        // A library that is no FIDO middleware.
        if let Err(e @ SkError::NoSymbol { .. }) = SkProvider::load("libc.so.6") {
            assert_eq!(
                e.to_string(),
                "SecurityKeyProvider libc.so.6: no symbol sk_api_version: not a FIDO middleware library"
            );
        }
    }
}
