//! The default cipher order, chosen from the CPU (client and server alike).
//!
//! Where AES and carry-less multiplication are in hardware, AES-GCM costs a
//! fraction of chacha20-poly1305 per byte (`sluice bench-crypto` on a 2-core
//! x86_64 with AES-NI: about 0.09 against 0.63 CPU seconds per GiB each
//! way), so sluice offers aes128-gcm@openssh.com first. Elsewhere software
//! ChaCha20 beats software AES and OpenSSH's order stands (chacha20-poly1305
//! first, `sluice_proto::crypto::cipher::DEFAULT_CIPHERS`). SSH takes the
//! client's first cipher the server also offers, so the client's order is
//! the one that counts; the server's is shown by `sluiced -T`.
//!
//! Hardware: x86_64 AES-NI with PCLMULQDQ (or VAES with VPCLMULQDQ);
//! aarch64 the ARMv8 crypto extensions `aes` and `pmull`. `SLUICE_CPU_AES=1`
//! or `=0` in the environment overrides the detection (for tests of both
//! orders). This is only the default: a Ciphers setting (ssh_config,
//! sshd_config, `-c`, `-o`) replaces it, and its `+`/`-`/`^` forms apply to
//! it (config/algorithms.rs).

use sluice_proto::crypto::cipher::DEFAULT_CIPHERS;
use std::sync::OnceLock;

/// The environment variable that overrides the detection: `1` or `0`.
pub const ENV: &str = "SLUICE_CPU_AES";

/// AES-GCM first, then OpenSSH's order for the rest.
const AES_FIRST: &[&str] = &[
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "chacha20-poly1305@openssh.com",
    "aes128-ctr",
    "aes192-ctr",
    "aes256-ctr",
];

/// Which default order this process uses, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CipherOrder {
    /// AES-GCM ahead of chacha20-poly1305.
    pub aes_first: bool,
    /// The reason, in words: the CPU features found, or the override.
    pub why: &'static str,
}

impl CipherOrder {
    /// The default cipher list in this order.
    pub fn ciphers(&self) -> &'static [&'static str] {
        if self.aes_first {
            AES_FIRST
        } else {
            DEFAULT_CIPHERS
        }
    }

    /// The `-v` line, given the list in force (`in_force` differs from the
    /// default when a Ciphers setting changed it).
    pub fn describe(&self, in_force: &[String]) -> String {
        let order = if self.aes_first {
            "AES-GCM first"
        } else {
            "chacha20-poly1305 first"
        };
        let default = self.ciphers();
        if in_force.len() == default.len() && in_force.iter().zip(default).all(|(a, b)| a == b) {
            format!("cipher order: {order} ({})", self.why)
        } else {
            format!(
                "cipher order: from the Ciphers setting ({}); the default here is {order} ({})",
                in_force.join(","),
                self.why
            )
        }
    }
}

/// The order for this process: the override, else the CPU (looked at once).
pub fn current() -> CipherOrder {
    static ORDER: OnceLock<CipherOrder> = OnceLock::new();
    *ORDER.get_or_init(|| choose(std::env::var(ENV).ok().as_deref(), cpu_aes()))
}

/// The default cipher list of this process (see [`current`]).
pub fn default_ciphers() -> &'static [&'static str] {
    current().ciphers()
}

/// Decides from the override (`1`/`0`; anything else is ignored) and the
/// hardware found.
fn choose(env: Option<&str>, hardware: Option<&'static str>) -> CipherOrder {
    match (env.map(str::trim), hardware) {
        (Some("1"), _) => CipherOrder {
            aes_first: true,
            why: "SLUICE_CPU_AES=1",
        },
        (Some("0"), _) => CipherOrder {
            aes_first: false,
            why: "SLUICE_CPU_AES=0",
        },
        (_, Some(why)) => CipherOrder {
            aes_first: true,
            why,
        },
        (_, None) => CipherOrder {
            aes_first: false,
            why: "no AES hardware",
        },
    }
}

