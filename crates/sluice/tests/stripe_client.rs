//! `sluice -o Streams=N host command` against real servers (PROTOCOL.md,
//! "Channel striping"): the session channel striped when sluiced grants
//! it, 64 MiB up into `sha256sum` and down from `cat`, hash-checked;
//! secondaries the server does not admit leave the transfer on the
//! connections it has; a stock sshd and `MaxStreams 1` decline and the
//! transfer runs as an ordinary channel; stderr and the exit status still
//! travel on the primary; a connection cut mid-transfer ends in exit 255
//! with a message, never a short success.

mod common;
use common::*;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const SIZE: usize = 64 << 20;

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Uploads `data` into `sha256sum` with `opts`; returns stdout's hash and stderr.
fn upload(
    s: &Setup,
    server: &Server,
    openssh: bool,
    opts: &[&str],
    data: &[u8],
) -> (String, String) {
    let _ = openssh;
    let c = s.client_at(false, server, "DEBUG1", opts);
    let mut c = c;
    c.arg("sha256sum");
    let out = run(c, data, 120);
    ok(&out, &format!("upload, server log: {}", server.log_text()));
    let text = String::from_utf8_lossy(&out.stdout);
    (
        text.split_whitespace().next().unwrap_or("").to_owned(),
        stderr_of(&out),
    )
}

#[test]
fn striped_upload_and_download_into_sluiced_hash_right() {
    let s = Setup::new("stripe-client");
    let server = s.start(false, "");
    let data = random_data(SIZE, 19);
    let (hash, err) = upload(&s, &server, false, &["-o", "Streams=4"], &data);
    assert_eq!(hash, sha256(&data), "{err}");
    assert!(err.contains("Striping granted"), "{err}");
    assert!(err.contains("striped; dialling 3 secondary"), "{err}");
    assert!(
        server.log_text().contains("striping granted"),
        "{}",
        server.log_text()
    );

    let file = s.dir.path("down.bin");
    std::fs::write(&file, &data).unwrap();
    let mut c = s.client_at(false, &server, "DEBUG1", &["-n", "-o", "Streams=4"]);
    c.arg(format!("cat {}", file.display()));
    let out = run(c, b"", 120);
    ok(&out, "download");
    assert_eq!(out.stdout.len(), SIZE);
    assert_eq!(sha256(&out.stdout), sha256(&data), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("striped"), "{}", stderr_of(&out));
}

#[test]
fn stderr_and_exit_status_stay_on_the_primary() {
    let s = Setup::new("stripe-status");
    let server = s.start(false, "");
    let mut c = s.client(false, &server, &["-o", "Streams=2"]);
    c.arg("head -c 1000000 /dev/zero; echo oops >&2; exit 7");
    let out = run(c, b"", 60);
    assert_eq!(out.status.code(), Some(7), "{}", stderr_of(&out));
    assert_eq!(out.stdout.len(), 1_000_000);
    assert_eq!(stderr_of(&out), "oops\n");
}

#[test]
fn max_streams_one_and_stock_sshd_decline_and_the_hash_is_right() {
    let s = Setup::new("stripe-decline-client");
    let data = random_data(8 << 20, 5);
    let server = s.start(false, "MaxStreams 1");
    let (hash, err) = upload(&s, &server, false, &["-o", "Streams=4"], &data);
    assert_eq!(hash, sha256(&data));
    assert!(err.contains("Striping declined"), "{err}");
    assert!(!err.contains("striped;"), "{err}");
    assert!(err.contains("goes on as an ordinary channel"), "{err}");
    // Refused after our first bytes went as plain data: the rest of the
    // channel is an ordinary one both ways (a download, stderr, status).
    let file = s.dir.path("declined-down.bin");
    std::fs::write(&file, &data).unwrap();
    let mut c = s.client_at(false, &server, "DEBUG1", &["-o", "Streams=4"]);
    c.arg(format!("wc -c >&2; cat {}; exit 3", file.display()));
    let out = run(c, &data[..3 << 20], 120);
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    assert_eq!(sha256(&out.stdout), sha256(&data), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains(&format!("{}\n", 3 << 20)),
        "{}",
        stderr_of(&out)
    );
    drop(server);

    if missing("/usr/sbin/sshd") {
        return;
    }
    let sshd = s.start(true, "");
    let (hash, err) = upload(&s, &sshd, true, &["-o", "Streams=4"], &data);
    assert_eq!(hash, sha256(&data));
    assert!(err.contains("Striping declined"), "{err}");
}

#[test]
fn streams_one_does_not_ask() {
    let s = Setup::new("stripe-one");
    let server = s.start(false, "");
    let data = random_data(1 << 20, 6);
    let (hash, err) = upload(&s, &server, false, &["-o", "Streams=1"], &data);
    assert_eq!(hash, sha256(&data));
    assert!(!err.contains("Streams"), "{err}");
    assert!(!server.log_text().contains("stripe request"));
}

/// A relay in front of `port` that cuts the first connection (the
/// primary, both ways) once `cut_after` bytes went from client to server
/// over all of them: how the stripe splits the data varies from run to run
/// (on a busy machine the carriers took nearly all of it), the total does
/// not.
fn cutting_relay(port: u16, cut_after: u64) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let me = l.local_addr().unwrap().port();
    let total = Arc::new(AtomicU64::new(0));
    std::thread::spawn(move || {
        for (i, c) in l.incoming().enumerate() {
            let Ok(c) = c else { return };
            let Ok(u) = TcpStream::connect(("127.0.0.1", port)) else {
                return;
            };
            if i == 0 {
                let (c, u, total) = (
                    c.try_clone().unwrap(),
                    u.try_clone().unwrap(),
                    total.clone(),
                );
                std::thread::spawn(move || {
                    while total.load(Ordering::Relaxed) <= cut_after {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                    let _ = c.shutdown(Shutdown::Both);
                    let _ = u.shutdown(Shutdown::Both);
                });
            }
            for (mut from, mut to, count) in [
                (c.try_clone().unwrap(), u.try_clone().unwrap(), true),
                (u.try_clone().unwrap(), c.try_clone().unwrap(), false),
            ] {
                let total = total.clone();
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 64 * 1024];
                    loop {
                        let n = match from.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        if to.write_all(&buf[..n]).is_err() {
                            break;
                        }
                        if count {
                            total.fetch_add(n as u64, Ordering::Relaxed);
                        }
                    }
                    let _ = from.shutdown(Shutdown::Both);
                    let _ = to.shutdown(Shutdown::Both);
                });
            }
        }
    });
    me
}

#[test]
fn the_primary_cut_mid_transfer_fails_loudly() {
    let s = Setup::new("stripe-cut");
    let server = s.start(false, "");
    let port = cutting_relay(server.port, 16 << 20);
    let data = random_data(SIZE, 23);
    let mut c = s.client_to(false, port, "ERROR", &["-o", "Streams=4"]);
    c.arg("sha256sum");
    let out = run(c, &data, 120);
    // The primary carries the session: cut, the run ends loudly, naming
    // the striped channel and what was acknowledged.
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(255), "{err}");
    assert!(
        err.contains("channel 0: striped transfer incomplete") && err.contains("acknowledged"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "no hash of a short stream");
}
