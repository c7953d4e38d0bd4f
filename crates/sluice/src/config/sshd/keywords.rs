//! The values of sshd_config's keywords: how each line's value lands in
//! `ServerConfig` (first value wins, except for the keywords that
//! accumulate, keyword_table.rs). Errors in sshd's words.

use super::command_line;
use super::error::{Refusal, SshdConfigError};
use super::keyword_table::{canonical, DEPRECATED, REPEATABLE, UNSUPPORTED};
use super::line::Line;
use super::per_source;
use super::{PermitRootLogin, ServerConfig};
use crate::config::error::ValueError;
use crate::config::{algorithms, cipher_order, parse_rekey_limit, parse_size, parse_time, yes_no};
use crate::log::Level;
use crate::net::crypto_pool::CryptoThreads;
use sluice_proto::crypto::{cipher, hostkey, kex};
use std::collections::HashSet;

/// Whether `value` of keyword `kw` is one sluiced cannot honour: the error,
/// "unsupported option X at FILE:LINE: why".
pub(super) fn unsupported(l: &Line, kw: &str, value: &str) -> Result<(), SshdConfigError> {
    match UNSUPPORTED.iter().find(|(k, _, _)| *k == kw) {
        Some((_, off, why)) if !value.eq_ignore_ascii_case(off) => {
            Err(l.refused(Refusal::OnlyOff {
                why: *why,
                keyword: l.name.clone(),
                off: *off,
            }))
        }
        _ => Ok(()),
    }
}

/// Method names AuthenticationMethods may list (sshd's, with
/// `keyboard-interactive:SUB`). `none` is a method to sshd too: a list
/// naming it is valid and, at login, skipped as holding a disabled method.
const AUTH_METHOD_NAMES: &[&str] = &[
    "none",
    "publickey",
    "password",
    "keyboard-interactive",
    "hostbased",
    "gssapi-with-mic",
];

/// AuthenticationMethods as sshd checks it ("any" alone, or lists of known
/// methods, each list a comma-separated sequence of steps;
/// auth_methods.rs walks them). A keyboard-interactive submethod names a
/// device: sluiced has only `pam` (UsePAM yes), so any other is refused
/// rather than left forever unsatisfiable.
fn authentication_methods(l: &Line) -> Result<Vec<String>, SshdConfigError> {
    if l.args.iter().any(|a| a == "any") {
        if l.args.len() > 1 {
            return Err(l.err(ValueError::AnyNotAlone {
                keyword: l.name.clone(),
            }));
        }
        return Ok(Vec::new());
    }
    for list in &l.args {
        let known = list.split(',').all(|m| {
            let name = m.split_once(':').map_or(m, |(n, _)| n);
            AUTH_METHOD_NAMES.contains(&name)
                && (name == "keyboard-interactive" || !m.contains(':'))
        });
        if !known {
            return Err(l.err(ValueError::InvalidMethodList {
                keyword: l.name.clone(),
            }));
        }
        if let Some(sub) = list
            .split(',')
            .filter_map(|m| m.split_once(':').map(|(_, s)| s))
            .find(|s| *s != "pam")
        {
            return Err(l.refused(Refusal::KbdDevice {
                list: list.clone(),
                device: sub.to_owned(),
            }));
        }
    }
    Ok(l.args.clone())
}

const FACILITIES: &[&str] = &[
    "DAEMON", "USER", "AUTH", "AUTHPRIV", "LOCAL0", "LOCAL1", "LOCAL2", "LOCAL3", "LOCAL4",
    "LOCAL5", "LOCAL6", "LOCAL7",
];

/// AuthorizedKeysCommand, AuthorizedPrincipalsCommand: `none`, or a
/// command line starting with an absolute path whose tokens are the
/// keyword's (sshd checks the path here and the tokens at each login,
/// where a bad one would fail every login: refused now instead).
fn command(l: &Line, first: &str, tokens: &'static str) -> Result<Option<String>, SshdConfigError> {
    if l.raw.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    if !first.starts_with('/') {
        return Err(l.err(ValueError::NotAbsolute {
            keyword: l.name.clone(),
        }));
    }
    command_line::check_template(&l.name, tokens, &l.raw).map_err(|e| l.err(e))?;
    Ok(Some(l.raw.clone()))
}

