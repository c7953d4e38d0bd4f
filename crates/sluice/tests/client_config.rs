//! The client's configuration against Debian's OpenSSH: `sluice -G` compared
//! field by field with `ssh -G` on the same files; known_hosts written hashed
//! and read back by ssh-keygen and ssh; a changed host key refused;
//! ProxyCommand to sluiced and sshd; ServerAliveInterval against a stopped
//! server; ConnectTimeout during the banner; the default cipher order
//! chosen from the CPU.

mod common;

use common::*;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Keys sluice prints differently by design, with the reason.
const DIFFERENT_BY_DESIGN: &[(&str, &str)] = &[
    (
        "ciphers",
        "sluice offers its own algorithm lists (those it implements), AES-GCM first on CPUs with AES hardware",
    ),
    ("macs", "sluice offers its own algorithm lists"),
    (
        "kexalgorithms",
        "sluice offers its own algorithm lists (mlkem768x25519 first)",
    ),
    (
        "hostkeyalgorithms",
        "sluice offers its own algorithm lists (no certificates, no sk keys)",
    ),
    (
        "hostbasedacceptedalgorithms",
        "no host-based authentication; sluice prints its signature list",
    ),
    (
        "casignaturealgorithms",
        "no certificates; sluice prints its signature list",
    ),
    (
        "pubkeyacceptedalgorithms",
        "sluice offers its own algorithm lists",
    ),
    ("cryptothreads", "sluice-only keyword"),
    ("streams", "sluice-only keyword"),
    ("keeppartial", "sluice-only keyword"),
    ("tcprcvbuf", "sluice-only keyword"),
    ("tcpsndbuf", "sluice-only keyword"),
    ("remotercvbuf", "sluice-only keyword"),
    ("remotesndbuf", "sluice-only keyword"),
    ("channelwindow", "sluice-only keyword"),
    ("channelwindowmax", "sluice-only keyword"),
    ("noneenabled", "sluice-only keyword (HPN-SSH's NONE cipher)"),
    ("noneswitch", "sluice-only keyword"),
    ("nonemacenabled", "sluice-only keyword"),
    ("kexguess", "sluice-only keyword"),
    ("compressionalgorithms", "sluice-only keyword"),
    ("compressionlevel", "sluice's meaning (ssh ignores the SSH-1 keyword)"),
    (
        "enablehwcompression",
        "AIX OpenSSH's keyword; Debian's ssh does not know it",
    ),
    ("hwcompressionlibrary", "sluice-only keyword"),
    ("metrics", "HPN-SSH's keyword; Debian's ssh does not know it"),
    ("metricsinterval", "HPN-SSH's keyword"),
    ("metricspath", "HPN-SSH's keyword"),
];

/// Defaults that differ by design: (keyword, sluice's, ssh's).
const DEFAULTS_BY_DESIGN: &[(&str, &str, &str)] = &[
    // README "Compression": sluice decides by itself unless told yes/no.
    ("compression", "auto", "no"),
    // sluice_config(5) IPQoS: no mark for bulk (Debian's ssh: lowdelay throughput).
    ("ipqos", "af21 none", "lowdelay throughput"),
];

