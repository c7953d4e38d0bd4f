//! authorized_keys and authorized_principals files read as the user
//! (StrictModes applied, keys/user_file.rs), for the key decisions
//! (publickey.rs) and the certificate ones (cert.rs).

use crate::config::sshd::ServerConfig as Sshd;
use crate::keys::user_file::{self, Reader};
use crate::log;
use crate::server::session::{self, UserInfo};

/// Files read as the user (StrictModes applied), each refusal logged in
/// sshd's words (`kind`: "authorized keys", "authorized principals").
pub(super) fn read_user_files(
    cfg: &Sshd,
    info: &UserInfo,
    paths: &[std::path::PathBuf],
    kind: &str,
) -> Vec<(std::path::PathBuf, Vec<u8>)> {
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
    for f in paths {
        match user_file::read_as_user(f, &who, cfg.strict_modes) {
            Ok(bytes) => out.push((f.clone(), bytes)),
            Err(r) if r.is_notable() => log!(Info, "{}", r.message(&info.name, kind)),
            Err(r) => log!(Debug1, "{}", r.message(&info.name, kind)),
        }
    }
    out
}
