//! The striped channel's local end: threads between the hub and the fds
//! the channel would otherwise have (the command's stdout, stdin and
//! stderr on the server; our stdin and stdout on the client). Each blocks
//! on its fd (poll(2) when the fd is non-blocking) or on the hub's
//! condition variable, never spins, and gives up when the transfer failed.

use super::hub::Hub;
use crate::net::pump::ChanFd;
use crate::sys::fdio;
use std::sync::Arc;
use std::thread::JoinHandle;

/// Bytes read from a source at once.
const READ: usize = 256 * 1024;
/// Bytes taken from the reassembler at once for the sink.
const WRITE: usize = 1 << 20;
/// How long a thread waits on its fd before looking at the hub again.
const POLL_MS: i32 = 200;

/// The threads of one striped channel's local end.
#[derive(Default)]
pub struct LocalThreads {
    /// The sink's writer: joined before the client exits, so every byte
    /// received is written out first.
    pub output: Option<JoinHandle<()>>,
}

fn wait_fd(fd: i32, events: libc::c_short) {
    let mut p = [libc::pollfd {
        fd,
        events,
        revents: 0,
    }];
    let _ = fdio::poll(&mut p, POLL_MS);
}

/// Reads `src` into the hub's sender until end of file, then finishes the
/// stream (EOF goes once it is all acknowledged).
pub fn spawn_input(hub: &Arc<Hub>, src: ChanFd) -> std::io::Result<JoinHandle<()>> {
    let hub = hub.clone();
    std::thread::Builder::new()
        .name("stripe-in".into())
        .spawn(move || {
            let fd = src.raw();
            let mut buf = Vec::with_capacity(READ);
            loop {
                buf.clear();
                match fdio::read_append(fd, &mut buf, READ) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) if fdio::would_block(&e) => {
                        if hub.is_closed() {
                            return;
                        }
                        wait_fd(fd, libc::POLLIN);
                        continue;
                    }
                    Err(e) => {
                        crate::log!(
                            Error,
                            "channel {}: read of local input failed: {}",
                            hub.channel(),
                            crate::io_error::describe_io_error(&e)
                        );
                        break;
                    }
                }
                let mut off = 0;
                while off < buf.len() {
                    let mut st = hub.lock();
                    while st.tx.room() == 0 && !st.closed && st.failed.is_none() {
                        st = hub.wait(st);
                    }
                    if st.closed || st.failed.is_some() {
                        return;
                    }
                    off += st.tx.push(buf.get(off..).unwrap_or_default());
                    hub.wake_senders(&st);
                }
            }
            let mut st = hub.lock();
            st.tx.finish();
            hub.wake_all(&st);
            drop(src);
        })
}

/// Writes the reassembled stream to `sink` in order; closes it (when
/// owned) after the peer's EOF and the last byte, and marks the output done.
pub fn spawn_output(hub: &Arc<Hub>, sink: ChanFd) -> std::io::Result<JoinHandle<()>> {
    let hub = hub.clone();
    std::thread::Builder::new()
        .name("stripe-out".into())
        .spawn(move || {
            let fd = sink.raw();
            let mut buf: Vec<u8> = Vec::with_capacity(WRITE);
            loop {
                buf.clear();
                {
                    let mut st = hub.lock();
                    loop {
                        if st.failed.is_some() {
                            // No EOF for a stream that stopped short: the
                            // sink stays open until the session ends (a
                            // command sees the hangup, not a clean end).
                            std::mem::forget(sink);
                            return;
                        }
                        while buf.len() < WRITE {
                            let r = st.rx.readable();
                            let n = r.len().min(WRITE - buf.len());
                            if n == 0 {
                                break;
                            }
                            buf.extend_from_slice(r.get(..n).unwrap_or_default());
                            st.rx.consume(n);
                        }
                        if !buf.is_empty() {
                            if let Some(a) = st.rx.poll_ack() {
                                st.ack_due = Some(a);
                                hub.wake_primary();
                            }
                            break;
                        }
                        if st.rx.is_finished() {
                            drop(st);
                            drop(sink);
                            let mut st = hub.lock();
                            st.output_done = true;
                            hub.wake_all(&st);
                            return;
                        }
                        if st.closed {
                            return;
                        }
                        st = hub.wait(st);
                    }
                }
                let mut off = 0;
                while off < buf.len() {
                    match fdio::write_some(fd, buf.get(off..).unwrap_or_default()) {
                        Ok(n) => off += n,
                        Err(e) if fdio::would_block(&e) => {
                            if hub.failure().is_some() {
                                std::mem::forget(sink);
                                return;
                            }
                            wait_fd(fd, libc::POLLOUT);
                        }
                        Err(e) => {
                            if e.kind() != std::io::ErrorKind::BrokenPipe {
                                crate::log!(
                                    Error,
                                    "channel {}: write of received data failed: {}",
                                    hub.channel(),
                                    crate::io_error::describe_io_error(&e)
                                );
                            }
                            // The reader is gone: the rest is discarded
                            // (the output is not done: never a success).
                            return;
                        }
                    }
                }
            }
        })
}

/// Reads the command's stderr into the hub for the primary to send as
/// extended data (server).
pub fn spawn_stderr(hub: &Arc<Hub>, src: ChanFd) -> std::io::Result<JoinHandle<()>> {
    let hub = hub.clone();
    std::thread::Builder::new()
        .name("stripe-err".into())
        .spawn(move || {
            let fd = src.raw();
            let mut buf = Vec::with_capacity(READ);
            loop {
                buf.clear();
                let room = {
                    let mut st = hub.lock();
                    while Hub::stderr_room(&st) == 0 && !st.closed {
                        st = hub.wait(st);
                    }
                    if st.closed {
                        return;
                    }
                    Hub::stderr_room(&st)
                };
                match fdio::read_append(fd, &mut buf, room.min(READ)) {
                    Ok(0) => break,
                    Ok(_) => {
                        let mut st = hub.lock();
                        st.stderr.extend(buf.iter());
                        hub.wake_primary();
                    }
                    Err(e) if fdio::would_block(&e) => {
                        if hub.is_closed() {
                            return;
                        }
                        wait_fd(fd, libc::POLLIN);
                    }
                    Err(_) => break,
                }
            }
            let mut st = hub.lock();
            st.stderr_eof = true;
            hub.wake_primary();
            drop(st);
        })
}
