//! End to end: start `delayline up` with a 50 ms RTT, check ping's RTT and
//! carry a few MB over TCP between the namespaces, then stop it and check
//! that the namespaces are gone. Needs root and /dev/net/tun (else skipped).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_delayline");
const BYTES: usize = 8 << 20;

/// Stops the tool and removes leftovers however the test ends.
struct Guard {
    child: Option<Child>,
    ns: [String; 2],
}

impl Guard {
    /// SIGTERM, then wait (bounded); returns whether it exited with success.
    fn stop(&mut self) -> bool {
        let Some(mut child) = self.child.take() else {
            return false;
        };
        let pid = child.id() as libc::pid_t;
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(st)) = child.try_wait() {
                return st.success();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        false
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.stop();
        let _ = Command::new(BIN)
            .args(["down", "--ns-a", &self.ns[0], "--ns-b", &self.ns[1]])
            .stdout(Stdio::null())
            .status();
    }
}

/// Run `f` on a thread that has entered namespace `ns`; sockets it creates
/// live in that namespace.
fn in_ns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let file = std::fs::File::open(Path::new("/run/netns").join(ns)).expect("open netns");
    std::thread::spawn(move || {
        // SAFETY: setns on a valid namespace fd; affects this thread only.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
        f()
    })
}

/// Deterministic pseudo-random data (xorshift64).
fn data() -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..BYTES)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn fnv1a(h: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *h = (*h ^ b as u64).wrapping_mul(0x100_0000_01b3);
    }
}

/// Starts `delayline up ARGS` on namespaces `ns` and prefix `net`; returns
/// the guard and the child's stderr (read to the end once it stops).
fn start(args: &[&str], ns: &[String; 2], net: &str) -> (Guard, std::thread::JoinHandle<String>) {
    let mut child = Command::new(BIN)
        .arg("up")
        .args(args)
        .args(["--net", net, "--ns-a", &ns[0], "--ns-b", &ns[1]])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start delayline");
    let stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let guard = Guard {
        child: Some(child),
        ns: ns.clone(),
    };
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let ready = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("no ready line within 10 s");
    assert!(
        ready.starts_with("ready:"),
        "unexpected first line: {ready:?}"
    );
    (guard, err)
}

/// `ping -c COUNT -i 0.01` from `ns`: (received, min, mdev) in ms.
fn ping(ns: &str, addr: &str, count: u32) -> (u32, f64, f64) {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "ping", "-q", "-i", "0.01", "-c"])
        .arg(count.to_string())
        .arg(addr)
        .output()
        .expect("run ping");
    let text = String::from_utf8_lossy(&out.stdout);
    let received = text
        .split(", ")
        .find_map(|p| p.strip_suffix(" received"))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no count in ping output: {text}"));
    let rtt: Vec<f64> = text
        .lines()
        .find_map(|l| l.split(" = ").nth(1))
        .map(|v| {
            // "min/avg/max/mdev ms[, pipe N]"
            v.split(' ')
                .next()
                .unwrap_or_default()
                .split('/')
                .filter_map(|x| x.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    (
        received,
        rtt.first().copied().unwrap_or(0.0),
        rtt.get(3).copied().unwrap_or(0.0),
    )
}

/// `--loss` and `--jitter` end to end: the round-trip loss and ping's
/// spread are what was asked for, and the counters report the losses.
#[test]
fn loses_and_jitters_as_configured() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/dev/net/tun").exists() {
        println!("skipped: needs root and /dev/net/tun");
        return;
    }
    let pid = std::process::id();
    let ns = [format!("dlj{pid}a"), format!("dlj{pid}b")];
    let net = format!("10.{}.{}", 200 + pid % 50, (pid / 50) % 250);
    let args = [
        "--rtt", "20ms", "--rate", "100mbit", "--loss", "5%", "--jitter", "8ms", "--seed", "7",
    ];
    let (mut guard, err) = start(&args, &ns, &net);
    // 5% each way: 9.75% of round trips lost, 39 of 400 (sd ~6).
    let (received, min, mdev) = ping(&ns[0], &format!("{net}.2"), 400);
    let lost = 400 - received;
    assert!((15..=70).contains(&lost), "{lost} of 400 pings lost");
    // RTT within 20 +- 8 ms, triangular: sd 8/sqrt(6) = 3.3 ms. Without
    // jitter no ping is under 20 ms.
    assert!((11.9..17.0).contains(&min), "min {min} ms");
    assert!(mdev > 1.5, "mdev {mdev} ms");
    assert!(guard.stop(), "delayline did not exit cleanly on SIGTERM");
    let err = err.join().expect("stderr");
    for dir in ["a->b", "b->a"] {
        let line = err
            .lines()
            .find(|l| l.contains(&format!("{dir}:")))
            .unwrap_or_else(|| panic!("no {dir} counters: {err}"));
        let n: u64 = line
            .split(" (random loss)")
            .next()
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no loss count: {line}"));
        assert!((5..=45).contains(&n), "{dir}: {n} lost: {line}");
    }
}

