//! `sshd_config` for `sluiced` (sshd_config(5)): the keywords sluiced acts
//! on, OpenSSH's defaults, first value wins, `-o` overrides first, an
//! unknown keyword is an error naming file and line, keywords OpenSSH has
//! but sluiced does not act on are accepted with a warning. `dump` prints
//! the effective configuration like `sshd -T`.

use super::{algorithms, parse_rekey_limit, parse_time, split_line, yes_no};
use crate::log::Level;
use crate::net::crypto_pool::CryptoThreads;
use sluice_proto::crypto::{cipher, hostkey, kex};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

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
    fn name(self) -> &'static str {
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
    /// HostKey files.
    pub host_keys: Vec<PathBuf>,
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
    /// RekeyLimit bytes (0 default) and seconds (0 none).
    pub rekey_limit: (u64, u64),
    /// CryptoThreads: threads that seal and open packets (sluice's own keyword).
    pub crypto_threads: CryptoThreads,
    /// ForceCommand.
    pub force_command: Option<String>,
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
    /// or RemoteSndBuf may ask for (bytes; 0 refuses the request).
    pub remote_buf_max: u64,
    /// Ours: ChannelWindow, the receive window a channel starts with.
    pub channel_window: u32,
    /// Ours: ChannelWindowMax, the most a bulk channel's window grows to.
    pub channel_window_max: u32,
    /// NoneEnabled.
    pub none_enabled: bool,
    /// NoneMacEnabled.
    pub none_mac_enabled: bool,
    // Sessions, forwarding and login policy (issue 6).
    /// UsePAM.
    pub use_pam: bool,
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
    /// SetEnv entries (NAME=value).
    pub set_env: Vec<String>,
    /// ClientAliveInterval in seconds (0: off).
    pub client_alive_interval: u64,
    /// ClientAliveCountMax.
    pub client_alive_count_max: u32,
    /// AuthorizedKeysCommand (None: none).
    pub authorized_keys_command: Option<String>,
    /// AuthorizedKeysCommandUser (None: none).
    pub authorized_keys_command_user: Option<String>,
    /// SyslogFacility (AUTH, DAEMON, USER, LOCAL0-7).
    pub syslog_facility: String,
}

fn own(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            ports: Vec::new(),
            listen: Vec::new(),
            host_keys: Vec::new(),
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
            ciphers: own(cipher::DEFAULT_CIPHERS),
            macs: own(cipher::DEFAULT_MACS),
            kex: own(kex::DEFAULT_KEX),
            host_key_algorithms: own(hostkey::DEFAULT_SIG_ALGS),
            pubkey_algorithms: own(hostkey::DEFAULT_SIG_ALGS),
            compression: "yes".into(),
            rekey_limit: (0, 0),
            crypto_threads: CryptoThreads::Auto,
            force_command: None,
            banner: None,
            allow_users: Vec::new(),
            deny_users: Vec::new(),
            tcp_rcvbuf: 0,
            tcp_sndbuf: 0,
            remote_buf_max: 64 << 20,
            channel_window: sluice_proto::Config::default().window,
            channel_window_max: sluice_proto::Config::default().window_max,
            none_enabled: false,
            none_mac_enabled: false,
            use_pam: false,
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
            set_env: Vec::new(),
            client_alive_interval: 0,
            client_alive_count_max: 3,
            authorized_keys_command: None,
            authorized_keys_command_user: None,
            syslog_facility: "AUTH".into(),
        }
    }
}

/// OpenSSH keywords sluiced accepts but does not act on yet.
const ACCEPTED: &[&str] = &[
    "x11displayoffset",
    "x11uselocalhost",
    "tcpkeepalive",
    "usedns",
    "permittunnel",
    "ignorerhosts",
    "ignoreuserknownhosts",
    "hostbasedauthentication",
    "kerberosauthentication",
    "gssapiauthentication",
    "gssapicleanupcredentials",
    "authorizedprincipalsfile",
    "trustedusercakeys",
    "revokedkeys",
    "hostcertificate",
    "chrootdirectory",
    "addressfamily",
    "ipqos",
    "versionaddendum",
    "debianbanner",
    "streamlocalbindmask",
    "fingerprinthash",
    "exposeauthinfo",
    "unusedconnectiontimeout",
    "channeltimeout",
    "persourcemaxstartups",
    "persourcenetblocksize",
    "casignaturealgorithms",
    "hostbasedacceptedalgorithms",
    "securitykeyprovider",
    "moduli",
    "hostkeyagent",
    "authenticationmethods",
    "kerberosorlocalpasswd",
    "kerberosticketcleanup",
    "gssapistrictacceptorcheck",
    "gssapikeyexchange",
    "pubkeyauthoptions",
];

