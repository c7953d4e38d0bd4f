//! sluiced behaviours OpenSSH's regression suite checks (envpass, banner,
//! authinfo), tested here with Debian's ssh as the client: sshd_config's
//! SetEnv keeps the first value of a name and wins over the client's; a
//! large Banner arrives whole; ExposeAuthInfo's SSH_USER_AUTH file;
//! reconfigure: SIGHUP restarts the listener on its new configuration.

mod common;
use common::*;
use std::time::{Duration, Instant};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn server_set_env_first_value_wins_over_the_clients() {
    let s = Setup::new("srv-setenv");
    let extra = "AcceptEnv _T_*\nSetEnv _T_A=23 _T_A=42";
    for openssh in [false, true] {
        let server = s.start(openssh, extra);
        let mut c = s.client(true, &server, &["-o", "SetEnv=_T_A=1 _T_B=2"]);
        c.arg("echo $_T_A $_T_B");
        let out = run(c, b"", 30);
        ok(&out, &server.log_text());
        assert_eq!(text(&out.stdout), "23 2\n", "openssh server: {openssh}");
    }
}

#[test]
fn a_large_banner_arrives_whole_and_a_too_large_one_is_refused() {
    let s = Setup::new("srv-banner");
    let banner = s.dir.path("banner");
    let body = "abcdefghi\n".repeat(10_000); // the suite's largest, 100000 bytes
    std::fs::write(&banner, &body).unwrap();
    let server = s.start(false, &format!("Banner {}", banner.display()));
    let mut c = s.client_at(true, &server, "INFO", &[]);
    c.arg("true");
    let out = run(c, b"", 30);
    ok(&out, &server.log_text());
    // The banner, whole, and nothing else but ssh's known_hosts notice.
    let shown = text(&out.stderr);
    assert!(shown.contains(&body), "banner of {} bytes", shown.len());
    assert!(
        shown
            .replace(&body, "")
            .lines()
            .all(|l| l.contains("known hosts")),
        "{}",
        shown.replace(&body, "")
    );
    // -q hides it.
    let mut c = s.client_at(true, &server, "INFO", &["-q"]);
    c.arg("true");
    assert!(run(c, b"", 30).stderr.is_empty());
    // Over sluiced's limit: no banner, a log line saying why; login works.
    std::fs::write(&banner, "x".repeat(200 * 1024)).unwrap();
    let mut c = s.client_at(true, &server, "INFO", &[]);
    c.arg("true");
    let out = run(c, b"", 30);
    ok(&out, &server.log_text());
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    assert!(
        server.log_text().contains("no banner sent"),
        "{}",
        server.log_text()
    );
}

