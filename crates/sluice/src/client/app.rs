//! `sluice`'s main: arguments and ssh_config resolved into one client run
//! (identities in client/identities.rs, host key trust in
//! client/host_trust.rs).

use super::host_trust::host_key_check;
use super::identities::{identities, identity_agent};
use crate::cli::ssh_args::{self, ClientArgs, Invocation};
use crate::client::auth::AuthPrefs;
use crate::client::session::SessionPlan;
use crate::client::setup;
use crate::client::{self, ClientOptions};
use crate::config::ssh::{ClientConfig, Resolved};
use crate::config::{algorithms, cipher_order};
use crate::keys::pattern;
use crate::log;
use crate::log::Level;
use crate::net::crypto_pool::CryptoThreads;
use sluice_proto::crypto::{cipher, hostkey, kex};
use sluice_proto::Config;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Runs `sluice`; returns the exit code.
pub fn main(argv: &[String]) -> i32 {
    let inv = match ssh_args::parse(argv) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("{e}");
            return 255;
        }
    };
    match inv {
        Invocation::Version => {
            eprintln!("sluice_{}, aws-lc-rs", env!("CARGO_PKG_VERSION"));
            0
        }
        Invocation::Query(what) => query(&what),
        Invocation::DemoHelper(args) => crate::datagen::helper_main(&args),
        Invocation::Demo {
            size,
            cipher,
            verbose,
        } => crate::demo::run(&crate::demo::DemoOptions {
            size,
            cipher,
            verbose,
        }),
        Invocation::BenchCrypto(opts) => crate::bench_crypto::run(&opts),
        Invocation::Connect(args) => match connect(args) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("{e}");
                255
            }
        },
    }
}

fn query(what: &str) -> i32 {
    let list: Vec<&str> = match what.to_ascii_lowercase().as_str() {
        "cipher" | "ciphers" => cipher_order::default_ciphers().to_vec(),
        "cipher-auth" => cipher_order::default_ciphers()
            .iter()
            .copied()
            .filter(|c| cipher::cipher_info(c).is_some_and(|i| i.aead))
            .collect(),
        "mac" | "macs" => cipher::DEFAULT_MACS.to_vec(),
        "kex" | "kexalgorithms" => kex::DEFAULT_KEX.to_vec(),
        "key" | "key-plain" | "hostkeyalgorithms" | "pubkeyacceptedalgorithms" => {
            hostkey::DEFAULT_SIG_ALGS.to_vec()
        }
        "sig" => hostkey::DEFAULT_SIG_ALGS.to_vec(),
        "compression" => vec!["none", "zlib@openssh.com", "zlib"],
        _ => {
            eprintln!("Unsupported query \"{what}\"");
            return 255;
        }
    };
    for l in list {
        println!("{l}");
    }
    0
}

/// `~` and the file-name tokens (%d %u %h %r %p %C ...), as ssh expands
/// IdentityFile and IdentityAgent; a bad token is logged and the name kept.
pub(super) fn expand(s: &str, r: &Resolved) -> PathBuf {
    match r.tokens().path(s, crate::config::ssh::tokens::FILE) {
        Ok(p) => PathBuf::from(p),
        Err(e) => {
            log!(Info, "{s}: {e}");
            PathBuf::from(s)
        }
    }
}

/// ChannelWindow (the receive window a channel starts with, default 16M)
/// and ChannelWindowMax (the most a bulk channel's window grows to, default
/// 128M): sizes from 64K to 1G.
pub(crate) fn window_size(v: Option<&str>, name: &str, default: u32) -> Result<u32, String> {
    let Some(v) = v else {
        return Ok(default);
    };
    crate::config::parse_size(v)
        .filter(|n| (64 << 10..=1 << 30).contains(n))
        .map(|n| n as u32)
        .ok_or_else(|| format!("Bad {name} '{v}': use a size from 64K to 1G"))
}

