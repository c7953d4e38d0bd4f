//! Host key trust: known_hosts (hashed or not) as StrictHostKeyChecking
//! says, HashKnownHosts for new entries, the `ask` prompt on the terminal.

use crate::client::session::HostKeyCheck;
use crate::client::setup;
use crate::config::ssh::Resolved;
use crate::keys::identity;
use crate::keys::known_hosts::{self, HostKeyStatus};
use crate::log;
use sluice_proto::crypto::hostkey;
use std::path::PathBuf;

pub(super) fn host_key_check(r: &Resolved, host: String, port: u16) -> HostKeyCheck {
    let strict = r
        .get("stricthostkeychecking")
        .unwrap_or("ask")
        .to_ascii_lowercase();
    let batch = r.flag("batchmode", false);
    let hash = r.flag("hashknownhosts", false);
    let user_files = setup::user_known_hosts(r);
    // HostKeyAlias: the name looked up and stored instead of the host's.
    // As ssh, no port: the alias is the known_hosts name as it stands.
    let (host, port) = match r.get("hostkeyalias") {
        Some(a) => {
            log!(Debug1, "using hostkeyalias: {a}");
            (a.to_owned(), 22)
        }
        None => (host, port),
    };
    let global = r
        .get("globalknownhostsfile")
        .unwrap_or("/etc/ssh/ssh_known_hosts /etc/ssh/ssh_known_hosts2")
        .to_owned();
    Box::new(move |_alg: &str, blob: &[u8]| {
        let mut files = user_files.clone();
        files.extend(global.split_whitespace().map(PathBuf::from));
        let key_type = hostkey::blob_key_type(blob).unwrap_or("unknown").to_owned();
        let shown = key_type.trim_start_matches("ssh-").to_ascii_uppercase();
        let fp = identity::fingerprint_sha256(blob);
        let name = known_hosts::host_name(&host, port);
        log!(Debug1, "Server host key: {key_type} {fp}");
        match known_hosts::check(&files, &host, port, blob) {
            HostKeyStatus::Known => {
                log!(Debug1, "Host '{name}' is known and matches the {shown} host key.");
                Ok(())
            }
            HostKeyStatus::Revoked => Err(format!(
                "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n@       WARNING: REVOKED HOST KEY DETECTED!               @\n@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\nThe {shown} host key for {name} is marked as revoked.\nHost key verification failed."
            )),
            HostKeyStatus::Changed { file, line } => {
                let msg = known_hosts::changed_warning(&name, &shown, &fp, &file, line);
                if strict == "no" || strict == "off" {
                    log!(Error, "{}", msg.lines().take(11).collect::<Vec<_>>().join("\n"));
                    Ok(())
                } else {
                    Err(msg)
                }
            }
            HostKeyStatus::Unknown => {
                let add = |files: &[PathBuf]| {
                    if let Some(f) = files.first() {
                        if known_hosts::append(f, &host, port, blob, hash).is_ok() {
                            log!(Info, "Warning: Permanently added '{name}' ({shown}) to the list of known hosts.");
                        }
                    }
                };
                match strict.as_str() {
                    "no" | "off" | "accept-new" => {
                        add(&user_files);
                        Ok(())
                    }
                    "yes" => Err(format!("No {shown} host key is known for {name} and you have requested strict checking.\nHost key verification failed.")),
                    _ if batch => Err("Host key verification failed.".into()),
                    _ => {
                        if ask_yes(&name, &shown, &fp) {
                            add(&user_files);
                            Ok(())
                        } else {
                            Err("Host key verification failed.".into())
                        }
                    }
                }
            }
        }
    })
}

/// StrictHostKeyChecking ask: ssh's question on /dev/tty, asked again
/// until the answer is yes, no or the fingerprint.
fn ask_yes(name: &str, shown: &str, fp: &str) -> bool {
    use std::io::{BufRead, Write};
    let Ok(tty) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
    else {
        return false;
    };
    // ssh adds the address; for an address typed as the host it is the same.
    let shown_name = if name
        .trim_start_matches('[')
        .split(']')
        .next()
        .unwrap_or_default()
        .parse::<std::net::IpAddr>()
        .is_ok()
    {
        format!("{name} ({name})")
    } else {
        name.to_owned()
    };
    let _ = write!(
        &tty,
        "The authenticity of host '{shown_name}' can't be established.\n{shown} key fingerprint is {fp}.\nThis key is not known by any other names.\nAre you sure you want to continue connecting (yes/no/[fingerprint])? "
    );
    let mut reader = std::io::BufReader::new(&tty);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return false;
        }
        match line.trim() {
            "yes" => return true,
            "no" => return false,
            a if a == fp => return true,
            _ => {
                let _ = write!(&tty, "Please type 'yes', 'no' or the fingerprint: ");
            }
        }
    }
}
