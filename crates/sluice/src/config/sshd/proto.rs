//! sshd_config as the engine's protocol settings (sluice-proto's
//! `Config`): algorithms, compression engines, rekeying, windows and the
//! group-exchange moduli. The monitor builds it before authentication,
//! the post-auth process after its uid change (server/privsep/).

use super::ServerConfig as Sshd;
use crate::net::hwzlib::{self, HwSettings};
use sluice_proto::transport::compress;
use sluice_proto::Config;
use std::time::Duration;

/// The protocol settings from the server config, before authentication
/// (the monitor, for its pre-auth child): no hardware deflate library is
/// loaded (`net/hwzlib`, `server_engines`).
pub fn proto_config(cfg: &Sshd) -> Config {
    proto_config_with(cfg, false)
}

/// [`proto_config`] for the post-auth process, after its uid change: the
/// only place EnableHwCompression's library is loaded.
pub fn post_auth_proto_config(cfg: &Sshd) -> Config {
    proto_config_with(cfg, true)
}

fn proto_config_with(cfg: &Sshd, load_hw: bool) -> Config {
    // `yes` (and `delayed`) as sshd: only methods that start after user
    // authentication, so nothing is inflated for an unauthenticated peer.
    let compression_engines = match cfg.compression.as_str() {
        "no" => Vec::new(),
        _ => {
            let hw = HwSettings {
                enabled: cfg.enable_hw_compression,
                library: cfg
                    .hw_compression_library
                    .as_ref()
                    .map(|p| p.display().to_string()),
            };
            let all = hwzlib::server_engines(compress::default_engines(), &hw, load_hw);
            compress::after_auth_only(&all)
        }
    };
    Config {
        kex: cfg.kex.clone(),
        host_key_algs: cfg.host_key_algorithms.clone(),
        ciphers: cfg.ciphers.clone(),
        macs: cfg.macs.clone(),
        compression_engines,
        prefer_compression: false,
        rekey_bytes: if cfg.rekey_limit.0 == 0 {
            Config::default().rekey_bytes
        } else {
            cfg.rekey_limit.0
        },
        rekey_time: (cfg.rekey_limit.1 > 0).then(|| Duration::from_secs(cfg.rekey_limit.1)),
        // All that sluiced implements by default, as sshd 9.2 lists in
        // server-sig-algs: Match blocks may allow more than the startup
        // list for a user. The monitor applies the user's
        // PubkeyAcceptedAlgorithms (privsep/mauth.rs). SHA-1 `ssh-rsa`
        // only when the global list names it.
        pubkey_algs: {
            let mut algs: Vec<String> = sluice_proto::crypto::hostkey::DEFAULT_SIG_ALGS
                .iter()
                .map(|s| s.to_string())
                .collect();
            for a in &cfg.pubkey_algorithms {
                if !algs.contains(a) {
                    algs.push(a.clone());
                }
            }
            algs
        },
        window: cfg.channel_window,
        window_max: cfg.channel_window_max,
        windows_max: sluice_proto::config::windows_budget(cfg.channel_window_max),
        stock_openssh_window_max: crate::config::stock_openssh_window_max(),
        dh_moduli: dh_moduli(cfg),
        ..Config::default()
    }
}

/// The moduli group exchange may hand out, read from ModuliFile when a
/// group exchange method is enabled. The monitor reads it as root before
/// the pre-auth child is sandboxed; the engine keeps the parsed list. A
/// missing or empty file leaves the RFC 3526 groups, as sshd.
fn dh_moduli(cfg: &Sshd) -> std::sync::Arc<[sluice_proto::crypto::kex::DhModulus]> {
    let gex = cfg
        .kex
        .iter()
        .any(|k| k.starts_with("diffie-hellman-group-exchange-"));
    if !gex {
        return std::sync::Arc::from(Vec::new());
    }
    let path = cfg
        .other
        .get("modulifile")
        .map_or("/etc/ssh/moduli", String::as_str);
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let m = crate::config::moduli::parse(&text);
            for line in &m.skipped {
                crate::log!(Error, "{path}:{line}: bad prime description, line skipped");
            }
            if m.moduli.is_empty() {
                crate::log!(
                    Info,
                    "WARNING: no suitable primes in {path}; using the RFC 3526 groups"
                );
            }
            std::sync::Arc::from(m.moduli)
        }
        Err(e) => {
            crate::log!(
                Info,
                "WARNING: could not open {path} ({e}), using fixed modulus"
            );
            std::sync::Arc::from(Vec::new())
        }
    }
}