fn dump(bin: &str, args: &[&str]) -> Vec<(String, String)> {
    let out = Command::new(bin)
        .arg("-G")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    ok(&out, &format!("{bin} -G {args:?}"));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(k, _)| !DIFFERENT_BY_DESIGN.iter().any(|(d, _)| d == k))
        .map(|(k, v)| {
            let v = DEFAULTS_BY_DESIGN
                .iter()
                .find(|(dk, ours, _)| *dk == k && *ours == v && bin == SLUICE)
                .map_or(v, |(_, _, theirs)| theirs);
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

#[test]
fn dash_g_matches_ssh_field_by_field() {
    if missing("ssh") {
        return;
    }
    let dir = TempDir::new("dashg");
    let d = dir.0.display();
    std::fs::create_dir_all(dir.path("inc")).unwrap();
    std::fs::write(
        dir.path("inc/a.conf"),
        "Host db2\n  Port 5555\n  AddressFamily inet\nHost *.example.com\n  CheckHostIP yes\n",
    )
    .unwrap();
    std::fs::write(
        dir.path("inc/b.conf"),
        "Match user dbadmin\n  ForwardAgent yes\n",
    )
    .unwrap();
    let cfg = dir.path("config");
    std::fs::write(
        &cfg,
        format!(
            "Host web\n  HostName %h.example.com\n  User alice\n  Port 2222\n  IdentityFile ~/.ssh/id_%h_%r\n  IdentityFile {d}/k2\n\
             \x20 ControlPath /tmp/cm-%C-%r@%h:%p\n  UserKnownHostsFile {d}/kh_%h %d/kh2_%u\n  StrictHostKeyChecking accept-new\n\
             \x20 HashKnownHosts yes\n  ServerAliveInterval 1m\n  ServerAliveCountMax 5\n  ConnectTimeout 7\n  ConnectionAttempts 2\n\
             \x20 ProxyCommand ssh -W %h:%p gw\n  RemoteCommand echo %n %h %p %r %u\n  IdentityAgent {d}/agent.%h\n\
             Match originalhost db* !user nobody\n  User dbadmin\n  IdentitiesOnly yes\n  ProxyJump bob@gw1:2200,gw2\n\
             Match exec \"test %n = special\"\n  Port 4444\n  StrictHostKeyChecking yes\n  BatchMode yes\n\
             Match host *.example.com final\n  RequestTTY force\n\
             Include {d}/inc/*.conf\n\
             Host *\n  Compression yes\n  SendEnv LANG LC_*\n  SetEnv FOO=bar\n  LogLevel VERBOSE\n  RekeyLimit 1G 1h\n"
        ),
    )
    .unwrap();
    let cfg = cfg.display().to_string();
    let cases: Vec<Vec<&str>> = vec![
        vec!["-F", &cfg, "web"],
        vec!["-F", &cfg, "db1"],
        vec!["-F", &cfg, "db2"],
        vec!["-F", &cfg, "special"],
        vec![
            "-F",
            &cfg,
            "-p",
            "2022",
            "-l",
            "carol",
            "-o",
            "ConnectTimeout=3",
            "web",
        ],
        vec!["-F", &cfg, "-J", "x@y:1", "-o", "User=dave", "erin@db1"],
        vec!["-F", &cfg, "-o", "ProxyCommand=none", "10.1.2.3"],
        vec!["-F", "/dev/null", "plain"],
    ];
    for args in &cases {
        let want = dump("ssh", args);
        let got = dump(SLUICE, args);
        for (i, w) in want.iter().enumerate() {
            assert_eq!(
                got.get(i),
                Some(w),
                "{args:?}: line {i} differs\nssh:    {want:?}\nsluice: {got:?}"
            );
        }
        assert_eq!(
            got.len(),
            want.len(),
            "{args:?}: extra lines {:?}",
            got.get(want.len()..)
        );
    }
}

/// Tokens, `~` and `${VAR}` in the keywords that take them (ControlPath,
/// IdentityAgent, ForwardAgent, UserKnownHostsFile, the Unix socket paths
/// of LocalForward/RemoteForward) print as ssh -G prints them; user and host
/// names with shell syntax or control characters on the command line are
/// refused with ssh's words, and allowed from a config file.
#[test]
fn tokens_environment_and_names_as_ssh() {
    if missing("ssh") {
        return;
    }
    std::env::set_var("SLUICE_T_VAR", "val%h");
    let dir = TempDir::new("dashg_tokens");
    let cfg = dir.path("config");
    std::fs::write(
        &cfg,
        "Host tok\n  HostName 127.0.0.1\n  User remuser\n  HostKeyAlias alias\n\
         \x20 ControlPath ~/c-${SLUICE_T_VAR}-%C\n  IdentityAgent ${SLUICE_T_VAR}/%u/%i\n\
         \x20 ForwardAgent ~/fa/%n-%k-%p-${SLUICE_T_VAR}\n\
         \x20 UserKnownHostsFile /kh/${SLUICE_T_VAR}/%d %%\n\
         \x20 LocalForward /l/%r-${SLUICE_T_VAR} /r/%L\n  RemoteForward /rf/%h 127.0.0.1:80\n  RemoteForward 8\n\
         \x20 LocalForward localhost:5000 [::1]:22\n  RemoteForward *:7 /t\n\
         Host tilde\n  ControlPath ~\n  IdentityAgent $SLUICE_T_VAR\n  ForwardAgent ~/.ssh\n\
         Host cfguser\n  User a;b\n  HostName a;b\n",
    )
    .unwrap();
    let cfg = cfg.display().to_string();
    for args in [
        vec!["-F", &cfg, "tok"],
        vec!["-F", &cfg, "tilde"],
        vec!["-F", &cfg, "cfguser"],
    ] {
        // ssh 9.2 also prints a LocalForward to a Unix socket as a
        // `dynamicforward` line; sluice does not copy that slip.
        let mut want = dump("ssh", &args);
        want.retain(|(k, _)| k != "dynamicforward");
        assert_eq!(dump(SLUICE, &args), want, "{args:?}");
    }
    let bad = [
        vec!["-l", "${FOO}", "h"],
        vec!["-l", "a\x07b", "h"],
        vec!["-o", "User=a;b", "h"],
        vec!["a -b@h"],
        vec!["-l", "-x", "h"],
        vec!["h;x"],
        vec!["--", "-h"],
        vec!["a,b"],
    ];
    for args in bad {
        let mut argv = vec!["-F", "/dev/null", "-G"];
        argv.extend(&args);
        let (sc, _, se) = run_bin(SLUICE, &argv);
        let (oc, _, oe) = run_bin("ssh", &argv);
        assert_eq!((sc, se.trim()), (oc, oe.trim()), "{args:?}");
        assert_eq!(sc, Some(255), "{args:?}");
    }
}

/// A sluice command line with the host key policy given.
fn sluice_cmd(s: &Setup, port: u16, kh: &std::path::Path, opts: &[&str]) -> Command {
    let mut c = Command::new(SLUICE);
    c.args(["-F", "/dev/null", "-o", "BatchMode=yes"])
        .args(opts.iter().flat_map(|o| ["-o", o]))
        .arg("-o")
        .arg(format!("UserKnownHostsFile={}", kh.display()))
        .arg("-i")
        .arg(&s.user_key)
        .args(["-p", &port.to_string(), "127.0.0.1"]);
    c
}

#[test]
fn accept_new_writes_hashed_entry_that_openssh_reads() {
    if missing("ssh") || missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("khash");
    let srv = s.start(false, "");
    let kh = s.dir.path("kh");
    let mut c = sluice_cmd(
        &s,
        srv.port,
        &kh,
        &["StrictHostKeyChecking=accept-new", "HashKnownHosts=yes"],
    );
    c.args(["echo", "hi"]);
    let out = run(c, b"", 30);
    ok(&out, "sluice accept-new");
    assert_eq!(out.stdout, b"hi\n");
    let name = format!("[127.0.0.1]:{}", srv.port);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "Warning: Permanently added '{name}' (ED25519) to the list of known hosts."
        )),
        "{err}"
    );
    let text = std::fs::read_to_string(&kh).unwrap();
    assert!(
        text.starts_with("|1|") && !text.contains("127.0.0.1"),
        "{text}"
    );
    let f = Command::new("ssh-keygen")
        .args(["-F", &name, "-f"])
        .arg(&kh)
        .output()
        .unwrap();
    ok(&f, "ssh-keygen -F");
    assert!(String::from_utf8_lossy(&f.stdout).contains(&format!("Host {name} found")));
    // Debian's ssh trusts the entry with strict checking...
    let mut ssh = Command::new("ssh");
    ssh.args([
        "-F",
        "/dev/null",
        "-o",
        "BatchMode=yes",
        "-o",
        "StrictHostKeyChecking=yes",
    ])
    .arg("-o")
    .arg(format!("UserKnownHostsFile={}", kh.display()))
    .arg("-i")
    .arg(&s.user_key)
    .args(["-p", &srv.port.to_string(), "127.0.0.1", "echo", "ok"]);
    let out = run(ssh, b"", 30);
    ok(&out, "ssh with sluice's known_hosts");
    assert_eq!(out.stdout, b"ok\n");
    // ...and so does sluice, silently, on the next run.
    let mut c = sluice_cmd(&s, srv.port, &kh, &["StrictHostKeyChecking=yes"]);
    c.arg("true");
    let out = run(c, b"", 30);
    ok(&out, "sluice strict");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn changed_host_key_is_refused() {
    let s = Setup::new("khchg");
    let srv = s.start(false, "");
    let kh = s.dir.path("kh");
    keygen(&s.dir.path("other"), "ed25519");
    let other = std::fs::read_to_string(s.dir.path("other.pub")).unwrap();
    let mut f = other.split_whitespace();
    let line = format!(
        "@cert-authority * {} {}\n@revoked [127.0.0.2]:1 {} {}\n[127.0.0.1]:{} {} {}\n",
        "ssh-ed25519",
        f.clone().nth(1).unwrap(),
        "ssh-ed25519",
        f.clone().nth(1).unwrap(),
        srv.port,
        f.next().unwrap(),
        f.next().unwrap()
    );
    std::fs::write(&kh, line).unwrap();
    for policy in ["accept-new", "no"] {
        let mut c = sluice_cmd(
            &s,
            srv.port,
            &kh,
            &[&format!("StrictHostKeyChecking={policy}")],
        );
        c.args(["echo", "should-not-run"]);
        let out = run(c, b"", 30);
        let err = String::from_utf8_lossy(&out.stderr);
        if policy == "no" {
            // ssh goes on with `no` (authentication by key still works).
            assert!(
                err.contains("REMOTE HOST IDENTIFICATION HAS CHANGED"),
                "{err}"
            );
            continue;
        }
        assert_eq!(out.status.code(), Some(255), "{err}");
        assert!(
            err.contains("REMOTE HOST IDENTIFICATION HAS CHANGED"),
            "{err}"
        );
        assert!(
            err.contains(&format!("Offending ED25519 key in {}:3", kh.display())),
            "{err}"
        );
        assert!(err.contains("Host key verification failed."), "{err}");
        assert!(out.stdout.is_empty());
    }
}

