//! The values of sshd_config's keywords: how each line's value lands in
//! `ServerConfig` (first value wins, except for the keywords that
//! accumulate, keyword_table.rs). Errors in sshd's words.

use super::command_line;
use super::keyword_table::{canonical, DEPRECATED, REPEATABLE, UNSUPPORTED};
use super::line::Line;
use super::per_source;
use super::{PermitRootLogin, ServerConfig};
use crate::config::{algorithms, cipher_order, parse_rekey_limit, parse_size, parse_time, yes_no};
use crate::log::Level;
use crate::net::crypto_pool::CryptoThreads;
use sluice_proto::crypto::{cipher, hostkey, kex};
use std::collections::HashSet;

/// Whether `value` of keyword `kw` is one sluiced cannot honour: the error,
/// "unsupported option X at FILE:LINE: why".
pub(super) fn unsupported(l: &Line, kw: &str, value: &str) -> Result<(), String> {
    match UNSUPPORTED.iter().find(|(k, _, _)| *k == kw) {
        Some((_, off, why)) if !value.eq_ignore_ascii_case(off) => Err(refusal(
            l,
            &format!("{why}; only \"{} {off}\" is accepted", l.name),
        )),
        _ => Ok(()),
    }
}

/// "unsupported option X at FILE:LINE: why" (sluiced -t and startup exit 255).
pub(super) fn refusal(l: &Line, why: &str) -> String {
    format!("unsupported option {} at {}:{}: {why}", l.name, l.file, l.n)
}

