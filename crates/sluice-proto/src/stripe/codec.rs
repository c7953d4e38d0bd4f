//! Strict decoding and encoding of the data `stripe-v00@sluice.dev` adds
//! to standard messages (PROTOCOL.md, "Channel striping"): the global
//! request's and reply's data, the join method's fields, a carrier's open
//! data, a chunk (a carrier's CHANNEL_DATA) and an acknowledgement's data.
//!
//! Each decoder takes exactly its fields and refuses trailing bytes, and
//! every bound of the specification is checked here, so the layers above
//! see only well-formed values.

use super::token::{JOIN_SECRET_LEN, MAX_REF_LEN, MIN_REF_LEN, PROOF_LEN};
use super::{StripeError, CHUNK_HEADER, JOIN_METHOD, MAX_SECONDARIES};
use crate::msg::AuthMethod;
use crate::wire::{Reader, WireError, Writer};
use zeroize::Zeroize;

fn malformed(what: &'static str) -> impl Fn(WireError) -> StripeError {
    move |_| StripeError::Malformed(what)
}

/// A number of secondary connections: 1 to 255.
fn secondaries(n: u32, what: &'static str) -> Result<u32, StripeError> {
    if (1..=MAX_SECONDARIES).contains(&n) {
        Ok(n)
    } else {
        Err(StripeError::Malformed(what))
    }
}

/// A session reference: 16 to 64 bytes.
fn session_ref(r: &mut Reader<'_>, what: &'static str) -> Result<Vec<u8>, StripeError> {
    let s = r.string().map_err(malformed(what))?;
    if !(MIN_REF_LEN..=MAX_REF_LEN).contains(&s.len()) {
        return Err(StripeError::Malformed(what));
    }
    Ok(s.to_vec())
}

/// A `string` that must hold exactly `N` bytes.
fn fixed<const N: usize>(r: &mut Reader<'_>, what: &'static str) -> Result<[u8; N], StripeError> {
    let s = r.string().map_err(malformed(what))?;
    let mut out = [0u8; N];
    if s.len() != N {
        return Err(StripeError::Malformed(what));
    }
    out.copy_from_slice(s);
    Ok(out)
}

/// The global request's data: secondary connections wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StripeWanted {
    /// 1 to 255.
    pub secondaries: u32,
}

impl StripeWanted {
    /// Decodes the request-specific data of the global request.
    pub fn decode(data: &[u8]) -> Result<Self, StripeError> {
        const WHAT: &str = "stripe request";
        let mut r = Reader::new(data);
        let n = r.u32().map_err(malformed(WHAT))?;
        r.finish().map_err(malformed(WHAT))?;
        Ok(StripeWanted {
            secondaries: secondaries(n, WHAT)?,
        })
    }

    /// The request-specific data.
    pub fn encode(&self) -> Vec<u8> {
        self.secondaries.to_be_bytes().to_vec()
    }
}

/// The server's grant: REQUEST_SUCCESS data. The join secret is wiped on
/// drop and not printed by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct StripeGrant {
    /// Secondaries allowed, 1 to 255.
    pub allowed: u32,
    /// The opaque reference to the primary's session, 16-64 bytes.
    pub session_ref: Vec<u8>,
    /// The random secret the join key is derived from.
    pub join_secret: [u8; JOIN_SECRET_LEN],
}

impl Drop for StripeGrant {
    fn drop(&mut self) {
        self.join_secret.zeroize();
    }
}

impl std::fmt::Debug for StripeGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripeGrant")
            .field("allowed", &self.allowed)
            .field("session_ref_len", &self.session_ref.len())
            .finish_non_exhaustive()
    }
}

impl StripeGrant {
    /// Decodes REQUEST_SUCCESS's data.
    pub fn decode(data: &[u8]) -> Result<Self, StripeError> {
        const WHAT: &str = "stripe grant";
        let mut r = Reader::new(data);
        let allowed = secondaries(r.u32().map_err(malformed(WHAT))?, WHAT)?;
        let session_ref = session_ref(&mut r, WHAT)?;
        let join_secret = fixed::<JOIN_SECRET_LEN>(&mut r, WHAT)?;
        r.finish().map_err(malformed(WHAT))?;
        Ok(StripeGrant {
            allowed,
            session_ref,
            join_secret,
        })
    }

    /// REQUEST_SUCCESS's data.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(12 + self.session_ref.len() + JOIN_SECRET_LEN);
        Writer::new(&mut out)
            .u32(self.allowed)
            .string(&self.session_ref)
            .string(&self.join_secret);
        out
    }
}

