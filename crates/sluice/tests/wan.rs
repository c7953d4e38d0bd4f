//! Over a long path: the repo's delay line (crates/delayline) joins two
//! network namespaces with 50 ms of round trip at 1 Gbit/s. Windows that
//! start small must grow to the path's bandwidth-delay product (asserted
//! on the window sizes the ends log, not on time); a stock OpenSSH client
//! uploads through sluiced; two sluice ends move data with the NONE cipher.
//! Needs root, /dev/net/tun and the delayline binary (built by
//! `cargo test --workspace`); skipped otherwise, saying why.

mod common;
use common::*;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const RTT_MS: u64 = 50;
const RATE_BPS: u64 = 1_000_000_000;
/// Bytes the path holds: 6.25 MB.
const BDP: u64 = RATE_BPS / 8 * RTT_MS / 1000;

/// A running delay line; taken down on drop.
struct Line {
    child: Child,
    ns_a: String,
    ns_b: String,
    addr_b: String,
}

fn delayline() -> Option<PathBuf> {
    let p = PathBuf::from(SLUICE).with_file_name("delayline");
    p.exists().then_some(p)
}

impl Line {
    fn up() -> Result<Line, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 || !std::path::Path::new("/dev/net/tun").exists() {
            return Err("needs root and /dev/net/tun".into());
        }
        let bin = delayline().ok_or("the delayline binary is not built")?;
        let pid = std::process::id();
        let (ns_a, ns_b) = (format!("swa{pid}"), format!("swb{pid}"));
        let net = format!("10.{}.{}", 100 + pid % 100, (pid / 100) % 250);
        let mut child = Command::new(bin)
            .args(["up", "--rtt", &format!("{RTT_MS}ms"), "--rate", "1gbit"])
            .args(["--ns-a", &ns_a, "--ns-b", &ns_b, "--net", &net])
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let line = Line {
            child,
            ns_a,
            ns_b,
            addr_b: format!("{net}.2"),
        };
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(l) if l.starts_with("ready:") => Ok(line),
            other => panic!("delayline did not come up: {other:?}"),
        }
    }

    fn in_ns(&self, b: bool, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args([
            "netns",
            "exec",
            if b { &self.ns_b } else { &self.ns_a },
            program,
        ]);
        c
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        // SAFETY: plain kill(2) of our own child; SIGTERM lets it clean up.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

/// A server process, killed when dropped (also when an assertion fails).
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// sluiced in namespace B, logging at DEBUG1 (window growth) to a file.
fn start_sluiced(s: &Setup, line: &Line, port: u16) -> (Daemon, PathBuf) {
    let d = s.dir.0.display();
    let cfg = s.dir.path("wan_sluiced_config");
    std::fs::write(
        &cfg,
        format!(
            "ListenAddress {}\nPort {port}\nHostKey {d}/host_ed25519\nAuthorizedKeysFile {d}/authorized_keys\n\
             StrictModes no\nPidFile none\nPermitRootLogin yes\nLogLevel DEBUG1\n\
             ChannelWindow 2M\nNoneEnabled yes\nNoneMacEnabled yes\n",
            line.addr_b
        ),
    )
    .unwrap();
    let log = s.dir.path("wan_sluiced.log");
    let child = Daemon(
        line.in_ns(true, SLUICED)
            .args(["-D", "-e", "-f"])
            .arg(&cfg)
            .stdin(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("Server listening")
    {
        assert!(Instant::now() < deadline, "sluiced did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, log)
}

fn client(s: &Setup, line: &Line, openssh: bool, port: u16, extra: &[&str]) -> Command {
    let mut c = line.in_ns(false, if openssh { "ssh" } else { SLUICE });
    c.args([
        "-F",
        "/dev/null",
        "-o",
        "StrictHostKeyChecking=no",
        "-o",
        "BatchMode=yes",
    ])
    .arg("-o")
    .arg(format!(
        "UserKnownHostsFile={}",
        s.dir.path("known_hosts").display()
    ))
    .arg("-i")
    .arg(&s.user_key)
    .args(["-p", &port.to_string()])
    .args(extra)
    .arg(&line.addr_b);
    c
}

/// The largest window a log reports ("receive window A -> B bytes").
fn largest_window(log: &str) -> u64 {
    log.lines()
        .filter_map(|l| l.split("receive window ").nth(1))
        .filter_map(|r| r.split(" -> ").nth(1))
        .filter_map(|r| r.split(' ').next()?.parse().ok())
        .max()
        .unwrap_or(0)
}

#[test]
fn over_a_50ms_path_windows_grow_to_the_bdp_and_stock_and_none_sessions_carry_data() {
    let line = match Line::up() {
        Ok(l) => l,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let s = Setup::new("wan");
    let port = 2200 + (std::process::id() % 1000) as u16;
    let (server, log) = start_sluiced(&s, &line, port);
    let data = random_data(192 << 20, 50);
    let hash = sha256(&data);

    // A stock OpenSSH client uploads; sluiced's window (2 MiB at first)
    // must grow past the BDP. AES-GCM: the window grows only while the
    // sender fills the path, and ssh's default chacha20-poly1305, sharing
    // two cores with the delay line, sluiced and sha256sum, may not.
    if !missing("/usr/bin/ssh") {
        let mut c = client(
            &s,
            &line,
            true,
            port,
            &["-o", "LogLevel=ERROR", "-c", "aes128-gcm@openssh.com"],
        );
        c.arg("sha256sum");
        let out = run(c, &data, 120);
        ok(&out, "ssh upload over the delay line");
        assert!(String::from_utf8_lossy(&out.stdout).starts_with(&hash));
        let text = std::fs::read_to_string(&log).unwrap();
        let w = largest_window(&text);
        eprintln!("ssh -> sluiced upload: sluiced's window grew to {w} bytes (BDP {BDP})");
        assert!(
            w >= BDP && w <= 128 << 20,
            "sluiced window {w}, BDP {BDP}:\n{text}"
        );
    }

    // sluice downloads with a 2 MiB starting window: the client's window grows.
    let file = s.dir.path("wan_data");
    std::fs::write(&file, &data).unwrap();
    let mut c = client(&s, &line, false, port, &["-v", "-o", "ChannelWindow=2M"]);
    c.arg(format!("cat {}", file.display()));
    let out = run(c, b"", 120);
    ok(&out, "sluice download over the delay line");
    assert_eq!(sha256(&out.stdout), hash);
    let err = String::from_utf8_lossy(&out.stderr);
    let w = largest_window(&err);
    eprintln!("sluice <- sluiced download: the client's window grew to {w} bytes (BDP {BDP})");
    assert!(
        w >= BDP && w <= 128 << 20,
        "client window {w}, BDP {BDP}:\n{err}"
    );

    // NONE cipher and MAC between two sluice ends.
    let none = [
        "-o",
        "NoneEnabled=yes",
        "-o",
        "NoneSwitch=yes",
        "-o",
        "NoneMacEnabled=yes",
    ];
    let mut c = client(&s, &line, false, port, &none);
    c.arg("sha256sum");
    let out = run(c, &data, 120);
    ok(&out, "NONE upload over the delay line");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(&hash));
    assert!(String::from_utf8_lossy(&out.stderr).contains("WARNING: ENABLED NONE CIPHER!!!"));

    drop(server);
}
