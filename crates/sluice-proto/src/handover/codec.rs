//! The byte encoding of a [`TransportState`], and its strict decoder.
//!
//! The bytes come from the sandboxed pre-auth process, which parsed
//! everything the peer sent and must be assumed compromised, so decoding is
//! bounded (at most [`MAX_ENCODED`] bytes, every field checked against its
//! own limit), rejects trailing data, never panics, and accepts only a
//! state the importing engine can run: known cipher and MAC names with key
//! lengths that fit them, no NONE cipher, no immediate `zlib`.
//!
//! Format, version 2, in the SSH data types of RFC 4251 section 5:
//!
//! ```text
//! string   "sluice-transport-state"
//! uint32   2                        format version
//! string   V_C                      client identification line
//! string   V_S                      server identification line
//! string   session identifier
//! string   kex, host key, cipher c2s, cipher s2c, MAC c2s, MAC s2c,
//!          compression c2s, compression s2c     (8 names)
//! byte     the last exchange's strict flag (0 or 1)
//! byte     the client asked for EXT_INFO (0 or 1)
//! byte     strict KEX in force, from the first exchange (0 or 1)
//! byte     the client reads long zstd stored packets (0 or 1; version 2)
//! uint32   key exchanges completed (>= 1)
//! uint64   milliseconds since the last one completed
//! 2 x      direction (server to client, then client to server):
//!   string encryption key, string IV, string MAC key
//!   uint32 sequence number, uint64 packets, uint64 bytes encrypted,
//!   uint64 bytes on the wire (all under the keys in force)
//! byte     user present (0 or 1), then string user if present
//! ```

use super::{DirectionState, KeyMaterial, TransportState};
use crate::crypto::cipher;
use crate::negotiate::Algorithms;
use crate::wire::{Reader, WireError, Writer};
use std::fmt;
use zeroize::Zeroizing;

/// First field of every encoding.
const MAGIC: &[u8] = b"sluice-transport-state";
/// The format this code writes and reads.
const VERSION: u32 = 2;
/// Largest encoding accepted; a real one is well under 2 KiB.
pub const MAX_ENCODED: usize = 4096;
/// Longest identification line (RFC 4253 4.2: 255 with CR LF).
const MAX_VERSION_LINE: usize = 255;
/// Longest algorithm name (RFC 4251 6: 64).
const MAX_NAME: usize = 64;
/// Longest session identifier (SHA-512).
const MAX_SESSION_ID: usize = 64;
/// Longest user name carried.
const MAX_USER: usize = 512;
/// Bound on the counters: far beyond any re-key limit, far below overflow.
const MAX_COUNTER: u64 = 1 << 62;

/// Why an encoded transport state was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// More than [`MAX_ENCODED`] bytes.
    TooLong,
    /// A field ran past the end, or bytes followed the last field.
    Malformed(WireError),
    /// Not a transport state.
    BadMagic,
    /// A format version this build does not read.
    UnsupportedVersion(u32),
    /// A field is outside what a handover can carry; names the field.
    BadField(&'static str),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::TooLong => write!(f, "transport state over {MAX_ENCODED} bytes"),
            DecodeError::Malformed(e) => write!(f, "malformed transport state: {e}"),
            DecodeError::BadMagic => f.write_str("not a transport state"),
            DecodeError::UnsupportedVersion(v) => {
                write!(f, "transport state format {v} is not supported")
            }
            DecodeError::BadField(what) => write!(f, "transport state: bad {what}"),
        }
    }
}

impl std::error::Error for DecodeError {}

impl From<WireError> for DecodeError {
    fn from(e: WireError) -> Self {
        DecodeError::Malformed(e)
    }
}

fn check(ok: bool, what: &'static str) -> Result<(), DecodeError> {
    if ok {
        Ok(())
    } else {
        Err(DecodeError::BadField(what))
    }
}

