//! Hardware deflate engines (`EnableHwCompression`, as AIX's OpenSSH names
//! it): the zlib stream of `ssh -C` compressed and inflated by a zlib-API
//! library found at run time, in front of a deflate engine: libnxz (IBM
//! POWER9/10 NX), a zlib built with DFLTCC (IBM Z), Intel's zlib-accel shim
//! (QAT, IAA), or the library an admin names with `HwCompressionLibrary`.
//! The wire is the same zlib stream, so any zlib peer reads it.
//!
//! Which library: the admin's first, then the known names for this
//! machine's architecture ([`candidates`]). The first that loads, resolves
//! the zlib functions and passes a round trip ([`loader`]) replaces the
//! software `zlib@openssh.com` and `zlib` engines ([`engine`]) and goes
//! first in the offer: asking for the hardware is asking to use it, even
//! where `zstd@sluice.dev` would otherwise be negotiated. When none loads,
//! the reasons are logged and the software engines stay.
//!
//! A process loads at most once per library setting: a library stays mapped.
//!
//! sluiced loads it only in the post-auth process, after the uid change
//! ([`server_engines`]): never in the root monitor, so the library's
//! constructors never run as root and its code is not mapped in the
//! sandboxed pre-auth child (which never compresses: a server offers only
//! methods that start after authentication).

pub mod engine;
pub mod loader;

use crate::log;
use engine::HwZlibEngine;
use loader::{LoadError, ZlibLibrary};
use sluice_proto::transport::compress::{Activation, CompressionEngine};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// `EnableHwCompression` and `HwCompressionLibrary`, as configured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HwSettings {
    /// EnableHwCompression (default no).
    pub enabled: bool,
    /// HwCompressionLibrary: a library path tried before the known names
    /// (None for `none` or unset).
    pub library: Option<String>,
}

/// The libraries tried, in order: `library` (the admin's), then the known
/// hardware libraries of this architecture.
pub fn candidates(library: Option<&str>) -> Vec<String> {
    let mut v: Vec<String> = library.map(str::to_owned).into_iter().collect();
    v.extend(known_names().iter().map(|s| (*s).to_owned()));
    v
}

/// The hardware zlib libraries this architecture can have.
fn known_names() -> &'static [&'static str] {
    if cfg!(target_arch = "powerpc64") {
        // libnxz (github.com/libnxz/power-gzip): the POWER9/10 NX GZIP unit,
        // Linux's counterpart of AIX's zlibNX.
        &["libnxz.so.0"]
    } else if cfg!(target_arch = "x86_64") {
        // Intel's zlib-accel shim (QAT, IAA). It offloads whole-buffer calls
        // and passes streaming ones (like SSH's) to its software zlib.
        &["libzlib-accel.so"]
    } else if cfg!(target_arch = "s390x") && s390_has_dfltcc() {
        // The distribution's zlib: RHEL, SUSE and Ubuntu build it with DFLTCC.
        &["libz.so.1"]
    } else {
        &[]
    }
}

/// Whether the CPU has the DEFLATE CONVERSION CALL facility (HWCAP_S390_DFLT).
#[cfg(target_arch = "s390x")]
fn s390_has_dfltcc() -> bool {
    const HWCAP_S390_DFLT: usize = 1 << 18;
    rustix::param::linux_hwcap().0 & HWCAP_S390_DFLT != 0
}

#[cfg(not(target_arch = "s390x"))]
fn s390_has_dfltcc() -> bool {
    false
}

/// The library for `settings`, loaded (and logged) once per process; None
/// when disabled or when nothing loads.
pub fn library(settings: &HwSettings) -> Option<Arc<ZlibLibrary>> {
    loaded(settings, Owner::RootIfRoot)
}

/// Who must own a library named by path before it is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Owner {
    /// Root, when this process is root (a client: a user may load their own).
    RootIfRoot,
    /// Root, always (sluiced: its post-auth process runs as the user, who
    /// must not get code of their own run in it, past a ForceCommand).
    Root,
}

fn loaded(settings: &HwSettings, owner: Owner) -> Option<Arc<ZlibLibrary>> {
    if !settings.enabled {
        return None;
    }
    /// What each HwCompressionLibrary setting loaded (or not).
    type Loaded = HashMap<(Option<String>, Owner), Option<Arc<ZlibLibrary>>>;
    static LOADED: OnceLock<Mutex<Loaded>> = OnceLock::new();
    let mut cache = LOADED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    cache
        .entry((settings.library.clone(), owner))
        .or_insert_with(|| first_that_loads(settings.library.as_deref(), owner))
        .clone()
}

