//! A second, independent SSH implementation: paramiko as a client of
//! `sluiced`, asyncssh and paramiko as servers for `sluice`. Data checked
//! by SHA-256.

mod common;
use common::*;
use std::process::{Command, Stdio};

fn peers() -> Option<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/peers");
    let ok = Command::new("python3")
        .args(["-c", "import paramiko, asyncssh"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(std::env::var("CI").is_err(), "python3 with paramiko and asyncssh is required under CI (pip install -r tests/requirements.txt)");
        eprintln!("skipping: python3 paramiko/asyncssh not installed");
        return None;
    }
    Some(dir.to_owned())
}

#[test]
fn paramiko_client_to_sluiced() {
    let Some(dir) = peers() else { return };
    let s = Setup::new("paramiko");
    let server = s.start(false, "");
    let data = random_data(16 << 20, 4);
    let mut c = Command::new("python3");
    c.arg(format!("{dir}/paramiko_client.py"))
        .arg(server.port.to_string())
        .arg(&s.user_key)
        .arg(user())
        .arg("cat");
    let out = run(c, &data, 120);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.trim(),
        format!("{} 0", sha256(&data)),
        "stderr: {}\nlog: {}",
        String::from_utf8_lossy(&out.stderr),
        server.log_text()
    );
    let mut c = Command::new("python3");
    c.arg(format!("{dir}/paramiko_client.py"))
        .arg(server.port.to_string())
        .arg(&s.user_key)
        .arg(user())
        .arg("exit 7");
    let out = run(c, b"", 60);
    assert!(String::from_utf8_lossy(&out.stdout).trim().ends_with(" 7"));
}

struct Py(std::process::Child);
impl Drop for Py {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn sluice_to_asyncssh_server() {
    let Some(dir) = peers() else { return };
    let mut s = Setup::new("asyncssh");
    let (_py, fake) = python_server(&s, &dir, "asyncssh_server.py", &[]);
    for cipher in [
        "aes128-gcm@openssh.com",
        "chacha20-poly1305@openssh.com",
        "aes256-ctr",
    ] {
        let data = random_data(16 << 20, 5);
        let mut c = s.client(false, &fake, &["-c", cipher]);
        c.arg("sha256");
        let out = run(c, &data, 120);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!("{} {}", data.len(), sha256(&data)),
            "{cipher}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut c = s.client(false, &fake, &[]);
    c.arg("send 10000000");
    let out = run(c, b"", 120);
    assert_eq!(out.stdout.len(), 10_000_000);
    // A refused key first: sent signed at once, then the next key.
    let good = std::mem::replace(&mut s.user_key, s.dir.path("id_refused"));
    keygen(&s.user_key, "ed25519");
    let data = random_data(1 << 20, 6);
    let mut c = s.client(false, &fake, &["-i", good.to_str().unwrap()]);
    c.arg("sha256");
    let out = run(c, &data, 120);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("{} {}", data.len(), sha256(&data)),
        "refused key first: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    s.user_key = good;
    let mut c = s.client(false, &fake, &[]);
    c.arg("exit 9");
    let out = run(c, b"", 60);
    assert_eq!(out.status.code(), Some(9));
    assert_eq!(out.stderr, b"err\n");
}

/// Starts a Python server peer (`script PORT HOSTKEY AUTHORIZED_KEYS
/// [extra]`) and waits for its "ready".
fn python_server(s: &Setup, dir: &str, script: &str, extra: &[&str]) -> (Py, Server) {
    let port = free_port();
    let mut child = Command::new("python3")
        .arg(format!("{dir}/{script}"))
        .arg(port.to_string())
        .arg(s.dir.path("host_ed25519"))
        .arg(s.dir.path("authorized_keys"))
        .args(extra)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "ready");
    let fake = Server {
        child: Command::new("sleep").arg("300").spawn().unwrap(),
        port,
        log: s.dir.path("none"),
    };
    (Py(child), fake)
}

/// paramiko takes a wrong KEX guess as the real packet: with a paramiko
/// that lacks mlkem768x25519 (before 5.0; sluice guesses it) sluice
/// reconnects once without the guess, by itself; `KexGuess no` goes
/// without it from the start. A current paramiko (5.0 on) takes the guess.
#[test]
fn sluice_to_paramiko_server_despite_its_kex_guess_handling() {
    let Some(dir) = peers() else { return };
    let s = Setup::new("paramiko-srv");
    let (_new, current) = python_server(&s, &dir, "paramiko_server.py", &[]);
    let data = random_data(1 << 20, 8);
    let mut c = s.client(false, &current, &["-v"]);
    c.arg("sha256");
    let out = run(c, &data, 120);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("{} {}", data.len(), sha256(&data)),
        "{err}"
    );
    let (_py, fake) = python_server(&s, &dir, "paramiko_server.py", &["mlkem768x25519-sha256"]);
    for extra in [&["-v"][..], &["-o", "KexGuess=no", "-v"]] {
        let data = random_data(4 << 20, 7);
        let mut c = s.client(false, &fake, extra);
        c.arg("sha256");
        let out = run(c, &data, 120);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!("{} {}", data.len(), sha256(&data)),
            "{extra:?}: {err}"
        );
        let retried = err.contains("reconnecting without one");
        assert_eq!(retried, extra.len() == 1, "{extra:?}: {err}");
    }
    let mut c = s.client(false, &fake, &[]);
    c.arg("send 5000000");
    let out = run(c, b"", 120);
    assert_eq!(out.stdout.len(), 5_000_000);
    let mut c = s.client(false, &fake, &[]);
    c.arg("exit 4");
    let out = run(c, b"", 60);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A user name from the wire cannot forge a log line: its newline and
