//! Client behaviour OpenSSH's regression suite (bench/openssh-regress, sluice
//! as ssh) relies on, checked here against the real binaries: `-E log_file`
//! for sluice and sluiced, HostKeyAlias in known_hosts, the banner under -q.

mod common;

use common::*;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// A sluice (or ssh) command line with no ssh_config, BatchMode and the test key.
fn bare(openssh: bool, s: &Setup, port: u16, opts: &[&str]) -> Command {
    let mut c = Command::new(if openssh { "ssh" } else { SLUICE });
    c.args(["-F", "/dev/null", "-o", "BatchMode=yes"])
        .args(opts.iter().flat_map(|o| ["-o", o]))
        .arg("-i")
        .arg(&s.user_key)
        .args(["-p", &port.to_string()]);
    c
}

#[test]
fn dash_e_appends_log_and_errors_to_the_file() {
    let s = Setup::new("elog");
    let srv = s.start(false, "");
    let log = s.dir.path("client.log");
    std::fs::write(&log, "an earlier line\n").unwrap();
    let mut c = s.client_at(false, &srv, "DEBUG1", &["-E", log.to_str().unwrap()]);
    c.args(["echo", "hi"]);
    let out = run(c, b"", 30);
    ok(&out, "sluice -E");
    assert_eq!(out.stdout, b"hi\n");
    // Nothing on stderr: the debug lines are in the file, after what was there.
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    let got = std::fs::read_to_string(&log).unwrap();
    assert!(got.starts_with("an earlier line\ndebug1: "), "{got}");
    assert!(got.contains("debug1: Authentication succeeded"), "{got}");
    assert!(!got.contains('\r'), "{got:?}");

    // The reason a run failed goes to the file too (as ssh's fatal()), and
    // a new file is created mode 0600.
    let log2 = s.dir.path("new.log");
    let mut c = bare(
        false,
        &s,
        srv.port,
        &["StrictHostKeyChecking=yes", "UserKnownHostsFile=/dev/null"],
    );
    c.arg("-E").arg(&log2).args(["127.0.0.1", "true"]);
    let out = run(c, b"", 30);
    assert_eq!(out.status.code(), Some(255));
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    let got = std::fs::read_to_string(&log2).unwrap();
    assert!(
        got.ends_with("you have requested strict checking.\nHost key verification failed.\n"),
        "{got}"
    );
    let mode = std::fs::metadata(&log2).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    // A file that cannot be opened: ssh's message and exit code 1.
    for openssh in [false, true] {
        if openssh && missing("ssh") {
            continue;
        }
        let mut c = bare(openssh, &s, srv.port, &[]);
        c.args(["-E", "/nonexistent/dir/log", "127.0.0.1", "true"]);
        let out = run(c, b"", 30);
        assert_eq!(out.status.code(), Some(1), "openssh={openssh}");
        assert_eq!(
            text(&out.stderr),
            "Couldn't open logfile /nonexistent/dir/log: No such file or directory\n",
            "openssh={openssh}"
        );
    }
}

