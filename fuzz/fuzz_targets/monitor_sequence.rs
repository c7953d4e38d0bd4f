//! Fuzz target: a hostile child's sequence of datagrams against sluiced's
//! privilege separation monitor (server/privsep/): the first byte picks
//! the pre-auth or the post-auth loop, the rest is cut into datagrams
//! (a u16 length each). The monitor's table (policy.rs) decides what it
//! takes; the loop must never panic or hang, and must sign nothing
//! before the pre-auth child has asked for its one key exchange.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice::server::privsep::harness::{drive, Phase};
use sluice_proto::crypto::hostkey::{KeyPair, Signer};
use std::sync::{Arc, OnceLock};

static HOST: OnceLock<Arc<dyn Signer>> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    // A fixed key, so that the seeds can hold transcripts naming it.
    let host = HOST.get_or_init(|| Arc::new(KeyPair::from_ed25519_seed(&[7; 32]).unwrap()));
    let Some((&first, mut rest)) = data.split_first() else {
        return;
    };
    let phase = if first & 1 == 0 {
        Phase::Preauth
    } else {
        Phase::Postauth
    };
    let mut datagrams = Vec::new();
    while rest.len() >= 2 && datagrams.len() < 64 {
        let n = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
        let end = (2 + n).min(rest.len());
        datagrams.push(&rest[2..end]);
        rest = &rest[end..];
    }
    let (_, signed) = drive(phase, host, &datagrams);
    if phase == Phase::Preauth {
        assert!(
            signed <= 1,
            "the pre-auth monitor signed {signed} exchanges"
        );
    }
});
