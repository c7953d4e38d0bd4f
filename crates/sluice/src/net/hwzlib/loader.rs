//! Opening a zlib-API library at run time: dlopen, the seven functions the
//! SSH zlib stream needs, the version check, and a round trip before it is
//! trusted. The hardware libraries (libnxz, a DFLTCC zlib, Intel's shim)
//! keep zlib's ABI, so `z_stream` is laid out as zlib.h declares it and its
//! size is passed to the init functions, which refuse a mismatch.
//!
//! A library, once loaded, stays loaded for the life of the process: the
//! engines hold plain function pointers into it, and hardware libraries set
//! up device contexts that dislike being unloaded.

use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void, CStr, CString};
use std::fmt;

use crate::sys::dl::Library;

// zlib.h constants (stable since zlib 1.0).
pub(super) const Z_OK: c_int = 0;
pub(super) const Z_STREAM_END: c_int = 1;
pub(super) const Z_BUF_ERROR: c_int = -5;
pub(super) const Z_SYNC_FLUSH: c_int = 2;
const Z_DEFLATED: c_int = 8;
const Z_DEFAULT_STRATEGY: c_int = 0;
/// A 32 KiB window with the RFC 1950 zlib header, as RFC 4253 6.2 asks.
const ZLIB_WINDOW_BITS: c_int = 15;
/// zlib's default memLevel (what deflateInit uses).
const DEF_MEM_LEVEL: c_int = 8;

/// `z_stream` as zlib.h declares it. Pinned on the heap by its users: zlib
/// keeps a pointer back to it and refuses a stream that moved.
#[repr(C)]
pub(super) struct ZStream {
    pub next_in: *const u8,
    pub avail_in: c_uint,
    pub total_in: c_ulong,
    pub next_out: *mut u8,
    pub avail_out: c_uint,
    pub total_out: c_ulong,
    msg: *const c_char,
    state: *mut c_void,
    zalloc: *mut c_void,
    zfree: *mut c_void,
    opaque: *mut c_void,
    data_type: c_int,
    adler: c_ulong,
    reserved: c_ulong,
}

// zlib.h on LP64 (Linux on x86_64, aarch64, ppc64le, s390x): 112 bytes.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<ZStream>() == 112);

impl ZStream {
    /// A zeroed stream: null buffers, and null zalloc/zfree/opaque, which
    /// tell the library to use its own allocator.
    pub(super) fn new() -> Box<ZStream> {
        Box::new(ZStream {
            next_in: std::ptr::null(),
            avail_in: 0,
            total_in: 0,
            next_out: std::ptr::null_mut(),
            avail_out: 0,
            total_out: 0,
            msg: std::ptr::null(),
            state: std::ptr::null_mut(),
            zalloc: std::ptr::null_mut(),
            zfree: std::ptr::null_mut(),
            opaque: std::ptr::null_mut(),
            data_type: 0,
            adler: 0,
            reserved: 0,
        })
    }

    /// Forgets the caller's buffers once a call returned.
    pub(super) fn clear_buffers(&mut self) {
        self.next_in = std::ptr::null();
        self.avail_in = 0;
        self.next_out = std::ptr::null_mut();
        self.avail_out = 0;
    }
}

type DeflateInit2 = unsafe extern "C" fn(
    *mut ZStream,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const c_char,
    c_int,
) -> c_int;
type InflateInit2 = unsafe extern "C" fn(*mut ZStream, c_int, *const c_char, c_int) -> c_int;
type Step = unsafe extern "C" fn(*mut ZStream, c_int) -> c_int;
type End = unsafe extern "C" fn(*mut ZStream) -> c_int;
type Version = unsafe extern "C" fn() -> *const c_char;

/// A loaded zlib-API library: where it came from and its entry points.
pub struct ZlibLibrary {
    /// The file the dynamic loader opened (resolved from the name tried).
    pub file: String,
    /// What its `zlibVersion()` says.
    pub version: String,
    version_c: CString,
    deflate_init2: DeflateInit2,
    deflate: Step,
    deflate_end: End,
    inflate_init2: InflateInit2,
    inflate: Step,
    inflate_end: End,
}