/// Tries the candidates in order; logs which one is used, or why none is.
fn first_that_loads(library: Option<&str>, owner: Owner) -> Option<Arc<ZlibLibrary>> {
    let mut tried = Vec::new();
    for name in candidates(library) {
        match root_safe(&name, owner).and_then(|()| ZlibLibrary::load(&name)) {
            Ok(lib) => {
                log!(
                    Debug1,
                    "EnableHwCompression: using {name} from {} (zlib {})",
                    lib.file,
                    lib.version
                );
                return Some(Arc::new(lib));
            }
            Err(e) => {
                if Some(name.as_str()) == library {
                    // The admin named it: say so without -v.
                    log!(Info, "HwCompressionLibrary {name}: {e}");
                }
                tried.push(format!("{name}: {e}"));
            }
        }
    }
    let tried = if tried.is_empty() {
        "none known for this architecture; name one with HwCompressionLibrary".to_owned()
    } else {
        tried.join("; ")
    };
    log!(
        Debug1,
        "EnableHwCompression: no hardware deflate library found (tried {tried}); using software zlib"
    );
    None
}

/// In sluiced, or as root (root's own ssh), a library named by path must
/// be a file that only root can change: it and every directory above it
/// owned by root and writable by neither group nor others, as sshd asks of
/// AuthorizedKeysCommand. Names without a `/` are the dynamic loader's to
/// find, in the system's library directories.
fn root_safe(name: &str, owner: Owner) -> Result<(), LoadError> {
    let root = rustix::process::geteuid().is_root();
    if !name.contains('/') || (owner == Owner::RootIfRoot && !root) {
        return Ok(());
    }
    use std::os::unix::fs::MetadataExt;
    let real = std::fs::canonicalize(name).map_err(|e| {
        LoadError::Open(format!(
            "{name}: {}",
            crate::io_error::describe_io_error(&e)
        ))
    })?;
    let mut at = Some(real.as_path());
    while let Some(p) = at {
        let m =
            std::fs::metadata(p).map_err(|e| LoadError::Open(format!("{}: {e}", p.display())))?;
        if m.uid() != 0 || m.mode() & 0o022 != 0 {
            return Err(LoadError::Unsafe {
                path: p.to_owned(),
                directory: m.is_dir(),
            });
        }
        at = p.parent();
    }
    Ok(())
}

/// `base` (a registry of engines, preferred first) with the software zlib
/// engines replaced by hardware ones in front, when `settings` enable it
/// and a library loads; otherwise `base` unchanged.
pub fn engines(
    base: Vec<Arc<dyn CompressionEngine>>,
    settings: &HwSettings,
) -> Vec<Arc<dyn CompressionEngine>> {
    let Some(lib) = library(settings) else {
        return base;
    };
    let mut v: Vec<Arc<dyn CompressionEngine>> = vec![
        Arc::new(HwZlibEngine::new(lib.clone(), Activation::Delayed)),
        Arc::new(HwZlibEngine::new(lib, Activation::Immediate)),
    ];
    v.extend(base.into_iter().filter(|e| !is_zlib(e.as_ref())));
    v
}

fn is_zlib(e: &dyn CompressionEngine) -> bool {
    e.name() == "zlib@openssh.com" || e.name() == "zlib"
}

