//! Elliptic-curve Diffie-Hellman key exchange: `curve25519-sha256` and
//! `curve25519-sha256@libssh.org` (RFC 8731 section 3) and
//! `ecdh-sha2-nistp256/384/521` (RFC 5656 sections 4 and 6.1).
//!
//! Q_C and Q_S are 32 raw bytes for X25519 and uncompressed SEC1 points for
//! the NIST curves (the form OpenSSH sends and accepts). K is the X25519
//! output or the x coordinate, encoded as an `mpint`. An all-zero X25519
//! result (a low-order peer point) is rejected (RFC 8731 section 3).
//!
//! Ephemeral private keys are built from bytes the connection's [`Rng`]
//! draws (aws-lc's from-bytes constructors), so a seeded Rng makes them
//! reproducible; aws-lc still checks that a NIST scalar is in range.

use super::{all_zero, HashAlg, SharedSecret};
use crate::crypto::provider::KexMethod;
use crate::crypto::{CryptoError, Rng};
use aws_lc_rs::agreement::{self, PrivateKey, UnparsedPublicKey};
use zeroize::Zeroizing;

/// The curve of an ECDH method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Curve {
    X25519,
    P256,
    P384,
    P521,
}

impl Curve {
    fn algorithm(self) -> &'static agreement::Algorithm {
        match self {
            Curve::X25519 => &agreement::X25519,
            Curve::P256 => &agreement::ECDH_P256,
            Curve::P384 => &agreement::ECDH_P384,
            Curve::P521 => &agreement::ECDH_P521,
        }
    }

    /// Length of a private scalar (the X25519 key or the NIST field size).
    fn private_len(self) -> usize {
        match self {
            Curve::X25519 | Curve::P256 => 32,
            Curve::P384 => 48,
            Curve::P521 => 66,
        }
    }

    /// Length of a public value on the wire.
    fn public_len(self) -> usize {
        match self {
            Curve::X25519 => 32,
            Curve::P256 => 65,
            Curve::P384 => 97,
            Curve::P521 => 133,
        }
    }

    /// Checks the form of a peer's public value; aws-lc checks the point
    /// itself is on the curve.
    fn check_public(self, public: &[u8]) -> Result<(), CryptoError> {
        let form_ok = match self {
            Curve::X25519 => true,
            _ => public.first() == Some(&0x04),
        };
        if public.len() == self.public_len() && form_ok {
            Ok(())
        } else {
            Err(CryptoError)
        }
    }
}

/// Generates an ephemeral key pair from `rng`: the private key and its public value.
pub(super) fn generate(
    curve: Curve,
    rng: &mut dyn Rng,
) -> Result<(PrivateKey, Vec<u8>), CryptoError> {
    let private = private_from_rng(curve, rng)?;
    let public = private
        .compute_public_key()
        .map_err(|_| CryptoError)?
        .as_ref()
        .to_vec();
    Ok((private, public))
}

/// A private key from random bytes. X25519 takes any 32 bytes (RFC 7748
/// clamps them); a NIST scalar must lie in [1, n-1], which a random one
/// misses with probability below 2^-32 (P-521: its top byte is masked to
/// the curve's 521 bits first), so a few draws always suffice.
fn private_from_rng(curve: Curve, rng: &mut dyn Rng) -> Result<PrivateKey, CryptoError> {
    let mut bytes = Zeroizing::new(vec![0u8; curve.private_len()]);
    for _ in 0..8 {
        rng.fill(&mut bytes);
        if curve == Curve::P521 {
            if let Some(top) = bytes.first_mut() {
                *top &= 0x01;
            }
        }
        if let Ok(key) = PrivateKey::from_private_key(curve.algorithm(), &bytes) {
            return Ok(key);
        }
    }
    Err(CryptoError)
}

/// Raw agreement with a checked peer value: the X25519 output or the x
/// coordinate, handed to `f`. An all-zero X25519 output fails.
pub(super) fn agree<R>(
    curve: Curve,
    private: &PrivateKey,
    peer: &[u8],
    f: impl FnOnce(&[u8]) -> Result<R, CryptoError>,
) -> Result<R, CryptoError> {
    curve.check_public(peer)?;
    agreement::agree(
        private,
        UnparsedPublicKey::new(curve.algorithm(), peer),
        CryptoError,
        |secret| {
            if curve == Curve::X25519 && all_zero(secret) {
                return Err(CryptoError);
            }
            f(secret)
        },
    )
}

