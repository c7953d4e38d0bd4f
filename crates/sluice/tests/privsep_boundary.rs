//! The privilege boundary seen from the other side (issue 40): what a
//! user's command holds (descriptors: exactly 0, 1 and 2, whatever
//! sluiced inherited; no way into the post-auth process), and what the
//! memory of the pre-auth child and of the post-auth process holds (no
//! host private key, of any type). Needs root (throwaway users, reading
//! other processes' memory).

mod common;
mod privsep_util;

use common::*;
use privsep_util::*;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// sluiced started as a supervisor might leave it: descriptors 10 and 251
/// open on the file `leak` (not close-on-exec), as if inherited from a
/// shell.
fn start_with_leaks(s: &Setup, extra: &str, leak: &std::path::Path) -> Server {
    let port = free_port();
    let cfg = s.config(port, &format!("PerSourcePenalties no\n{extra}"));
    let log_path = s.dir.path(&format!("server_{port}.log"));
    let log = std::fs::File::create(&log_path).unwrap();
    let mut c = Command::new(SLUICED);
    c.args(["-D", "-e", "-f"])
        .arg(&cfg)
        .stdin(Stdio::null())
        .stderr(log);
    std::fs::write(leak, b"leaked").unwrap();
    let path = std::ffi::CString::new(leak.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: dup2 and open only, between fork and exec.
    unsafe {
        c.pre_exec(move || {
            let fd = libc::open(path.as_ptr(), libc::O_RDONLY);
            if fd < 0 || libc::dup2(fd, 10) < 0 || libc::dup2(fd, 251) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::close(fd);
            Ok(())
        });
    }
    let child = c.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "sluiced did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    Server {
        child,
        port,
        log: log_path,
    }
}

fn fds_of(pid: u32) -> Vec<i32> {
    let mut v: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

/// Runs `c` (a client whose remote side prints `pid=` its pid and then execs
/// `sleep`), reads that pid from its output and returns the descriptors
/// the remote program holds.
fn remote_fds(mut c: Command, input: &[u8], what: &str) -> Vec<i32> {
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child: Child = c.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input).unwrap();
        // A pty session keeps reading; the others get EOF.
        if input.is_empty() {
            drop(stdin);
        } else {
            std::mem::forget(stdin);
        }
    }
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // "pid=N" (a pty also echoes the typed line, with "pid=$$").
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let Some((_, rest)) = line.split_once("pid=") else {
                continue;
            };
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(pid) = digits.parse::<u32>() {
                let _ = tx.send(pid);
                return;
            }
        }
    });
    let pid = match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(p) => p,
        Err(_) => {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!(
                "{what}: no pid; stderr {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
    };
    // The program has exec'd sleep once its fds settle (the shell's own
    // descriptors are gone at exec); wait until /proc shows `sleep`.
    wait_for(&format!("{what}: the remote sleep"), || {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
        (comm.trim() == "sleep").then_some(())
    });
    let fds = fds_of(pid);
    let _ = child.kill();
    let _ = child.wait();
    fds
}

const PROBE: &str = "echo pid=$$; exec sleep 20";

#[test]
fn a_users_command_holds_only_its_stdio() {
    if skip() {
        return;
    }
    let u = TestUser::named("slfd");
    let forced = TestUser::named("slff");
    let s = Setup::new("privsep-fds");
    let extra = format!(
        // Quoted twice: the line's words lose one level of quotes (sshd's
        // argv_split), the user's shell the other.
        "Subsystem fdcheck /bin/sh -c \"'{PROBE}'\"\nMatch User {}\n  ForceCommand {PROBE}\n",
        forced.name
    );
    let leak = s.dir.path("leaked-descriptor");
    let server = start_with_leaks(&s, &extra, &leak);
    // The listener itself dropped what it inherited (its own descriptors
    // may take the same numbers: what they name counts).
    let pid = server.child.id();
    let kept: Vec<i32> = fds_of(pid)
        .into_iter()
        .filter(|fd| std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).is_ok_and(|t| t == leak))
        .collect();
    assert!(
        kept.is_empty(),
        "the listener kept inherited descriptors {kept:?}"
    );
    let ssh = |extra: &[&str], remote: Option<&str>| {
        let mut c = s.client(true, &server, extra);
        c.args(remote);
        c
    };
    let cases: Vec<(&str, Command, &[u8])> = vec![
        ("exec", ssh(&["-l", &u.name], Some(PROBE)), b""),
        (
            "subsystem",
            ssh(&["-l", &u.name, "-s"], Some("fdcheck")),
            b"",
        ),
        (
            "shell with a pty",
            ssh(&["-tt", "-l", &u.name], None),
            b"echo pid=$$; exec sleep 20\n",
        ),
        ("forced command", ssh(&["-l", &forced.name], Some("x")), b""),
    ];
    for (what, c, input) in cases {
        let fds = remote_fds(c, input, what);
        assert_eq!(fds, vec![0, 1, 2], "{what}: descriptors {fds:?}");
    }
}

