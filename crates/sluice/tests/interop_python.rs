//! A second, independent SSH implementation: paramiko as a client of
//! `sluiced`, asyncssh as a server for `sluice`. Data checked by SHA-256.

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
    let port = free_port();
    let mut child = Command::new("python3")
        .arg(format!("{dir}/asyncssh_server.py"))
        .arg(port.to_string())
        .arg(s.dir.path("host_ed25519"))
        .arg(s.dir.path("authorized_keys"))
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
    let _py = Py(child);
    let fake = Server {
        child: Command::new("sleep").arg("300").spawn().unwrap(),
        port,
        log: s.dir.path("none"),
    };
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
