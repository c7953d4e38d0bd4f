//! Public-key authentication decisions: authorized_keys (read as the user
//! with StrictModes, see keys/user_file.rs; key options), PermitRootLogin,
//! sshd's log lines. [`decide`] is shared with the privilege-separation
//! monitor (server/privsep/), which makes the same decision as root for
//! its sandboxed child.

use crate::config::sshd::ServerConfig as Sshd;
use crate::keys::authorized_keys::{self, KeyOptions};
use crate::keys::identity::fingerprint_sha256;
use crate::keys::revoked;
use crate::keys::user_file::{self, Reader};
use crate::log;
use crate::server::session::{self, UserInfo};
use sluice_proto::crypto::hostkey;
use std::net::SocketAddr;

use super::ServerConn;

impl ServerConn {
    pub(super) fn check_publickey(
        &mut self,
        user: &str,
        _algorithm: &str,
        key_blob: &[u8],
        signed: bool,
    ) -> bool {
        match decide(&self.cfg, self.peer, user, key_blob, signed) {
            Some((info, opts)) => {
                if signed {
                    self.user = Some(info);
                    self.key_options = Some(opts);
                }
                true
            }
            None => false,
        }
    }
}

/// Whether `key_blob` may log in as `user` (publickey offered under
/// AuthenticationMethods, RequiredRSASize, RevokedKeys, authorized_keys,
/// PermitRootLogin);
/// the account and the key's options when it may. `signed` only changes
/// the log line ("Accepted publickey" is logged for a signed request).
pub(crate) fn decide(
    cfg: &Sshd,
    peer: SocketAddr,
    user: &str,
    key_blob: &[u8],
    signed: bool,
) -> Option<(UserInfo, KeyOptions)> {
    let ip = peer.ip();
    let port = peer.port();
    let key_type = hostkey::blob_key_type(key_blob)
        .unwrap_or("unknown")
        .to_owned();
    let fp = fingerprint_sha256(key_blob);
    let fail = |why: &str| {
        log!(
            Info,
            "Failed publickey for {user} from {ip} port {port} ssh2: {key_type} {fp}{why}"
        );
        None
    };
    if !cfg.auth_methods().iter().any(|m| m == "publickey") {
        return fail("");
    }
    if let Some(why) = crate::keys::host_keys::rsa_too_small(key_blob, cfg.required_rsa_size) {
        log!(Info, "refusing RSA key: {why}");
        return fail("");
    }
    if let Some(f) = &cfg.revoked_keys {
        // sshd's auth_key_is_revoked: listed, or the file unusable, refuses.
        let ty = revoked::sshd_key_type(key_blob);
        match revoked::contains(f, key_blob) {
            Ok(false) => {}
            Ok(true) => {
                log!(
                    Error,
                    "Authentication key {ty} {fp} revoked by file {}",
                    f.display()
                );
                return fail("");
            }
            Err(e) => {
                log!(
                    Error,
                    "Error checking authentication key {ty} {fp} in revoked keys file {}: {e}",
                    f.display()
                );
                return fail("");
            }
        }
    }
    let Some(info) = session::lookup_user(user) else {
        log!(Info, "Invalid user {user} from {ip} port {port}");
        return None;
    };
    if info.uid == 0 && !cfg.permit_root_login.allows_publickey() {
        log!(Info, "ROOT LOGIN REFUSED FROM {ip} port {port}");
        return None;
    }
    let files = read_authorized_keys(cfg, &info);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let Some(opts) = authorized_keys::find_key(&files, key_blob, ip, None, now) else {
        return fail("");
    };
    if info.uid == 0 && cfg.permit_root_login.forced_commands_only() && opts.command.is_none() {
        log!(
            Info,
            "Root login accepted for forced command only; key has none"
        );
        return fail("");
    }
    if signed {
        log!(
            Info,
            "Accepted publickey for {user} from {ip} port {port} ssh2: {key_type} {fp}"
        );
    }
    Some((info, opts))
}

/// The AuthorizedKeysFile files that could be read as the user, each
/// refusal logged in sshd's words. A user whose groups cannot be listed
/// gets no files read (their groups could have kept a file from them).
fn read_authorized_keys(cfg: &Sshd, info: &UserInfo) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let groups = match session::group_list(&info.name, info.gid) {
        Ok(g) => g,
        Err(e) => {
            log!(
                Error,
                "Authentication refused: groups of {}: {e}",
                info.name
            );
            return Vec::new();
        }
    };
    let who = Reader {
        name: info.name.clone(),
        uid: info.uid,
        gid: info.gid,
        groups,
        home: info.home.clone().into(),
    };
    let mut out = Vec::new();
    for f in cfg.authorized_keys_files(&info.name, &info.home, info.uid) {
        match user_file::read_as_user(&f, &who, cfg.strict_modes) {
            Ok(bytes) => out.push((f, bytes)),
            Err(r) if r.is_notable() => {
                log!(Info, "{}", r.message(&info.name, "authorized keys"))
            }
            Err(r) => log!(Debug1, "{}", r.message(&info.name, "authorized keys")),
        }
    }
    out
}
