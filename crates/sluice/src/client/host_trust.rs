//! Host key trust: known_hosts (hashed or not) as StrictHostKeyChecking
//! says, HashKnownHosts for new entries, the `ask` prompt on the terminal;
//! host certificates signed by an `@cert-authority` CA (ssh(1) "VERIFYING
//! HOST KEYS"), with ssh's fallback to the certificate's plain key when no
//! CA vouches for it; RevokedHostKeys; HostKeyAlgorithms ordered by what
//! is known.

use crate::client::error::HostKeyError;
use crate::client::session::HostKeyCheck;
use crate::client::setup;
use crate::config::ssh::Resolved;
use crate::keys::cert::Cert;
use crate::keys::identity;
use crate::keys::known_hosts::{self, HostKeyStatus};
use crate::log;
use sluice_proto::crypto::hostkey;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The check for one host. `trusted` is set when the key proves to be a
/// plain key listed in UserKnownHostsFile or one the user accepted at the
/// prompt: UpdateHostKeys acts only then (client/update_host_keys.rs).
pub(super) fn host_key_check(
    r: &Resolved,
    host: String,
    port: u16,
    trusted: Arc<AtomicBool>,
) -> HostKeyCheck {
    let trust = HostTrust::new(r, host, port, trusted);
    Box::new(move |_alg: &str, blob: &[u8]| trust.check(blob))
}

/// What the check needs of the configuration, read once at setup.
struct HostTrust {
    strict: String,
    batch: bool,
    hash: bool,
    visual: bool,
    known_hosts_command: Option<String>,
    check_ip: bool,
    skip_local: bool,
    toks: crate::config::ssh::tokens::Tokens,
    user_files: Vec<PathBuf>,
    global: Vec<PathBuf>,
    /// The known_hosts name: HostKeyAlias (port 22) or the host and port.
    host: String,
    port: u16,
    ca_algs: Vec<String>,
    revoked_file: Option<PathBuf>,
    trusted: Arc<AtomicBool>,
}

impl HostTrust {
    fn new(r: &Resolved, host: String, port: u16, trusted: Arc<AtomicBool>) -> HostTrust {
        let check_ip = super::check_host_ip::enabled(r, &host);
        // HostKeyAlias: the name looked up and stored instead of the host's.
        // As ssh, no port: the alias is the known_hosts name as it stands.
        let (host, port) = match r.get("hostkeyalias") {
            Some(a) => {
                log!(Debug1, "using hostkeyalias: {a}");
                (a.to_owned(), 22)
            }
            None => (host, port),
        };
        HostTrust {
            strict: r
                .get("stricthostkeychecking")
                .unwrap_or("ask")
                .to_ascii_lowercase(),
            batch: r.flag("batchmode", false),
            hash: r.flag("hashknownhosts", false),
            visual: r.flag("visualhostkey", false),
            known_hosts_command: super::known_hosts_command::configured(r),
            check_ip,
            // NoHostAuthenticationForLocalhost: the key of a server reached
            // on a loopback address is accepted unchecked (not with
            // HostKeyAlias), as ssh judges it: by the socket's peer, so
            // never through a proxy.
            skip_local: r.flag("nohostauthenticationforlocalhost", false)
                && r.get("hostkeyalias").is_none(),
            toks: r.tokens(),
            user_files: setup::user_known_hosts(r),
            global: global_files(r),
            host,
            port,
            ca_algs: setup::ca_signature_algorithms(r),
            revoked_file: r
                .get("revokedhostkeys")
                .filter(|v| !v.eq_ignore_ascii_case("none"))
                .map(|v| r.file_path(v)),
            trusted,
        }
    }

    fn name(&self) -> String {
        known_hosts::host_name(&self.host, self.port)
    }

    /// UserKnownHostsFile, GlobalKnownHostsFile, then what
    /// KnownHostsCommand prints for this key.
    fn files(&self, blob: &[u8]) -> Vec<PathBuf> {
        let mut files = self.user_files.clone();
        files.extend(self.global.iter().cloned());
        if let Some(cmd) = &self.known_hosts_command {
            let key_type = hostkey::blob_key_type(blob).unwrap_or("unknown");
            let k = super::known_hosts_command::KeyTokens {
                lookup: &self.name(),
                key_b64: &known_hosts::base64_encode(blob),
                fingerprint: &identity::fingerprint_sha256(blob),
                key_type,
            };
            files.extend(super::known_hosts_command::run(cmd, &k, &self.toks));
        }
        files
    }

