//! The bulk data path under stress, over real sockets and pipes: crypto
//! forced onto two threads at both ends with every cipher, slow readers at
//! either end (partial writes, full pipes), and commands or readers that
//! stop while the pipeline is full. Checked by SHA-256, exit codes, and a
//! server that keeps serving afterwards.

mod common;
use common::*;
use std::process::Command;

/// A shell line running `cmd` (a client command) with `remote` as its command.
fn shell_line(cmd: &Command, remote: &str) -> String {
    let q = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
    let mut line = q(&cmd.get_program().to_string_lossy());
    for a in cmd.get_args() {
        line.push(' ');
        line.push_str(&q(&a.to_string_lossy()));
    }
    line.push(' ');
    line.push_str(&q(remote));
    line
}

const CIPHERS: &[(&str, &str)] = &[
    ("aes128-gcm@openssh.com", "hmac-sha2-256"),
    ("aes256-gcm@openssh.com", "hmac-sha2-256"),
    ("chacha20-poly1305@openssh.com", "hmac-sha2-256"),
    ("aes128-ctr", "hmac-sha2-256-etm@openssh.com"),
];

#[test]
fn two_crypto_threads_at_both_ends_every_cipher() {
    let s = Setup::new("threads");
    let data = random_data(24 << 20, 11);
    let hash = sha256(&data);
    let src = s.dir.path("src.bin");
    std::fs::write(&src, &data).unwrap();
    let server = s.start(false, "CryptoThreads 2");
    for (c, m) in CIPHERS {
        let opts = ["-o", "CryptoThreads=2", "-c", c, "-m", m];
        let mut cmd = s.client(false, &server, &opts);
        cmd.arg("sha256sum");
        let out = run(cmd, &data, 120);
        ok(&out, c);
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with(&hash),
            "{c} upload"
        );
        let mut cmd = s.client(false, &server, &opts);
        cmd.arg(format!("cat {}", src.display()));
        let out = run(cmd, b"", 120);
        ok(&out, c);
        assert_eq!(sha256(&out.stdout), hash, "{c} download");
    }
}

#[test]
fn slow_readers_at_either_end() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("slow");
    let data = random_data(32 << 20, 12);
    let hash = sha256(&data);
    let src = s.dir.path("src.bin");
    std::fs::write(&src, &data).unwrap();
    for (openssh_server, label) in [(false, "sluiced"), (true, "sshd")] {
        let server = s.start(openssh_server, "");
        // The remote command reads nothing for a while: windows and pipes fill.
        let mut c = s.client(false, &server, &[]);
        c.arg("sleep 2; sha256sum");
        let out = run(c, &data, 120);
        ok(&out, label);
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with(&hash),
            "{label} upload"
        );
        // Our stdout is a pipe nobody reads for a while.
        let client = s.client(false, &server, &[]);
        let remote = format!("cat {}", src.display());
        let mut sh = Command::new("sh");
        sh.arg("-c").arg(format!(
            "{} | (sleep 2; sha256sum)",
            shell_line(&client, &remote)
        ));
        let out = run(sh, b"", 120);
        ok(&out, label);
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with(&hash),
            "{label} download"
        );
    }
}

#[test]
fn command_exits_while_the_pipeline_is_full() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let s = Setup::new("early");
    let data = random_data(64 << 20, 13);
    for (oc, os, label) in [
        (false, false, "sluice->sluiced"),
        (false, true, "sluice->sshd"),
        (true, false, "ssh->sluiced"),
    ] {
        let server = s.start(os, "");
        // The command takes 100 kB of 64 MiB and exits: the client must stop
        // sending, report the status, and not hang.
        let mut c = s.client(oc, &server, &[]);
        c.arg("head -c 100000 | wc -c; exit 7");
        let out = run(c, &data, 60);
        assert_eq!(out.status.code(), Some(7), "{label}: {:?}", out);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "100000",
            "{label}"
        );
        // The server still serves after the early exit.
        let mut c = s.client(oc, &server, &[]);
        c.arg("echo still here");
        let out = run(c, b"", 60);
        assert_eq!(out.stdout, b"still here\n", "{label}");
        // Our reader goes away in the middle of a download. OpenSSH's ssh
        // tells only servers whose banner says OpenSSH (eow@openssh.com,
        // PROTOCOL 2.1) and otherwise discards output until the command
        // ends, so this part needs a sluice client.
        if oc {
            continue;
        }
        let client = s.client(oc, &server, &[]);
        let mut sh = Command::new("sh");
        sh.arg("-c").arg(format!(
            "{} | head -c 1000000 | wc -c",
            shell_line(&client, "cat /dev/zero")
        ));
        let out = run(sh, b"", 60);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "1000000",
            "{label}"
        );
    }
}

#[test]
fn socket_buffer_options_are_applied_and_reported() {
    let s = Setup::new("sockbuf");
    let data = random_data(8 << 20, 14);
    let hash = sha256(&data);
    let server = s.start(false, "TcpRcvBuf 8M\nTcpSndBuf 8M");
    let opts = ["-v", "-o", "TcpRcvBuf=6M", "-o", "TcpSndBuf=3M"];
    let mut c = s.client(false, &server, &opts);
    c.arg("sha256sum");
    let out = run(c, &data, 60);
    ok(&out, "TcpRcvBuf");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(&hash));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("socket buffer: asked 6291456, granted"),
        "{err}"
    );
    assert!(
        err.contains("socket buffer: asked 3145728, granted"),
        "{err}"
    );
    // A size that is not one is refused before connecting, with the keyword.
    let mut c = s.client(false, &server, &["-o", "TcpRcvBuf=lots"]);
    c.arg("true");
    let out = run(c, b"", 30);
    assert_eq!(out.status.code(), Some(255));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Bad TcpRcvBuf 'lots'"));
}

