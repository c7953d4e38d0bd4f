//! sd_notify(3) without libsystemd: with `Type=notify` systemd names a unix
//! datagram socket in NOTIFY_SOCKET (a path, or `@name` in the abstract
//! namespace) and waits for "READY=1" before it calls the service started.
//! The listener sends it once its sockets are bound, and again after a
//! SIGHUP re-exec (same pid, so MAINPID stays right). Any failure is
//! logged at debug and otherwise ignored: readiness is a courtesy to the
//! service manager, never a reason to stop serving.

use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};

/// The environment variable systemd sets for `Type=notify` services.
pub const NOTIFY_ENV: &str = "NOTIFY_SOCKET";

/// Tells the service manager the listener is ready, when there is one.
pub fn ready() {
    let Some(target) = std::env::var_os(NOTIFY_ENV) else {
        return;
    };
    let msg = format!("READY=1\nMAINPID={}\n", std::process::id());
    match send(target.as_encoded_bytes(), msg.as_bytes()) {
        Ok(()) => crate::log!(Debug1, "sd_notify: READY=1 sent"),
        Err(e) => crate::log!(
            Debug1,
            "sd_notify: cannot notify {}: {e}",
            target.to_string_lossy()
        ),
    }
}

/// One datagram to `target`: an absolute path, or `@name` (abstract).
fn send(target: &[u8], msg: &[u8]) -> std::io::Result<()> {
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a socket address");
    let addr = match target {
        [b'@', name @ ..] if !name.is_empty() => SocketAddr::from_abstract_name(name)?,
        [b'/', ..] => SocketAddr::from_pathname(std::ffi::OsStr::from_bytes(target))?,
        _ => return Err(bad()),
    };
    let sock = UnixDatagram::unbound()?;
    let n = sock.send_to_addr(msg, &addr)?;
    if n != msg.len() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::WriteZero,
            "short datagram",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_and_abstract_targets_get_the_datagram() {
        let dir = std::env::temp_dir().join(format!("sluice-notify-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("notify");
        let _ = std::fs::remove_file(&path);
        let systemd = UnixDatagram::bind(&path).unwrap();
        send(path.as_os_str().as_encoded_bytes(), b"READY=1\n").unwrap();
        let mut buf = [0u8; 64];
        let n = systemd.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1\n");
        let _ = std::fs::remove_dir_all(&dir);

        let name = format!("sluice-notify-test-{}", std::process::id());
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let systemd = UnixDatagram::bind_addr(&addr).unwrap();
        send(format!("@{name}").as_bytes(), b"READY=1\n").unwrap();
        let n = systemd.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1\n");
    }

    #[test]
    fn bad_or_absent_targets_are_errors_not_panics() {
        assert!(send(b"", b"x").is_err());
        assert!(send(b"relative", b"x").is_err());
        assert!(send(b"@", b"x").is_err());
        assert!(send(b"/nonexistent/sluice/notify", b"x").is_err());
    }
}
