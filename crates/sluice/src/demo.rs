//! `sluice demo`: the README's first command. Starts `sluiced` on a free
//! loopback port with throwaway host and user keys in a temporary directory,
//! moves data up and down through it with the client library (its options
//! built here, not from a command line), checks SHA-256
//! on both ends, prints MB/s and CPU seconds, and cleans up. No root and no
//! configuration needed.

use crate::client::session::{HostKeyCheck, SessionPlan};
use crate::client::{self, identities, ClientOptions};
use crate::config::algorithms;
use crate::config::ssh::local_user;
use crate::datagen;
use crate::keys::host_keys::generate_ed25519_file;
use crate::keys::identity;
use crate::log::Level;
use crate::net::metrics::system::cpu_children;
use sluice_proto::crypto::cipher;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
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
        let pid = rustix::process::Pid::from_child(&self.child);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let _ = self.child.wait();
    }
}

/// Why the demo stopped; printed after `sluice demo: `.
#[derive(Debug)]
enum DemoError {
    /// A file, pipe or process call (what was tried; empty: the error alone).
    Io { what: String, error: std::io::Error },
    /// sluiced could not be started.
    StartServer(std::io::Error),
    /// sluiced started but did not listen.
    NotListening,
    /// A throwaway key could not be made or read.
    Key(crate::keys::error::KeyError),
    /// `--cipher` names no cipher sluice has (config/'s message).
    Cipher(crate::config::algorithms::AlgorithmError),
    /// The data generator thread panicked.
    GeneratorPanicked,
    /// The client process failed.
    ClientFailed {
        direction: &'static str,
        status: i32,
        stderr: String,
    },
    /// The server saw other bytes than were sent.
    UploadMismatch { sent: String, seen: String },
    /// Other bytes arrived than the server sent.
    DownloadMismatch {
        sent: String,
        received: u64,
        hash: String,
    },
}

impl DemoError {
    fn io(what: impl Into<String>, error: std::io::Error) -> Self {
        DemoError::Io {
            what: what.into(),
            error,
        }
    }
}

impl std::fmt::Display for DemoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DemoError::Io { what, error } if what.is_empty() => write!(f, "{error}"),
            DemoError::Io { what, error } => write!(f, "{what}: {error}"),
            DemoError::StartServer(e) => write!(
                f,
                "starting sluiced: {e} (build it with `cargo build --release`)"
            ),
            DemoError::NotListening => f.write_str("sluiced did not start listening within 10 s"),
            DemoError::Key(e) => write!(f, "{e}"),
            DemoError::Cipher(e) => write!(f, "{e}"),
            DemoError::GeneratorPanicked => f.write_str("generator panicked"),
            DemoError::ClientFailed {
                direction,
                status,
                stderr,
            } => {
                write!(f, "{direction} failed: the client exited with {status}")?;
                if *direction == "download" {
                    write!(f, ": {stderr}")?;
                }
                Ok(())
            }
            DemoError::UploadMismatch { sent, seen } => {
                write!(f, "upload hash mismatch: sent {sent}, server saw {seen}")
            }
            DemoError::DownloadMismatch {
                sent,
                received,
                hash,
            } => write!(
                f,
                "download hash mismatch: server sent {sent}, received {received} bytes hashing to {hash}"
            ),
        }
    }
}

fn start_server(dir: &Path, port: u16, verbose: bool) -> Result<Server, DemoError> {
    let user = std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(local_user);
    let cfg = dir.join("sluiced_config");
    let text = format!(
        "ListenAddress 127.0.0.1\nPort {port}\nHostKey {}\nAuthorizedKeysFile {}\nStrictModes no\nPidFile none\nPermitRootLogin prohibit-password\nAllowUsers {user}\nLogLevel {}\n",
        dir.join("host_ed25519").display(),
        dir.join("authorized_keys").display(),
        if verbose { "DEBUG1" } else { "ERROR" },
    );
    std::fs::write(&cfg, text)
        .map_err(|error| DemoError::io(format!("writing {}", cfg.display()), error))?;
    let child = Command::new(sibling("sluiced"))
        .args(["-D", "-e", "-f"])
        .arg(&cfg)
        .stdin(Stdio::null())
        .spawn()
        .map_err(DemoError::StartServer)?;
    let server = Server { child };
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return Err(DemoError::NotListening);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(server)
}

