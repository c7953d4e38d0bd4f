//! Fuzz target: arbitrary datagrams into the privilege separation
//! monitor's message decoder (sluiced's server/privsep/wire.rs), which
//! reads what a compromised pre-auth child or user process may send.
//! Decoding must never panic; whatever decodes must survive
//! `decode(encode(m)) == m`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice::server::privsep::wire::Msg;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = Msg::decode(data) {
        let out = m.encode();
        assert_eq!(Msg::decode(&out).ok().as_ref(), Some(&m), "round trip");
    }
});
