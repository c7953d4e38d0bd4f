//! ssh_config keywords that sluice implements (issue 43's audit), each shown
//! by its effect beside Debian's ssh given the same options against a stock
//! sshd: IPQoS and TCPKeepAlive read back from the client's own socket
//! (pidfd_getfd + getsockopt), VisualHostKey's picture, LocalCommand,
//! KnownHostsCommand and its tokens, StdinNull, SessionType subsystem,
//! NoHostAuthenticationForLocalhost, StreamLocalBindUnlink/Mask; Tag with
//! Match tagged and Match localnetwork (ssh 9.2 has neither: through -G);
//! and what sluice says of a keyword it lacks (refused or warned, with the
//! file and line).

mod common;

use common::*;
use std::os::fd::RawFd;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The client's TCP socket to `port`, taken from process `pid`
/// (pidfd_getfd, as root), once it exists.
fn client_socket(pid: u32, port: u16) -> Option<RawFd> {
    // SAFETY: plain syscalls on values we own; fds are closed by the caller.
    unsafe {
        let pidfd = libc::syscall(libc::SYS_pidfd_open, pid as libc::c_int, 0) as RawFd;
        if pidfd < 0 {
            return None;
        }
        let mut found = None;
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
        for e in fds.flatten() {
            let Ok(n) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let link = std::fs::read_link(e.path()).unwrap_or_default();
            if !link.to_string_lossy().starts_with("socket:") {
                continue;
            }
            let fd = libc::syscall(libc::SYS_pidfd_getfd, pidfd, n, 0) as RawFd;
            if fd < 0 {
                continue;
            }
            let mut sa: libc::sockaddr_storage = std::mem::zeroed();
            let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            let ok = libc::getpeername(
                fd,
                (&mut sa as *mut libc::sockaddr_storage).cast(),
                &mut len,
            ) == 0
                && i32::from(sa.ss_family) == libc::AF_INET
                && u16::from_be((*(&sa as *const _ as *const libc::sockaddr_in)).sin_port) == port;
            if ok {
                found = Some(fd);
                break;
            }
            libc::close(fd);
        }
        libc::close(pidfd);
        found
    }
}

/// A client (ssh or sluice) with `opts` running `cmd` on the server.
fn cl(s: &Setup, srv: &Server, openssh: bool, opts: &[&str], cmd: &[&str]) -> Command {
    cl_at(s, srv, openssh, "ERROR", opts, cmd)
}

/// As common's client, but the test's own options come first (first value
/// wins), so a test can ask for strict host key checking.
fn cl_at(
    s: &Setup,
    srv: &Server,
    openssh: bool,
    level: &str,
    opts: &[&str],
    cmd: &[&str],
) -> Command {
    let mut c = Command::new(if openssh { "ssh" } else { SLUICE });
    c.args(["-F", "/dev/null"])
        .args(opts)
        .args(["-o", "StrictHostKeyChecking=no", "-o", "BatchMode=yes"])
        .arg("-o")
        .arg(format!("LogLevel={level}"))
        .arg("-o")
        .arg(format!(
            "UserKnownHostsFile={}",
            s.dir.path("known_hosts").display()
        ))
        .arg("-i")
        .arg(&s.user_key)
        .args(["-p", &srv.port.to_string(), "127.0.0.1"])
        .args(cmd);
    c
}

fn sockopt(fd: RawFd, level: i32, name: i32) -> i32 {
    let mut v: i32 = -1;
    let mut len = std::mem::size_of::<i32>() as libc::socklen_t;
    // SAFETY: v and len are valid for writes.
    let r = unsafe { libc::getsockopt(fd, level, name, (&mut v as *mut i32).cast(), &mut len) };
    assert_eq!(r, 0, "getsockopt");
    v
}

/// (IP_TOS, SO_KEEPALIVE) of a client running `sleep 3` with `opts`,
/// read once its session is open.
fn marks(s: &Setup, srv: &Server, openssh: bool, opts: &[&str]) -> (i32, i32) {
    let args: Vec<&str> = opts.iter().flat_map(|o| ["-o", *o]).collect();
    let mut c = cl(s, srv, openssh, &args, &["sleep", "3"]);
    let mut child: Child = c
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // ssh sets its mark when the session starts: wait for that.
    std::thread::sleep(Duration::from_millis(1500));
    let fd = client_socket(child.id(), srv.port).expect("the client's socket");
    let v = (
        sockopt(fd, libc::IPPROTO_IP, libc::IP_TOS),
        sockopt(fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE),
    );
    // SAFETY: our duplicate.
    unsafe { libc::close(fd) };
    let _ = child.wait();
    v
}

