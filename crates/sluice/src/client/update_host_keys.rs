//! UpdateHostKeys (ssh_config(5)): after authentication an OpenSSH server
//! lists all its host keys (`hostkeys-00@openssh.com`, OpenSSH PROTOCOL
//! 2.5). When the key that authenticated the host came from
//! UserKnownHostsFile as a plain key, keys the file lacks are asked to be
//! proved (`hostkeys-prove-00@openssh.com`), each signature is checked, and
//! the file is rewritten: proved keys added, keys the server no longer has
//! removed (keys/known_hosts_edit.rs). A bad or missing proof changes
//! nothing. The codecs are sluice-proto's msg/hostkeys.rs.

use crate::keys::identity::fingerprint_sha256;
use crate::keys::key_type::sshd_key_type;
use crate::keys::known_hosts_edit::{self, HostLine};
use crate::log;
use crate::log::Level;
use sluice_proto::crypto::hostkey;
use sluice_proto::msg::{self, HostKeyList};
use sluice_proto::Connection;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Why the server's `hostkeys-00@openssh.com` ended the connection.
#[derive(Debug)]
pub enum HostKeysError {
    /// A second hostkeys message (ssh ends the connection too).
    Again,
    /// The engine refused our hostkeys-prove request.
    Engine(sluice_proto::Error),
}

impl std::fmt::Display for HostKeysError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostKeysError::Again => {
                f.write_str("client_input_hostkeys: server already sent hostkeys")
            }
            HostKeysError::Engine(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for HostKeysError {}

/// UpdateHostKeys yes or ask (no is no updater at all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Update without asking (changes logged at VERBOSE).
    Yes,
    /// Show the changes (INFO) and ask on the terminal first.
    Ask,
}

/// What the update needs from the configuration.
#[derive(Debug, Clone)]
pub struct Settings {
    /// yes or ask.
    pub mode: Mode,
    /// UserKnownHostsFile: new keys go to the first, old ones leave all.
    pub files: Vec<PathBuf>,
    /// The name and port keys are stored under (HostKeyAlias applied).
    pub host: String,
    /// See `host`.
    pub port: u16,
    /// HashKnownHosts for the lines added.
    pub hash: bool,
    /// HostKeyAlgorithms: keys of other types are ignored (and so the
    /// file's keys of those types count as gone, as in ssh).
    pub host_key_algs: Vec<String>,
    /// Set by the host key check when the host key was a plain key found
    /// in UserKnownHostsFile, or accepted by the user at the prompt.
    pub trusted: Arc<AtomicBool>,
}

/// How long the end of a session waits for a proof asked for.
const PROOF_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// A proof asked for and not yet answered.
struct Pending {
    /// When it was asked for.
    asked: std::time::Instant,
    /// Those asked about, in the order asked.
    new: Vec<Vec<u8>>,
    /// The file's keys for the host that the server no longer lists.
    old: Vec<Vec<u8>>,
}

/// One connection's UpdateHostKeys state.
pub struct HostKeyUpdate {
    settings: Settings,
    /// The host key algorithm of the first key exchange.
    kex_alg: String,
    seen: bool,
    pending: Option<Pending>,
}

impl HostKeyUpdate {
    /// An updater for one connection.
    pub fn new(settings: Settings) -> Self {
        HostKeyUpdate {
            settings,
            kex_alg: String::new(),
            seen: false,
            pending: None,
        }
    }

    /// The first key exchange's host key algorithm (RSA proofs use it).
    pub fn set_kex_alg(&mut self, alg: &str) {
        if self.kex_alg.is_empty() {
            self.kex_alg = alg.to_owned();
        }
    }

    /// A proof was asked for in the last few seconds and has not come.
    pub fn awaiting_proof(&self) -> bool {
        self.pending
            .as_ref()
            .is_some_and(|p| p.asked.elapsed() < PROOF_WAIT)
    }

    fn accepted(&self, key_type: &str) -> bool {
        let algs = &self.settings.host_key_algs;
        if key_type == "ssh-rsa" {
            return algs
                .iter()
                .any(|a| matches!(a.as_str(), "rsa-sha2-256" | "rsa-sha2-512" | "ssh-rsa"));
        }
        algs.iter().any(|a| a == key_type)
    }

