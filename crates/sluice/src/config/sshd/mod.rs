//! `sshd_config` for `sluiced` (sshd_config(5)): OpenSSH's keywords and
//! defaults, first value wins, `-o` overrides first, `Include`, and `Match`
//! blocks applied per connection once the user is known
//! (`for_connection`). An unknown keyword is an error naming file and line;
//! keywords OpenSSH has but sluiced does not act on are refused (startup
//! fails naming file and line) unless set to their "off" value, or
//! accepted with a warning when ignoring them is harmless (keywords.rs,
//! README.md). `dump` prints the effective configuration like `sshd -T`.
//!
//! lines.rs reads files into lines with their conditions, matching.rs
//! tests Match criteria, keywords.rs applies values over defaults.rs,
//! queries.rs answers what the server asks of the result, dump.rs prints.

mod addr_list;
pub mod auth_methods;
pub(crate) mod command_line;
mod defaults;
mod dump;
pub mod error;
pub(crate) mod keyword_table;
pub(crate) mod keywords;
mod line;
mod lines;
mod matching;
pub mod per_source;
pub mod proto;
mod queries;
pub mod snapshot;
pub mod timeouts;

pub use matching::{connection_rdomain, set_connection_rdomain, MatchContext};

use crate::keys::host_keys::HostKeyFiles;
use crate::log::Level;
use crate::net::crypto_pool::CryptoThreads;
use error::{LineError, SshdConfigError};
use line::Line;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// sluiced's default KexAlgorithms: sshd 10's (the post-quantum hybrids,
/// curve25519, the NIST curves; no finite-field DH). `kex::ALL_KEX` is what
/// a configuration may name besides.
pub use sluice_proto::crypto::kex::SERVER_DEFAULT_KEX;

/// sluiced's own configuration file (`-f` overrides it).
pub const DEFAULT_CONFIG: &str = "/etc/sluice/sluiced_config";
/// Its directory, where `sluiced -A` writes the default host keys.
pub const DEFAULT_CONFIG_DIR: &str = "/etc/sluice";
/// What a source build falls back to when [`DEFAULT_CONFIG`] does not
/// exist: a machine with only openssh-server installed.
pub const OPENSSH_CONFIG: &str = "/etc/ssh/sshd_config";
/// The default host key files, in sshd's order, by type name.
pub const DEFAULT_HOST_KEY_TYPES: [&str; 3] = ["rsa", "ecdsa", "ed25519"];

/// The configuration file `sluiced` reads without `-f`: sluice's own,
/// else sshd's (a source build where only openssh-server is installed).
pub fn default_config_path() -> &'static str {
    if Path::new(DEFAULT_CONFIG).exists() || !Path::new(OPENSSH_CONFIG).exists() {
        DEFAULT_CONFIG
    } else {
        OPENSSH_CONFIG
    }
}

/// The default host key files beside a configuration file in `dir`:
/// `dir/ssh_host_{rsa,ecdsa,ed25519}_key` (so `-f /etc/ssh/sshd_config`
/// uses /etc/ssh's keys, the default configuration /etc/sluice's).
pub fn default_host_key_paths(dir: &Path) -> Vec<PathBuf> {
    DEFAULT_HOST_KEY_TYPES
        .iter()
        .map(|t| dir.join(format!("ssh_host_{t}_key")))
        .collect()
}

/// PermitRootLogin values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermitRootLogin {
    /// yes
    Yes,
    /// prohibit-password (also without-password)
    ProhibitPassword,
    /// forced-commands-only
    ForcedCommandsOnly,
    /// no
    No,
}

impl PermitRootLogin {
    /// Public keys may log in as root.
    pub fn allows_publickey(self) -> bool {
        self != PermitRootLogin::No
    }
    /// Root only with a forced command.
    pub fn forced_commands_only(self) -> bool {
        self == PermitRootLogin::ForcedCommandsOnly
    }
    /// The value as `sshd -T` shows it.
    pub fn name(self) -> &'static str {
        match self {
            PermitRootLogin::Yes => "yes",
            PermitRootLogin::ProhibitPassword => "without-password",
            PermitRootLogin::ForcedCommandsOnly => "forced-commands-only",
            PermitRootLogin::No => "no",
        }
    }
}

