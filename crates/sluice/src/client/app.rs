//! ssh_config resolved into one client run: a resolved Host's settings
//! plus what the command line asks for ([`SessionRequest`]) become
//! [`ClientOptions`] (identities in client/identities.rs, host key trust in
//! client/host_trust.rs), or `-G`'s text. The command line itself is
//! cli/'s (cli/ssh_main.rs).

use super::host_trust::{host_key_check, order_host_key_algs};
use super::identities::{identities, identity_agent};
use crate::client::auth::AuthPrefs;
use crate::client::request::SessionRequest;
use crate::client::session::SessionPlan;
use crate::client::setting_error::SettingError;
use crate::client::setup;
use crate::client::streams::Streams;
use crate::client::{ClientError, ClientOptions};
use crate::config::algorithms::AlgorithmError;
use crate::config::ssh::Resolved;
use crate::config::{algorithms, cipher_order};
use crate::keys::pattern;
use crate::log;
use crate::net::crypto_pool::CryptoThreads;
use crate::net::hwzlib::{self, HwSettings};
use sluice_proto::crypto::{cipher, hostkey, kex};
use sluice_proto::transport::compress;
use sluice_proto::Config;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// The key types sluice reads, in ssh's `-Q key-plain` order.
const KEY_TYPES: &[&str] = &[
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
    "ssh-rsa",
];

/// `-Q what`: prints the algorithm names the client offers; returns the
/// exit code.
pub fn query(what: &str) -> i32 {
    let compression = compress::offered_names(&compress::default_engines(), false);
    let list: Vec<&str> = match what.to_ascii_lowercase().as_str() {
        "cipher" | "ciphers" => cipher_order::default_ciphers().to_vec(),
        "cipher-auth" => cipher_order::default_ciphers()
            .iter()
            .copied()
            .filter(|c| cipher::cipher_info(c).is_some_and(|i| i.aead))
            .collect(),
        // Every MAC and key exchange implemented, as ssh -Q lists them;
        // only the defaults are offered unless MACs / KexAlgorithms name others.
        "mac" | "macs" => cipher::SUPPORTED_MACS.to_vec(),
        "kex" | "kexalgorithms" => kex::ALL_KEX.to_vec(),
        "key" => KEY_TYPES
            .iter()
            .flat_map(|t| {
                let cert = hostkey::cert::CERT_KEY_TYPES
                    .iter()
                    .copied()
                    .find(|c| hostkey::cert::plain_key_type(c) == Some(t));
                std::iter::once(*t).chain(cert)
            })
            .collect(),
        "hostkeyalgorithms" | "pubkeyacceptedalgorithms" => hostkey::ALL_SIG_ALGS.to_vec(),
        "sig" | "casignaturealgorithms" => hostkey::PLAIN_SIG_ALGS.to_vec(),
        // Key types, not signature algorithms, as ssh -Q key-plain prints.
        "key-plain" => KEY_TYPES.to_vec(),
        "key-cert" => KEY_TYPES
            .iter()
            .filter_map(|t| {
                hostkey::cert::CERT_KEY_TYPES
                    .iter()
                    .copied()
                    .find(|c| hostkey::cert::plain_key_type(c) == Some(t))
            })
            .collect(),
        "compression" => compression.iter().map(String::as_str).collect(),
        _ => {
            crate::errln!("Unsupported query \"{what}\"");
            return 255;
        }
    };
    for l in list {
        crate::outln!("{l}");
    }
    0
}

