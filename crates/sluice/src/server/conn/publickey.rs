//! Public-key authentication decisions: authorized_keys (read as the user
//! with StrictModes, see keys/user_file.rs; key options), PermitRootLogin,
//! sshd's log lines. [`decide`] is shared with the privilege-separation
//! monitor (server/privsep/), which makes the same decision as root for
//! its sandboxed child.

use crate::config::sshd::ServerConfig as Sshd;
use crate::keys::authorized_keys::{self, KeyOptions};
use crate::keys::cert::Cert;
use crate::keys::identity::fingerprint_sha256;
use crate::keys::revoked;
use crate::log;
use crate::server::keys_command::{self, Which};
use crate::server::session::{self, UserInfo};
use sluice_proto::crypto::hostkey;
use std::net::SocketAddr;

use super::ServerConn;

mod cert;
mod user_files;

use user_files::read_user_files;

impl ServerConn {
    /// A publickey request: refused, accepted (PK_OK for a query), or for
    /// a signed one a step of AuthenticationMethods met; the user is
    /// recorded once a whole list is met, with the options of every key
    /// used merged (the most restrictive wins).
    pub(super) fn on_publickey(
        &mut self,
        conn: &mut sluice_proto::Connection,
        user: &str,
        key_blob: &[u8],
        signature: Option<&[u8]>,
    ) {
        let signed = signature.is_some();
        if !self.auth.same_user(user) {
            self.auth.change_of_user(conn, user);
            return;
        }
        let allowed = self.auth.valid_user(&self.cfg, user).is_some()
            && self.auth.publickey_allowed(&self.cfg, key_blob);
        let word = self.auth.verdict_word(&self.cfg, "publickey", None);
        let decided = if allowed {
            decide_signed(
                &self.cfg,
                (self.peer, self.local),
                user,
                key_blob,
                signature,
                word,
            )
        } else {
            None
        };
        let Some((info, opts)) = decided else {
            self.auth.reject_publickey();
            return;
        };
        if !signed {
            conn.auth_accept(); // PK_OK
            return;
        }
        let merged = match self.key_options.take() {
            Some(earlier) => earlier.merge(&opts),
            None => Some(opts),
        };
        let Some(merged) = merged else {
            self.auth.reject_publickey();
            return;
        };
        self.key_options = Some(merged);
        if self
            .auth
            .succeed(conn, &self.cfg, "publickey", None, Some(key_blob))
        {
            self.user = Some(info);
        }
    }
}

/// Whether `key_blob` may log in as `user` (RequiredRSASize, RevokedKeys,
/// authorized_keys or for a certificate TrustedUserCAKeys (see [`cert`]),
/// PermitRootLogin); the account and the key's options when it may.
/// Whether publickey is allowed at this step of AuthenticationMethods is
/// the caller's check (server/auth.rs `publickey_allowed`). `signed` only
/// changes the log line: "{word} publickey" is logged for a signed request
/// (`word`: "Accepted", or "Partial" for a step of several).
pub(crate) fn decide(
    cfg: &Sshd,
    (peer, local): (SocketAddr, SocketAddr),
    user: &str,
    key_blob: &[u8],
    signed: bool,
    word: &str,
) -> Option<(UserInfo, KeyOptions)> {
    decide_inner(cfg, (peer, local), user, key_blob, (signed, None), word)
}

/// [`decide`] for a request carrying its (verified) `signature`, or None
/// for a query: a FIDO key's signature must also show what the key's
/// options and PubkeyAuthOptions ask (sk_policy.rs), judged before the
/// "Accepted" line as sshd does.
pub(crate) fn decide_signed(
    cfg: &Sshd,
    addrs: (SocketAddr, SocketAddr),
    user: &str,
    key_blob: &[u8],
    signature: Option<&[u8]>,
    word: &str,
) -> Option<(UserInfo, KeyOptions)> {
    decide_inner(
        cfg,
        addrs,
        user,
        key_blob,
        (signature.is_some(), signature),
        word,
    )
}

