//! The join credential of `stripe-v00@sluice.dev` (PROTOCOL.md, "Channel
//! striping": discovery and joining): the join key both ends of the primary
//! derive, the proof a secondary connection shows, and the server's
//! single-use bookkeeping of join numbers.
//!
//! No randomness here: the server's caller passes the random join secret
//! and session reference in. Proofs are compared in constant time.

use super::codec::{JoinRequest, StripeGrant};
use super::{MAX_SECONDARIES, STRIPE_REQUEST};
use crate::crypto::constant_time_eq;
use crate::wire::Writer;
use aws_lc_rs::hmac;
use zeroize::Zeroize;

/// Bytes of the join secret in a grant.
pub const JOIN_SECRET_LEN: usize = 32;
/// Bytes of a join proof (HMAC-SHA256).
pub const PROOF_LEN: usize = 32;
/// Shortest session reference a server may hand out.
pub const MIN_REF_LEN: usize = 16;
/// Longest session reference.
pub const MAX_REF_LEN: usize = 64;

/// The key a secondary's proof is made with, derived on the primary from
/// the grant's join secret and the primary's session identifier. Wiped
/// when dropped.
pub struct JoinKey([u8; 32]);

impl Drop for JoinKey {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl std::fmt::Debug for JoinKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JoinKey(..)")
    }
}

fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data);
    let mut out = [0u8; 32];
    // HMAC-SHA256 tags are 32 bytes: both sides have that length.
    out.copy_from_slice(tag.as_ref());
    out
}

impl JoinKey {
    /// `HMAC-SHA256(join secret, string("stripe-v00@sluice.dev") ||
    /// string(H_primary))`. The session identifier alone would not do:
    /// it is not a secret (agents see it in sign requests).
    pub fn derive(join_secret: &[u8; JOIN_SECRET_LEN], primary_session_id: &[u8]) -> JoinKey {
        let mut data = Vec::with_capacity(primary_session_id.len() + 40);
        Writer::new(&mut data)
            .utf8(STRIPE_REQUEST)
            .string(primary_session_id);
        JoinKey(hmac_sha256(join_secret, &data))
    }

    /// `HMAC-SHA256(join key, string(H_secondary) || string(session
    /// reference) || uint32 join number || string(user))`.
    pub fn proof(
        &self,
        secondary_session_id: &[u8],
        session_ref: &[u8],
        join_number: u32,
        user: &str,
    ) -> [u8; PROOF_LEN] {
        let mut data =
            Vec::with_capacity(secondary_session_id.len() + session_ref.len() + user.len() + 16);
        Writer::new(&mut data)
            .string(secondary_session_id)
            .string(session_ref)
            .u32(join_number)
            .utf8(user);
        hmac_sha256(&self.0, &data)
    }
}

/// Client: what one grant lets it do, join number by join number.
#[derive(Debug)]
pub struct Joiner {
    key: JoinKey,
    session_ref: Vec<u8>,
    allowed: u32,
    next: u32,
}

impl Joiner {
    /// From the server's grant on the primary whose session identifier is
    /// `primary_session_id`.
    pub fn new(grant: &StripeGrant, primary_session_id: &[u8]) -> Joiner {
        Joiner {
            key: JoinKey::derive(&grant.join_secret, primary_session_id),
            session_ref: grant.session_ref.clone(),
            allowed: grant.allowed,
            next: 1,
        }
    }

    /// Secondaries the grant allows in all.
    pub fn allowed(&self) -> u32 {
        self.allowed
    }

    /// The join request for a new secondary connection whose session
    /// identifier is `secondary_session_id`, using up the next join
    /// number; None when every number is used.
    pub fn join(&mut self, secondary_session_id: &[u8], user: &str) -> Option<JoinRequest> {
        if self.next > self.allowed {
            return None;
        }
        let join_number = self.next;
        self.next += 1;
        Some(JoinRequest {
            session_ref: self.session_ref.clone(),
            join_number,
            proof: self
                .key
                .proof(secondary_session_id, &self.session_ref, join_number, user),
        })
    }
}

