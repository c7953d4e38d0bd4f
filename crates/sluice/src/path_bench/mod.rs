//! `sluice bench [options] [user@]host`: how fast this path moves data
//! over SSH, measured on the user's own path, against any server (sluiced,
//! or a stock sshd with less to try), with what to set for it.
//!
//! First the path: the server's identification line and the round trip of
//! a TCP handshake (`sluice -G` says where the destination leads; a proxy
//! leaves both unmeasured). Then memory-to-memory runs, each a client
//! process of this sluice with the user's own options (so ssh_config, keys
//! and agent apply as for a transfer) against `cat > /dev/null` or `cat
//! /dev/zero` at the far end: each cipher on one connection, `Streams auto`
//! (toward sluiced), compression off and auto on a sample (random and text
//! made here, or the user's file), a download, and OpenSSH's ssh for
//! comparison when installed. No disk on either end. Each run lasts a set
//! time (`--time`, by default 40 round trips within 3 to 6 s: long enough
//! for TCP's slow start to be a small part), so the whole stays under a minute on most paths.
//!
//! Output: a progress line on a terminal, then a table (MB/s, the client's
//! CPU, ratio to the best) and the ssh_config lines the figures call for
//! (report.rs); `--json` for scripts.

mod report;
mod row;

use report::{Done, Path as PathInfo, Role};
use row::{Direction, Spec};
use std::io::{IsTerminal, Read};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `sluice bench`'s options; the rest of its words go to each client.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// ssh options and the destination, as for `sluice`.
    pub ssh_args: Vec<String>,
    /// Seconds per run (None: from the round trip).
    pub seconds: Option<u32>,
    /// Compress this file's bytes instead of generated text.
    pub sample: Option<PathBuf>,
    /// One JSON object on stdout instead of the table.
    pub json: bool,
    /// Leave out the OpenSSH row.
    pub no_ssh: bool,
}

/// Usage line (also in `sluice --help`).
pub const USAGE: &str =
    "usage: sluice bench [--json] [--time seconds] [--sample file] [--no-ssh] [ssh options] [user@]host";

/// Why `sluice bench` could not run; `Display` is the line it prints.
#[derive(Debug)]
pub enum BenchError {
    /// No destination: the usage.
    Usage,
    /// An option without its value.
    NeedsValue(&'static str),
    /// `--time` out of 1-600 seconds.
    BadTime(String),
    /// The data generator failed.
    Generator(std::io::Error),
    /// A file (the sample, this program) could not be read or run.
    File {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The `--sample` file is empty.
    EmptySample(std::path::PathBuf),
    /// This program's own path is unknown.
    CurrentExe(std::io::Error),
    /// `sluice -G` refused the options (what it printed).
    Config(String),
    /// The first run failed (no login, no such host): what it said.
    FirstRun(String),
}

impl std::fmt::Display for BenchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BenchError::Usage => f.write_str(USAGE),
            BenchError::NeedsValue("--sample") => f.write_str("bench: --sample needs a file"),
            BenchError::NeedsValue(o) => write!(f, "bench: {o} needs a value"),
            BenchError::BadTime(v) => write!(f, "bench: bad --time '{v}' (1-600 seconds)"),
            BenchError::Generator(e) => write!(f, "{e}"),
            BenchError::File { path, error } => write!(f, "bench: {}: {error}", path.display()),
            BenchError::EmptySample(p) => write!(f, "bench: {}: empty", p.display()),
            BenchError::CurrentExe(e) => write!(f, "bench: {e}"),
            BenchError::Config(m) => f.write_str(m),
            BenchError::FirstRun(e) => write!(f, "sluice bench: {e}"),
        }
    }
}

impl std::error::Error for BenchError {}