// Send and Sync: only function pointers into a library that is never
// unloaded, and strings; zlib's functions are reentrant per stream.

/// Why a library was not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// Loading it as root would run code others can change: this file, or
    /// this directory above it, is not root's alone.
    Unsafe {
        /// The file or directory.
        path: std::path::PathBuf,
        /// A directory (else the library file).
        directory: bool,
    },
    /// dlopen failed (not found, not a shared object, wrong architecture).
    Open(String),
    /// A zlib function is missing: not a zlib-API library.
    Symbol(&'static str),
    /// `zlibVersion()` is not a zlib 1.x ABI.
    Version(String),
    /// It loaded but a deflate/inflate round trip failed.
    SelfTest(SelfTestError),
}

/// Which step of the load-time round trip (engine.rs) failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelfTestError {
    /// deflateInit2_ returned this code.
    DeflateInit(c_int),
    /// inflateInit2_ returned this code.
    InflateInit(c_int),
    /// A deflate call failed.
    Deflate,
    /// An inflate call failed.
    Inflate,
    /// Inflate did not give back the input.
    Mismatch,
}

impl fmt::Display for SelfTestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SelfTestError::DeflateInit(rc) => write!(f, "deflateInit2_ returned {rc}"),
            SelfTestError::InflateInit(rc) => write!(f, "inflateInit2_ returned {rc}"),
            SelfTestError::Deflate => f.write_str("deflate failed"),
            SelfTestError::Inflate => f.write_str("inflate failed"),
            SelfTestError::Mismatch => {
                f.write_str("inflate did not give back what deflate was given")
            }
        }
    }
}

impl std::error::Error for SelfTestError {}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Unsafe { path, directory } => write!(
                f,
                "not loaded: bad ownership or modes for {} {} (must be owned by root and not group or world-writable)",
                if *directory { "directory" } else { "file" },
                path.display()
            ),
            LoadError::Open(e) => write!(f, "cannot load: {e}"),
            LoadError::Symbol(s) => write!(f, "no symbol {s}: not a zlib-API library"),
            LoadError::Version(v) => write!(f, "zlibVersion() is \"{v}\", not a zlib 1.x ABI"),
            LoadError::SelfTest(e) => {
                write!(f, "loaded, but its deflate/inflate self-test failed: {e}")
            }
        }
    }
}

impl ZlibLibrary {
    /// Opens `name` (a path, or a soname the dynamic loader searches for)
    /// and resolves the zlib functions; `load` (engine.rs) adds the round
    /// trip before the library is trusted.
    pub(super) fn open(name: &str) -> Result<ZlibLibrary, LoadError> {
        let c_name = CString::new(name).map_err(|_| LoadError::Open("NUL in the name".into()))?;
        let handle = Library::open(&c_name).map_err(|e| {
            LoadError::Open(e.unwrap_or_else(|| "unknown dynamic loader error".into()))
        })?;
        // On an error the handle is dropped, which unloads the library:
        // nothing of it ran but zlibVersion.
        let lib = Self::resolve(&handle, name)?;
        // The engines hold plain function pointers into it.
        handle.keep_loaded();
        Ok(lib)
    }

