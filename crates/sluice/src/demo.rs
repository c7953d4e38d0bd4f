//! `sluice demo`: the README's first command. Starts `sluiced` on a free
//! loopback port with throwaway host and user keys in a temporary directory,
//! moves data up and down through it with the `sluice` client, checks SHA-256
//! on both ends, prints MB/s and CPU seconds, and cleans up. No root and no
//! configuration needed.

use crate::datagen;
use crate::keys::host_keys::generate_ed25519_file;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What to move.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Bytes each way.
    pub size: u64,
    /// Cipher to ask for; None takes the default.
    pub cipher: Option<String>,
    /// Verbose logs from client and server.
    pub verbose: bool,
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn cpu_children() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a rusage struct.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

fn sibling(name: &str) -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join(name)))
        .filter(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from(name))
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

struct Server {
    child: Child,
}

impl Drop for Server {
    fn drop(&mut self) {
        // SAFETY: signalling our own child by pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

fn start_server(dir: &Path, port: u16, verbose: bool) -> Result<Server, String> {
    let user = std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(current_user);
    let cfg = dir.join("sluiced_config");
    let text = format!(
        "ListenAddress 127.0.0.1\nPort {port}\nHostKey {}\nAuthorizedKeysFile {}\nStrictModes no\nPidFile none\nPermitRootLogin prohibit-password\nAllowUsers {user}\nLogLevel {}\n",
        dir.join("host_ed25519").display(),
        dir.join("authorized_keys").display(),
        if verbose { "DEBUG1" } else { "ERROR" },
    );
    std::fs::write(&cfg, text).map_err(|e| format!("writing {}: {e}", cfg.display()))?;
    let child = Command::new(sibling("sluiced"))
        .args(["-D", "-e", "-f"])
        .arg(&cfg)
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("starting sluiced: {e} (build it with `cargo build --release`)"))?;
    let server = Server { child };
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return Err("sluiced did not start listening within 10 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(server)
}

fn current_user() -> String {
    // SAFETY: getpwuid returns a pointer into static storage or null.
    let pw = unsafe { libc::getpwuid(libc::getuid()) };
    if pw.is_null() {
        return "root".into();
    }
    // SAFETY: pw_name is a NUL-terminated string owned by libc.
    unsafe { std::ffi::CStr::from_ptr((*pw).pw_name) }
        .to_string_lossy()
        .into_owned()
}

fn client(dir: &Path, port: u16, opts: &DemoOptions, remote: &str) -> Command {
    let mut c = Command::new(sibling("sluice"));
    c.args([
        "-F",
        "/dev/null",
        "-o",
        "StrictHostKeyChecking=no",
        "-o",
        "BatchMode=yes",
        "-o",
    ])
    .arg(format!(
        "UserKnownHostsFile={}",
        dir.join("known_hosts").display()
    ))
    .arg("-i")
    .arg(dir.join("id_ed25519"))
    .args(["-p", &port.to_string()]);
    if let Some(cph) = &opts.cipher {
        c.args(["-c", cph]);
    }
    if opts.verbose {
        c.arg("-v");
    } else {
        // The throwaway host key is new every run: no "Permanently added" noise.
        c.args(["-o", "LogLevel=ERROR"]);
    }
    c.arg("127.0.0.1").arg(remote);
    c
}

/// One direction's result.
struct Run {
    secs: f64,
}

fn upload(dir: &Path, port: u16, opts: &DemoOptions, helper: &str) -> Result<Run, String> {
    let t0 = Instant::now();
    let mut child = client(dir, port, opts, &format!("{helper} demo-helper sink"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting sluice: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let size = opts.size;
    let gen = std::thread::spawn(move || datagen::generate(1, false, size, &mut stdin));
    let mut out = String::new();
    child
        .stdout
        .take()
        .ok_or("no stdout")?
        .read_to_string(&mut out)
        .map_err(|e| e.to_string())?;
    let status = child.wait().map_err(|e| e.to_string())?;
    let secs = t0.elapsed().as_secs_f64();
    let sent = gen
        .join()
        .map_err(|_| "generator panicked")?
        .map_err(|e| format!("sending: {e}"))?;
    if !status.success() {
        return Err(format!("upload failed: sluice exited with {status}"));
    }
    let expect = format!("{} {}", opts.size, sent);
    if out.trim() != expect {
        return Err(format!(
            "upload hash mismatch: sent {expect}, server saw {}",
            out.trim()
        ));
    }
    Ok(Run { secs })
}

fn download(dir: &Path, port: u16, opts: &DemoOptions, helper: &str) -> Result<Run, String> {
    let t0 = Instant::now();
    let mut child = client(
        dir,
        port,
        opts,
        &format!("{helper} demo-helper source 2 {}", opts.size),
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .map_err(|e| format!("starting sluice: {e}"))?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let (n, got) = datagen::hash_stream(&mut stdout).map_err(|e| e.to_string())?;
    let mut err = String::new();
    child
        .stderr
        .take()
        .ok_or("no stderr")?
        .read_to_string(&mut err)
        .map_err(|e| e.to_string())?;
    let status = child.wait().map_err(|e| e.to_string())?;
    let secs = t0.elapsed().as_secs_f64();
    if !status.success() {
        return Err(format!(
            "download failed: sluice exited with {status}: {}",
            err.trim()
        ));
    }
    let sent = err.lines().last().unwrap_or("").trim().to_owned();
    if n != opts.size || sent != got {
        return Err(format!(
            "download hash mismatch: server sent {sent}, received {n} bytes hashing to {got}"
        ));
    }
    Ok(Run { secs })
}

/// Runs the demo; returns the exit code.
pub fn run(opts: &DemoOptions) -> i32 {
    match run_inner(opts) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("sluice demo: {e}");
            1
        }
    }
}

fn run_inner(opts: &DemoOptions) -> Result<(), String> {
    let base = std::env::temp_dir().join(format!("sluice-demo-{}", std::process::id()));
    std::fs::create_dir_all(&base).map_err(|e| format!("creating {}: {e}", base.display()))?;
    let dir = TempDir(base);
    generate_ed25519_file(&dir.0.join("host_ed25519"), "sluice demo host")
        .map_err(|e| e.to_string())?;
    generate_ed25519_file(&dir.0.join("id_ed25519"), "sluice demo user")
        .map_err(|e| e.to_string())?;
    let pubkey = std::fs::read(dir.0.join("id_ed25519.pub")).map_err(|e| e.to_string())?;
    std::fs::File::create(dir.0.join("authorized_keys"))
        .and_then(|mut f| f.write_all(&pubkey))
        .map_err(|e| e.to_string())?;
    let port = free_port().map_err(|e| e.to_string())?;
    let helper = sibling("sluice");
    let helper = format!("'{}'", helper.display());
    // Both ends use the default order unless a cipher is asked for: the
    // speed shown is the one a plain `sluice host` gets on this machine.
    let order = crate::config::cipher_order::current();
    let cipher = match &opts.cipher {
        Some(c) => format!("{c} (asked for)"),
        None => format!(
            "{} (the default here: {})",
            order.ciphers().first().copied().unwrap_or("?"),
            order.why
        ),
    };
    println!(
        "sluice demo: sluiced on 127.0.0.1:{port}, moving {} MiB each way with {cipher}",
        opts.size >> 20
    );
    let mb = |r: &Run| opts.size as f64 / 1e6 / r.secs;
    // Each direction gets its own server, stopped and reaped before the CPU
    // reading, so the server's time (and its hashing helper's) is counted.
    let c0 = cpu_children();
    let up = {
        let _server = start_server(&dir.0, port, opts.verbose)?;
        upload(&dir.0, port, opts, &helper)?
    };
    let c1 = cpu_children();
    let down = {
        let _server = start_server(&dir.0, port, opts.verbose)?;
        download(&dir.0, port, opts, &helper)?
    };
    let (up_cpu, down_cpu) = (c1 - c0, cpu_children() - c1);
    let gib = opts.size as f64 / (1u64 << 30) as f64;
    println!("  upload:   {:8.1} MB/s  {:6.2} s  SHA-256 ok   CPU {:.2} s ({:.2} s/GiB, client + server + remote hash helper)", mb(&up), up.secs, up_cpu, up_cpu / gib);
    println!("  download: {:8.1} MB/s  {:6.2} s  SHA-256 ok   CPU {:.2} s ({:.2} s/GiB, client + server + remote hash helper)", mb(&down), down.secs, down_cpu, down_cpu / gib);
    Ok(())
}