/// Parses the words after `bench`.
pub fn parse(args: &[String]) -> Result<Options, BenchError> {
    let mut o = Options::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => o.json = true,
            "--no-ssh" => o.no_ssh = true,
            "--time" => {
                let v = it.next().ok_or(BenchError::NeedsValue("--time"))?;
                o.seconds = Some(
                    v.parse()
                        .ok()
                        .filter(|s| (1..=600).contains(s))
                        .ok_or_else(|| BenchError::BadTime(v.clone()))?,
                );
            }
            "--sample" => {
                o.sample = Some(it.next().ok_or(BenchError::NeedsValue("--sample"))?.into());
            }
            _ => o.ssh_args.push(a.clone()),
        }
    }
    if o.ssh_args.is_empty() {
        return Err(BenchError::Usage);
    }
    Ok(o)
}

/// Bytes of each generated sample: large enough that no compressor's
/// window sees it repeat.
const SAMPLE: usize = 48 << 20;
/// The most of a `--sample` file that is read.
const SAMPLE_MAX: u64 = 256 << 20;

fn generated(seed: u64, text: bool) -> Result<Arc<Vec<u8>>, BenchError> {
    let mut v = vec![0u8; SAMPLE];
    let mut g = crate::datagen::Generator::new(seed, text).map_err(BenchError::Generator)?;
    g.fill(&mut v).map_err(BenchError::Generator)?;
    Ok(Arc::new(v))
}

fn read_sample(p: &std::path::Path) -> Result<Arc<Vec<u8>>, BenchError> {
    let mut v = Vec::new();
    std::fs::File::open(p)
        .and_then(|f| f.take(SAMPLE_MAX).read_to_end(&mut v))
        .map_err(|error| BenchError::File {
            path: p.to_owned(),
            error,
        })?;
    if v.is_empty() {
        return Err(BenchError::EmptySample(p.to_owned()));
    }
    Ok(Arc::new(v))
}

/// Where the destination leads, from `sluice -G` with the user's options.
fn resolve(me: &std::path::Path, args: &[String]) -> Result<PathInfo, BenchError> {
    let out = Command::new(me)
        .arg("-G")
        .args(args)
        .output()
        .map_err(|error| BenchError::File {
            path: me.to_owned(),
            error,
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(BenchError::Config(
            String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        ));
    }
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k).and_then(|v| v.strip_prefix(' ')))
            .map(str::to_owned)
    };
    let address = get("hostname").unwrap_or_default();
    let port = get("port").and_then(|p| p.parse().ok()).unwrap_or(22);
    let proxied = get("proxycommand").is_some() || get("proxyjump").is_some();
    let host = get("host").unwrap_or_else(|| address.clone());
    let mut p = PathInfo {
        host,
        address,
        port,
        ..PathInfo::default()
    };
    if !proxied {
        probe(&mut p);
    }
    Ok(p)
}

/// The server's identification line and the TCP handshake's round trip
/// (the least of three: queueing only adds).
fn probe(p: &mut PathInfo) {
    let Some(addr) = (p.address.as_str(), p.port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
    else {
        return;
    };
    let mut best: Option<Duration> = None;
    for i in 0..3 {
        let t = Instant::now();
        let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(5)) else {
            return;
        };
        let took = t.elapsed();
        best = Some(best.map_or(took, |b| b.min(took)));
        if i == 0 {
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let mut buf = [0u8; 256];
            let mut got = Vec::new();
            while let Ok(n @ 1..) = s.read(&mut buf) {
                got.extend_from_slice(buf.get(..n).unwrap_or_default());
                if got.contains(&b'\n') || got.len() >= 255 {
                    break;
                }
            }
            let line = String::from_utf8_lossy(&got);
            p.server = line
                .lines()
                .find(|l| l.starts_with("SSH-"))
                .map(|l| l.trim().to_owned());
        }
    }
    p.rtt_ms = best.map(|d| d.as_secs_f64() * 1e3);
}

/// Seconds per run: long enough for TCP's slow start (about ten round
/// trips to fill 1 Gbit/s) to be a small part (40 round trips), at least 3
/// and at most 6, so eight runs stay near a minute on a 240 ms path.
fn default_secs(rtt_ms: Option<f64>) -> u32 {
    let rtt = rtt_ms.unwrap_or(100.0) / 1e3;
    (rtt * 40.0).clamp(3.0, 6.0).ceil() as u32
}