/// ProxyCommand gets two pipes, as from ssh: Debian's `sshd -i` as the
/// command reports SSH_CONNECTION "UNKNOWN 65535 UNKNOWN 65535" (on a
/// socketpair it said "UNKNOWN 65535  65535"); the data arrives whole.
#[test]
fn proxy_command_runs_on_two_pipes() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let _ = std::fs::create_dir_all("/run/sshd");
    let s = Setup::new("proxypipes");
    let cfg = s.config(free_port(), "UsePAM no");
    let data = random_data(3 << 20, 11);
    let proxy = format!("ProxyCommand=/usr/sbin/sshd -i -f {}", cfg.display());
    let mut c = s.client_to(false, 22, "ERROR", &["-o", &proxy]);
    c.arg("echo \"$SSH_CONNECTION\"; sha256sum");
    let out = run(c, &data, 60);
    ok(&out, "sluice through ProxyCommand sshd -i");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut l = text.lines();
    assert_eq!(l.next(), Some("UNKNOWN 65535 UNKNOWN 65535"), "{text}");
    assert_eq!(
        l.next().and_then(|h| h.split_whitespace().next()),
        Some(sha256(&data).as_str())
    );
}

#[test]
fn proxy_command_to_sluiced_and_sshd() {
    if missing("ssh") || missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("proxycmd");
    let jump = s.start(true, "");
    let data = random_data(3 << 20, 7);
    for target_openssh in [false, true] {
        let target = s.start(target_openssh, "");
        let proxy = format!(
            "ProxyCommand=ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -i {} -p {} -W %h:%p 127.0.0.1",
            s.user_key.display(),
            jump.port
        );
        let mut c = s.client(false, &target, &["-o", &proxy]);
        c.arg("sha256sum");
        let out = run(c, &data, 60);
        ok(&out, "sluice through ProxyCommand");
        let got = String::from_utf8_lossy(&out.stdout);
        assert_eq!(got.split_whitespace().next(), Some(sha256(&data).as_str()));
        // The data went through the jump server.
        assert!(jump.log_text().contains("direct-tcpip") || jump.log_text().contains("Accepted"));
    }
    // ProxyCommand none means direct; a failing proxy is exit 255.
    let target = s.start(false, "");
    let mut c = s.client(false, &target, &["-o", "ProxyCommand=none"]);
    c.args(["echo", "direct"]);
    let out = run(c, b"", 30);
    ok(&out, "ProxyCommand none");
    assert_eq!(out.stdout, b"direct\n");
    // RemoteCommand runs when no command is given, tokens expanded.
    let c = s.client(false, &target, &["-o", "RemoteCommand=echo rc %n %p"]);
    let out = run(c, b"", 30);
    ok(&out, "RemoteCommand");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("rc 127.0.0.1 {}\n", target.port)
    );
    let mut c = s.client(false, &target, &["-o", "ProxyCommand=exit 3"]);
    c.arg("true");
    let out = run(c, b"", 30);
    assert_eq!(out.status.code(), Some(255));
}