/// sluiced's engines. Before authentication (`load` false: the root
/// monitor, for itself and its sandboxed child) nothing is loaded: software
/// zlib takes the places the library's engines would have, so KEXINIT lists
/// the same names in the same order, and no library code runs as root or
/// stays mapped in the sandbox; nothing compresses before authentication
/// anyway. The post-auth process (`load`, after the uid change) loads the
/// library; if none loads, software zlib serves the same names.
pub fn server_engines(
    base: Vec<Arc<dyn CompressionEngine>>,
    settings: &HwSettings,
    load: bool,
) -> Vec<Arc<dyn CompressionEngine>> {
    if !settings.enabled {
        return base;
    }
    if load && loaded(settings, Owner::Root).is_some() {
        return engines(base, settings);
    }
    let (mut v, rest): (Vec<_>, Vec<_>) = base.into_iter().partition(|e| is_zlib(e.as_ref()));
    v.extend(rest);
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_proto::transport::compress::{default_engines, offered_names};

    const STAND_IN: &str = "/lib/x86_64-linux-gnu/libz.so.1";

    #[test]
    fn the_admins_library_comes_first() {
        let c = candidates(Some("/opt/hw/libz.so.1"));
        assert_eq!(c.first().map(String::as_str), Some("/opt/hw/libz.so.1"));
        assert_eq!(&c[1..], known_names());
    }

    #[test]
    fn disabled_or_missing_keeps_the_software_engines() {
        let names = |s: &HwSettings| offered_names(&engines(default_engines(), s), true);
        let software = offered_names(&default_engines(), true);
        let off = HwSettings {
            enabled: false,
            library: Some(STAND_IN.into()),
        };
        assert_eq!(names(&off), software);
        let missing = HwSettings {
            enabled: true,
            library: Some("/nonexistent/libhwz.so".into()),
        };
        assert_eq!(names(&missing), software);
        assert!(library(&missing).is_none());
    }

    #[test]
    fn a_library_without_zlib_is_refused() {
        // libm has none of the zlib functions.
        let Err(e) = ZlibLibrary::load("libm.so.6") else {
            panic!("libm loaded as zlib")
        };
        assert_eq!(e, loader::LoadError::Symbol("zlibVersion"), "{e}");
        let Err(e) = ZlibLibrary::load("/etc/hostname") else {
            panic!("a text file loaded")
        };
        assert!(matches!(e, loader::LoadError::Open(_)), "{e}");
    }

    #[test]
    fn as_root_a_library_others_can_write_is_refused() {
        if !rustix::process::geteuid().is_root() || !std::path::Path::new(STAND_IN).exists() {
            return;
        }
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("hwzlib-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lib = dir.join("libz.so.1");
        std::fs::copy(STAND_IN, &lib).unwrap();
        let name = lib.display().to_string();
        std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o646)).unwrap();
        let e = root_safe(&name, Owner::RootIfRoot).unwrap_err();
        assert!(
            matches!(&e, LoadError::Unsafe { path, directory: false } if path.ends_with("libz.so.1")),
            "{e}"
        );
        assert!(
            e.to_string().contains("bad ownership or modes for file"),
            "{e}"
        );
        std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = root_safe(&name, Owner::RootIfRoot).unwrap_err();
        assert!(
            matches!(&e, LoadError::Unsafe { path, directory: true } if path.file_name() == dir.file_name()),
            "{e}"
        );
        assert!(
            e.to_string()
                .contains("bad ownership or modes for directory"),
            "{e}"
        );
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(root_safe(STAND_IN, Owner::RootIfRoot), Ok(()));
        assert_eq!(root_safe("libz.so.1", Owner::RootIfRoot), Ok(()));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_stand_in_replaces_software_zlib_first() {
        if !std::path::Path::new(STAND_IN).exists() {
            return;
        }
        let s = HwSettings {
            enabled: true,
            library: Some(STAND_IN.into()),
        };
        let lib = library(&s).expect("the stand-in loads");
        assert!(lib.version.starts_with("1."), "{}", lib.version);
        assert!(lib.file.contains("libz.so"), "{}", lib.file);
        let e = engines(default_engines(), &s);
        assert_eq!(
            offered_names(&e, true),
            ["zlib@openssh.com", "zlib", "zstd@sluice.dev", "none"]
        );
        // The same library object for the same setting: loaded once.
        assert!(Arc::ptr_eq(&lib, &library(&s).unwrap()));
    }

    #[test]
    fn a_server_offers_the_same_names_before_and_after_loading() {
        let names = |s: &HwSettings, load: bool| {
            let e = server_engines(default_engines(), s, load);
            offered_names(
                &sluice_proto::transport::compress::after_auth_only(&e),
                false,
            )
        };
        let off = HwSettings::default();
        assert_eq!(names(&off, false), names(&off, true));
        assert_eq!(
            names(&off, false),
            ["none", "zstd@sluice.dev", "zlib@openssh.com"]
        );
        // Enabled: zlib first either way, whether a library loads or not.
        for library in [
            Some(STAND_IN.to_owned()),
            Some("/nonexistent/libhwz.so".into()),
        ] {
            let on = HwSettings {
                enabled: true,
                library,
            };
            let before = names(&on, false);
            assert_eq!(before, ["none", "zlib@openssh.com", "zstd@sluice.dev"]);
            assert_eq!(before, names(&on, true), "{on:?}");
        }
    }

    #[test]
    fn in_sluiced_a_library_must_be_roots_whoever_loads_it() {
        // A library writable by others, checked as a user's process would
        // (the post-auth process has the user's uid): refused in sluiced.
        let dir = std::env::temp_dir().join(format!("hwzlib-owner-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lib = dir.join("libz.so.1");
        std::fs::write(&lib, b"not a library").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o666)).unwrap();
        let name = lib.display().to_string();
        let e = root_safe(&name, Owner::Root).unwrap_err();
        assert!(matches!(e, LoadError::Unsafe { .. }), "{e}");
        assert!(e.to_string().contains("bad ownership or modes"), "{e}");
        if !rustix::process::geteuid().is_root() {
            assert_eq!(root_safe(&name, Owner::RootIfRoot), Ok(()));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