fn proto_config(r: &Resolved) -> Result<Config, ClientError> {
    let alg_from = |kw: &str, default: &[&str], all: &[&str], what: &str| match r.get(kw) {
        Some(spec) => algorithms::resolve(spec, default, all, what),
        None => Ok(default.iter().map(|s| (*s).to_owned()).collect()),
    };
    let alg = |kw: &str, default: &[&str], what: &str| -> Result<Vec<String>, AlgorithmError> {
        match r.get(kw) {
            Some(spec) => algorithms::resolve(spec, default, default, what),
            None => Ok(default.iter().map(|s| (*s).to_owned()).collect()),
        }
    };
    let (rekey_bytes, rekey_secs) = r
        .all("rekeylimit")
        .to_vec()
        .as_slice()
        .pipe(crate::config::parse_rekey_limit)
        .unwrap_or((0, 0));
    // ssh-rsa (SHA-1) and its certificate only when named, as ssh.
    let mut pubkey = alg_from(
        "pubkeyacceptedalgorithms",
        hostkey::DEFAULT_SIG_ALGS,
        hostkey::ALL_SIG_ALGS,
        "PubkeyAcceptedAlgorithms",
    )?;
    if r.get("pubkeyacceptedalgorithms").is_none() {
        if let Some(v) = r.get("pubkeyacceptedkeytypes") {
            pubkey = algorithms::resolve(
                v,
                hostkey::DEFAULT_SIG_ALGS,
                hostkey::ALL_SIG_ALGS,
                "PubkeyAcceptedAlgorithms",
            )?;
        }
    }
    let compression = r.get("compression").map_or_else(
        || "auto".to_owned(),
        |v| crate::config::ssh::values::show("compression", v),
    );
    let window_max = crate::config::window_size(
        r.get("channelwindowmax"),
        "ChannelWindowMax",
        Config::default().window_max,
    )?;
    Ok(Config {
        // The SHA-1 methods and group 1 only when named, as ssh.
        kex: alg_from(
            "kexalgorithms",
            kex::DEFAULT_KEX,
            kex::ALL_KEX,
            "KexAlgorithms",
        )?,
        host_key_algs: alg_from(
            "hostkeyalgorithms",
            hostkey::DEFAULT_SIG_ALGS,
            hostkey::ALL_SIG_ALGS,
            "HostKeyAlgorithms",
        )?,
        ciphers: alg("ciphers", cipher_order::default_ciphers(), "cipher")?,
        // Any implemented MAC may be named; the default list is shorter.
        macs: match r.get("macs") {
            Some(spec) => {
                algorithms::resolve(spec, cipher::DEFAULT_MACS, cipher::SUPPORTED_MACS, "Mac")?
            }
            None => alg("macs", cipher::DEFAULT_MACS, "Mac")?,
        },
        // `Compression yes`: every engine before `none`, as ssh offers
        // them; `auto` (the default): see `compress::auto_names`, never
        // before authentication.
        compression_engines: if compression == "auto" {
            compress::after_auth_only(&compression_engines(r)?)
        } else {
            compression_engines(r)?
        },
        prefer_compression: compression == "yes",
        compression_auto: compression == "auto",
        rekey_bytes: if rekey_bytes == 0 {
            Config::default().rekey_bytes
        } else {
            rekey_bytes
        },
        rekey_time: (rekey_secs > 0).then(|| Duration::from_secs(rekey_secs)),
        window: crate::config::window_size(
            r.get("channelwindow"),
            "ChannelWindow",
            Config::default().window,
        )?,
        window_max,
        windows_max: sluice_proto::config::windows_budget(window_max),
        stock_openssh_window_max: crate::config::stock_openssh_window_max(),
        pubkey_algs: pubkey,
        kex_guess: r.flag("kexguess", true),
        ..Config::default()
    })
}

trait Pipe: Sized {
    fn pipe<T>(self, f: impl FnOnce(Self) -> T) -> T {
        f(self)
    }
}
impl<T> Pipe for T {}

/// PreferredAuthentications, BatchMode, NumberOfPasswordPrompts and the
/// per-method switches (KbdInteractiveAuthentication has the older name
/// ChallengeResponseAuthentication).
fn auth_prefs(r: &Resolved) -> Result<AuthPrefs, ClientError> {
    let mut p = AuthPrefs::default();
    if let Some(list) = r.get("preferredauthentications") {
        p.preferred = list.split(',').map(|m| m.trim().to_owned()).collect();
    }
    if let Some(n) = r.get("numberofpasswordprompts") {
        p.password_prompts = n
            .parse()
            .map_err(|_| SettingError::bad("NumberOfPasswordPrompts", n, "a number"))?;
    }
    p.pubkey = r.flag("pubkeyauthentication", true);
    p.password = r.flag("passwordauthentication", true);
    p.kbdint = match r.get("kbdinteractiveauthentication") {
        Some(_) => r.flag("kbdinteractiveauthentication", true),
        None => r.flag("challengeresponseauthentication", true),
    };
    p.batch = r.flag("batchmode", false);
    p.kbdint_devices = r
        .get("kbdinteractivedevices")
        .unwrap_or_default()
        .to_owned();
    Ok(p)
}

