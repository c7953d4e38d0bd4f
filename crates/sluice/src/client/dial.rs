//! Opening a TCP connection to the server ([`Dial`]): the address family,
//! BindAddress/BindInterface, ConnectTimeout, socket buffers, TCPKeepAlive
//! and IPQoS. A striped session's secondary connections dial the same.

use super::error::ConnectError;
use super::options::ClientOptions;
use crate::log;
use crate::net::sockbuf::{self, Buf};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::OwnedFd;
use std::time::Duration;

/// Where and how to open a TCP connection to the server (a secondary
/// connection of a striped session dials the same).
#[derive(Debug, Clone)]
pub struct Dial {
    /// Host (after HostName).
    pub host: String,
    /// Port.
    pub port: u16,
    /// 4 or 6 to restrict the address family.
    pub family: Option<u8>,
    /// ConnectTimeout.
    pub connect_timeout: Option<Duration>,
    /// BindAddress and BindInterface.
    pub bind: (Option<String>, Option<String>),
    /// TcpRcvBuf (0: automatic).
    pub tcp_rcvbuf: u64,
    /// TcpSndBuf (0: automatic).
    pub tcp_sndbuf: u64,
    /// TCPKeepAlive.
    pub keepalive: bool,
    /// IPQoS's mark for this connection (interactive or bulk, as the
    /// session asks for a terminal or not); None: the system's.
    pub tos: Option<u8>,
}

impl Dial {
    /// The dial of `opts`.
    pub fn of(opts: &ClientOptions) -> Dial {
        Dial {
            host: opts.host.clone(),
            port: opts.port,
            family: opts.family,
            connect_timeout: opts.connect_timeout,
            bind: opts.bind.clone(),
            tcp_rcvbuf: opts.tcp_rcvbuf,
            tcp_sndbuf: opts.tcp_sndbuf,
            keepalive: opts.keepalive,
            tos: opts.tos,
        }
    }

    /// A connected, non-blocking socket with TCP_NODELAY.
    pub fn connect(&self) -> Result<OwnedFd, ConnectError> {
        let s = tcp_connect(self)?;
        let _ = s.set_nodelay(true);
        s.set_nonblocking(true)
            .map_err(|error| ConnectError::Socket {
                what: "sluice: socket",
                error,
            })?;
        Ok(OwnedFd::from(s))
    }
}

pub(super) fn tcp_connect(opts: &Dial) -> Result<TcpStream, ConnectError> {
    let addrs: Vec<_> = (opts.host.as_str(), opts.port)
        .to_socket_addrs()
        .map_err(|error| ConnectError::Resolve {
            host: opts.host.clone(),
            error,
        })?
        .filter(|a| match opts.family {
            Some(4) => a.is_ipv4(),
            Some(6) => a.is_ipv6(),
            _ => true,
        })
        .collect();
    let mut last = None;
    for a in &addrs {
        log!(
            Debug1,
            "Connecting to {} [{}] port {}.",
            opts.host,
            a.ip(),
            a.port()
        );
        // Unset: the automatic size (only where it beats autotuning).
        let size = |asked: u64, b: Buf| match asked {
            0 => sockbuf::auto_size(b).unwrap_or(0),
            n => n,
        };
        let bufs = [
            (Buf::Recv, size(opts.tcp_rcvbuf, Buf::Recv)),
            (Buf::Send, size(opts.tcp_sndbuf, Buf::Send)),
        ];
        let from =
            crate::net::local_addr::for_target(a, opts.bind.0.as_deref(), opts.bind.1.as_deref())
                .map_err(ConnectError::Bind)?;
        let r = if bufs.iter().any(|b| b.1 > 0) || from.is_some() {
            sockbuf::connect(*a, from, opts.connect_timeout, bufs).map(|(s, granted)| {
                for g in granted {
                    log!(
                        Debug1,
                        "socket buffer: asked {}, granted {}",
                        g.asked,
                        g.granted
                    );
                    // The automatic size asks for the sysctl's cap: no advice.
                    if let Some(advice) = g.advice {
                        log!(Info, "{advice}");
                    }
                }
                s
            })
        } else {
            match opts.connect_timeout {
                Some(t) => TcpStream::connect_timeout(a, t),
                None => TcpStream::connect(a),
            }
        };
        match r {
            Ok(s) => {
                log!(Debug1, "Connection established.");
                marks(&s, opts);
                return Ok(s);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(match last {
        Some(error) => ConnectError::Connect {
            host: opts.host.clone(),
            port: opts.port,
            error,
        },
        None => ConnectError::NoAddress {
            host: opts.host.clone(),
        },
    })
}

/// TCPKeepAlive and IPQoS on a new connection.
fn marks(s: &TcpStream, d: &Dial) {
    use std::os::fd::AsFd;
    if let Err(e) = crate::net::qos::set_keepalive(s.as_fd(), d.keepalive) {
        log!(Debug1, "setsockopt SO_KEEPALIVE: {e}");
    }
    if let Some(tos) = d.tos {
        if let Err(e) = crate::net::qos::set_tos(s.as_fd(), tos) {
            log!(Info, "setsockopt IP_TOS {tos:#x}: {e}");
        }
    }
}