/// The fields of a `stripe-join-v00@sluice.dev` user authentication
/// request, after the method name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinRequest {
    /// The session reference from the grant.
    pub session_ref: Vec<u8>,
    /// 1 to the number of secondaries allowed (checked by the server's
    /// [`super::token::Admission`]).
    pub join_number: u32,
    /// HMAC-SHA256 proof (see [`super::token::JoinKey::proof`]).
    pub proof: [u8; PROOF_LEN],
}

impl JoinRequest {
    /// Decodes the method-specific fields.
    pub fn decode(data: &[u8]) -> Result<Self, StripeError> {
        const WHAT: &str = "join request";
        let mut r = Reader::new(data);
        let session_ref = session_ref(&mut r, WHAT)?;
        let join_number = r.u32().map_err(malformed(WHAT))?;
        let proof = fixed::<PROOF_LEN>(&mut r, WHAT)?;
        r.finish().map_err(malformed(WHAT))?;
        Ok(JoinRequest {
            session_ref,
            join_number,
            proof,
        })
    }

    /// The method-specific fields.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(12 + self.session_ref.len() + PROOF_LEN);
        Writer::new(&mut out)
            .string(&self.session_ref)
            .u32(self.join_number)
            .string(&self.proof);
        out
    }

    /// As a USERAUTH_REQUEST method.
    pub fn to_method(&self) -> AuthMethod {
        AuthMethod::Other {
            name: JOIN_METHOD.to_owned(),
            data: self.encode(),
        }
    }

    /// The join request in a decoded USERAUTH_REQUEST method: None for any
    /// other method, an error when the method is ours but malformed.
    pub fn from_method(method: &AuthMethod) -> Option<Result<Self, StripeError>> {
        match method {
            AuthMethod::Other { name, data } if name == JOIN_METHOD => Some(Self::decode(data)),
            _ => None,
        }
    }
}

/// A carrier's CHANNEL_OPEN data: which striped channel it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CarrierOpen {
    /// The server's number for the striped channel on the primary.
    pub striped_channel: u32,
}

impl CarrierOpen {
    /// Decodes the channel-type-specific data.
    pub fn decode(data: &[u8]) -> Result<Self, StripeError> {
        const WHAT: &str = "carrier open";
        let mut r = Reader::new(data);
        let striped_channel = r.u32().map_err(malformed(WHAT))?;
        r.finish().map_err(malformed(WHAT))?;
        Ok(CarrierOpen { striped_channel })
    }

    /// The channel-type-specific data.
    pub fn encode(&self) -> Vec<u8> {
        self.striped_channel.to_be_bytes().to_vec()
    }
}

/// The `stripe-v00@sluice.dev` channel request carries no data.
pub fn check_stripe_channel_request(data: &[u8]) -> Result<(), StripeError> {
    if data.is_empty() {
        Ok(())
    } else {
        Err(StripeError::Malformed("stripe channel request"))
    }
}

/// One chunk: the data of one CHANNEL_DATA on a carrier, borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk<'a> {
    /// Offset of the first byte in the direction's stream.
    pub offset: u64,
    /// At least one byte.
    pub data: &'a [u8],
}

impl<'a> Chunk<'a> {
    /// Decodes a carrier's CHANNEL_DATA contents (its data string). The
    /// end offset must fit in 64 bits.
    pub fn decode(payload: &'a [u8]) -> Result<Self, StripeError> {
        let Some((head, data)) = payload.split_first_chunk::<CHUNK_HEADER>() else {
            return Err(StripeError::Malformed("chunk header"));
        };
        if data.is_empty() {
            return Err(StripeError::Malformed("empty chunk"));
        }
        let offset = u64::from_be_bytes(*head);
        offset
            .checked_add(data.len() as u64)
            .ok_or(StripeError::OffsetOverflow)?;
        Ok(Chunk { offset, data })
    }

    /// The offset past the chunk's last byte.
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.data.len() as u64)
    }

    /// Appends the CHANNEL_DATA contents to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.offset.to_be_bytes());
        out.extend_from_slice(self.data);
    }
}

/// A `stripe-ack-v00@sluice.dev` channel request's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ack {
    /// Every byte before this offset has arrived.
    pub received: u64,
    /// The sender may send bytes before this offset only.
    pub limit: u64,
}