/// The HPN-SSH NONE switches, checked before anything else (as in `-G`).
fn none_flags(r: &Resolved) -> Result<(bool, bool, bool), ClientError> {
    let yes_no = |kw: &str, name: &'static str| -> Result<bool, SettingError> {
        r.get(kw).map_or(Ok(false), |v| {
            crate::config::yes_no(v).ok_or_else(|| SettingError::bad(name, v, "yes or no"))
        })
    };
    Ok((
        yes_no("noneenabled", "NoneEnabled")?,
        yes_no("noneswitch", "NoneSwitch")?,
        yes_no("nonemacenabled", "NoneMacEnabled")?,
    ))
}

/// The engines sluice implements, or those CompressionAlgorithms (sluice's
/// own keyword) lists, in its order: a way to pick one for a run or a host.
fn compression_engines(
    r: &Resolved,
) -> Result<Vec<std::sync::Arc<dyn compress::CompressionEngine>>, ClientError> {
    let all = compress::default_engines();
    let Some(list) = r.get("compressionalgorithms") else {
        return Ok(all);
    };
    list.split(',')
        .map(|name| {
            compress::find(&all, name).ok_or_else(|| {
                ClientError::Config(SettingError::UnknownCompression {
                    list: list.to_owned(),
                    name: name.to_owned(),
                    known: all.iter().map(|e| e.name().to_owned()).collect(),
                })
            })
        })
        .collect()
}

/// EnableHwCompression and HwCompressionLibrary (`~` and tokens expanded).
fn hw_settings(r: &Resolved) -> HwSettings {
    HwSettings {
        enabled: r.flag("enablehwcompression", false),
        library: r
            .get("hwcompressionlibrary")
            .filter(|v| !v.eq_ignore_ascii_case("none"))
            .map(|v| r.file_path(v).display().to_string()),
    }
}

/// `-G`: the configuration as text, algorithm lists the ones sluice offers.
pub fn print_config(r: &Resolved, req: &SessionRequest) -> Result<String, ClientError> {
    let (none_enabled, none_switch, none_mac) = none_flags(r)?;
    let proto = proto_config(r)?;
    let hw = hw_settings(r);
    let yn = |b: bool| if b { "yes" } else { "no" }.to_owned();
    let or = |kw: &str, d: &str| r.get(kw).unwrap_or(d).to_owned();
    let sluice = [
        ("cryptothreads", or("cryptothreads", "auto")),
        (
            "compressionalgorithms",
            or(
                "compressionalgorithms",
                "zstd@sluice.dev,zlib@openssh.com,zlib",
            ),
        ),
        ("tcprcvbuf", or("tcprcvbuf", "auto")),
        ("tcpsndbuf", or("tcpsndbuf", "auto")),
        ("remotercvbuf", or("remotercvbuf", "0")),
        ("remotesndbuf", or("remotesndbuf", "0")),
        ("streams", streams(r)?.to_string()),
        ("keeppartial", yn(r.flag("keeppartial", true))),
        ("metrics", yn(r.flag("metrics", false))),
        (
            "metricsinterval",
            metrics_plan(r)?.interval.as_secs().to_string(),
        ),
        (
            "metricspath",
            metrics_plan(r)?.path.unwrap_or_else(|| "none".to_owned()),
        ),
        ("channelwindow", proto.window.to_string()),
        ("channelwindowmax", proto.window_max.to_string()),
        ("noneenabled", yn(none_enabled)),
        ("noneswitch", yn(none_switch)),
        ("nonemacenabled", yn(none_mac)),
        ("kexguess", yn(proto.kex_guess)),
        ("enablehwcompression", yn(hw.enabled)),
        (
            "hwcompressionlibrary",
            hw.library.unwrap_or_else(|| "none".to_owned()),
        ),
    ];
    Ok(setup::print_config(&req.identities, r, &proto, &sluice)?)
}

