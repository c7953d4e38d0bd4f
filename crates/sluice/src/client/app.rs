//! `sluice`'s main: arguments and ssh_config resolved into one client run,
//! identities offered in OpenSSH's order, host keys checked against
//! known_hosts as `StrictHostKeyChecking` says.

use crate::cli::ssh_args::{self, ClientArgs, Invocation};
use crate::client::auth::AuthPrefs;
use crate::client::session::{HostKeyCheck, Identity, SessionPlan};
use crate::client::setup;
use crate::client::{self, ClientOptions};
use crate::config::algorithms;
use crate::config::ssh::{ClientConfig, Resolved};
use crate::keys::known_hosts::{self, HostKeyStatus};
use crate::keys::{identity, pattern};
use crate::log;
use crate::log::Level;
use crate::net::crypto_pool::CryptoThreads;
use sluice_proto::crypto::{cipher, hostkey, kex};
use sluice_proto::Config;
use std::path::{Path, PathBuf};
use std::sync::Arc;
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
        "cipher" | "ciphers" => cipher::DEFAULT_CIPHERS.to_vec(),
        "cipher-auth" => cipher::DEFAULT_CIPHERS
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
fn expand(s: &str, r: &Resolved) -> PathBuf {
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
        ciphers: alg("ciphers", cipher::DEFAULT_CIPHERS, "cipher")?,
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
        ..Config::default()
    })
}

trait Pipe: Sized {
    fn pipe<T>(self, f: impl FnOnce(Self) -> T) -> T {
        f(self)
    }
}
impl<T> Pipe for T {}

fn identities(args: &ClientArgs, r: &Resolved) -> Vec<Identity> {
    let batch = r.flag("batchmode", false);
    let mut files: Vec<String> = args.identities.clone();
    files.extend(r.all("identityfile").iter().cloned());
    if files.is_empty() {
        files = [
            "id_rsa",
            "id_ecdsa",
            "id_ecdsa_sk",
            "id_ed25519",
            "id_ed25519_sk",
            "id_xmss",
            "id_dsa",
        ]
        .iter()
        .map(|f| format!("~/.ssh/{f}"))
        .collect();
    }
    let mut out = Vec::new();
    // Agent keys first, as ssh offers them; with IdentitiesOnly only those
    // that match an identity file.
    let only = r.flag("identitiesonly", false);
    let file_blobs: Vec<Vec<u8>> = files
        .iter()
        .filter_map(|f| identity::public_blob(&expand(f, r)).ok())
        .collect();
    let agent_path = identity_agent(r);
    let use_agent = agent_path.as_deref() != Some(Path::new("none"))
        && (agent_path.is_some() || std::env::var_os("SSH_AUTH_SOCK").is_some());
    if use_agent {
        match crate::keys::agent::Agent::connect(agent_path.as_deref()) {
            Ok(agent) => {
                let agent = Arc::new(agent);
                for (blob, comment) in agent.identities().unwrap_or_default() {
                    let sig_algs = hostkey::sig_algs_for_key_type(
                        hostkey::blob_key_type(&blob).unwrap_or_default(),
                    )
                    .to_vec();
                    if sig_algs.is_empty() || (only && !file_blobs.contains(&blob)) {
                        continue;
                    }
                    let key: Arc<dyn hostkey::Signer> = Arc::new(crate::keys::agent::AgentKey {
                        agent: agent.clone(),
                        blob: blob.clone(),
                    });
                    out.push(Identity {
                        label: format!("{comment} (agent)"),
                        public_blob: blob,
                        sig_algs,
                        load: Box::new(move || Ok(key.clone())),
                    });
                }
            }
            Err(e) => log!(Debug1, "{e}"),
        }
    }
    let mut seen = Vec::new();
    for f in files {
        let path = expand(&f, r);
        if seen.contains(&path) {
            continue;
        }
        seen.push(path.clone());
        match identity::public_blob(&path) {
            Ok(blob) if out.iter().any(|i: &Identity| i.public_blob == blob) => {}
            Ok(blob) => {
                let key_type = hostkey::blob_key_type(&blob).unwrap_or_default().to_owned();
                let sig_algs = hostkey::sig_algs_for_key_type(&key_type).to_vec();
                if sig_algs.is_empty() {
                    log!(
                        Debug1,
                        "Skipping {} key {}: not supported",
                        key_type,
                        path.display()
                    );
                    continue;
                }
                log!(Debug1, "identity file {} type {}", path.display(), key_type);
                let p = path.clone();
                let load = Box::new(move || {
                    let mut ask = |p: &Path| {
                        if batch {
                            None
                        } else {
                            identity::prompt_passphrase(p)
                        }
                    };
                    identity::load(&p, &mut ask).map(|k| Arc::new(k) as Arc<dyn hostkey::Signer>)
                });
                out.push(Identity {
                    label: format!("{} {}", path.display(), key_type),
                    public_blob: blob,
                    sig_algs,
                    load,
                });
            }
            Err(_) => log!(Debug1, "identity file {} not accessible", path.display()),
        }
    }
    out
}

