//! `mlkem768x25519-sha256`: the ML-KEM-768 + X25519 hybrid of
//! draft-ietf-sshm-mlkem-hybrid-kex (sections 2.1-2.4), as OpenSSH 9.9+ speaks it.
//!
//! - C_INIT = C_PK2 || C_PK1: the ML-KEM-768 encapsulation key (1184 bytes)
//!   then the client's X25519 public value (32 bytes).
//! - S_REPLY = S_CT2 || S_PK1: the ML-KEM-768 ciphertext (1088 bytes) then
//!   the server's X25519 public value (32 bytes).
//! - K = SHA-256(K_PQ || K_CL), with K_PQ the 32-byte ML-KEM shared secret and
//!   K_CL the raw 32-byte X25519 output (not an mpint), encoded as a `string`.
//!
//! Entropy: the X25519 halves come from the connection's [`Rng`]. aws-lc
//! offers no way to feed entropy into ML-KEM key generation or
//! encapsulation, so those draw from aws-lc's own DRBG: this provider is
//! never deterministic for this method (the insecure test provider is).

use super::ecdh::{self, Curve};
use super::{HashAlg, SharedSecret};
use crate::crypto::provider::KexMethod;
use crate::crypto::{CryptoError, Rng};
use aws_lc_rs::agreement::PrivateKey;
use aws_lc_rs::kem::{Ciphertext, DecapsulationKey, EncapsulationKey, ML_KEM_768};

/// ML-KEM-768 encapsulation key length.
const EK_LEN: usize = 1184;
/// ML-KEM-768 ciphertext length.
const CT_LEN: usize = 1088;
/// X25519 public value length.
const X_LEN: usize = 32;

/// K = HASH(K_PQ || K_CL) as a `string`.
fn combine(k_pq: &[u8], k_cl: &[u8]) -> SharedSecret {
    let mut ctx = HashAlg::Sha256.context();
    ctx.update(k_pq);
    ctx.update(k_cl);
    SharedSecret::string(ctx.finish().as_ref())
}

/// The client's ephemeral ML-KEM and X25519 keys.
pub(super) struct HybridClient {
    dk: DecapsulationKey,
    x25519: PrivateKey,
    /// C_INIT.
    public: Vec<u8>,
}

impl HybridClient {
    pub(super) fn generate(rng: &mut dyn Rng) -> Result<Self, CryptoError> {
        let dk = DecapsulationKey::generate(&ML_KEM_768).map_err(|_| CryptoError)?;
        let ek = dk
            .encapsulation_key()
            .and_then(|ek| ek.key_bytes())
            .map_err(|_| CryptoError)?;
        let (x25519, x_pub) = ecdh::generate(Curve::X25519, rng)?;
        let mut public = Vec::with_capacity(EK_LEN + X_LEN);
        public.extend_from_slice(ek.as_ref());
        public.extend_from_slice(&x_pub);
        if public.len() != EK_LEN + X_LEN {
            return Err(CryptoError);
        }
        Ok(HybridClient { dk, x25519, public })
    }
}

impl super::KexClient for HybridClient {
    fn client_public(&self) -> &[u8] {
        &self.public
    }

    fn finish(self: Box<Self>, server_public: &[u8]) -> Result<SharedSecret, CryptoError> {
        if server_public.len() != CT_LEN + X_LEN {
            return Err(CryptoError);
        }
        let (ct, x_pub) = server_public.split_at(CT_LEN);
        let k_pq = self
            .dk
            .decapsulate(Ciphertext::from(ct))
            .map_err(|_| CryptoError)?;
        ecdh::agree(Curve::X25519, &self.x25519, x_pub, |k_cl| {
            Ok(combine(k_pq.as_ref(), k_cl))
        })
    }
}

