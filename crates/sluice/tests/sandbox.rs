//! The pre-auth sandbox (server/sandbox.rs) applied in a child process:
//! this test binary runs itself again with SLUICE_SANDBOX_CHILD set; that
//! child applies the sandbox, tries what it must not and must be able to
//! do, reports on stdout and waits; meanwhile this side reads its
//! /proc/PID/status (Seccomp 2, NoNewPrivs 1, not root) and its root
//! directory (the chroot).

use sluice::server::sandbox::{Sandbox, CHROOT_DIR};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};

const CHILD: &str = "SLUICE_SANDBOX_CHILD";

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Writes straight to fd 1: nothing between us and write(2).
fn say(s: &str) {
    // SAFETY: a valid buffer.
    unsafe { libc::write(1, s.as_ptr().cast(), s.len()) };
}

/// The sandboxed side; does nothing unless started by `sandbox_applies`.
#[test]
fn sandboxed_child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let (mut a, mut b) = UnixStream::pair().unwrap();
    // A TCP connection made before the sandbox, as the peer's socket is.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let tcp_fd = std::os::fd::AsRawFd::as_raw_fd(&tcp);
    let sandbox = match Sandbox::prepare(Path::new(CHROOT_DIR)) {
        Ok(s) => s,
        Err(e) => return say(&format!("prepare failed: {e}\n")),
    };
    let applied = match sandbox.apply() {
        Ok(a) => a,
        Err(e) => return say(&format!("apply failed: {e}\n")),
    };
    // From here on: only what the filter allows.
    let mut out = format!(
        "applied: seccomp {} user {}\n",
        applied.seccomp, applied.user
    );
    let open = std::fs::File::open("/etc/passwd").map_err(|e| e.raw_os_error());
    out += &format!("open: {:?}\n", open.map(|_| ()));
    // SAFETY: fork; a child that somehow started leaves at once.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: leaving the forked child.
        unsafe { libc::_exit(0) };
    }
    out += &format!("fork: {pid} {}\n", errno());
    let pair = a.write_all(b"ping").is_ok() && {
        let mut buf = [0u8; 4];
        b.read_exact(&mut buf).is_ok() && &buf == b"ping"
    };
    out += &format!("socketpair: {pair}\n");
    let mut rnd = [0u8; 32];
    // SAFETY: a valid buffer.
    let n = unsafe { libc::getrandom(rnd.as_mut_ptr().cast(), rnd.len(), 0) };
    out += &format!("getrandom: {n}\n");
    let set = |level: i32, name: i32| {
        let one: libc::c_int = 1;
        // SAFETY: setsockopt reads one c_int from `one`.
        let r = unsafe {
            libc::setsockopt(
                tcp_fd,
                level,
                name,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        format!("{r} {}", if r == 0 { 0 } else { errno() })
    };
    out += &format!(
        "quickack: {}\nnodelay: {}\nsndbuf: {}\n",
        set(libc::IPPROTO_TCP, libc::TCP_QUICKACK),
        set(libc::IPPROTO_TCP, libc::TCP_NODELAY),
        set(libc::SOL_SOCKET, libc::SO_SNDBUF)
    );
    // fcntl: F_GETFD only (std's debug builds check a descriptor before
    // closing it); anything else EPERM.
    let fcntl = |cmd: i32, arg: i32| {
        // SAFETY: fcntl with an integer argument on a descriptor we hold.
        let r = unsafe { libc::fcntl(tcp_fd, cmd, arg) };
        format!("{} {}", r.min(0), if r >= 0 { 0 } else { errno() })
    };
    out += &format!(
        "getfd: {}
setfl: {}
",
        fcntl(libc::F_GETFD, 0),
        fcntl(libc::F_SETFL, libc::O_NONBLOCK)
    );
    say(&out);
    say("ready\n");
    let mut buf = [0u8; 1];
    // SAFETY: a valid buffer; blocks until the parent closes our stdin.
    while unsafe { libc::read(0, buf.as_mut_ptr().cast(), 1) } > 0 {}
    // SAFETY: leave without running anything the filter would refuse.
    unsafe { libc::_exit(0) };
}

#[test]
fn sandbox_applies() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipping: the sandbox needs root to apply");
        return;
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "sandboxed_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap());
    let mut report = String::new();
    loop {
        let mut l = String::new();
        if lines.read_line(&mut l).unwrap() == 0 {
            let mut err = String::new();
            let _ = child.stderr.take().unwrap().read_to_string(&mut err);
            panic!("the child ended early: {:?}\n{report}\n{err}", child.wait());
        }
        if l == "ready\n" {
            break;
        }
        report += &l;
    }
    let pid = child.id();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let root = std::fs::read_link(format!("/proc/{pid}/root")).unwrap();
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    drop(child.stdin.take());
    let st = child.wait().unwrap();

    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.split_whitespace().collect::<Vec<_>>())
            .unwrap_or_default()
    };
    assert!(report.contains("applied: seccomp true"), "{report}");
    assert_eq!(field("Seccomp:"), ["2"], "{status}");
    assert_eq!(field("NoNewPrivs:"), ["1"], "{status}");
    let uids = field("Uid:");
    assert_eq!(uids.len(), 4);
    assert!(uids.iter().all(|u| *u != "0"), "still root: {uids:?}");
    assert!(field("Gid:").iter().all(|g| *g != "0"));
    assert_eq!(field("Groups:"), Vec::<&str>::new());
    assert_eq!(root, Path::new(CHROOT_DIR));
    let limit = |name: &str| {
        limits
            .lines()
            .find(|l| l.starts_with(name))
            .map(|l| {
                l.split_whitespace()
                    .skip(name.split(' ').count())
                    .take(2)
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    assert_eq!(limit("Max file size"), ["0", "0"], "{limits}");
    assert_eq!(limit("Max processes"), ["0", "0"], "{limits}");
    // The filter answers open() before any path lookup: EACCES, not ENOENT.
    assert!(
        report.contains(&format!("open: Err(Some({}))", libc::EACCES)),
        "{report}"
    );
    assert!(
        report.contains(&format!("fork: -1 {}", libc::EPERM)),
        "{report}"
    );
    assert!(report.contains("socketpair: true"), "{report}");
    assert!(report.contains("getrandom: 32"), "{report}");
    // setsockopt: only TCP_QUICKACK (the loop's small-read ACKs); others EPERM.
    assert!(report.contains("quickack: 0 0\n"), "{report}");
    let eperm = format!("-1 {}\n", libc::EPERM);
    assert!(report.contains(&format!("nodelay: {eperm}")), "{report}");
    assert!(report.contains(&format!("sndbuf: {eperm}")), "{report}");
    assert!(report.contains("getfd: 0 0\n"), "{report}");
    assert!(report.contains(&format!("setfl: {eperm}")), "{report}");
    assert!(st.success(), "{st:?}\n{report}");
    eprintln!("{report}");
}