/// escape sequences are escaped in sluiced's log, as sshd's syslog does.
#[test]
fn user_names_are_escaped_in_the_log() {
    let Some(_) = peers() else { return };
    let s = Setup::new("logforge");
    let server = s.start(false, "");
    let script = format!(
        "import paramiko, socket\n\
         s = socket.create_connection(('127.0.0.1', {}))\n\
         t = paramiko.Transport(s)\n\
         t.start_client(timeout=20)\n\
         try:\n    t.auth_password('nobody\\nsluiced[1] Accepted password for root\\x1b[2J', 'x')\n\
         except Exception as e:\n    print('refused', type(e).__name__)\n\
         t.close()\n",
        server.port
    );
    let mut c = Command::new("python3");
    c.args(["-c", &script]);
    let out = run(c, b"", 60);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("refused"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = server.log_text();
    assert!(
        log.contains("Invalid user nobody\\nsluiced[1] Accepted password for root\\033[2J from"),
        "{log}"
    );
    assert!(
        !log.lines().any(|l| l.starts_with("sluiced[1] Accepted")),
        "{log}"
    );
}

/// paramiko names one user, then another on the same transport: sluiced
/// ends the connection as sshd does ("Change of username or service not
/// allowed"), before any step was met. `user:style` then `user` is the same
/// user (the style may vary) and logs in.
#[test]
fn a_change_of_user_ends_the_connection() {
    let Some(_) = peers() else { return };
    let s = Setup::new("userchange");
    let server = s.start(false, "");
    let me = user();
    let other = if me == "nobody" { "root" } else { "nobody" };
    let script = format!(
        "import paramiko, socket\n\
         key = paramiko.Ed25519Key.from_private_key_file('{key}')\n\
         for second in ('{other}', '{me}'):\n    \
             s = socket.create_connection(('127.0.0.1', {port}))\n    \
             t = paramiko.Transport(s)\n    \
             t.start_client(timeout=20)\n    \
             try:\n        t.auth_none('{me}:pam')\n    \
             except paramiko.BadAuthenticationType:\n        pass\n    \
             try:\n        t.auth_publickey(second, key)\n        \
                 print(second, 'accepted', t.is_authenticated())\n    \
             except Exception as e:\n        \
                 print(second, 'ended', type(e).__name__)\n    \
             t.close()\n",
        key = s.user_key.display(),
        port = server.port
    );
    let mut c = Command::new("python3");
    c.args(["-c", &script]);
    let out = run(c, b"", 60);
    let text = String::from_utf8_lossy(&out.stdout);
    let log = server.log_text();
    let why = format!("{text}\n{}\n{log}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains(&format!("{other} ended")), "{why}");
    assert!(text.contains(&format!("{me} accepted True")), "{why}");
    assert!(
        log.contains(&format!(
            "Change of username or service not allowed: ({me},ssh-connection) -> ({other},ssh-connection)"
        )),
        "{why}"
    );
    assert!(
        !log.contains(&format!("Accepted publickey for {other}")),
        "{why}"
    );
}

/// A refused key takes sshd's per-user minimum (5-9 ms) whether the user
/// exists or not, so the answer's timing does not tell which.
#[test]
fn refusals_take_as_long_for_unknown_users() {
    let Some(_) = peers() else { return };
    let s = Setup::new("authtime");
    let server = s.start(false, "");
    let script = format!(
        "import paramiko, socket, time, sys\n\
         key = paramiko.Ed25519Key.from_private_key_file('{key}')\n\
         other = paramiko.RSAKey.generate(2048)\n\
         for user, k in (('{me}', other), ('no-such-user-x', key), ('no-such-user-y', other)):\n    \
             s = socket.create_connection(('127.0.0.1', {port}))\n    \
             t = paramiko.Transport(s)\n    \
             t.start_client(timeout=20)\n    \
             t0 = time.monotonic()\n    \
             try:\n        t.auth_publickey(user, k)\n    \
             except paramiko.AuthenticationException:\n        pass\n    \
             print(user, round((time.monotonic() - t0) * 1000, 1))\n    \
             t.close()\n",
        key = s.user_key.display(),
        me = user(),
        port = server.port
    );
    let mut c = Command::new("python3");
    c.args(["-c", &script]);
    let out = run(c, b"", 120);
    let text = String::from_utf8_lossy(&out.stdout);
    let ms: Vec<f64> = text
        .lines()
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .collect();
    assert_eq!(
        ms.len(),
        3,
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(ms.iter().all(|&m| m >= 5.0), "refusal times (ms): {ms:?}");
}

/// A group exchange server that answers with a group smaller than the 2048
/// bits sluice asks for at least (paramiko, given only 1024-bit moduli):
/// sluice refuses it, with ssh's message, and runs nothing.
#[test]
fn sluice_refuses_a_group_exchange_group_below_its_minimum() {
    let Some(dir) = peers() else { return };
    let s = Setup::new("small-gex");
    // RFC 2409 group 2 (1024 bits), in moduli(5) form: safe, tested, 100 trials.
    let p = concat!(
        "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74",
        "020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F1437",
        "4FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED",
        "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF"
    );
    let moduli = s.dir.path("moduli-1024");
    std::fs::write(&moduli, format!("20220714110357 2 6 100 1023 2 {p}\n")).unwrap();
    let m = moduli.display().to_string();
    let (_py, server) = python_server(&s, &dir, "small_group_server.py", &[&m]);
    let mut c = s.client_at(
        false,
        &server,
        "ERROR",
        &["-o", "KexAlgorithms=diffie-hellman-group-exchange-sha256"],
    );
    c.arg("echo ran");
    let out = run(c, b"", 60);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(255), "{err}");
    assert!(out.stdout.is_empty(), "{err}");
    assert!(
        err.contains("DH_GEX group out of range: 2048 !< 1024 !< 8192"),
        "{err}"
    );
}
