//! Each monitor message's bytes, by family: signing and logs, user
//! authentication, the handover, the post-auth process's requests, and
//! striping joins between monitors. `Msg::encode` and `Msg::decode` pick
//! the family; the field layout of each message is written once here.

use super::{code, Method, Msg, WireError, R, W};
use super::{INPUT_CHUNK, MAX_MSG, MAX_NAME, MAX_TRANSCRIPT};
use sluice_proto::stripe::codec::JoinRequest;
use std::net::SocketAddr;
use zeroize::Zeroizing;

impl Msg {
    /// The datagram for this message.
    pub fn encode(&self) -> Zeroizing<Vec<u8>> {
        let mut w = W(Vec::with_capacity(64));
        match self {
            Msg::Log { .. }
            | Msg::SignExchange { .. }
            | Msg::Signature(_)
            | Msg::HostKeys(_)
            | Msg::ProveHostKey { .. } => self.encode_keys(&mut w),
            Msg::Auth { .. }
            | Msg::InfoResponse(_)
            | Msg::Policy { .. }
            | Msg::Accept
            | Msg::Reject
            | Msg::Partial { .. }
            | Msg::InfoRequest { .. } => self.encode_auth(&mut w),
            Msg::State(_) | Msg::Input(_) | Msg::End | Msg::Start { .. } => {
                self.encode_handover(&mut w)
            }
            Msg::SockBuf { .. }
            | Msg::SockBufGranted(_)
            | Msg::PtyRequest
            | Msg::PtyRelease { .. }
            | Msg::PtyGranted
            | Msg::StripeGrant { .. }
            | Msg::StripeGranted(_) => self.encode_postauth(&mut w),
            Msg::JoinAsk { .. } | Msg::JoinAdmitted(_) | Msg::JoinRefused(_) => {
                self.encode_join(&mut w)
            }
        }
        Zeroizing::new(w.0)
    }

    /// Decodes one datagram strictly.
    pub fn decode(buf: &[u8]) -> Result<Msg, WireError> {
        let mut r = R(buf);
        let m = match r.u8()? {
            c @ (code::LOG
            | code::SIGN_EXCHANGE
            | code::SIGNATURE
            | code::HOST_KEYS
            | code::PROVE_HOST_KEY) => decode_keys(c, &mut r)?,
            c @ (code::AUTH
            | code::INFO_RESPONSE
            | code::POLICY
            | code::ACCEPT
            | code::REJECT
            | code::PARTIAL
            | code::INFO_REQUEST) => decode_auth(c, &mut r)?,
            c @ (code::STATE | code::INPUT | code::END | code::START) => {
                decode_handover(c, &mut r)?
            }
            c @ (code::SOCKBUF
            | code::SOCKBUF_GRANTED
            | code::PTY_REQUEST
            | code::PTY_RELEASE
            | code::PTY_GRANTED
            | code::STRIPE_GRANT
            | code::STRIPE_GRANTED) => decode_postauth(c, &mut r)?,
            c @ (code::JOIN_ASK | code::JOIN_ADMITTED | code::JOIN_REFUSED) => {
                decode_join(c, &mut r)?
            }
            _ => return Err(WireError::Malformed("unknown message type")),
        };
        r.finish()?;
        Ok(m)
    }

    /// Logs, exchange signatures and host keys.
    fn encode_keys(&self, w: &mut W) {
        match self {
            Msg::Log { level, line } => {
                w.u8(code::LOG).u8(*level).bytes(line.as_bytes());
            }
            Msg::SignExchange {
                key,
                alg,
                hash,
                transcript,
            } => {
                w.u8(code::SIGN_EXCHANGE)
                    .u32(*key)
                    .bytes(alg.as_bytes())
                    .u8(*hash)
                    .bytes(transcript);
            }
            Msg::Signature(sig) => {
                w.u8(code::SIGNATURE).bytes(sig);
            }
            Msg::HostKeys(blobs) => {
                w.u8(code::HOST_KEYS).u32(blobs.len() as u32);
                for b in blobs {
                    w.bytes(b);
                }
            }
            Msg::ProveHostKey { key, alg } => {
                w.u8(code::PROVE_HOST_KEY).u32(*key).bytes(alg.as_bytes());
            }
            _ => {} // another family's (encode)
        }
    }

