//! `-R [bind:]port` with no destination (OpenSSH 7.6+): the server's
//! listener is a SOCKS proxy whose clients' requests arrive on the
//! forwarded-tcpip channel, and sluice connects where they ask, within
//! PermitRemoteOpen. Each channel is bound to one end of a socketpair; a
//! thread serves the other end: the SOCKS4/4a/5 handshake (client/socks.rs
//! parses it), the connect, then a copy each way until both sides end.
//! Blocking I/O on its own thread keeps the pump's loop out of it; these
//! are interactive-sized streams, not sluice's bulk path.

use crate::client::setting_error::SettingError;
use crate::client::socks::{self, Parsed};
use crate::log;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Most bytes a SOCKS request may take before it is refused.
const MAX_REQUEST: usize = 1024;
/// A SOCKS client that does not finish its request in this long is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(60);
/// Most channels served at once: the server opens them, so it must not be
/// able to make us start threads without bound.
const MAX_ACTIVE: usize = 256;
static ACTIVE: AtomicUsize = AtomicUsize::new(0);

/// PermitRemoteOpen (ssh_config(5)): `any` (the default), `none`, or
/// `host:port` entries, `*` for either part.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum PermitRemoteOpen {
    /// No restriction.
    #[default]
    Any,
    /// Only these (host, port) pairs; empty: none.
    Only(Vec<(String, String)>),
}

impl PermitRemoteOpen {
    /// Parses the keyword's value; Err is the message for a bad entry.
    pub fn parse(value: &str) -> Result<Self, SettingError> {
        let words: Vec<&str> = value.split_whitespace().collect();
        match words.as_slice() {
            [] | ["any"] => return Ok(PermitRemoteOpen::Any),
            ["none"] => return Ok(PermitRemoteOpen::Only(Vec::new())),
            _ => {}
        }
        let mut v = Vec::new();
        for w in words {
            let bad = || {
                SettingError::bad(
                    "PermitRemoteOpen entry",
                    w,
                    "host:port, [addr]:port, any or none",
                )
            };
            let (host, port) = match w.strip_prefix('[') {
                Some(rest) => {
                    let (h, p) = rest.split_once("]:").ok_or_else(bad)?;
                    (h, p)
                }
                None => w.rsplit_once(':').ok_or_else(bad)?,
            };
            if host.is_empty() || !(port == "*" || port.parse::<u16>().is_ok_and(|p| p != 0)) {
                return Err(bad());
            }
            v.push((host.to_ascii_lowercase(), port.to_owned()));
        }
        Ok(PermitRemoteOpen::Only(v))
    }

    /// Whether a SOCKS request for `host`:`port` may be connected.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        match self {
            PermitRemoteOpen::Any => true,
            PermitRemoteOpen::Only(v) => v.iter().any(|(h, p)| {
                (h == "*" || h.eq_ignore_ascii_case(host))
                    && (p == "*" || p.parse::<u16>() == Ok(port))
            }),
        }
    }
}

/// Serves one forwarded-tcpip channel's SOCKS client on `ours` (the other
/// end of the channel's socketpair), on a thread of its own.
pub fn serve(ours: UnixStream, permit: PermitRemoteOpen) {
    if ACTIVE.fetch_add(1, Ordering::Relaxed) >= MAX_ACTIVE {
        ACTIVE.fetch_sub(1, Ordering::Relaxed);
        log!(
            Info,
            "remote SOCKS forward: more than {MAX_ACTIVE} at once; channel closed"
        );
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("remote-socks".into())
        .spawn(move || {
            if let Err(why) = serve_one(ours, &permit) {
                log!(Info, "remote SOCKS forward: {why}");
            }
            ACTIVE.fetch_sub(1, Ordering::Relaxed);
        });
    if let Err(e) = spawned {
        ACTIVE.fetch_sub(1, Ordering::Relaxed);
        log!(Error, "remote SOCKS forward: no thread: {e}");
    }
}

/// Why one remote SOCKS connection was dropped (logged, never fatal).
#[derive(Debug)]
enum SocksError {
    TooLong,
    ClosedMidRequest,
    Read(std::io::Error),
    NoMethod,
    Refused(&'static str),
    NotPermitted {
        host: String,
        port: u16,
    },
    Connect {
        host: String,
        port: u16,
        error: std::io::Error,
    },
    Reply(std::io::Error),
    Io(std::io::Error),
}

impl std::fmt::Display for SocksError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SocksError::TooLong => f.write_str("SOCKS request too long"),
            SocksError::ClosedMidRequest => f.write_str("SOCKS client closed mid-request"),
            SocksError::Read(e) => write!(f, "SOCKS client: {e}"),
            SocksError::NoMethod => {
                f.write_str("SOCKS5 client offers no method without authentication")
            }
            SocksError::Refused(why) => f.write_str(why),
            SocksError::NotPermitted { host, port } => write!(
                f,
                "refused to connect to {host} port {port}: not permitted by PermitRemoteOpen"
            ),
            SocksError::Connect { host, port, error } => {
                write!(f, "connect to {host} port {port}: {error}")
            }
            SocksError::Reply(e) => write!(f, "SOCKS reply: {e}"),
            SocksError::Io(e) => write!(f, "{e}"),
        }
    }
}

