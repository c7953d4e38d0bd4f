//! known_hosts (sshd(8) SSH_KNOWN_HOSTS FILE FORMAT): host patterns,
//! `[host]:port`, hashed names (`|1|salt|hmac-sha1`), `@revoked`, and
//! `@cert-authority` (a CA whose host certificates are trusted for the
//! hosts the line names).

use super::pattern;
use aws_lc_rs::hmac;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What the files say about a host's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostKeyStatus {
    /// A line lists this key for the host.
    Known,
    /// The host is listed with a different key of the same type.
    Changed {
        /// File of the old key.
        file: PathBuf,
        /// Its line.
        line: usize,
    },
    /// The key is marked @revoked.
    Revoked,
    /// Nothing about this host.
    Unknown,
}

/// The name a host is stored under: `host` for port 22, else `[host]:port`.
pub fn host_name(host: &str, port: u16) -> String {
    if port == 22 {
        host.to_owned()
    } else {
        format!("[{host}]:{port}")
    }
}

fn b64(data: &[u8]) -> String {
    use std::fmt::Write as _;
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for c in data.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                let _ = s.write_char(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

/// Standard base64 with padding, as key files and known_hosts hold it.
pub fn base64_encode(data: &[u8]) -> String {
    b64(data)
}

/// Standard base64 (padding optional), as key files and known_hosts hold it.
pub fn base64_decode(s: &str) -> Option<Vec<u8>> {
    unb64(s)
}

fn unb64(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut acc = 0u32;
    let mut bits = 0;
    for c in s.bytes().filter(|&c| c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

fn hashed_matches(entry: &str, name: &str) -> bool {
    let mut parts = entry.trim_start_matches("|1|").split('|');
    let (Some(salt), Some(hash)) = (parts.next().and_then(unb64), parts.next().and_then(unb64))
    else {
        return false;
    };
    let key = hmac::Key::new(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, &salt);
    hmac::verify(&key, name.as_bytes(), &hash).is_ok()
}

/// A host field (patterns, or one hashed name) matches `name`.
pub(crate) fn host_matches(field: &str, name: &str) -> bool {
    if field.starts_with("|1|") {
        return hashed_matches(field, name);
    }
    pattern::match_pattern_list(name, field) == Some(true)
}

/// One line that names the host: its marker (`@revoked`, `@cert-authority`),
/// key type and key blob, file and line number.
struct Entry {
    marker: Option<String>,
    key_type: String,
    blob: Vec<u8>,
    file: PathBuf,
    line: usize,
}

/// KnownHostsCommand's output, read in place of the "file" of that name
/// (client/known_hosts_command.rs puts it there before the check).
static COMMAND_OUTPUT: std::sync::Mutex<Option<(PathBuf, String)>> = std::sync::Mutex::new(None);

/// Makes `text` the content of the pseudo file `name` for later checks.
pub fn set_command_output(name: PathBuf, text: String) {
    if let Ok(mut g) = COMMAND_OUTPUT.lock() {
        *g = Some((name, text));
    }
}

fn read_source(f: &Path) -> Option<String> {
    if let Ok(g) = COMMAND_OUTPUT.lock() {
        if let Some((name, text)) = g.as_ref() {
            if name == f {
                return Some(text.clone());
            }
        }
    }
    std::fs::read_to_string(f).ok()
}

/// The lines of the files whose host patterns match `host`:`port`.
fn entries(files: &[PathBuf], host: &str, port: u16) -> Vec<Entry> {
    let name = host_name(host, port);
    let mut out = Vec::new();
    for f in files {
        let Some(text) = read_source(f) else {
            continue;
        };
        text_entries(&text, &name, f, &mut out);
    }
    out
}

/// The lines of one file's `text` that name `name` (as `host_name` makes it).
fn text_entries(text: &str, name: &str, file: &Path, out: &mut Vec<Entry>) {
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split_whitespace();
        let mut first = fields.next().unwrap_or_default();
        let marker = first.starts_with('@').then(|| first.to_owned());
        if marker.is_some() {
            first = fields.next().unwrap_or_default();
        }
        let (Some(ty), Some(data)) = (fields.next(), fields.next()) else {
            continue;
        };
        if !host_matches(first, name) {
            continue;
        }
        let Some(blob) = unb64(data) else { continue };
        out.push(Entry {
            marker,
            key_type: ty.to_owned(),
            blob,
            file: file.to_path_buf(),
            line: n + 1,
        });
    }
}

/// For the fuzz target (fuzz/fuzz_targets/known_hosts.rs): the lines of
/// `text` that name `host`:`port`, as (marker, key type, key blob, line).
#[doc(hidden)]
pub fn matching_lines(
    text: &str,
    host: &str,
    port: u16,
) -> Vec<(Option<String>, String, Vec<u8>, usize)> {
    let mut out = Vec::new();
    text_entries(text, &host_name(host, port), Path::new("-"), &mut out);
    out.into_iter()
        .map(|e| (e.marker, e.key_type, e.blob, e.line))
        .collect()
}

/// Where a plain line lists `key_blob` for `host`:`port` (file, line).
pub fn find_key(
    files: &[PathBuf],
    host: &str,
    port: u16,
    key_blob: &[u8],
) -> Option<(PathBuf, usize)> {
    entries(files, host, port)
        .into_iter()
        .find(|e| e.marker.is_none() && e.blob == key_blob)
        .map(|e| (e.file, e.line))
}

/// Where an `@cert-authority` line for `host`:`port` lists `ca_blob`.
pub fn find_ca(
    files: &[PathBuf],
    host: &str,
    port: u16,
    ca_blob: &[u8],
) -> Option<(PathBuf, usize)> {
    entries(files, host, port)
        .into_iter()
        .find(|e| e.marker.as_deref() == Some("@cert-authority") && e.blob == ca_blob)
        .map(|e| (e.file, e.line))
}

/// The key types known for the host (plain lines), and those of the CAs
/// named for it: what ssh puts first in its HostKeyAlgorithms.
pub fn known_types(files: &[PathBuf], host: &str, port: u16) -> (Vec<String>, Vec<String>) {
    let (mut keys, mut cas) = (Vec::new(), Vec::new());
    for e in entries(files, host, port) {
        let list = match e.marker.as_deref() {
            None => &mut keys,
            Some("@cert-authority") => &mut cas,
            Some(_) => continue,
        };
        if !list.contains(&e.key_type) {
            list.push(e.key_type);
        }
    }
    (keys, cas)
}

/// Checks `key_blob` for `host`:`port` against the files.
pub fn check(files: &[PathBuf], host: &str, port: u16, key_blob: &[u8]) -> HostKeyStatus {
    let key_type = sluice_proto::crypto::hostkey::blob_key_type(key_blob).unwrap_or_default();
    let mut result = HostKeyStatus::Unknown;
    for e in entries(files, host, port) {
        match e.marker.as_deref() {
            Some("@revoked") if e.blob == key_blob => return HostKeyStatus::Revoked,
            Some(_) => continue,
            None if e.blob == key_blob => result = HostKeyStatus::Known,
            None if e.key_type == key_type && result == HostKeyStatus::Unknown => {
                result = HostKeyStatus::Changed {
                    file: e.file,
                    line: e.line,
                };
            }
            None => {}
        }
    }
    result
}

/// The known_hosts line (no newline) for the host's key, its name hashed
/// if asked.
pub fn new_line(host: &str, port: u16, key_blob: &[u8], hash: bool) -> std::io::Result<String> {
    let name = host_name(host, port);
    let field = if hash {
        let mut salt = [0u8; 20];
        use aws_lc_rs::rand::SecureRandom;
        aws_lc_rs::rand::SystemRandom::new()
            .fill(&mut salt)
            .map_err(|_| std::io::Error::other("no randomness"))?;
        let tag = hmac::sign(
            &hmac::Key::new(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, &salt),
            name.as_bytes(),
        );
        format!("|1|{}|{}", b64(&salt), b64(tag.as_ref()))
    } else {
        name
    };
    let ty = sluice_proto::crypto::hostkey::blob_key_type(key_blob).unwrap_or("unknown");
    Ok(format!("{field} {ty} {}", b64(key_blob)))
}

/// Appends a line for the host (hashed if asked), creating the file 0600.
pub fn append(
    file: &Path,
    host: &str,
    port: u16,
    key_blob: &[u8],
    hash: bool,
) -> std::io::Result<()> {
    append_names(file, &[host], port, key_blob, hash)
}

/// Appends the key for several names of one host (CheckHostIP's name and
/// address): one line naming them all, as ssh writes it, or one hashed
/// line per name.
pub fn append_names(
    file: &Path,
    hosts: &[&str],
    port: u16,
    key_blob: &[u8],
    hash: bool,
) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut lines = Vec::new();
    if hash {
        for h in hosts {
            lines.push(new_line(h, port, key_blob, true)?);
        }
    } else {
        let names: Vec<String> = hosts.iter().map(|h| host_name(h, port)).collect();
        let ty = sluice_proto::crypto::hostkey::blob_key_type(key_blob).unwrap_or("unknown");
        lines.push(format!("{} {ty} {}", names.join(","), b64(key_blob)));
    }
    let line = lines.join("\n");
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(file)?;
    writeln!(f, "{line}")
}

/// OpenSSH's warning for a changed host key.
pub fn changed_warning(
    host: &str,
    key_type: &str,
    fingerprint: &str,
    file: &Path,
    line: usize,
) -> String {
    format!(
        "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n\
         @    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n\
         @@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n\
         IT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!\n\
         Someone could be eavesdropping on you right now (man-in-the-middle attack)!\n\
         It is also possible that a host key has just been changed.\n\
         The fingerprint for the {key_type} key sent by the remote host is\n\
         {fingerprint}.\n\
         Please contact your system administrator.\n\
         Add correct host key in {file} to get rid of this message.\n\
         Offending {key_type} key in {file}:{line}\n\
         Host key for {host} has changed and you have requested strict checking.\n\
         Host key verification failed.",
        file = file.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trip_and_hashed_names() {
        for n in 0..10 {
            let d: Vec<u8> = (0..n).collect();
            assert_eq!(unb64(&b64(&d)).unwrap(), d);
        }
        let dir = std::env::temp_dir().join(format!("sluice-kh-{}", std::process::id()));
        let f = dir.join("known_hosts");
        let blob = b"\0\0\0\x0bssh-ed25519\0\0\0\x20aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".to_vec();
        append(&f, "h.example", 2222, &blob, true).unwrap();
        assert_eq!(
            check(&[f.clone()], "h.example", 2222, &blob),
            HostKeyStatus::Known
        );
        assert_eq!(
            check(&[f.clone()], "h.example", 22, &blob),
            HostKeyStatus::Unknown
        );
        let mut other = blob.clone();
        *other.last_mut().unwrap() = b'b';
        assert!(matches!(
            check(&[f.clone()], "h.example", 2222, &other),
            HostKeyStatus::Changed { line: 1, .. }
        ));
        let _ = std::fs::remove_dir_all(dir);
    }
}
