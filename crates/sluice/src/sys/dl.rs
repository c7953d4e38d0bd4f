//! Shared libraries opened at run time: dlopen, symbols looked up by name
//! (dlsym), the file a symbol came from (dladdr); rustix has no dynamic
//! loader.
//!
//! A [`Library`] owns its handle and closes it (dlclose) when dropped,
//! unless [`Library::keep_loaded`] keeps it for the life of the process, as
//! the hardware zlib engines and the FIDO middleware need: their function
//! pointers are used long after loading, and such libraries leave device
//! contexts, threads or handlers behind.

use std::ffi::{c_void, CStr};
use std::ptr::NonNull;

/// An open shared library (a dlopen handle); dlclose on drop.
pub struct Library {
    handle: NonNull<c_void>,
}

impl Library {
    /// Opens `name` (a path, or a soname the dynamic loader searches for)
    /// with RTLD_NOW (every symbol bound now, so a missing one fails here)
    /// and RTLD_LOCAL (its symbols stay out of the global namespace). The
    /// library's constructors run here, as when a program is linked with
    /// it; which library is trusted is the caller's choice. Err is
    /// dlerror's text, None when the loader gives none.
    pub fn open(name: &CStr) -> Result<Library, Option<String>> {
        Library::open_with(name, libc::RTLD_NOW | libc::RTLD_LOCAL)
    }

    /// As [`Library::open`], but with RTLD_GLOBAL: the library's symbols
    /// serve the libraries it loads in turn (libpam's modules, as sshd
    /// opens it).
    pub fn open_global(name: &CStr) -> Result<Library, Option<String>> {
        Library::open_with(name, libc::RTLD_NOW | libc::RTLD_GLOBAL)
    }

    fn open_with(name: &CStr, flags: libc::c_int) -> Result<Library, Option<String>> {
        // SAFETY: a valid C string; dlopen keeps no pointer to it.
        let handle = unsafe { libc::dlopen(name.as_ptr(), flags) };
        match NonNull::new(handle) {
            Some(handle) => Ok(Library { handle }),
            None => Err(dl_error()),
        }
    }

    /// The symbol `name` as a `T` (a function pointer type), None when the
    /// library has no such symbol (or it is NULL).
    ///
    /// # Safety
    /// The caller asserts that the symbol is of type `T`: a function whose
    /// C prototype `T` spells (an `unsafe extern "C" fn`), or a pointer to
    /// data of that type. The value is valid only while the library is
    /// loaded: until this `Library` is dropped, for ever after
    /// [`Library::keep_loaded`].
    pub unsafe fn symbol<T: Copy>(&self, name: &CStr) -> Option<T> {
        assert_eq!(
            std::mem::size_of::<T>(),
            std::mem::size_of::<*mut c_void>(),
            "a symbol is pointer-sized"
        );
        let p = self.address(name)?;
        // SAFETY: same size (asserted); the caller vouches that the symbol
        // has type `T`.
        Some(unsafe { std::mem::transmute_copy::<*mut c_void, T>(&p.as_ptr()) })
    }

    /// The file the loader opened for this library, found through the
    /// symbol `name` in it (dladdr): a soname it searched for, as the path
    /// it found. None when there is no such symbol or the loader cannot say.
    pub fn file_of_symbol(&self, name: &CStr) -> Option<String> {
        let addr = self.address(name)?;
        // SAFETY: Dl_info is plain data (pointers and integers); all-zero
        // is a valid value.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        // SAFETY: dladdr only looks the address up among the loaded
        // objects (it is not dereferenced); `info` is a valid out-parameter.
        if unsafe { libc::dladdr(addr.as_ptr(), &mut info) } == 0 || info.dli_fname.is_null() {
            return None;
        }
        // SAFETY: dli_fname is a NUL-terminated string owned by the loader,
        // valid while the library is loaded (it is: `self` lives).
        Some(
            unsafe { CStr::from_ptr(info.dli_fname) }
                .to_string_lossy()
                .into_owned(),
        )
    }

    /// Keeps the library loaded for the life of the process: the handle
    /// is given up, never closed, so symbols taken from it stay valid.
    pub fn keep_loaded(self) {
        std::mem::forget(self);
    }

    /// dlsym: the address of `name`, None when absent or NULL.
    fn address(&self, name: &CStr) -> Option<NonNull<c_void>> {
        // SAFETY: a live handle (owned by `self`) and a valid C string;
        // dlsym only looks the name up.
        NonNull::new(unsafe { libc::dlsym(self.handle.as_ptr(), name.as_ptr()) })
    }
}

impl Drop for Library {
    fn drop(&mut self) {
        // SAFETY: a live handle, closed once; symbols taken from it are not
        // used after this (the contract of `symbol`).
        unsafe { libc::dlclose(self.handle.as_ptr()) };
    }
}

/// Frees memory that a loaded library allocated with malloc and handed
/// over to its caller (sk-api.h's signature responses); NULL is ignored.
///
/// # Safety
/// `p` is NULL or came from the C allocator (malloc, calloc, realloc) and
/// is freed once; nothing uses it afterwards.
pub unsafe fn free_malloced(p: *mut c_void) {
    // SAFETY: the caller vouches for `p`; free(NULL) does nothing.
    unsafe { libc::free(p) };
}

/// The last dlerror() text, None when there is none.
fn dl_error() -> Option<String> {
    // SAFETY: dlerror returns NULL or a NUL-terminated thread-local string.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        None
    } else {
        // SAFETY: non-NULL (checked), NUL-terminated, read before any
        // other dl call of this thread.
        Some(unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_symbol_and_file() {
        let e = Library::open(c"/nonexistent/libnothing.so")
            .err()
            .flatten()
            .expect("no such file");
        assert!(e.contains("/nonexistent/libnothing.so"), "{e}");
        let lib = Library::open(c"libc.so.6").unwrap();
        type Abs = unsafe extern "C" fn(std::ffi::c_int) -> std::ffi::c_int;
        // SAFETY: libc's abs has abs(3)'s prototype.
        let abs: Abs = unsafe { lib.symbol(c"abs") }.unwrap();
        // SAFETY: abs takes a number; libc stays loaded (`lib` lives).
        assert_eq!(unsafe { abs(-3) }, 3);
        // SAFETY: as above (the type does not matter for a missing name).
        assert!(unsafe { lib.symbol::<Abs>(c"no_such_symbol_here") }.is_none());
        let file = lib.file_of_symbol(c"abs").unwrap();
        assert!(file.contains("libc"), "{file}");
    }
}