/// The client's options: the throwaway user key, only the host key this
/// run generated trusted (as `StrictHostKeyChecking yes` with a fresh
/// known_hosts would, without writing one), BatchMode, the asked cipher.
fn client_options(
    dir: &Path,
    port: u16,
    opts: &DemoOptions,
    remote: &str,
) -> Result<ClientOptions, DemoError> {
    let host_key = identity::public_blob(&dir.join("host_ed25519")).map_err(DemoError::Key)?;
    let check: HostKeyCheck = Box::new(move |_alg: &str, blob: &[u8]| {
        if blob == host_key.as_slice() {
            Ok(())
        } else {
            Err(crate::client::error::HostKeyError::NotVerified)
        }
    });
    let mut o = ClientOptions::new("127.0.0.1", port, &local_user(), check);
    o.plan = SessionPlan::exec(Some(remote.as_bytes().to_vec()));
    o.identities = identities::from_file(&dir.join("id_ed25519"), true)
        .into_iter()
        .collect();
    o.auth.batch = true;
    if let Some(c) = &opts.cipher {
        o.proto.ciphers = algorithms::resolve(
            c,
            cipher::DEFAULT_CIPHERS,
            cipher::DEFAULT_CIPHERS,
            "cipher",
        )
        .map_err(DemoError::Cipher)?;
    }
    Ok(o)
}

/// A running client: a child process of ours, so its CPU time counts in
/// RUSAGE_CHILDREN like the server's.
struct ClientProc {
    pid: rustix::process::Pid,
}

impl ClientProc {
    /// The client's exit code (128 + signal when killed).
    fn wait(self) -> Result<i32, DemoError> {
        let waited =
            rustix::process::waitpid(Some(self.pid), rustix::process::WaitOptions::empty())
                .map_err(|e| DemoError::io("waitpid", e.into()))?;
        // Without WNOHANG a return is the child's end: exited or killed.
        let status = waited.map(|(_, s)| s);
        Ok(match status.and_then(|s| s.exit_status()) {
            Some(code) => code,
            None => 128 + status.and_then(|s| s.terminating_signal()).unwrap_or(0),
        })
    }
}

/// Runs `client::connect` in a forked child whose fds 0, 1 and 2 are the
/// given pipe ends (None: ours). A process rather than a thread because
/// the client's session owns fds 0-2 (it sets them non-blocking and drives
/// them), and so its CPU time is counted as before. The demo has no other
/// thread when it forks (the data generator starts afterwards), so the
/// child inherits no lock held by a thread that does not exist in it.
fn spawn_client(
    opts: ClientOptions,
    verbose: bool,
    stdio: [Option<OwnedFd>; 3],
) -> Result<ClientProc, DemoError> {
    // SAFETY: see above: single-threaded here; the child only rewires its
    // fds, runs the client and leaves with _exit.
    match unsafe { crate::sys::process::fork() } {
        Err(e) => return Err(DemoError::io("fork", e)),
        Ok(crate::sys::process::Forked::Parent(pid)) => return Ok(ClientProc { pid }),
        Ok(crate::sys::process::Forked::Child) => {}
    }
    let [stdin, stdout, stderr] = &stdio;
    if let Some(end) = stdin {
        let _ = rustix::stdio::dup2_stdin(end);
    }
    if let Some(end) = stdout {
        let _ = rustix::stdio::dup2_stdout(end);
    }
    if let Some(end) = stderr {
        let _ = rustix::stdio::dup2_stderr(end);
    }
    drop(stdio);
    // The parent's ends of the pipes (and anything else) must not stay
    // open here: a pipe's reader sees EOF only when every writer is gone.
    // SAFETY: closes fds from 3 up; nothing in this process uses them (the
    // pipe ends were dropped above; the child owns no other descriptor).
    let _ = unsafe { crate::sys::fd::close_range(3, u32::MAX) };
    crate::log::set_level(if verbose { Level::Debug1 } else { Level::Error });
    let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        match client::connect(opts) {
            Ok(code) => code,
            Err(e) => {
                crate::errln!("{e}");
                e.exit_code()
            }
        }
    }))
    .unwrap_or(255);
    // Leaving the child without running the parent's destructors (the
    // temporary directory, the server) or atexit handlers.
    crate::sys::process::exit_now(code)
}

/// One direction's result.
struct Run {
    secs: f64,
}

fn upload(dir: &Path, port: u16, opts: &DemoOptions, helper: &str) -> Result<Run, DemoError> {
    let t0 = Instant::now();
    let o = client_options(dir, port, opts, &format!("{helper} demo-helper sink"))?;
    let (stdin_r, mut stdin) = std::io::pipe().map_err(|e| DemoError::io("pipe", e))?;
    let (mut stdout, stdout_w) = std::io::pipe().map_err(|e| DemoError::io("pipe", e))?;
    let child = spawn_client(
        o,
        opts.verbose,
        [Some(stdin_r.into()), Some(stdout_w.into()), None],
    )?;
    let size = opts.size;
    let gen = std::thread::spawn(move || datagen::generate(1, false, size, &mut stdin));
    let mut out = String::new();
    stdout
        .read_to_string(&mut out)
        .map_err(|e| DemoError::io("", e))?;
    let status = child.wait()?;
    let secs = t0.elapsed().as_secs_f64();
    let sent = gen
        .join()
        .map_err(|_| DemoError::GeneratorPanicked)?
        .map_err(|e| DemoError::io("sending", e))?;
    if status != 0 {
        return Err(DemoError::ClientFailed {
            direction: "upload",
            status,
            stderr: String::new(),
        });
    }
    let expect = format!("{} {}", opts.size, sent);
    if out.trim() != expect {
        return Err(DemoError::UploadMismatch {
            sent: expect,
            seen: out.trim().to_owned(),
        });
    }
    Ok(Run { secs })
}