fn decide_inner(
    cfg: &Sshd,
    (peer, local): (SocketAddr, SocketAddr),
    user: &str,
    key_blob: &[u8],
    (signed, signature): (bool, Option<&[u8]>),
    word: &str,
) -> Option<(UserInfo, KeyOptions)> {
    let ip = peer.ip();
    let port = peer.port();
    let key_type = hostkey::blob_key_type(key_blob)
        .unwrap_or("unknown")
        .to_owned();
    let certificate = if hostkey::cert::is_cert_type(&key_type) {
        match Cert::parse(key_blob) {
            Ok(c) => Some(c),
            Err(e) => {
                log!(
                    Info,
                    "Failed publickey for {user} from {ip} port {port} ssh2: {key_type}: {e}"
                );
                return None;
            }
        }
    } else {
        None
    };
    let described = describe(key_blob, certificate.as_ref());
    let fail = |why: &str| {
        log!(
            Info,
            "Failed publickey for {user} from {ip} port {port} ssh2: {described}{why}"
        );
        None
    };
    if key_refused(cfg, key_blob, certificate.as_ref()) {
        return fail("");
    }
    let Some(info) = session::lookup_user(user) else {
        log!(Info, "Invalid user {user} from {ip} port {port}");
        return None;
    };
    if info.uid == 0 && !cfg.permit_root_login.allows_publickey() {
        log!(Info, "ROOT LOGIN REFUSED FROM {ip} port {port}");
        return None;
    }
    let Some(opts) = authorized(
        cfg,
        (peer, local),
        (&info, user),
        key_blob,
        certificate.as_ref(),
    ) else {
        return fail("");
    };
    if info.uid == 0 && cfg.permit_root_login.forced_commands_only() && opts.command.is_none() {
        log!(
            Info,
            "Root login accepted for forced command only; key has none"
        );
        return fail("");
    }
    if !super::sk_policy::allows(cfg, peer, user, key_blob, signature, &opts) {
        return fail("");
    }
    if signed {
        log!(
            Info,
            "{word} publickey for {user} from {ip} port {port} ssh2: {described}"
        );
    }
    Some((info, opts))
}

/// The key as sshd's log lines name it: `ED25519 SHA256:..`, or for a
/// certificate `ED25519-CERT SHA256:.. ID id (serial N) CA ED25519 SHA256:..`.
fn describe(key_blob: &[u8], certificate: Option<&Cert>) -> String {
    match certificate {
        Some(c) => format!(
            "{} {} ID {} (serial {}) CA {} {}",
            c.type_name(),
            c.fingerprint(),
            c.key_id(),
            c.serial(),
            c.ca_type_name(),
            c.ca_fingerprint()
        ),
        // sshd names the type as sshkey_type does (`ED25519 SHA256:..`).
        None => format!(
            "{} {}",
            crate::keys::key_type::sshd_key_type(key_blob),
            fingerprint_sha256(key_blob)
        ),
    }
}

/// Refused whoever the user: an RSA key under RequiredRSASize, or a key
/// RevokedKeys lists. A certificate is judged by its key and its CA's key,
/// and as a certificate.
fn key_refused(cfg: &Sshd, key_blob: &[u8], certificate: Option<&Cert>) -> bool {
    let mut checked = vec![key_blob];
    if let Some(c) = certificate {
        checked = vec![key_blob, c.plain.as_slice(), c.ca.as_slice()];
    }
    for blob in &checked {
        if let Some(why) = crate::keys::host_keys::rsa_too_small(blob, cfg.required_rsa_size) {
            log!(Info, "refusing RSA key: {why}");
            return true;
        }
        if is_revoked(cfg, blob, None) {
            return true;
        }
    }
    certificate.is_some_and(|c| is_revoked(cfg, key_blob, Some(c)))
}

/// The key's options when the authorized keys of `info` (asked for as
/// `user`) allow it: in sshd's
/// order, AuthorizedKeysCommand's lines, then the files; a certificate
/// through its CA (cert.rs).
fn authorized(
    cfg: &Sshd,
    (peer, local): (SocketAddr, SocketAddr),
    (info, user): (&UserInfo, &str),
    key_blob: &[u8],
    certificate: Option<&Cert>,
) -> Option<KeyOptions> {
    let mut files: Vec<_> =
        keys_command::output(cfg, Which::Keys, (peer, local), info, key_blob, certificate)
            .into_iter()
            .collect();
    files.extend(read_authorized_keys(cfg, info));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    match certificate {
        Some(c) => cert::allowed(cfg, (peer, local), info, (key_blob, c), &files, now),
        None => authorized_keys::find_key(&files, key_blob, user, peer.ip(), None, now),
    }
}

/// sshd's auth_key_is_revoked: listed in RevokedKeys, or the file
/// unusable, refuses (logged).
fn is_revoked(cfg: &Sshd, key_blob: &[u8], cert: Option<&Cert>) -> bool {
    let Some(f) = &cfg.revoked_keys else {
        return false;
    };
    let ty = crate::keys::key_type::sshd_key_type(key_blob);
    let fp = fingerprint_sha256(key_blob);
    match revoked::is_revoked(f, key_blob, cert) {
        Ok(false) => false,
        Ok(true) => {
            log!(
                Error,
                "Authentication key {ty} {fp} revoked by file {}",
                f.display()
            );
            true
        }
        Err(e) => {
            log!(
                Error,
                "Error checking authentication key {ty} {fp} in revoked keys file {}: {e}",
                f.display()
            );
            true
        }
    }
}

/// The AuthorizedKeysFile files that could be read as the user, each
/// refusal logged in sshd's words. A user whose groups cannot be listed
/// gets no files read (their groups could have kept a file from them).
fn read_authorized_keys(cfg: &Sshd, info: &UserInfo) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let files = cfg.authorized_keys_files(&info.name, &info.home, info.uid);
    read_user_files(cfg, info, &files, "authorized keys")
}
