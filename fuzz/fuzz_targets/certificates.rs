//! Fuzz target: arbitrary bytes as an OpenSSH certificate (PROTOCOL.certkeys:
//! the blob as on the wire, and a `*-cert.pub` line) and as a binary KRL
//! (PROTOCOL.krl: sections, serial ranges, bitmaps, key ids, hashes), then
//! the checks sluiced runs on them (validity, principals, options, CA
//! signature; revocation lookups). Nothing may panic; malformed input is
//! refused.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice::keys::cert::Cert;
use sluice::keys::krl::Krl;

fn exercise(c: &Cert) {
    let _ = (
        c.type_name(),
        c.fingerprint(),
        c.ca_fingerprint(),
        c.validity(),
    );
    let _ = c.user_options();
    let algs = ["ssh-ed25519".to_owned(), "rsa-sha2-512".to_owned()];
    let _ = c.check(
        c.is_host(),
        1_700_000_000,
        Some("fuzz"),
        true,
        c.is_host(),
        &algs,
    );
}

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = Cert::parse(data) {
        exercise(&c);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok((c, _)) = Cert::parse_openssh(text) {
            exercise(&c);
        }
    }
    if let Ok(k) = Krl::parse(data) {
        let _ = k.key_revoked(data);
        let _ = k.cert_revoked(data, 1, "fuzz");
        let _ = k.cert_revoked(&[], u64::MAX, "");
    }
});