#[test]
fn sluiced_dash_e_logs_every_process_to_the_file() {
    let s = Setup::new("sdelog");
    let port = free_port();
    let cfg = s.config(port, "");
    let log = s.dir.path("server.log");
    let stderr = std::fs::File::create(s.dir.path("stderr")).unwrap();
    let mut child = Command::new(SLUICED)
        .arg("-D")
        .arg(format!("-E{}", log.display()))
        .arg("-f")
        .arg(&cfg)
        .stdin(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "sluiced did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut c = bare(
        false,
        &s,
        port,
        &["StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null"],
    );
    c.args(["-q", "127.0.0.1", "echo", "hi"]);
    let out = run(c, b"", 30);
    ok(&out, "sluice to sluiced -E");
    assert_eq!(out.stdout, b"hi\n");
    // The listener, each connection's process and the privsep monitor
    // (which logs for the pre-auth process) all write to the file.
    // The post-auth process's last line, after the monitor's "Accepted".
    let ended =
        |t: &str| t.contains("Connection closed by user ") || t.contains("Disconnected from user ");
    let deadline = Instant::now() + Duration::from_secs(10);
    let got = loop {
        let got = std::fs::read_to_string(&log).unwrap_or_default();
        if ended(&got) || Instant::now() > deadline {
            break got;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(ended(&got), "{got}");
    for want in [
        format!("Server listening on 127.0.0.1 port {port}."),
        "Accepted publickey for ".into(),
    ] {
        assert!(got.contains(&want), "{want:?} not in {got}");
    }
    let err = std::fs::read_to_string(s.dir.path("stderr")).unwrap();
    assert!(err.is_empty(), "{err}");
}

#[test]
fn host_key_alias_names_the_known_hosts_entry() {
    let s = Setup::new("hkalias");
    let srv = s.start(false, "");
    let kh = s.dir.path("kh");
    let mut lines = String::new();
    for t in ["ed25519", "ecdsa", "rsa"] {
        let public = std::fs::read_to_string(s.dir.path(&format!("host_{t}.pub"))).unwrap();
        lines.push_str(&format!("myalias {public}"));
    }
    std::fs::write(&kh, lines).unwrap();
    let khopt = format!("UserKnownHostsFile={}", kh.display());
    let strict = ["StrictHostKeyChecking=yes", &khopt];

    // Found under the alias, not under [127.0.0.1]:port.
    let mut c = bare(false, &s, srv.port, &strict);
    c.args([
        "-v",
        "-o",
        "HostKeyAlias=myalias",
        "127.0.0.1",
        "echo",
        "ok",
    ]);
    let out = run(c, b"", 30);
    ok(&out, "sluice with HostKeyAlias");
    assert_eq!(out.stdout, b"ok\n");
    let err = text(&out.stderr);
    assert!(err.contains("debug1: using hostkeyalias: myalias"), "{err}");
    assert!(err.contains("Host 'myalias' is known and matches"), "{err}");
    let mut c = bare(false, &s, srv.port, &strict);
    c.args(["127.0.0.1", "true"]);
    let out = run(c, b"", 30);
    assert_eq!(out.status.code(), Some(255), "{}", text(&out.stderr));

    // From ssh_config, as the regress suite sets it.
    let cfg = s.dir.path("ssh_config");
    std::fs::write(&cfg, "Host *\n\tHostKeyAlias myalias\n").unwrap();
    let mut c = Command::new(SLUICE);
    c.arg("-F")
        .arg(&cfg)
        .args(["-o", "BatchMode=yes", "-o", strict[0], "-o", &khopt, "-i"])
        .arg(&s.user_key)
        .args(["-p", &srv.port.to_string(), "127.0.0.1", "true"]);
    ok(&run(c, b"", 30), "sluice with HostKeyAlias in ssh_config");

    // A new key is stored under the alias (no port), and ssh reads it back.
    let kh2 = s.dir.path("kh2");
    let kh2opt = format!("UserKnownHostsFile={}", kh2.display());
    let mut c = bare(
        false,
        &s,
        srv.port,
        &["StrictHostKeyChecking=accept-new", &kh2opt],
    );
    c.args(["-o", "HostKeyAlias=newalias", "127.0.0.1", "true"]);
    let out = run(c, b"", 30);
    ok(&out, "sluice accept-new with HostKeyAlias");
    assert!(
        text(&out.stderr).contains("Permanently added 'newalias' (ED25519)"),
        "{}",
        text(&out.stderr)
    );
    let stored = std::fs::read_to_string(&kh2).unwrap();
    assert!(stored.starts_with("newalias ssh-ed25519 "), "{stored}");
    if !missing("ssh") {
        let mut c = bare(
            true,
            &s,
            srv.port,
            &[
                "StrictHostKeyChecking=yes",
                &kh2opt,
                "HostKeyAlias=newalias",
            ],
        );
        c.args(["127.0.0.1", "true"]);
        ok(&run(c, b"", 30), "ssh with sluice's alias entry");
    }

    // -G shows it, as ssh -G does.
    for bin in [SLUICE, "ssh"] {
        if bin == "ssh" && missing("ssh") {
            continue;
        }
        let out = Command::new(bin)
            .args(["-F", "/dev/null", "-G", "-o", "HostKeyAlias=x", "h"])
            .output()
            .unwrap();
        ok(&out, bin);
        assert!(
            text(&out.stdout).lines().any(|l| l == "hostkeyalias x"),
            "{bin}"
        );
    }
}

#[test]
fn banner_is_shown_unless_quiet() {
    let s = Setup::new("banner");
    let banner = s.dir.path("banner");
    std::fs::write(&banner, "Authorized use only\n").unwrap();
    let srv = s.start(false, &format!("Banner {}", banner.display()));
    for (flags, shown) in [
        (&[][..], true),
        (&["-q"][..], false),
        (&["-o", "LogLevel=ERROR"][..], false),
    ] {
        let mut c = bare(
            false,
            &s,
            srv.port,
            &["StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null"],
        );
        c.args(flags).args(["127.0.0.1", "true"]);
        let out = run(c, b"", 30);
        ok(&out, "sluice");
        let err = text(&out.stderr);
        assert_eq!(
            err.contains("Authorized use only"),
            shown,
            "{flags:?}: {err}"
        );
    }
}

#[test]
fn set_env_first_value_of_a_name_wins() {
    let s = Setup::new("setenv");
    let srv = s.start(false, "AcceptEnv _SLUICE_T_*");
    let mut c = s.client(
        false,
        &srv,
        &["-o", "SetEnv=_SLUICE_T_A=1 _SLUICE_T_A=11 _SLUICE_T_B=2"],
    );
    c.arg("echo $_SLUICE_T_A $_SLUICE_T_B");
    let out = run(c, b"", 30);
    ok(&out, "sluice SetEnv");
    assert_eq!(text(&out.stdout), "1 2\n");
    // -G as ssh's: the first SetEnv line only, each name once.
    let cfg = s.dir.path("cfg");
    std::fs::write(&cfg, "Host *\n\tSetEnv C=3\n").unwrap();
    let g = |bin: &str| {
        let out = Command::new(bin)
            .arg("-F")
            .arg(&cfg)
            .args(["-G", "-o", "SetEnv=A=1 A=11 B=2", "h"])
            .output()
            .unwrap();
        text(&out.stdout)
            .lines()
            .filter(|l| l.starts_with("setenv "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(g(SLUICE), "setenv A=1\nsetenv B=2");
    if !missing("ssh") {
        assert_eq!(g(SLUICE), g("ssh"));
    }
}

#[test]
fn options_after_the_destination() {
    let s = Setup::new("optsafter");
    let srv = s.start(false, "");
    // `ssh host -p PORT cmd -x`: options until the first word that is not one.
    let mut c = bare(
        false,
        &s,
        srv.port,
        &["StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null"],
    );
    c.args(["127.0.0.1", "-q", "-l", &user(), "echo", "-n", "x"]);
    let out = run(c, b"", 30);
    ok(&out, "sluice host -q -l user echo -n x");
    assert_eq!(out.stdout, b"x");
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    for args in [
        &["h", "-p", "1234", "-l", "bob", "ls", "-p", "1"][..],
        &["h", "--", "-p", "1234"][..],
        &["--", "h", "-p", "1234"][..],
    ] {
        let g = |bin: &str| {
            let out = Command::new(bin)
                .args(["-F", "/dev/null", "-G"])
                .args(args)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            ok(&out, bin);
            text(&out.stdout)
                .lines()
                .filter(|l| l.starts_with("port ") || l.starts_with("user "))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        let want = if args[2] == "1234" && args[0] == "h" {
            vec!["user bob".to_owned(), "port 1234".to_owned()]
        } else {
            vec![format!("user {}", user()), "port 22".to_owned()]
        };
        let mut got = g(SLUICE);
        got.sort();
        let mut want = want;
        want.sort();
        assert_eq!(got, want, "{args:?}");
        if !missing("ssh") {
            let mut ssh = g("ssh");
            ssh.sort();
            assert_eq!(got, ssh, "{args:?}");
        }
    }
}

/// A relay between the client and sluiced that, once the session is up,
/// rewrites the packet length of one server message (the ETM MAC leaves
/// lengths in clear): `add` is added to it. Everything else passes.
fn corrupting_relay(server: u16, add: u32) -> u16 {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let (client, _) = l.accept().unwrap();
        let up = TcpStream::connect(("127.0.0.1", server)).unwrap();
        let (mut c2, mut u2) = (client.try_clone().unwrap(), up.try_clone().unwrap());
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut c2, &mut u2);
        });
        let (mut up, mut client) = (up, client);
        let mut buf = Vec::new();
        let mut chunk = [0u8; 65536];
        // The identification line, then packets: plain (4 + length) up to
        // and with NEWKEYS, then 4 + length + 32 (hmac-sha2-256-etm).
        let mut ident = true;
        let mut encrypted = false;
        let mut sent_encrypted = 0;
        let mut quiet_since = Instant::now();
        let mut done = false;
        loop {
            let n = match up.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            // A message after a quiet second (the command's output after
            // its `sleep`) and well after authentication gets the bad length.
            let after_quiet = quiet_since.elapsed() >= Duration::from_millis(900);
            quiet_since = Instant::now();
            buf.extend_from_slice(&chunk[..n]);
            let mut out = Vec::new();
            loop {
                if done {
                    out.append(&mut buf);
                    break;
                }
                if ident {
                    let Some(end) = buf.iter().position(|&b| b == b'\n') else {
                        break;
                    };
                    out.extend(buf.drain(..=end));
                    ident = false;
                    continue;
                }
                if buf.len() < 6 {
                    break;
                }
                let len = u32::from_be_bytes(buf[..4].try_into().unwrap());
                let total = 4 + len as usize + if encrypted { 32 } else { 0 };
                if buf.len() < total {
                    break;
                }
                let mut packet: Vec<u8> = buf.drain(..total).collect();
                if !encrypted && packet[5] == 21 {
                    encrypted = true;
                } else if encrypted {
                    sent_encrypted += 1;
                    if after_quiet && sent_encrypted > 4 {
                        packet[..4].copy_from_slice(&(len + add).to_be_bytes());
                        done = true;
                    }
                }
                out.extend(packet);
            }
            if client.write_all(&out).is_err() {
                return;
            }
        }
    });
    port
}

fn corrupted_run(s: &Setup, server: u16, add: u32) -> (std::process::Output, Duration) {
    let relay = corrupting_relay(server, add);
    let mut c = bare(
        false,
        s,
        relay,
        &[
            "StrictHostKeyChecking=no",
            "UserKnownHostsFile=/dev/null",
            "LogLevel=ERROR",
            "Ciphers=aes128-ctr",
            "MACs=hmac-sha2-256-etm@openssh.com",
            "ServerAliveInterval=1",
            "ServerAliveCountMax=3",
        ],
    );
    c.args(["127.0.0.1", "sleep 2; echo x; sleep 60"]);
    let start = Instant::now();
    let out = run(c, b"", 50);
    (out, start.elapsed())
}

#[test]
fn server_alive_counts_messages_not_bytes() {
    // A length grown by 64 KiB: the client waits for bytes that never come,
    // while the replies to its keepalives keep arriving. As ssh: those are
    // not messages, so after ServerAliveCountMax the client gives up.
    let s = Setup::new("alivelen");
    let srv = s.start(false, "");
    let (out, took) = corrupted_run(&s, srv.port, 0x10000);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(255), "{err}");
    assert!(
        err.contains("Timeout, server 127.0.0.1 not responding."),
        "{err}"
    );
    assert!(took < Duration::from_secs(20), "{took:?}");
}