fn serve_one(mut c: UnixStream, permit: &PermitRemoteOpen) -> Result<(), SocksError> {
    let _ = c.set_read_timeout(Some(HANDSHAKE_TIMEOUT));
    let mut buf: Vec<u8> = Vec::new();
    let mut greeted = false;
    let (version, host, port) = loop {
        let parsed = if greeted {
            socks::parse5_request(&buf)
        } else {
            socks::parse_first(&buf)
        };
        match parsed {
            Parsed::More => {
                if buf.len() >= MAX_REQUEST {
                    return Err(SocksError::TooLong);
                }
                let mut chunk = [0u8; 512];
                match c.read(&mut chunk) {
                    Ok(0) => return Err(SocksError::ClosedMidRequest),
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    Err(e) => return Err(SocksError::Read(e)),
                }
            }
            Parsed::Greeting { len, ok } => {
                buf.drain(..len);
                let _ = c.write_all(&[5, if ok { 0 } else { 0xff }]);
                if !ok {
                    return Err(SocksError::NoMethod);
                }
                greeted = true;
            }
            Parsed::Connect {
                len,
                version,
                host,
                port,
            } => {
                buf.drain(..len);
                break (version, host, port);
            }
            Parsed::Refuse(reply, why) => {
                if let Some(r) = reply {
                    let _ = c.write_all(&r);
                }
                return Err(SocksError::Refused(why));
            }
        }
    };
    let refuse = |c: &mut UnixStream| {
        let r = if version == 4 {
            socks::reply4(false)
        } else {
            socks::reply5(2) // connection not allowed by ruleset
        };
        let _ = c.write_all(&r);
    };
    if !permit.allows(&host, port) {
        refuse(&mut c);
        return Err(SocksError::NotPermitted { host, port });
    }
    log!(
        Debug1,
        "remote SOCKS forward: connecting to {host} port {port}"
    );
    let target = match TcpStream::connect((host.as_str(), port)) {
        Ok(t) => t,
        Err(e) => {
            let r = if version == 4 {
                socks::reply4(false)
            } else {
                socks::reply5(5) // connection refused
            };
            let _ = c.write_all(&r);
            return Err(SocksError::Connect {
                host,
                port,
                error: e,
            });
        }
    };
    let ok = if version == 4 {
        socks::reply4(true)
    } else {
        socks::reply5(0)
    };
    c.write_all(&ok).map_err(SocksError::Reply)?;
    let _ = c.set_read_timeout(None);
    let mut t_write = target.try_clone().map_err(SocksError::Io)?;
    // Bytes the client sent right behind its request go first.
    t_write.write_all(&buf).map_err(SocksError::Io)?;
    let mut c_read = c.try_clone().map_err(SocksError::Io)?;
    let up = std::thread::Builder::new()
        .name("remote-socks-up".into())
        .spawn(move || {
            let _ = std::io::copy(&mut c_read, &mut t_write);
            let _ = t_write.shutdown(Shutdown::Write);
        })
        .map_err(SocksError::Io)?;
    let mut t_read = target;
    let _ = std::io::copy(&mut t_read, &mut c);
    let _ = c.shutdown(Shutdown::Write);
    let _ = up.join();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permit_remote_open_entries() {
        assert!(matches!(
            PermitRemoteOpen::parse("any"),
            Ok(PermitRemoteOpen::Any)
        ));
        let none = PermitRemoteOpen::parse("none").unwrap();
        assert!(!none.allows("127.0.0.1", 22));
        let p = PermitRemoteOpen::parse("127.0.0.1:22 [::1]:22 LocalHost:* *:80").unwrap();
        assert!(p.allows("127.0.0.1", 22) && p.allows("::1", 22));
        assert!(p.allows("localhost", 1) && p.allows("example.org", 80));
        assert!(!p.allows("127.0.0.1", 23) && !p.allows("::1", 1));
        for bad in ["host", "h:0", "h:x", ":22", "[::1]22"] {
            assert!(PermitRemoteOpen::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn socks5_through_a_socketpair() {
        let echo = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = echo.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut s, _) = echo.accept().unwrap();
            let mut b = [0u8; 5];
            s.read_exact(&mut b).unwrap();
            s.write_all(&b).unwrap();
        });
        let (mut theirs, ours) = UnixStream::pair().unwrap();
        serve(ours, PermitRemoteOpen::Any);
        theirs.write_all(&[5, 1, 0]).unwrap();
        let mut r = [0u8; 2];
        theirs.read_exact(&mut r).unwrap();
        assert_eq!(r, [5, 0]);
        let mut req = vec![5, 1, 0, 1, 127, 0, 0, 1];
        req.extend_from_slice(&port.to_be_bytes());
        req.extend_from_slice(b"hello"); // data right behind the request
        theirs.write_all(&req).unwrap();
        let mut r = [0u8; 10];
        theirs.read_exact(&mut r).unwrap();
        assert_eq!(r[1], 0);
        let mut back = [0u8; 5];
        theirs.read_exact(&mut back).unwrap();
        assert_eq!(&back, b"hello");
        // Not permitted: SOCKS4 rejection.
        let (mut theirs, ours) = UnixStream::pair().unwrap();
        serve(ours, PermitRemoteOpen::parse("none").unwrap());
        let mut req = vec![4, 1];
        req.extend_from_slice(&port.to_be_bytes());
        req.extend_from_slice(&[127, 0, 0, 1, 0]);
        theirs.write_all(&req).unwrap();
        let mut r = [0u8; 8];
        theirs.read_exact(&mut r).unwrap();
        assert_eq!(r[1], 0x5b);
    }
}