/// All processes below `pid`.
fn descendants(pid: u32) -> Vec<u32> {
    let mut parent = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let Some(after) = stat.rsplit_once(')').map(|x| x.1) else {
            continue;
        };
        if let Some(pp) = after
            .split_whitespace()
            .nth(1)
            .and_then(|x| x.parse::<u32>().ok())
        {
            parent.push((p, pp));
        }
    }
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let cur = out[i];
        out.extend(parent.iter().filter(|(_, pp)| *pp == cur).map(|(p, _)| *p));
        i += 1;
    }
    out
}

fn signal_all(pids: &[u32], sig: i32) {
    for &p in pids {
        // SAFETY: kill(2) takes no memory; the pids are children of ours.
        unsafe {
            libc::kill(p as i32, sig);
        }
    }
}

#[test]
fn server_alive_detects_a_stopped_server() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    server_alive(true);
}

#[test]
fn server_alive_detects_a_stopped_sluiced() {
    server_alive(false);
}

fn server_alive(openssh: bool) {
    let s = Setup::new("alive");
    let srv = s.start(openssh, "");
    let mut c = s.client(
        false,
        &srv,
        &["-o", "ServerAliveInterval=1", "-o", "ServerAliveCountMax=2"],
    );
    c.arg("echo started; exec sleep 60");
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "started\n");
    // Keepalives are answered while the server runs: longer than the
    // (CountMax + 1) * Interval it takes to give up, and still connected.
    std::thread::sleep(Duration::from_millis(3500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "gave up on a live server"
    );
    let pids = descendants(srv.child.id());
    signal_all(&pids, libc::SIGSTOP);
    let stopped = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if stopped.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            signal_all(&pids, libc::SIGKILL);
            panic!("no timeout within 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = stopped.elapsed();
    signal_all(&pids, libc::SIGKILL);
    let mut err = String::new();
    let _ = std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err);
    assert_eq!(status.code(), Some(255), "{err}");
    assert!(
        err.contains("Timeout, server 127.0.0.1 not responding."),
        "{err}"
    );
    // Three intervals without input (two unanswered keepalives, then give up).
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(8),
        "{took:?}"
    );
}

