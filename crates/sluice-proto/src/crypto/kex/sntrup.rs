//! `sntrup761x25519-sha512` (and its older name with `@openssh.com`): the
//! Streamlined NTRU Prime 761 + X25519 hybrid of OpenSSH 8.5+, as
//! draft-josefsson-ntruprime-ssh and OpenSSH's PROTOCOL describe it.
//!
//! - Q_C = the sntrup761 public key (1158 bytes) || the client's X25519 public value (32).
//! - Q_S = the sntrup761 ciphertext (1039 bytes) || the server's X25519 public value (32).
//! - K = SHA-512(sntrup761 shared secret || raw X25519 output), encoded as a
//!   `string` (not an mpint), like mlkem768x25519.
//!
//! sntrup761 is the `sntrup761` crate (known-answer tested upstream). Its key
//! generation and encapsulation run from 32-byte seeds that we draw from the
//! connection's [`Rng`], so this method is deterministic under a
//! deterministic Rng like the curve halves.

use super::ecdh::{self, Curve};
use super::{HashAlg, KexClient, SharedSecret};
use crate::crypto::provider::KexMethod;
use crate::crypto::{CryptoError, Rng};
use aws_lc_rs::agreement::PrivateKey;
use sntrup761::{Ciphertext, DecapsulationKey, EncapsulationKey};
use zeroize::Zeroizing;

const PK_LEN: usize = sntrup761::PUBLIC_KEY_SIZE;
const CT_LEN: usize = sntrup761::CIPHERTEXT_SIZE;
const X_LEN: usize = 32;

/// K = SHA-512(K_PQ || K_CL) as a `string`.
fn combine(k_pq: &[u8], k_cl: &[u8]) -> SharedSecret {
    let mut ctx = HashAlg::Sha512.context();
    ctx.update(k_pq);
    ctx.update(k_cl);
    SharedSecret::string(ctx.finish().as_ref())
}

fn seed(rng: &mut dyn Rng) -> Zeroizing<[u8; 32]> {
    let mut s = Zeroizing::new([0u8; 32]);
    rng.fill(&mut *s);
    s
}

/// The client's ephemeral sntrup761 and X25519 keys.
struct HybridClient {
    dk: DecapsulationKey,
    x25519: PrivateKey,
    public: Vec<u8>,
}

impl KexClient for HybridClient {
    fn client_public(&self) -> &[u8] {
        &self.public
    }

    fn finish(self: Box<Self>, server_public: &[u8]) -> Result<SharedSecret, CryptoError> {
        if server_public.len() != CT_LEN + X_LEN {
            return Err(CryptoError);
        }
        let (ct, x_pub) = server_public.split_at(CT_LEN);
        let ct = Ciphertext::try_from(ct).map_err(|_| CryptoError)?;
        let k_pq = self.dk.decapsulate(&ct);
        ecdh::agree(Curve::X25519, &self.x25519, x_pub, |k_cl| {
            Ok(combine(k_pq.as_ref(), k_cl))
        })
    }
}

fn client_start(rng: &mut dyn Rng) -> Result<HybridClient, CryptoError> {
    let (ek, dk) = sntrup761::generate_key_from_seed(*seed(rng));
    let (x25519, x_pub) = ecdh::generate(Curve::X25519, rng)?;
    let mut public = Vec::with_capacity(PK_LEN + X_LEN);
    public.extend_from_slice(ek.as_ref());
    public.extend_from_slice(&x_pub);
    if public.len() != PK_LEN + X_LEN {
        return Err(CryptoError);
    }
    Ok(HybridClient { dk, x25519, public })
}

fn server_respond(
    client_public: &[u8],
    rng: &mut dyn Rng,
) -> Result<(Vec<u8>, SharedSecret), CryptoError> {
    if client_public.len() != PK_LEN + X_LEN {
        return Err(CryptoError);
    }
    let (ek, client_x) = client_public.split_at(PK_LEN);
    let ek = EncapsulationKey::try_from(ek).map_err(|_| CryptoError)?;
    let (ct, k_pq) = ek.encapsulate_deterministic(*seed(rng));
    let (x25519, x_pub) = ecdh::generate(Curve::X25519, rng)?;
    let k = ecdh::agree(Curve::X25519, &x25519, client_x, |k_cl| {
        Ok(combine(k_pq.as_ref(), k_cl))
    })?;
    let mut reply = Vec::with_capacity(CT_LEN + X_LEN);
    reply.extend_from_slice(ct.as_ref());
    reply.extend_from_slice(&x_pub);
    Ok((reply, k))
}

/// One name of the method in the aws-lc provider's table.
pub(super) struct Method {
    pub(super) name: &'static str,
}

impl KexMethod for Method {
    fn name(&self) -> &'static str {
        self.name
    }

    fn hash(&self) -> HashAlg {
        HashAlg::Sha512
    }

    fn start(&self, rng: &mut dyn Rng) -> Result<Box<dyn KexClient>, CryptoError> {
        Ok(Box::new(client_start(rng)?))
    }

    fn respond(
        &self,
        client_public: &[u8],
        rng: &mut dyn Rng,
    ) -> Result<(Vec<u8>, SharedSecret), CryptoError> {
        server_respond(client_public, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::SystemRng;

    #[test]
    fn lengths_and_agreement() {
        let c = Box::new(client_start(&mut SystemRng).unwrap());
        assert_eq!(c.client_public().len(), 1190);
        let (reply, k_s) = server_respond(c.client_public(), &mut SystemRng).unwrap();
        assert_eq!(reply.len(), 1071);
        let k_c = c.finish(&reply).unwrap();
        assert_eq!(k_c.encoded(), k_s.encoded());
        // A string of 64 bytes (SHA-512), not an mpint.
        assert_eq!(&k_c.encoded()[..4], &[0, 0, 0, 64]);
        assert_eq!(k_c.encoded().len(), 68);
    }

    #[test]
    fn rejects_bad_inputs() {
        let c = client_start(&mut SystemRng).unwrap();
        let good = c.client_public().to_vec();
        assert!(server_respond(&good[..1189], &mut SystemRng).is_err());
        assert!(server_respond(&[good.as_slice(), &[0]].concat(), &mut SystemRng).is_err());
        let mut zero_x = good.clone();
        zero_x[PK_LEN..].fill(0);
        assert!(server_respond(&zero_x, &mut SystemRng).is_err());
        let (reply, _) = server_respond(&good, &mut SystemRng).unwrap();
        assert!(Box::new(client_start(&mut SystemRng).unwrap())
            .finish(&reply[..1070])
            .is_err());
        let mut zero_x = reply.clone();
        zero_x[CT_LEN..].fill(0);
        assert!(Box::new(c).finish(&zero_x).is_err());
    }

    /// The sntrup761 secret enters the hash before the X25519 output, as
    /// OpenSSH's PROTOCOL orders them.
    #[test]
    fn combiner_order() {
        let k = combine(&[1u8; 32], &[2u8; 32]);
        let want = HashAlg::Sha512.digest(&[[1u8; 32], [2u8; 32]].concat());
        assert_eq!(&k.encoded()[4..], want.as_slice());
    }
}