    /// User authentication between the pre-auth child and the monitor.
    fn encode_auth(&self, w: &mut W) {
        match self {
            Msg::Auth { user, method } => {
                w.u8(code::AUTH).bytes(user.as_bytes());
                encode_method(w, method);
            }
            Msg::InfoResponse(answers) => {
                w.u8(code::INFO_RESPONSE).u32(answers.len() as u32);
                for a in answers {
                    w.bytes(a.as_bytes());
                }
            }
            Msg::Policy {
                methods,
                max_tries,
                banner,
            } => {
                w.u8(code::POLICY);
                names(w, methods);
                w.u32(*max_tries);
                match banner {
                    Some(b) => w.u8(1).bytes(b.as_bytes()),
                    None => w.u8(0),
                };
            }
            Msg::Accept => {
                w.u8(code::ACCEPT);
            }
            Msg::Reject => {
                w.u8(code::REJECT);
            }
            Msg::Partial { methods } => {
                w.u8(code::PARTIAL);
                names(w, methods);
            }
            Msg::InfoRequest {
                instruction,
                prompts,
            } => {
                w.u8(code::INFO_REQUEST)
                    .bytes(instruction.as_bytes())
                    .u32(prompts.len() as u32);
                for (p, echo) in prompts {
                    w.bytes(p.as_bytes()).u8(u8::from(*echo));
                }
            }
            _ => {} // another family's (encode)
        }
    }

    /// The handover of a connection's transport, and the post-auth
    /// process's start.
    fn encode_handover(&self, w: &mut W) {
        match self {
            Msg::State(s) => {
                w.u8(code::STATE).bytes(s);
            }
            Msg::Input(b) => {
                w.u8(code::INPUT).bytes(b);
            }
            Msg::End => {
                w.u8(code::END);
            }
            Msg::Start {
                user,
                key_options,
                host_keys,
                auth_info,
                pam_env,
            } => {
                w.u8(code::START).bytes(user.as_bytes());
                match key_options {
                    Some(k) => w.u8(1).bytes(k),
                    None => w.u8(0),
                };
                w.u32(host_keys.len() as u32);
                for k in host_keys {
                    w.bytes(k);
                }
                w.bytes(auth_info.as_bytes());
                w.u32(pam_env.len() as u32);
                for (k, v) in pam_env {
                    w.bytes(k).bytes(v);
                }
            }
            _ => {} // another family's (encode)
        }
    }

    /// What the post-auth process asks of the monitor, and the answers.
    fn encode_postauth(&self, w: &mut W) {
        match self {
            Msg::SockBuf { rcvbuf, sndbuf } => {
                w.u8(code::SOCKBUF).u64(*rcvbuf).u64(*sndbuf);
            }
            Msg::SockBufGranted(g) => {
                w.u8(code::SOCKBUF_GRANTED);
                match g {
                    Some((r, s)) => w.u8(1).u64(*r).u64(*s),
                    None => w.u8(0),
                };
            }
            Msg::PtyRequest => {
                w.u8(code::PTY_REQUEST);
            }
            Msg::PtyRelease { tty } => {
                w.u8(code::PTY_RELEASE).bytes(tty.as_bytes());
            }
            Msg::StripeGrant { wanted } => {
                w.u8(code::STRIPE_GRANT).u32(*wanted);
            }
            Msg::StripeGranted(g) => {
                w.u8(code::STRIPE_GRANTED);
                match g {
                    Some(b) => w.u8(1).bytes(b),
                    None => w.u8(0),
                };
            }
            Msg::PtyGranted => {
                w.u8(code::PTY_GRANTED);
            }
            _ => {} // another family's (encode)
        }
    }

    /// Striping joins between a secondary's monitor and the primary's.
    fn encode_join(&self, w: &mut W) {
        match self {
            Msg::JoinAsk {
                session_id,
                user,
                request,
                peer,
                local,
            } => {
                w.u8(code::JOIN_ASK)
                    .bytes(session_id)
                    .bytes(user.as_bytes())
                    .bytes(&request.encode())
                    .bytes(peer.to_string().as_bytes())
                    .bytes(local.to_string().as_bytes());
            }
            Msg::JoinAdmitted(n) => {
                w.u8(code::JOIN_ADMITTED).u32(*n);
            }
            Msg::JoinRefused(why) => {
                w.u8(code::JOIN_REFUSED).bytes(why.as_bytes());
            }
            _ => {} // another family's (encode)
        }
    }
}