impl Ack {
    /// Decodes the request-specific data; `received` must not pass `limit`.
    pub fn decode(data: &[u8]) -> Result<Self, StripeError> {
        const WHAT: &str = "stripe acknowledgement";
        let mut r = Reader::new(data);
        let received = r.u64().map_err(malformed(WHAT))?;
        let limit = r.u64().map_err(malformed(WHAT))?;
        r.finish().map_err(malformed(WHAT))?;
        if received > limit {
            return Err(StripeError::BadAck);
        }
        Ok(Ack { received, limit })
    }

    /// The request-specific data.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16);
        Writer::new(&mut out).u64(self.received).u64(self.limit);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant() -> StripeGrant {
        StripeGrant {
            allowed: 7,
            session_ref: vec![0x5a; 16],
            join_secret: [9; 32],
        }
    }

    #[test]
    fn every_message_round_trips() {
        let w = StripeWanted { secondaries: 255 };
        assert_eq!(StripeWanted::decode(&w.encode()), Ok(w));
        let g = grant();
        assert_eq!(StripeGrant::decode(&g.encode()), Ok(g));
        let j = JoinRequest {
            session_ref: vec![1; 64],
            join_number: 3,
            proof: [7; 32],
        };
        assert_eq!(JoinRequest::decode(&j.encode()), Ok(j.clone()));
        assert_eq!(JoinRequest::from_method(&j.to_method()), Some(Ok(j)));
        assert_eq!(JoinRequest::from_method(&AuthMethod::None), None);
        let c = CarrierOpen {
            striped_channel: 42,
        };
        assert_eq!(CarrierOpen::decode(&c.encode()), Ok(c));
        let a = Ack {
            received: 5,
            limit: 1 << 40,
        };
        assert_eq!(Ack::decode(&a.encode()), Ok(a));
        let mut v = Vec::new();
        Chunk {
            offset: 1 << 33,
            data: b"xyz",
        }
        .encode(&mut v);
        let ch = Chunk::decode(&v).unwrap();
        assert_eq!(
            (ch.offset, ch.data, ch.end()),
            (1 << 33, &b"xyz"[..], (1 << 33) + 3)
        );
    }

    #[test]
    fn the_join_request_survives_the_userauth_codec() {
        let j = JoinRequest {
            session_ref: vec![2; 20],
            join_number: 1,
            proof: [3; 32],
        };
        let req = crate::msg::UserauthRequest {
            user: "u".into(),
            service: "ssh-connection".into(),
            method: j.to_method(),
        };
        let mut p = Vec::new();
        req.encode(&mut p);
        let back = crate::msg::UserauthRequest::decode(&p).unwrap();
        assert_eq!(JoinRequest::from_method(&back.method), Some(Ok(j)));
    }

    #[test]
    fn bounds_and_trailing_bytes_are_refused() {
        assert!(StripeWanted::decode(&0u32.to_be_bytes()).is_err());
        assert!(StripeWanted::decode(&256u32.to_be_bytes()).is_err());
        assert!(StripeWanted::decode(&[0, 0, 0, 1, 0]).is_err());
        assert!(StripeWanted::decode(&[0, 0, 1]).is_err());
        let mut g = grant().encode();
        g.push(0);
        assert!(StripeGrant::decode(&g).is_err());
        for (len, secret) in [(15, 32), (65, 32), (16, 31), (16, 33)] {
            let mut v = Vec::new();
            Writer::new(&mut v)
                .u32(1)
                .string(&vec![0; len])
                .string(&vec![0; secret]);
            assert!(StripeGrant::decode(&v).is_err(), "{len} {secret}");
        }
        let mut j = JoinRequest {
            session_ref: vec![1; 16],
            join_number: 1,
            proof: [0; 32],
        }
        .encode();
        j.pop();
        assert!(JoinRequest::decode(&j).is_err());
        assert!(CarrierOpen::decode(&[0, 0, 0, 1, 2]).is_err());
        assert_eq!(
            Ack::decode(
                &Ack {
                    received: 2,
                    limit: 1
                }
                .encode()
            ),
            Err(StripeError::BadAck)
        );
        assert!(Chunk::decode(&[0; 8]).is_err());
        assert!(Chunk::decode(&[0; 7]).is_err());
        assert_eq!(
            Chunk::decode(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1]),
            Err(StripeError::OffsetOverflow)
        );
        assert!(check_stripe_channel_request(&[]).is_ok());
        assert!(check_stripe_channel_request(&[0]).is_err());
    }

    #[test]
    fn debug_does_not_show_the_secret() {
        let s = format!("{:?}", grant());
        assert!(!s.contains('9'), "{s}");
    }
}
