//! [`ClientOptions`]: everything one client run needs, built by hand
//! (`sluice demo`) or from ssh_config (client/app.rs).

use super::auth::Identity;
use super::plan::{HostKeyCheck, SessionPlan};
use super::{auth, metrics, streams, update_host_keys};
use crate::net::crypto_pool::CryptoThreads;
use sluice_proto::Config;
use std::time::Duration;

/// Everything one client run needs, resolved from the command line and ssh_config.
pub struct ClientOptions {
    /// Host to connect to (after HostName).
    pub host: String,
    /// Port.
    pub port: u16,
    /// Remote user.
    pub user: String,
    /// 4 or 6 to restrict the address family.
    pub family: Option<u8>,
    /// ConnectTimeout.
    pub connect_timeout: Option<Duration>,
    /// BindAddress and BindInterface: where the connection leaves from.
    pub bind: (Option<String>, Option<String>),
    /// Protocol settings: algorithms, re-key limits, windows.
    pub proto: Config,
    /// CryptoThreads.
    pub crypto_threads: CryptoThreads,
    /// CompressionLevel: a fixed level for what we send (None: steered).
    pub compression_level: Option<u8>,
    /// TcpRcvBuf and TcpSndBuf in bytes (0: the kernel's autotuning).
    pub tcp_rcvbuf: u64,
    /// See `tcp_rcvbuf`.
    pub tcp_sndbuf: u64,
    /// TCPKeepAlive (default yes).
    pub keepalive: bool,
    /// IPQoS's mark for the connection; None: the system's.
    pub tos: Option<u8>,
    /// What to run.
    pub plan: SessionPlan,
    /// The keys to offer, in order (client/identities.rs for ssh's list).
    pub identities: Vec<Identity>,
    /// Decides whether the server's host key is trusted (client/host_trust.rs
    /// for known_hosts and StrictHostKeyChecking).
    pub host_key_check: HostKeyCheck,
    /// `-n` / `-f`: stdin from /dev/null before connecting.
    pub null_stdin: bool,
    /// UpdateHostKeys yes or ask (None: no).
    pub update_host_keys: Option<update_host_keys::Settings>,
    /// How to authenticate (PreferredAuthentications, BatchMode, ...).
    pub auth: auth::AuthPrefs,
    /// ProxyCommand, tokens expanded (ProxyJump arrives here as one too).
    pub proxy_command: Option<String>,
    /// ConnectionAttempts (at least 1).
    pub connection_attempts: u32,
    /// ServerAliveInterval (None: off) and ServerAliveCountMax.
    pub server_alive: (Option<Duration>, u32),
    /// ControlMaster yes/ask (false) or auto/autoask (true) with its
    /// ControlPath, tokens expanded: the master socket to listen on.
    pub control_master: Option<(String, bool)>,
    /// ControlPath when ControlMaster is no or auto: a master there runs
    /// the session (client/mux_client.rs).
    pub control_ride: Option<String>,
    /// ControlPersist: None for no; Some(None) to stay until `-O exit`;
    /// Some(Some(t)) to end after `t` without passengers.
    pub control_persist: Option<Option<Duration>>,
    /// Streams: connections a file copy may use (sftp/parallel/).
    pub streams: streams::Streams,
    /// KeepPartial: a failed sftp or scp copy keeps its partial file for a
    /// resume (sftp/partial/).
    pub keep_partial: bool,
    /// Metrics, MetricsInterval, MetricsPath (client/metrics.rs).
    pub metrics: metrics::MetricsPlan,
}

impl ClientOptions {
    /// Options for `user@host:port` with ssh's defaults: no command (a
    /// shell), no keys, the default algorithms and windows, one connection
    /// attempt. `host_key_check` decides which host keys are trusted.
    pub fn new(host: &str, port: u16, user: &str, host_key_check: HostKeyCheck) -> Self {
        ClientOptions {
            host: host.to_owned(),
            port,
            user: user.to_owned(),
            family: None,
            connect_timeout: None,
            bind: (None, None),
            proto: Config {
                stock_openssh_window_max: crate::config::stock_openssh_window_max(),
                ..Config::default()
            },
            crypto_threads: CryptoThreads::Auto,
            compression_level: None,
            tcp_rcvbuf: 0,
            tcp_sndbuf: 0,
            keepalive: true,
            tos: crate::config::ssh::ipqos::DEFAULT.bulk,
            plan: SessionPlan::exec(None),
            auth: auth::AuthPrefs::default(),
            proxy_command: None,
            connection_attempts: 1,
            server_alive: (None, 3),
            control_master: None,
            control_ride: None,
            control_persist: None,
            streams: streams::Streams::Auto,
            keep_partial: true,
            metrics: metrics::MetricsPlan {
                interval: Duration::from_secs(1),
                ..Default::default()
            },
            identities: Vec::new(),
            host_key_check,
            null_stdin: false,
            update_host_keys: None,
        }
    }
}