/// The options for one run to `r`'s host; Err is ssh's message for the
/// first bad setting.
pub fn resolve(r: &Resolved, req: &SessionRequest) -> Result<ClientOptions, ClientError> {
    let args = req;
    let (none_enabled, none_switch, none_mac) = none_flags(r)?;
    let user = r.user().to_owned();
    let host = r.hostname().to_owned();
    let port = r.port();
    let mut proto = proto_config(r)?;
    if proto.prefer_compression || proto.compression_auto {
        proto.compression_engines = hwzlib::engines(proto.compression_engines, &hw_settings(r));
    }
    let tcp_rcvbuf = size(r, "tcprcvbuf", "TcpRcvBuf")?;
    let tcp_sndbuf = size(r, "tcpsndbuf", "TcpSndBuf")?;
    let remote_bufs = (
        size(r, "remotercvbuf", "RemoteRcvBuf")?,
        size(r, "remotesndbuf", "RemoteSndBuf")?,
    );
    let compression_level = compression_level(r, &proto)?;
    let crypto_threads = crypto_threads(r)?;
    let family = args.family.or(match r.get("addressfamily") {
        Some("inet") => Some(4),
        Some("inet6") => Some(6),
        _ => None,
    });
    let connect_timeout = setup::time(r, "connecttimeout");
    let env = session_env(r);
    let command = command(r, args)?;
    let tty = args.tty > 0
        || r.get("requesttty")
            .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "yes" | "force"));
    let none_switch = none_switch_plan(
        none_enabled && none_switch,
        none_mac,
        command.is_none() || tty,
    );
    let tty_plan = tty_plan(r, args, command.is_some(), tty)?;
    compression_auto_off(&mut proto, none_switch.is_some(), tty_plan.is_some());
    let agent = agent_forward(r)?;
    let ids = offered_identities(args, r, &proto);
    let trusted = Arc::new(AtomicBool::new(false));
    let check = host_key_check(r, host.clone(), port, trusted.clone());
    let mut proto = proto;
    if r.get("hostkeyalgorithms").is_none() {
        proto.host_key_algs = order_host_key_algs(r, &host, port, &proto.host_key_algs);
    }
    let update_host_keys = host_key_update_settings(r, &host, port, &proto.host_key_algs, trusted);
    let forwards = crate::client::forward_args::plan(args, r)?;
    let no_session = args.no_command
        || forwards.stdio.is_some()
        || r.get("sessiontype")
            .is_some_and(|v| v.eq_ignore_ascii_case("none"));
    let fork_after_auth = args.fork || r.flag("forkafterauthentication", false);
    if fork_after_auth && !no_session && command.is_none() {
        return Err(ClientError::Config(SettingError::Conflict(
            "Cannot fork into background without a command to execute.",
        )));
    }
    let tos = ip_tos(r, tty_plan.is_some())?;
    let plan = SessionPlan {
        command,
        // SessionType subsystem is -s; none is -N (no_session above).
        subsystem: args.subsystem
            || r.get("sessiontype")
                .is_some_and(|v| v.eq_ignore_ascii_case("subsystem")),
        env,
        stdio: !no_session || forwards.stdio.is_some(),
        none_switch,
        remote_bufs,
        tty: tty_plan,
        agent,
        no_session,
        fork_after_auth,
        forwards,
        channel_end: None,
        local_command: super::local_command::configured(r)?,
    };
    let auth = auth_prefs(r)?;
    let opts = ClientOptions {
        auth,
        host,
        port,
        user,
        family,
        connect_timeout,
        bind: (
            r.get("bindaddress").map(str::to_owned),
            r.get("bindinterface").map(str::to_owned),
        ),
        proto,
        crypto_threads,
        compression_level,
        tcp_rcvbuf,
        tcp_sndbuf,
        keepalive: r.flag("tcpkeepalive", true),
        tos,
        plan,
        proxy_command: setup::proxy_command(r, args.config_file.as_deref(), args.verbose)?,
        connection_attempts: setup::connection_attempts(r),
        server_alive: setup::server_alive(r),
        control_master: control_master(r)?,
        control_ride: control_ride(r)?,
        control_persist: control_persist(r)?,
        streams: streams(r)?,
        keep_partial: r.flag("keeppartial", true),
        metrics: metrics_plan(r)?,
        identities: ids,
        host_key_check: check,
        // StdinNull is -n.
        null_stdin: args.null_stdin || r.flag("stdinnull", false),
        update_host_keys,
    };
    Ok(opts)
}