    /// The entry points and version of the library open as `handle`.
    fn resolve(handle: &Library, name: &str) -> Result<ZlibLibrary, LoadError> {
        /// The symbol `s` as a `T`.
        ///
        /// # Safety
        /// `T` is the C prototype zlib.h gives the function `s`.
        unsafe fn sym<T: Copy>(handle: &Library, s: &'static CStr) -> Result<T, LoadError> {
            let missing = || LoadError::Symbol(s.to_str().unwrap_or_default());
            // SAFETY: the caller vouches for the type; the library is kept
            // loaded (`open`) before any pointer outlives `handle`.
            unsafe { handle.symbol(s) }.ok_or_else(missing)
        }
        // SAFETY: (each `sym` below) the target type spells the C prototype
        // zlib.h declares for that function.
        let version_fn: Version = unsafe { sym(handle, c"zlibVersion")? };
        // SAFETY: as above.
        let deflate: Step = unsafe { sym(handle, c"deflate")? };
        // SAFETY: as above, for each symbol.
        let lib = unsafe {
            ZlibLibrary {
                file: handle
                    .file_of_symbol(c"deflate")
                    .unwrap_or_else(|| name.to_owned()),
                version: String::new(),
                version_c: CString::default(),
                deflate_init2: sym::<DeflateInit2>(handle, c"deflateInit2_")?,
                deflate,
                deflate_end: sym::<End>(handle, c"deflateEnd")?,
                inflate_init2: sym::<InflateInit2>(handle, c"inflateInit2_")?,
                inflate: sym::<Step>(handle, c"inflate")?,
                inflate_end: sym::<End>(handle, c"inflateEnd")?,
            }
        };
        // SAFETY: zlibVersion takes nothing and returns a static
        // NUL-terminated string; the library is loaded (`handle` lives).
        let v = unsafe { version_fn() };
        let version = if v.is_null() {
            String::new()
        } else {
            // SAFETY: non-null, NUL-terminated, static.
            unsafe { CStr::from_ptr(v) }.to_string_lossy().into_owned()
        };
        // zlib's init functions compare the first character of the version
        // the caller was built for; a 1.x ABI is what ZStream describes.
        if !version.starts_with("1.") {
            return Err(LoadError::Version(version));
        }
        Ok(ZlibLibrary {
            version_c: CString::new(version.clone()).unwrap_or_default(),
            version,
            ..lib
        })
    }

    /// `deflateInit2(z, level, Z_DEFLATED, 15, 8, Z_DEFAULT_STRATEGY)`.
    pub(super) fn deflate_init(&self, z: &mut ZStream, level: c_int) -> c_int {
        // SAFETY: z is a zeroed, heap-pinned stream; the version and size
        // are what the library checks its ABI against.
        unsafe {
            (self.deflate_init2)(
                z,
                level,
                Z_DEFLATED,
                ZLIB_WINDOW_BITS,
                DEF_MEM_LEVEL,
                Z_DEFAULT_STRATEGY,
                self.version_c.as_ptr(),
                std::mem::size_of::<ZStream>() as c_int,
            )
        }
    }

    /// `inflateInit2(z, 15)`.
    pub(super) fn inflate_init(&self, z: &mut ZStream) -> c_int {
        // SAFETY: as deflate_init.
        unsafe {
            (self.inflate_init2)(
                z,
                ZLIB_WINDOW_BITS,
                self.version_c.as_ptr(),
                std::mem::size_of::<ZStream>() as c_int,
            )
        }
    }

    /// `deflate(z, flush)`.
    ///
    /// # Safety
    /// `z` was initialised by [`Self::deflate_init`] (and not ended), and its
    /// `next_in`/`next_out` point to at least `avail_in`/`avail_out` bytes.
    pub(super) unsafe fn deflate(&self, z: &mut ZStream, flush: c_int) -> c_int {
        (self.deflate)(z, flush)
    }

    /// `inflate(z, flush)`.
    ///
    /// # Safety
    /// As [`Self::deflate`], for a stream from [`Self::inflate_init`].
    pub(super) unsafe fn inflate(&self, z: &mut ZStream, flush: c_int) -> c_int {
        (self.inflate)(z, flush)
    }

    /// `deflateEnd(z)`; `z` must come from a successful `deflate_init`.
    pub(super) fn deflate_end(&self, z: &mut ZStream) {
        // SAFETY: an initialised stream, ended once (by its owner's Drop).
        unsafe { (self.deflate_end)(z) };
    }

    /// `inflateEnd(z)`; `z` must come from a successful `inflate_init`.
    pub(super) fn inflate_end(&self, z: &mut ZStream) {
        // SAFETY: as deflate_end.
        unsafe { (self.inflate_end)(z) };
    }
}