/// The effective server configuration.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Port (repeatable).
    pub ports: Vec<u16>,
    /// ListenAddress entries (`host`, `host:port`, `[v6]:port`).
    pub listen: Vec<String>,
    /// HostKey files (and RequiredRSASize, which their loading applies).
    pub host_keys: HostKeyFiles,
    /// AuthorizedKeysFile templates (%h %u %% tokens).
    pub authorized_keys_file: Vec<String>,
    /// PermitRootLogin.
    pub permit_root_login: PermitRootLogin,
    /// PubkeyAuthentication.
    pub pubkey_authentication: bool,
    /// PasswordAuthentication (passwords come in a later release).
    pub password_authentication: bool,
    /// StrictModes.
    pub strict_modes: bool,
    /// PidFile; None for `none`.
    pub pid_file: Option<PathBuf>,
    /// Subsystem name and command.
    pub subsystems: Vec<(String, String)>,
    /// AcceptEnv patterns.
    pub accept_env: Vec<String>,
    /// LogLevel.
    pub log_level: Level,
    /// MaxSessions.
    pub max_sessions: u32,
    /// MaxAuthTries.
    pub max_auth_tries: u32,
    /// MaxStartups start:rate:full.
    pub max_startups: (u32, u32, u32),
    /// LoginGraceTime in seconds.
    pub login_grace_time: u64,
    /// Ciphers.
    pub ciphers: Vec<String>,
    /// MACs.
    pub macs: Vec<String>,
    /// KexAlgorithms.
    pub kex: Vec<String>,
    /// HostKeyAlgorithms.
    pub host_key_algorithms: Vec<String>,
    /// PubkeyAcceptedAlgorithms.
    pub pubkey_algorithms: Vec<String>,
    /// Compression: yes, delayed or no.
    pub compression: String,
    /// EnableHwCompression (AIX OpenSSH's keyword): zlib through a hardware
    /// deflate library (net/hwzlib).
    pub enable_hw_compression: bool,
    /// Ours: HwCompressionLibrary, the library tried first.
    pub hw_compression_library: Option<PathBuf>,
    /// RekeyLimit bytes (0 default) and seconds (0 none).
    pub rekey_limit: (u64, u64),
    /// CryptoThreads: threads that seal and open packets (sluice's own keyword).
    pub crypto_threads: CryptoThreads,
    /// ForceCommand.
    pub force_command: Option<String>,
    /// ChrootDirectory, tokens unexpanded; None for `none` (server/chroot.rs).
    pub chroot_directory: Option<String>,
    /// Banner file.
    pub banner: Option<PathBuf>,
    /// AllowUsers patterns.
    pub allow_users: Vec<String>,
    /// DenyUsers patterns.
    pub deny_users: Vec<String>,
    /// Ours: TcpRcvBuf, TcpSndBuf (bytes, 0 = the kernel's autotuning), set on
    /// the listening sockets.
    pub tcp_rcvbuf: u64,
    /// TcpSndBuf.
    pub tcp_sndbuf: u64,
    /// Ours: RemoteBufMax, the largest socket buffer a client's RemoteRcvBuf
    /// or RemoteSndBuf may ask for: unset, the sysctl maxima; bytes (forced
    /// past them as root) only where the administrator set it; 0 refuses.
    pub remote_buf_max: crate::net::sockbuf::RemoteMax,
    /// Ours: ChannelWindow, the receive window a channel starts with.
    pub channel_window: u32,
    /// Ours: ChannelWindowMax, the most a bulk channel's window grows to.
    pub channel_window_max: u32,
    /// Ours: MaxForwardChannels, forwarding channels open at once on one
    /// connection (MaxSessions' counterpart for port forwarding).
    pub max_forward_channels: u32,
    /// Ours: MaxStreams, the connections one session may stripe a channel
    /// over, the primary included (PROTOCOL.md, "Channel striping"; 1
    /// declines every `stripe-v00@sluice.dev` grant).
    pub max_streams: u32,
    /// NoneEnabled.
    pub none_enabled: bool,
    /// NoneMacEnabled.
    pub none_mac_enabled: bool,
    // Sessions, forwarding and login policy (issue 6).
    /// UsePAM.
    pub use_pam: bool,
    /// PAMServiceName as written; [`ServerConfig::pam_service`] gives the
    /// one in use.
    pub pam_service_name: Option<String>,
    /// The directory of the configuration file read: where the default
    /// host keys are looked for when no HostKey is given.
    pub config_dir: PathBuf,
    /// KbdInteractiveAuthentication (ChallengeResponseAuthentication).
    pub kbd_interactive_authentication: bool,
    /// PermitEmptyPasswords.
    pub permit_empty_passwords: bool,
    /// AllowGroups patterns.
    pub allow_groups: Vec<String>,
    /// DenyGroups patterns.
    pub deny_groups: Vec<String>,
    /// AllowTcpForwarding: yes (all), no, local, remote.
    pub allow_tcp_forwarding: String,
    /// AllowStreamLocalForwarding: yes (all), no, local, remote.
    pub allow_stream_local_forwarding: String,
    /// AllowAgentForwarding.
    pub allow_agent_forwarding: bool,
    /// DisableForwarding: overrides every forwarding permission.
    pub disable_forwarding: bool,
    /// GatewayPorts: no, yes, clientspecified.
    pub gateway_ports: String,
    /// PermitOpen entries (`host:port`, `any`, `none`; default any).
    pub permit_open: Vec<String>,
    /// PermitListen entries (`[host:]port`, `any`, `none`; default any).
    pub permit_listen: Vec<String>,
    /// StreamLocalBindUnlink.
    pub stream_local_bind_unlink: bool,
    /// PermitTTY.
    pub permit_tty: bool,
    /// X11Forwarding (sluiced does not forward X11; kept for -T).
    pub x11_forwarding: bool,
    /// PrintMotd.
    pub print_motd: bool,
    /// PrintLastLog.
    pub print_last_log: bool,
    /// PermitUserEnvironment.
    pub permit_user_environment: bool,
    /// ExposeAuthInfo: SSH_USER_AUTH names a file of the methods and keys used.
    pub expose_auth_info: bool,
    /// SetEnv entries (NAME=value).
    pub set_env: Vec<String>,
    /// ClientAliveInterval in seconds (0: off).
    pub client_alive_interval: u64,
    /// ClientAliveCountMax.
    pub client_alive_count_max: u32,
    /// ChannelTimeout's `type=interval` pairs as written (empty: none);
    /// [`ServerConfig::channel_timeouts`] reads them.
    pub channel_timeout: Vec<String>,
    /// UnusedConnectionTimeout in seconds (0: none).
    pub unused_connection_timeout: u64,
    /// AuthorizedKeysCommand (None: none).
    pub authorized_keys_command: Option<String>,
    /// AuthorizedKeysCommandUser (None: none).
    pub authorized_keys_command_user: Option<String>,
    /// AuthorizedPrincipalsCommand as written (None: none).
    pub authorized_principals_command: Option<String>,
    /// AuthorizedPrincipalsCommandUser (None: none).
    pub authorized_principals_command_user: Option<String>,
    /// SyslogFacility (AUTH, DAEMON, USER, LOCAL0-7).
    pub syslog_facility: String,
    /// RequiredRSASize: the smallest RSA modulus for user and host keys.
    pub required_rsa_size: u32,
    /// AddressFamily: any, inet or inet6 (listening and forwarding).
    pub address_family: String,
    /// StreamLocalBindMask: the umask for Unix sockets bound for clients.
    pub stream_local_bind_mask: u32,
    /// TCPKeepAlive: SO_KEEPALIVE on the connection.
    pub tcp_keep_alive: bool,
    /// RevokedKeys: a file of public keys refused for user authentication.
    pub revoked_keys: Option<PathBuf>,
    /// TrustedUserCAKeys: CA keys trusted to sign user certificates.
    pub trusted_user_ca_keys: Option<PathBuf>,
    /// AuthorizedPrincipalsFile template (%h %u %U %% tokens).
    pub authorized_principals_file: Option<String>,
    /// CASignatureAlgorithms: what a CA may sign certificates with.
    pub ca_signature_algorithms: Vec<String>,
    /// PubkeyAuthOptions: what a security key's signature must show.
    pub pubkey_auth_options: PubkeyAuthOptions,
    /// AuthenticationMethods lists (empty: any): each a comma-separated
    /// sequence of methods, all of which must succeed in order, one list
    /// being enough (auth_methods.rs).
    pub authentication_methods: Vec<String>,
    /// PerSourceMaxStartups (None: `none`, no limit).
    pub per_source_max_startups: Option<u32>,
    /// PerSourceNetBlockSize: prefix lengths grouping IPv4 and IPv6 sources.
    pub per_source_net_block_size: (u8, u8),
    /// PerSourcePenalties as written (`resolve` fills in the defaults).
    pub per_source_penalties: per_source::PenaltySpec,
    /// PerSourcePenaltyExemptList (None: none).
    pub per_source_penalty_exempt: Option<String>,
    /// Keywords accepted but not acted on, as written (shown by -T).
    pub other: BTreeMap<String, String>,
    /// Every line with its Match conditions, for `for_connection`.
    lines: Arc<Vec<Line>>,
}