#[test]
fn connect_timeout_covers_the_banner() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let holder = std::thread::spawn(move || {
        let c = l.accept();
        std::thread::sleep(Duration::from_secs(6));
        drop(c);
    });
    let start = Instant::now();
    let mut c = Command::new(SLUICE);
    c.args([
        "-F",
        "/dev/null",
        "-o",
        "ConnectTimeout=1",
        "-o",
        "BatchMode=yes",
        "-p",
        &port.to_string(),
        "127.0.0.1",
        "true",
    ]);
    let out = run(c, b"", 20);
    assert_eq!(out.status.code(), Some(255));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Connection timed out during banner exchange"),
        "{err}"
    );
    assert!(start.elapsed() < Duration::from_secs(5));
    let _ = holder.join();
}

/// ProxyJump runs this program again as `sluice -W '[%h]:%p'` toward the
/// jump host, with -l, -p, -J for earlier hops, -F and -v passed on (the
/// end-to-end run needs -W: see proxy_jump_end_to_end below).
#[test]
fn proxy_jump_builds_the_sluice_w_command() {
    let dir = TempDir::new("jumpcmd");
    let cfg = dir.path("cfg");
    std::fs::write(
        &cfg,
        "Host target\n  HostName 127.0.0.1\n  Port 2222\n  BatchMode yes\n",
    )
    .unwrap();
    let dead = free_port();
    let mut c = Command::new(SLUICE);
    c.arg("-F").arg(&cfg).args([
        "-v",
        "-J",
        &format!("first,alice@127.0.0.1:{dead}"),
        "target",
        "true",
    ]);
    let out = run(c, b"", 30);
    assert_eq!(out.status.code(), Some(255));
    let err = String::from_utf8_lossy(&out.stderr);
    let me = std::fs::canonicalize(SLUICE).unwrap();
    let want = format!(
        "Executing proxy command: exec {} -l alice -p {dead} -J first -F {} -v -W '[127.0.0.1]:2222' 127.0.0.1",
        me.display(),
        cfg.display()
    );
    assert!(err.contains(&want), "want {want}\nin {err}");
}

/// StrictHostKeyChecking ask: the question on the terminal (a pty from
/// script(1)), a wrong answer asked again, "yes" adds the key.
#[test]
fn ask_prompts_on_the_terminal() {
    if missing("script") {
        return;
    }
    let s = Setup::new("ask");
    let srv = s.start(false, "");
    let kh = s.dir.path("kh");
    let cmd = format!(
        "{SLUICE} -F /dev/null -o StrictHostKeyChecking=ask -o UserKnownHostsFile={} -i {} -p {} 127.0.0.1 echo answered",
        kh.display(),
        s.user_key.display(),
        srv.port
    );
    let mut c = Command::new("script");
    c.args(["-qec", &cmd, "/dev/null"]);
    let out = run(c, b"maybe\nyes\n", 30);
    let text = String::from_utf8_lossy(&out.stdout);
    ok(&out, &text);
    let name = format!("[127.0.0.1]:{}", srv.port);
    assert!(
        text.contains(&format!(
            "The authenticity of host '{name} ({name})' can't be established."
        )),
        "{text}"
    );
    assert!(
        text.contains("Are you sure you want to continue connecting (yes/no/[fingerprint])? "),
        "{text}"
    );
    assert!(
        text.contains("Please type 'yes', 'no' or the fingerprint: "),
        "{text}"
    );
    assert!(text.contains("answered"), "{text}");
    assert!(std::fs::read_to_string(&kh).unwrap().starts_with(&name));
}

/// ConnectionAttempts: tried again once a second, then ssh's message.
#[test]
fn connection_attempts_retry_then_fail() {
    let port = free_port();
    let start = Instant::now();
    let mut c = Command::new(SLUICE);
    c.args([
        "-F",
        "/dev/null",
        "-o",
        "ConnectionAttempts=3",
        "-p",
        &port.to_string(),
        "127.0.0.1",
        "true",
    ]);
    let out = run(c, b"", 20);
    assert_eq!(out.status.code(), Some(255));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "connect to host 127.0.0.1 port {port}: Connection refused"
        )),
        "{err}"
    );
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(10),
        "{took:?}"
    );
}