/// Method names AuthenticationMethods may list (sshd's, with
/// `keyboard-interactive:SUB`).
const AUTH_METHOD_NAMES: &[&str] = &[
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
fn authentication_methods(l: &Line) -> Result<Vec<String>, String> {
    if l.args.iter().any(|a| a == "any") {
        if l.args.len() > 1 {
            return Err(l.err(&format!("\"any\" must appear alone in {}", l.name)));
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
            return Err(l.err(&format!("invalid {} method list.", l.name)));
        }
        if let Some(sub) = list
            .split(',')
            .filter_map(|m| m.split_once(':').map(|(_, s)| s))
            .find(|s| *s != "pam")
        {
            return Err(refusal(
                l,
                &format!(
                    "\"{list}\": keyboard-interactive device \"{sub}\" does not exist in sluiced (only \"pam\", with UsePAM yes)"
                ),
            ));
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
fn command(l: &Line, first: &str, tokens: &str) -> Result<Option<String>, String> {
    if l.raw.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    if !first.starts_with('/') {
        return Err(l.err(&format!("{} must be an absolute path", l.name)));
    }
    command_line::check_template(&l.name, tokens, &l.raw).map_err(|e| l.err(&e))?;
    Ok(Some(l.raw.clone()))
}

fn forwarding(l: &Line, v: &str) -> Result<String, String> {
    Ok(match v {
        "yes" | "all" => "yes",
        "no" => "no",
        "local" => "local",
        "remote" => "remote",
        _ => return Err(l.err(&format!("unsupported option \"{v}\"."))),
    }
    .into())
}

impl ServerConfig {
    /// Applies one line: the first value of a keyword wins, repeatable ones accumulate.
    pub(super) fn apply(&mut self, l: &Line, seen: &mut HashSet<String>) -> Result<(), String> {
        let kw = canonical(&l.kw);
        if DEPRECATED.contains(&kw) {
            return Ok(());
        }
        let first = l
            .args
            .first()
            .cloned()
            .ok_or_else(|| l.err(&format!("no argument after keyword \"{}\"", l.name)))?;
        if !REPEATABLE.contains(&kw) && !seen.insert(kw.to_owned()) {
            return Ok(()); // first value wins
        }
        let bool_arg =
            || yes_no(&first).ok_or_else(|| l.err(&format!("unsupported option \"{first}\".")));
        let num = || {
            first
                .parse::<u32>()
                .map_err(|_| l.err(&format!("{} integer value invalid.", l.name)))
        };
        let time = || parse_time(&first).ok_or_else(|| l.err("invalid time value."));
        let size = || parse_size(&first).ok_or_else(|| l.err("bad size"));
        let algs = |default: &[&str], what: &str| {
            algorithms::resolve(&first, default, default, what).map_err(|e| l.err(&e))
        };
        let args = l.args.clone();
        match kw {
            "port" => self.ports.push(
                first
                    .parse()
                    .ok()
                    .filter(|p| *p != 0)
                    .ok_or_else(|| l.err("Badly formatted port number."))?,
            ),
            "listenaddress" => self.listen.push(first),
            "hostkey" => self.host_keys.push(first.into()),
            "authorizedkeysfile" => self.authorized_keys_file = args,
            "permitrootlogin" => {
                self.permit_root_login = match first.as_str() {
                    "yes" => PermitRootLogin::Yes,
                    "prohibit-password" | "without-password" => PermitRootLogin::ProhibitPassword,
                    "forced-commands-only" => PermitRootLogin::ForcedCommandsOnly,
                    "no" => PermitRootLogin::No,
                    _ => return Err(l.err(&format!("unsupported option \"{first}\"."))),
                }
            }
            "pubkeyauthentication" => self.pubkey_authentication = bool_arg()?,
            "passwordauthentication" => self.password_authentication = bool_arg()?,
            "strictmodes" => self.strict_modes = bool_arg()?,
            "pidfile" => self.pid_file = (first != "none").then(|| first.into()),
            "subsystem" => {
                if self.subsystems.iter().any(|(s, _)| *s == first) {
                    return Err(l.err(&format!("Subsystem '{first}' already defined.")));
                }
                let cmd = args.get(1..).unwrap_or_default().join(" ");
                if cmd.is_empty() {
                    return Err(l.err("Missing subsystem command."));
                }
                self.subsystems.push((first, cmd));
            }
            "acceptenv" => self.accept_env.extend(args),
            "allowusers" => self.allow_users.extend(args),
            "denyusers" => self.deny_users.extend(args),
            "allowgroups" => self.allow_groups.extend(args),
            "denygroups" => self.deny_groups.extend(args),
            "loglevel" => {
                self.log_level = Level::parse(&first)
                    .ok_or_else(|| l.err(&format!("unsupported log level '{first}'")))?
            }
            "syslogfacility" => {
                let f = first.to_ascii_uppercase();
                if !FACILITIES.contains(&f.as_str()) {
                    return Err(l.err(&format!("unsupported log facility '{first}'")));
                }
                self.syslog_facility = f;
            }
            "maxsessions" => self.max_sessions = num()?,
            "maxauthtries" => self.max_auth_tries = num()?,
            "maxstartups" => {
                let p: Vec<Option<u32>> = first.split(':').map(|x| x.parse().ok()).collect();
                self.max_startups = match p.as_slice() {
                    [Some(s)] => (*s, 30, *s),
                    [Some(s), Some(r), Some(f)] if s <= f && *r <= 100 && *r > 0 => (*s, *r, *f),
                    _ => return Err(l.err("Invalid MaxStartups spec.")),
                };
            }
            "logingracetime" => self.login_grace_time = time()?,
            "clientaliveinterval" => self.client_alive_interval = time()?,
            "clientalivecountmax" => self.client_alive_count_max = num()?,
            "channeltimeout" => self.channel_timeout = super::timeouts::channel_timeout(l)?,
            "unusedconnectiontimeout" => {
                self.unused_connection_timeout = super::timeouts::unused_connection_timeout(l)?
            }
            "ciphers" => self.ciphers = algs(cipher_order::default_ciphers(), "cipher")?,
            "macs" => {
                self.macs =
                    algorithms::resolve(&first, cipher::DEFAULT_MACS, cipher::SUPPORTED_MACS, "Mac")
                        .map_err(|e| l.err(&e))?
            }
            "kexalgorithms" => {
                self.kex = algorithms::resolve(
                    &first,
                    super::SERVER_DEFAULT_KEX,
                    kex::ALL_KEX,
                    "KexAlgorithms",
                )
                .map_err(|e| l.err(&e))?
            }
            // ssh-rsa (SHA-1) and its certificate only when named, as sshd.
            "hostkeyalgorithms" | "pubkeyacceptedalgorithms" => {
                let what = if kw == "hostkeyalgorithms" {
                    "HostKeyAlgorithms"
                } else {
                    "PubkeyAcceptedAlgorithms"
                };
                let list = algorithms::resolve(
                    &first,
                    hostkey::DEFAULT_SIG_ALGS,
                    hostkey::ALL_SIG_ALGS,
                    what,
                )
                .map_err(|e| l.err(&e))?;
                if kw == "hostkeyalgorithms" {
                    self.host_key_algorithms = list;
                } else {
                    self.pubkey_algorithms = list;
                }
            }
            "pubkeyauthoptions" => {
                let mut o = super::PubkeyAuthOptions::default();
                for a in &l.args {
                    match a.as_str() {
                        "none" => {}
                        "touch-required" => o.touch_required = true,
                        "verify-required" => o.verify_required = true,
                        other => {
                            return Err(l.err(&format!(
                            "unsupported {} option {other} (none, touch-required, verify-required)",
                            l.name
                        )))
                        }
                    }
                }
                self.pubkey_auth_options = o;
            }
            "compression" => {
                self.compression = match first.as_str() {
                    "yes" | "delayed" => "yes".into(),
                    "no" => "no".into(),
                    // sluice's own: what each direction uses is the
                    // client's choice; sluiced's sender steers itself
                    // whenever compression is on (README, "Compression").
                    "auto" => "auto".into(),
                    _ => return Err(l.err(&format!("unsupported option \"{first}\"."))),
                }
            }
            "enablehwcompression" => self.enable_hw_compression = bool_arg()?,
            "hwcompressionlibrary" => {
                self.hw_compression_library = (first != "none").then(|| first.into())
            }
            "rekeylimit" => {
                self.rekey_limit =
                    parse_rekey_limit(&args).ok_or_else(|| l.err("RekeyLimit too small"))?
            }
            "cryptothreads" => {
                self.crypto_threads = CryptoThreads::parse(&first)
                    .ok_or_else(|| l.err(&format!("Bad CryptoThreads: {first}")))?
            }
            "forcecommand" => self.force_command = (first != "none").then(|| l.raw.clone()),
            // Tokens (%h %u %U %%) are expanded per user (chroot_for).
            "chrootdirectory" => {
                self.chroot_directory = (!first.eq_ignore_ascii_case("none")).then(|| first.clone())
            }
            "banner" => self.banner = (first != "none").then(|| first.into()),
            "tcprcvbuf" => self.tcp_rcvbuf = size()?,
            "tcpsndbuf" => self.tcp_sndbuf = size()?,
            "remotebufmax" => {
                use crate::net::sockbuf::RemoteMax;
                self.remote_buf_max = if first.eq_ignore_ascii_case("sysctl") {
                    RemoteMax::Sysctl
                } else {
                    RemoteMax::Bytes(size()?)
                }
            }
            "maxforwardchannels" => self.max_forward_channels = num()?,
            // 1 = never grant striping; 0 would mean no connection at all.
            "maxstreams" => {
                self.max_streams = num()?;
                if self.max_streams == 0 {
                    return Err(l.err("MaxStreams must be at least 1."));
                }
            }
            "channelwindow" | "channelwindowmax" => {
                let (name, slot) = if kw == "channelwindow" {
                    ("ChannelWindow", &mut self.channel_window)
                } else {
                    ("ChannelWindowMax", &mut self.channel_window_max)
                };
                *slot =
                    crate::config::window_size(Some(&first), name, *slot).map_err(|e| l.err(&e))?
            }
            "noneenabled" => self.none_enabled = bool_arg()?,
            "nonemacenabled" => self.none_mac_enabled = bool_arg()?,
            "usepam" => self.use_pam = bool_arg()?,
            "pamservicename" => self.pam_service_name = Some(first.clone()),
            "kbdinteractiveauthentication" => self.kbd_interactive_authentication = bool_arg()?,
            "permitemptypasswords" => self.permit_empty_passwords = bool_arg()?,
            "allowtcpforwarding" => self.allow_tcp_forwarding = forwarding(l, &first)?,
            "allowstreamlocalforwarding" => {
                self.allow_stream_local_forwarding = forwarding(l, &first)?
            }
            "allowagentforwarding" => self.allow_agent_forwarding = bool_arg()?,
            "disableforwarding" => self.disable_forwarding = bool_arg()?,
            "gatewayports" => {
                self.gateway_ports = match first.as_str() {
                    "yes" | "no" | "clientspecified" => first,
                    _ => return Err(l.err(&format!("unsupported option \"{first}\"."))),
                }
            }
            "permitopen" => self.permit_open = args,
            "permitlisten" => {
                // A bare port means any address, as sshd shows it (`*:8080`).
                self.permit_listen = args
                    .into_iter()
                    .map(|a| {
                        if a.parse::<u16>().is_ok() {
                            format!("*:{a}")
                        } else {
                            a
                        }
                    })
                    .collect()
            }
            "streamlocalbindunlink" => self.stream_local_bind_unlink = bool_arg()?,
            "permittty" => self.permit_tty = bool_arg()?,
            "x11forwarding" => self.x11_forwarding = bool_arg()?,
            "printmotd" => self.print_motd = bool_arg()?,
            "printlastlog" => self.print_last_log = bool_arg()?,
            "permituserenvironment" => self.permit_user_environment = bool_arg()?,
            "exposeauthinfo" => self.expose_auth_info = bool_arg()?,
            "setenv" => {
                if args.iter().any(|a| !a.contains('=')) {
                    return Err(l.err("Invalid environment."));
                }
                // A name given twice keeps its first value, as in sshd.
                let mut env: Vec<String> = Vec::new();
                for a in args {
                    let name = a.split('=').next().unwrap_or_default();
                    if !env.iter().any(|e| e.split('=').next() == Some(name)) {
                        env.push(a);
                    }
                }
                self.set_env = env;
            }
            "authorizedkeyscommand" => {
                self.authorized_keys_command = command(l, &first, command_line::KEYS_TOKENS)?
            }
            "authorizedprincipalscommand" => {
                self.authorized_principals_command =
                    command(l, &first, command_line::PRINCIPALS_TOKENS)?
            }
            "authorizedprincipalscommanduser" => {
                self.authorized_principals_command_user = (first != "none").then_some(first)
            }
            "addressfamily" => {
                self.address_family = match first.as_str() {
                    "any" | "inet" | "inet6" => first,
                    _ => return Err(l.err(&format!("unsupported option \"{first}\"."))),
                }
            }
            "requiredrsasize" => self.required_rsa_size = num()?,
            "streamlocalbindmask" => {
                self.stream_local_bind_mask = u32::from_str_radix(&first, 8)
                    .ok()
                    .filter(|m| *m <= 0o777 && first.starts_with(|c: char| c.is_ascii_digit()))
                    .ok_or_else(|| l.err(&format!("Invalid {}.", l.name)))?
            }
            "tcpkeepalive" => self.tcp_keep_alive = bool_arg()?,
            "revokedkeys" => self.revoked_keys = (first != "none").then(|| first.into()),
            "trustedusercakeys" => {
                self.trusted_user_ca_keys = (first != "none").then(|| first.into())
            }
            "authorizedprincipalsfile" => {
                self.authorized_principals_file = (first != "none").then_some(first)
            }
            "hostcertificate" => self.host_keys.certificates.push(first.into()),
            "hostkeyagent" => {
                self.host_keys.agent = (!first.eq_ignore_ascii_case("none")).then_some(first)
            }
            "securitykeyprovider" => self.host_keys.sk_provider = Some(first),
            "casignaturealgorithms" => {
                self.ca_signature_algorithms = algorithms::resolve(
                    &first,
                    crate::keys::cert::CA_SIGNATURE_ALGORITHMS,
                    crate::keys::cert::CA_SIGNATURE_ALGORITHMS_ALL,
                    "CASignatureAlgorithms",
                )
                .map_err(|e| l.err(&e))?
            }
            "authenticationmethods" => self.authentication_methods = authentication_methods(l)?,
            "authorizedkeyscommanduser" => {
                self.authorized_keys_command_user = (first != "none").then_some(first)
            }
            "persourcemaxstartups" => {
                self.per_source_max_startups = per_source::max_startups(l, &first)?
            }
            "persourcenetblocksize" => {
                self.per_source_net_block_size =
                    per_source::net_block_size(l, &first, self.per_source_net_block_size.1)?
            }
            "persourcepenalties" => self.per_source_penalties.apply(l)?,
            "persourcepenaltyexemptlist" => {
                // `none` is what -T prints for no list: it reads back.
                self.per_source_penalty_exempt = if first.eq_ignore_ascii_case("none") {
                    None
                } else {
                    Some(per_source::exempt_list(l, &first)?)
                }
            }
            other => {
                unsupported(l, other, &first)?;
                // Accepted, not acted on: kept for -T (yes/no as sshd spells them).
                let v = args
                    .iter()
                    .map(|a| match yes_no(a) {
                        Some(b) => if b { "yes" } else { "no" }.to_owned(),
                        None => a.clone(),
                    })
                    .collect::<Vec<_>>()
                    .join(" ");
                self.other.insert(other.to_owned(), v);
            }
        }
        Ok(())
    }
}
