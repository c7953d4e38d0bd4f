//! Fuzz target: arbitrary text as authorized_keys and
//! AuthorizedPrincipalsFile contents (sshd(8) AUTHORIZED_KEYS FILE FORMAT):
//! each line through sluiced's option parser (`command=`, `from=`,
//! `expiry-time=`, `permitopen=`, `permitlisten=`, `environment=`,
//! `tunnel=`, `principals=`, quoting) and the line's own conditions, then
//! the whole text through the key, CA and principal lookups. Nothing may
//! panic; a malformed line is skipped.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice::keys::authorized_keys::{check_line, find_cert_authority, find_key, find_principal};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let v4 = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7));
    let v6 = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 7));
    // Times either side of any expiry-time a line may name.
    for line in text.lines() {
        let _ = check_line(line, v4, 0);
        let _ = check_line(line, v6, u64::MAX);
    }
    let files = vec![(PathBuf::from("authorized_keys"), data.to_vec())];
    let names = ["fuzz".to_owned(), "root".to_owned()];
    let _ = find_key(
        &files,
        b"no such key",
        "fuzz",
        v4,
        Some("host.example"),
        1_700_000_000,
    );
    let _ = find_cert_authority(&files, b"no such ca", &names, "fuzz", v6, 1_700_000_000);
    let _ = find_principal(&files, &names, "fuzz", v4, 1_700_000_000);
});