/// Printable ASCII without spaces, as RFC 4251 6 wants of names.
fn is_name(s: &str, allow_empty: bool) -> bool {
    (allow_empty || !s.is_empty()) && s.len() <= MAX_NAME && s.bytes().all(|b| b.is_ascii_graphic())
}

fn is_version_line(s: &str) -> bool {
    s.starts_with("SSH-")
        && s.len() <= MAX_VERSION_LINE
        && s.bytes().all(|b| b.is_ascii_graphic() || b == b' ')
}

/// The keys must fit the names negotiated for their direction.
fn check_keys(k: &KeyMaterial, cipher_name: &str, mac_name: &str) -> Result<(), DecodeError> {
    check(k.cipher == cipher_name && k.mac == mac_name, "key names")?;
    let ci = cipher::cipher_info(cipher_name)
        .filter(|c| c.name != "none")
        .ok_or(DecodeError::BadField("cipher"))?;
    let mac_len = if ci.aead {
        check(mac_name.is_empty(), "MAC")?;
        0
    } else {
        cipher::mac_info(mac_name)
            .filter(|m| m.name != "none")
            .ok_or(DecodeError::BadField("MAC"))?
            .key_len
    };
    check(
        k.key.len() == ci.key_len && k.iv.len() == ci.iv_len && k.mac_key.len() == mac_len,
        "key length",
    )
}

fn check_direction(d: &DirectionState, cipher: &str, mac: &str) -> Result<(), DecodeError> {
    check_keys(&d.keys, cipher, mac)?;
    check(
        d.index <= MAX_COUNTER && d.offset <= MAX_COUNTER && d.bytes <= MAX_COUNTER,
        "counter",
    )
}

impl TransportState {
    /// Checks everything the decoder checks; the exporter and the importer
    /// run it too, so no state outside these bounds is ever encoded or run.
    pub(crate) fn validate(&self) -> Result<(), DecodeError> {
        check(is_version_line(&self.client_version), "client version")?;
        check(is_version_line(&self.server_version), "server version")?;
        check(
            !self.session_id.is_empty() && self.session_id.len() <= MAX_SESSION_ID,
            "session id",
        )?;
        let a = &self.algorithms;
        check(
            is_name(&a.kex, false) && is_name(&a.host_key, false),
            "names",
        )?;
        for n in [&a.cipher_c2s, &a.cipher_s2c, &a.mac_c2s, &a.mac_s2c] {
            check(is_name(n, true), "names")?;
        }
        for c in [&a.comp_c2s, &a.comp_s2c] {
            // Immediate `zlib` has running deflate streams that cannot be
            // carried over; the delayed methods (zlib@openssh.com,
            // zstd@sluice.dev) start fresh after authentication. The
            // importer finds the name in its own registry or fails.
            check(
                c == "none" || (c != "zlib" && is_name(c, false)),
                "compression",
            )?;
        }
        check(self.exchanges >= 1, "exchange count")?;
        check(self.since_kex_ms <= MAX_COUNTER, "time since key exchange")?;
        check_direction(&self.send, &a.cipher_s2c, &a.mac_s2c)?;
        check_direction(&self.recv, &a.cipher_c2s, &a.mac_c2s)?;
        if let Some(u) = &self.user {
            check(!u.is_empty() && u.len() <= MAX_USER, "user")?;
        }
        Ok(())
    }