/// Compression auto is not for every session: the NONE switch is for fast
/// trusted links, where compression (even level 0's copy) costs more than
/// it saves; compressed keystrokes leak through their lengths, so auto
/// never compresses a terminal session (-C still does, as ssh's).
fn compression_auto_off(proto: &mut Config, none_switch: bool, tty: bool) {
    if none_switch && proto.compression_auto {
        log!(Debug1, "Compression auto: off with the NONE cipher switch");
        proto.compression_auto = false;
    }
    if tty && proto.compression_auto {
        log!(Debug1, "Compression auto: off for a session with a pty");
        proto.compression_auto = false;
    }
}

/// ForwardAgent: no, yes (IdentityAgent's socket) or a socket path.
fn agent_forward(r: &Resolved) -> Result<crate::client::agent_forward::AgentForward, ClientError> {
    crate::client::agent_forward::AgentForward::from_config(
        r.get("forwardagent"),
        identity_agent(r),
        |p| {
            r.tokens()
                .path(p, crate::config::ssh::tokens::FILE)
                .map(PathBuf::from)
                .map_err(|e| SettingError::Path {
                    keyword: "ForwardAgent",
                    path: p.to_owned(),
                    reason: e.to_string(),
                })
        },
    )
    .map_err(ClientError::Config)
}

fn crypto_threads(r: &Resolved) -> Result<CryptoThreads, ClientError> {
    match r.get("cryptothreads") {
        None => Ok(CryptoThreads::Auto),
        Some(v) => CryptoThreads::parse(v)
            .ok_or_else(|| SettingError::bad("CryptoThreads", v, "auto or a count of threads"))
            .map_err(ClientError::Config),
    }
}

/// A terminal for the session (-t/-T, RequestTTY, stdin a terminal) with
/// its EscapeChar, or None; `required`: -t or RequestTTY yes/force.
fn tty_plan(
    r: &Resolved,
    args: &SessionRequest,
    has_command: bool,
    required: bool,
) -> Result<Option<crate::client::tty::TtyPlan>, ClientError> {
    let (want_tty, warn) = crate::client::tty::decide(
        args.tty,
        r.get("requesttty"),
        has_command,
        args.no_command
            || r.get("sessiontype")
                .is_some_and(|v| v.eq_ignore_ascii_case("none")),
        crate::client::tty::stdin_is_tty(),
    )?;
    if warn {
        log!(
            Info,
            "Pseudo-terminal will not be allocated because stdin is not a terminal."
        );
    }
    // A bad EscapeChar is refused with a terminal or without.
    let escape = match r.get("escapechar") {
        Some(v) => crate::client::escape::parse_escape_char(v)?,
        None => Some(b'~'),
    };
    Ok(want_tty.then_some(crate::client::tty::TtyPlan { escape, required }))
}

/// TcpRcvBuf and its kind: bytes with an optional K, M or G (0: not set).
fn size(r: &Resolved, kw: &str, name: &'static str) -> Result<u64, ClientError> {
    r.get(kw).map_or(Ok(0), |v| {
        crate::config::parse_size(v)
            .ok_or_else(|| SettingError::bad(name, v, "bytes with an optional K, M or G"))
            .map_err(ClientError::Config)
    })
}

/// CompressionLevel: ssh's keyword of SSH-1 days (ignored by ssh now), here
/// a fixed level 0-9 for what sluice sends instead of the steered one;
/// `auto` (the default) steers. A fixed level is set on the engines.
fn compression_level(r: &Resolved, proto: &Config) -> Result<Option<u8>, ClientError> {
    let level = match r.get("compressionlevel") {
        None => None,
        Some(v) if v.eq_ignore_ascii_case("auto") => None,
        Some(v) => Some(
            v.parse::<u8>()
                .ok()
                .filter(|l| *l <= 9)
                .ok_or_else(|| SettingError::bad("CompressionLevel", v, "auto or 0-9"))?,
        ),
    };
    if let Some(l) = level {
        if let Some(engine) = proto.compression_engines.iter().find_map(|e| e.level()) {
            engine.set(l);
        }
    }
    Ok(level)
}

