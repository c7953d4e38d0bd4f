//! LoginGraceTime's backstop. The event loop ends an unauthenticated
//! connection at LoginGraceTime (server/auth.rs), but only while the loop
//! turns: a call that blocks (a hung file system under a home directory, a
//! name service lookup that never answers) would keep the connection, and
//! its MaxStartups slot, forever. sshd arms alarm(2) for this; a signal
//! handler may not log or allocate, so here a thread waits out the grace
//! time instead and, unless authentication disarmed it, logs sshd's line
//! and ends the process.

use std::sync::mpsc;
use std::time::Duration;

/// How long after LoginGraceTime the backstop fires: the loop's own timeout
/// comes first and disconnects politely when the loop is not stuck.
pub const SLACK: Duration = Duration::from_secs(1);

/// An armed backstop; dropping it (or [`GraceTimer::disarm`]) disarms it.
pub struct GraceTimer {
    disarm: Option<mpsc::Sender<()>>,
}

impl GraceTimer {
    /// Runs `on_expiry` on a thread after `after`, unless disarmed first.
    /// None when no thread could be started (the loop's check remains).
    pub fn arm(after: Duration, on_expiry: impl FnOnce() + Send + 'static) -> Option<GraceTimer> {
        let (tx, rx) = mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("login-grace".into())
            .spawn(move || {
                if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(after) {
                    on_expiry();
                }
            })
            .ok()?;
        Some(GraceTimer { disarm: Some(tx) })
    }

    /// Authentication finished in time: the backstop ends without firing.
    pub fn disarm(&mut self) {
        if let Some(tx) = self.disarm.take() {
            let _ = tx.send(());
        }
    }
}

impl Drop for GraceTimer {
    fn drop(&mut self) {
        self.disarm();
    }
}

/// The backstop for a connection from `ip` port `port`: sshd's log line,
/// then the process ends (nothing of the stuck call's can be trusted).
pub fn arm_for_connection(grace_secs: u64, ip: std::net::IpAddr, port: u16) -> Option<GraceTimer> {
    if grace_secs == 0 {
        return None;
    }
    GraceTimer::arm(Duration::from_secs(grace_secs) + SLACK, move || {
        crate::log!(Info, "Timeout before authentication for {ip} port {port}");
        crate::sys::process::exit_now(crate::server::penalty::EXIT_LOGIN_GRACE);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    #[test]
    fn fires_unless_disarmed() {
        let fired = Arc::new(AtomicBool::new(false));
        let f = fired.clone();
        let _t = GraceTimer::arm(Duration::from_millis(20), move || {
            f.store(true, Ordering::SeqCst)
        });
        std::thread::sleep(Duration::from_millis(300));
        assert!(fired.load(Ordering::SeqCst));

        let quiet = Arc::new(AtomicBool::new(false));
        let q = quiet.clone();
        let mut t = GraceTimer::arm(Duration::from_millis(100), move || {
            q.store(true, Ordering::SeqCst)
        })
        .unwrap();
        t.disarm();
        std::thread::sleep(Duration::from_millis(300));
        assert!(!quiet.load(Ordering::SeqCst));
    }
}