/// `{path}: line {n}: {msg}` as sshd words it.
fn at(path: &str, n: usize, msg: &str) -> String {
    format!("{path}: line {n}: {msg}")
}

impl ServerConfig {
    /// Reads `path` (missing is an error, as for sshd) with `-o` overrides
    /// taking precedence; returns the config and warnings to log.
    pub fn load(path: &Path, overrides: &[String]) -> Result<(ServerConfig, Vec<String>), String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut cfg = ServerConfig::default();
        let mut st = LoadState::default();
        for o in overrides {
            cfg.apply_line(o, "command-line", 0, &mut st)?;
        }
        cfg.apply_text(&text, &path.display().to_string(), &mut st)?;
        if cfg.ports.is_empty() {
            cfg.ports.push(22);
        }
        if cfg.host_keys.is_empty() {
            for t in ["ecdsa", "ed25519", "rsa"] {
                let p = PathBuf::from(format!("/etc/ssh/ssh_host_{t}_key"));
                if p.exists() {
                    cfg.host_keys.push(p);
                }
            }
        }
        Ok((cfg, st.warnings))
    }

    fn apply_text(&mut self, text: &str, path: &str, st: &mut LoadState) -> Result<(), String> {
        for (i, line) in text.lines().enumerate() {
            self.apply_line(line, path, i + 1, st)?;
        }
        Ok(())
    }

    fn apply_line(
        &mut self,
        line: &str,
        path: &str,
        n: usize,
        st: &mut LoadState,
    ) -> Result<(), String> {
        let Some((kw, args)) = split_line(line).map_err(|e| at(path, n, e.as_str()))? else {
            return Ok(());
        };
        if kw == "match" {
            st.in_match = true;
            st.warnings.push(at(
                path,
                n,
                "Match blocks are not supported yet; their settings are ignored",
            ));
            return Ok(());
        }
        if st.in_match {
            return Ok(());
        }
        if kw == "include" {
            for a in &args {
                let p = if a.starts_with('/') {
                    PathBuf::from(a)
                } else {
                    Path::new("/etc/ssh").join(a)
                };
                for f in glob(&p) {
                    let text = std::fs::read_to_string(&f)
                        .map_err(|e| at(path, n, &format!("{}: {e}", f.display())))?;
                    self.apply_text(&text, &f.display().to_string(), st)?;
                }
            }
            return Ok(());
        }
        let first = args
            .first()
            .cloned()
            .ok_or_else(|| at(path, n, "missing argument."))?;
        let repeatable = matches!(
            kw.as_str(),
            "port"
                | "listenaddress"
                | "hostkey"
                | "subsystem"
                | "acceptenv"
                | "allowusers"
                | "denyusers"
                | "allowgroups"
                | "denygroups"
                | "setenv"
        );
        if !repeatable && !st.seen.insert(kw.clone()) {
            return Ok(()); // first value wins
        }
        let bool_arg =
            || yes_no(&first).ok_or_else(|| at(path, n, &format!("Bad yes/no argument: {first}")));
        let num = || {
            first
                .parse::<u32>()
                .map_err(|_| at(path, n, &format!("Bad number '{first}'")))
        };
        let algs = |default: &[&str], supported: &[&str], what: &str| {
            algorithms::resolve(&first, default, supported, what).map_err(|e| at(path, n, &e))
        };
        match kw.as_str() {
            "port" => self.ports.push(
                first
                    .parse()
                    .map_err(|_| at(path, n, &format!("Badly formatted port number.")))?,
            ),
            "listenaddress" => self.listen.push(first),
            "hostkey" => self.host_keys.push(PathBuf::from(first)),
            "authorizedkeysfile" => self.authorized_keys_file = args,
            "permitrootlogin" => {
                self.permit_root_login = match first.as_str() {
                    "yes" => PermitRootLogin::Yes,
                    "prohibit-password" | "without-password" => PermitRootLogin::ProhibitPassword,
                    "forced-commands-only" => PermitRootLogin::ForcedCommandsOnly,
                    "no" => PermitRootLogin::No,
                    _ => return Err(at(path, n, &format!("unsupported option \"{first}\"."))),
                }
            }
            "pubkeyauthentication" => self.pubkey_authentication = bool_arg()?,
            "passwordauthentication" => self.password_authentication = bool_arg()?,
            "strictmodes" => self.strict_modes = bool_arg()?,
            "pidfile" => self.pid_file = (first != "none").then(|| PathBuf::from(first)),
            "subsystem" => {
                if self.subsystems.iter().any(|(s, _)| *s == first) {
                    return Err(at(
                        path,
                        n,
                        &format!("Subsystem '{first}' already defined."),
                    ));
                }
                let cmd = args.get(1..).unwrap_or_default().join(" ");
                if cmd.is_empty() {
                    return Err(at(path, n, "Missing subsystem command."));
                }
                self.subsystems.push((first, cmd));
            }
            "acceptenv" => self.accept_env.extend(args),
            "allowusers" => self.allow_users.extend(args),
            "denyusers" => self.deny_users.extend(args),
            "loglevel" => {
                self.log_level = Level::parse(&first)
                    .ok_or_else(|| at(path, n, &format!("unsupported log level '{first}'")))?
            }
            "maxsessions" => self.max_sessions = num()?,
            "maxauthtries" => self.max_auth_tries = num()?,
            "maxstartups" => {
                let p: Vec<u32> = first.split(':').filter_map(|x| x.parse().ok()).collect();
                self.max_startups = match p.as_slice() {
                    [s] => (*s, 100, *s),
                    [s, r, f] if s <= f && *r <= 100 => (*s, *r, *f),
                    _ => return Err(at(path, n, "Illegal MaxStartups spec.")),
                };
            }
            "logingracetime" => {
                self.login_grace_time =
                    parse_time(&first).ok_or_else(|| at(path, n, "invalid time value."))?
            }
            "ciphers" => {
                self.ciphers = algs(cipher::DEFAULT_CIPHERS, cipher::DEFAULT_CIPHERS, "cipher")?
            }
            "macs" => self.macs = algs(cipher::DEFAULT_MACS, cipher::DEFAULT_MACS, "Mac")?,
            "kexalgorithms" => {
                self.kex = algs(kex::DEFAULT_KEX, kex::DEFAULT_KEX, "KexAlgorithms")?
            }
            "hostkeyalgorithms" => {
                self.host_key_algorithms = algs(
                    hostkey::DEFAULT_SIG_ALGS,
                    hostkey::DEFAULT_SIG_ALGS,
                    "HostKeyAlgorithms",
                )?
            }
            "pubkeyacceptedalgorithms" | "pubkeyacceptedkeytypes" => {
                self.pubkey_algorithms = algs(
                    hostkey::DEFAULT_SIG_ALGS,
                    hostkey::DEFAULT_SIG_ALGS,
                    "PubkeyAcceptedAlgorithms",
                )?
            }
            "compression" => {
                self.compression = match first.as_str() {
                    "yes" | "delayed" => "yes".into(),
                    "no" => "no".into(),
                    _ => return Err(at(path, n, &format!("Bad yes/no argument: {first}"))),
                }
            }
            "rekeylimit" => {
                self.rekey_limit =
                    parse_rekey_limit(&args).ok_or_else(|| at(path, n, "Bad RekeyLimit"))?
            }
            "cryptothreads" => {
                self.crypto_threads = CryptoThreads::parse(&first)
                    .ok_or_else(|| at(path, n, &format!("Bad CryptoThreads: {first}")))?
            }
            "forcecommand" => self.force_command = (first != "none").then(|| args.join(" ")),
            "banner" => self.banner = (first != "none").then(|| PathBuf::from(first)),
            "tcprcvbuf" => {
                self.tcp_rcvbuf =
                    super::parse_size(&first).ok_or_else(|| at(path, n, "bad size"))?
            }
            "tcpsndbuf" => {
                self.tcp_sndbuf =
                    super::parse_size(&first).ok_or_else(|| at(path, n, "bad size"))?
            }
            "channelwindow" | "channelwindowmax" => {
                let (name, slot) = if kw.eq_ignore_ascii_case("channelwindow") {
                    ("ChannelWindow", &mut self.channel_window)
                } else {
                    ("ChannelWindowMax", &mut self.channel_window_max)
                };
                *slot = crate::client::app::window_size(Some(&first), name, *slot)
                    .map_err(|e| at(path, n, &e))?
            }
            "remotebufmax" => {
                self.remote_buf_max =
                    super::parse_size(&first).ok_or_else(|| at(path, n, "bad size"))?
            }
            "noneenabled" => self.none_enabled = bool_arg()?,
            "usepam" => self.use_pam = bool_arg()?,
            "kbdinteractiveauthentication" | "challengeresponseauthentication" => {
                self.kbd_interactive_authentication = bool_arg()?
            }
            "permitemptypasswords" => self.permit_empty_passwords = bool_arg()?,
            "allowgroups" => self.allow_groups.extend(args),
            "denygroups" => self.deny_groups.extend(args),
            "allowtcpforwarding" | "allowstreamlocalforwarding" => {
                let v = match first.as_str() {
                    "yes" | "all" => "yes",
                    "no" => "no",
                    "local" => "local",
                    "remote" => "remote",
                    _ => return Err(at(path, n, &format!("unsupported option \"{first}\"."))),
                };
                if kw == "allowtcpforwarding" {
                    self.allow_tcp_forwarding = v.into();
                } else {
                    self.allow_stream_local_forwarding = v.into();
                }
            }
            "allowagentforwarding" => self.allow_agent_forwarding = bool_arg()?,
            "disableforwarding" => self.disable_forwarding = bool_arg()?,
            "gatewayports" => {
                self.gateway_ports = match first.as_str() {
                    "yes" | "no" | "clientspecified" => first,
                    _ => return Err(at(path, n, &format!("unsupported option \"{first}\"."))),
                }
            }
            "permitopen" => self.permit_open = args,
            "permitlisten" => self.permit_listen = args,
            "streamlocalbindunlink" => self.stream_local_bind_unlink = bool_arg()?,
            "permittty" => self.permit_tty = bool_arg()?,
            "x11forwarding" => self.x11_forwarding = bool_arg()?,
            "printmotd" => self.print_motd = bool_arg()?,
            "printlastlog" => self.print_last_log = bool_arg()?,
            "permituserenvironment" => self.permit_user_environment = bool_arg()?,
            "setenv" => self.set_env.extend(args),
            "clientaliveinterval" => {
                self.client_alive_interval =
                    parse_time(&first).ok_or_else(|| at(path, n, "invalid time value."))?
            }
            "clientalivecountmax" => self.client_alive_count_max = num()?,
            "authorizedkeyscommand" => {
                self.authorized_keys_command = (first != "none").then(|| args.join(" "))
            }
            "authorizedkeyscommanduser" => {
                self.authorized_keys_command_user = (first != "none").then_some(first)
            }
            "syslogfacility" => self.syslog_facility = first.to_ascii_uppercase(),
            "nonemacenabled" => self.none_mac_enabled = bool_arg()?,
            k if ACCEPTED.contains(&k) => {
                st.warnings
                    .push(at(path, n, &format!("Unsupported option {kw}")))
            }
            _ => return Err(at(path, n, &format!("Bad configuration option: {kw}"))),
        }
        Ok(())
    }

    /// AuthorizedKeysFile with tokens expanded and relative paths under home.
    pub fn authorized_keys_files(&self, user: &str, home: &str, uid: u32) -> Vec<PathBuf> {
        self.authorized_keys_file
            .iter()
            .filter(|t| t.as_str() != "none")
            .map(|t| {
                let s = t
                    .replace("%%", "\0")
                    .replace("%h", home)
                    .replace("%u", user)
                    .replace("%U", &uid.to_string())
                    .replace('\0', "%");
                if s.starts_with('/') {
                    PathBuf::from(s)
                } else {
                    Path::new(home).join(s)
                }
            })
            .collect()
    }

    /// AcceptEnv allows this variable.
    pub fn accept_env_matches(&self, name: &str) -> bool {
        self.accept_env
            .iter()
            .any(|p| crate::keys::pattern::match_pattern(name, p))
    }

    /// The command of a Subsystem.
    pub fn subsystem_command(&self, name: &str) -> Option<String> {
        self.subsystems
            .iter()
            .find(|(s, _)| s == name)
            .map(|(_, c)| c.clone())
    }

    /// Addresses to listen on.
    pub fn listen_addrs(&self) -> Result<Vec<std::net::SocketAddr>, String> {
        use std::net::ToSocketAddrs;
        let hosts: Vec<String> = if self.listen.is_empty() {
            vec!["0.0.0.0".into(), "::".into()]
        } else {
            self.listen.clone()
        };
        let mut out = Vec::new();
        for h in hosts {
            let (host, port) = split_host_port(&h);
            let ports = match port {
                Some(p) => vec![p],
                None => self.ports.clone(),
            };
            for p in ports {
                let addrs = (host.as_str(), p)
                    .to_socket_addrs()
                    .map_err(|e| format!("ListenAddress {h}: {e}"))?;
                out.extend(addrs);
            }
        }
        Ok(out)
    }

    /// The effective configuration, like `sshd -T`.
    pub fn dump(&self) -> String {
        let mut o = String::new();
        let mut kv = |k: &str, v: String| {
            o.push_str(k);
            o.push(' ');
            o.push_str(&v);
            o.push('\n');
        };
        let yn = |b: bool| if b { "yes".to_owned() } else { "no".to_owned() };
        for p in &self.ports {
            kv("port", p.to_string());
        }
        for a in self.listen_addrs().unwrap_or_default() {
            kv("listenaddress", a.to_string());
        }
        kv("logingracetime", self.login_grace_time.to_string());
        kv("maxauthtries", self.max_auth_tries.to_string());
        kv("maxsessions", self.max_sessions.to_string());
        kv(
            "maxstartups",
            format!(
                "{}:{}:{}",
                self.max_startups.0, self.max_startups.1, self.max_startups.2
            ),
        );
        kv("loglevel", self.log_level.name().to_owned());
        kv("permitrootlogin", self.permit_root_login.name().to_owned());
        kv("pubkeyauthentication", yn(self.pubkey_authentication));
        kv("passwordauthentication", yn(self.password_authentication));
        kv("strictmodes", yn(self.strict_modes));
        kv("compression", self.compression.clone());
        kv("cryptothreads", self.crypto_threads.to_string());
        kv(
            "pidfile",
            self.pid_file
                .as_ref()
                .map_or("none".into(), |p| p.display().to_string()),
        );
        kv("authorizedkeysfile", self.authorized_keys_file.join(" "));
        for k in &self.host_keys {
            kv("hostkey", k.display().to_string());
        }
        kv("ciphers", self.ciphers.join(","));
        kv("macs", self.macs.join(","));
        kv("kexalgorithms", self.kex.join(","));
        kv("hostkeyalgorithms", self.host_key_algorithms.join(","));
        kv("pubkeyacceptedalgorithms", self.pubkey_algorithms.join(","));
        kv(
            "rekeylimit",
            format!("{} {}", self.rekey_limit.0, self.rekey_limit.1),
        );
        for (s, c) in &self.subsystems {
            kv("subsystem", format!("{s} {c}"));
        }
        for e in &self.accept_env {
            kv("acceptenv", e.clone());
        }
        if let Some(f) = &self.force_command {
            kv("forcecommand", f.clone());
        }
        kv(
            "banner",
            self.banner
                .as_ref()
                .map_or("none".into(), |p| p.display().to_string()),
        );
        kv("tcprcvbuf", self.tcp_rcvbuf.to_string());
        kv("tcpsndbuf", self.tcp_sndbuf.to_string());
        kv("remotebufmax", self.remote_buf_max.to_string());
        kv("channelwindow", self.channel_window.to_string());
        kv("channelwindowmax", self.channel_window_max.to_string());
        kv("noneenabled", yn(self.none_enabled));
        kv("nonemacenabled", yn(self.none_mac_enabled));
        kv("usepam", yn(self.use_pam));
        kv(
            "kbdinteractiveauthentication",
            yn(self.kbd_interactive_authentication),
        );
        kv("permitemptypasswords", yn(self.permit_empty_passwords));
        for (k, v) in [
            ("allowusers", &self.allow_users),
            ("denyusers", &self.deny_users),
            ("allowgroups", &self.allow_groups),
            ("denygroups", &self.deny_groups),
        ] {
            for x in v {
                kv(k, x.clone());
            }
        }
        kv("allowtcpforwarding", self.allow_tcp_forwarding.clone());
        kv(
            "allowstreamlocalforwarding",
            self.allow_stream_local_forwarding.clone(),
        );
        kv("allowagentforwarding", yn(self.allow_agent_forwarding));
        kv("disableforwarding", yn(self.disable_forwarding));
        kv("gatewayports", self.gateway_ports.clone());
        let any = |v: &Vec<String>| {
            if v.is_empty() {
                "any".to_owned()
            } else {
                v.join(" ")
            }
        };
        kv("permitopen", any(&self.permit_open));
        kv("permitlisten", any(&self.permit_listen));
        kv("streamlocalbindunlink", yn(self.stream_local_bind_unlink));
        kv("permittty", yn(self.permit_tty));
        kv("x11forwarding", yn(self.x11_forwarding));
        kv("printmotd", yn(self.print_motd));
        kv("printlastlog", yn(self.print_last_log));
        kv("permituserenvironment", yn(self.permit_user_environment));
        for e in &self.set_env {
            kv("setenv", e.clone());
        }
        kv(
            "clientaliveinterval",
            self.client_alive_interval.to_string(),
        );
        kv(
            "clientalivecountmax",
            self.client_alive_count_max.to_string(),
        );
        let none = |v: &Option<String>| v.clone().unwrap_or_else(|| "none".into());
        kv("authorizedkeyscommand", none(&self.authorized_keys_command));
        kv(
            "authorizedkeyscommanduser",
            none(&self.authorized_keys_command_user),
        );
        kv("syslogfacility", self.syslog_facility.clone());
        o
    }
}

