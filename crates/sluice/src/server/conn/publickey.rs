//! Public-key authentication decisions: authorized_keys (read as the user
//! with StrictModes, see keys/user_file.rs; key options), PermitRootLogin,
//! sshd's log lines.

use crate::keys::authorized_keys::{self};
use crate::keys::identity::fingerprint_sha256;
use crate::keys::user_file::{self, Reader};
use crate::log;
use crate::server::session::{self, UserInfo};
use sluice_proto::crypto::hostkey;

use super::ServerConn;

impl ServerConn {
    pub(super) fn check_publickey(
        &mut self,
        user: &str,
        algorithm: &str,
        key_blob: &[u8],
        signed: bool,
    ) -> bool {
        let ip = self.peer.ip();
        let port = self.peer.port();
        let key_type = hostkey::blob_key_type(key_blob)
            .unwrap_or("unknown")
            .to_owned();
        let fp = fingerprint_sha256(key_blob);
        let fail = |why: &str| {
            log!(
                Info,
                "Failed publickey for {user} from {ip} port {port} ssh2: {key_type} {fp}{why}"
            );
            false
        };
        if !self.cfg.pubkey_authentication {
            return fail("");
        }
        let Some(info) = session::lookup_user(user) else {
            log!(Info, "Invalid user {user} from {ip} port {port}");
            return false;
        };
        if info.uid == 0 && !self.cfg.permit_root_login.allows_publickey() {
            log!(Info, "ROOT LOGIN REFUSED FROM {ip} port {port}");
            return false;
        }
        let files = self.read_authorized_keys(&info);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let Some(opts) = authorized_keys::find_key(&files, key_blob, ip, None, now) else {
            return fail("");
        };
        if info.uid == 0
            && self.cfg.permit_root_login.forced_commands_only()
            && opts.command.is_none()
        {
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
            let _ = algorithm;
            self.user = Some(info);
            self.key_options = Some(opts);
        }
        true
    }
}

impl ServerConn {
    /// The AuthorizedKeysFile files that could be read as the user, each
    /// refusal logged in sshd's words. A user whose groups cannot be listed
    /// gets no files read (their groups could have kept a file from them).
    fn read_authorized_keys(&self, info: &UserInfo) -> Vec<(std::path::PathBuf, Vec<u8>)> {
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
        for f in self
            .cfg
            .authorized_keys_files(&info.name, &info.home, info.uid)
        {
            match user_file::read_as_user(&f, &who, self.cfg.strict_modes) {
                Ok(bytes) => out.push((f, bytes)),
                Err(r) if r.is_notable() => {
                    log!(Info, "{}", r.message(&info.name, "authorized keys"))
                }
                Err(r) => log!(Debug1, "{}", r.message(&info.name, "authorized keys")),
            }
        }
        out
    }
}
