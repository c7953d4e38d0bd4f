//! sluiced's host keys away from its files: held by a real `ssh-agent`
//! (HostKeyAgent, `ssh-add` of Ed25519, ECDSA and RSA host keys, HostKey
//! naming the `.pub` files or a private file that is gone), with a host
//! certificate, and FIDO host keys through OpenSSH's sk-dummy middleware
//! (SecurityKeyProvider) or the agent. Debian's ssh connects with each
//! HostKeyAlgorithms and StrictHostKeyChecking yes, so the signature is
//! checked against the known_hosts line. An agent that cannot be reached,
//! a key it lacks and a FIDO key with no library stop `sluiced -t` with
//! the socket, the key and what to set.

mod agent_util;
mod common;
use agent_util::{text, Agent};
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SK_DUMMY: &str = "/usr/lib/openssh/regress/misc/sk-dummy/sk-dummy.so";

/// The server's configuration: `keys` are the HostKey (and other) lines.
fn config(s: &Setup, port: u16, keys: &str) -> PathBuf {
    let d = s.dir.0.display();
    let text = format!(
        "ListenAddress 127.0.0.1\nPort {port}\n{keys}\nAuthorizedKeysFile {d}/authorized_keys\n\
         StrictModes no\nPidFile none\nPermitRootLogin yes\nPerSourcePenalties no\nLogLevel DEBUG\n"
    );
    let p = s.dir.path(&format!("server_config_{port}"));
    std::fs::write(&p, text).unwrap();
    p
}

/// sluiced with `keys`; `auth_sock` is its SSH_AUTH_SOCK.
fn start(s: &Setup, keys: &str, auth_sock: Option<&Path>) -> Server {
    let port = free_port();
    let cfg = config(s, port, keys);
    let log_path = s.dir.path(&format!("server_{port}.log"));
    let log = std::fs::File::create(&log_path).unwrap();
    let mut c = Command::new(SLUICED);
    c.args(["-D", "-e", "-f"])
        .arg(&cfg)
        .stdin(Stdio::null())
        .stderr(log)
        .env_remove("SSH_AUTH_SOCK");
    if let Some(p) = auth_sock {
        c.env("SSH_AUTH_SOCK", p);
    }
    let child = c.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "sluiced did not start: {}",
            std::fs::read_to_string(&log_path).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Server {
        child,
        port,
        log: log_path,
    }
}

/// `sluiced -t` with `keys`: (success, stderr).
fn check(s: &Setup, keys: &str) -> (bool, String) {
    let cfg = config(s, free_port(), keys);
    let out = Command::new(SLUICED)
        .arg("-t")
        .arg("-f")
        .arg(&cfg)
        .env_remove("SSH_AUTH_SOCK")
        .output()
        .unwrap();
    (out.status.success(), text(&out.stderr))
}

/// Debian's ssh with `HostKeyAlgorithms alg`, trusting only `known` (a
/// known_hosts line's key part, or a whole `@cert-authority` line).
fn ssh(s: &Setup, server: &Server, alg: &str, known: &str) -> (bool, String) {
    let kh = s.dir.path("strict_known_hosts");
    let line = if known.starts_with('@') {
        known.to_owned()
    } else {
        format!("[127.0.0.1]:{} {known}", server.port)
    };
    std::fs::write(&kh, line + "\n").unwrap();
    let mut c = Command::new("ssh");
    c.args(["-F", "/dev/null", "-o", "BatchMode=yes", "-o"])
        .arg("StrictHostKeyChecking=yes")
        .arg("-o")
        .arg(format!("UserKnownHostsFile={}", kh.display()))
        .arg("-o")
        .arg(format!("HostKeyAlgorithms={alg}"))
        .arg("-i")
        .arg(&s.user_key)
        .args(["-p", &server.port.to_string(), "127.0.0.1", "echo ok"])
        .env_remove("SSH_AUTH_SOCK");
    let out = run(c, b"", 60);
    (text(&out.stdout) == "ok\n", text(&out.stderr))
}

fn pub_key(s: &Setup, name: &str) -> String {
    std::fs::read_to_string(s.dir.path(&format!("{name}.pub")))
        .unwrap()
        .trim()
        .to_owned()
}

