//! `sluiced -i` behind a ProxyCommand, as OpenSSH's regression suite runs
//! a server: stdin and stdout are two pipes (OpenSSH's ssh) or one socket
//! (sluice). Data both ways checked by SHA-256, the exit status, sshd's
//! log line for a connection without an address, and no process left.

mod common;

use common::*;
use std::process::Command;
use std::time::{Duration, Instant};

/// A server config as Setup writes it (the listening server is not used).
fn config(s: &Setup) -> std::path::PathBuf {
    let server = s.start(false, "");
    let cfg = s.dir.path(&format!("server_config_{}", server.port));
    drop(server);
    cfg
}

fn proxied(s: &Setup, openssh: bool, log: &std::path::Path, cmd: &str) -> Command {
    let cfg = config(s);
    let mut c = Command::new(if openssh { "ssh" } else { SLUICE });
    c.args(["-F", "/dev/null", "-o", "StrictHostKeyChecking=no"])
        .args(["-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes"])
        .args(["-o", "LogLevel=ERROR", "-i"])
        .arg(&s.user_key)
        .arg("-o")
        .arg(format!(
            "ProxyCommand={SLUICED} -i -e -f {} 2>>{}",
            cfg.display(),
            log.display()
        ))
        .arg(format!("{}@proxied", user()))
        .arg(cmd);
    c
}

#[test]
fn inetd_mode_over_pipes_and_sockets() {
    let s = Setup::new("inetd-pipes");
    let log = s.dir.path("inetd.log");
    let up = random_data(4 << 20, 7);
    for openssh in [true, false] {
        let who = if openssh { "ssh" } else { "sluice" };
        let t = Instant::now();
        let out = run(proxied(&s, openssh, &log, "sha256sum"), &up, 60);
        ok(
            &out,
            &format!(
                "{who}: upload through sluiced -i; log: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            ),
        );
        let got = String::from_utf8_lossy(&out.stdout);
        assert!(got.starts_with(&sha256(&up)), "{who}: {got}");

        let f = s.dir.path("down.bin");
        std::fs::write(&f, &up).unwrap();
        let out = run(
            proxied(&s, openssh, &log, &format!("cat {}", f.display())),
            b"",
            60,
        );
        ok(&out, &format!("{who}: download through sluiced -i"));
        assert_eq!(sha256(&out.stdout), sha256(&up), "{who}: download");

        let out = run(proxied(&s, openssh, &log, "exit 7"), b"", 30);
        assert_eq!(out.status.code(), Some(7), "{who}: exit status");

        // No addresses on pipes: SSH_CONNECTION says so as sshd's does.
        let out = run(proxied(&s, openssh, &log, "echo $SSH_CONNECTION"), b"", 30);
        ok(&out, &format!("{who}: SSH_CONNECTION"));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "UNKNOWN 65535 UNKNOWN 65535\n",
            "{who}"
        );
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "{who}: {:?}",
            t.elapsed()
        );
    }
    // A BSD authentication style after the user name is dropped, as sshd does.
    let c = proxied(&s, false, &log, "id -un");
    let args: Vec<_> = c.get_args().map(|a| a.to_owned()).collect();
    let mut c = Command::new(SLUICE);
    for a in &args {
        if *a == *format!("{}@proxied", user()) {
            c.arg(format!("{}:style@proxied", user()));
        } else {
            c.arg(a);
        }
    }
    let out = run(c, b"", 30);
    ok(&out, "user:style@host");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), user());
    let text = std::fs::read_to_string(&log).unwrap();
    // Pipes carry no address: sshd's words for that.
    assert!(
        text.contains("Connection from UNKNOWN port 65535 on UNKNOWN port 65535"),
        "{text}"
    );
}
