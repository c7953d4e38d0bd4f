//! Faults during a bulk transfer through sluiced: the client killed, the
//! connection's post-auth process killed, the remote command killed, the
//! receiving disk full (a small tmpfs; skipped when it cannot be mounted),
//! the path vanishing (a TCP relay that resets both sides), the path going
//! silent (the delay line frozen: no RST, no ICMP). Each time:
//! `sluice` exits non-zero with a message naming the cause (never 0 with
//! short data), sluiced leaves no process behind and no zombie, and the
//! next connection works (data checked by SHA-256).

mod common;
mod wan_util;

use common::*;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Every process: pid -> (parent, state, command line).
fn processes() -> HashMap<i32, (i32, char, String)> {
    let mut m = HashMap::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "pid (comm) S ppid ...": comm may hold spaces and parentheses.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
            continue;
        };
        let mut f = rest.split_whitespace();
        let state = f.next().and_then(|s| s.chars().next()).unwrap_or('?');
        let ppid = f.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        m.insert(pid, (ppid, state, cmd));
    }
    m
}

/// The descendants of `root`, with their state and command line.
fn descendants(root: i32) -> Vec<(i32, char, String)> {
    let all = processes();
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for (pid, (ppid, st, cmd)) in &all {
            if *ppid == p {
                out.push((*pid, *st, cmd.clone()));
                frontier.push(*pid);
            }
        }
    }
    out
}

