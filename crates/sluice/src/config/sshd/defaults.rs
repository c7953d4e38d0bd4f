//! sshd_config's defaults as sluiced applies them (sshd_config(5), with
//! sluiced's own keywords' values): what a keyword no line sets holds.

use super::{per_source, PermitRootLogin, PubkeyAuthOptions, ServerConfig};
use super::{DEFAULT_CONFIG_DIR, SERVER_DEFAULT_KEX};
use crate::keys::host_keys::HostKeyFiles;
use crate::log::Level;
use crate::net::crypto_pool::CryptoThreads;
use sluice_proto::crypto::{cipher, hostkey};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            ports: Vec::new(),
            listen: Vec::new(),
            host_keys: HostKeyFiles::default(),
            authorized_keys_file: own(&[".ssh/authorized_keys", ".ssh/authorized_keys2"]),
            permit_root_login: PermitRootLogin::ProhibitPassword,
            pubkey_authentication: true,
            password_authentication: true,
            strict_modes: true,
            pid_file: Some(PathBuf::from("/run/sluiced.pid")),
            subsystems: Vec::new(),
            accept_env: Vec::new(),
            log_level: Level::Info,
            max_sessions: 10,
            max_auth_tries: 6,
            max_startups: (10, 30, 100),
            login_grace_time: 120,
            ciphers: own(crate::config::cipher_order::default_ciphers()),
            macs: own(cipher::DEFAULT_MACS),
            kex: own(SERVER_DEFAULT_KEX),
            host_key_algorithms: own(hostkey::DEFAULT_SIG_ALGS),
            pubkey_algorithms: own(hostkey::DEFAULT_SIG_ALGS),
            compression: "yes".into(),
            enable_hw_compression: false,
            hw_compression_library: None,
            rekey_limit: (0, 0),
            crypto_threads: CryptoThreads::Auto,
            force_command: None,
            chroot_directory: None,
            banner: None,
            allow_users: Vec::new(),
            deny_users: Vec::new(),
            tcp_rcvbuf: 0,
            tcp_sndbuf: 0,
            remote_buf_max: crate::net::sockbuf::RemoteMax::Sysctl,
            channel_window: sluice_proto::Config::default().window,
            channel_window_max: sluice_proto::Config::default().window_max,
            max_forward_channels: 256,
            max_streams: 8,
            none_enabled: false,
            none_mac_enabled: false,
            use_pam: false,
            pam_service_name: None,
            config_dir: PathBuf::from(DEFAULT_CONFIG_DIR),
            kbd_interactive_authentication: true,
            permit_empty_passwords: false,
            allow_groups: Vec::new(),
            deny_groups: Vec::new(),
            allow_tcp_forwarding: "yes".into(),
            allow_stream_local_forwarding: "yes".into(),
            allow_agent_forwarding: true,
            disable_forwarding: false,
            gateway_ports: "no".into(),
            permit_open: Vec::new(),
            permit_listen: Vec::new(),
            stream_local_bind_unlink: false,
            permit_tty: true,
            x11_forwarding: false,
            print_motd: true,
            print_last_log: true,
            permit_user_environment: false,
            expose_auth_info: false,
            set_env: Vec::new(),
            client_alive_interval: 0,
            client_alive_count_max: 3,
            channel_timeout: Vec::new(),
            unused_connection_timeout: 0,
            authorized_keys_command: None,
            authorized_keys_command_user: None,
            authorized_principals_command: None,
            authorized_principals_command_user: None,
            syslog_facility: "AUTH".into(),
            required_rsa_size: crate::keys::host_keys::DEFAULT_MIN_RSA_BITS,
            address_family: "any".into(),
            stream_local_bind_mask: 0o177,
            tcp_keep_alive: true,
            authentication_methods: Vec::new(),
            revoked_keys: None,
            trusted_user_ca_keys: None,
            authorized_principals_file: None,
            ca_signature_algorithms: own(crate::keys::cert::CA_SIGNATURE_ALGORITHMS),
            pubkey_auth_options: PubkeyAuthOptions::default(),
            per_source_max_startups: None,
            per_source_net_block_size: (32, 128),
            per_source_penalties: per_source::PenaltySpec::default(),
            per_source_penalty_exempt: None,
            other: BTreeMap::new(),
            lines: Arc::new(Vec::new()),
        }
    }
}

fn own(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}