/// The number after `key` in `text` ("receive 6291456,").
fn figure_after(text: &str, key: &str) -> u64 {
    let at = text
        .find(key)
        .unwrap_or_else(|| panic!("no '{key}' in: {text}"))
        + key.len();
    text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

#[test]
fn remote_socket_buffers_are_set_within_the_servers_bound_and_stock_servers_decline() {
    let s = Setup::new("remotebuf");
    let data = random_data(4 << 20, 15);
    let hash = sha256(&data);
    let server = s.start(false, "RemoteBufMax 16M");
    let opts = ["-v", "-o", "RemoteRcvBuf=3M", "-o", "RemoteSndBuf=64M"];
    let mut c = s.client(false, &server, &opts);
    c.arg("sha256sum");
    let out = run(c, &data, 60);
    ok(&out, "RemoteRcvBuf");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(&hash));
    let err = String::from_utf8_lossy(&out.stderr);
    // What the server's kernel reports back: at least what was asked where
    // the sysctl allows (root may pass it), never above RemoteBufMax.
    let now = &err[err.find("buffers now:").expect("no reply logged")..];
    let rcv = figure_after(now, "receive ");
    let snd = figure_after(now, ", send ");
    assert!(rcv >= 3 << 20 && rcv <= 16 << 20, "{err}");
    assert!(snd > 0 && snd <= 16 << 20, "{err}");

    // A server that refuses (RemoteBufMax 0) and a stock one decline; the
    // session goes on.
    let refusing = s.start(false, "RemoteBufMax 0");
    let mut servers = vec![(refusing, false)];
    if !missing("/usr/sbin/sshd") {
        servers.push((s.start(true, ""), true));
    }
    for (server, openssh) in &servers {
        let mut c = s.client(false, server, &["-v", "-o", "RemoteRcvBuf=8M"]);
        c.arg("sha256sum");
        let out = run(c, &data, 60);
        ok(&out, "declined RemoteRcvBuf");
        assert!(String::from_utf8_lossy(&out.stdout).starts_with(&hash));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("the server declined"),
            "openssh={openssh}: {err}"
        );
    }
}

/// The kernel's SO_RCVBUF figures (`rb`, doubled as the kernel keeps them)
/// of the established TCP connections on local port `port`, read with
/// `ss -tm` on the server's host: what the server's socket really has.
fn server_rcvbufs(s: &Setup, server: &Server, asked: &str) -> (Vec<u64>, String) {
    let port = server.port;
    let mut c = s.client(
        false,
        server,
        &["-v", "-o", &format!("RemoteRcvBuf={asked}")],
    );
    // A moment for the grant (the reply is logged, the command runs after).
    c.arg(format!(
        "sleep 1; ss -tmn state established '( sport = :{port} )'"
    ));
    let out = run(c, b"", 60);
    ok(&out, "ss through sluice");
    let ss = String::from_utf8_lossy(&out.stdout).into_owned();
    let rbs = ss
        .split("skmem:(")
        .skip(1)
        .filter_map(|m| {
            let at = m.find(",rb")? + 3;
            m[at..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .ok()
        })
        .collect();
    (
        rbs,
        format!("{ss}\n{}", String::from_utf8_lossy(&out.stderr)),
    )
}

#[test]
fn remote_socket_buffers_respect_the_sysctl_unless_remote_buf_max_is_set() {
    if missing("ss") {
        return;
    }
    let rmem_max: u64 = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Well past the sysctl, whatever this machine has.
    let asked = (4 * rmem_max).max(64 << 20);
    let s = Setup::new("remotebuf-sysctl");

    // The default: the sysctl is the limit, nothing forced past it.
    let server = s.start(false, "");
    let (rbs, text) = server_rcvbufs(&s, &server, &asked.to_string());
    assert!(!rbs.is_empty(), "no socket in: {text}");
    for rb in &rbs {
        assert!(*rb <= 2 * rmem_max, "rb {rb} over 2 * {rmem_max}: {text}");
    }
    let log = server.log_text();
    assert!(
        log.contains(&format!(
            "RemoteRcvBuf from 127.0.0.1: asked {asked}, granted {rmem_max} (RemoteBufMax sysctl)"
        )),
        "{log}"
    );

    // Set by the administrator (here in a Match block): granted past the
    // sysctl, up to it.
    let server = s.start(
        false,
        &format!("Match Address 127.0.0.1\n  RemoteBufMax {asked}"),
    );
    let (rbs, text) = server_rcvbufs(&s, &server, &asked.to_string());
    assert!(!rbs.is_empty(), "no socket in: {text}");
    for rb in &rbs {
        assert!(
            *rb > 2 * rmem_max,
            "rb {rb} not past 2 * {rmem_max}: {text}"
        );
        assert!(*rb <= 2 * asked, "rb {rb} over 2 * {asked}: {text}");
    }

    // -T shows what applies: the sysctl, or the administrator's size.
    let cfg = s.config(free_port(), "Match User nobody\n  RemoteBufMax 1G");
    let t = |spec: &str| {
        let out = Command::new(SLUICED)
            .args(["-T", "-C", spec, "-f"])
            .arg(&cfg)
            .output()
            .unwrap();
        ok(&out, "sluiced -T");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let any = t("user=root,host=h,addr=127.0.0.1");
    assert!(any.lines().any(|l| l == "remotebufmax sysctl"), "{any}");
    let nobody = t("user=nobody,host=h,addr=127.0.0.1");
    assert!(
        nobody.lines().any(|l| l == "remotebufmax 1073741824"),
        "{nobody}"
    );
}