/// PubkeyAuthOptions (sshd_config(5)): `none` (the default: a security
/// key's touch is required unless its authorized_keys line or certificate
/// says `no-touch-required`), `touch-required` (always, whatever the key's
/// options), `verify-required` (the signature must show user verification).
/// Other key types are not affected.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PubkeyAuthOptions {
    /// `touch-required`: `no-touch-required` is overridden.
    pub touch_required: bool,
    /// `verify-required`.
    pub verify_required: bool,
}

/// Reads the configuration: `-o` overrides first (so they win), then
/// `path` with its Includes; every line's value is checked, inactive Match
/// blocks included, as sshd does.
fn read_lines(
    path: &Path,
    overrides: &[String],
    ports: &[String],
) -> Result<(Vec<Line>, Vec<String>), SshdConfigError> {
    let r = lines::read(path, overrides, ports)?;
    let mut scratch = ServerConfig::default();
    for l in &r.lines {
        scratch.apply(l, &mut HashSet::new())?;
    }
    Ok((r.lines, r.warnings))
}

impl ServerConfig {
    /// Reads `path` (missing is an error, as for sshd) with `-o` overrides
    /// taking precedence; returns the configuration in force at startup
    /// (Match blocks other than `Match All` do not apply yet) and warnings to log.
    pub fn load(
        path: &Path,
        overrides: &[String],
    ) -> Result<(ServerConfig, Vec<String>), SshdConfigError> {
        Self::load_with_ports(path, overrides, &[])
    }

