//! The SOCKS side of `-D`: SOCKS4, SOCKS4a and SOCKS5 CONNECT with the
//! "no authentication" method only, as ssh's dynamic forwarding offers.
//! Requests are parsed from a bounded peek at the socket, then exactly the
//! request's bytes are consumed, so data a client sends right behind its
//! request stays in the socket for the channel.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

/// Most bytes a request may take (ssh's limit is of the same order).
const MAX_REQUEST: usize = 1024;

/// What a buffer holds so far.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Not enough bytes yet.
    More,
    /// A SOCKS5 greeting of `len` bytes; `ok` if it offers "no auth".
    Greeting {
        /// Bytes it took.
        len: usize,
        /// "No authentication" was offered.
        ok: bool,
    },
    /// A CONNECT request of `len` bytes.
    Connect {
        /// Bytes it took.
        len: usize,
        /// SOCKS version (4 or 5).
        version: u8,
        /// Target host (address or name).
        host: String,
        /// Target port.
        port: u16,
    },
    /// Not a request we serve; the reply to send, if any, and why.
    Refuse(Option<Vec<u8>>, &'static str),
}

fn cstr(b: &[u8]) -> Option<(&[u8], usize)> {
    let end = b.iter().position(|&c| c == 0)?;
    Some((b.get(..end)?, end + 1))
}

/// A SOCKS4/4a request.
fn parse4(b: &[u8]) -> Parsed {
    let (Some(&cmd), Some(port), Some(ip)) = (b.get(1), b.get(2..4), b.get(4..8)) else {
        return Parsed::More;
    };
    let rest = b.get(8..).unwrap_or_default();
    let Some((_user, ulen)) = cstr(rest) else {
        return Parsed::More;
    };
    let port = u16::from_be_bytes([port[0], port[1]]);
    let mut len = 8 + ulen;
    let host = if ip[..3] == [0, 0, 0] && ip[3] != 0 {
        // SOCKS4a: the name follows the user id.
        let Some((name, nlen)) = cstr(rest.get(ulen..).unwrap_or_default()) else {
            return Parsed::More;
        };
        len += nlen;
        match std::str::from_utf8(name) {
            Ok(n) if !n.is_empty() => n.to_owned(),
            _ => return Parsed::Refuse(Some(reply4(false)), "bad SOCKS4a host name"),
        }
    } else {
        std::net::Ipv4Addr::new(ip[0], ip[1], ip[2], ip[3]).to_string()
    };
    if cmd != 1 {
        return Parsed::Refuse(Some(reply4(false)), "SOCKS4 command other than CONNECT");
    }
    Parsed::Connect {
        len,
        version: 4,
        host,
        port,
    }
}

/// A SOCKS5 CONNECT request (after the greeting).
pub fn parse5_request(b: &[u8]) -> Parsed {
    let (Some(&ver), Some(&cmd), Some(&atyp)) = (b.first(), b.get(1), b.get(3)) else {
        return Parsed::More;
    };
    if ver != 5 {
        return Parsed::Refuse(None, "bad SOCKS5 request version");
    }
    let (host, at) = match atyp {
        1 => match b.get(4..8) {
            Some(a) => (
                std::net::Ipv4Addr::new(a[0], a[1], a[2], a[3]).to_string(),
                8,
            ),
            None => return Parsed::More,
        },
        3 => {
            let Some(&n) = b.get(4) else {
                return Parsed::More;
            };
            let Some(name) = b.get(5..5 + n as usize) else {
                return Parsed::More;
            };
            match std::str::from_utf8(name) {
                Ok(s) if !s.is_empty() => (s.to_owned(), 5 + n as usize),
                _ => return Parsed::Refuse(Some(reply5(1)), "bad SOCKS5 host name"),
            }
        }
        4 => match b.get(4..20).and_then(|a| <[u8; 16]>::try_from(a).ok()) {
            Some(a) => (std::net::Ipv6Addr::from(a).to_string(), 20),
            None => return Parsed::More,
        },
        _ => return Parsed::Refuse(Some(reply5(8)), "SOCKS5 address type not supported"),
    };
    let Some(p) = b.get(at..at + 2) else {
        return Parsed::More;
    };
    if cmd != 1 {
        return Parsed::Refuse(Some(reply5(7)), "SOCKS5 command other than CONNECT");
    }
    Parsed::Connect {
        len: at + 2,
        version: 5,
        host,
        port: u16::from_be_bytes([p[0], p[1]]),
    }
}

