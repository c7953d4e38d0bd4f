//! Fuzz target: arbitrary text as a known_hosts file (sshd(8)
//! SSH_KNOWN_HOSTS FILE FORMAT): markers (`@revoked`,
//! `@cert-authority`), host pattern lists with negation and wildcards,
//! `[host]:port`, hashed names (`|1|salt|hmac`) and base64 key data,
//! matched against a few host names and ports. Nothing may panic; a
//! malformed line is skipped.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice::keys::known_hosts::{base64_decode, matching_lines};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for (host, port) in [("example.com", 22), ("192.0.2.7", 2222), ("[::1]", 22)] {
        let _ = matching_lines(&text, host, port);
    }
    // The first line's first word as a host name too, so patterns meet
    // names that look like them.
    if let Some(word) = text.split_whitespace().next() {
        let _ = matching_lines(&text, word, 22);
    }
    let _ = base64_decode(&text);
});
