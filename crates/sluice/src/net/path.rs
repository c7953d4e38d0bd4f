//! What the kernel knows about the TCP path (TCP_INFO): the round-trip time
//! that sizes channel windows, and the figures `-v` and `Metrics` report;
//! and [`PathFeed`], which hands the RTT and receive buffer to the engine
//! (and each reading to the metrics tally, net/metrics/tally.rs).

use super::tcp_info::{parse, TcpInfo};
use sluice_proto::Connection;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// How often the path's RTT is read for the channel windows.
const PATH_POLL: Duration = Duration::from_millis(100);

/// Feeds the engine the path's RTT (TCP_INFO) and the socket's receive
/// buffer (SO_RCVBUF) every [`PATH_POLL`], so bulk windows can grow.
#[derive(Debug)]
pub struct PathFeed {
    /// When TCP_INFO was last read (None: never).
    polled: Option<Instant>,
    /// False once the socket turned out not to be TCP (a ProxyCommand pipe).
    tcp: bool,
}

impl Default for PathFeed {
    fn default() -> Self {
        PathFeed {
            polled: None,
            tcp: true,
        }
    }
}

impl PathFeed {
    /// Reads the path's figures into `conn` if it is time to.
    pub fn poll(&mut self, sock: RawFd, conn: &mut Connection, now: Instant) {
        if !self.tcp || self.polled.is_some_and(|t| now - t < PATH_POLL) {
            return;
        }
        self.polled = Some(now);
        match tcp_info(sock) {
            Some(info) => {
                super::metrics::tally::note_path(&info);
                conn.set_path_rtt(info.path_rtt());
                if let Some(b) = super::sockbuf::get(sock, super::sockbuf::Buf::Recv) {
                    conn.set_path_recv_buffer(b);
                }
            }
            None => self.tcp = false,
        }
    }
}

/// Bytes in a socket's send queue, sent or not, not yet acknowledged
/// (SIOCOUTQ); None when `fd` is not a socket.
pub fn send_queue(fd: RawFd) -> Option<u64> {
    crate::sys::tcp::send_queue(fd)
}

/// TCP_INFO of a socket; None when `fd` is not a TCP socket (a pipe from
/// ProxyCommand, say).
pub fn tcp_info(fd: RawFd) -> Option<TcpInfo> {
    let mut buf = [0u8; 256];
    let len = crate::sys::tcp::tcp_info(fd, &mut buf)?;
    Some(parse(buf.get(..len).unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn reads_a_connected_socket_and_refuses_a_pipe() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        use std::io::{Read, Write};
        (&c).write_all(&[1u8; 1000]).unwrap();
        let mut b = [0u8; 1000];
        s.read_exact(&mut b).unwrap();
        let info = tcp_info(c.as_raw_fd()).unwrap();
        assert!(info.snd_cwnd > 0);
        assert!(info.rtt > Duration::ZERO && info.rtt < Duration::from_secs(1));
        let (r, _w) = std::io::pipe().unwrap();
        assert_eq!(tcp_info(r.as_raw_fd()), None);
    }

    #[test]
    fn a_full_receiver_shows_as_receive_window_time() {
        use std::io::Write;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (_s, _) = l.accept().unwrap();
        c.set_nonblocking(true).unwrap();
        // The peer never reads: once its buffer is full, the time counts
        // as limited by its window.
        let chunk = [7u8; 65536];
        let end = std::time::Instant::now() + Duration::from_millis(300);
        while std::time::Instant::now() < end {
            if (&c).write(&chunk).is_err() {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        let info = tcp_info(c.as_raw_fd()).unwrap();
        assert!(info.busy >= Duration::from_millis(100), "{info:?}");
        assert!(info.rwnd_limited >= info.busy / 2, "{info:?}");
        assert_eq!(info.snd_wnd, 0, "{info:?}");
        assert!(info.snd_mss > 0);
    }
}
