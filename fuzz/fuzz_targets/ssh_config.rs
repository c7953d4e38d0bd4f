//! Fuzz target: arbitrary text as a user's ssh_config (ssh_config(5)):
//! keyword and value checks, quoting, `Host` and `Match` blocks, then the
//! evaluation for a host (`%` tokens, first value wins, the final pass).
//! Only memory: `Include` lines are left out (they read files), and the
//! evaluation is skipped when the text mentions `exec` (`Match exec` runs a
//! command). Nothing may panic; errors are fine.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice::config::split_line;
use sluice::config::ssh::ClientConfig;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let kept: String = text
        .lines()
        .filter(|l| !matches!(split_line(l), Ok(Some((kw, _))) if kw == "include"))
        .flat_map(|l| [l, "\n"])
        .collect();
    let Ok(cfg) = ClientConfig::from_text(&kept) else {
        return;
    };
    if !kept.to_ascii_lowercase().contains("exec") {
        for host in ["example.com", "192.0.2.7", "fuzz"] {
            let _ = cfg.resolve(host);
        }
    }
});