    fn check(&self, full: &[u8]) -> Result<(), HostKeyError> {
        if self.skip_local && super::PEER_IP.get().is_some_and(|ip| ip.is_loopback()) {
            log!(
                Debug1,
                "Forcing accepting of host key for loopback/localhost."
            );
            return Ok(());
        }
        let files = self.files(full);
        if let Some(f) = &self.revoked_file {
            if let Some(shown) = revoked_host_key(f, full) {
                return Err(HostKeyError::Revoked {
                    shown,
                    name: self.name(),
                });
            }
        }
        let plain;
        let blob = if is_cert(full) {
            match host_certificate(&files, &self.host, self.port, full, &self.ca_algs) {
                CertVerdict::Trusted => return Ok(()),
                CertVerdict::Revoked(shown) => {
                    return Err(HostKeyError::Revoked {
                        shown,
                        name: self.name(),
                    })
                }
                CertVerdict::PlainKey(p) => {
                    plain = p;
                    plain.as_slice()
                }
            }
        } else {
            full
        };
        let key = KeyShown::new(blob, self.visual);
        let name = self.name();
        match known_hosts::check(&files, &self.host, self.port, blob) {
            HostKeyStatus::Known => self.known(&files, full, blob, &key),
            HostKeyStatus::Revoked => Err(HostKeyError::Revoked {
                shown: key.shown.clone(),
                name,
            }),
            HostKeyStatus::Changed { file, line } => {
                let e = HostKeyError::Changed {
                    name,
                    shown: key.shown.clone(),
                    fp: key.fp.clone(),
                    file,
                    line,
                };
                if self.strict == "no" || self.strict == "off" {
                    let msg = e.to_string();
                    log!(
                        Error,
                        "{}",
                        msg.lines().take(11).collect::<Vec<_>>().join("\n")
                    );
                    Ok(())
                } else {
                    Err(e)
                }
            }
            HostKeyStatus::Unknown => self.unknown(&files, full, blob, &key),
        }
    }

    /// A key known_hosts lists: trusted for UpdateHostKeys when a user
    /// file lists it; CheckHostIP's look at the address.
    fn known(
        &self,
        files: &[PathBuf],
        full: &[u8],
        blob: &[u8],
        key: &KeyShown,
    ) -> Result<(), HostKeyError> {
        if let Some(a) = &key.art {
            log!(Info, "Host key fingerprint is {}\n{a}", key.fp);
        }
        log!(
            Debug1,
            "Host '{}' is known and matches the {} host key.",
            self.name(),
            key.shown
        );
        // Not for a certificate's plain key, nor one only the global files
        // list (ssh disables UpdateHostKeys then).
        let in_user_file = known_hosts::check(&self.user_files, &self.host, self.port, blob)
            == HostKeyStatus::Known;
        self.trusted
            .store(!is_cert(full) && in_user_file, Ordering::Relaxed);
        if self.check_ip {
            super::check_host_ip::after_known(
                files,
                &self.user_files,
                (&self.host, self.port),
                blob,
                &key.shown,
                &self.strict,
                self.batch,
                self.hash,
            )?;
        }
        Ok(())
    }

    /// A key known_hosts does not list: StrictHostKeyChecking decides
    /// (added, refused, or the user asked).
    fn unknown(
        &self,
        files: &[PathBuf],
        full: &[u8],
        blob: &[u8],
        key: &KeyShown,
    ) -> Result<(), HostKeyError> {
        let name = self.name();
        let shown = &key.shown;
        match self.strict.as_str() {
            "no" | "off" | "accept-new" => {
                self.add(files, blob, shown);
                Ok(())
            }
            "yes" => Err(HostKeyError::UnknownStrict {
                shown: shown.clone(),
                name,
            }),
            _ if self.batch => Err(HostKeyError::NotVerified),
            _ => {
                if ask_yes(&name, shown, &key.fp, key.art.as_deref()) {
                    self.add(files, blob, shown);
                    self.trusted.store(!is_cert(full), Ordering::Relaxed);
                    Ok(())
                } else {
                    Err(HostKeyError::NotVerified)
                }
            }
        }
    }

