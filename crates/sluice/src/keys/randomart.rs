//! VisualHostKey's picture of a key: the "drunken bishop" walk that
//! OpenSSH draws under a fingerprint (Loss, Limasset and Wolf's analysis
//! describes it): a 17x9 board, the bishop starting in the middle; each
//! byte of the SHA-256 digest gives four moves, two bits each from the
//! low end (bit 0: right or left, bit 1: down or up), stopping at the
//! walls; a square shows how often it was visited, `S` the start and `E`
//! the end. The frame names the key type and size above and the hash
//! below, as `ssh-keygen -lv` prints it, so the two pictures compare.

use ssh_key::public::KeyData;
use ssh_key::{HashAlg, PublicKey};

const W: usize = 17;
const H: usize = 9;
/// Visit counts 0..=14, then the start and end marks.
const SYMBOLS: &[u8] = b" .o+=*BOX@%&#/^SE";

/// The picture for a public key blob, or None when the blob is not a key.
pub fn randomart(blob: &[u8]) -> Option<String> {
    let key = PublicKey::from_bytes(blob).ok()?;
    let digest = key.fingerprint(HashAlg::Sha256);
    let (name, bits) = type_and_size(key.key_data());
    Some(draw(
        digest.as_bytes(),
        &format!("[{name} {bits}]"),
        "[SHA256]",
    ))
}

/// ssh-keygen's type name and size in bits.
fn type_and_size(k: &KeyData) -> (&'static str, usize) {
    match k {
        KeyData::Ed25519(_) => ("ED25519", 256),
        KeyData::Ecdsa(e) => ("ECDSA", curve_bits(e.curve())),
        KeyData::Rsa(r) => {
            let n = r.n.as_positive_bytes().unwrap_or_default();
            let lead = n.first().map_or(0, |b| 8 - b.leading_zeros() as usize);
            ("RSA", n.len().saturating_sub(1) * 8 + lead)
        }
        KeyData::SkEd25519(_) => ("ED25519-SK", 256),
        KeyData::SkEcdsaSha2NistP256(_) => ("ECDSA-SK", 256),
        _ => ("UNKNOWN", 0),
    }
}

fn curve_bits(c: ssh_key::EcdsaCurve) -> usize {
    match c {
        ssh_key::EcdsaCurve::NistP256 => 256,
        ssh_key::EcdsaCurve::NistP384 => 384,
        ssh_key::EcdsaCurve::NistP521 => 521,
    }
}

/// A frame line with `label` centred (the extra dash goes right).
fn frame(label: &str) -> String {
    let left = W.saturating_sub(label.len()) / 2;
    let right = W.saturating_sub(left + label.len());
    format!("+{}{label}{}+", "-".repeat(left), "-".repeat(right))
}

/// The walk over `digest`, framed.
fn draw(digest: &[u8], title: &str, footer: &str) -> String {
    let mut field = [[0u8; W]; H];
    let (mut x, mut y) = (W / 2, H / 2);
    let top = SYMBOLS.len() as u8 - 3;
    for byte in digest {
        let mut b = *byte;
        for _ in 0..4 {
            x = if b & 1 != 0 {
                (x + 1).min(W - 1)
            } else {
                x.saturating_sub(1)
            };
            y = if b & 2 != 0 {
                (y + 1).min(H - 1)
            } else {
                y.saturating_sub(1)
            };
            if field[y][x] < top {
                field[y][x] += 1;
            }
            b >>= 2;
        }
    }
    field[H / 2][W / 2] = SYMBOLS.len() as u8 - 2;
    field[y][x] = SYMBOLS.len() as u8 - 1;
    let mut out = frame(title);
    for row in &field {
        out.push_str("\n|");
        out.extend(row.iter().map(|&c| SYMBOLS[usize::from(c)] as char));
        out.push('|');
    }
    out.push('\n');
    out.push_str(&frame(footer));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// The same picture as `ssh-keygen -lv` for each key type.
    #[test]
    fn as_ssh_keygen_draws_it() {
        let dir = std::env::temp_dir().join(format!("sluice-randomart-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (t, bits) in [("ed25519", "256"), ("ecdsa", "384"), ("rsa", "3072")] {
            let k = dir.join(t);
            let ok = Command::new("ssh-keygen")
                .args(["-q", "-N", "", "-t", t, "-b", bits, "-f"])
                .arg(&k)
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                eprintln!("ssh-keygen not available: skipped");
                return;
            }
            let out = Command::new("ssh-keygen")
                .arg("-lvf")
                .arg(&k)
                .output()
                .unwrap();
            let text = String::from_utf8(out.stdout).unwrap();
            let want: Vec<&str> = text.lines().skip(1).collect();
            let pubtext = std::fs::read_to_string(k.with_extension("pub")).unwrap();
            let blob = PublicKey::from_openssh(pubtext.trim())
                .unwrap()
                .to_bytes()
                .unwrap();
            let got = randomart(&blob).unwrap();
            assert_eq!(got.lines().collect::<Vec<_>>(), want, "{t}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
