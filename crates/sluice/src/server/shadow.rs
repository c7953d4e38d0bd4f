//! Password checks against the shadow file (UsePAM no), as sshd's
//! sys_auth_passwd: getspnam, then crypt() of the given password with the
//! stored hash as its setting (Debian stores yescrypt `$y$`), compared in
//! constant time. crypt comes from libcrypt.so.1 loaded at run time, so
//! building needs no -dev package. Locked accounts (`!`, `*`) never match.
//! [`account_refusal`] is sshd's expired and locked account check.

use crate::sys::crypt::{Crypt, LoadError, CRYPT_DATA_SIZE};
use std::ffi::CString;
use std::sync::OnceLock;
use zeroize::Zeroizing;

/// libcrypt's crypt_rn, loaded once; a missing library is logged then.
fn crypt_rn() -> Option<Crypt> {
    static F: OnceLock<Option<Crypt>> = OnceLock::new();
    *F.get_or_init(|| match crate::sys::crypt::load() {
        Ok(c) => Some(c),
        Err(LoadError::NoLibrary) => {
            crate::log!(
                Error,
                "shadow: cannot load libcrypt.so.1 (install libcrypt1)"
            );
            None
        }
        Err(LoadError::NoFunction) => None,
    })
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
    crate::sys::users::getspnam(&name, |sp| {
        let hash = Zeroizing::new(sp.hash?.to_string_lossy().into_owned());
        Some((hash, sp.expire))
    })
    .flatten()
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
    let phrase = std::ffi::CStr::from_bytes_with_nul(&phrase).ok()?;
    let s = f.crypt_rn(phrase, &setting, &mut data)?.to_bytes().to_vec();
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