#[derive(Default)]
struct LoadState {
    seen: HashSet<String>,
    warnings: Vec<String>,
    in_match: bool,
}

/// `host`, `host:port`, `[v6]:port`, bare v6.
fn split_host_port(s: &str) -> (String, Option<u16>) {
    if let Some(rest) = s.strip_prefix('[') {
        if let Some((h, p)) = rest.split_once("]:") {
            return (h.to_owned(), p.parse().ok());
        }
        return (rest.trim_end_matches(']').to_owned(), None);
    }
    match s.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => (h.to_owned(), p.parse().ok()),
        _ => (s.to_owned(), None),
    }
}

/// Expands a `*` in the last path component (Include).
fn glob(p: &Path) -> Vec<PathBuf> {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !name.contains('*') && !name.contains('?') {
        return vec![p.to_path_buf()];
    }
    let dir = p.parent().unwrap_or(Path::new("/"));
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| {
                    crate::keys::pattern::match_pattern(&e.file_name().to_string_lossy(), &name)
                })
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str, o: &[&str]) -> Result<ServerConfig, String> {
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
            e.ends_with("line 2: Bad configuration option: bogus"),
            "{e}"
        );
        assert!(load("StrictModes maybe\n", &[])
            .unwrap_err()
            .contains("Bad yes/no argument: maybe"));
        assert!(load("Ciphers aes128-ctr,nope\n", &[])
            .unwrap_err()
            .contains("Bad SSH2 cipher spec"));
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