/// An authentication method: a number, then its fields.
fn encode_method(w: &mut W, method: &Method) {
    match method {
        Method::None => w.u8(0),
        Method::Password(p) => w.u8(1).bytes(p.as_bytes()),
        Method::KeyboardInteractive => w.u8(2),
        Method::PublicKey {
            algorithm,
            key_blob,
            host_key,
            signature,
        } => {
            w.u8(3).bytes(algorithm.as_bytes()).bytes(key_blob);
            match signature {
                Some(s) => w.u8(1).bytes(s),
                None => w.u8(0),
            };
            match host_key {
                Some(h) => w.u8(1).bytes(h),
                None => w.u8(0),
            }
        }
        Method::StripeJoin(req) => w.u8(4).bytes(&req.encode()),
    };
}

/// A list of names: its length, then each.
fn names(w: &mut W, list: &[String]) {
    w.u32(list.len() as u32);
    for m in list {
        w.bytes(m.as_bytes());
    }
}

/// A list of names, each at most MAX_NAME.
fn read_names(r: &mut R<'_>) -> Result<Vec<String>, WireError> {
    let n = r.list_len()?;
    let mut v = Vec::new();
    for _ in 0..n {
        v.push(r.string(MAX_NAME)?);
    }
    Ok(v)
}

/// A list of byte strings, each at most MAX_NAME (host key blobs).
fn read_blobs(r: &mut R<'_>) -> Result<Vec<Vec<u8>>, WireError> {
    let n = r.list_len()?;
    let mut v = Vec::new();
    for _ in 0..n {
        v.push(r.bytes(MAX_NAME)?.to_vec());
    }
    Ok(v)
}

fn decode_keys(c: u8, r: &mut R<'_>) -> Result<Msg, WireError> {
    Ok(match c {
        code::LOG => Msg::Log {
            level: r.u8()?,
            line: String::from_utf8_lossy(r.bytes(MAX_NAME)?).into_owned(),
        },
        code::SIGN_EXCHANGE => Msg::SignExchange {
            key: r.u32()?,
            alg: r.string(MAX_NAME)?,
            hash: r.u8()?,
            transcript: Zeroizing::new(r.bytes(MAX_TRANSCRIPT)?.to_vec()),
        },
        code::SIGNATURE => Msg::Signature(r.bytes(MAX_MSG)?.to_vec()),
        code::HOST_KEYS => Msg::HostKeys(read_blobs(r)?),
        code::PROVE_HOST_KEY => Msg::ProveHostKey {
            key: r.u32()?,
            alg: r.string(MAX_NAME)?,
        },
        _ => return Err(WireError::Malformed("unknown message type")),
    })
}

fn decode_auth(c: u8, r: &mut R<'_>) -> Result<Msg, WireError> {
    Ok(match c {
        code::AUTH => {
            let user = r.string(MAX_NAME)?;
            let method = decode_method(r)?;
            Msg::Auth { user, method }
        }
        code::INFO_RESPONSE => {
            let n = r.list_len()?;
            let mut v = Vec::new();
            for _ in 0..n {
                v.push(Zeroizing::new(r.string(MAX_NAME)?));
            }
            Msg::InfoResponse(v)
        }
        code::POLICY => {
            let methods = read_names(r)?;
            let max_tries = r.u32()?;
            let banner = if r.bool()? {
                Some(r.string(crate::server::auth::MAX_BANNER)?)
            } else {
                None
            };
            Msg::Policy {
                methods,
                max_tries,
                banner,
            }
        }
        code::ACCEPT => Msg::Accept,
        code::REJECT => Msg::Reject,
        code::PARTIAL => Msg::Partial {
            methods: read_names(r)?,
        },
        code::INFO_REQUEST => {
            let instruction = r.string(MAX_NAME)?;
            let n = r.list_len()?;
            let mut prompts = Vec::new();
            for _ in 0..n {
                prompts.push((r.string(MAX_NAME)?, r.bool()?));
            }
            Msg::InfoRequest {
                instruction,
                prompts,
            }
        }
        _ => return Err(WireError::Malformed("unknown message type")),
    })
}

fn decode_method(r: &mut R<'_>) -> Result<Method, WireError> {
    Ok(match r.u8()? {
        0 => Method::None,
        1 => Method::Password(Zeroizing::new(r.string(MAX_NAME)?)),
        2 => Method::KeyboardInteractive,
        3 => {
            let algorithm = r.string(MAX_NAME)?;
            let key_blob = r.bytes(MAX_MSG / 4)?.to_vec();
            let mut optional = || -> Result<Option<Vec<u8>>, WireError> {
                Ok(if r.bool()? {
                    Some(r.bytes(MAX_MSG / 4)?.to_vec())
                } else {
                    None
                })
            };
            let signature = optional()?;
            let host_key = optional()?;
            Method::PublicKey {
                algorithm,
                key_blob,
                host_key,
                signature,
            }
        }
        4 => Method::StripeJoin(join_request(r)?),
        _ => return Err(WireError::Malformed("unknown method")),
    })
}

