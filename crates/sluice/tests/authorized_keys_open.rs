//! authorized_keys is read as the user, without blocking, bounded in size
//! and checked for StrictModes on what was opened (keys/user_file.rs): a
//! FIFO, a device, a symlink to a root-only file and a 1 GiB file are each
//! refused at once with sshd's log line, and sluiced does not hang on a
//! FIFO planted as authorized_keys.

mod common;

use common::*;
use sluice::keys::user_file::{self, Reader, Refused};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn nobody(home: &Path) -> Reader {
    Reader {
        name: "nobody".into(),
        uid: 65534,
        gid: 65534,
        groups: vec![65534],
        home: home.to_owned(),
    }
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Reads as `who`, asserting it took well under a second.
fn read(p: &Path, who: &Reader, strict: bool) -> Result<Vec<u8>, Refused> {
    let t = Instant::now();
    let r = user_file::read_as_user(p, who, strict);
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{p:?} took {:?}",
        t.elapsed()
    );
    r
}

#[test]
fn hostile_files_are_refused_quickly() {
    if !is_root() {
        eprintln!("skipping: needs root to read as another user");
        return;
    }
    let dir = TempDir::new("akopen");
    let home = dir.path("home");
    std::fs::create_dir(&home).unwrap();
    chmod(&dir.0, 0o755);
    chmod(&home, 0o755);
    let who = nobody(&home);

    let good = home.join("authorized_keys");
    std::fs::write(&good, "ssh-ed25519 AAAA x\n").unwrap();
    chmod(&good, 0o644);
    assert_eq!(read(&good, &who, true).unwrap(), b"ssh-ed25519 AAAA x\n");

    let fifo = home.join("fifo");
    mkfifo(&fifo);
    let r = read(&fifo, &who, true).unwrap_err();
    assert!(matches!(r, Refused::NotRegular(_)), "{r:?}");
    assert_eq!(
        r.message("nobody", "authorized keys"),
        format!(
            "User nobody authorized keys {} is not a regular file",
            fifo.display()
        )
    );

    let dev = home.join("dev");
    std::os::unix::fs::symlink("/dev/zero", &dev).unwrap();
    assert!(matches!(
        read(&dev, &who, true),
        Err(Refused::NotRegular(_))
    ));
    assert!(matches!(
        read(Path::new("/dev/zero"), &who, false),
        Err(Refused::NotRegular(_))
    ));

    // The user's credentials decide: root could read /etc/shadow, nobody cannot.
    let shadow = home.join("shadow");
    std::os::unix::fs::symlink("/etc/shadow", &shadow).unwrap();
    let r = read(&shadow, &who, false).unwrap_err();
    assert!(
        matches!(&r, Refused::Open(_, e) if e.kind() == std::io::ErrorKind::PermissionDenied),
        "{r:?}"
    );
    assert!(r
        .message("nobody", "authorized keys")
        .starts_with("Could not open user 'nobody' authorized keys"));
    let private = home.join("private");
    std::fs::write(&private, "x").unwrap();
    chmod(&private, 0o600);
    assert!(matches!(
        read(&private, &who, false),
        Err(Refused::Open(..))
    ));

    let huge = home.join("huge");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    chmod(&huge, 0o644);
    let r = read(&huge, &who, true).unwrap_err();
    assert!(matches!(r, Refused::TooLarge(_)), "{r:?}");
    assert!(r
        .message("nobody", "authorized keys")
        .starts_with("Authentication refused: authorized keys"));
    std::fs::remove_file(&huge).unwrap();

    // StrictModes on the file and on its directories up to the home.
    let writable = home.join("writable");
    std::fs::write(&writable, "x").unwrap();
    chmod(&writable, 0o666);
    let r = read(&writable, &who, true).unwrap_err();
    assert_eq!(
        r.message("nobody", "authorized keys"),
        format!(
            "Authentication refused: bad ownership or modes for file {}",
            writable.display()
        )
    );
    assert!(read(&writable, &who, false).is_ok());
    let ssh = home.join(".ssh");
    std::fs::create_dir(&ssh).unwrap();
    chmod(&ssh, 0o777);
    let inner = ssh.join("authorized_keys");
    std::fs::write(&inner, "x").unwrap();
    chmod(&inner, 0o644);
    let r = read(&inner, &who, true).unwrap_err();
    assert_eq!(
        r.message("nobody", "authorized keys"),
        format!(
            "Authentication refused: bad ownership or modes for directory {}",
            ssh.display()
        )
    );
    chmod(&ssh, 0o755);
    assert!(read(&inner, &who, true).is_ok());

    assert!(matches!(
        read(&home.join("none"), &who, true),
        Err(Refused::Missing(_))
    ));
    // The reading thread's credentials did not leak into this one.
    assert!(is_root());
}

#[test]
fn sluiced_refuses_a_fifo_as_authorized_keys() {
    let s = Setup::new("akfifo");
    let ak = s.dir.path("authorized_keys");
    std::fs::remove_file(&ak).unwrap();
    mkfifo(&ak);
    let server = s.start(false, "MaxStartups 1");
    // Each probe must end at once; with MaxStartups 1 a hung one would
    // also keep the next from being served.
    for _ in 0..3 {
        let t = Instant::now();
        let mut c = s.client(false, &server, &[]);
        c.arg("true");
        let out = run(c, b"", 20);
        assert!(
            !out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "took {:?}",
            t.elapsed()
        );
    }
    let log = server.log_text();
    let line = format!("authorized keys {} is not a regular file", ak.display());
    assert!(log.contains(&line), "{log}");
}