fn forwarding(l: &Line, v: &str) -> Result<String, SshdConfigError> {
    Ok(match v {
        "yes" | "all" => "yes",
        "no" => "no",
        "local" => "local",
        "remote" => "remote",
        _ => {
            return Err(l.err(ValueError::UnsupportedOption {
                value: v.to_owned(),
            }))
        }
    }
    .into())
}

/// One line's value: the line, its first argument and the readings most
/// keywords make of it (each error in sshd's words).
struct Value<'a> {
    l: &'a Line,
    first: String,
}

impl Value<'_> {
    /// The line's error: `FILE line N: ERROR`.
    fn err(&self, e: ValueError) -> SshdConfigError {
        self.l.err(e)
    }

    fn yes_no(&self) -> Result<bool, SshdConfigError> {
        yes_no(&self.first).ok_or_else(|| self.unsupported_value())
    }

    fn num(&self) -> Result<u32, SshdConfigError> {
        self.first.parse::<u32>().map_err(|_| {
            self.err(ValueError::IntegerValueInvalid {
                keyword: self.l.name.clone(),
            })
        })
    }

    fn time(&self) -> Result<u64, SshdConfigError> {
        parse_time(&self.first).ok_or_else(|| self.err(ValueError::InvalidTime))
    }

    fn size(&self) -> Result<u64, SshdConfigError> {
        parse_size(&self.first).ok_or_else(|| self.err(ValueError::BadSize))
    }

    /// `first` itself when it is one of `allowed`, else sshd's "unsupported option".
    fn one_of(&self, allowed: &[&str]) -> Result<String, SshdConfigError> {
        if allowed.contains(&self.first.as_str()) {
            Ok(self.first.clone())
        } else {
            Err(self.unsupported_value())
        }
    }

    fn unsupported_value(&self) -> SshdConfigError {
        self.err(ValueError::UnsupportedOption {
            value: self.first.clone(),
        })
    }

    /// An algorithm list against its default and the names it may take.
    fn algorithms(
        &self,
        default: &[&str],
        all: &[&str],
        what: &str,
    ) -> Result<Vec<String>, SshdConfigError> {
        algorithms::resolve(&self.first, default, all, what)
            .map_err(|e| self.err(ValueError::Algorithms(e)))
    }
}

/// One keyword group's handler: Ok(false) when the keyword is not its.
type Group = fn(&mut ServerConfig, &str, &Value) -> Result<bool, SshdConfigError>;

/// Every group, tried in turn; a keyword belongs to one of them at most.
const GROUPS: &[Group] = &[
    ServerConfig::apply_listen,
    ServerConfig::apply_auth,
    ServerConfig::apply_auth_sources,
    ServerConfig::apply_algorithms,
    ServerConfig::apply_session,
    ServerConfig::apply_forwarding,
    ServerConfig::apply_logging,
    ServerConfig::apply_limits,
    ServerConfig::apply_throughput,
];

impl ServerConfig {
    /// Applies one line: the first value of a keyword wins, repeatable ones accumulate.
    pub(super) fn apply(
        &mut self,
        l: &Line,
        seen: &mut HashSet<String>,
    ) -> Result<(), SshdConfigError> {
        let kw = canonical(&l.kw);
        if DEPRECATED.contains(&kw) {
            return Ok(());
        }
        let first = l.args.first().cloned().ok_or_else(|| {
            l.err(ValueError::NoArgument {
                keyword: l.name.clone(),
            })
        })?;
        if !REPEATABLE.contains(&kw) && !seen.insert(kw.to_owned()) {
            return Ok(()); // first value wins
        }
        let v = Value { l, first };
        for group in GROUPS {
            if group(self, kw, &v)? {
                return Ok(());
            }
        }
        self.keep_other(kw, &v)
    }