fn download(dir: &Path, port: u16, opts: &DemoOptions, helper: &str) -> Result<Run, DemoError> {
    let t0 = Instant::now();
    let o = client_options(
        dir,
        port,
        opts,
        &format!("{helper} demo-helper source 2 {}", opts.size),
    )?;
    let (mut stdout, stdout_w) = std::io::pipe().map_err(|e| DemoError::io("pipe", e))?;
    let (mut stderr, stderr_w) = std::io::pipe().map_err(|e| DemoError::io("pipe", e))?;
    let child = spawn_client(
        o,
        opts.verbose,
        [None, Some(stdout_w.into()), Some(stderr_w.into())],
    )?;
    // The helper's summary is one short line on stderr, read after stdout
    // ends (well under a pipe's buffer, so the client never blocks on it).
    let (n, got) = datagen::hash_stream(&mut stdout).map_err(|e| DemoError::io("", e))?;
    let mut err = String::new();
    stderr
        .read_to_string(&mut err)
        .map_err(|e| DemoError::io("", e))?;
    let status = child.wait()?;
    let secs = t0.elapsed().as_secs_f64();
    if status != 0 {
        return Err(DemoError::ClientFailed {
            direction: "download",
            status,
            stderr: err.trim().to_owned(),
        });
    }
    let sent = err.lines().last().unwrap_or("").trim().to_owned();
    if n != opts.size || sent != got {
        return Err(DemoError::DownloadMismatch {
            sent,
            received: n,
            hash: got,
        });
    }
    Ok(Run { secs })
}

/// Runs the demo; returns the exit code.
pub fn run(opts: &DemoOptions) -> i32 {
    match run_inner(opts) {
        Ok(()) => 0,
        Err(e) => {
            crate::errln!("sluice demo: {e}");
            1
        }
    }
}

fn run_inner(opts: &DemoOptions) -> Result<(), DemoError> {
    let base = std::env::temp_dir().join(format!("sluice-demo-{}", std::process::id()));
    std::fs::create_dir_all(&base)
        .map_err(|e| DemoError::io(format!("creating {}", base.display()), e))?;
    let dir = TempDir(base);
    generate_ed25519_file(&dir.0.join("host_ed25519"), "sluice demo host")
        .map_err(DemoError::Key)?;
    generate_ed25519_file(&dir.0.join("id_ed25519"), "sluice demo user").map_err(DemoError::Key)?;
    let pubkey = std::fs::read(dir.0.join("id_ed25519.pub")).map_err(|e| DemoError::io("", e))?;
    std::fs::File::create(dir.0.join("authorized_keys"))
        .and_then(|mut f| f.write_all(&pubkey))
        .map_err(|e| DemoError::io("", e))?;
    let port = free_port().map_err(|e| DemoError::io("", e))?;
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
    crate::outln!(
        "sluice demo: sluiced on 127.0.0.1:{port}, moving {} MiB each way with {cipher}",
        opts.size >> 20
    );
    let mb = |r: &Run| opts.size as f64 / 1e6 / r.secs;
    // Each direction gets its own server, stopped and reaped before the CPU
    // reading, so the server's time (and its hashing helper's) is counted.
    let c0 = cpu_children().as_secs_f64();
    let up = {
        let _server = start_server(&dir.0, port, opts.verbose)?;
        upload(&dir.0, port, opts, &helper)?
    };
    let c1 = cpu_children().as_secs_f64();
    let down = {
        let _server = start_server(&dir.0, port, opts.verbose)?;
        download(&dir.0, port, opts, &helper)?
    };
    let (up_cpu, down_cpu) = (c1 - c0, cpu_children().as_secs_f64() - c1);
    let gib = opts.size as f64 / (1u64 << 30) as f64;
    crate::outln!("  upload:   {:8.1} MB/s  {:6.2} s  SHA-256 ok   CPU {:.2} s ({:.2} s/GiB, client + server + remote hash helper)", mb(&up), up.secs, up_cpu, up_cpu / gib);
    crate::outln!("  download: {:8.1} MB/s  {:6.2} s  SHA-256 ok   CPU {:.2} s ({:.2} s/GiB, client + server + remote hash helper)", mb(&down), down.secs, down_cpu, down_cpu / gib);
    Ok(())
}