/// The first message: a SOCKS4 request or a SOCKS5 greeting.
pub fn parse_first(b: &[u8]) -> Parsed {
    match b.first() {
        None => Parsed::More,
        Some(4) => parse4(b),
        Some(5) => {
            let Some(&n) = b.get(1) else {
                return Parsed::More;
            };
            match b.get(2..2 + n as usize) {
                Some(m) => Parsed::Greeting {
                    len: 2 + n as usize,
                    ok: m.contains(&0),
                },
                None => Parsed::More,
            }
        }
        Some(_) => Parsed::Refuse(None, "not a SOCKS request"),
    }
}

/// SOCKS4 reply: granted (0x5a) or rejected (0x5b).
pub fn reply4(ok: bool) -> Vec<u8> {
    vec![0, if ok { 0x5a } else { 0x5b }, 0, 0, 0, 0, 0, 0]
}

/// SOCKS5 reply with code `rep` (0 = succeeded), bound address 0.0.0.0:0.
pub fn reply5(rep: u8) -> Vec<u8> {
    vec![5, rep, 0, 1, 0, 0, 0, 0, 0, 0]
}

/// A SOCKS client being served on an accepted socket.
pub struct Handshake {
    /// The client's socket (non-blocking).
    pub sock: OwnedFd,
    greeted: bool,
}

/// Where a handshake stands after reading.
pub enum Step {
    /// Waiting for more bytes.
    Wait,
    /// A CONNECT to open a channel for; reply with [`reply4`]/[`reply5`].
    Connect {
        /// Version, for the reply.
        version: u8,
        /// Target host.
        host: String,
        /// Target port.
        port: u16,
    },
    /// Give up on this client.
    Fail(String),
}

fn peek(fd: BorrowedFd<'_>, buf: &mut [u8]) -> std::io::Result<usize> {
    Ok(rustix::net::recv(fd, buf, rustix::net::RecvFlags::PEEK)?.0)
}

/// Wakes poll only once the socket holds `n` bytes (SO_RCVLOWAT): a
/// request is parsed from a peek, so the bytes already seen stay readable
/// and would otherwise wake the loop again and again.
fn set_lowat(fd: BorrowedFd<'_>, n: usize) {
    // rustix has no SO_RCVLOWAT.
    let v = n.min(MAX_REQUEST) as libc::c_int;
    crate::sys::fdio::set_int_opt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVLOWAT, v);
}

/// The client shut down its side (its bytes so far are all there will be).
fn peer_closed(fd: BorrowedFd<'_>) -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut p = [PollFd::from_borrowed_fd(fd, PollFlags::RDHUP)];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    poll(&mut p, Some(&now)).unwrap_or(0) > 0
        && p[0]
            .revents()
            .intersects(PollFlags::RDHUP | PollFlags::HUP | PollFlags::ERR)
}

fn consume(fd: BorrowedFd<'_>, n: usize) {
    let mut v = Vec::with_capacity(n);
    let _ = crate::sys::fdio::read_append(fd.as_raw_fd(), &mut v, n);
}

/// Best effort: replies are a few bytes to a socket that just wrote to us.
pub fn send(fd: &OwnedFd, data: &[u8]) {
    let _ = crate::sys::fdio::write_some(fd.as_raw_fd(), data);
}

impl Handshake {
    /// Serves a freshly accepted client.
    pub fn new(sock: OwnedFd) -> Self {
        Handshake {
            sock,
            greeted: false,
        }
    }