    /// `hostkeys-00@openssh.com` arrived with `data`. A second one ends
    /// the connection, as in ssh.
    pub fn on_hostkeys(&mut self, conn: &mut Connection, data: &[u8]) -> Result<(), HostKeysError> {
        if std::mem::replace(&mut self.seen, true) {
            return Err(HostKeysError::Again);
        }
        if !self.settings.trusted.load(Ordering::Relaxed) {
            log!(
                Debug1,
                "client_input_hostkeys: host key not known or explicitly trusted: UpdateHostKeys disabled"
            );
            return Ok(());
        }
        let Some(all) = self.offered(data) else {
            return Ok(());
        };
        let Some((new, old)) = self.changes(&all) else {
            return Ok(());
        };
        log!(
            Debug1,
            "client_input_hostkeys: {} server keys: {} new, {} retained, {} deprecated",
            all.len(),
            new.len(),
            all.len() - new.len(),
            old.len()
        );
        let pending = Pending {
            asked: std::time::Instant::now(),
            new,
            old,
        };
        if pending.new.is_empty() {
            self.update(&pending);
            return Ok(());
        }
        log!(
            Debug1,
            "client_input_hostkeys: asking server to prove ownership for {} keys",
            pending.new.len()
        );
        conn.request_hostkeys_prove(&pending.new)
            .map_err(HostKeysError::Engine)?;
        self.pending = Some(pending);
        Ok(())
    }

    /// The keys of a hostkeys message we may store (types we know and
    /// HostKeyAlgorithms accepts); None: nothing to do (a bad message, a
    /// duplicate, or no key left).
    fn offered(&self, data: &[u8]) -> Option<Vec<Vec<u8>>> {
        let list = match HostKeyList::decode(data) {
            Ok(l) => l,
            Err(e) => {
                log!(
                    Error,
                    "client_input_hostkeys: invalid hostkeys message: {e}"
                );
                return None;
            }
        };
        let mut all: Vec<Vec<u8>> = Vec::new();
        for blob in list.items {
            let Some(ty) = hostkey::blob_key_type(&blob).filter(|t| is_plain_known(t)) else {
                log!(
                    Debug1,
                    "client_input_hostkeys: skipping key of unknown or unsupported type"
                );
                continue;
            };
            let fp = fingerprint_sha256(&blob);
            log!(Debug1, "client_input_hostkeys: received {ty} key {fp}");
            if !self.accepted(ty) {
                log!(
                    Debug1,
                    "client_input_hostkeys: {ty} key not permitted by HostkeyAlgorithms"
                );
                continue;
            }
            if all.contains(&blob) {
                log!(
                    Error,
                    "client_input_hostkeys: received duplicated {ty} host key"
                );
                return None;
            }
            all.push(blob);
        }
        if all.is_empty() {
            log!(Debug1, "client_input_hostkeys: server sent no hostkeys");
            return None;
        }
        Some(all)
    }

    /// The keys to add and to drop against UserKnownHostsFile; None: leave
    /// the files alone (another name shares a line or a key, or no change).
    #[allow(clippy::type_complexity)]
    fn changes(&self, all: &[Vec<u8>]) -> Option<(Vec<Vec<u8>>, Vec<Vec<u8>>)> {
        let s = &self.settings;
        let mut lines: Vec<HostLine> = Vec::new();
        for f in &s.files {
            lines.extend(known_hosts_edit::host_lines(f, &s.host, s.port));
        }
        if lines.iter().any(|l| !l.sole) {
            log!(
                Debug1,
                "client_input_hostkeys: host key found matching a different name/address, skipping UserKnownHostsFile update"
            );
            return None;
        }
        let new: Vec<Vec<u8>> = all
            .iter()
            .filter(|k| !lines.iter().any(|l| &l.blob == *k))
            .cloned()
            .collect();
        let mut old: Vec<Vec<u8>> = Vec::new();
        for l in lines {
            if !all.contains(&l.blob) && !old.contains(&l.blob) {
                old.push(l.blob);
            }
        }
        // As ssh: a key to drop that the file also lists for other names
        // suggests those names are this host too; leave the file alone.
        if old.iter().any(|k| {
            s.files
                .iter()
                .any(|f| known_hosts_edit::key_elsewhere(f, &s.host, s.port, k))
        }) {
            log!(
                Debug1,
                "client_input_hostkeys: key(s) for {} exist under other names; skipping UserKnownHostsFile update",
                crate::keys::known_hosts::host_name(&s.host, s.port)
            );
            return None;
        }
        if new.is_empty() && old.is_empty() {
            log!(
                Debug1,
                "client_input_hostkeys: no new or deprecated keys from server"
            );
            return None;
        }
        Some((new, old))
    }

