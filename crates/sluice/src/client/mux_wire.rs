//! OpenSSH's multiplexing protocol on the wire (PROTOCOL.mux, version 4):
//! message numbers, framing, and the fields of the messages more than one
//! side builds or reads. The master is client/mux.rs, `-O` commands
//! client/mux_control.rs, passengers client/mux_client.rs.

use super::forward_spec::{Endpoint, Forward, Kind};
use std::io::Read;
use std::os::unix::net::UnixStream;

pub(super) const HELLO: u32 = 0x0000_0001;
pub(super) const C_NEW_SESSION: u32 = 0x1000_0002;
pub(super) const C_ALIVE_CHECK: u32 = 0x1000_0004;
pub(super) const C_TERMINATE: u32 = 0x1000_0005;
pub(super) const C_NEW_STDIO_FWD: u32 = 0x1000_0008;
pub(super) const C_STOP_LISTENING: u32 = 0x1000_0009;
pub(super) const S_OK: u32 = 0x8000_0001;
pub(super) const S_PERMISSION_DENIED: u32 = 0x8000_0002;
pub(super) const S_FAILURE: u32 = 0x8000_0003;
pub(super) const S_EXIT_MESSAGE: u32 = 0x8000_0004;
pub(super) const S_ALIVE: u32 = 0x8000_0005;
pub(super) const S_SESSION_OPENED: u32 = 0x8000_0006;
pub(super) const S_TTY_ALLOC_FAIL: u32 = 0x8000_0008;
pub(super) const VERSION: u32 = 4;
/// A control message is a few words; anything longer is not one.
pub(super) const MAX_MESSAGE: usize = 256 * 1024;
pub(super) const C_OPEN_FWD: u32 = 0x1000_0006;
pub(super) const C_CLOSE_FWD: u32 = 0x1000_0007;
/// Answers a remote forward whose port the server chose.
pub(super) const S_REMOTE_PORT: u32 = 0x8000_0007;
/// A port of (unsigned) -2: the host is a Unix socket's path.
pub(super) const PORT_STREAMLOCAL: u32 = 0xffff_fffe;
pub(super) const FWD_LOCAL: u32 = 1;
pub(super) const FWD_REMOTE: u32 = 2;
pub(super) const FWD_DYNAMIC: u32 = 3;

/// Reads PROTOCOL.mux's fields in order; None past the end.
pub(super) struct Fields<'a>(pub(super) &'a [u8]);

impl<'a> Fields<'a> {
    pub(super) fn u32(&mut self) -> Option<u32> {
        let (h, t) = self.0.split_at_checked(4)?;
        self.0 = t;
        Some(u32::from_be_bytes(h.try_into().ok()?))
    }

    /// A flag: PROTOCOL.mux says bool, ssh sends (and reads) a uint32.
    pub(super) fn flag(&mut self) -> Option<bool> {
        Some(self.u32()? != 0)
    }

    pub(super) fn string(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        let (h, t) = self.0.split_at_checked(n)?;
        self.0 = t;
        Some(h)
    }
}

/// Builds one message: its fields in order, its length put in front.
pub(super) struct Msg(Vec<u8>);

impl Msg {
    pub(super) fn new() -> Msg {
        Msg(vec![0; 4])
    }

    pub(super) fn u32(&mut self, v: u32) -> &mut Msg {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }

    pub(super) fn string(&mut self, s: &[u8]) -> &mut Msg {
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s);
        self
    }

    pub(super) fn finish(&mut self) -> Vec<u8> {
        let mut m = std::mem::take(&mut self.0);
        let len = (m.len() - 4) as u32;
        m[..4].copy_from_slice(&len.to_be_bytes());
        m
    }
}

/// A message of `words` and an optional closing string (a reason).
pub(super) fn frame(words: &[u32], text: Option<&str>) -> Vec<u8> {
    let mut m = Msg::new();
    for w in words {
        m.u32(*w);
    }
    if let Some(t) = text {
        m.string(t.as_bytes());
    }
    m.finish()
}

pub(super) fn read_message(s: &mut UnixStream) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_MESSAGE {
        return Err(std::io::Error::other("message too long"));
    }
    let mut body = vec![0u8; len];
    s.read_exact(&mut body)?;
    Ok(body)
}