    /// Where sluiced listens and what it shows itself as: ports, addresses,
    /// host keys and certificates, the pid file, the banner.
    fn apply_listen(&mut self, kw: &str, v: &Value) -> Result<bool, SshdConfigError> {
        let (l, first) = (v.l, &v.first);
        match kw {
            "port" => self.ports.push(
                first
                    .parse()
                    .ok()
                    .filter(|p| *p != 0)
                    .ok_or_else(|| l.err(ValueError::BadlyFormattedPort))?,
            ),
            "listenaddress" => self.listen.push(first.clone()),
            "addressfamily" => self.address_family = v.one_of(&["any", "inet", "inet6"])?,
            "tcpkeepalive" => self.tcp_keep_alive = v.yes_no()?,
            "hostkey" => self.host_keys.push(first.into()),
            "hostcertificate" => self.host_keys.certificates.push(first.into()),
            "hostkeyagent" => {
                self.host_keys.agent =
                    (!first.eq_ignore_ascii_case("none")).then_some(first.clone())
            }
            "securitykeyprovider" => self.host_keys.sk_provider = Some(first.clone()),
            "pidfile" => self.pid_file = (first != "none").then(|| first.into()),
            "banner" => self.banner = (first != "none").then(|| first.into()),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Who may log in and by which methods.
    fn apply_auth(&mut self, kw: &str, v: &Value) -> Result<bool, SshdConfigError> {
        let (l, first) = (v.l, &v.first);
        match kw {
            "permitrootlogin" => {
                self.permit_root_login = match first.as_str() {
                    "yes" => PermitRootLogin::Yes,
                    "prohibit-password" | "without-password" => PermitRootLogin::ProhibitPassword,
                    "forced-commands-only" => PermitRootLogin::ForcedCommandsOnly,
                    "no" => PermitRootLogin::No,
                    _ => return Err(v.unsupported_value()),
                }
            }
            "pubkeyauthentication" => self.pubkey_authentication = v.yes_no()?,
            "passwordauthentication" => self.password_authentication = v.yes_no()?,
            "kbdinteractiveauthentication" => self.kbd_interactive_authentication = v.yes_no()?,
            "permitemptypasswords" => self.permit_empty_passwords = v.yes_no()?,
            "strictmodes" => self.strict_modes = v.yes_no()?,
            "usepam" => self.use_pam = v.yes_no()?,
            "pamservicename" => self.pam_service_name = Some(first.clone()),
            "allowusers" => self.allow_users.extend(l.args.clone()),
            "denyusers" => self.deny_users.extend(l.args.clone()),
            "allowgroups" => self.allow_groups.extend(l.args.clone()),
            "denygroups" => self.deny_groups.extend(l.args.clone()),
            "maxauthtries" => self.max_auth_tries = v.num()?,
            "logingracetime" => self.login_grace_time = v.time()?,
            "authenticationmethods" => self.authentication_methods = authentication_methods(l)?,
            "requiredrsasize" => self.required_rsa_size = v.num()?,
            "pubkeyauthoptions" => self.pubkey_auth_options = pubkey_auth_options(l)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Where public-key authentication finds its keys, principals, CAs and
    /// revocations.
    fn apply_auth_sources(&mut self, kw: &str, v: &Value) -> Result<bool, SshdConfigError> {
        let (l, first) = (v.l, &v.first);
        match kw {
            "authorizedkeysfile" => self.authorized_keys_file = l.args.clone(),
            "authorizedkeyscommand" => {
                self.authorized_keys_command = command(l, first, command_line::KEYS_TOKENS)?
            }
            "authorizedkeyscommanduser" => {
                self.authorized_keys_command_user = (first != "none").then_some(first.clone())
            }
            "authorizedprincipalsfile" => {
                self.authorized_principals_file = (first != "none").then_some(first.clone())
            }
            "authorizedprincipalscommand" => {
                self.authorized_principals_command =
                    command(l, first, command_line::PRINCIPALS_TOKENS)?
            }
            "authorizedprincipalscommanduser" => {
                self.authorized_principals_command_user = (first != "none").then_some(first.clone())
            }
            "revokedkeys" => self.revoked_keys = (first != "none").then(|| first.into()),
            "trustedusercakeys" => {
                self.trusted_user_ca_keys = (first != "none").then(|| first.into())
            }
            "casignaturealgorithms" => {
                self.ca_signature_algorithms = v.algorithms(
                    crate::keys::cert::CA_SIGNATURE_ALGORITHMS,
                    crate::keys::cert::CA_SIGNATURE_ALGORITHMS_ALL,
                    "CASignatureAlgorithms",
                )?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Transport algorithms, compression, rekeying and the crypto threads.
    fn apply_algorithms(&mut self, kw: &str, v: &Value) -> Result<bool, SshdConfigError> {
        let (l, first) = (v.l, &v.first);
        match kw {
            "ciphers" => {
                let default = cipher_order::default_ciphers();
                self.ciphers = v.algorithms(default, default, "cipher")?
            }
            "macs" => {
                self.macs = v.algorithms(cipher::DEFAULT_MACS, cipher::SUPPORTED_MACS, "Mac")?
            }
            "kexalgorithms" => {
                self.kex = v.algorithms(super::SERVER_DEFAULT_KEX, kex::ALL_KEX, "KexAlgorithms")?
            }
            // ssh-rsa (SHA-1) and its certificate only when named, as sshd.
            "hostkeyalgorithms" => {
                self.host_key_algorithms = v.algorithms(
                    hostkey::DEFAULT_SIG_ALGS,
                    hostkey::ALL_SIG_ALGS,
                    "HostKeyAlgorithms",
                )?
            }
            "pubkeyacceptedalgorithms" => {
                self.pubkey_algorithms = v.algorithms(
                    hostkey::DEFAULT_SIG_ALGS,
                    hostkey::ALL_SIG_ALGS,
                    "PubkeyAcceptedAlgorithms",
                )?
            }
            "compression" => {
                self.compression = match first.as_str() {
                    "yes" | "delayed" => "yes".into(),
                    "no" => "no".into(),
                    // sluice's own: what each direction uses is the
                    // client's choice; sluiced's sender steers itself
                    // whenever compression is on (README, "Compression").
                    "auto" => "auto".into(),
                    _ => return Err(v.unsupported_value()),
                }
            }
            "enablehwcompression" => self.enable_hw_compression = v.yes_no()?,
            "hwcompressionlibrary" => {
                self.hw_compression_library = (first != "none").then(|| first.into())
            }
            "rekeylimit" => {
                self.rekey_limit = parse_rekey_limit(&l.args)
                    .ok_or_else(|| l.err(ValueError::RekeyLimitTooSmall))?
            }
            "cryptothreads" => {
                self.crypto_threads = CryptoThreads::parse(first).ok_or_else(|| {
                    l.err(ValueError::CryptoThreads {
                        value: first.clone(),
                    })
                })?
            }
            "noneenabled" => self.none_enabled = v.yes_no()?,
            "nonemacenabled" => self.none_mac_enabled = v.yes_no()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// What a session runs and sees: subsystems, commands, chroot, tty,
    /// environment, motd and lastlog.
    fn apply_session(&mut self, kw: &str, v: &Value) -> Result<bool, SshdConfigError> {
        let (l, first) = (v.l, &v.first);
        match kw {
            "subsystem" => {
                if self.subsystems.iter().any(|(s, _)| s == first) {
                    return Err(l.err(ValueError::SubsystemDefined {
                        name: first.clone(),
                    }));
                }
                let cmd = l.args.get(1..).unwrap_or_default().join(" ");
                if cmd.is_empty() {
                    return Err(l.err(ValueError::MissingSubsystemCommand));
                }
                self.subsystems.push((first.clone(), cmd));
            }
            "maxsessions" => self.max_sessions = v.num()?,
            "acceptenv" => self.accept_env.extend(l.args.clone()),
            "setenv" => self.set_env = set_env(l)?,
            "forcecommand" => self.force_command = (first != "none").then(|| l.raw.clone()),
            // Tokens (%h %u %U %%) are expanded per user (chroot_for).
            "chrootdirectory" => {
                self.chroot_directory = (!first.eq_ignore_ascii_case("none")).then(|| first.clone())
            }
            "permittty" => self.permit_tty = v.yes_no()?,
            "x11forwarding" => self.x11_forwarding = v.yes_no()?,
            "printmotd" => self.print_motd = v.yes_no()?,
            "printlastlog" => self.print_last_log = v.yes_no()?,
            "permituserenvironment" => self.permit_user_environment = v.yes_no()?,
            "exposeauthinfo" => self.expose_auth_info = v.yes_no()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// TCP, Unix-socket and agent forwarding.
    fn apply_forwarding(&mut self, kw: &str, v: &Value) -> Result<bool, SshdConfigError> {
        let (l, first) = (v.l, &v.first);
        match kw {
            "allowtcpforwarding" => self.allow_tcp_forwarding = forwarding(l, first)?,
            "allowstreamlocalforwarding" => {
                self.allow_stream_local_forwarding = forwarding(l, first)?
            }
            "allowagentforwarding" => self.allow_agent_forwarding = v.yes_no()?,
            "disableforwarding" => self.disable_forwarding = v.yes_no()?,
            "gatewayports" => self.gateway_ports = v.one_of(&["yes", "no", "clientspecified"])?,
            "permitopen" => self.permit_open = l.args.clone(),
            // A bare port means any address, as sshd shows it (`*:8080`).
            "permitlisten" => {
                self.permit_listen = l
                    .args
                    .iter()
                    .map(|a| {
                        if a.parse::<u16>().is_ok() {
                            format!("*:{a}")
                        } else {
                            a.clone()
                        }
                    })
                    .collect()
            }
            "streamlocalbindunlink" => self.stream_local_bind_unlink = v.yes_no()?,
            "streamlocalbindmask" => {
                self.stream_local_bind_mask = u32::from_str_radix(first, 8)
                    .ok()
                    .filter(|m| *m <= 0o777 && first.starts_with(|c: char| c.is_ascii_digit()))
                    .ok_or_else(|| {
                        l.err(ValueError::Invalid {
                            keyword: l.name.clone(),
                        })
                    })?
            }
            "maxforwardchannels" => self.max_forward_channels = v.num()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The log's level and facility.
    fn apply_logging(&mut self, kw: &str, v: &Value) -> Result<bool, SshdConfigError> {
        let (l, first) = (v.l, &v.first);
        match kw {
            "loglevel" => {
                self.log_level = Level::parse(first).ok_or_else(|| {
                    l.err(ValueError::LogLevel {
                        value: first.clone(),
                    })
                })?
            }
            "syslogfacility" => {
                let f = first.to_ascii_uppercase();
                if !FACILITIES.contains(&f.as_str()) {
                    return Err(l.err(ValueError::LogFacility {
                        value: first.clone(),
                    }));
                }
                self.syslog_facility = f;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// How many connections, from where, for how long: MaxStartups,
    /// PerSource*, client-alive and idle timeouts.
    fn apply_limits(&mut self, kw: &str, v: &Value) -> Result<bool, SshdConfigError> {
        let (l, first) = (v.l, &v.first);
        match kw {
            "maxstartups" => {
                let p: Vec<Option<u32>> = first.split(':').map(|x| x.parse().ok()).collect();
                self.max_startups = match p.as_slice() {
                    [Some(s)] => (*s, 30, *s),
                    [Some(s), Some(r), Some(f)] if s <= f && *r <= 100 && *r > 0 => (*s, *r, *f),
                    _ => return Err(l.err(ValueError::InvalidMaxStartups)),
                };
            }
            "clientaliveinterval" => self.client_alive_interval = v.time()?,
            "clientalivecountmax" => self.client_alive_count_max = v.num()?,
            "channeltimeout" => self.channel_timeout = super::timeouts::channel_timeout(l)?,
            "unusedconnectiontimeout" => {
                self.unused_connection_timeout = super::timeouts::unused_connection_timeout(l)?
            }
            "persourcemaxstartups" => {
                self.per_source_max_startups = per_source::max_startups(l, first)?
            }
            "persourcenetblocksize" => {
                self.per_source_net_block_size =
                    per_source::net_block_size(l, first, self.per_source_net_block_size.1)?
            }
            "persourcepenalties" => self.per_source_penalties.apply(l)?,
            "persourcepenaltyexemptlist" => {
                // `none` is what -T prints for no list: it reads back.
                self.per_source_penalty_exempt = if first.eq_ignore_ascii_case("none") {
                    None
                } else {
                    Some(per_source::exempt_list(l, first)?)
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// sluice's own throughput keywords: socket buffers, windows, striping.
    fn apply_throughput(&mut self, kw: &str, v: &Value) -> Result<bool, SshdConfigError> {
        let (l, first) = (v.l, &v.first);
        match kw {
            "tcprcvbuf" => self.tcp_rcvbuf = v.size()?,
            "tcpsndbuf" => self.tcp_sndbuf = v.size()?,
            "remotebufmax" => {
                use crate::net::sockbuf::RemoteMax;
                self.remote_buf_max = if first.eq_ignore_ascii_case("sysctl") {
                    RemoteMax::Sysctl
                } else {
                    RemoteMax::Bytes(v.size()?)
                }
            }
            // 1 = never grant striping; 0 would mean no connection at all.
            "maxstreams" => {
                self.max_streams = v.num()?;
                if self.max_streams == 0 {
                    return Err(l.err(ValueError::MaxStreamsZero));
                }
            }
            "channelwindow" => {
                self.channel_window =
                    crate::config::window_size(Some(first), "ChannelWindow", self.channel_window)
                        .map_err(|e| l.err(e))?
            }
            "channelwindowmax" => {
                self.channel_window_max = crate::config::window_size(
                    Some(first),
                    "ChannelWindowMax",
                    self.channel_window_max,
                )
                .map_err(|e| l.err(e))?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// A keyword no group takes: refused when sluiced cannot honour its
    /// value, else accepted and kept for -T (yes/no as sshd spells them).
    fn keep_other(&mut self, kw: &str, v: &Value) -> Result<(), SshdConfigError> {
        unsupported(v.l, kw, &v.first)?;
        let shown =
            v.l.args
                .iter()
                .map(|a| match yes_no(a) {
                    Some(b) => if b { "yes" } else { "no" }.to_owned(),
                    None => a.clone(),
                })
                .collect::<Vec<_>>()
                .join(" ");
        self.other.insert(kw.to_owned(), shown);
        Ok(())
    }
}

/// PubkeyAuthOptions: `none`, `touch-required`, `verify-required`.
fn pubkey_auth_options(l: &Line) -> Result<super::PubkeyAuthOptions, SshdConfigError> {
    let mut o = super::PubkeyAuthOptions::default();
    for a in &l.args {
        match a.as_str() {
            "none" => {}
            "touch-required" => o.touch_required = true,
            "verify-required" => o.verify_required = true,
            other => {
                return Err(l.err(ValueError::PubkeyAuthOption {
                    keyword: l.name.clone(),
                    value: other.to_owned(),
                }))
            }
        }
    }
    Ok(o)
}

/// SetEnv: NAME=VALUE pairs; a name given twice keeps its first value, as
/// in sshd.
fn set_env(l: &Line) -> Result<Vec<String>, SshdConfigError> {
    if l.args.iter().any(|a| !a.contains('=')) {
        return Err(l.err(ValueError::InvalidEnvironment));
    }
    let mut env: Vec<String> = Vec::new();
    for a in &l.args {
        let name = a.split('=').next().unwrap_or_default();
        if !env.iter().any(|e| e.split('=').next() == Some(name)) {
            env.push(a.clone());
        }
    }
    Ok(env)
}