#[test]
fn ipqos_and_tcpkeepalive_on_the_socket_as_ssh() {
    if missing("ssh") || missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("kwqos");
    let srv = s.start(true, "");
    for opts in [
        vec!["IPQoS=cs3"],
        vec!["IPQoS=af21 af42"],
        vec!["IPQoS=throughput", "TCPKeepAlive=no"],
        vec!["IPQoS=0x20"],
    ] {
        let ssh = marks(&s, &srv, true, &opts);
        let ours = marks(&s, &srv, false, &opts);
        assert_eq!(
            ours, ssh,
            "{opts:?}: sluice (tos, keepalive) {ours:?}, ssh {ssh:?}"
        );
    }
    // The default: no mark for bulk (sluice's choice, sluice_config(5)), keepalive on.
    assert_eq!(marks(&s, &srv, false, &[]), (0, 1));
}

#[test]
fn visual_host_key_draws_what_ssh_draws() {
    if missing("ssh") || missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("kwvis");
    let srv = s.start(true, "");
    // Known first, so both take the "known" path.
    ok(&run(cl(&s, &srv, true, &[], &["true"]), b"", 30), "ssh");
    let pic = |openssh: bool| {
        let out = run(
            cl_at(
                &s,
                &srv,
                openssh,
                "INFO",
                &["-o", "VisualHostKey=yes"],
                &["true"],
            ),
            b"",
            30,
        );
        ok(&out, "client");
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .skip_while(|l| !l.starts_with("Host key fingerprint is"))
            .take(12)
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let ssh = pic(true);
    assert_eq!(ssh.len(), 12, "{ssh:?}");
    assert_eq!(pic(false), ssh);
}

#[test]
fn local_command_runs_with_its_tokens_as_ssh() {
    if missing("ssh") || missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("kwlocal");
    let srv = s.start(true, "");
    for openssh in [true, false] {
        let f = s.dir.path(if openssh { "lc_ssh" } else { "lc_sluice" });
        let lc = format!("LocalCommand=echo %h %p %r %n %T >> {}", f.display());
        let out = run(
            cl(
                &s,
                &srv,
                openssh,
                &["-o", "PermitLocalCommand=yes", "-o", &lc],
                &["true"],
            ),
            b"",
            30,
        );
        ok(&out, "client");
        // Not run without PermitLocalCommand.
        let out = run(cl(&s, &srv, openssh, &["-o", &lc], &["true"]), b"", 30);
        ok(&out, "client");
    }
    let ssh = std::fs::read_to_string(s.dir.path("lc_ssh")).unwrap();
    assert_eq!(ssh.lines().count(), 1, "{ssh}");
    assert_eq!(
        std::fs::read_to_string(s.dir.path("lc_sluice")).unwrap(),
        ssh
    );
}

#[test]
fn known_hosts_command_supplies_the_key_as_ssh() {
    if missing("ssh") || missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("kwkhc");
    let srv = s.start(true, "");
    let pubkey = std::fs::read_to_string(s.dir.path("host_ed25519.pub")).unwrap();
    let lines = s.dir.path("kh_lines");
    std::fs::write(&lines, format!("[127.0.0.1]:{} {pubkey}", srv.port)).unwrap();
    let script = s.dir.path("khc.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$@\" >> \"$LOGFILE\"\ncat {}\n",
            lines.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    for openssh in [true, false] {
        let log = s.dir.path(if openssh { "khc_ssh" } else { "khc_sluice" });
        let mut c = cl(
            &s,
            &srv,
            openssh,
            &[
                "-o",
                "StrictHostKeyChecking=yes",
                "-o",
                "UserKnownHostsFile=/dev/null",
                "-o",
                "HostKeyAlgorithms=ssh-ed25519",
                "-o",
                &format!("KnownHostsCommand={} %H %t %f %u", script.display()),
            ],
            &["echo", "in"],
        );
        c.env("LOGFILE", &log);
        let out = run(c, b"", 30);
        ok(&out, "client with KnownHostsCommand");
        assert_eq!(out.stdout, b"in\n");
    }
    // ssh also runs it to order algorithms (%t empty then, %H the name):
    // compare the runs that name the key.
    let keyed = |f: &str| -> Vec<String> {
        std::fs::read_to_string(s.dir.path(f))
            .unwrap()
            .lines()
            .filter(|l| l.contains("SHA256:"))
            .map(str::to_owned)
            .collect()
    };
    let ssh = keyed("khc_ssh");
    assert!(!ssh.is_empty());
    assert_eq!(keyed("khc_sluice"), ssh);
    // Without it, strict checking refuses both.
    for openssh in [true, false] {
        let out = run(
            cl(
                &s,
                &srv,
                openssh,
                &[
                    "-o",
                    "StrictHostKeyChecking=yes",
                    "-o",
                    "UserKnownHostsFile=/dev/null",
                ],
                &["true"],
            ),
            b"",
            30,
        );
        assert!(!out.status.success());
    }
}

#[test]
fn stdin_null_session_type_and_localhost_as_ssh() {
    if missing("ssh") || missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("kwstdin");
    let srv = s.start(true, "");
    // StdinNull: `cat` sees no input.
    for openssh in [true, false] {
        let out = run(
            cl(&s, &srv, openssh, &["-o", "StdinNull=yes"], &["cat"]),
            b"data\n",
            30,
        );
        ok(&out, "StdinNull");
        assert_eq!(out.stdout, b"", "openssh={openssh}");
    }
    // SessionType subsystem: `sftp` is a subsystem; INIT gets VERSION.
    let init = [0, 0, 0, 5, 1, 0, 0, 0, 3];
    let mut replies = Vec::new();
    for openssh in [true, false] {
        // sftp-server leaves at its input's end, reply or not: keep it
        // open a moment.
        let mut c = cl(
            &s,
            &srv,
            openssh,
            &["-o", "SessionType=subsystem"],
            &["sftp"],
        );
        let mut child = c
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        std::io::Write::write_all(&mut stdin, &init).unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        ok(&out, "SessionType subsystem");
        assert_eq!(
            out.stdout.get(4),
            Some(&2),
            "SSH_FXP_VERSION: {:?}",
            out.stdout
        );
        replies.push(out.stdout);
    }
    assert_eq!(replies[0], replies[1]);
    // NoHostAuthenticationForLocalhost: strict checking, no known hosts, accepted.
    for openssh in [true, false] {
        let out = run(
            cl(
                &s,
                &srv,
                openssh,
                &[
                    "-o",
                    "StrictHostKeyChecking=yes",
                    "-o",
                    "UserKnownHostsFile=/dev/null",
                    "-o",
                    "NoHostAuthenticationForLocalhost=yes",
                ],
                &["echo", "ok"],
            ),
            b"",
            30,
        );
        ok(&out, "NoHostAuthenticationForLocalhost");
        assert_eq!(out.stdout, b"ok\n");
    }
}

#[test]
fn stream_local_bind_unlink_and_mask_as_ssh() {
    if missing("ssh") || missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("kwunix");
    let srv = s.start(true, "");
    for openssh in [true, false] {
        let sock = s.dir.path(if openssh { "ssh.sock" } else { "sluice.sock" });
        // A stale socket file, as a killed forward leaves it.
        drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
        let fwd = format!("{}:127.0.0.1:{}", sock.display(), srv.port);
        // Without StreamLocalBindUnlink the bind fails (ExitOnForwardFailure).
        let out = run(
            cl(
                &s,
                &srv,
                openssh,
                &["-o", "ExitOnForwardFailure=yes", "-L", &fwd],
                &["true"],
            ),
            b"",
            30,
        );
        assert!(
            !out.status.success(),
            "openssh={openssh}: bound over a stale socket"
        );
        let mut c = cl(
            &s,
            &srv,
            openssh,
            &[
                "-o",
                "ExitOnForwardFailure=yes",
                "-o",
                "StreamLocalBindUnlink=yes",
                "-o",
                "StreamLocalBindMask=0111",
                "-L",
                &fwd,
            ],
            &["sleep", "3"],
        );
        let mut child = c
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let mode = loop {
            let fresh = std::fs::metadata(&sock)
                .ok()
                .filter(|m| std::os::unix::fs::MetadataExt::mode(m) & 0o777 != 0o755);
            if let Some(m) = fresh {
                break std::os::unix::fs::MetadataExt::mode(&m) & 0o777;
            }
            assert!(Instant::now() < deadline, "openssh={openssh}: no listener");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(mode, 0o666, "openssh={openssh}");
        let _ = child.kill();
        let _ = child.wait();
    }
}

#[test]
fn tag_and_match_tagged_and_localnetwork() {
    let dir = TempDir::new("kwtag");
    let cfg = dir.path("config");
    std::fs::write(
        &cfg,
        "Match tagged prod\n  Port 2201\nMatch localnetwork 127.0.0.0/8\n  User loopy\nHost *\n  Tag dev\n  Port 2202\n",
    )
    .unwrap();
    let g = |args: &[&str]| {
        let out = Command::new(SLUICE)
            .arg("-G")
            .arg("-F")
            .arg(&cfg)
            .args(args)
            .arg("h")
            .output()
            .unwrap();
        ok(&out, "sluice -G");
        String::from_utf8(out.stdout).unwrap()
    };
    let text = g(&["-P", "prod"]);
    assert!(text.contains("\nport 2201\n"), "{text}");
    assert!(text.contains("\ntag prod\n"), "{text}");
    assert!(text.contains("\nuser loopy\n"), "{text}");
    assert!(g(&[]).contains("\nport 2202\n"));
}

#[test]
fn keywords_sluice_lacks_are_refused_or_said() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("kwlimits");
    let srv = s.start(true, "");
    // Refused before connecting, with ssh's words and the way out.
    let out = run(
        cl(&s, &srv, false, &["-o", "ProxyUseFdpass=yes"], &["true"]),
        b"",
        30,
    );
    assert_eq!(out.status.code(), Some(255));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("command-line: unsupported option \"proxyusefdpass yes\"")
            && err.contains("IgnoreUnknown"),
        "{err}"
    );
    // From a file: the file and line; IgnoreUnknown lets it pass.
    let cfg = s.dir.path("cfg");
    std::fs::write(
        &cfg,
        "Host *\n  VerifyHostKeyDNS yes\n  ProxyUseFdpass yes\n",
    )
    .unwrap();
    let mut c = Command::new(SLUICE);
    c.args(["-F"]).arg(&cfg).args([
        "-o",
        "BatchMode=yes",
        "-p",
        &srv.port.to_string(),
        "127.0.0.1",
        "true",
    ]);
    let out = run(c, b"", 30);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{} line 3: unsupported option", cfg.display())),
        "{err}"
    );
    std::fs::write(&cfg, "IgnoreUnknown proxyusefdpass\nHost *\n  VerifyHostKeyDNS yes\n  ProxyUseFdpass yes\n  GSSAPIAuthentication yes\n").unwrap();
    let mut c = Command::new(SLUICE);
    c.args(["-F"])
        .arg(&cfg)
        .args([
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "BatchMode=yes",
            "-i",
        ])
        .arg(&s.user_key)
        .arg("-o")
        .arg(format!("UserKnownHostsFile={}", s.dir.path("kh").display()))
        .args(["-p", &srv.port.to_string(), "127.0.0.1", "echo", "ok"])
        .env_remove("KRB5CCNAME");
    let out = run(c, b"", 30);
    ok(&out, "IgnoreUnknown");
    assert_eq!(out.stdout, b"ok\n");
    let err = String::from_utf8_lossy(&out.stderr);
    // A warned keyword goes on and says so, with its line; GSSAPI without
    // a Kerberos ticket says nothing, as ssh.
    assert!(
        err.contains(&format!(
            "Warning: {} line 3: unsupported option \"verifyhostkeydns yes\"",
            cfg.display()
        )),
        "{err}"
    );
    assert!(!err.contains("GSSAPI"), "{err}");
}

