//! The monitor protocol: typed messages over a SOCK_SEQPACKET socketpair
//! (one message per datagram, so boundaries are kept without framing).
//!
//! Every message is a type byte and fields: `u8`, `u32`/`u64` big-endian,
//! strings as a `u32` length and bytes. Decoding is strict: each length is
//! bounded by what is left and by a per-field cap, unknown types and
//! trailing bytes are errors, a datagram larger than [`MAX_MSG`] is an
//! error (MSG_TRUNC tells). The monitor decodes what its children send as
//! hostile input: any [`WireError`] ends the connection. The messages and
//! field readers are here; each family's encoding is in wire/codec.rs.

use sluice_proto::stripe::codec::JoinRequest;
use std::net::SocketAddr;
use zeroize::Zeroizing;

mod codec;

/// What the handover brought: the checked state's encoding and the input.
pub struct Handover {
    /// `TransportState::encode`, checked against the monitor's session.
    pub state: Zeroizing<Vec<u8>>,
    /// Raw peer bytes not yet consumed.
    pub rest: Vec<u8>,
}

impl std::fmt::Debug for Handover {
    /// Sizes only: the state holds the session's keys.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Handover {{ state: {} bytes, rest: {} bytes }}",
            self.state.len(),
            self.rest.len()
        )
    }
}

/// The largest datagram either side sends or accepts.
pub const MAX_MSG: usize = 128 * 1024;
/// Raw input travels in chunks of at most this many bytes.
pub const INPUT_CHUNK: usize = 64 * 1024;
/// Cap on a user name, an algorithm name, a log line.
const MAX_NAME: usize = 4096;
/// Cap on a key exchange transcript: two KEXINITs, a host key, the
/// largest method's values (sntrup761: 1158 + 1039 bytes; a group
/// exchange's 8192-bit prime) and K.
const MAX_TRANSCRIPT: usize = 64 * 1024;
/// Cap on list lengths (prompts, answers, methods, host keys).
const MAX_LIST: u32 = 128;

/// Why a message could not be sent, received or decoded.
#[derive(Debug)]
pub enum WireError {
    /// The other end closed the socket.
    Closed,
    /// send/recv failed.
    Io(std::io::Error),
    /// Too long, truncated, unknown type, bad field, trailing bytes.
    Malformed(&'static str),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Closed => f.write_str("monitor socket closed"),
            WireError::Io(e) => write!(f, "monitor socket: {e}"),
            WireError::Malformed(why) => write!(f, "malformed monitor message: {why}"),
        }
    }
}

impl std::error::Error for WireError {}

/// An authentication method as the child relays it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    /// `none`.
    None,
    /// `password`.
    Password(Zeroizing<String>),
    /// `keyboard-interactive`.
    KeyboardInteractive,
    /// `publickey`, with the signature blob if one came.
    PublicKey {
        /// Signature algorithm.
        algorithm: String,
        /// Public key blob.
        key_blob: Vec<u8>,
        /// The host key a `publickey-hostbound-v00@openssh.com` request
        /// names (the monitor checks it is the first exchange's).
        host_key: Option<Vec<u8>>,
        /// `string alg || string sig`, when signed.
        signature: Option<Vec<u8>>,
    },
    /// `stripe-join-v00@sluice.dev` (PROTOCOL.md "Channel striping"): a
    /// secondary connection's proof of membership of a striped session.
    StripeJoin(JoinRequest),
}