#[test]
fn bad_packet_length_in_ssh_words() {
    let s = Setup::new("badlen");
    let srv = s.start(false, "");
    let (out, _) = corrupted_run(&s, srv.port, 0x0100_0000);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(255), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with("Bad packet length ") && lines[0].ends_with('.'),
        "{err}"
    );
    assert_eq!(lines[1], "sluice: Connection corrupted");
}

#[test]
fn rekeys_show_as_newkeys_lines() {
    let s = Setup::new("newkeys");
    let srv = s.start(false, "");
    let mut c = s.client_at(false, &srv, "DEBUG1", &["-o", "RekeyLimit=256k"]);
    c.arg("cat > /dev/null");
    let out = run(c, &random_data(1 << 20, 7), 60);
    ok(&out, "sluice RekeyLimit=256k");
    let err = text(&out.stderr);
    // As ssh -v: one pair per exchange, the first one included.
    let sent = err.matches("debug1: SSH2_MSG_NEWKEYS sent").count();
    assert_eq!(
        sent,
        err.matches("debug1: SSH2_MSG_NEWKEYS received").count()
    );
    assert!(sent >= 2, "{sent} exchanges:\n{err}");
}

#[test]
fn command_line_precedence_as_ssh() {
    // (arguments, the -G lines expected): -o, -l, -p and user@host, first
    // one wins in command-line order; -c, -m, -C and -e win over -o; -W
    // means no session and defaults ExitOnForwardFailure/ClearAllForwardings.
    let cases: &[(&str, &[&str])] = &[
        ("-o Port=1 -p 2 h", &["port 1"]),
        ("-p 2 -o Port=1 h", &["port 2"]),
        ("-l bar -o User=foo h", &["user bar"]),
        ("-o User=foo -l bar baz@h", &["user foo"]),
        ("-lbar baz@h", &["user bar"]),
        ("baz@h -o User=foo -l bar", &["user baz"]),
        ("ssh://u@h:33 -p 44", &["port 33", "user u"]),
        (
            "-c aes128-ctr -o Ciphers=aes256-ctr h",
            &["ciphers aes128-ctr"],
        ),
        (
            "-o Ciphers=aes256-ctr -c aes128-ctr h",
            &["ciphers aes128-ctr"],
        ),
        ("-o Compression=no -C h", &["compression yes"]),
        ("-o EscapeChar=x -e y h", &["escapechar y"]),
        (
            "-W a:1 h",
            &[
                "exitonforwardfailure yes",
                "clearallforwardings yes",
                "requesttty false",
                "sessiontype none",
            ],
        ),
        (
            "-W a:1 -o ExitOnForwardFailure=no h",
            &["exitonforwardfailure no", "clearallforwardings yes"],
        ),
    ];
    let openssh = !missing("ssh");
    for (args, want) in cases {
        let g = |bin: &str| {
            let out = Command::new(bin)
                .args(["-F", "/dev/null", "-G"])
                .args(args.split_whitespace())
                .stdin(Stdio::null())
                .output()
                .unwrap();
            ok(&out, &format!("{bin} -G {args}"));
            text(&out.stdout)
        };
        let got = g(SLUICE);
        let ours: Vec<&str> = got.lines().collect();
        for w in *want {
            assert!(ours.contains(w), "{args}: {w:?} not in\n{got}");
        }
        if openssh {
            let theirs = g("ssh");
            for w in *want {
                assert!(theirs.lines().any(|l| l == *w), "ssh -G {args}: {w:?}");
            }
        }
    }
}