fn decode_handover(c: u8, r: &mut R<'_>) -> Result<Msg, WireError> {
    Ok(match c {
        code::STATE => Msg::State(Zeroizing::new(r.bytes(MAX_MSG)?.to_vec())),
        code::INPUT => Msg::Input(r.bytes(INPUT_CHUNK)?.to_vec()),
        code::END => Msg::End,
        code::START => decode_start(r)?,
        _ => return Err(WireError::Malformed("unknown message type")),
    })
}

fn decode_start(r: &mut R<'_>) -> Result<Msg, WireError> {
    use crate::server::session_env::{MAX_ENV_ENTRY, MAX_ENV_VARS};
    let user = r.string(MAX_NAME)?;
    let key_options = if r.bool()? {
        Some(r.bytes(MAX_MSG / 2)?.to_vec())
    } else {
        None
    };
    let host_keys = read_blobs(r)?;
    let auth_info = r.string(crate::server::auth_info::MAX_AUTH_INFO)?;
    let n = r.list_len()? as usize;
    if n > MAX_ENV_VARS {
        return Err(WireError::Malformed("too many PAM environment entries"));
    }
    let mut pam_env = Vec::with_capacity(n);
    for _ in 0..n {
        let k = r.bytes(MAX_ENV_ENTRY)?.to_vec();
        let v = r.bytes(MAX_ENV_ENTRY)?.to_vec();
        pam_env.push((k, v));
    }
    Ok(Msg::Start {
        user,
        key_options,
        host_keys,
        auth_info,
        pam_env,
    })
}

fn decode_postauth(c: u8, r: &mut R<'_>) -> Result<Msg, WireError> {
    Ok(match c {
        code::SOCKBUF => Msg::SockBuf {
            rcvbuf: r.u64()?,
            sndbuf: r.u64()?,
        },
        code::SOCKBUF_GRANTED => Msg::SockBufGranted(if r.bool()? {
            Some((r.u64()?, r.u64()?))
        } else {
            None
        }),
        code::PTY_REQUEST => Msg::PtyRequest,
        code::PTY_RELEASE => Msg::PtyRelease {
            tty: r.string(MAX_NAME)?,
        },
        code::PTY_GRANTED => Msg::PtyGranted,
        code::STRIPE_GRANT => Msg::StripeGrant { wanted: r.u32()? },
        // A grant is at most 4 + 4 + 64 + 4 + 32 bytes.
        code::STRIPE_GRANTED => Msg::StripeGranted(if r.bool()? {
            Some(Zeroizing::new(r.bytes(256)?.to_vec()))
        } else {
            None
        }),
        _ => return Err(WireError::Malformed("unknown message type")),
    })
}

fn decode_join(c: u8, r: &mut R<'_>) -> Result<Msg, WireError> {
    Ok(match c {
        code::JOIN_ASK => Msg::JoinAsk {
            // An exchange hash: at most SHA-512's 64 bytes.
            session_id: r.bytes(64)?.to_vec(),
            user: r.string(MAX_NAME)?,
            request: join_request(r)?,
            peer: address(r)?,
            local: address(r)?,
        },
        code::JOIN_ADMITTED => Msg::JoinAdmitted(r.u32()?),
        code::JOIN_REFUSED => Msg::JoinRefused(r.string(MAX_NAME)?),
        _ => return Err(WireError::Malformed("unknown message type")),
    })
}

/// A join request's fields, strictly (a reference of at most 64 bytes, a
/// number, a 32-byte proof: well under 256 bytes).
fn join_request(r: &mut R<'_>) -> Result<JoinRequest, WireError> {
    JoinRequest::decode(r.bytes(256)?).map_err(|_| WireError::Malformed("bad join request"))
}

/// A socket address in its text form (`1.2.3.4:22`, `[::1]:22`).
fn address(r: &mut R<'_>) -> Result<SocketAddr, WireError> {
    r.string(64)?
        .parse()
        .map_err(|_| WireError::Malformed("bad address"))
}