    /// Reads what the client sent so far.
    pub fn step(&mut self) -> Step {
        let fd = self.sock.as_fd();
        loop {
            let mut buf = [0u8; MAX_REQUEST];
            let n = match peek(fd, &mut buf) {
                Ok(0) => return Step::Fail("SOCKS client closed the connection".into()),
                Ok(n) => n,
                Err(e) if crate::sys::fdio::would_block(&e) => return Step::Wait,
                Err(e) => return Step::Fail(format!("SOCKS client: {e}")),
            };
            let b = buf.get(..n).unwrap_or_default();
            let parsed = if self.greeted {
                parse5_request(b)
            } else {
                parse_first(b)
            };
            match parsed {
                Parsed::More if n >= MAX_REQUEST => {
                    return Step::Fail("SOCKS request too long".into())
                }
                Parsed::More if peer_closed(fd) => {
                    return Step::Fail("SOCKS client closed mid-request".into())
                }
                Parsed::More => {
                    set_lowat(fd, n + 1);
                    return Step::Wait;
                }
                Parsed::Greeting { len, ok } => {
                    consume(fd, len);
                    if !ok {
                        send(&self.sock, &[5, 0xff]);
                        return Step::Fail("SOCKS5 client offers no method we support".into());
                    }
                    send(&self.sock, &[5, 0]);
                    set_lowat(fd, 1);
                    self.greeted = true;
                }
                Parsed::Connect {
                    len,
                    version,
                    host,
                    port,
                } => {
                    consume(fd, len);
                    // The channel reads any byte from now on.
                    set_lowat(fd, 1);
                    return Step::Connect {
                        version,
                        host,
                        port,
                    };
                }
                Parsed::Refuse(reply, why) => {
                    if let Some(r) = reply {
                        send(&self.sock, &r);
                    }
                    return Step::Fail(why.into());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socks4_and_4a() {
        let r = [4, 1, 0, 80, 10, 0, 0, 1, b'u', 0];
        assert_eq!(
            parse_first(&r),
            Parsed::Connect {
                len: 10,
                version: 4,
                host: "10.0.0.1".into(),
                port: 80
            }
        );
        assert_eq!(parse_first(&r[..9]), Parsed::More);
        let mut a = vec![4, 1, 0x1f, 0x90, 0, 0, 0, 1, 0];
        a.extend_from_slice(b"example.org\0extra");
        assert_eq!(
            parse_first(&a),
            Parsed::Connect {
                len: 21,
                version: 4,
                host: "example.org".into(),
                port: 8080
            }
        );
        assert!(matches!(
            parse_first(&[4, 2, 0, 80, 1, 1, 1, 1, 0]),
            Parsed::Refuse(Some(_), _)
        ));
    }

    #[test]
    fn socks5() {
        assert_eq!(
            parse_first(&[5, 2, 2, 0]),
            Parsed::Greeting { len: 4, ok: true }
        );
        assert_eq!(
            parse_first(&[5, 1, 2]),
            Parsed::Greeting { len: 3, ok: false }
        );
        assert_eq!(parse_first(&[5, 3, 0]), Parsed::More);
        let mut r = vec![5, 1, 0, 3, 9];
        r.extend_from_slice(b"localhost");
        r.extend_from_slice(&[0, 22]);
        assert_eq!(
            parse5_request(&r),
            Parsed::Connect {
                len: 16,
                version: 5,
                host: "localhost".into(),
                port: 22
            }
        );
        assert_eq!(parse5_request(&r[..15]), Parsed::More);
        let mut v6 = vec![5, 1, 0, 4];
        v6.extend_from_slice(&std::net::Ipv6Addr::LOCALHOST.octets());
        v6.extend_from_slice(&[1, 0]);
        assert!(
            matches!(parse5_request(&v6), Parsed::Connect { port: 256, ref host, .. } if host == "::1")
        );
        assert!(matches!(
            parse5_request(&[5, 2, 0, 1, 1, 1, 1, 1, 0, 1]),
            Parsed::Refuse(Some(_), _)
        ));
        assert!(matches!(parse5_request(&[5, 1, 0, 9]), Parsed::Refuse(..)));
        assert!(matches!(parse_first(&[7]), Parsed::Refuse(None, _)));
    }
}