pub(super) fn word(body: &[u8], i: usize) -> Option<u32> {
    let b = body.get(i * 4..i * 4 + 4)?;
    Some(u32::from_be_bytes(b.try_into().ok()?))
}

/// The string after `words` leading words (a reason), lossily.
pub(super) fn reason(body: &[u8], words: usize) -> String {
    let n = word(body, words).unwrap_or(0) as usize;
    body.get(words * 4 + 4..words * 4 + 4 + n)
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}

fn endpoint(host: &[u8], port: u32) -> Option<Endpoint> {
    let host = String::from_utf8(host.to_vec()).ok()?;
    if port == PORT_STREAMLOCAL {
        return (!host.is_empty()).then_some(Endpoint::Unix(host));
    }
    Some(Endpoint::Tcp {
        host: (!host.is_empty()).then_some(host),
        port: u16::try_from(port).ok()?,
    })
}

/// A MUX_C_OPEN_FWD / MUX_C_CLOSE_FWD body after its type and request id.
pub(super) fn parse_fwd(body: &[u8]) -> Option<(Kind, Forward)> {
    let mut f = Fields(body.get(8..)?);
    let kind = match f.u32()? {
        FWD_LOCAL => Kind::Local,
        FWD_REMOTE => Kind::Remote,
        FWD_DYNAMIC => Kind::Dynamic,
        _ => return None,
    };
    let listen = endpoint(f.string()?, f.u32()?)?;
    let (host, port) = (f.string()?, f.u32()?);
    let connect = match kind {
        Kind::Dynamic => None,
        _ => Some(endpoint(host, port)?),
    };
    Some((kind, Forward { listen, connect }))
}

/// The message that asks a master for `f` (or to close it).
pub(super) fn fwd_request(close: bool, rid: u32, kind: Kind, f: &Forward) -> Vec<u8> {
    let mut m = Msg::new();
    m.u32(if close { C_CLOSE_FWD } else { C_OPEN_FWD })
        .u32(rid)
        .u32(match kind {
            Kind::Local => FWD_LOCAL,
            Kind::Remote => FWD_REMOTE,
            Kind::Dynamic => FWD_DYNAMIC,
        });
    for e in [Some(&f.listen), f.connect.as_ref()] {
        match e {
            Some(Endpoint::Tcp { host, port }) => m
                .string(host.as_deref().unwrap_or("").as_bytes())
                .u32((*port).into()),
            Some(Endpoint::Unix(p)) => m.string(p.as_bytes()).u32(PORT_STREAMLOCAL),
            // A dynamic forward's target, as ssh writes it (its master
            // refuses an empty one).
            None => m.string(b"socks").u32(0),
        };
    }
    m.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse_back() {
        let cases = [
            (Kind::Local, "127.0.0.1:8080:example.org:80"),
            (Kind::Remote, "0:localhost:22"),
            (Kind::Dynamic, "1080"),
            (Kind::Local, "/tmp/l.sock:/run/r.sock"),
        ];
        for (kind, spec) in cases {
            let f = crate::client::forward_spec::parse(spec, kind).unwrap();
            let m = fwd_request(false, 7, kind, &f);
            let body = &m[4..];
            assert_eq!(word(body, 0), Some(C_OPEN_FWD));
            assert_eq!(word(body, 1), Some(7));
            assert_eq!(parse_fwd(body), Some((kind, f)), "{spec}");
        }
    }

    #[test]
    fn bad_requests_are_refused() {
        assert_eq!(parse_fwd(&[0; 8]), None);
        let f = crate::client::forward_spec::parse("1080", Kind::Dynamic).unwrap();
        let mut m = fwd_request(true, 1, Kind::Dynamic, &f);
        m.truncate(m.len() - 2);
        assert_eq!(parse_fwd(&m[4..]), None);
        let mut m = fwd_request(true, 1, Kind::Dynamic, &f);
        m[4 + 8 + 3] = 9; // an unknown forwarding type
        assert_eq!(parse_fwd(&m[4..]), None);
    }
}