    /// `load` with sshd's `-p` ports, which replace the file's Port lines.
    pub fn load_with_ports(
        path: &Path,
        overrides: &[String],
        ports: &[String],
    ) -> Result<(ServerConfig, Vec<String>), SshdConfigError> {
        let (lines, warnings) = read_lines(path, overrides, ports)?;
        let lines = Arc::new(lines);
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
            _ => PathBuf::from("."),
        };
        let cfg = Self::evaluate(&lines, None, &dir)?;
        // A binary KRL that does not parse is refused now rather than
        // denying every key later (Match blocks included).
        for l in lines
            .iter()
            .filter(|l| keyword_table::canonical(&l.kw) == "revokedkeys")
        {
            let f = l.args.first().map(String::as_str).unwrap_or("none");
            if f == "none" {
                continue;
            }
            if let Err(e) = crate::keys::revoked::check_krl(Path::new(f)) {
                return Err(l.err(LineError::RevokedKeys {
                    path: f.to_owned(),
                    reason: e.to_string(),
                }));
            }
        }
        // sshd's startup checks: a command with no user to run it as is
        // refused (never run as root by default).
        if cfg.authorized_keys_command.is_some() && cfg.authorized_keys_command_user.is_none() {
            return Err(SshdConfigError::KeysCommandWithoutUser);
        }
        if cfg.authorized_principals_command.is_some()
            && cfg.authorized_principals_command_user.is_none()
        {
            return Err(SshdConfigError::PrincipalsCommandWithoutUser);
        }
        if !cfg.authentication_methods.is_empty() && !cfg.some_method_list_enabled() {
            // sshd's startup check, on the global configuration: at least
            // one list must be made only of enabled methods.
            return Err(SshdConfigError::MethodsUnsatisfiable);
        }
        Ok((cfg, warnings))
    }

    /// Whether some connection may be allowed striping: MaxStreams above 1
    /// here, or set by a Match block (whose value holds for the connections
    /// it matches).
    pub fn striping_possible(&self) -> bool {
        self.max_streams > 1
            || self
                .lines
                .iter()
                .any(|l| !l.conds.is_empty() && keyword_table::canonical(&l.kw) == "maxstreams")
    }

    /// The configuration for one connection: global lines and the Match
    /// blocks whose criteria hold, first value winning in file order.
    pub fn for_connection(&self, ctx: &MatchContext) -> ServerConfig {
        // Every line was checked when loading, so this cannot fail; keep
        // the startup configuration if it somehow does.
        Self::evaluate(&self.lines, Some(ctx), &self.config_dir).unwrap_or_else(|_| self.clone())
    }

    fn evaluate(
        lines: &Arc<Vec<Line>>,
        ctx: Option<&MatchContext>,
        config_dir: &Path,
    ) -> Result<ServerConfig, SshdConfigError> {
        let mut cfg = ServerConfig {
            lines: lines.clone(),
            config_dir: config_dir.to_owned(),
            ..ServerConfig::default()
        };
        // As sshd re-parses for a connection: the Match blocks that hold
        // give each keyword they set its value (the first such line wins),
        // replacing what the global lines say; other keywords keep the
        // startup value (global lines and `Match All`, first wins).
        let mut from_match = HashSet::new();
        if let Some(c) = ctx {
            let mut seen = HashSet::new();
            for l in lines
                .iter()
                .filter(|l| !l.conds.is_empty() && l.active(Some(c)))
            {
                cfg.apply(l, &mut seen)?;
                from_match.insert(keyword_table::canonical(&l.kw).to_owned());
            }
        }
        let mut seen = HashSet::new();
        for l in lines.iter().filter(|l| l.active(None)) {
            if !from_match.contains(keyword_table::canonical(&l.kw)) {
                cfg.apply(l, &mut seen)?;
            }
        }
        if cfg.ports.is_empty() {
            cfg.ports.push(22);
        }
        if cfg.host_keys.is_empty() {
            // No HostKey: the default keys beside the configuration file
            // in use (sshd's are /etc/ssh's, beside sshd_config); where
            // there are none, sshd's own defaults in /etc/ssh, as sshd
            // would use with that file.
            let beside: Vec<PathBuf> = default_host_key_paths(config_dir)
                .into_iter()
                .filter(|p| p.exists())
                .collect();
            if beside.is_empty() {
                let etc_ssh = default_host_key_paths(Path::new("/etc/ssh"));
                cfg.host_keys
                    .extend(etc_ssh.into_iter().filter(|p| p.exists()));
            } else {
                cfg.host_keys.extend(beside);
            }
        }
        cfg.host_keys.min_rsa_bits = cfg.required_rsa_size;
        Ok(cfg)
    }

    /// For `-T`: the configuration a test spec (`-C`) gets, or sshd's
    /// complaint when the spec lacks `lport` that a Match line needs.
    pub fn for_test(&self, ctx: &MatchContext) -> Result<ServerConfig, SshdConfigError> {
        let needs_lport = self
            .lines
            .iter()
            .any(|l| l.conds.iter().any(|c| c.uses_local_port()));
        if needs_lport && ctx.lport.is_none() {
            return Err(SshdConfigError::LocalPortNotInSpec);
        }
        Ok(self.for_connection(ctx))
    }

    /// Some AuthenticationMethods list names only enabled methods.
    fn some_method_list_enabled(&self) -> bool {
        let enabled = self.enabled_methods();
        // `none` counts as enabled here, as in sshd's check (its method
        // is on until first used): `AuthenticationMethods none` starts.
        self.authentication_methods.iter().any(|list| {
            list.split(',').all(|m| {
                let name = m.split(':').next();
                name == Some("none") || enabled.iter().any(|e| Some(e.as_str()) == name)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str, o: &[&str]) -> Result<ServerConfig, SshdConfigError> {
        let p = std::env::temp_dir().join(format!(
            "sluiced-test-{}-{}",
            std::process::id(),
            text.len()
        ));
        std::fs::write(&p, text).unwrap();
        let r = ServerConfig::load(&p, &o.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .map(|(c, _)| c);
        let _ = std::fs::remove_file(&p);
        r
    }

    #[test]
    fn chroot_directory_per_match_and_in_dump() {
        let text = "ChrootDirectory none\nMatch User bob\n  ChrootDirectory /srv/%u\n  ForceCommand internal-sftp -R\n";
        let c = load(text, &[]).unwrap();
        assert_eq!(c.chroot_directory, None);
        assert!(c.dump().contains("chrootdirectory none\n"));
        let a: std::net::SocketAddr = "127.0.0.1:22".parse().unwrap();
        let bob = c.for_connection(&MatchContext::connection("bob", a, a));
        assert_eq!(bob.chroot_directory.as_deref(), Some("/srv/%u"));
        assert_eq!(bob.force_command.as_deref(), Some("internal-sftp -R"));
        assert!(bob.dump().contains("chrootdirectory /srv/%u\n"));
    }

    #[test]
    fn defaults_overrides_and_errors() {
        let c = load("Port 2222\nPort 2223\nPermitRootLogin no\nPermitRootLogin yes\nUsePAM yes\nSubsystem sftp /usr/lib/openssh/sftp-server\n", &["PermitRootLogin=yes"]).unwrap();
        assert_eq!(c.ports, [2222, 2223]);
        assert_eq!(c.permit_root_login, PermitRootLogin::Yes);
        assert_eq!(
            c.subsystem_command("sftp").as_deref(),
            Some("/usr/lib/openssh/sftp-server")
        );
        let e = load("Port 22\nBogus 1\n", &[]).unwrap_err();
        assert!(
            matches!(&e, SshdConfigError::BadOptions { bad, .. } if bad.len() == 1 && bad[0].keyword == "Bogus")
        );
        let e = e.to_string();
        assert!(
            e.contains("line 2: Bad configuration option: Bogus\n")
                && e.ends_with("terminating, 1 bad configuration options"),
            "{e}"
        );
        let e = load("StrictModes maybe\n", &[]).unwrap_err();
        assert!(matches!(
            &e,
            SshdConfigError::Line {
                line: 1,
                error: LineError::Value(crate::config::error::ValueError::UnsupportedOption { .. }),
                ..
            }
        ));
        assert!(e
            .to_string()
            .contains("line 1: unsupported option \"maybe\"."));
        let e = load("Ciphers aes128-ctr,nope\n", &[]).unwrap_err();
        assert!(matches!(
            &e,
            SshdConfigError::Line {
                error: LineError::Value(crate::config::error::ValueError::Algorithms(_)),
                ..
            }
        ));
        assert!(e.to_string().contains("Bad SSH2 cipher spec"));
        assert!(matches!(
            load("UseDNS yes\n", &[]),
            Err(SshdConfigError::Refused { line: 1, .. })
        ));
        assert!(matches!(
            load("Match Address 1.2.3.4/40\n", &[]),
            Err(SshdConfigError::Match { line: 1, .. })
        ));
        let d = c.dump();
        assert!(d.contains("port 2222\n") && d.contains("permitrootlogin yes\n"));
        assert_eq!(
            c.authorized_keys_files("bob", "/home/bob", 5)[0],
            PathBuf::from("/home/bob/.ssh/authorized_keys")
        );
    }

    #[test]
    fn debian_default_config_parses() {
        let debian = "Include /etc/ssh/sshd_config.d/*.conf\nKbdInteractiveAuthentication no\nUsePAM yes\nX11Forwarding yes\nPrintMotd no\nAcceptEnv LANG LC_*\nSubsystem\tsftp\t/usr/lib/openssh/sftp-server\n";
        let c = load(debian, &[]).unwrap();
        assert!(c.accept_env_matches("LC_ALL"));
    }
}
