//! The moduli file (moduli(5), sshd's ModuliFile, default /etc/ssh/moduli):
//! the safe primes sluiced hands out in Diffie-Hellman group exchange.
//!
//! One record a line: timestamp, type, tests, trials, size, generator (hex),
//! modulus (hex); `#` starts a comment. As sshd, only records it can trust
//! are kept: type 2 (safe prime), tested (some test bit besides 0x01) and
//! not found composite (0x01), at least one trial, a size that matches the
//! modulus (the field is its width minus one, as `ssh-keygen -M screen`
//! writes it), and a generator above 1. Other lines are skipped and counted.

use sluice_proto::crypto::kex::{DhModulus, MAX_MODULUS_BITS, MIN_MODULUS_BITS};

/// The moduli kept and the numbers of the lines skipped.
#[derive(Debug, Default)]
pub struct Moduli {
    /// Usable records, in file order.
    pub moduli: Vec<DhModulus>,
    /// 1-based numbers of lines that are not usable records.
    pub skipped: Vec<usize>,
}

/// moduli(5) type of a safe prime.
const TYPE_SAFE: u32 = 2;
/// moduli(5) test bit: found composite.
const TESTS_COMPOSITE: u32 = 0x01;

/// Parses a moduli file's text.
pub fn parse(text: &str) -> Moduli {
    let mut out = Moduli::default();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match record(line) {
            Some(m) => out.moduli.push(m),
            None => out.skipped.push(i + 1),
        }
    }
    out
}

fn record(line: &str) -> Option<DhModulus> {
    let f: Vec<&str> = line.split_ascii_whitespace().collect();
    let [_time, kind, tests, trials, size, generator, modulus] = f.as_slice() else {
        return None;
    };
    let num = |s: &str| s.parse::<u32>().ok();
    let (kind, tests, trials, size) = (num(kind)?, num(tests)?, num(trials)?, num(size)?);
    if kind != TYPE_SAFE || tests & TESTS_COMPOSITE != 0 || tests & !TESTS_COMPOSITE == 0 {
        return None;
    }
    if trials == 0 {
        return None;
    }
    let prime = hex(modulus)?;
    let generator = hex(generator)?;
    let bits = bit_width(&prime);
    if size.checked_add(1)? != bits || !(MIN_MODULUS_BITS..=MAX_MODULUS_BITS).contains(&bits) {
        return None;
    }
    if bit_width(&generator) < 2 || prime.last().is_none_or(|b| b & 1 == 0) {
        return None;
    }
    Some(DhModulus {
        bits,
        generator,
        prime,
    })
}

/// Unsigned magnitude from hex digits (an odd count gets a leading zero);
/// leading zero bytes stripped.
fn hex(s: &str) -> Option<Vec<u8>> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let padded = if s.len() % 2 == 1 {
        format!("0{s}")
    } else {
        s.to_owned()
    };
    let bytes: Vec<u8> = (0..padded.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&padded[i..i + 2], 16).ok())
        .collect::<Option<_>>()?;
    let start = bytes.iter().position(|&b| b != 0).unwrap_or(bytes.len());
    Some(bytes[start..].to_vec())
}

fn bit_width(mag: &[u8]) -> u32 {
    match mag.first() {
        None => 0,
        Some(&top) => (mag.len() as u32 - 1) * 8 + (8 - top.leading_zeros()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debian_moduli_parse() {
        // The system file when present (Debian ships 2048-8192-bit primes).
        let Ok(text) = std::fs::read_to_string("/etc/ssh/moduli") else {
            return;
        };
        let m = parse(&text);
        assert!(m.moduli.len() > 100, "{}", m.moduli.len());
        assert!(m.skipped.is_empty(), "{:?}", m.skipped);
        assert!(m.moduli.iter().any(|d| d.bits == 2048));
        assert!(m.moduli.iter().any(|d| d.bits == 8192));
    }

    #[test]
    fn records_are_checked() {
        // 1024-bit p = 2^1024 - 2^960 - 1 + ... (RFC 2409 group 2) in hex.
        let p = concat!(
            "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74",
            "020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F1437",
            "4FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED",
            "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF"
        );
        let line = |t: &str, tests: &str, trials: &str, size: &str, g: &str| {
            format!("20220714110357 {t} {tests} {trials} {size} {g} {p}\n")
        };
        let text = [
            "# comment\n".to_owned(),
            line("2", "6", "100", "1023", "2"), // good
            line("4", "6", "100", "1023", "2"), // Sophie Germain, not safe
            line("2", "7", "100", "1023", "2"), // composite
            line("2", "0", "100", "1023", "2"), // untested
            line("2", "6", "0", "1023", "2"),   // no trials
            line("2", "6", "100", "1024", "2"), // wrong size
            line("2", "6", "100", "1023", "1"), // generator 1
            "20220714110357 2 6 100 1023 2 XYZ\n".to_owned(),
            "too few fields\n".to_owned(),
            "\n".to_owned(),
        ]
        .concat();
        let m = parse(&text);
        assert_eq!(m.moduli.len(), 1);
        assert_eq!(m.moduli[0].bits, 1024);
        assert_eq!(m.moduli[0].generator, [2]);
        assert_eq!(m.skipped, [3, 4, 5, 6, 7, 8, 9, 10]);
    }
}