/// The client's ephemeral key for one ECDH exchange.
pub(super) struct EcdhClient {
    curve: Curve,
    private: PrivateKey,
    public: Vec<u8>,
}

impl EcdhClient {
    pub(super) fn generate(curve: Curve, rng: &mut dyn Rng) -> Result<Self, CryptoError> {
        let (private, public) = generate(curve, rng)?;
        Ok(EcdhClient {
            curve,
            private,
            public,
        })
    }
}

impl super::KexClient for EcdhClient {
    fn client_public(&self) -> &[u8] {
        &self.public
    }

    fn finish(self: Box<Self>, server_public: &[u8]) -> Result<SharedSecret, CryptoError> {
        agree(self.curve, &self.private, server_public, |s| {
            Ok(SharedSecret::mpint(s))
        })
    }
}

/// The server's side: Q_S and K for the client's Q_C.
pub(super) fn server_respond(
    curve: Curve,
    client_public: &[u8],
    rng: &mut dyn Rng,
) -> Result<(Vec<u8>, SharedSecret), CryptoError> {
    // Check Q_C before spending entropy and a scalar multiplication.
    curve.check_public(client_public)?;
    let (private, public) = generate(curve, rng)?;
    let k = agree(curve, &private, client_public, |s| {
        Ok(SharedSecret::mpint(s))
    })?;
    Ok((public, k))
}

/// An ECDH method of the aws-lc provider's table.
pub(super) struct Method {
    pub(super) name: &'static str,
    pub(super) curve: Curve,
    pub(super) hash: HashAlg,
}

