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

fuzz_target!(|data: &[u8]| {
    if let Ok(modes) = ttymodes::parse(data) {
        // SAFETY: termios is plain data; all zeroes is a valid value.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        ttymodes::apply(&mut t, &modes);
        let _ = ttymodes::encode(&t);
    }
    let _ = parse_request_data(data);
});
