//! Fuzz target: arbitrary text as sshd_config (sshd_config(5)): every
//! keyword's value checks, quoting, `Match` blocks and what is allowed in
//! them, `Include` (from memory), then the configuration for a few
//! connections (`Match` evaluation) and `sluiced -T`'s dump. The files live
//! only in memory (the configuration snapshot's replay): input split at NUL
//! bytes is /etc/ssh/sshd_config and then /etc/ssh/sshd_config.d/N.conf,
//! which `Include sshd_config.d/*.conf` (or `*`) names. RevokedKeys lines
//! are left out (the startup check reads the KRL from disk). Nothing may
//! panic; errors are fine.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice::config::split_line;
use sluice::config::sshd::snapshot::replay_in_memory;
use sluice::config::sshd::{MatchContext, ServerConfig};
use std::path::Path;

const MAIN: &str = "/etc/ssh/sshd_config";

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut files = Vec::new();
    for (i, part) in text.split('\0').enumerate() {
        let kept: String = part
            .lines()
            .filter(|l| !matches!(split_line(l), Ok(Some((kw, _))) if kw == "revokedkeys"))
            .flat_map(|l| [l, "\n"])
            .collect();
        let path = match i {
            0 => MAIN.to_owned(),
            n => format!("/etc/ssh/sshd_config.d/{n}.conf"),
        };
        files.push((path, kept));
    }
    let included: Vec<String> = files.iter().skip(1).map(|(p, _)| p.clone()).collect();
    let globs = [
        ("/etc/ssh/sshd_config.d/*.conf".to_owned(), included.clone()),
        ("/etc/ssh/sshd_config.d/*".to_owned(), included),
    ];
    replay_in_memory(&files, &globs);
    let Ok((cfg, _warnings)) = ServerConfig::load(Path::new(MAIN), &[]) else {
        return;
    };
    let peer = "192.0.2.7:50000".parse().expect("address");
    let local = "198.51.100.1:22".parse().expect("address");
    for user in ["root", "fuzz"] {
        let _ = cfg
            .for_connection(&MatchContext::connection(user, peer, local))
            .dump();
    }
    if let Ok(spec) =
        MatchContext::parse_spec("user=fuzz,host=h.example,addr=::1,laddr=::1,lport=2222")
    {
        let _ = cfg.for_test(&spec).map(|c| c.auth_methods());
    }
});
