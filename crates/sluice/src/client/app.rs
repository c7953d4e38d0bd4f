//! `sluice`'s main: arguments and ssh_config resolved into one client run,
//! identities offered in OpenSSH's order, host keys checked against
//! known_hosts as `StrictHostKeyChecking` says.

use crate::cli::ssh_args::{self, ClientArgs, Invocation};
use crate::client::session::{HostKeyCheck, Identity, SessionPlan};
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

fn home() -> String {
    std::env::var("HOME").unwrap_or_default()
}

fn local_user() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "root".into())
}

/// `~` and `%d %u %h %r %p %%` in file names.
fn expand(s: &str, host: &str, user: &str, port: u16) -> PathBuf {
    let s = match s.strip_prefix("~/") {
        Some(rest) => format!("{}/{rest}", home()),
        None => s.to_owned(),
    };
    let s = s
        .replace("%%", "\0")
        .replace("%d", &home())
        .replace("%u", &local_user())
        .replace("%h", host)
        .replace("%r", user)
        .replace("%p", &port.to_string())
        .replace('\0', "%");
    PathBuf::from(s)
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

fn identities(args: &ClientArgs, r: &Resolved, host: &str, user: &str, port: u16) -> Vec<Identity> {
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
        .filter_map(|f| identity::public_blob(&expand(f, host, user, port)).ok())
        .collect();
    let agent_path = r.get("identityagent").map(|p| expand(p, host, user, port));
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
        let path = expand(&f, host, user, port);
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

fn host_key_check(r: &Resolved, host: String, port: u16) -> HostKeyCheck {
    let strict = r
        .get("stricthostkeychecking")
        .unwrap_or("ask")
        .to_ascii_lowercase();
    let batch = r.flag("batchmode", false);
    let hash = r.flag("hashknownhosts", false);
    let user_files: Vec<PathBuf> = if r.all("userknownhostsfile").is_empty() {
        vec![
            expand("~/.ssh/known_hosts", &host, "", port),
            expand("~/.ssh/known_hosts2", &host, "", port),
        ]
    } else {
        r.all("userknownhostsfile")
            .iter()
            .flat_map(|s| {
                s.split_whitespace()
                    .map(|f| expand(f, &host, "", port))
                    .collect::<Vec<_>>()
            })
            .collect()
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

fn ask_yes(name: &str, shown: &str, fp: &str) -> bool {
    use std::io::{BufRead, Write};
    let Ok(tty) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
    else {
        return false;
    };
    let _ = write!(
        &tty,
        "The authenticity of host '{name}' can't be established.\n{shown} key fingerprint is {fp}.\nThis key is not known by any other names.\nAre you sure you want to continue connecting (yes/no/[fingerprint])? "
    );
    let mut line = String::new();
    let _ = std::io::BufReader::new(&tty).read_line(&mut line);
    let a = line.trim();
    a == "yes" || a == fp
}

fn connect(args: ClientArgs) -> Result<i32, String> {
    let mut opts = Vec::new();
    if let Some(p) = args.port {
        opts.push(format!("Port={p}"));
    }
    if let Some(c) = &args.ciphers {
        opts.push(format!("Ciphers={c}"));
    }
    if let Some(m) = &args.macs {
        opts.push(format!("MACs={m}"));
    }
    if args.compression {
        opts.push("Compression=yes".into());
    }
    if let Some(l) = &args.login {
        opts.push(format!("User={l}"));
    }
    if let Some(u) = &args.user {
        opts.insert(0, format!("User={u}"));
    }
    opts.extend(args.options.iter().cloned());
    let cfg = ClientConfig::load(&opts, args.config_file.as_deref().map(Path::new))?;
    let pre = cfg.resolve(&args.host, "");
    let level = match args.verbose {
        0 if args.quiet => Level::Quiet,
        0 => pre
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
    let user = pre
        .get("user")
        .map(str::to_owned)
        .unwrap_or_else(local_user);
    let r = cfg.resolve(&args.host, &user);
    let host = r
        .get("hostname")
        .map(|h| h.replace("%h", &args.host))
        .unwrap_or_else(|| args.host.clone());
    let port: u16 = match r.get("port") {
        Some(p) => p.parse().map_err(|_| format!("Bad port '{p}'"))?,
        None => 22,
    };
    let yes_no = |kw: &str, name: &str| -> Result<bool, String> {
        r.get(kw).map_or(Ok(false), |v| {
            crate::config::yes_no(v).ok_or_else(|| format!("Bad {name} '{v}': use yes or no"))
        })
    };
    let none_enabled = yes_no("noneenabled", "NoneEnabled")?;
    let none_switch = yes_no("noneswitch", "NoneSwitch")?;
    let none_mac = yes_no("nonemacenabled", "NoneMacEnabled")?;
    if args.print_config {
        let mut r2 = r.clone();
        r2.set_default("user", &user);
        r2.set_default("hostname", &host);
        r2.set_default("port", &port.to_string());
        let yn = |b: bool| if b { "yes" } else { "no" };
        r2.set("noneenabled", yn(none_enabled));
        r2.set("noneswitch", yn(none_switch));
        r2.set("nonemacenabled", yn(none_mac));
        print!("{}", r2.dump());
        return Ok(0);
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
    let connect_timeout = r
        .get("connecttimeout")
        .and_then(|t| t.parse().ok())
        .map(Duration::from_secs);
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
    let command = (!args.command.is_empty()).then(|| args.command.join(" ").into_bytes());
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
    let ids = identities(&args, &r, &host, &user, port);
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
        no_session,
        fork_after_auth,
        forwards,
    };
    let opts = ClientOptions {
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
    };
    Ok(client::run(opts, ids, check))
}