impl KexMethod for Method {
    fn name(&self) -> &'static str {
        self.name
    }

    fn hash(&self) -> HashAlg {
        self.hash
    }

    fn start(&self, rng: &mut dyn Rng) -> Result<Box<dyn super::KexClient>, CryptoError> {
        Ok(Box::new(EcdhClient::generate(self.curve, rng)?))
    }

    fn respond(
        &self,
        client_public: &[u8],
        rng: &mut dyn Rng,
    ) -> Result<(Vec<u8>, SharedSecret), CryptoError> {
        server_respond(self.curve, client_public, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::kex::KexClient;
    use crate::crypto::SystemRng;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn fixed(curve: Curve, private: &str) -> Box<EcdhClient> {
        let private = PrivateKey::from_private_key(curve.algorithm(), &hex(private)).unwrap();
        let public = private.compute_public_key().unwrap().as_ref().to_vec();
        Box::new(EcdhClient {
            curve,
            private,
            public,
        })
    }

    #[test]
    fn x25519_rfc7748_vectors_as_mpint() {
        // RFC 7748 section 6.1 (Alice and Bob).
        let alice = fixed(
            Curve::X25519,
            "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
        );
        assert_eq!(
            alice.client_public(),
            hex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
        );
        let bob_pub = hex("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
        let k = alice.finish(&bob_pub).unwrap();
        let mut want = hex("00000020");
        want.extend(hex(
            "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742",
        ));
        assert_eq!(k.encoded(), want);
        // RFC 7748 section 5.2, first vector: the output has its top bit set,
        // so the mpint gains a zero byte.
        let c = fixed(
            Curve::X25519,
            "a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
        );
        let k = c
            .finish(&hex(
                "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
            ))
            .unwrap();
        let mut want = hex("0000002100");
        want.extend(hex(
            "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552",
        ));
        assert_eq!(k.encoded(), want);
    }

    #[test]
    fn x25519_rejects_low_order_and_bad_lengths() {
        let c = client_x25519();
        assert!(c.finish(&[0u8; 32]).is_err());
        let c = client_x25519();
        let mut one = [0u8; 32];
        one[0] = 1;
        assert!(c.finish(&one).is_err());
        assert!(client_x25519().finish(&[9u8; 31]).is_err());
        assert!(client_x25519().finish(&[9u8; 33]).is_err());
        assert!(server_respond(Curve::X25519, &[0u8; 32], &mut SystemRng).is_err());
        assert!(server_respond(Curve::X25519, &[], &mut SystemRng).is_err());
    }

    fn client_x25519() -> Box<EcdhClient> {
        Box::new(EcdhClient::generate(Curve::X25519, &mut SystemRng).unwrap())
    }

    #[test]
    fn p256_known_answer() {
        // Shared x computed with Python `cryptography` for these two scalars.
        let c = fixed(Curve::P256, P256_CLIENT);
        assert_eq!(c.client_public(), hex(P256_CLIENT_PUB));
        let k = c.finish(&hex(P256_SERVER_PUB)).unwrap();
        assert_eq!(k.encoded(), hex(P256_K));
    }

    const P256_CLIENT: &str = "1f2e3d4c5b6a79880102030405060708090a0b0c0d0e0f101112131415161718";
    const P256_CLIENT_PUB: &str = "04945bafbfe49bbffe5c33d49cd083da75ce805aaf1f2a82cfb010e0968163582a40f7f692a325069e22cc0fe04c0e68322f4459e45106d54325ee23b8c66bd184";
    const P256_SERVER_PUB: &str = "049381de55e16c04c2fa4d98bd2cf9d74edead09a83797a090265df5bc43b6b13d1fa688f47b7a7afe1a6c8a94fa8401bb3e39a18748184ff158e721fbeab87d93";
    const P256_K: &str =
        "0000002100ca5f485db2fdca95d27982bd02735ca45e402342187b93862cddecf9fd1772ba";

    /// A seeded Rng gives the same ephemeral key on every curve; a stream
    /// that never yields a valid P-521 scalar fails instead of looping.
    #[test]
    fn keys_come_from_the_rng() {
        use crate::crypto::insecure::SeededRng;
        for curve in [Curve::X25519, Curve::P256, Curve::P384, Curve::P521] {
            let (_, a) = generate(curve, &mut SeededRng::new(9)).unwrap();
            let (_, b) = generate(curve, &mut SeededRng::new(9)).unwrap();
            let (_, c) = generate(curve, &mut SeededRng::new(10)).unwrap();
            assert_eq!(a, b);
            assert_ne!(a, c);
        }
        struct Ones;
        impl Rng for Ones {
            fn fill(&mut self, buf: &mut [u8]) {
                buf.fill(0xff);
            }
        }
        // 0x01ff..ff is above the P-521 group order; 0xff..ff above P-256's.
        assert!(generate(Curve::P521, &mut Ones).is_err());
        assert!(generate(Curve::P256, &mut Ones).is_err());
        assert!(generate(Curve::X25519, &mut Ones).is_ok());
    }

    #[test]
    fn nist_rejects_bad_points() {
        for curve in [Curve::P256, Curve::P384, Curve::P521] {
            let (_, good) = generate(curve, &mut SystemRng).unwrap();
            assert!(server_respond(curve, &good, &mut SystemRng).is_ok());
            // Compressed form, wrong length, off-curve point, wrong curve.
            let mut compressed = good.clone();
            compressed.truncate(1 + (good.len() - 1) / 2);
            compressed[0] = 2;
            assert!(server_respond(curve, &compressed, &mut SystemRng).is_err());
            assert!(server_respond(curve, &good[..good.len() - 1], &mut SystemRng).is_err());
            let mut off = good.clone();
            *off.last_mut().unwrap() ^= 1;
            assert!(server_respond(curve, &off, &mut SystemRng).is_err());
            let mut bad_tag = good.clone();
            bad_tag[0] = 6;
            assert!(server_respond(curve, &bad_tag, &mut SystemRng).is_err());
            let c = EcdhClient::generate(curve, &mut SystemRng).unwrap();
            let (_, other) = generate(
                if curve == Curve::P256 {
                    Curve::P384
                } else {
                    Curve::P256
                },
                &mut SystemRng,
            )
            .unwrap();
            assert!(Box::new(c).finish(&other).is_err());
        }
    }
}
