//! A client process on a pty this test owns (openpty; the client is its
//! session leader, so resizing the master sends it SIGWINCH): type into
//! it, wait for output, resize, read back whether it put the terminal raw.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A client running on a pty of ours.
pub(crate) struct Term {
    master: OwnedFd,
    pub(crate) child: Child,
    /// Output not yet matched.
    pub(crate) buf: Vec<u8>,
    /// Everything read, for failure messages.
    all: Vec<u8>,
}

fn winsize(rows: u16, cols: u16) -> libc::winsize {
    libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    }
}

impl Term {
    pub(crate) fn spawn(mut cmd: Command, rows: u16, cols: u16) -> Term {
        let (mut m, mut s) = (-1, -1);
        let ws = winsize(rows, cols);
        // SAFETY: valid out-pointers; ws outlives the call.
        let rc =
            unsafe { libc::openpty(&mut m, &mut s, std::ptr::null_mut(), std::ptr::null(), &ws) };
        assert_eq!(rc, 0, "openpty");
        // SAFETY: openpty returned two fds we own.
        let (master, slave) = unsafe { (OwnedFd::from_raw_fd(m), OwnedFd::from_raw_fd(s)) };
        // SAFETY: plain fcntl; neither end may leak into other children.
        unsafe {
            libc::fcntl(m, libc::F_SETFD, libc::FD_CLOEXEC);
            libc::fcntl(s, libc::F_SETFD, libc::FD_CLOEXEC);
        }
        cmd.env("TERM", "xterm")
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: async-signal-safe calls only.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("spawn client");
        drop(cmd);
        Term {
            master,
            child,
            buf: Vec::new(),
            all: Vec::new(),
        }
    }

    pub(crate) fn send(&mut self, data: &[u8]) {
        let mut f = std::fs::File::from(self.master.try_clone().unwrap());
        f.write_all(data).unwrap();
    }

    /// Reads for up to `ms`; false at EOF (the client is gone).
    pub(crate) fn read_some(&mut self, ms: i32) -> bool {
        let mut p = [libc::pollfd {
            fd: self.master.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        // SAFETY: valid pollfd array.
        if unsafe { libc::poll(p.as_mut_ptr(), 1, ms) } <= 0 {
            return true;
        }
        let mut b = [0u8; 4096];
        let mut f = std::fs::File::from(self.master.try_clone().unwrap());
        match f.read(&mut b) {
            Ok(n) if n > 0 => {
                self.buf.extend_from_slice(&b[..n]);
                self.all.extend_from_slice(&b[..n]);
                true
            }
            _ => false,
        }
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.all).into_owned()
    }

    /// Waits for `needle`; returns the output up to it and consumes it.
    pub(crate) fn expect(&mut self, needle: &str, secs: u64) -> String {
        let end = Instant::now() + Duration::from_secs(secs);
        loop {
            let hay = String::from_utf8_lossy(&self.buf).into_owned();
            if let Some(i) = hay.find(needle) {
                let upto = hay[..i + needle.len()].to_owned();
                self.buf = hay.as_bytes()[i + needle.len()..].to_vec();
                return upto;
            }
            assert!(
                Instant::now() < end,
                "no '{needle}' within {secs} s; output:\n{}",
                self.text()
            );
            if !self.read_some(100) {
                assert!(
                    String::from_utf8_lossy(&self.buf).contains(needle),
                    "client exited before '{needle}'; output:\n{}",
                    self.text()
                );
            }
        }
    }

    /// Types `cmd` and waits for the output of `echo <tag>$((6*7))` after it.
    pub(crate) fn run(&mut self, cmd: &str, tag: &str) -> String {
        self.send(format!("{cmd}; echo {tag}$((6*7))\r").as_bytes());
        self.expect(&format!("{tag}42"), 30)
    }

    pub(crate) fn resize(&mut self, rows: u16, cols: u16) {
        let ws = winsize(rows, cols);
        // SAFETY: valid fd and pointer.
        unsafe { libc::ioctl(self.master.as_raw_fd(), libc::TIOCSWINSZ, &ws) };
    }

    /// The client put the terminal in raw mode (ICANON and ECHO off).
    pub(crate) fn lflag_raw(&self) -> bool {
        // SAFETY: termios is plain data; on Linux the master reports the pair's settings.
        let mut tio: libc::termios = unsafe { std::mem::zeroed() };
        assert_eq!(
            // SAFETY: valid fd and pointer.
            unsafe { libc::tcgetattr(self.master.as_raw_fd(), &mut tio) },
            0
        );
        tio.c_lflag & (libc::ICANON | libc::ECHO) == 0
    }

    pub(crate) fn wait(&mut self, secs: u64) -> ExitStatus {
        let end = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            if Instant::now() > end {
                let _ = self.child.kill();
                panic!(
                    "client did not exit within {secs} s; output:\n{}",
                    self.text()
                );
            }
            if !self.read_some(100) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