fn proto_config(r: &Resolved) -> Result<Config, String> {
    let alg = |kw: &str, default: &[&str], what: &str| -> Result<Vec<String>, String> {
        match r.get(kw) {
            Some(spec) => algorithms::resolve(spec, default, default, what),
            None => Ok(default.iter().map(|s| (*s).to_owned()).collect()),
        }
    };
    let compression: Vec<String> = if r.flag("compression", false) {
        vec!["zlib@openssh.com".into(), "zlib".into(), "none".into()]
    } else {
        vec!["none".into(), "zlib@openssh.com".into(), "zlib".into()]
    };
    let (rekey_bytes, rekey_secs) = r
        .all("rekeylimit")
        .to_vec()
        .as_slice()
        .pipe(crate::config::parse_rekey_limit)
        .unwrap_or((0, 0));
    let mut pubkey = alg(
        "pubkeyacceptedalgorithms",
        hostkey::DEFAULT_SIG_ALGS,
        "PubkeyAcceptedAlgorithms",
    )?;
    if r.get("pubkeyacceptedalgorithms").is_none() {
        if let Some(v) = r.get("pubkeyacceptedkeytypes") {
            pubkey = algorithms::resolve(
                v,
                hostkey::DEFAULT_SIG_ALGS,
                hostkey::DEFAULT_SIG_ALGS,
                "PubkeyAcceptedAlgorithms",
            )?;
        }
    }
    Ok(Config {
        kex: alg("kexalgorithms", kex::DEFAULT_KEX, "KexAlgorithms")?,
        host_key_algs: alg(
            "hostkeyalgorithms",
            hostkey::DEFAULT_SIG_ALGS,
            "HostKeyAlgorithms",
        )?,
        ciphers: alg("ciphers", cipher_order::default_ciphers(), "cipher")?,
        macs: alg("macs", cipher::DEFAULT_MACS, "Mac")?,
        compression,
        rekey_bytes: if rekey_bytes == 0 {
            Config::default().rekey_bytes
        } else {
            rekey_bytes
        },
        rekey_time: (rekey_secs > 0).then(|| Duration::from_secs(rekey_secs)),
        window: window_size(
            r.get("channelwindow"),
            "ChannelWindow",
            Config::default().window,
        )?,
        window_max: window_size(
            r.get("channelwindowmax"),
            "ChannelWindowMax",
            Config::default().window_max,
        )?,
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
fn auth_prefs(r: &Resolved) -> Result<AuthPrefs, String> {
    let mut p = AuthPrefs::default();
    if let Some(list) = r.get("preferredauthentications") {
        p.preferred = list.split(',').map(|m| m.trim().to_owned()).collect();
    }
    if let Some(n) = r.get("numberofpasswordprompts") {
        p.password_prompts = n
            .parse()
            .map_err(|_| format!("Bad NumberOfPasswordPrompts '{n}': use a number"))?;
    }
    p.pubkey = r.flag("pubkeyauthentication", true);
    p.password = r.flag("passwordauthentication", true);
    p.kbdint = match r.get("kbdinteractiveauthentication") {
        Some(_) => r.flag("kbdinteractiveauthentication", true),
        None => r.flag("challengeresponseauthentication", true),
    };
    p.batch = r.flag("batchmode", false);
    Ok(p)
}

fn connect(args: ClientArgs) -> Result<i32, String> {
    let opts = setup::options(&args);
    let cfg = ClientConfig::load(&opts, args.config_file.as_deref().map(Path::new))?;
    let r = cfg.resolve(&args.host)?;
    let level = match args.verbose {
        0 if args.quiet => Level::Quiet,
        0 => r
            .get("loglevel")
            .and_then(Level::parse)
            .unwrap_or(Level::Info),
        1 => Level::Debug1,
        2 => Level::Debug2,
        _ => Level::Debug3,
    };
    crate::log::set_level(level);
    for w in &cfg.warnings {
        log!(Debug1, "{w}");
    }
    let user = r.user().to_owned();
    let host = r.hostname().to_owned();
    let port = r.port();
    let yes_no = |kw: &str, name: &str| -> Result<bool, String> {
        r.get(kw).map_or(Ok(false), |v| {
            crate::config::yes_no(v).ok_or_else(|| format!("Bad {name} '{v}': use yes or no"))
        })
    };
    let none_enabled = yes_no("noneenabled", "NoneEnabled")?;
    let none_switch = yes_no("noneswitch", "NoneSwitch")?;
    let none_mac = yes_no("nonemacenabled", "NoneMacEnabled")?;
    if args.print_config {
        let proto = proto_config(&r)?;
        let yn = |b: bool| if b { "yes" } else { "no" }.to_owned();
        let or = |kw: &str, d: &str| r.get(kw).unwrap_or(d).to_owned();
        let sluice = [
            ("cryptothreads", or("cryptothreads", "auto")),
            ("tcprcvbuf", or("tcprcvbuf", "auto")),
            ("tcpsndbuf", or("tcpsndbuf", "auto")),
            ("remotercvbuf", or("remotercvbuf", "0")),
            ("remotesndbuf", or("remotesndbuf", "0")),
            ("channelwindow", proto.window.to_string()),
            ("channelwindowmax", proto.window_max.to_string()),
            ("noneenabled", yn(none_enabled)),
            ("noneswitch", yn(none_switch)),
            ("nonemacenabled", yn(none_mac)),
            ("kexguess", yn(proto.kex_guess)),
        ];
        return setup::print_config(&args, &r, &proto, &sluice);
    }
    let proto = proto_config(&r)?;
    let size = |kw: &str, name: &str| -> Result<u64, String> {
        r.get(kw).map_or(Ok(0), |v| {
            crate::config::parse_size(v)
                .ok_or_else(|| format!("Bad {name} '{v}': use bytes with an optional K, M or G"))
        })
    };
    let tcp_rcvbuf = size("tcprcvbuf", "TcpRcvBuf")?;
    let tcp_sndbuf = size("tcpsndbuf", "TcpSndBuf")?;
    let remote_bufs = (
        size("remotercvbuf", "RemoteRcvBuf")?,
        size("remotesndbuf", "RemoteSndBuf")?,
    );
    let crypto_threads = match r.get("cryptothreads") {
        None => CryptoThreads::Auto,
        Some(v) => CryptoThreads::parse(v)
            .ok_or_else(|| format!("Bad CryptoThreads '{v}': use auto or a count of threads"))?,
    };
    let family = args.family.or(match r.get("addressfamily") {
        Some("inet") => Some(4),
        Some("inet6") => Some(6),
        _ => None,
    });
    let connect_timeout = setup::time(&r, "connecttimeout");
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
    // RemoteCommand (tokens expanded) when no command was given; both is an error.
    let remote = r
        .get("remotecommand")
        .filter(|c| !c.eq_ignore_ascii_case("none"))
        .map(|c| r.tokens().expand(c, crate::config::ssh::tokens::FILE))
        .transpose()?;
    let command = match (args.command.is_empty(), remote) {
        (false, Some(_)) => return Err("Cannot execute command-line and remote command.".into()),
        (false, None) => Some(args.command.join(" ").into_bytes()),
        (true, remote) => remote.map(String::into_bytes),
    };
    // HPN-SSH's NONE switch: both NoneEnabled and NoneSwitch, and never for
    // a shell or when a tty is asked for (-t, RequestTTY yes or force).
    let tty = args.tty > 0
        || r.get("requesttty")
            .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "yes" | "force"));
    let none_switch = match (none_enabled && none_switch, command.is_none() || tty) {
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
    };
    let (want_tty, warn) = crate::client::tty::decide(
        args.tty,
        r.get("requesttty"),
        command.is_some(),
        args.no_command,
        crate::client::tty::stdin_is_tty(),
    )?;
    if warn {
        log!(
            Info,
            "Pseudo-terminal will not be allocated because stdin is not a terminal."
        );
    }
    let escape = match r.get("escapechar") {
        Some(v) => crate::client::escape::parse_escape_char(v)?,
        None => Some(b'~'),
    };
    let tty_plan = want_tty.then_some(crate::client::tty::TtyPlan {
        escape,
        required: tty,
    });
    let agent = crate::client::agent_forward::AgentForward::from_config(
        r.get("forwardagent"),
        identity_agent(&r),
        |p| expand(p, &r),
    )?;
    let mut ids = identities(&args, &r);
    // PubkeyAcceptedAlgorithms limits the signature algorithms offered (an
    // RSA key signs with rsa-sha2-256 only when that alone is listed).
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
    let check = host_key_check(&r, host.clone(), port);
    let forwards = crate::client::forward_args::plan(&args, &r)?;
    let no_session = args.no_command
        || forwards.stdio.is_some()
        || r.get("sessiontype")
            .is_some_and(|v| v.eq_ignore_ascii_case("none"));
    let fork_after_auth = args.fork || r.flag("forkafterauthentication", false);
    if fork_after_auth && !no_session && command.is_none() {
        return Err("Cannot fork into background without a command to execute.".into());
    }
    if fork_after_auth || args.null_stdin {
        crate::client::forward_args::stdin_from_dev_null()?;
    }
    let plan = SessionPlan {
        command,
        subsystem: args.subsystem,
        env,
        stdio: !no_session || forwards.stdio.is_some(),
        none_switch,
        remote_bufs,
        tty: tty_plan,
        agent,
        no_session,
        fork_after_auth,
        forwards,
    };
    let auth = auth_prefs(&r)?;
    let opts = ClientOptions {
        auth,
        host,
        port,
        user,
        family,
        connect_timeout,
        proto,
        crypto_threads,
        tcp_rcvbuf,
        tcp_sndbuf,
        plan: Some(plan),
        proxy_command: setup::proxy_command(&r, &args)?,
        connection_attempts: setup::connection_attempts(&r),
        server_alive: setup::server_alive(&r),
    };
    Ok(client::run(opts, ids, check))
}