    /// A new key into the first UserKnownHostsFile; with CheckHostIP the
    /// address goes on the same line, as ssh writes it.
    fn add(&self, files: &[PathBuf], blob: &[u8], shown: &str) {
        let ip = self
            .check_ip
            .then(|| super::check_host_ip::new_address(files, self.port, blob))
            .flatten();
        let Some(f) = self.user_files.first() else {
            return;
        };
        let mut names = vec![self.host.as_str()];
        names.extend(ip.as_deref());
        if known_hosts::append_names(f, &names, self.port, blob, self.hash).is_ok() {
            let added: Vec<String> = names
                .iter()
                .map(|h| known_hosts::host_name(h, self.port))
                .collect();
            let added = added.join(",");
            log!(
                Info,
                "Warning: Permanently added '{added}' ({shown}) to the list of known hosts."
            );
        }
    }
}

/// A host key as the messages show it.
struct KeyShown {
    /// `ED25519`, `RSA`, `ECDSA-SHA2-NISTP256`...
    shown: String,
    fp: String,
    /// VisualHostKey: the picture under the fingerprint, as ssh draws it.
    art: Option<String>,
}

impl KeyShown {
    fn new(blob: &[u8], visual: bool) -> KeyShown {
        let key_type = hostkey::blob_key_type(blob).unwrap_or("unknown").to_owned();
        let fp = identity::fingerprint_sha256(blob);
        log!(Debug1, "Server host key: {key_type} {fp}");
        KeyShown {
            shown: key_type.trim_start_matches("ssh-").to_ascii_uppercase(),
            fp,
            art: if visual {
                crate::keys::randomart::randomart(blob)
            } else {
                None
            },
        }
    }
}

/// RevokedHostKeys (ssh_config(5)): the host key, or for a certificate its
/// key or CA, listed in the file (or a KRL revoking the certificate)
/// refuses the host; so does a file that cannot be read or parsed, as ssh
/// fails closed.
/// Some(the key's type name for the warning) when refused.
fn revoked_host_key(file: &std::path::Path, blob: &[u8]) -> Option<String> {
    let cert = Cert::parse(blob).ok();
    // The certificate itself (KRL serial / key ID), then its key and CA.
    let mut keys = vec![(blob.to_vec(), cert.as_ref())];
    if let Some(c) = &cert {
        keys.extend([(c.plain.clone(), None), (c.ca.clone(), None)]);
    }
    for (k, c) in keys {
        let shown = crate::keys::key_type::sshd_key_type(&k).to_owned();
        match crate::keys::revoked::is_revoked(file, &k, c) {
            Ok(false) => {}
            Ok(true) => return Some(shown),
            Err(e) => {
                log!(
                    Error,
                    "Error checking host key {shown} in revoked keys file {}: {e}",
                    file.display()
                );
                return Some(shown);
            }
        }
    }
    None
}

fn is_cert(blob: &[u8]) -> bool {
    hostkey::blob_key_type(blob).is_some_and(hostkey::cert::is_cert_type)
}

/// GlobalKnownHostsFile (default /etc/ssh/ssh_known_hosts{,2}).
fn global_files(r: &Resolved) -> Vec<PathBuf> {
    r.get("globalknownhostsfile")
        .unwrap_or("/etc/ssh/ssh_known_hosts /etc/ssh/ssh_known_hosts2")
        .split_whitespace()
        .map(PathBuf::from)
        .collect()
}

/// What a host certificate's check came to.
enum CertVerdict {
    /// Signed by a CA listed for the host, valid, naming the host.
    Trusted,
    /// The certificate's key or its CA is `@revoked` (ssh's type name).
    Revoked(String),
    /// No CA vouches for it: the certified key, to be checked as a plain
    /// host key (ssh: "No matching CA found. Retry with plain key").
    PlainKey(Vec<u8>),
}