/// Host keys only the agent holds: each algorithm verified against its
/// own known_hosts line, another key's line refused; HostKey naming the
/// `.pub`, or the private file after it was removed, and SSH_AUTH_SOCK.
#[test]
fn host_keys_held_by_an_agent() {
    if missing("ssh-agent") {
        return;
    }
    let s = Setup::new("hka");
    let d = s.dir.0.display().to_string();
    let keys: Vec<PathBuf> = ["ed25519", "ecdsa", "rsa"]
        .iter()
        .map(|t| s.dir.path(&format!("host_{t}")))
        .collect();
    let refs: Vec<&Path> = keys.iter().map(PathBuf::as_path).collect();
    let agent = Agent::start(&s.dir, &refs);
    for k in &keys {
        std::fs::remove_file(k).unwrap(); // only the agent has them now
    }
    let cases = [
        ("ssh-ed25519", "host_ed25519"),
        ("ecdsa-sha2-nistp256", "host_ecdsa"),
        ("rsa-sha2-512", "host_rsa"),
        ("rsa-sha2-256", "host_rsa"),
    ];
    // The .pub named, and the agent's socket named.
    let by_pub = format!(
        "HostKeyAgent {}\nHostKey {d}/host_ed25519.pub\nHostKey {d}/host_ecdsa.pub\nHostKey {d}/host_rsa.pub",
        agent.sock.display()
    );
    // The private file's name (gone: its .pub beside it), SSH_AUTH_SOCK.
    let by_env = format!(
        "HostKeyAgent SSH_AUTH_SOCK\nHostKey {d}/host_ed25519\nHostKey {d}/host_ecdsa\nHostKey {d}/host_rsa"
    );
    for (lines, env) in [(by_pub, None), (by_env, Some(agent.sock.as_path()))] {
        let server = start(&s, &lines, env);
        for (alg, key) in cases {
            let (ok, err) = ssh(&s, &server, alg, &pub_key(&s, key));
            assert!(ok, "{alg} with {lines}: {err}\n{}", server.log_text());
        }
        // The check is real: the Ed25519 line does not pass for ECDSA.
        let (ok, _) = ssh(
            &s,
            &server,
            "ecdsa-sha2-nistp256",
            &pub_key(&s, "host_ed25519"),
        );
        assert!(!ok, "a key other than known_hosts' was accepted");
        assert!(
            server.log_text().contains("will rely on agent for hostkey"),
            "{}",
            server.log_text()
        );
    }
}

/// A host certificate whose key only the agent holds.
#[test]
fn host_certificate_with_an_agent_key() {
    if missing("ssh-agent") {
        return;
    }
    let s = Setup::new("hka-cert");
    let d = s.dir.0.display().to_string();
    let ca = s.dir.path("ca");
    keygen(&ca, "ed25519");
    let out = Command::new("ssh-keygen")
        .args(["-q", "-s"])
        .arg(&ca)
        .args(["-h", "-I", "host", "-n", "127.0.0.1"])
        .arg(s.dir.path("host_ed25519.pub"))
        .output()
        .unwrap();
    ok(&out, "ssh-keygen -s");
    let agent = Agent::start(&s.dir, &[&s.dir.path("host_ed25519")]);
    std::fs::remove_file(s.dir.path("host_ed25519")).unwrap();
    let lines = format!(
        "HostKeyAgent {}\nHostKey {d}/host_ed25519.pub\nHostCertificate {d}/host_ed25519-cert.pub",
        agent.sock.display()
    );
    let server = start(&s, &lines, None);
    let ca_line = format!(
        "@cert-authority [127.0.0.1]:{} {}",
        server.port,
        pub_key(&s, "ca")
    );
    let (ok, err) = ssh(&s, &server, "ssh-ed25519-cert-v01@openssh.com", &ca_line);
    assert!(ok, "{err}\n{}", server.log_text());
}