    /// The server's answer to our `hostkeys-prove-00@openssh.com`.
    pub fn on_proof(&mut self, conn: &Connection, signatures: Option<Vec<Vec<u8>>>) {
        let Some(p) = self.pending.take() else {
            return;
        };
        let Some(sigs) = signatures else {
            log!(
                Error,
                "Server failed to confirm ownership of private host keys"
            );
            return;
        };
        if sigs.len() != p.new.len() {
            log!(
                Error,
                "client_global_hostkeys_prove_confirm: server sent {} signatures for {} keys",
                sigs.len(),
                p.new.len()
            );
            return;
        }
        let Some(session_id) = conn.session_id() else {
            return;
        };
        for (i, (key, sig)) in p.new.iter().zip(&sigs).enumerate() {
            let data = msg::prove_signed_data(session_id, key);
            if hostkey::verify_hostkeys_proof(&self.kex_alg, key, sig, &data).is_err() {
                log!(
                    Error,
                    "client_global_hostkeys_prove_confirm: server gave bad signature for {} key {i}",
                    sshd_key_type(key)
                );
                return;
            }
        }
        self.update(&p);
    }

    /// Logs the changes, asks if so configured, rewrites the files.
    fn update(&self, p: &Pending) {
        let level = match self.settings.mode {
            Mode::Yes => Level::Verbose,
            Mode::Ask => Level::Info,
        };
        let s = &self.settings;
        let name = crate::keys::known_hosts::host_name(&s.host, s.port);
        if s.mode == Mode::Ask {
            crate::log::write(
                level,
                format_args!("The server has updated its host keys.\nThese changes were verified by the server's existing trusted key."),
            );
        }
        for k in &p.new {
            crate::log::write(
                level,
                format_args!(
                    "Learned new hostkey: {} {}",
                    sshd_key_type(k),
                    fingerprint_sha256(k)
                ),
            );
        }
        for k in &p.old {
            crate::log::write(
                level,
                format_args!(
                    "Deprecating obsolete hostkey: {} {}",
                    sshd_key_type(k),
                    fingerprint_sha256(k)
                ),
            );
        }
        if s.mode == Mode::Ask && !confirm() {
            return;
        }
        for (i, f) in s.files.iter().enumerate() {
            // New keys go to the first file only; a file without the host's
            // old keys is left alone.
            let add: &[Vec<u8>] = if i == 0 { &p.new } else { &[] };
            let had_old = known_hosts_edit::host_lines(f, &s.host, s.port)
                .iter()
                .any(|l| p.old.contains(&l.blob));
            if add.is_empty() && !had_old {
                continue;
            }
            match known_hosts_edit::rewrite(f, &s.host, s.port, &p.old, add, s.hash) {
                Ok(()) => log!(
                    Debug1,
                    "client_input_hostkeys: updated {} for {name}: {} added, {} removed",
                    f.display(),
                    add.len(),
                    p.old.len()
                ),
                Err(e) => log!(
                    Error,
                    "hostfile_replace_entries: {}: {e}; host keys not updated",
                    f.display()
                ),
            }
        }
    }
}

/// ssh's question for UpdateHostKeys ask: yes or no, anything else (or
/// no way to ask) is no.
fn confirm() -> bool {
    loop {
        let Some(a) =
            crate::client::prompt::read_passphrase("Accept updated hostkeys? (yes/no): ", true)
        else {
            return false;
        };
        match a.trim().to_ascii_lowercase().as_str() {
            "yes" => return true,
            "no" | "" => return false,
            _ => {}
        }
    }
}

/// Plain key types sluice can check a proof for.
fn is_plain_known(key_type: &str) -> bool {
    matches!(
        key_type,
        "ssh-ed25519"
            | "ssh-rsa"
            | "ecdsa-sha2-nistp256"
            | "ecdsa-sha2-nistp384"
            | "ecdsa-sha2-nistp521"
            | "sk-ssh-ed25519@openssh.com"
            | "sk-ecdsa-sha2-nistp256@openssh.com"
    )
}
