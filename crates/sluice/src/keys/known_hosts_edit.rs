//! known_hosts rewritten for UpdateHostKeys (ssh_config(5)): which lines
//! of a file hold keys for one host name, and the file rewritten with some
//! of them removed and new keys appended, atomically (a temporary file in
//! the same directory renamed over the old one; the old one kept as
//! `FILE.old`, as ssh does).
//!
//! Only lines naming the host alone (one plain name, or one hashed name
//! that matches it) are ever removed: a line that also names other hosts,
//! or matches through a wildcard or a list, cannot be edited without
//! changing what is trusted for those, so the caller skips the update when
//! it finds one (ssh: "skipping UserKnownHostsFile update"). `@revoked` and
//! `@cert-authority` lines are never touched.

use super::known_hosts::{base64_decode, host_matches, host_name, new_line};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A plain key line whose host field matches the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostLine {
    /// The key blob.
    pub blob: Vec<u8>,
    /// The host field names this host alone (may be rewritten).
    pub sole: bool,
    /// 1-based line number.
    pub line: usize,
}

/// The plain (unmarked) key lines of `file` for `host`:`port`.
pub fn host_lines(file: &Path, host: &str, port: u16) -> Vec<HostLine> {
    let name = host_name(host, port);
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let Some((field, blob)) = parse(line) else {
            continue;
        };
        if host_matches(field, &name) {
            out.push(HostLine {
                blob,
                sole: sole_name(field, &name),
                line: n + 1,
            });
        }
    }
    out
}

/// Whether a plain line of `file` for another host than `host`:`port`
/// lists `blob`.
pub fn key_elsewhere(file: &Path, host: &str, port: u16, blob: &[u8]) -> bool {
    let name = host_name(host, port);
    let Ok(text) = std::fs::read_to_string(file) else {
        return false;
    };
    text.lines()
        .filter_map(parse)
        .any(|(field, b)| b == blob && !host_matches(field, &name))
}

/// A plain key line's host field and key blob; None for comments, blank,
/// marked (`@...`) or unparsable lines.
fn parse(line: &str) -> Option<(&str, Vec<u8>)> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') || line.starts_with('@') {
        return None;
    }
    let mut f = line.split_whitespace();
    let (field, _ty, data) = (f.next()?, f.next()?, f.next()?);
    Some((field, base64_decode(data)?))
}

/// The field is exactly this one name: itself, or one hashed entry
/// (which matched, so it is this name).
fn sole_name(field: &str, name: &str) -> bool {
    field == name || (field.starts_with("|1|") && !field.contains(','))
}

/// Rewrites `file`: removes the sole-name lines for `host`:`port` whose key
/// is in `remove`, appends a line for each of `add` (hashed if `hash`).
/// The file is created (0600) if missing and there is something to add.
pub fn rewrite(
    file: &Path,
    host: &str,
    port: u16,
    remove: &[Vec<u8>],
    add: &[Vec<u8>],
    hash: bool,
) -> std::io::Result<()> {
    let name = host_name(host, port);
    let old = match std::fs::read_to_string(file) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    if old.is_none() && add.is_empty() {
        return Ok(());
    }
    let mut text = String::new();
    for line in old.as_deref().unwrap_or_default().lines() {
        let drop = parse(line).is_some_and(|(field, blob)| {
            host_matches(field, &name) && sole_name(field, &name) && remove.contains(&blob)
        });
        if !drop {
            text.push_str(line);
            text.push('\n');
        }
    }
    for blob in add {
        text.push_str(&new_line(host, port, blob, hash)?);
        text.push('\n');
    }
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mode = std::fs::metadata(file).map_or(0o600, |m| m.permissions().mode() & 0o777);
    let tmp = temp_name(file);
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    if old.is_some() {
        let backup = with_suffix(file, ".old");
        let _ = std::fs::remove_file(&backup);
        let _ = std::fs::hard_link(file, &backup);
    }
    std::fs::rename(&tmp, file).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

fn with_suffix(file: &Path, suffix: &str) -> PathBuf {
    let mut s = file.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// `FILE.XXXXXXXXXX`: a name no other writer uses (pid and time).
fn temp_name(file: &Path) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    with_suffix(file, &format!(".{}{nanos:09}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::known_hosts::base64_encode;

    fn blob(c: u8) -> Vec<u8> {
        let mut b = b"\0\0\0\x0bssh-ed25519\0\0\0\x20".to_vec();
        b.extend([c; 32]);
        b
    }

    #[test]
    fn removes_only_sole_name_lines_and_appends() {
        let dir = std::env::temp_dir().join(format!("sluice-khe-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("known_hosts");
        let (a, b, c) = (blob(b'a'), blob(b'b'), blob(b'c'));
        let text = format!(
            "# comment\n[h]:2222 ssh-ed25519 {a}\nh,other ssh-ed25519 {b}\n@revoked [h]:2222 ssh-ed25519 {a}\nx ssh-ed25519 {a}\n",
            a = base64_encode(&a),
            b = base64_encode(&b)
        );
        std::fs::write(&f, &text).unwrap();
        let lines = host_lines(&f, "h", 2222);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].sole && lines[0].blob == a && lines[0].line == 2);
        // Port 22: the list line matches, not alone.
        let l22 = host_lines(&f, "h", 22);
        assert_eq!(l22.len(), 1);
        assert!(!l22[0].sole);
        rewrite(&f, "h", 2222, &[a.clone()], &[c.clone()], false).unwrap();
        let got = std::fs::read_to_string(&f).unwrap();
        let removed = format!("[h]:2222 ssh-ed25519 {}", base64_encode(&a));
        assert!(!got.lines().any(|l| l == removed), "{got}");
        assert!(got.contains("@revoked [h]:2222"));
        assert!(got.contains(&format!("x ssh-ed25519 {}", base64_encode(&a))));
        assert!(got.ends_with(&format!("[h]:2222 ssh-ed25519 {}\n", base64_encode(&c))));
        assert_eq!(
            std::fs::read_to_string(dir.join("known_hosts.old")).unwrap(),
            text
        );
        // Hashed entries are this host alone.
        rewrite(&f, "h", 2222, &[], &[b.clone()], true).unwrap();
        let hashed = host_lines(&f, "h", 2222);
        assert!(hashed.iter().any(|l| l.blob == b && l.sole));
        rewrite(&f, "h", 2222, &[b.clone()], &[], false).unwrap();
        assert!(!host_lines(&f, "h", 2222).iter().any(|l| l.blob == b));
        let _ = std::fs::remove_dir_all(dir);
    }
}