/// Waits until sluiced has nothing left of past connections and no
/// process anywhere still runs with `marker` in its command line.
fn assert_cleaned_up(server: &Server, marker: &str) {
    let t = Instant::now();
    loop {
        let left = descendants(server.child.id() as i32);
        let strays: Vec<_> = processes()
            .into_iter()
            .filter(|(_, (_, _, c))| c.contains(marker))
            .collect();
        if left.is_empty() && strays.is_empty() {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "left behind: {left:?} {strays:?}\n{}",
            server.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A following connection works: 1 MiB up and back, hashes equal.
fn still_serves(s: &Setup, server: &Server) {
    let data = random_data(1 << 20, 7);
    let mut c = s.client(false, server, &[]);
    c.arg("cat");
    let out = run(c, &data, 30);
    ok(&out, "a connection after the fault");
    assert_eq!(sha256(&out.stdout), sha256(&data));
}

/// A download of an endless stream (`marker` in the remote command line),
/// once bytes flow: the client and a reader counting what arrived.
fn download(s: &Setup, server: &Server, marker: &str) -> (Child, std::thread::JoinHandle<u64>) {
    let mut c = s.client(false, server, &[]);
    c.arg(format!("cat /dev/zero {marker}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        let mut n = 0u64;
        let mut told = false;
        while let Ok(k) = out.read(&mut buf) {
            if k == 0 {
                break;
            }
            n += k as u64;
            if !told && n > (8 << 20) {
                let _ = tx.send(());
                told = true;
            }
        }
        n
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("the transfer did not start");
    (child, reader)
}

/// Waits for `child` (at most 20 s); its status and stderr.
fn finish(mut child: Child) -> (std::process::ExitStatus, String) {
    let t = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("sluice did not end after the fault");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
    (status, err)
}

/// The connection's post-auth process (the listener's grandchild: the
/// listener starts the monitor, which starts it) and the remote command
/// (the process with `marker` in its command line).
fn connection_processes(server: &Server, marker: &str) -> (i32, i32) {
    let listener = server.child.id() as i32;
    let t = Instant::now();
    loop {
        let all = processes();
        let monitors: Vec<i32> = all
            .iter()
            .filter(|(_, (pp, _, _))| *pp == listener)
            .map(|(p, _)| *p)
            .collect();
        let cmd = all
            .iter()
            .find(|(_, (_, _, c))| c.starts_with("cat /dev/zero") && c.contains(marker))
            .map(|(p, _)| *p);
        // The command's ancestor whose parent is a monitor.
        let mut post = cmd;
        while let Some(p) = post {
            match all.get(&p) {
                Some((pp, _, _)) if monitors.contains(pp) => break,
                Some((pp, _, _)) if *pp > 1 => post = Some(*pp),
                _ => post = None,
            }
        }
        if let (Some(post), Some(cmd)) = (post, cmd) {
            return (post, cmd);
        }
        assert!(t.elapsed() < Duration::from_secs(10), "no remote command");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kill9(pid: i32) {
    // SAFETY: a process of this test's server or client.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
}

#[test]
fn client_killed_mid_transfer() {
    let s = Setup::new("fault-client");
    let server = s.start(false, "");
    let marker = "/nonexistent/fault-client-marker";
    let (mut child, reader) = download(&s, &server, marker);
    child.kill().unwrap();
    let _ = child.wait();
    let _ = reader.join();
    assert_cleaned_up(&server, marker);
    still_serves(&s, &server);
}

#[test]
fn post_auth_process_killed_mid_transfer() {
    let s = Setup::new("fault-postauth");
    let server = s.start(false, "");
    let marker = "/nonexistent/fault-postauth-marker";
    let (child, reader) = download(&s, &server, marker);
    let (post, _) = connection_processes(&server, marker);
    kill9(post);
    let (status, err) = finish(child);
    let _ = reader.join();
    assert!(!status.success(), "exit 0 after the server side died");
    assert!(!err.trim().is_empty(), "no message: {status:?}");
    assert_cleaned_up(&server, marker);
    still_serves(&s, &server);
}

#[test]
fn remote_command_killed_mid_transfer() {
    let s = Setup::new("fault-command");
    let server = s.start(false, "");
    let marker = "/nonexistent/fault-command-marker";
    let (child, reader) = download(&s, &server, marker);
    let (_, cmd) = connection_processes(&server, marker);
    kill9(cmd);
    let (status, err) = finish(child);
    let _ = reader.join();
    assert!(!status.success(), "exit 0 though the command was killed");
    assert!(err.contains("KILL"), "{status:?}: {err}");
    assert_cleaned_up(&server, marker);
    still_serves(&s, &server);
}

/// A tmpfs of `size` at a fresh directory; None (skip) when it cannot be mounted.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(s: &Setup, size: &str) -> Option<Tmpfs> {
        let dir = s.dir.path("full");
        std::fs::create_dir_all(&dir).unwrap();
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .stderr(Stdio::null())
            .status();
        if st.is_ok_and(|s| s.success()) {
            Some(Tmpfs(dir))
        } else {
            eprintln!("skipped: cannot mount a tmpfs (needs root)");
            None
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn disk_full_on_either_side() {
    let s = Setup::new("fault-full");
    let server = s.start(false, "");
    let Some(fs) = Tmpfs::mount(&s, "4m") else {
        return;
    };
    // Upload: the remote `cat` fails; its status and message come back.
    let data = random_data(16 << 20, 3);
    let mut c = s.client(false, &server, &[]);
    c.arg(format!("cat > {}/up", fs.0.display()));
    let out = run(c, &data, 60);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "exit 0 with a full disk");
    assert!(err.contains("No space left on device"), "{err}");
    std::fs::remove_file(fs.0.join("up")).unwrap();
    // Download into the full file system: sluice itself cannot write.
    let file = std::fs::File::create(fs.0.join("down")).unwrap();
    let mut c = s.client(false, &server, &[]);
    c.arg("head -c 16777216 /dev/zero")
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(Stdio::piped());
    let (status, err) = finish(c.spawn().unwrap());
    assert!(!status.success(), "exit 0 with short data written");
    assert!(err.contains("No space left on device"), "{status:?}: {err}");
    assert_cleaned_up(&server, "/nonexistent/none");
    still_serves(&s, &server);
}

/// A relay in front of `port` that resets both sides once `limit` bytes
/// went from the server to the client: the path vanishing.
fn resetting_relay(port: u16, limit: u64) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let me = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let (a, _) = l.accept().unwrap();
        let b = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut down = 0u64;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let mut fds = [a.as_raw_fd(), b.as_raw_fd()].map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            });
            // SAFETY: two valid pollfds.
            if unsafe { libc::poll(fds.as_mut_ptr(), 2, 10_000) } <= 0 {
                break;
            }
            for (i, (mut from, mut to)) in [(&a, &b), (&b, &a)].into_iter().enumerate() {
                if fds[i].revents == 0 {
                    continue;
                }
                let n = from.read(&mut buf).unwrap_or(0);
                if n == 0 || to.write_all(&buf[..n]).is_err() {
                    return;
                }
                if i == 1 {
                    down += n as u64;
                }
            }
            if down > limit {
                break;
            }
        }
        // SO_LINGER 0: closing sends RST, as a vanished path eventually does.
        let off = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        for s in [&a, &b] {
            // SAFETY: setting an option on a socket we own.
            unsafe {
                libc::setsockopt(
                    s.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_LINGER,
                    (&off as *const libc::linger).cast(),
                    std::mem::size_of::<libc::linger>() as libc::socklen_t,
                )
            };
        }
    });
    me
}

#[test]
fn path_vanishes_mid_transfer() {
    let s = Setup::new("fault-path");
    let server = s.start(false, "");
    let relay = resetting_relay(server.port, 32 << 20);
    let marker = "/nonexistent/fault-path-marker";
    let mut c = s.client_to(false, relay, "ERROR", &[]);
    c.arg(format!("cat /dev/zero {marker}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let (status, err) = finish(c.spawn().unwrap());
    assert!(!status.success(), "exit 0 after the path vanished");
    assert!(
        err.contains("Connection reset by remote host"),
        "{status:?}: {err}"
    );
    assert_cleaned_up(&server, marker);
    still_serves(&s, &server);
}

/// The path goes silent mid-download (the delay line stopped: nothing
/// crosses, nothing says so). With ServerAliveInterval the client gives up
/// with ssh's message and 255; with ClientAliveInterval sluiced ends the
/// connection (its send queue full, its probes unanswered) and reaps every
/// process of it; both within seconds, not TCP's quarter of an hour.
#[test]
fn path_goes_silent_mid_transfer() {
    let line = match wan_util::Line::up(10, "100mbit") {
        Ok(l) => l,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let s = Setup::new("fault-silent");
    let port = free_port();
    let (_server, log) = wan_util::start_sluiced(
        &s,
        &line,
        port,
        "ClientAliveInterval 1\nClientAliveCountMax 3\n",
    );
    let mut c = wan_util::client(
        &s,
        &line,
        false,
        port,
        &["-o", "ServerAliveInterval=1", "-o", "ServerAliveCountMax=3"],
    );
    c.arg("cat /dev/zero")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut out = child.stdout.take().unwrap();
    let counter = std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        let mut n = 0u64;
        while let Ok(k) = out.read(&mut buf) {
            if k == 0 {
                break;
            }
            n += k as u64;
        }
        n
    });
    std::thread::sleep(Duration::from_secs(2));
    line.freeze();
    let frozen = Instant::now();
    let (status, err) = finish(child);
    let took = frozen.elapsed();
    let got = counter.join().unwrap();
    assert!(got > 1 << 20, "only {got} bytes before the freeze");
    assert_eq!(status.code(), Some(255), "{err}");
    assert!(err.contains("not responding"), "{err}");
    assert!(took < Duration::from_secs(20), "gave up after {took:?}");
    // The server side: its alive probes go unanswered; it logs and ends.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("Timeout, client not responding") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "sluiced kept the connection:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