#[test]
fn delays_pings_and_carries_tcp() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/dev/net/tun").exists() {
        println!("skipped: needs root and /dev/net/tun");
        return;
    }
    let pid = std::process::id();
    let ns = [format!("dlt{pid}a"), format!("dlt{pid}b")];
    let net = format!("10.{}.{}", 100 + pid % 100, (pid / 100) % 250);
    let addr_b = format!("{net}.2");
    let (mut guard, _) = start(&["--rtt", "50ms", "--rate", "200mbit"], &ns, &net);

    // RTT: ping's average within 10% of 50 ms.
    let out = Command::new("ip")
        .args([
            "netns", "exec", &ns[0], "ping", "-q", "-c", "5", "-i", "0.2", &addr_b,
        ])
        .output()
        .expect("run ping");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ping failed: {text}");
    let avg: f64 = text
        .lines()
        .find_map(|l| l.split(" = ").nth(1))
        .and_then(|v| v.split('/').nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no rtt in ping output: {text}"));
    assert!(
        (45.0..55.0).contains(&avg),
        "ping avg {avg} ms, expected ~50"
    );

    // TCP: BYTES across, count and hash checked at the receiver.
    let bind: SocketAddr = format!("{addr_b}:0").parse().expect("addr");
    let (port_tx, port_rx) = mpsc::channel();
    let server = in_ns(&ns[1], move || {
        let l = TcpListener::bind(bind).expect("bind");
        port_tx
            .send(l.local_addr().expect("local addr").port())
            .expect("send port");
        let (mut s, _) = l.accept().expect("accept");
        s.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        let (mut n, mut h, mut buf) = (0usize, 0xcbf2_9ce4_8422_2325u64, vec![0u8; 1 << 16]);
        loop {
            match s.read(&mut buf).expect("read") {
                0 => return (n, h),
                k => {
                    fnv1a(&mut h, &buf[..k]);
                    n += k;
                }
            }
        }
    });
    let port = port_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("server port");
    let dst: SocketAddr = format!("{addr_b}:{port}").parse().expect("addr");
    let t0 = Instant::now();
    let client = in_ns(&ns[0], move || {
        let payload = data();
        let mut s = TcpStream::connect_timeout(&dst, Duration::from_secs(5)).expect("connect");
        s.set_write_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        s.write_all(&payload).expect("write");
        s.shutdown(Shutdown::Write).expect("shutdown");
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        fnv1a(&mut h, &payload);
        h
    });
    let sent_hash = client.join().expect("client");
    let (n, got_hash) = server.join().expect("server");
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "{n} bytes in {secs:.2} s ({:.0} Mbit/s), ping avg {avg} ms",
        n as f64 * 8e-6 / secs
    );
    assert_eq!(n, BYTES);
    assert_eq!(got_hash, sent_hash);

    assert!(guard.stop(), "delayline did not exit cleanly on SIGTERM");
    for n in &ns {
        assert!(
            !Path::new("/run/netns").join(n).exists(),
            "namespace {n} left behind"
        );
    }
}