/// CanonicalizeHostname: `web` becomes `web.corp.test` (a name only this
/// test's /etc/hosts knows, bind-mounted in a mount namespace of its own),
/// and the block for the canonical name applies: the connection reaches the
/// port it names, for ssh and sluice alike; CanonicalizeFallbackLocal no
/// refuses a name no suffix resolves.
#[test]
fn canonicalize_hostname_as_ssh() {
    if missing("ssh") || missing("/usr/sbin/sshd") || missing("unshare") {
        return;
    }
    let s = Setup::new("kwcanon");
    let srv = s.start(true, "");
    let hosts = s.dir.path("hosts");
    let mut text = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
    text.push_str("\n127.0.0.1 web.corp.test web.corp.test.\n");
    std::fs::write(&hosts, text).unwrap();
    let cfg = s.dir.path("canon.cfg");
    std::fs::write(
        &cfg,
        format!(
            "CanonicalizeHostname yes\nCanonicalDomains example.invalid corp.test\n\
             Host web.corp.test\n  Port {}\nMatch canonical host web.corp.test\n  SetEnv CANON=yes\n",
            srv.port
        ),
    )
    .unwrap();
    let kh = s.dir.path("kh_canon");
    for openssh in [true, false] {
        let client = if openssh { "ssh" } else { SLUICE };
        let line = format!(
            "mount --bind {hosts} /etc/hosts && exec {client} -F {cfg} -o BatchMode=yes \
             -o StrictHostKeyChecking=no -o UserKnownHostsFile={kh} -i {key} web echo reached",
            hosts = hosts.display(),
            cfg = cfg.display(),
            kh = kh.display(),
            key = s.user_key.display()
        );
        let mut c = Command::new("unshare");
        c.args(["-m", "sh", "-c", &line]);
        let out = run(c, b"", 30);
        ok(&out, client);
        assert_eq!(out.stdout, b"reached\n", "{client}");
    }
    // No suffix resolves and no fallback: refused before connecting.
    std::fs::write(
        &cfg,
        "CanonicalizeHostname yes\nCanonicalDomains example.invalid\nCanonicalizeFallbackLocal no\n",
    )
    .unwrap();
    for openssh in [true, false] {
        let mut c = Command::new(if openssh { "ssh" } else { SLUICE });
        c.arg("-F")
            .arg(&cfg)
            .args(["-o", "BatchMode=yes", "nosuchname", "true"]);
        let out = run(c, b"", 30);
        assert_eq!(out.status.code(), Some(255));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("Could not resolve host \"nosuchname\""),
            "{err}"
        );
    }
}

