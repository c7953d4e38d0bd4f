//! Public-key authentication decisions: authorized_keys (StrictModes,
//! key options), PermitRootLogin, sshd's log lines.

use crate::keys::authorized_keys::{self};
use crate::keys::identity::fingerprint_sha256;
use crate::log;
use crate::server::session::{self};
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
        let files: Vec<std::path::PathBuf> = self
            .cfg
            .authorized_keys_files(&info.name, &info.home, info.uid)
            .into_iter()
            .filter(|f| {
                if !self.cfg.strict_modes {
                    return true;
                }
                match authorized_keys::check_strict_modes(f, info.uid) {
                    Ok(()) => true,
                    Err(msg) => {
                        if f.exists() {
                            log!(Info, "{msg}");
                        }
                        false
                    }
                }
            })
            .collect();
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
