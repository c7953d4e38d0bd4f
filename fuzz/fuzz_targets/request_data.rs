//! Fuzz target: arbitrary bytes as the request data sluiced decodes
//! itself, outside sluice-proto's message decoders: a pty-req's encoded
//! terminal modes (RFC 4254 8; parsed and applied to a termios), and the
//! type-specific data of forwarding channel opens and global requests
//! (direct-tcpip, tcpip-forward and its cancel, streamlocal paths). Nothing
//! may panic; malformed data is refused.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice::server::forward::parse_request_data;
use sluice::ttymodes;

/// A pty's settings, taken once (opening a pty per input would be the
/// target's whole cost); None where no pty can be opened (only the parse
/// is fuzzed there).
static BASE: std::sync::OnceLock<Option<ttymodes::Termios>> = std::sync::OnceLock::new();

fuzz_target!(|data: &[u8]| {
    if let Ok(modes) = ttymodes::parse(data) {
        if let Some(base) = BASE.get_or_init(|| ttymodes::pty_defaults().ok()) {
            let mut t = base.clone();
            ttymodes::apply(&mut t, &modes);
            let _ = ttymodes::encode(&t);
        }
    }
    let _ = parse_request_data(data);
});