/// One monitor message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Msg {
    /// Child -> M: a log line (no answer).
    Log {
        /// `log::Level as u8`.
        level: u8,
        /// The line.
        line: String,
    },
    /// Child -> M: sign the exchange hash of a key exchange with host key
    /// number `key`. The child sends what is hashed, never the hash: the
    /// monitor checks the transcript (its own host key, the connection's
    /// version strings, two KEXINITs) and hashes it itself (signer.rs).
    SignExchange {
        /// Index into the monitor's host keys.
        key: u32,
        /// Signature algorithm.
        alg: String,
        /// The method's hash: 1 SHA-1, 2 SHA-256, 3 SHA-384, 4 SHA-512.
        hash: u8,
        /// V_C, V_S, I_C, I_S, K_S, the method's values, K (RFC 4253 8).
        transcript: Zeroizing<Vec<u8>>,
    },
    /// M -> child: the signature blob.
    Signature(Vec<u8>),
    /// M -> pre-auth child, first: the host keys' public blobs, in the
    /// monitor's order. The child is forked before the monitor reads any
    /// host key (monitor.rs), so these come afterwards.
    HostKeys(Vec<Vec<u8>>),
    /// Post-auth process -> M: sign host key number `key`'s
    /// `hostkeys-prove-00@openssh.com` proof (OpenSSH PROTOCOL 2.5); the
    /// monitor builds the signed data from the session id it fixed.
    ProveHostKey {
        /// Index into the monitor's host keys.
        key: u32,
        /// Signature algorithm.
        alg: String,
    },
    /// Pre-auth child -> M: a USERAUTH_REQUEST.
    Auth {
        /// The user name asked for.
        user: String,
        /// The method and its data.
        method: Method,
    },
    /// Pre-auth child -> M: keyboard-interactive answers.
    InfoResponse(Vec<Zeroizing<String>>),
    /// M -> pre-auth child: the auth policy for the user asked for.
    Policy {
        /// Methods that can continue.
        methods: Vec<String>,
        /// MaxAuthTries.
        max_tries: u32,
        /// The Banner file's contents.
        banner: Option<String>,
    },
    /// M -> pre-auth child: the pending request succeeds.
    Accept,
    /// M -> pre-auth child: the pending request fails.
    Reject,
    /// M -> pre-auth child: the pending request met one step of
    /// AuthenticationMethods; the methods that can continue.
    Partial {
        /// Methods that can continue.
        methods: Vec<String>,
    },
    /// M -> pre-auth child: keyboard-interactive prompts.
    InfoRequest {
        /// Instruction text.
        instruction: String,
        /// Prompt and echo flag.
        prompts: Vec<(String, bool)>,
    },
    /// Pre-auth child -> M, and M -> post-auth process: the encoded
    /// transport state, followed by `Input` chunks and `End`.
    State(Zeroizing<Vec<u8>>),
    /// Raw peer bytes the engine had not consumed.
    Input(Vec<u8>),
    /// The end of a handover.
    End,
    /// M -> post-auth process, first: who authenticated, the key's
    /// authorized_keys options (encoded by `keyopts`), the host public keys.
    Start {
        /// The authenticated user.
        user: String,
        /// `keyopts::encode` of the key's options, if a key was used.
        key_options: Option<Vec<u8>>,
        /// Host key public blobs, in the monitor's order.
        host_keys: Vec<Vec<u8>>,
        /// ExposeAuthInfo's text (server/auth_info.rs), empty if none.
        auth_info: String,
        /// PAM's environment for sessions, (name, value) each (UsePAM).
        pam_env: Vec<(Vec<u8>, Vec<u8>)>,
    },
    /// Post-auth process -> M: RemoteRcvBuf / RemoteSndBuf.
    SockBuf {
        /// Receive buffer asked for (0: leave).
        rcvbuf: u64,
        /// Send buffer asked for (0: leave).
        sndbuf: u64,
    },
    /// M -> post-auth process: the sizes in force, or none (declined).
    SockBufGranted(Option<(u64, u64)>),
    /// Post-auth process -> M: a pty for a pty-req.
    PtyRequest,
    /// Post-auth process -> M: the session on this pty (its name, e.g.
    /// /dev/pts/3) ended; M writes its logout record (no answer).
    PtyRelease {
        /// The pty's name, as M gave it.
        tty: String,
    },
    /// M -> post-auth process: the pty's master and slave travel with this
    /// message (SCM_RIGHTS), the slave owned by the user; `Reject` instead
    /// when refused.
    PtyGranted,
    /// Post-auth process -> M: the client asked for a striping grant
    /// (`stripe-v00@sluice.dev`) wanting this many secondaries (1-255).
    StripeGrant {
        /// Secondary connections wanted.
        wanted: u32,
    },
    /// M -> post-auth process: the grant's REQUEST_SUCCESS data
    /// (`StripeGrant::encode`), or none (declined).
    StripeGranted(Option<Zeroizing<Vec<u8>>>),
    /// A secondary's monitor -> the primary's monitor, on the join socket
    /// (stripe_join.rs): admit this join request, made on the connection
    /// whose session identifier is `session_id`, for `user`, from `peer`
    /// to `local` (join_policy.rs). Answered with `JoinAdmitted` or
    /// `JoinRefused`; after `JoinAdmitted` the
    /// connection follows as a handover (`State` carrying the socket,
    /// `Input`, `End`), confirmed with `Accept`.
    JoinAsk {
        /// The secondary's session identifier, as its monitor fixed it.
        session_id: Vec<u8>,
        /// The user name the secondary sent.
        user: String,
        /// The join request's fields.
        request: JoinRequest,
        /// The secondary's client address.
        peer: SocketAddr,
        /// The address the secondary arrived on.
        local: SocketAddr,
    },
    /// The primary's monitor -> a secondary's monitor: the join number
    /// admitted.
    JoinAdmitted(u32),
    /// The primary's monitor -> a secondary's monitor: why the join was
    /// refused, for the secondary's log (its client sees only
    /// USERAUTH_FAILURE).
    JoinRefused(String),
}