/// SendEnv (the matching variables of our environment), then SetEnv.
fn session_env(r: &Resolved) -> Vec<(String, Vec<u8>)> {
    let mut env: Vec<(String, Vec<u8>)> = Vec::new();
    let send = r.all("sendenv").join(",");
    if !send.is_empty() {
        for (k, v) in std::env::vars_os() {
            let k = k.to_string_lossy().into_owned();
            if pattern::match_pattern_list(&k, &send) == Some(true) {
                env.push((
                    k,
                    std::os::unix::ffi::OsStrExt::as_bytes(v.as_os_str()).to_vec(),
                ));
            }
        }
    }
    for kv in r.all("setenv") {
        if let Some((k, v)) = kv.split_once('=') {
            env.push((k.to_owned(), v.as_bytes().to_vec()));
        }
    }
    env
}

/// The command line's command, or RemoteCommand (tokens expanded) when none
/// was given; both is an error, as ssh's.
fn command(r: &Resolved, args: &SessionRequest) -> Result<Option<Vec<u8>>, ClientError> {
    let remote = r
        .get("remotecommand")
        .filter(|c| !c.eq_ignore_ascii_case("none"))
        .map(|c| r.tokens().expand(c, crate::config::ssh::tokens::FILE))
        .transpose()?;
    match (args.command.is_empty(), remote) {
        (false, Some(_)) => Err(ClientError::Config(SettingError::Conflict(
            "Cannot execute command-line and remote command.",
        ))),
        (false, None) => Ok(Some(args.command.join(" ").into_bytes())),
        (true, remote) => Ok(remote.map(String::into_bytes)),
    }
}

/// HPN-SSH's NONE switch (Some(with the NONE MAC too)): both NoneEnabled and
/// NoneSwitch, and never for a shell or when a tty is asked for (-t,
/// RequestTTY yes or force).
fn none_switch_plan(wanted: bool, none_mac: bool, shell_or_tty: bool) -> Option<bool> {
    match (wanted, shell_or_tty) {
        (false, _) => None,
        (true, false) => Some(none_mac),
        (true, true) => {
            log!(
                Debug1,
                "Cannot switch to NONE cipher: a shell or a tty was asked for"
            );
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "NONE cipher switch disabled when a TTY is allocated"
            );
            None
        }
    }
}

/// The identities to offer: PubkeyAcceptedAlgorithms limits the signature
/// algorithms each may use (an RSA key signs with rsa-sha2-256 only when
/// that alone is listed); one left with none is skipped.
fn offered_identities(
    args: &SessionRequest,
    r: &Resolved,
    proto: &Config,
) -> Vec<crate::client::auth::Identity> {
    let mut ids = identities(&args.identities, r);
    for id in &mut ids {
        id.sig_algs
            .retain(|a| proto.pubkey_algs.iter().any(|p| p == a));
        if id.sig_algs.is_empty() {
            log!(
                Debug1,
                "Skipping {}: not in PubkeyAcceptedAlgorithms",
                id.label
            );
        }
    }
    ids.retain(|id| !id.sig_algs.is_empty());
    ids
}

/// IPQoS: the interactive mark for a terminal session, else the bulk one.
fn ip_tos(r: &Resolved, interactive: bool) -> Result<Option<u8>, ClientError> {
    let qos = match r.get("ipqos") {
        Some(_) => crate::config::ssh::ipqos::parse(&r.all("ipqos").join(" "))?,
        None => crate::config::ssh::ipqos::DEFAULT,
    };
    Ok(if interactive {
        qos.interactive
    } else {
        qos.bulk
    })
}