/// ProxyJump end to end: sluice -J through Debian's sshd (direct-tcpip) to
/// sluiced, data hash-checked. The proxy is `sluice -W`, so this needs
/// stdio forwarding; the options reach the proxy through -F, as with ssh.
#[test]
fn proxy_jump_end_to_end() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("jump");
    let jump = s.start(true, "");
    let target = s.start(false, "");
    let cfg = s.dir.path("jump_config");
    std::fs::write(
        &cfg,
        format!(
            "Host *\n  IdentityFile {}\n  BatchMode yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile {}\n  LogLevel ERROR\n",
            s.user_key.display(),
            s.dir.path("known_hosts").display()
        ),
    )
    .unwrap();
    let data = random_data(2 << 20, 11);
    for hops in [
        format!("127.0.0.1:{}", jump.port),
        format!("127.0.0.1:{p},127.0.0.1:{p}", p = jump.port),
    ] {
        let mut c = Command::new(SLUICE);
        c.arg("-F").arg(&cfg).args([
            "-J",
            &hops,
            "-p",
            &target.port.to_string(),
            "127.0.0.1",
            "sha256sum",
        ]);
        let out = run(c, &data, 60);
        ok(&out, &format!("sluice -J {hops}"));
        let got = String::from_utf8_lossy(&out.stdout);
        assert_eq!(got.split_whitespace().next(), Some(sha256(&data).as_str()));
    }
}

const AES_FIRST: &str = "aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com,aes128-ctr,aes192-ctr,aes256-ctr";
const CHACHA_FIRST: &str = "chacha20-poly1305@openssh.com,aes128-gcm@openssh.com,aes256-gcm@openssh.com,aes128-ctr,aes192-ctr,aes256-ctr";

/// `sluice` with SLUICE_CPU_AES set (the CPU's answer overridden).
fn sluice_aes(aes: &str, args: &[&str]) -> String {
    let out = Command::new(SLUICE)
        .env("SLUICE_CPU_AES", aes)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    ok(&out, &format!("sluice {args:?}"));
    String::from_utf8(out.stdout).unwrap()
}

/// The ciphers line of `sluice -G`.
fn g_ciphers(aes: &str, args: &[&str]) -> String {
    let mut all = vec!["-G", "-F", "/dev/null"];
    all.extend_from_slice(args);
    all.push("h");
    let out = sluice_aes(aes, &all);
    let line = out.lines().find_map(|l| l.strip_prefix("ciphers "));
    line.unwrap_or_default().to_owned()
}

#[test]
fn cipher_order_follows_the_cpu_and_yields_to_settings() {
    for (aes, want) in [("1", AES_FIRST), ("0", CHACHA_FIRST)] {
        let q = sluice_aes(aes, &["-Q", "cipher"]);
        assert_eq!(q.trim_end().replace('\n', ","), want, "-Q cipher");
        assert_eq!(g_ciphers(aes, &[]), want, "-G");
        // An explicit list wins, in ssh_config as with -c.
        assert_eq!(
            g_ciphers(aes, &["-c", "aes256-ctr,aes128-ctr"]),
            "aes256-ctr,aes128-ctr"
        );
        let dir = TempDir::new("cipherorder");
        std::fs::write(dir.path("config"), "Ciphers aes192-ctr\n").unwrap();
        let cfg = dir.path("config").display().to_string();
        let out = sluice_aes(aes, &["-G", "-F", &cfg, "h"]);
        assert!(out.contains("\nciphers aes192-ctr\n"), "{out}");
    }
    // The +/-/^ forms apply to the default in force.
    assert_eq!(
        g_ciphers("1", &["-o", "Ciphers=-aes*-ctr"]),
        "aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com"
    );
    assert_eq!(
        g_ciphers("1", &["-o", "Ciphers=^chacha20-poly1305@openssh.com"]),
        CHACHA_FIRST
    );
    assert_eq!(
        g_ciphers(
            "0",
            &[
                "-o",
                "Ciphers=^aes128-gcm@openssh.com,aes256-gcm@openssh.com"
            ]
        ),
        AES_FIRST
    );
    // Without the override the CPU decides; x86_64 machines that run this
    // suite have AES-NI, so AES-GCM leads there.
    let own = String::from_utf8(
        Command::new(SLUICE)
            .env_remove("SLUICE_CPU_AES")
            .args(["-Q", "cipher"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags = |f: &str| cpuinfo.split_whitespace().any(|w| w == f);
    if cfg!(target_arch = "x86_64") {
        let hw = flags("aes") && flags("pclmulqdq") || flags("vaes") && flags("vpclmulqdq");
        assert_eq!(
            own.trim_end().replace('\n', ","),
            if hw { AES_FIRST } else { CHACHA_FIRST }
        );
    }
}

/// The order decides the cipher a sluice client gets, and `-v` says which
/// order and why.
#[test]
fn default_cipher_negotiated_with_sluiced() {
    let s = Setup::new("cipherneg");
    let server = s.start(false, "");
    for (aes, cipher, why) in [
        (
            "1",
            "aes128-gcm@openssh.com",
            "cipher order: AES-GCM first (SLUICE_CPU_AES=1)",
        ),
        (
            "0",
            "chacha20-poly1305@openssh.com",
            "cipher order: chacha20-poly1305 first (SLUICE_CPU_AES=0)",
        ),
    ] {
        let mut c = s.client_at(false, &server, "DEBUG1", &[]);
        c.env("SLUICE_CPU_AES", aes).arg("true");
        let out = run(c, b"", 30);
        ok(&out, "sluice");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("debug1: {why}\n")), "{err}");
        assert!(
            err.contains(&format!(
                "kex: client->server cipher: {cipher} MAC: <implicit>"
            )),
            "{err}"
        );
    }
}

/// At VERBOSE (`-v`), ssh ends with "Transferred: sent N, received M bytes,
/// in S seconds" and "Bytes per second: ..."; sluice prints the same two
/// lines, with the bytes that crossed the socket (at least the payload).
#[test]
fn verbose_ends_with_the_bytes_transferred_as_ssh() {
    if missing("ssh") {
        return;
    }
    let s = Setup::new("transferred");
    let server = s.start(false, "");
    let data = random_data(4 << 20, 5);
    for openssh in [true, false] {
        let mut c = s.client_at(openssh, &server, "VERBOSE", &[]);
        c.arg("cat >/dev/null; head -c 1000000 /dev/zero");
        let out = run(c, &data, 60);
        ok(&out, "upload at VERBOSE");
        assert_eq!(out.stdout.len(), 1_000_000);
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err
            .lines()
            .find(|l| l.starts_with("Transferred: sent "))
            .unwrap_or_else(|| panic!("openssh {openssh}: no Transferred line: {err}"));
        let n: Vec<u64> = line
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|w| w.parse().ok())
            .collect();
        assert!(
            line.ends_with(" seconds") && line.contains(" bytes, in "),
            "{line}"
        );
        assert!(n[0] >= data.len() as u64 && n[1] >= 1_000_000, "{line}");
        assert!(
            err.lines()
                .any(|l| l.starts_with("Bytes per second: sent ") && l.contains(", received ")),
            "{err}"
        );
    }
}