mod code {
    pub(super) const LOG: u8 = 1;
    pub(super) const SIGN_EXCHANGE: u8 = 2;
    pub(super) const SIGNATURE: u8 = 3;
    pub(super) const AUTH: u8 = 4;
    pub(super) const INFO_RESPONSE: u8 = 5;
    pub(super) const POLICY: u8 = 6;
    pub(super) const ACCEPT: u8 = 7;
    pub(super) const REJECT: u8 = 8;
    pub(super) const INFO_REQUEST: u8 = 9;
    pub(super) const STATE: u8 = 10;
    pub(super) const INPUT: u8 = 11;
    pub(super) const END: u8 = 12;
    pub(super) const START: u8 = 13;
    pub(super) const SOCKBUF: u8 = 14;
    pub(super) const SOCKBUF_GRANTED: u8 = 15;
    pub(super) const PTY_REQUEST: u8 = 16;
    pub(super) const PTY_GRANTED: u8 = 17;
    pub(super) const PROVE_HOST_KEY: u8 = 18;
    pub(super) const PARTIAL: u8 = 19;
    pub(super) const STRIPE_GRANT: u8 = 20;
    pub(super) const STRIPE_GRANTED: u8 = 21;
    pub(super) const JOIN_ASK: u8 = 22;
    pub(super) const JOIN_ADMITTED: u8 = 23;
    pub(super) const JOIN_REFUSED: u8 = 24;
    pub(super) const HOST_KEYS: u8 = 25;
    pub(super) const PTY_RELEASE: u8 = 26;
}

/// Field writer.
pub(crate) struct W(pub(crate) Vec<u8>);

impl W {
    pub(crate) fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    pub(crate) fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub(crate) fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub(crate) fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.u32(u32::try_from(b.len()).unwrap_or(u32::MAX));
        self.0.extend_from_slice(b);
        self
    }
}

/// Strict field reader.
pub(crate) struct R<'a>(pub(crate) &'a [u8]);

impl<'a> R<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if n > self.0.len() {
            return Err(WireError::Malformed("field runs past the end"));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    pub(crate) fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?.first().copied().unwrap_or(0))
    }
    pub(crate) fn bool(&mut self) -> Result<bool, WireError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(WireError::Malformed("bad boolean")),
        }
    }
    pub(crate) fn u32(&mut self) -> Result<u32, WireError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub(crate) fn u64(&mut self) -> Result<u64, WireError> {
        let hi = u64::from(self.u32()?);
        Ok(hi << 32 | u64::from(self.u32()?))
    }
    pub(crate) fn bytes(&mut self, max: usize) -> Result<&'a [u8], WireError> {
        let n = self.u32()? as usize;
        if n > max {
            return Err(WireError::Malformed("field too long"));
        }
        self.take(n)
    }
    pub(crate) fn string(&mut self, max: usize) -> Result<String, WireError> {
        let b = self.bytes(max)?;
        String::from_utf8(b.to_vec()).map_err(|_| WireError::Malformed("not UTF-8"))
    }
    pub(crate) fn list_len(&mut self) -> Result<u32, WireError> {
        let n = self.u32()?;
        if n > MAX_LIST {
            return Err(WireError::Malformed("list too long"));
        }
        Ok(n)
    }
    pub(crate) fn finish(&self) -> Result<(), WireError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(WireError::Malformed("trailing bytes"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_strictness() {
        let msgs = [
            Msg::SignExchange {
                key: 1,
                alg: "ssh-ed25519".into(),
                hash: 2,
                transcript: Zeroizing::new(vec![7; 900]),
            },
            Msg::Auth {
                user: "bob".into(),
                method: Method::PublicKey {
                    algorithm: "ssh-ed25519".into(),
                    key_blob: vec![1, 2],
                    host_key: Some(vec![4]),
                    signature: Some(vec![3]),
                },
            },
            Msg::InfoRequest {
                instruction: "i".into(),
                prompts: vec![("Password: ".into(), false)],
            },
            Msg::SockBufGranted(Some((1, 2))),
            Msg::PtyRequest,
            Msg::ProveHostKey {
                key: 2,
                alg: "rsa-sha2-512".into(),
            },
            Msg::Partial {
                methods: vec!["password".into(), "keyboard-interactive".into()],
            },
            Msg::StripeGrant { wanted: 3 },
            Msg::StripeGranted(Some(Zeroizing::new(vec![5; 80]))),
            Msg::StripeGranted(None),
            Msg::Auth {
                user: "bob".into(),
                method: Method::StripeJoin(JoinRequest {
                    session_ref: vec![4; 32],
                    join_number: 2,
                    proof: [5; 32],
                }),
            },
            Msg::JoinAsk {
                session_id: vec![6; 32],
                user: "bob".into(),
                request: JoinRequest {
                    session_ref: vec![4; 16],
                    join_number: 1,
                    proof: [5; 32],
                },
                peer: "[2001:db8::7]:40000".parse().unwrap(),
                local: "127.0.0.1:22".parse().unwrap(),
            },
            Msg::JoinAdmitted(3),
            Msg::JoinRefused("join number already used".into()),
            Msg::HostKeys(vec![vec![1; 51], vec![2; 104]]),
            Msg::PtyRelease {
                tty: "/dev/pts/4".into(),
            },
        ];
        for m in msgs {
            let b = m.encode();
            assert_eq!(Msg::decode(&b).unwrap(), m);
            for cut in 0..b.len() {
                assert!(Msg::decode(&b[..cut]).is_err());
            }
            let mut long = b.to_vec();
            long.push(0);
            assert!(Msg::decode(&long).is_err());
        }
        assert!(Msg::decode(&[99]).is_err());
    }
}