#[test]
fn expose_auth_info_names_the_key_and_the_file_goes_afterwards() {
    let s = Setup::new("srv-authinfo");
    let public = std::fs::read_to_string(s.dir.path("id_ed25519.pub")).unwrap();
    let key: Vec<&str> = public.split_whitespace().take(2).collect();
    // Off (the default): no SSH_USER_AUTH of ours; one the client sends
    // (AcceptEnv) is treated as Debian's sshd treats it.
    let mut seen = Vec::new();
    for openssh in [false, true] {
        let server = s.start(openssh, "AcceptEnv SSH_USER_AUTH");
        let mut c = s.client(true, &server, &["-o", "SetEnv=SSH_USER_AUTH=blah"]);
        c.arg("echo \"[$SSH_USER_AUTH]\"");
        let out = run(c, b"", 30);
        ok(&out, &server.log_text());
        seen.push(text(&out.stdout));
    }
    assert_eq!(seen[0], seen[1], "sluiced, then sshd");
    let server = s.start(false, "ExposeAuthInfo yes");
    let mut c = s.client(true, &server, &[]);
    c.arg("echo $SSH_USER_AUTH; stat -c %a \"$SSH_USER_AUTH\"; cat \"$SSH_USER_AUTH\"");
    let out = run(c, b"", 30);
    ok(&out, &server.log_text());
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert!(lines[0].starts_with("/tmp/sshauth."), "{stdout}");
    assert_eq!(lines[1], "600");
    assert_eq!(lines[2], format!("publickey {} {}", key[0], key[1]));
    // Removed when the connection ends.
    let path = std::path::PathBuf::from(lines[0]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while path.exists() {
        assert!(Instant::now() < deadline, "{} left behind", path.display());
        std::thread::sleep(Duration::from_millis(50));
    }
    let dump = std::process::Command::new(SLUICED)
        .arg("-T")
        .arg("-f")
        .arg(s.config(server.port, "ExposeAuthInfo yes"))
        .output()
        .unwrap();
    assert!(text(&dump.stdout).contains("exposeauthinfo yes"));
}

/// Starts `bin` as a daemon on `cfg`'s port (Setup::start for a copy of sluiced).
fn start_binary(bin: &std::path::Path, s: &Setup, port: u16, cfg: &std::path::Path) -> Server {
    let log = s.dir.path(&format!("server_{port}.log"));
    let deadline = Instant::now() + Duration::from_secs(10);
    // A copy just written may be held open for writing for a moment by a
    // child another test thread forked before it execs (ETXTBSY): retry.
    let child = loop {
        let spawned = std::process::Command::new(bin)
            .args(["-D", "-e", "-f"])
            .arg(cfg)
            .stdin(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn();
        match spawned {
            Err(e)
                if e.kind() == std::io::ErrorKind::ExecutableFileBusy
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            r => break r.unwrap(),
        }
    };
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{} did not start", bin.display());
        std::thread::sleep(Duration::from_millis(20));
    }
    Server { child, port, log }
}

#[test]
fn connections_use_the_configuration_and_binary_the_listener_started_with() {
    let s = Setup::new("srv-reexec");
    let port = free_port();
    let include = s.dir.path("included.conf");
    std::fs::write(&include, "SetEnv _T_INC=1\n").unwrap();
    let cfg = s.config(port, &format!("Include {}", include.display()));
    // A copy of the binary, removed once the listener runs (sshd's "reexec
    // fallback" test).
    let bin = s.dir.path("sluiced-copy");
    std::fs::copy(SLUICED, &bin).unwrap();
    let server = start_binary(&bin, &s, port, &cfg);
    std::fs::remove_file(&bin).unwrap();
    // Edits after startup (a bad keyword, an Include changed) are not seen:
    // sshd's "config passing".
    let mut f = std::fs::OpenOptions::new().append(true).open(&cfg).unwrap();
    std::io::Write::write_all(&mut f, b"InvalidXXX=no\n").unwrap();
    std::fs::write(&include, "SetEnv _T_INC=2\n").unwrap();
    for _ in 0..2 {
        let mut c = s.client(true, &server, &[]);
        c.arg("echo $_T_INC");
        let out = run(c, b"", 30);
        ok(&out, &server.log_text());
        assert_eq!(text(&out.stdout), "1\n");
    }
}

#[test]
fn match_blocks_may_allow_signature_algorithms_the_global_list_does_not() {
    // sshd 9.2 lists every algorithm it implements in server-sig-algs and
    // applies the user's PubkeyAcceptedAlgorithms (Match included) to each
    // request, a disallowed one being an ordinary failure (limit-keytype).
    let s = Setup::new("srv-pkalgs");
    let rsa = s.dir.path("id_rsa");
    keygen(&rsa, "rsa");
    let mut ak = std::fs::read_to_string(s.dir.path("authorized_keys")).unwrap();
    ak.push_str(&std::fs::read_to_string(s.dir.path("id_rsa.pub")).unwrap());
    std::fs::write(s.dir.path("authorized_keys"), ak).unwrap();
    let extra = format!(
        "PubkeyAcceptedAlgorithms ssh-ed25519\nMatch User {}\n  PubkeyAcceptedAlgorithms rsa-sha2-512,rsa-sha2-256\nMatch all",
        user()
    );
    for openssh in [false, true] {
        let server = s.start(openssh, &extra);
        // The Ed25519 key (-i from Setup) is refused, then the RSA key logs in.
        let rsa_arg = rsa.display().to_string();
        let mut c = s.client(true, &server, &["-o", "IdentitiesOnly=yes", "-i", &rsa_arg]);
        c.arg("echo in");
        let out = run(c, b"", 30);
        ok(&out, &server.log_text());
        assert_eq!(text(&out.stdout), "in\n", "openssh server: {openssh}");
        if !openssh {
            let log = server.log_text();
            assert!(
                log.contains("signature algorithm ssh-ed25519 not in PubkeyAcceptedAlgorithms"),
                "{log}"
            );
        }
    }
}

#[test]
fn openssh_algorithm_names_sluiced_lacks_are_left_out() {
    // An sshd_config written for OpenSSH (kextype writes every name
    // `ssh -Q kex` lists) keeps working with what sluiced implements.
    let s = Setup::new("srv-algs");
    let server = s.start(
        false,
        "KexAlgorithms diffie-hellman-group16-sha512,curve25519-sha256,sntrup761x25519-sha512@openssh.com\nMACs hmac-sha1,umac-64-etm@openssh.com,hmac-sha2-256\nCiphers aes128-cbc,aes128-ctr",
    );
    let mut c = s.client(
        true,
        &server,
        &["-o", "MACs=hmac-sha2-256", "-o", "Ciphers=aes128-ctr"],
    );
    c.arg("echo in");
    let out = run(c, b"", 30);
    ok(&out, &server.log_text());
    assert_eq!(text(&out.stdout), "in\n");
    // Nothing left to negotiate, or a name OpenSSH does not know: refused.
    let cfg = s.dir.path("only-cbc");
    let d = s.dir.0.display().to_string();
    for (line, want) in [
        ("Ciphers aes128-cbc", "sluice does not implement aes128-cbc"),
        ("MACs hmac-sha3-256", "Bad SSH2"),
    ] {
        std::fs::write(&cfg, format!("HostKey {d}/host_ed25519\n{line}\n")).unwrap();
        let out = std::process::Command::new(SLUICED)
            .arg("-t")
            .arg("-f")
            .arg(&cfg)
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(255), "{line}: {err}");
        assert!(err.contains(want), "{line}: {err}");
    }
}