/// `-i` naming a file that is not there: ssh warns and goes on with the
/// other identities; so does sluice (here the config's IdentityFile).
#[test]
fn a_missing_identity_file_is_warned_about_and_skipped() {
    if missing("ssh") {
        return;
    }
    let s = Setup::new("noidfile");
    let server = s.start(false, "");
    for openssh in [true, false] {
        let mut c = s.client(openssh, &server, &["-i", "/nonexistent/nosuchkey"]);
        c.arg("echo in");
        let out = run(c, b"", 30);
        ok(&out, "login with the other identity");
        assert_eq!(out.stdout, b"in\n");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(
                "Warning: Identity file /nonexistent/nosuchkey not accessible: No such file or directory."
            ),
            "openssh {openssh}: {err}"
        );
    }
}

/// Runs `bin args` with no stdin: (exit code, stdout, stderr).
fn run_bin(bin: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `--help` of each program and subcommand: the usage (the flags the lib
/// test cli::manpages checks against the parser and the man page) and the
/// page's name on stdout, exit 0; a bad flag: the usage on stderr, exit
/// 255 for sluice as ssh, 1 for sluiced, sluice-sftp and sluice-scp as
/// sshd, sftp and scp.
#[test]
fn help_on_stdout_and_bad_flags_exit_as_openssh() {
    use sluice::cli::{scp_main, sftp_main, ssh_args, sshd_args, xfer_args};
    let sftp = env!("CARGO_BIN_EXE_sluice-sftp");
    let scp = env!("CARGO_BIN_EXE_sluice-scp");
    let helps = [
        (
            SLUICE,
            vec!["--help"],
            ssh_args::USAGE,
            ssh_args::SEE_PAGE.to_owned(),
        ),
        (
            SLUICE,
            vec!["-v", "--help"],
            ssh_args::USAGE,
            ssh_args::SEE_PAGE.to_owned(),
        ),
        (
            SLUICE,
            vec!["demo", "--help"],
            ssh_args::DEMO_USAGE,
            ssh_args::SEE_PAGE.to_owned(),
        ),
        (
            SLUICE,
            vec!["bench-crypto", "--help"],
            ssh_args::BENCH_USAGE,
            ssh_args::SEE_PAGE.to_owned(),
        ),
        (
            SLUICED,
            vec!["--help"],
            sshd_args::USAGE,
            sshd_args::SEE_PAGE.to_owned(),
        ),
        (
            sftp,
            vec!["--help"],
            sftp_main::USAGE,
            xfer_args::see_page("sluice-sftp"),
        ),
        (
            scp,
            vec!["--help"],
            scp_main::USAGE,
            xfer_args::see_page("sluice-scp"),
        ),
    ];
    for (bin, args, usage, see) in helps {
        let (code, out, err) = run_bin(bin, &args);
        assert_eq!(code, Some(0), "{bin} {args:?}: {err}");
        assert_eq!(out, format!("{usage}\n{see}\n"), "{bin} {args:?}");
        assert_eq!(err, "", "{bin} {args:?}");
    }
    let bad = [
        (
            SLUICE,
            vec!["-Z", "host"],
            255,
            "unknown option -- Z",
            ssh_args::USAGE,
        ),
        (SLUICE, vec![], 255, "usage: sluice", ssh_args::USAGE),
        (
            SLUICE,
            vec!["demo", "--bogus"],
            255,
            "unknown argument '--bogus'",
            ssh_args::DEMO_USAGE,
        ),
        (
            SLUICE,
            vec!["bench-crypto", "--bogus"],
            255,
            "unknown argument '--bogus'",
            ssh_args::BENCH_USAGE,
        ),
        (
            SLUICED,
            vec!["-Z"],
            1,
            "unknown option -- Z",
            sshd_args::USAGE,
        ),
        (
            sftp,
            vec!["-Z", "host"],
            1,
            "unknown option -- Z",
            sftp_main::USAGE,
        ),
        (sftp, vec![], 1, "usage: sluice-sftp", sftp_main::USAGE),
        (
            scp,
            vec!["-Z", "a", "b"],
            1,
            "unknown option -- Z",
            scp_main::USAGE,
        ),
        (scp, vec!["a"], 1, "usage: sluice-scp", scp_main::USAGE),
    ];
    for (bin, args, want, msg, usage) in bad {
        let (code, out, err) = run_bin(bin, &args);
        assert_eq!(code, Some(want), "{bin} {args:?}: {err}");
        assert_eq!(out, "", "{bin} {args:?}");
        assert!(
            err.contains(msg) && err.contains(usage),
            "{bin} {args:?}: {err}"
        );
    }
}

/// Output cut short by the reader (`| head -1`) on every program's usage,
/// help, error and dump paths: the rest is lost quietly, never a panic
/// (exit 101), and the exit status is the one the path has anyway.
#[test]
fn a_closed_stdout_or_stderr_never_panics() {
    let sftp = env!("CARGO_BIN_EXE_sluice-sftp");
    let scp = env!("CARGO_BIN_EXE_sluice-scp");
    let s = Setup::new("closedout");
    let cfg = s.config(free_port(), "");
    let cfg = cfg.to_str().unwrap();
    let cases: [(&str, &[&str], i32); 10] = [
        (SLUICE, &["-Z"], 255),
        (SLUICE, &["--help"], 0),
        (SLUICE, &["-G", "example.org"], 0),
        (SLUICE, &["-Q", "kex"], 0),
        (SLUICED, &["-Z"], 1),
        (SLUICED, &["--help"], 0),
        (SLUICED, &["-T", "-f", cfg], 0),
        (
            SLUICED,
            &["-T", "-f", "/dev/null", "-o", "HostKey=/nonexistent"],
            1,
        ),
        (sftp, &["-Z"], 1),
        (scp, &["-Z"], 1),
    ];
    for (bin, args, want) in cases {
        for _ in 0..5 {
            // A reader that takes one line and leaves: later writes fail
            // with EPIPE (Rust ignores SIGPIPE).
            let out = Command::new("bash")
                .arg("-c")
                .arg("\"$0\" \"$@\" 2>&1 | head -c 1 >/dev/null; echo \"${PIPESTATUS[0]}\"")
                .arg(bin)
                .args(args)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            let status = String::from_utf8_lossy(&out.stdout);
            assert_eq!(
                status.trim(),
                want.to_string(),
                "{bin} {args:?} (101: a panic)"
            );
        }
        // The status, with the whole output read.
        let out = Command::new(bin)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(want), "{bin} {args:?}");
    }
}

/// -b / BindAddress and -B / BindInterface choose where the connection
/// leaves from, as ssh's do (the server sees it in $SSH_CLIENT); an address
/// that is not ours fails as ssh fails, exit 255.
#[test]
fn bind_address_and_interface_as_ssh() {
    let s = Setup::new("bindaddr");
    let server = s.start(false, "");
    let seen = |openssh: bool, extra: &[&str]| {
        let mut c = s.client(openssh, &server, extra);
        c.arg("echo $SSH_CLIENT");
        let out = run(c, b"", 30);
        let text = String::from_utf8_lossy(&out.stdout);
        (
            out.status.code(),
            text.split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned(),
        )
    };
    for openssh in [true, false] {
        assert_eq!(
            seen(openssh, &["-b", "127.0.0.2"]),
            (Some(0), "127.0.0.2".into())
        );
        assert_eq!(
            seen(openssh, &["-o", "BindAddress=127.0.0.3"]),
            (Some(0), "127.0.0.3".into())
        );
        assert_eq!(seen(openssh, &["-B", "lo"]), (Some(0), "127.0.0.1".into()));
        assert_eq!(seen(openssh, &["-b", "10.255.255.254"]).0, Some(255));
    }
}