    /// The encoding (module doc), zeroized on drop: it holds the keys.
    pub fn encode(&self) -> Zeroizing<Vec<u8>> {
        // Reserved in full up front, so no copy of the keys is left behind
        // in a buffer the vector grew out of.
        let mut out = Zeroizing::new(Vec::with_capacity(2 * MAX_ENCODED));
        let a = &self.algorithms;
        let mut w = Writer::new(&mut out);
        w.string(MAGIC)
            .u32(VERSION)
            .utf8(&self.client_version)
            .utf8(&self.server_version)
            .string(&self.session_id);
        for n in [
            &a.kex,
            &a.host_key,
            &a.cipher_c2s,
            &a.cipher_s2c,
            &a.mac_c2s,
            &a.mac_s2c,
            &a.comp_c2s,
            &a.comp_s2c,
        ] {
            w.utf8(n);
        }
        w.u8(u8::from(a.strict))
            .u8(u8::from(a.peer_wants_ext_info))
            .u8(u8::from(self.strict))
            .u8(u8::from(a.peer_reads_long_stored))
            .u32(self.exchanges)
            .u64(self.since_kex_ms);
        for d in [&self.send, &self.recv] {
            w.string(&d.keys.key)
                .string(&d.keys.iv)
                .string(&d.keys.mac_key)
                .u32(d.seq)
                .u64(d.index)
                .u64(d.offset)
                .u64(d.bytes);
        }
        match &self.user {
            Some(u) => w.u8(1).utf8(u),
            None => w.u8(0),
        };
        out
    }

    /// Decodes and checks an encoding from an untrusted process.
    pub fn decode(bytes: &[u8]) -> Result<TransportState, DecodeError> {
        if bytes.len() > MAX_ENCODED {
            return Err(DecodeError::TooLong);
        }
        let mut r = Reader::new(bytes);
        if r.string()? != MAGIC {
            return Err(DecodeError::BadMagic);
        }
        let version = r.u32()?;
        if version != VERSION {
            return Err(DecodeError::UnsupportedVersion(version));
        }
        let client_version = r.utf8()?.to_owned();
        let server_version = r.utf8()?.to_owned();
        let session_id = r.string()?.to_vec();
        let mut name = || -> Result<String, DecodeError> { Ok(r.utf8()?.to_owned()) };
        let mut algorithms = Algorithms {
            kex: name()?,
            host_key: name()?,
            cipher_c2s: name()?,
            cipher_s2c: name()?,
            mac_c2s: name()?,
            mac_s2c: name()?,
            comp_c2s: name()?,
            comp_s2c: name()?,
            ..Algorithms::default()
        };
        algorithms.strict = flag(&mut r)?;
        algorithms.peer_wants_ext_info = flag(&mut r)?;
        let strict = flag(&mut r)?;
        algorithms.peer_reads_long_stored = flag(&mut r)?;
        let exchanges = r.u32()?;
        let since_kex_ms = r.u64()?;
        let send = direction(&mut r, &algorithms.cipher_s2c, &algorithms.mac_s2c)?;
        let recv = direction(&mut r, &algorithms.cipher_c2s, &algorithms.mac_c2s)?;
        let user = if flag(&mut r)? {
            Some(r.utf8()?.to_owned())
        } else {
            None
        };
        r.finish()?;
        let state = TransportState {
            client_version,
            server_version,
            session_id,
            algorithms,
            exchanges,
            strict,
            since_kex_ms,
            send,
            recv,
            user,
        };
        state.validate()?;
        Ok(state)
    }
}

/// A boolean written as exactly 0 or 1, so every state has one encoding.
fn flag(r: &mut Reader<'_>) -> Result<bool, DecodeError> {
    match r.u8()? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(DecodeError::BadField("flag")),
    }
}

fn direction(r: &mut Reader<'_>, cipher: &str, mac: &str) -> Result<DirectionState, DecodeError> {
    let mut secret =
        || -> Result<Zeroizing<Vec<u8>>, DecodeError> { Ok(Zeroizing::new(r.string()?.to_vec())) };
    let keys = KeyMaterial {
        cipher: cipher.to_owned(),
        mac: mac.to_owned(),
        key: secret()?,
        iv: secret()?,
        mac_key: secret()?,
    };
    Ok(DirectionState {
        keys,
        seq: r.u32()?,
        index: r.u64()?,
        offset: r.u64()?,
        bytes: r.u64()?,
    })
}