#[test]
fn a_users_command_cannot_reach_into_the_post_auth_process() {
    if skip() {
        return;
    }
    let u = TestUser::named("slpp");
    let s = Setup::new("privsep-ptrace");
    let server = s.start(false, "");
    // $PPID of the command is the post-auth process (the user's own uid).
    let script = "test \"$(stat -c %u /proc/$PPID)\" = \"$(id -u)\" && echo same-uid; \
                  ls /proc/$PPID/fd >/dev/null 2>&1 && echo fd-reached || echo fd-denied; \
                  head -c1 /proc/$PPID/mem >/dev/null 2>&1 && echo mem-reached || echo mem-denied; \
                  cat /proc/$PPID/environ >/dev/null 2>&1 && echo env-reached || echo env-denied";
    let mut c = s.client(true, &server, &["-l", &u.name]);
    c.arg(script);
    let out = run(c, b"", 30);
    ok(&out, "probe");
    let text = String::from_utf8_lossy(&out.stdout);
    for want in ["fd-denied", "mem-denied", "env-denied"] {
        assert!(text.contains(want), "want {want}: {text}");
    }
}

// ---- memory scans -------------------------------------------------------

/// The secret parts of a host private key, in the byte orders memory may
/// hold them (big-endian as in the file; little-endian as a bignum's
/// words), and a run of the file's own text.
fn secrets(path: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let text = std::fs::read_to_string(path).unwrap();
    let key = ssh_key::PrivateKey::from_openssh(&text).unwrap();
    let mut v: Vec<(String, Vec<u8>)> = Vec::new();
    let mut both = |name: &str, be: &[u8]| {
        let be = be
            .iter()
            .skip_while(|b| **b == 0)
            .copied()
            .collect::<Vec<u8>>();
        let mut le = be.clone();
        le.reverse();
        v.push((format!("{name} (big-endian)"), be));
        v.push((format!("{name} (little-endian)"), le));
    };
    match key.key_data() {
        ssh_key::private::KeypairData::Ed25519(k) => both("ed25519 seed", &k.private.to_bytes()),
        ssh_key::private::KeypairData::Ecdsa(k) => both("ecdsa scalar", k.private_key_bytes()),
        ssh_key::private::KeypairData::Rsa(k) => {
            both("rsa d", k.private.d.as_bytes());
            both("rsa p", k.private.p.as_bytes());
            both("rsa q", k.private.q.as_bytes());
        }
        other => panic!("unexpected key type {other:?}"),
    }
    // 48 characters from the middle of the file's base64 body.
    let body: String = text.lines().filter(|l| !l.starts_with("-----")).collect();
    let mid = body.len() / 2;
    v.push((
        "the key file's text".into(),
        body.as_bytes()[mid..mid + 48].to_vec(),
    ));
    v
}

/// Every readable mapping of `pid`'s memory.
fn memory(pid: u32) -> Vec<u8> {
    use std::io::{Read, Seek, SeekFrom};
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let mut mem = std::fs::File::open(format!("/proc/{pid}/mem")).unwrap();
    let mut all = Vec::new();
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let (Some(range), Some(perms)) = (f.next(), f.next()) else {
            continue;
        };
        if !perms.starts_with('r') || line.ends_with("[vvar]") || line.ends_with("[vsyscall]") {
            continue;
        }
        let (a, b) = range.split_once('-').unwrap();
        let (a, b) = (
            u64::from_str_radix(a, 16).unwrap(),
            u64::from_str_radix(b, 16).unwrap(),
        );
        let mut buf = vec![0u8; (b - a) as usize];
        if mem.seek(SeekFrom::Start(a)).is_ok() {
            if let Ok(n) = mem.read(&mut buf) {
                all.extend_from_slice(&buf[..n]);
            }
        }
    }
    all
}

fn found(hay: &[u8], needle: &[u8]) -> bool {
    let Some((&first, _)) = needle.split_first() else {
        return false;
    };
    let mut i = 0;
    while let Some(p) = hay[i..].iter().position(|b| *b == first) {
        let at = i + p;
        if hay[at..].starts_with(needle) {
            return true;
        }
        i = at + 1;
    }
    false
}