/// The sockets `pid` holds ("socket:[inode]"): a listener's listening ones.
fn sockets_of(pid: u32) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .map(|l| l.display().to_string())
        .filter(|l| l.starts_with("socket:"))
        .collect();
    v.sort();
    v
}

fn wait_for_count(server: &Server, needle: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.log_text().matches(needle).count() < n {
        assert!(
            Instant::now() < deadline,
            "waiting for {n} x {needle:?}: {}",
            server.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// OpenSSH's reconfigure.sh: SIGHUP restarts the listener on the new
/// configuration, after a `-t` check that a broken one fails (it keeps
/// serving then, and says why).
#[test]
fn sighup_restarts_on_the_new_configuration_and_connections_live_on() {
    let s = Setup::new("srv-hup");
    let port = free_port();
    let cfg = s.config(port, "SetEnv _T_HUP=1");
    let text_of = |p: &std::path::Path| std::fs::read_to_string(p).unwrap();
    let first = text_of(&cfg);
    let pid_file = s.dir.path("sluiced.pid");
    let log = s.dir.path(&format!("server_{port}.log"));
    let child = std::process::Command::new(SLUICED)
        .args(["-D", "-e", "-o"])
        .arg(format!("PidFile={}", pid_file.display()))
        .arg("-f")
        .arg(&cfg)
        .stdin(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let server = Server { child, port, log };
    let pid = server.child.id();
    wait_for_count(&server, "Server listening on", 1);
    let listening = sockets_of(pid);
    assert!(!listening.is_empty());
    assert_eq!(text_of(&pid_file), format!("{pid}\n"));
    let env_now = || {
        let mut c = s.client(false, &server, &[]);
        c.arg("echo $_T_HUP");
        let out = run(c, b"", 30);
        ok(&out, &server.log_text());
        text(&out.stdout)
    };
    assert_eq!(env_now(), "1\n");

    // A long upload, held by the command's sleep while the restart happens.
    let data = random_data(200 << 20, 21);
    let hash = sha256(&data);
    let mut c = s.client(false, &server, &[]);
    c.arg("sleep 3; sha256sum");
    let upload = std::thread::spawn(move || run(c, &data, 120));
    wait_for_count(&server, "Accepted publickey", 2);
    std::fs::write(&cfg, first.replace("_T_HUP=1", "_T_HUP=2")).unwrap();
    // SAFETY: signalling the server under test.
    unsafe { libc::kill(pid as i32, libc::SIGHUP) };
    wait_for_count(&server, "Received SIGHUP; restarting.", 1);
    wait_for_count(&server, "Server listening on", 2);
    let out = upload.join().unwrap();
    ok(&out, &server.log_text());
    assert!(
        text(&out.stdout).starts_with(&hash),
        "{}",
        text(&out.stdout)
    );
    // The same process, pid file and listening sockets; the new setting.
    assert!(server.child.id() == pid && sockets_of(pid) == listening);
    assert_eq!(text_of(&pid_file), format!("{pid}\n"));
    assert_eq!(env_now(), "2\n");

    // A broken configuration: no restart, the reason logged, still serving.
    std::fs::write(&cfg, format!("{}Bogus yes\n", text_of(&cfg))).unwrap();
    // SAFETY: as above.
    unsafe { libc::kill(pid as i32, libc::SIGHUP) };
    wait_for_count(&server, "configuration check failed; not restarting", 1);
    let log = server.log_text();
    assert!(log.contains("Bad configuration option: Bogus"), "{log}");
    assert_eq!(
        log.matches("Received SIGHUP; restarting.").count(),
        1,
        "{log}"
    );
    assert_eq!(env_now(), "2\n");
    assert_eq!(sockets_of(pid), listening);
    assert_eq!(text_of(&pid_file), format!("{pid}\n"));
}
