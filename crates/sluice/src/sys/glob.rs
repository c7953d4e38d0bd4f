//! Shell-style patterns as libc matches them, so sftp, scp and ssh_config
//! read patterns exactly as OpenSSH's tools do: glob(3) over the file
//! system and fnmatch(3) on one name (no rustix counterpart).

use std::ffi::CStr;

/// Why glob(3) failed (GLOB_NOSPACE, GLOB_ABORTED); no match is not a
/// failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GlobFailed(pub libc::c_int);

/// The paths `pattern` matches, sorted as glob(3) sorts them (flags 0: no
/// brace or tilde expansion, a leading dot only matched by a dot); empty
/// when nothing matches.
pub fn glob(pattern: &CStr) -> Result<Vec<Vec<u8>>, GlobFailed> {
    // SAFETY: glob_t is plain data and all-zero is its initial state.
    let mut g: libc::glob_t = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string and our glob_t; no error callback.
    let rc = unsafe { libc::glob(pattern.as_ptr(), 0, None, &mut g) };
    let mut out = Vec::new();
    if rc == 0 {
        for i in 0..g.gl_pathc {
            // SAFETY: gl_pathv holds gl_pathc entries after a successful
            // glob, until globfree.
            let p = unsafe { *g.gl_pathv.add(i) };
            if !p.is_null() {
                // SAFETY: a NUL-terminated string glob allocated; copied
                // out before globfree.
                out.push(unsafe { CStr::from_ptr(p) }.to_bytes().to_vec());
            }
        }
    }
    // SAFETY: releases what glob allocated (also after a failure); `g` is
    // not read afterwards.
    unsafe { libc::globfree(&mut g) };
    match rc {
        0 | libc::GLOB_NOMATCH => Ok(out),
        rc => Err(GlobFailed(rc)),
    }
}

/// Whether `name` matches `pattern` (fnmatch(3)); with `leading_period`
/// (FNM_PERIOD) a leading dot only matches a dot.
pub fn fnmatch(pattern: &CStr, name: &CStr, leading_period: bool) -> bool {
    let flags = if leading_period { libc::FNM_PERIOD } else { 0 };
    // SAFETY: two valid C strings; fnmatch only reads them.
    unsafe { libc::fnmatch(pattern.as_ptr(), name.as_ptr(), flags) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_and_fnmatch() {
        assert!(fnmatch(c"*.rs", c"a.rs", true));
        assert!(!fnmatch(c"*", c".hidden", true));
        assert!(fnmatch(c"*", c".hidden", false));
        assert_eq!(glob(c"/nonexistent-sluice-*/x"), Ok(Vec::new()));
        assert!(glob(c"/etc/host[n]ame").unwrap_or_default().len() <= 1);
    }
}