/// CheckHostIP: the address is learned beside the name, and a known
/// address with another key is warned of, as ssh does. ssh never stores a
/// loopback address, so the server listens on 198.18.0.1 (on lo, in a
/// network namespace of the test's own (`unshare -n -m`),
/// named `server.test` by an /etc/hosts bind-mounted there.
#[test]
fn check_host_ip_as_ssh() {
    if missing("ssh") || missing("/usr/sbin/sshd") || missing("unshare") || missing("ip") {
        return;
    }
    let s = Setup::new("kwcheckip");
    let d = s.dir.0.display().to_string();
    let port = 2222;
    let cfg = s.config(port, "ListenAddress 198.18.0.1\nUsePAM no\n");
    let mut hosts = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
    hosts.push_str("\n198.18.0.1 server.test\n");
    std::fs::write(s.dir.path("hosts"), hosts).unwrap();
    let other = std::fs::read_to_string(s.dir.path("id_ed25519.pub")).unwrap();
    let other = other
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    // Per client: first login (name and address added), the address line
    // dropped (learned again), then the address given another key (warned).
    let script = format!(
        r#"set -e
ip link set lo up
ip addr add 198.18.0.1/32 dev lo
mount --bind {d}/hosts /etc/hosts
mkdir -p /run/sshd
/usr/sbin/sshd -f {cfg} -E {d}/sshd.log
for i in $(seq 50); do (exec 3<>/dev/tcp/198.18.0.1/{port}) 2>/dev/null && break; sleep 0.1; done
for c in ssh {sluice}; do
  n=$(basename $c); kh={d}/kh_$n
  cl() {{ $c -F /dev/null -o CheckHostIP=yes -o StrictHostKeyChecking=accept-new -o BatchMode=yes \
       -o LogLevel=INFO -o UserKnownHostsFile=$kh -i {d}/id_ed25519 -p {port} server.test true; }}
  echo "== $n first"; cl 2>&1; cp $kh $kh.first
  echo "[server.test]:{port} $(cut -d' ' -f1,2 {d}/host_ed25519.pub)" > $kh
  echo "== $n forgotten"; cl 2>&1
  echo "[server.test]:{port} $(cut -d' ' -f1,2 {d}/host_ed25519.pub)" > $kh
  echo "[198.18.0.1]:{port} {other}" >> $kh
  echo "== $n other"; cl 2>&1 || echo "exit $?"
  echo "== $n end"
done
kill $(cat {d}/sshd.pid) 2>/dev/null || true
"#,
        cfg = cfg.display(),
        sluice = SLUICE,
    );
    let script = script.replace("PidFile none", "");
    std::fs::write(
        &cfg,
        std::fs::read_to_string(&cfg)
            .unwrap()
            .replace("PidFile none", &format!("PidFile {d}/sshd.pid")),
    )
    .unwrap();
    let mut c = Command::new("unshare");
    c.args(["-n", "-m", "bash", "-c", &script]);
    let out = run(c, b"", 120);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    ok(&out, &text);
    let part = |n: &str, step: &str| -> String {
        let start = format!("== {n} {step}\n");
        let i = text
            .find(&start)
            .unwrap_or_else(|| panic!("{start}: {text}"))
            + start.len();
        let rest = &text[i..];
        rest[..rest.find("== ").unwrap_or(rest.len())].to_owned()
    };
    let sluice = std::path::Path::new(SLUICE)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    for n in ["ssh", sluice.as_str()] {
        let first = part(n, "first");
        assert!(
            first.contains(&format!(
                "Permanently added '[server.test]:{port},[198.18.0.1]:{port}'"
            )),
            "{n}: {first}"
        );
        let again = part(n, "forgotten");
        assert!(
            again.contains("host key for IP address '[198.18.0.1]:2222'"),
            "{n}: {again}"
        );
        let other = part(n, "other");
        assert!(
            other.contains("differs from the key for the IP address '[198.18.0.1]:2222'"),
            "{n}: {other}"
        );
        // accept-new is strict about a changed key: refused.
        assert!(
            other.contains("Exiting, you have requested strict checking.")
                && other.contains("exit 255"),
            "{n}: {other}"
        );
    }
    let fields = |n: &str| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_to_string(s.dir.path(&format!("kh_{n}.first")))
            .unwrap_or_default()
            .lines()
            .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
            .collect();
        v.sort();
        v
    };
    assert_eq!(fields(&sluice), fields("ssh"));
}