/// An AEAD cipher run's arguments.
fn sluice_args(cipher: &str, streams: &str, compression: &str) -> Vec<String> {
    [
        "-o",
        "BatchMode=yes",
        "-o",
        &format!("Compression={compression}"),
        "-o",
        &format!("Streams={streams}"),
        "-c",
        cipher,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

fn short(cipher: &str) -> &str {
    cipher.split('@').next().unwrap_or(cipher)
}

fn find_ssh() -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| std::path::Path::new(d).join("ssh"))
        .find(|p| p.is_file())
}

/// Runs the bench; returns the exit code (0, or 255 when nothing ran).
pub fn run(o: &Options) -> i32 {
    match run_inner(o) {
        Ok(code) => code,
        Err(e) => {
            crate::errln!("{e}");
            255
        }
    }
}

fn run_inner(o: &Options) -> Result<i32, BenchError> {
    let me = std::env::current_exe().map_err(BenchError::CurrentExe)?;
    let mut path = resolve(&me, &o.ssh_args)?;
    let secs = o.seconds.unwrap_or_else(|| default_secs(path.rtt_ms));
    path.secs = f64::from(secs);
    let sluiced = path
        .server
        .as_deref()
        .is_some_and(|s| s.to_ascii_lowercase().contains("sluice"));
    let random = generated(1, false)?;
    let (sample, sample_name) = match &o.sample {
        Some(p) => (
            read_sample(p)?,
            p.file_name()
                .map_or("sample".into(), |n| n.to_string_lossy().into_owned()),
        ),
        None => (generated(2, true)?, "text".to_owned()),
    };
    let ssh = (!o.no_ssh).then(find_ssh).flatten();
    let ciphers: Vec<String> = crate::config::cipher_order::default_ciphers()
        .iter()
        .filter(|c| c.contains("gcm") || c.contains("chacha"))
        .map(|c| (*c).to_owned())
        .collect();
    let total = ciphers.len() + 3 + usize::from(sluiced) + usize::from(ssh.is_some());
    let tty = std::io::stderr().is_terminal() && !o.json;
    if !o.json {
        let rtt = path
            .rtt_ms
            .map_or("not measured".into(), |r| format!("{r:.1} ms"));
        crate::errln!(
            "sluice bench: {} port {}, {}, round trip {rtt}: {total} runs of {secs} s",
            path.address,
            path.port,
            path.server.as_deref().unwrap_or("server not identified")
        );
    }
    let mut done: Vec<Done> = Vec::new();
    let runner = Runner {
        ssh_args: &o.ssh_args,
        secs,
        tty,
        total,
    };
    let step = |spec, role, cipher, done: &mut Vec<Done>| runner.step(spec, role, cipher, done);
    for c in &ciphers {
        let spec = Spec {
            name: short(c).into(),
            data_name: "random".into(),
            program: me.clone(),
            args: sluice_args(c, "1", "no"),
            direction: Direction::Up,
            data: random.clone(),
        };
        step(spec, Role::Cipher, Some(c.clone()), &mut done);
        // The first run failing (no login, no such host) fails them all.
        if let [only] = done.as_slice() {
            if let Some(e) = &only.outcome.error {
                return Err(BenchError::FirstRun(e.clone()));
            }
        }
    }
    let best = report::preferred_cipher(&done)
        .or_else(|| ciphers.first().cloned())
        .unwrap_or_else(|| "aes128-gcm@openssh.com".into());
    let plan = later_runs(&me, &best, sluiced, &random, (&sample, &sample_name), &ssh);
    for (s, role) in plan {
        let cipher = (role != Role::Stock).then(|| best.clone());
        step(s, role, cipher, &mut done);
    }
    let advice = report::recommend(&done);
    if o.json {
        crate::outln!("{}", report::json(&path, &done, &advice));
    } else {
        crate::out!("{}", report::text(&path, &done, &advice));
    }
    let any = done.iter().any(|d| d.outcome.error.is_none());
    Ok(if any { 0 } else { 255 })
}