/// What of `keys`' secrets `pid`'s memory holds.
fn held(pid: u32, keys: &[std::path::PathBuf]) -> Vec<String> {
    let mem = memory(pid);
    assert!(
        mem.len() > 100_000,
        "read only {} bytes of {pid}",
        mem.len()
    );
    keys.iter()
        .flat_map(|k| secrets(k))
        .filter(|(_, s)| found(&mem, s))
        .map(|(n, _)| n)
        .collect()
}

fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

fn ppid(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// A client process killed when dropped (also when an assertion fails).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A paramiko client that finishes the key exchange, fails `none`
/// authentication and then waits, so the pre-auth child is mid-login.
fn stalled_client(port: u16) -> Killed {
    let script = format!(
        "import paramiko, socket, sys, time\n\
         s = socket.create_connection(('127.0.0.1', {port}))\n\
         t = paramiko.Transport(s)\n\
         t.start_client(timeout=20)\n\
         try:\n    t.auth_none('nobody-here')\n\
         except Exception:\n    pass\n\
         print('ready', flush=True)\n\
         time.sleep(30)\n"
    );
    let mut c = Command::new("python3");
    c.arg("-c")
        .arg(script)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready", "paramiko client did not get past KEX");
    Killed(child)
}

fn python_paramiko() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import paramiko"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").is_err(),
            "python3 paramiko is required under CI"
        );
        eprintln!("skipping: python3 paramiko not installed");
    }
    ok
}

#[test]
fn no_host_private_key_in_the_pre_auth_child_or_the_post_auth_process() {
    if skip() || !python_paramiko() {
        return;
    }
    let u = TestUser::named("slmm");
    let s = Setup::new("privsep-memscan");
    let key = |t: &str| s.dir.path(&format!("host_{t}"));
    let sets: Vec<Vec<std::path::PathBuf>> = vec![
        vec![key("ed25519")],
        vec![key("ecdsa")],
        vec![key("rsa")],
        vec![key("ed25519"), key("ecdsa"), key("rsa")],
    ];
    for keys in sets {
        let names: Vec<String> = keys.iter().map(|k| k.display().to_string()).collect();
        let port = free_port();
        // Only these host keys (the harness's config names all three).
        let text = format!(
            "ListenAddress 127.0.0.1\nPort {port}\n{}\nAuthorizedKeysFile {}\nStrictModes no\n\
             PidFile none\nPerSourcePenalties no\nLogLevel VERBOSE\n",
            names
                .iter()
                .map(|n| format!("HostKey {n}\n"))
                .collect::<String>(),
            s.dir.path("authorized_keys").display()
        );
        let cfg = s.dir.path(&format!("memscan_{port}"));
        std::fs::write(&cfg, text).unwrap();
        let log = std::fs::File::create(s.dir.path(&format!("server_{port}.log"))).unwrap();
        let child = Command::new(SLUICED)
            .args(["-D", "-e", "-f"])
            .arg(&cfg)
            .stdin(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let server = Server {
            child,
            port,
            log: s.dir.path(&format!("server_{port}.log")),
        };
        // Listening, seen in the log rather than by connecting: a probe
        // connection's pre-auth child could be taken for the stalled one's.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !server.log_text().contains("Server listening on") {
            assert!(Instant::now() < deadline, "sluiced did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        let listener = server.child.id();
        // Mid-login: the pre-auth child, and (the control) its monitor.
        let client = stalled_client(port);
        let child = wait_for("the pre-auth child", || {
            sandboxed_children(listener).into_iter().next()
        });
        let monitor = ppid(child).unwrap();
        let in_monitor = held(monitor, &keys);
        assert!(
            !in_monitor.is_empty(),
            "the scan finds nothing even in the monitor ({names:?}): it would prove nothing"
        );
        let in_child = held(child, &keys);
        assert!(
            in_child.is_empty(),
            "the pre-auth child {child} holds {in_child:?} of {names:?}"
        );
        drop(client);

        // Logged in: the post-auth process runs as the user.
        let mut c = s.client(false, &server, &["-l", &u.name]);
        c.arg("echo up; exec sleep 20")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut session = Killed(c.spawn().unwrap());
        let mut line = String::new();
        BufReader::new(session.0.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "up");
        let post = wait_for("the post-auth process", || {
            descendants(listener).into_iter().find(|p| {
                comm(*p) == "sluiced" && uid_and_seccomp(*p).is_some_and(|(uid, _)| uid == u.uid)
            })
        });
        let in_post = held(post, &keys);
        assert!(
            in_post.is_empty(),
            "the post-auth process {post} holds {in_post:?} of {names:?}"
        );
        drop(session);
    }
}
