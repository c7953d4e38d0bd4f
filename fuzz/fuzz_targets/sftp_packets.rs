//! Fuzz target: arbitrary bytes as a stream of SFTP packets into the
//! framing and request decoder of `sluice_proto::sftp` (what sluiced's
//! internal-sftp reads from a client), and into the reply decoder (what
//! sluice-sftp reads from a server). Framing and decoding must never
//! panic; whatever request decodes must survive `decode(encode(r)) == r`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_proto::sftp::{frame, response, Reply, Request};

fn check(body: &[u8]) {
    if let Ok(Reply::ExtendedReply { data, .. }) = Reply::decode(body) {
        let _ = response::Limits::decode(data);
        let _ = response::statvfs(data);
        let _ = response::sha256_range(data);
    }
    if let Ok((id, req)) = Request::decode(body) {
        let mut out = Vec::new();
        req.encode(id, &mut out);
        assert_eq!(frame(&out), Ok(Some(out.len())), "encoded packet frames");
        let again = Request::decode(&out[4..]).expect("encoded packet decodes");
        assert_eq!(again, (id, req), "round trip");
    }
}

fuzz_target!(|data: &[u8]| {
    // The bytes as a body on their own (every decoder reached directly)...
    check(data);
    // ...and as a stream, as the server frames it.
    let mut at = 0;
    while let Some(rest) = data.get(at..) {
        match frame(rest) {
            Ok(Some(total)) => {
                check(&rest[4..total]);
                at += total;
            }
            Ok(None) | Err(_) => break,
        }
    }
});