/// IdentityAgent: `none`, a socket path (`~` and `%` tokens), or
/// `SSH_AUTH_SOCK` / `$VAR` naming an environment variable; None means
/// SSH_AUTH_SOCK.
fn identity_agent(r: &Resolved) -> Option<PathBuf> {
    let v = r.get("identityagent")?;
    let var = match v.strip_prefix('$') {
        Some(var) => var.trim_start_matches('{').trim_end_matches('}'),
        None if v == "SSH_AUTH_SOCK" => v,
        None => return Some(expand(v, r)),
    };
    // An unset variable: no agent (ssh skips it too).
    Some(std::env::var_os(var).map_or_else(|| PathBuf::from("none"), PathBuf::from))
}

fn host_key_check(r: &Resolved, host: String, port: u16) -> HostKeyCheck {
    let strict = r
        .get("stricthostkeychecking")
        .unwrap_or("ask")
        .to_ascii_lowercase();
    let batch = r.flag("batchmode", false);
    let hash = r.flag("hashknownhosts", false);
    let user_files = setup::user_known_hosts(r);
    // HostKeyAlias: the name looked up and stored instead of the host's.
    let (host, port) = match r.get("hostkeyalias") {
        Some(a) => (a.to_owned(), 22),
        None => (host, port),
    };
    let global = r
        .get("globalknownhostsfile")
        .unwrap_or("/etc/ssh/ssh_known_hosts /etc/ssh/ssh_known_hosts2")
        .to_owned();
    Box::new(move |_alg: &str, blob: &[u8]| {
        let mut files = user_files.clone();
        files.extend(global.split_whitespace().map(PathBuf::from));
        let key_type = hostkey::blob_key_type(blob).unwrap_or("unknown").to_owned();
        let shown = key_type.trim_start_matches("ssh-").to_ascii_uppercase();
        let fp = identity::fingerprint_sha256(blob);
        let name = known_hosts::host_name(&host, port);
        log!(Debug1, "Server host key: {key_type} {fp}");
        match known_hosts::check(&files, &host, port, blob) {
            HostKeyStatus::Known => {
                log!(Debug1, "Host '{name}' is known and matches the {shown} host key.");
                Ok(())
            }
            HostKeyStatus::Revoked => Err(format!(
                "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n@       WARNING: REVOKED HOST KEY DETECTED!               @\n@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\nThe {shown} host key for {name} is marked as revoked.\nHost key verification failed."
            )),
            HostKeyStatus::Changed { file, line } => {
                let msg = known_hosts::changed_warning(&name, &shown, &fp, &file, line);
                if strict == "no" || strict == "off" {
                    eprintln!("{}", msg.lines().take(11).collect::<Vec<_>>().join("\n"));
                    Ok(())
                } else {
                    Err(msg)
                }
            }
            HostKeyStatus::Unknown => {
                let add = |files: &[PathBuf]| {
                    if let Some(f) = files.first() {
                        if known_hosts::append(f, &host, port, blob, hash).is_ok() {
                            if crate::log::enabled(Level::Info) {
                                eprintln!("Warning: Permanently added '{name}' ({shown}) to the list of known hosts.");
                            }
                        }
                    }
                };
                match strict.as_str() {
                    "no" | "off" | "accept-new" => {
                        add(&user_files);
                        Ok(())
                    }
                    "yes" => Err(format!("No {shown} host key is known for {name} and you have requested strict checking.\nHost key verification failed.")),
                    _ if batch => Err("Host key verification failed.".into()),
                    _ => {
                        if ask_yes(&name, &shown, &fp) {
                            add(&user_files);
                            Ok(())
                        } else {
                            Err("Host key verification failed.".into())
                        }
                    }
                }
            }
        }
    })
}

/// StrictHostKeyChecking ask: ssh's question on /dev/tty, asked again
/// until the answer is yes, no or the fingerprint.
fn ask_yes(name: &str, shown: &str, fp: &str) -> bool {
    use std::io::{BufRead, Write};
    let Ok(tty) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
    else {
        return false;
    };
    // ssh adds the address; for an address typed as the host it is the same.
    let shown_name = if name
        .trim_start_matches('[')
        .split(']')
        .next()
        .unwrap_or_default()
        .parse::<std::net::IpAddr>()
        .is_ok()
    {
        format!("{name} ({name})")
    } else {
        name.to_owned()
    };
    let _ = write!(
        &tty,
        "The authenticity of host '{shown_name}' can't be established.\n{shown} key fingerprint is {fp}.\nThis key is not known by any other names.\nAre you sure you want to continue connecting (yes/no/[fingerprint])? "
    );
    let mut reader = std::io::BufReader::new(&tty);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return false;
        }
        match line.trim() {
            "yes" => return true,
            "no" => return false,
            a if a == fp => return true,
            _ => {
                let _ = write!(&tty, "Please type 'yes', 'no' or the fingerprint: ");
            }
        }
    }
}

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
        plan,
        proxy_command: setup::proxy_command(&r, &args)?,
        connection_attempts: setup::connection_attempts(&r),
        server_alive: setup::server_alive(&r),
    };
    Ok(client::run(opts, ids, check))
}