/// An agent that cannot be reached, or that lacks a key: `sluiced -t`
/// fails naming the socket and the key; an agent gone after startup ends
/// each connection with the socket in the log.
#[test]
fn missing_agent_or_key_is_named() {
    if missing("ssh-agent") {
        return;
    }
    let s = Setup::new("hka-err");
    let d = s.dir.0.display().to_string();
    let nowhere = s.dir.path("no-agent.sock");
    let (ok, err) = check(
        &s,
        &format!(
            "HostKeyAgent {}\nHostKey {d}/host_ed25519.pub",
            nowhere.display()
        ),
    );
    assert!(!ok, "{err}");
    assert!(
        err.contains(&format!(
            "Could not connect to agent \"{}\"",
            nowhere.display()
        )) && err.contains("host_ed25519.pub")
            && err.contains("no hostkeys available"),
        "{err}"
    );
    let (ok, err) = check(
        &s,
        &format!("HostKeyAgent SSH_AUTH_SOCK\nHostKey {d}/host_ed25519.pub"),
    );
    assert!(!ok && err.contains("SSH_AUTH_SOCK is not set"), "{err}");
    // The agent holds the ECDSA key only.
    let agent = Agent::start(&s.dir, &[&s.dir.path("host_ecdsa")]);
    let fp = agent_util::fingerprint(&s.dir.path("host_ed25519.pub"));
    let lines = format!(
        "HostKeyAgent {}\nHostKey {d}/host_ed25519.pub",
        agent.sock.display()
    );
    let (ok, err) = check(&s, &lines);
    assert!(!ok, "{err}");
    assert!(
        err.contains(&agent.sock.display().to_string())
            && err.contains(&fp)
            && err.contains("ssh-add"),
        "{err}"
    );
    // With a key it holds beside it, sluiced starts and says the same.
    let both = format!("{lines}\nHostKey {d}/host_ecdsa.pub");
    let (ok, err) = check(&s, &both);
    assert!(ok && err.contains(&fp), "{err}");
    let server = start(&s, &both, None);
    let (ok, err) = ssh(
        &s,
        &server,
        "ecdsa-sha2-nistp256",
        &pub_key(&s, "host_ecdsa"),
    );
    assert!(ok, "{err}");
    // The agent gone: the next connection fails, its log names the socket.
    let sock = agent.sock.display().to_string();
    drop(agent);
    let (ok, _) = ssh(
        &s,
        &server,
        "ecdsa-sha2-nistp256",
        &pub_key(&s, "host_ecdsa"),
    );
    assert!(!ok, "a connection without the agent succeeded");
    let log = server.log_text();
    assert!(
        log.contains(&format!("Could not connect to agent \"{sock}\"")),
        "{log}"
    );
}

/// `ssh-keygen -t ty -w sk-dummy`.
fn sk_keygen(s: &Setup, name: &str, ty: &str) -> PathBuf {
    let p = s.dir.path(name);
    let out = Command::new("ssh-keygen")
        .args(["-q", "-N", "", "-C", name, "-t", ty, "-w", SK_DUMMY, "-f"])
        .arg(&p)
        .output()
        .unwrap();
    ok(&out, &format!("ssh-keygen -t {ty}"));
    p
}

/// FIDO host keys: key files through SecurityKeyProvider sk-dummy, and
/// the same keys held by an agent; without a library, `sluiced -t` says
/// what to set.
#[test]
fn fido_host_keys() {
    if missing("ssh-agent") || missing(SK_DUMMY) {
        return;
    }
    let s = Setup::new("hka-sk");
    let d = s.dir.0.display().to_string();
    sk_keygen(&s, "sk_ed", "ed25519-sk");
    sk_keygen(&s, "sk_ec", "ecdsa-sk");
    let cases = [
        ("sk-ssh-ed25519@openssh.com", "sk_ed"),
        ("sk-ecdsa-sha2-nistp256@openssh.com", "sk_ec"),
    ];
    let files = format!("HostKey {d}/sk_ed\nHostKey {d}/sk_ec");
    let (started, err) = check(&s, &files);
    assert!(!started && err.contains("SecurityKeyProvider"), "{err}");
    let server = start(
        &s,
        &format!("{files}\nSecurityKeyProvider {SK_DUMMY}"),
        None,
    );
    for (alg, key) in cases {
        let (connected, err) = ssh(&s, &server, alg, &pub_key(&s, key));
        assert!(
            connected,
            "{alg} from the file: {err}\n{}",
            server.log_text()
        );
    }
    drop(server);
    // In an agent that signs through sk-dummy (ssh-agent -P allows it).
    let sock = s.dir.path("skagent.sock");
    let mut agent = Command::new("ssh-agent")
        .args(["-D", "-a"])
        .arg(&sock)
        .args(["-P", "/usr/lib/openssh/regress/misc/sk-dummy/*"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !sock.exists() {
        assert!(Instant::now() < deadline, "ssh-agent did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    for (_, key) in cases {
        let out = Command::new("ssh-add")
            .arg("-q")
            .arg(s.dir.path(key))
            .env("SSH_AUTH_SOCK", &sock)
            .env("SSH_SK_PROVIDER", SK_DUMMY)
            .output()
            .unwrap();
        ok(&out, "ssh-add");
    }
    let lines = format!(
        "HostKeyAgent {}\nHostKey {d}/sk_ed.pub\nHostKey {d}/sk_ec.pub",
        sock.display()
    );
    let server = start(&s, &lines, None);
    for (alg, key) in cases {
        let (connected, err) = ssh(&s, &server, alg, &pub_key(&s, key));
        assert!(
            connected,
            "{alg} through the agent: {err}\n{}",
            server.log_text()
        );
    }
    drop(server);
    let _ = agent.kill();
    let _ = agent.wait();
}