/// The AES-GCM hardware of this CPU, named, or None.
#[cfg(target_arch = "x86_64")]
fn cpu_aes() -> Option<&'static str> {
    use std::arch::is_x86_feature_detected as has;
    if has!("aes") && has!("pclmulqdq") {
        Some("AES-NI and PCLMULQDQ present")
    } else if has!("vaes") && has!("vpclmulqdq") {
        Some("VAES and VPCLMULQDQ present")
    } else {
        None
    }
}

/// The AES-GCM hardware of this CPU, named, or None.
#[cfg(target_arch = "aarch64")]
fn cpu_aes() -> Option<&'static str> {
    use std::arch::is_aarch64_feature_detected as has;
    (has!("aes") && has!("pmull")).then_some("ARMv8 AES and PMULL present")
}

/// No detection here: OpenSSH's order.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn cpu_aes() -> Option<&'static str> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_orders_hold_the_same_ciphers() {
        let mut a = AES_FIRST.to_vec();
        let mut b = DEFAULT_CIPHERS.to_vec();
        assert_eq!(b.first(), Some(&"chacha20-poly1305@openssh.com"));
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
        // AES-GCM moved ahead, everything else in OpenSSH's order.
        let gcm = |c: &&str| c.contains("-gcm@");
        let moved: Vec<&str> = DEFAULT_CIPHERS
            .iter()
            .copied()
            .filter(gcm)
            .chain(DEFAULT_CIPHERS.iter().copied().filter(|c| !gcm(c)))
            .collect();
        assert_eq!(AES_FIRST, moved);
    }

    #[test]
    fn override_then_hardware() {
        let hw = Some("AES-NI and PCLMULQDQ present");
        assert!(choose(None, hw).aes_first);
        assert!(!choose(None, None).aes_first);
        assert_eq!(choose(Some("0"), hw).why, "SLUICE_CPU_AES=0");
        assert!(!choose(Some("0"), hw).aes_first);
        assert!(choose(Some("1"), None).aes_first);
        assert_eq!(choose(Some("yes please"), None).why, "no AES hardware");
        assert_eq!(
            choose(None, hw).ciphers().first(),
            Some(&"aes128-gcm@openssh.com")
        );
        assert_eq!(choose(None, None).ciphers(), DEFAULT_CIPHERS);
    }

    #[test]
    fn describe_says_which_and_why() {
        let aes = choose(None, Some("AES-NI and PCLMULQDQ present"));
        let own = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            aes.describe(&own(aes.ciphers())),
            "cipher order: AES-GCM first (AES-NI and PCLMULQDQ present)"
        );
        let chacha = choose(None, None);
        assert_eq!(
            chacha.describe(&own(chacha.ciphers())),
            "cipher order: chacha20-poly1305 first (no AES hardware)"
        );
        assert_eq!(
            aes.describe(&own(&["aes256-ctr"])),
            "cipher order: from the Ciphers setting (aes256-ctr); the default here is AES-GCM first (AES-NI and PCLMULQDQ present)"
        );
    }

    #[test]
    fn modifiers_apply_to_the_chosen_default() {
        use crate::config::algorithms::resolve;
        let aes = choose(None, Some("x")).ciphers();
        let all = DEFAULT_CIPHERS;
        assert_eq!(
            resolve("^chacha20-poly1305@openssh.com", aes, all, "cipher").unwrap()[..3],
            [
                "chacha20-poly1305@openssh.com",
                "aes128-gcm@openssh.com",
                "aes256-gcm@openssh.com"
            ]
        );
        assert_eq!(
            resolve("-aes*-ctr", aes, all, "cipher").unwrap(),
            [
                "aes128-gcm@openssh.com",
                "aes256-gcm@openssh.com",
                "chacha20-poly1305@openssh.com"
            ]
        );
    }
}
