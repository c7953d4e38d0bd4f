//! What a FIDO security key's signature must show (PROTOCOL.u2f flags), as
//! sshd's user_key_allowed judges it after the signature verified: the
//! user's touch (user presence) unless the key's authorized_keys line or
//! certificate says `no-touch-required` and PubkeyAuthOptions does not say
//! `touch-required`; user verification (PIN, biometric) when the line, the
//! certificate or PubkeyAuthOptions says `verify-required`. Other key types
//! pass untouched. The cryptography is sluice-proto's (`hostkey::sk`).

use crate::config::sshd::ServerConfig as Sshd;
use crate::keys::authorized_keys::KeyOptions;
use crate::log;
use sluice_proto::crypto::hostkey::{self, sk};
use sluice_proto::wire::Reader;
use std::net::SocketAddr;

/// The flags and counter of a security key's signature blob (`string alg,
/// string sig, byte flags, uint32 counter`), read without checking it:
/// for a signature the engine and the monitor have already verified. None
/// when the key is no security key or the blob is not in that form.
fn flags_of(key_blob: &[u8], signature: &[u8]) -> Option<sk::SkSignature> {
    let mut r = Reader::new(signature);
    let alg = r.utf8().ok()?;
    let key_type = hostkey::blob_key_type(key_blob)?;
    let plain = hostkey::cert::plain_key_type(key_type).unwrap_or(key_type);
    if !sk::is_sk_type(alg) || alg != plain {
        return None;
    }
    r.string().ok()?;
    let flags = r.u8().ok()?;
    let counter = r.u32().ok()?;
    r.finish().ok()?;
    Some(sk::SkSignature { flags, counter })
}

/// Whether a signed request by `key_blob` meets the security-key policy
/// for the key's options `opts`; a refusal is logged in sshd's words.
/// `signature` None (a query) and keys of other types always pass.
pub(crate) fn allows(
    cfg: &Sshd,
    peer: SocketAddr,
    user: &str,
    key_blob: &[u8],
    signature: Option<&[u8]>,
    opts: &KeyOptions,
) -> bool {
    let Some(signature) = signature else {
        return true;
    };
    let key_type = hostkey::blob_key_type(key_blob).unwrap_or_default();
    let plain = hostkey::cert::plain_key_type(key_type).unwrap_or(key_type);
    if !sk::is_sk_type(plain) {
        return true;
    }
    let refuse = |why: &str| {
        log!(
            Info,
            "public key {} {} signature for {user} from {} port {} rejected: {why}",
            crate::keys::key_type::sshd_key_type(key_blob),
            crate::keys::identity::fingerprint_sha256(key_blob),
            peer.ip(),
            peer.port()
        );
        false
    };
    let Some(sig) = flags_of(key_blob, signature) else {
        return refuse("malformed security key signature");
    };
    log!(
        Debug1,
        "security key signature: flags 0x{:02x} counter {}",
        sig.flags,
        sig.counter
    );
    let touch = cfg.pubkey_auth_options.touch_required || !opts.no_touch_required;
    if touch && !sig.user_present() {
        return refuse("user presence (authenticator touch) requirement not met");
    }
    let verify = cfg.pubkey_auth_options.verify_required || opts.verify_required;
    if verify && !sig.user_verified() {
        return refuse("user verification requirement not met");
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_proto::wire::Writer;

    fn blob() -> Vec<u8> {
        let mut b = Vec::new();
        Writer::new(&mut b)
            .utf8(sk::SK_ED25519)
            .string(&[7u8; 32])
            .utf8("ssh:");
        b
    }

    fn sig(flags: u8) -> Vec<u8> {
        let mut s = Vec::new();
        Writer::new(&mut s)
            .utf8(sk::SK_ED25519)
            .string(&[1u8; 64])
            .u8(flags)
            .u32(9);
        s
    }

    #[test]
    fn touch_and_verification() {
        let peer: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let mut cfg = Sshd::default();
        let plain = KeyOptions::default();
        let no_touch = KeyOptions {
            no_touch_required: true,
            ..KeyOptions::default()
        };
        let verify = KeyOptions {
            verify_required: true,
            ..KeyOptions::default()
        };
        let ok = |cfg: &Sshd, flags: u8, o: &KeyOptions| {
            allows(cfg, peer, "u", &blob(), Some(&sig(flags)), o)
        };
        assert!(ok(&cfg, sk::FLAG_USER_PRESENT, &plain));
        assert!(!ok(&cfg, 0, &plain));
        assert!(ok(&cfg, 0, &no_touch));
        assert!(!ok(&cfg, sk::FLAG_USER_PRESENT, &verify));
        assert!(ok(
            &cfg,
            sk::FLAG_USER_PRESENT | sk::FLAG_USER_VERIFIED,
            &verify
        ));
        // A query carries no signature; it is judged when signed.
        assert!(allows(&cfg, peer, "u", &blob(), None, &plain));
        // Malformed: refused, never read past.
        assert!(!allows(
            &cfg,
            peer,
            "u",
            &blob(),
            Some(&sig(1)[..20]),
            &plain
        ));
        cfg.pubkey_auth_options.touch_required = true;
        assert!(!ok(&cfg, 0, &no_touch));
        cfg.pubkey_auth_options.touch_required = false;
        cfg.pubkey_auth_options.verify_required = true;
        assert!(!ok(&cfg, sk::FLAG_USER_PRESENT, &plain));
        assert!(ok(&cfg, sk::FLAG_USER_VERIFIED, &no_touch));
    }
}