/// How one run is made and shown (the progress line on a terminal).
struct Runner<'a> {
    ssh_args: &'a [String],
    secs: u32,
    tty: bool,
    total: usize,
}

impl Runner<'_> {
    fn step(&self, spec: Spec, role: Role, cipher: Option<String>, done: &mut Vec<Done>) {
        let (n, total, tty) = (done.len() + 1, self.total, self.tty);
        let mut last = Instant::now();
        let mut show = |bytes: u64, t: f64| {
            if tty && last.elapsed() >= Duration::from_millis(500) && t > 0.0 {
                last = Instant::now();
                crate::err!(
                    "\r[{n}/{total}] {} {}: {:.1} MB/s   ",
                    spec.name,
                    spec.direction.word(),
                    bytes as f64 / t / 1e6
                );
            }
        };
        let outcome = row::run(&spec, self.ssh_args, f64::from(self.secs), &mut show);
        if tty {
            crate::err!("\r\x1b[K");
        }
        done.push(Done {
            spec,
            role,
            cipher,
            outcome,
        });
    }
}

/// The runs after the ciphers', with the best cipher: Streams auto (to
/// sluiced), the sample without and with compression, a download, and
/// OpenSSH's ssh with its defaults when it is installed.
fn later_runs(
    me: &Path,
    best: &str,
    sluiced: bool,
    random: &Arc<Vec<u8>>,
    (sample, sample_name): (&Arc<Vec<u8>>, &str),
    ssh: &Option<PathBuf>,
) -> Vec<(Spec, Role)> {
    let b = short(best).to_owned();
    let mut plan: Vec<(Spec, Role)> = Vec::new();
    let spec = |name: String, data_name: &str, args: Vec<String>, dir, data: &Arc<Vec<u8>>| Spec {
        name,
        data_name: data_name.into(),
        program: me.to_path_buf(),
        args,
        direction: dir,
        data: data.clone(),
    };
    if sluiced {
        plan.push((
            spec(
                format!("{b}, Streams auto"),
                "random",
                sluice_args(best, "auto", "no"),
                Direction::Up,
                random,
            ),
            Role::Streams,
        ));
    }
    plan.push((
        spec(
            format!("{b}, Compression no"),
            sample_name,
            sluice_args(best, "1", "no"),
            Direction::Up,
            sample,
        ),
        Role::SampleRaw,
    ));
    plan.push((
        spec(
            format!("{b}, Compression auto"),
            sample_name,
            sluice_args(best, "1", "auto"),
            Direction::Up,
            sample,
        ),
        Role::SampleAuto,
    ));
    plan.push((
        spec(
            b.clone(),
            "zeros",
            sluice_args(best, "1", "no"),
            Direction::Down,
            random,
        ),
        Role::Download,
    ));
    if let Some(ssh) = ssh {
        let args = ["-o", "BatchMode=yes", "-o", "Compression=no"];
        plan.push((
            Spec {
                name: "OpenSSH ssh, its defaults".into(),
                data_name: "random".into(),
                program: ssh.clone(),
                args: args.iter().map(|s| (*s).to_owned()).collect(),
                direction: Direction::Up,
                data: Arc::clone(random),
            },
            Role::Stock,
        ));
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn options_of_ours_are_taken_and_the_rest_goes_to_ssh() {
        let o = parse(&words("--json -p 2222 --time 5 -i k --sample f alice@h")).unwrap();
        assert!(o.json);
        assert_eq!(o.seconds, Some(5));
        assert_eq!(o.sample, Some(PathBuf::from("f")));
        assert_eq!(o.ssh_args, words("-p 2222 -i k alice@h"));
        assert!(parse(&[]).is_err());
        assert!(parse(&words("--time 0 h")).is_err());
        assert!(parse(&words("--time")).is_err());
    }

    #[test]
    fn runs_last_long_enough_to_leave_slow_start() {
        assert_eq!(default_secs(Some(0.05)), 3);
        assert_eq!(default_secs(Some(100.0)), 4);
        assert_eq!(default_secs(Some(240.0)), 6);
        assert_eq!(default_secs(None), 4);
    }
}