/// Kills a background master left by a failed test.
struct KillOnDrop(Option<i32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            // SAFETY: kill on a pid this test's master reported.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
    }
}

/// Runs a client that goes to the background (-f): its stdout and stderr
/// are not pipes, which the background process would hold open.
fn background(mut c: Command, what: &str) {
    let st = c
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "{what}: {st:?}");
}

/// `-O cmd` to the master at `ctl`, with sluice or ssh.
fn control(openssh: bool, ctl: &std::path::Path, cmd: &str) -> std::process::Output {
    let mut c = Command::new(if openssh { "ssh" } else { SLUICE });
    c.args(["-F", "/dev/null", "-S"])
        .arg(ctl)
        .args(["-O", cmd, "h"]);
    run(c, b"", 30)
}

#[test]
fn control_master_answers_check_and_exit() {
    let s = Setup::new("mux");
    let srv = s.start(false, "");
    let ctl = s.dir.path("ctl");
    let fwd = free_port();
    let mut c = bare(
        false,
        &s,
        srv.port,
        &["StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null"],
    );
    c.arg("-S")
        .arg(&ctl)
        .args(["-M", "-N", "-f", "-q", "-L"])
        .arg(format!("{fwd}:127.0.0.1:{}", srv.port))
        .arg("127.0.0.1");
    background(c, "sluice -M -N -f");
    let mode = std::fs::metadata(&ctl).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    let out = control(false, &ctl, "check");
    ok(&out, "sluice -O check");
    let err = text(&out.stderr);
    let pid: i32 = err
        .strip_prefix("Master running (pid=")
        .and_then(|r| r.strip_suffix(")\n"))
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    let _guard = KillOnDrop(Some(pid));
    // ssh's own -O check understands the master, and the -L forward is up.
    if !missing("ssh") {
        ok(&control(true, &ctl, "check"), "ssh -O check");
    }
    assert!(std::net::TcpStream::connect(("127.0.0.1", fwd)).is_ok());

    let out = control(false, &ctl, "exit");
    ok(&out, "sluice -O exit");
    assert_eq!(text(&out.stderr), "Exit request sent.\n");
    let deadline = Instant::now() + Duration::from_secs(10);
    // SAFETY: kill with signal 0 only checks the pid.
    while ctl.exists() || unsafe { libc::kill(pid, 0) } == 0 {
        assert!(Instant::now() < deadline, "the master did not exit");
        std::thread::sleep(Duration::from_millis(50));
    }

    // No master, no ControlPath, a bad command: ssh's messages, exit 255.
    let out = control(false, &ctl, "check");
    assert_eq!(out.status.code(), Some(255));
    assert_eq!(
        text(&out.stderr),
        format!(
            "Control socket connect({}): No such file or directory\n",
            ctl.display()
        )
    );
    for (args, msg) in [
        (
            &["-O", "check", "h"][..],
            "No ControlPath specified for \"-O\" command\n",
        ),
        (
            &["-S", "/x", "-O", "bogus", "h"][..],
            "Invalid multiplex command.\n",
        ),
    ] {
        let out = Command::new(SLUICE)
            .args(["-F", "/dev/null"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(255));
        assert_eq!(text(&out.stderr), msg);
    }
}

#[test]
fn dash_o_talks_to_an_openssh_master() {
    if missing("ssh") {
        return;
    }
    let s = Setup::new("muxssh");
    let srv = s.start(false, "");
    let ctl = s.dir.path("ctl");
    let mut c = bare(
        true,
        &s,
        srv.port,
        &["StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null"],
    );
    c.arg("-S")
        .arg(&ctl)
        .args(["-M", "-N", "-f", "-q", "127.0.0.1"]);
    background(c, "ssh -M -N -f");
    let out = control(false, &ctl, "check");
    ok(&out, "sluice -O check");
    let err = text(&out.stderr);
    let pid: i32 = err
        .strip_prefix("Master running (pid=")
        .and_then(|r| r.strip_suffix(")\n"))
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    let _guard = KillOnDrop(Some(pid));
    ok(&control(false, &ctl, "exit"), "sluice -O exit");
    let deadline = Instant::now() + Duration::from_secs(10);
    // SAFETY: kill with signal 0 only checks the pid.
    while unsafe { libc::kill(pid, 0) } == 0 {
        assert!(Instant::now() < deadline, "ssh's master did not exit");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn no_unsupported_warning_for_what_sluice_does() {
    let out = Command::new(SLUICE)
        .args(["-v", "-F", "/dev/null", "-G"])
        .args(["-o", "HostKeyAlias=x", "-o", "ControlMaster=auto"])
        .args(["-o", "ControlPath=/x", "-o", "ControlPersist=no", "h"])
        .output()
        .unwrap();
    ok(&out, "sluice -G");
    let err = text(&out.stderr);
    let unsupported: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("Unsupported option"))
        .collect();
    // ControlPersist no asks for nothing sluice lacks (config/ssh/limits.rs).
    assert_eq!(unsupported, Vec::<&str>::new());
    assert!(!err.contains("unsupported option"), "{err}");
}
