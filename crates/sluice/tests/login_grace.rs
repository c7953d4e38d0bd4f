//! LoginGraceTime ends a connection even while authentication is stuck in
//! a blocking call (server/grace.rs): here a per-user Banner that is a
//! FIFO with no writer, read when the user's first request arrives.

mod common;

use common::*;
use std::time::{Duration, Instant};

#[test]
fn login_grace_time_fires_while_auth_blocks() {
    let s = Setup::new("grace");
    let fifo = s.dir.path("banner_fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let server = s.start(
        false,
        &format!(
            "LoginGraceTime 2\nMatch User *\n  Banner {}\n",
            fifo.display()
        ),
    );
    let t = Instant::now();
    let mut cmd = s.client(false, &server, &[]);
    cmd.arg("true");
    let out = run(cmd, b"", 30);
    assert!(!out.status.success());
    let took = t.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(10),
        "took {took:?}"
    );
    std::thread::sleep(Duration::from_millis(200));
    let log = server.log_text();
    assert!(
        log.contains("Timeout before authentication for 127.0.0.1 port"),
        "{log}"
    );
}