/// The server's side: S_REPLY and K for the client's C_INIT.
pub(super) fn server_respond(
    client_public: &[u8],
    rng: &mut dyn Rng,
) -> Result<(Vec<u8>, SharedSecret), CryptoError> {
    if client_public.len() != EK_LEN + X_LEN {
        return Err(CryptoError);
    }
    let (ek, client_x) = client_public.split_at(EK_LEN);
    let ek = EncapsulationKey::new(&ML_KEM_768, ek).map_err(|_| CryptoError)?;
    let (ct, k_pq) = ek.encapsulate().map_err(|_| CryptoError)?;
    let (x25519, x_pub) = ecdh::generate(Curve::X25519, rng)?;
    let k = ecdh::agree(Curve::X25519, &x25519, client_x, |k_cl| {
        Ok(combine(k_pq.as_ref(), k_cl))
    })?;
    let mut reply = Vec::with_capacity(CT_LEN + X_LEN);
    reply.extend_from_slice(ct.as_ref());
    reply.extend_from_slice(&x_pub);
    Ok((reply, k))
}

/// `mlkem768x25519-sha256` in the aws-lc provider's table.
pub(super) struct Method;

impl KexMethod for Method {
    fn name(&self) -> &'static str {
        "mlkem768x25519-sha256"
    }

    fn hash(&self) -> HashAlg {
        HashAlg::Sha256
    }

    fn start(&self, rng: &mut dyn Rng) -> Result<Box<dyn super::KexClient>, CryptoError> {
        Ok(Box::new(HybridClient::generate(rng)?))
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
    use crate::crypto::kex::KexClient;
    use crate::crypto::SystemRng;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn lengths_and_agreement() {
        let c = Box::new(HybridClient::generate(&mut SystemRng).unwrap());
        assert_eq!(c.client_public().len(), 1216);
        let (reply, k_s) = server_respond(c.client_public(), &mut SystemRng).unwrap();
        assert_eq!(reply.len(), 1120);
        let k_c = c.finish(&reply).unwrap();
        assert_eq!(k_c.encoded(), k_s.encoded());
        // A string of 32 bytes, not an mpint: no sign padding ever.
        assert_eq!(&k_c.encoded()[..4], &[0, 0, 0, 32]);
        assert_eq!(k_c.encoded().len(), 36);
    }

    #[test]
    fn rejects_bad_inputs() {
        let c = HybridClient::generate(&mut SystemRng).unwrap();
        let good = c.client_public().to_vec();
        assert!(server_respond(&good[..1215], &mut SystemRng).is_err());
        assert!(server_respond(&[good.as_slice(), &[0]].concat(), &mut SystemRng).is_err());
        let mut zero_x = good.clone();
        zero_x[EK_LEN..].fill(0);
        assert!(server_respond(&zero_x, &mut SystemRng).is_err());
        let (reply, _) = server_respond(&good, &mut SystemRng).unwrap();
        assert!(Box::new(HybridClient::generate(&mut SystemRng).unwrap())
            .finish(&reply[..1119])
            .is_err());
        let mut zero_x = reply.clone();
        zero_x[CT_LEN..].fill(0);
        assert!(Box::new(c).finish(&zero_x).is_err());
    }

    /// Known answer built with Python `cryptography` 50: an ML-KEM-768 key
    /// made by aws-lc (expanded decapsulation key), a ciphertext Python
    /// encapsulated to it, fixed X25519 keys, and K = SHA-256(ss || x25519)
    /// computed in Python. Checks the split order of S_REPLY and the combiner.
    #[test]
    fn client_known_answer() {
        let kat = include_str!("testdata/mlkem768x25519.kat");
        let field = |name: &str| -> Vec<u8> {
            let line = kat
                .lines()
                .find(|l| l.starts_with(&format!("{name}=")))
                .unwrap();
            hex(line.split('=').nth(1).unwrap())
        };
        let dk = DecapsulationKey::new(&ML_KEM_768, &field("dk")).unwrap();
        let x25519 = PrivateKey::from_private_key(
            &aws_lc_rs::agreement::X25519,
            &field("client_x25519_private"),
        )
        .unwrap();
        let c = Box::new(HybridClient {
            dk,
            x25519,
            public: Vec::new(),
        });
        let k = c.finish(&field("s_reply")).unwrap();
        assert_eq!(k.encoded(), field("k"));
    }
}