/// Why a join was refused: for the server's log only. The client sees the
/// same USERAUTH_FAILURE whatever the cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinRefused {
    /// The reference names another session.
    OtherSession,
    /// The user name differs from the primary's.
    WrongUser,
    /// The join number is 0 or past the number allowed.
    NumberOutOfRange,
    /// The join number admitted a connection already.
    NumberUsed,
    /// The proof does not verify.
    BadProof,
}

impl std::fmt::Display for JoinRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            JoinRefused::OtherSession => "unknown session reference",
            JoinRefused::WrongUser => "user differs from the session's",
            JoinRefused::NumberOutOfRange => "join number out of range",
            JoinRefused::NumberUsed => "join number already used",
            JoinRefused::BadProof => "join proof does not verify",
        })
    }
}

/// Server: one grant, kept for the primary's session: which join numbers
/// have admitted a connection.
#[derive(Debug)]
pub struct Admission {
    key: JoinKey,
    session_ref: Vec<u8>,
    user: String,
    allowed: u32,
    /// Bit n-1 set: join number n was used.
    used: [u64; 4],
}

impl Admission {
    /// Answers a client's request for `wanted` secondaries on the primary
    /// of `user` whose session identifier is `primary_session_id`, allowing
    /// at most `max_secondaries` (sshd_config MaxStreams minus one). The
    /// caller draws `session_ref` (16-64 bytes) and `join_secret` from its
    /// random generator. None: the server declines (nothing allowed).
    pub fn issue(
        session_ref: Vec<u8>,
        join_secret: [u8; JOIN_SECRET_LEN],
        primary_session_id: &[u8],
        user: &str,
        wanted: u32,
        max_secondaries: u32,
    ) -> Option<(Admission, StripeGrant)> {
        let allowed = wanted.min(max_secondaries).min(MAX_SECONDARIES);
        if allowed == 0 || !(MIN_REF_LEN..=MAX_REF_LEN).contains(&session_ref.len()) {
            return None;
        }
        let admission = Admission {
            key: JoinKey::derive(&join_secret, primary_session_id),
            session_ref: session_ref.clone(),
            user: user.to_owned(),
            allowed,
            used: [0; 4],
        };
        let grant = StripeGrant {
            allowed,
            session_ref,
            join_secret,
        };
        Some((admission, grant))
    }

    /// The reference the grant named.
    pub fn session_ref(&self) -> &[u8] {
        &self.session_ref
    }

    /// Join numbers used so far.
    pub fn admitted(&self) -> u32 {
        self.used.iter().map(|w| w.count_ones()).sum()
    }

    /// Checks a secondary's join request (its user name and session
    /// identifier as its own connection saw them). On success the join
    /// number is used up and returned; a refused request uses nothing.
    pub fn admit(
        &mut self,
        secondary_session_id: &[u8],
        user: &str,
        req: &JoinRequest,
    ) -> Result<u32, JoinRefused> {
        // The proof is computed and compared whatever else is wrong, so
        // the time taken says little about which check failed.
        let want = self.key.proof(
            secondary_session_id,
            &req.session_ref,
            req.join_number,
            user,
        );
        let proof_ok = constant_time_eq(&want, &req.proof);
        if !constant_time_eq(&self.session_ref, &req.session_ref) {
            return Err(JoinRefused::OtherSession);
        }
        if user != self.user {
            return Err(JoinRefused::WrongUser);
        }
        if req.join_number == 0 || req.join_number > self.allowed {
            return Err(JoinRefused::NumberOutOfRange);
        }
        if !proof_ok {
            return Err(JoinRefused::BadProof);
        }
        let bit = req.join_number - 1;
        let (word, mask) = ((bit / 64) as usize, 1u64 << (bit % 64));
        let Some(w) = self.used.get_mut(word) else {
            return Err(JoinRefused::NumberOutOfRange);
        };
        if *w & mask != 0 {
            return Err(JoinRefused::NumberUsed);
        }
        *w |= mask;
        Ok(req.join_number)
    }
}
