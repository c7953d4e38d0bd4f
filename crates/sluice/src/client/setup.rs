//! From ssh_config to what one connection uses: `-G` output, the
//! ProxyCommand (ProxyJump turned into one, as ssh does), timers and
//! known_hosts file names.

use crate::client::setting_error::SettingError;
use crate::config::ssh::dump::{self, DumpInput};
use crate::config::ssh::{jump, tokens, Resolved};
use std::time::Duration;

/// The command to reach the server through, tokens expanded: ProxyCommand,
/// or for ProxyJump this program with `-W` (see [`jump::Jump::proxy_command`]).
/// `config_file` and `verbose` (`-F`, `-v`) are passed on to the hop.
pub fn proxy_command(
    r: &Resolved,
    config_file: Option<&str>,
    verbose: u8,
) -> Result<Option<String>, SettingError> {
    let raw = if let Some(j) = r.get("proxyjump") {
        match jump::parse(j)? {
            None => return Ok(None),
            Some(j) => {
                let mut me = std::env::current_exe().map_err(|error| SettingError::Io {
                    what: "ProxyJump: cannot find this program",
                    error,
                })?;
                // sluice-sftp and sluice-scp hop through `sluice` beside them.
                if me
                    .file_name()
                    .is_some_and(|n| n.as_encoded_bytes().starts_with(b"sluice-"))
                {
                    me.set_file_name("sluice");
                }
                j.proxy_command(&me.display().to_string(), config_file, verbose)
            }
        }
    } else {
        match r.get("proxycommand") {
            None => return Ok(None),
            Some(c) if c.eq_ignore_ascii_case("none") => return Ok(None),
            Some(c) => c.to_owned(),
        }
    };
    r.tokens()
        .expand(&raw, tokens::PROXY)
        .map(Some)
        .map_err(SettingError::from)
}

/// A time keyword in seconds (None when unset, `none` or 0).
pub fn time(r: &Resolved, kw: &str) -> Option<Duration> {
    r.get(kw)
        .and_then(crate::config::parse_time)
        .filter(|&t| t > 0)
        .map(Duration::from_secs)
}

/// ServerAliveInterval (default off, 300 s in batch mode, as ssh) and
/// ServerAliveCountMax (default 3).
pub fn server_alive(r: &Resolved) -> (Option<Duration>, u32) {
    let max = r
        .get("serveralivecountmax")
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let interval = match r.get("serveraliveinterval") {
        Some(_) => time(r, "serveraliveinterval"),
        None if r.flag("batchmode", false) => Some(Duration::from_secs(300)),
        None => None,
    };
    (interval, max)
}

/// ConnectionAttempts (default 1).
pub fn connection_attempts(r: &Resolved) -> u32 {
    r.get("connectionattempts")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1)
}

/// `-G`'s text; algorithm lists are the ones sluice offers, `-i` files
/// (`identities`) come before IdentityFile's.
pub fn print_config(
    identities: &[String],
    r: &Resolved,
    proto: &sluice_proto::Config,
    sluice: &[(&str, String)],
) -> Result<String, SettingError> {
    let sig = proto.host_key_algs.join(",");
    let algorithms = [
        ("ciphers", proto.ciphers.join(",")),
        ("macs", proto.macs.join(",")),
        ("kexalgorithms", proto.kex.join(",")),
        ("hostkeyalgorithms", sig.clone()),
        ("hostbasedacceptedalgorithms", sig),
        (
            "casignaturealgorithms",
            ca_signature_algorithms(r).join(","),
        ),
        ("pubkeyacceptedalgorithms", proto.pubkey_algs.join(",")),
    ];
    let text = dump::dump(
        r,
        &DumpInput {
            identities,
            algorithms: &algorithms,
            sluice,
        },
    )?;
    Ok(text)
}

/// UserKnownHostsFile names, `~` and tokens expanded (default
/// ~/.ssh/known_hosts and ~/.ssh/known_hosts2).
pub fn user_known_hosts(r: &Resolved) -> Vec<std::path::PathBuf> {
    let t = r.tokens();
    let files: Vec<String> = match r.all("userknownhostsfile") {
        [] => vec!["~/.ssh/known_hosts".into(), "~/.ssh/known_hosts2".into()],
        v => v.to_vec(),
    };
    files
        .iter()
        .filter(|f| f.as_str() != "none")
        .filter_map(|f| t.path(f, tokens::FILE).ok())
        .map(Into::into)
        .collect()
}

/// CASignatureAlgorithms: what a CA may sign host certificates with.
pub(super) fn ca_signature_algorithms(r: &Resolved) -> Vec<String> {
    let default = crate::keys::cert::CA_SIGNATURE_ALGORITHMS;
    r.get("casignaturealgorithms")
        .and_then(|spec| {
            crate::config::algorithms::resolve(
                spec,
                default,
                crate::keys::cert::CA_SIGNATURE_ALGORITHMS_ALL,
                "CASignatureAlgorithms",
            )
            .map_err(|e| crate::log!(Error, "{e}"))
            .ok()
        })
        .unwrap_or_else(|| default.iter().map(|s| (*s).to_owned()).collect())
}