/// Metrics (the summary at the end), MetricsInterval (default 1 s; HPN-SSH
/// samples every 5) and MetricsPath, or its other name MetricsFile (the
/// JSON lines; `~` and tokens expanded; `none`: none).
fn metrics_plan(r: &Resolved) -> Result<crate::client::metrics::MetricsPlan, ClientError> {
    let interval = match r.get("metricsinterval") {
        None => Duration::from_secs(1),
        Some(v) => crate::config::parse_time(v)
            .filter(|t| *t > 0)
            .map(Duration::from_secs)
            .ok_or_else(|| {
                SettingError::bad("MetricsInterval", v, "a time of at least 1 second")
            })?,
    };
    let kw = if r.get("metricspath").is_some() {
        "metricspath"
    } else {
        "metricsfile"
    };
    let path = r.path(kw)?.filter(|p| !p.eq_ignore_ascii_case("none"));
    Ok(crate::client::metrics::MetricsPlan {
        summary: r.flag("metrics", false),
        path,
        interval,
    })
}

/// Streams: how many connections sluice-sftp and sluice-scp may copy a
/// large file over (client/sftp/parallel/); `auto` by default.
fn streams(r: &Resolved) -> Result<Streams, ClientError> {
    match r.get("streams") {
        None => Ok(Streams::Auto),
        Some(v) => Streams::parse(v).ok_or_else(|| {
            ClientError::Config(SettingError::bad(
                "Streams",
                v,
                format!(
                    "auto or a count of connections (1-{})",
                    crate::client::streams::STREAMS_MAX
                ),
            ))
        }),
    }
}

/// UpdateHostKeys: yes or ask, or by default yes when UserKnownHostsFile
/// is not overridden and VerifyHostKeyDNS is off (ssh_config(5)).
fn host_key_update_settings(
    r: &Resolved,
    host: &str,
    port: u16,
    host_key_algs: &[String],
    trusted: Arc<AtomicBool>,
) -> Option<crate::client::update_host_keys::Settings> {
    use crate::client::update_host_keys::{Mode, Settings};
    let mode = match r
        .get("updatehostkeys")
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("yes" | "true") => Mode::Yes,
        Some("ask") => Mode::Ask,
        Some(_) => return None,
        None if crate::config::ssh::dump::update_host_keys_default(r) => Mode::Yes,
        None => return None,
    };
    // HostKeyAlias: the name the keys are stored under, as for the check.
    let (host, port) = match r.get("hostkeyalias") {
        Some(a) => (a.to_owned(), 22),
        None => (host.to_owned(), port),
    };
    Some(Settings {
        mode,
        files: setup::user_known_hosts(r),
        host,
        port,
        hash: r.flag("hashknownhosts", false),
        host_key_algs: host_key_algs.to_vec(),
        trusted,
    })
}

/// The ControlPath a master may already listen on, for a passenger:
/// ControlMaster no (or unset) or auto/autoask, as ssh tries it.
fn control_ride(r: &Resolved) -> Result<Option<String>, ClientError> {
    let ride = matches!(
        r.get("controlmaster")
            .map(str::to_ascii_lowercase)
            .as_deref(),
        None | Some("no" | "false" | "auto" | "autoask")
    );
    if !ride {
        return Ok(None);
    }
    Ok(r.path("controlpath")?
        .filter(|p| !p.eq_ignore_ascii_case("none")))
}

/// ControlPersist: no; yes or 0 (stay until `-O exit`); a time.
fn control_persist(r: &Resolved) -> Result<Option<Option<Duration>>, ClientError> {
    let Some(v) = r.get("controlpersist") else {
        return Ok(None);
    };
    match (crate::config::yes_no(v), crate::config::parse_time(v)) {
        (Some(false), _) => Ok(None),
        (Some(true), _) | (None, Some(0)) => Ok(Some(None)),
        (None, Some(t)) => Ok(Some(Some(Duration::from_secs(t)))),
        _ => Err(ClientError::Config(SettingError::BadControlPersist(
            v.to_owned(),
        ))),
    }
}

/// ControlMaster (yes, ask, auto, autoask) and a ControlPath other than
/// none: the path, and whether it is auto (an existing master is fine).
fn control_master(r: &Resolved) -> Result<Option<(String, bool)>, ClientError> {
    let auto = match r
        .get("controlmaster")
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("yes" | "true" | "ask") => false,
        Some("auto" | "autoask") => true,
        _ => return Ok(None),
    };
    let path = r
        .path("controlpath")?
        .filter(|p| !p.eq_ignore_ascii_case("none"));
    Ok(path.map(|p| (p, auto)))
}