/// AddKeysToAgent: the key file read to log in is given to the agent (a
/// lifetime with a time value), for ssh and sluice alike.
#[test]
fn add_keys_to_agent_as_ssh() {
    if missing("ssh") || missing("/usr/sbin/sshd") || missing("ssh-agent") {
        return;
    }
    let s = Setup::new("kwaddkeys");
    let srv = s.start(true, "");
    let listed = |sock: &std::path::Path| -> String {
        let out = Command::new("ssh-add")
            .arg("-l")
            .env("SSH_AUTH_SOCK", sock)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    for openssh in [true, false] {
        for (value, lasts) in [("yes", true), ("2s", false)] {
            let sock = s.dir.path(&format!("agent-{openssh}-{value}"));
            let mut agent = Command::new("ssh-agent")
                .args(["-D", "-a"])
                .arg(&sock)
                .stdout(Stdio::null())
                .spawn()
                .unwrap();
            let deadline = Instant::now() + Duration::from_secs(10);
            while !sock.exists() {
                assert!(Instant::now() < deadline, "ssh-agent did not start");
                std::thread::sleep(Duration::from_millis(20));
            }
            assert!(listed(&sock).trim().is_empty() || listed(&sock).contains("no identities"));
            let mut c = cl(
                &s,
                &srv,
                openssh,
                &["-o", &format!("AddKeysToAgent={value}")],
                &["true"],
            );
            c.env("SSH_AUTH_SOCK", &sock);
            ok(&run(c, b"", 30), "login");
            let fp = Command::new("ssh-keygen")
                .arg("-lf")
                .arg(&s.user_key)
                .output()
                .unwrap();
            let fp = String::from_utf8_lossy(&fp.stdout)
                .split_whitespace()
                .nth(1)
                .unwrap()
                .to_owned();
            assert!(
                listed(&sock).contains(&fp),
                "openssh={openssh} {value}: {}",
                listed(&sock)
            );
            if !lasts {
                std::thread::sleep(Duration::from_secs(3));
                assert!(
                    !listed(&sock).contains(&fp),
                    "openssh={openssh}: lifetime not kept"
                );
            }
            let _ = agent.kill();
            let _ = agent.wait();
        }
    }
}