/// A host certificate against the `@cert-authority` and `@revoked` lines
/// for `host` (or its HostKeyAlias), as ssh's check_host_cert.
fn host_certificate(
    files: &[PathBuf],
    host: &str,
    port: u16,
    blob: &[u8],
    ca_algs: &[String],
) -> CertVerdict {
    let c = match Cert::parse(blob) {
        Ok(c) => c,
        Err(e) => {
            log!(Error, "host certificate: {e}");
            return match hostkey::cert::plain_blob(blob) {
                Ok(p) => CertVerdict::PlainKey(p),
                Err(_) => CertVerdict::Revoked("unknown".into()),
            };
        }
    };
    log!(
        Debug1,
        "Server host certificate: {} {}, serial {} ID \"{}\" CA {} {} valid {}",
        c.type_name(),
        c.fingerprint(),
        c.serial(),
        c.key_id(),
        c.ca_type_name(),
        c.ca_fingerprint(),
        validity(&c)
    );
    for k in [&c.plain, &c.ca] {
        if known_hosts::check(files, host, port, k) == HostKeyStatus::Revoked {
            return CertVerdict::Revoked(c.type_name());
        }
    }
    let name = known_hosts::host_name(host, port);
    let Some((file, line)) = known_hosts::find_ca(files, host, port, &c.ca) else {
        log!(Debug1, "No matching CA found. Retry with plain key");
        return CertVerdict::PlainKey(c.plain);
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // ssh's check_host_cert: a host certificate carries no critical options.
    let checked = if c.has_critical_options() {
        Err(format!("Certificate for {host} contains critical options"))
    } else {
        c.check(true, now, Some(host), false, true, ca_algs)
            .map_err(|e| e.to_string())
    };
    match checked {
        Ok(()) => {
            log!(
                Debug1,
                "Host '{name}' is known and matches the {} host certificate.",
                c.type_name()
            );
            log!(Debug1, "Found CA key in {}:{line}", file.display());
            CertVerdict::Trusted
        }
        Err(e) => {
            log!(Error, "{e}");
            log!(Debug1, "No matching CA found. Retry with plain key");
            CertVerdict::PlainKey(c.plain)
        }
    }
}

/// The validity window as ssh prints it (`from T to T`, UTC).
fn validity(c: &Cert) -> String {
    let (a, b) = c.validity();
    if a == 0 && b == u64::MAX {
        "forever".into()
    } else {
        format!("from {a} to {b}")
    }
}

/// HostKeyAlgorithms when not configured, ordered much as ssh's
/// order_hostkeyalgs: every certificate algorithm first when a CA is named
/// for the host; then the algorithms of key types known for the host; then
/// the rest, in `default`'s order. One difference: without a CA for the
/// host, certificate algorithms go last, since a host certificate could
/// only be checked as its plain key anyway. That keeps a plain algorithm
/// first, as servers without certificates list theirs, so the KEX guess
/// sent with our KEXINIT (RFC 4253 7.1: same first method and first host
/// key algorithm on both sides) stands and saves a round trip.
pub(super) fn order_host_key_algs(
    r: &Resolved,
    host: &str,
    port: u16,
    default: &[String],
) -> Vec<String> {
    let (host, port) = match r.get("hostkeyalias") {
        Some(a) => (a, 22),
        None => (host, port),
    };
    let mut files = setup::user_known_hosts(r);
    files.extend(global_files(r));
    let (keys, cas) = known_hosts::known_types(&files, host, port);
    let key_type = |alg: &str| {
        let plain = hostkey::cert::plain_sig_alg(alg).unwrap_or(alg);
        if plain.starts_with("rsa-sha2-") {
            "ssh-rsa".to_owned()
        } else {
            plain.to_owned()
        }
    };
    // Certificates when a CA names the host; known plain types; other
    // plain types; certificates without a CA.
    let rank = |a: &String| match hostkey::cert::plain_sig_alg(a) {
        Some(_) if !cas.is_empty() => 0,
        None if keys.contains(&key_type(a)) => 1,
        None => 2,
        Some(_) => 3,
    };
    let mut order: Vec<String> = default.to_vec();
    // A stable sort keeps `default`'s order within each rank.
    order.sort_by_key(|a| rank(a));
    let front: Vec<&str> = order
        .iter()
        .filter(|a| rank(a) < 2)
        .map(String::as_str)
        .collect();
    if !front.is_empty() {
        log!(Debug1, "prefer hostkeyalgs: {}", front.join(","));
    }
    order
}

/// StrictHostKeyChecking ask: ssh's question on /dev/tty, asked again
/// until the answer is yes, no or the fingerprint.
fn ask_yes(name: &str, shown: &str, fp: &str, art: Option<&str>) -> bool {
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
    let art = art.map(|a| format!("\n{a}")).unwrap_or_default();
    let _ = write!(
        &tty,
        "The authenticity of host '{shown_name}' can't be established.\n{shown} key fingerprint is {fp}.{art}\nThis key is not known by any other names.\nAre you sure you want to continue connecting (yes/no/[fingerprint])? "
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
