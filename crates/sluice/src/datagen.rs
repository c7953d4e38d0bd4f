//! Test data for `sluice demo` and the benchmark: a fast deterministic
//! pseudo-random stream (AES-128-CTR keystream, several GB/s with AES-NI)
//! and a SHA-256 sink, both usable as remote commands through the hidden
//! `sluice demo-helper` subcommand so each end can check the other's hash.

use aws_lc_rs::cipher::{EncryptingKey, EncryptionContext, UnboundCipherKey, AES_128};
use aws_lc_rs::digest::{Context, SHA256};
use aws_lc_rs::iv::FixedLength;
use std::io::{self, Read, Write};

/// Chunk size for generation and hashing.
const CHUNK: usize = 1 << 20;

/// Deterministic pseudo-random bytes from a seed.
pub struct Generator {
    key: EncryptingKey,
    block: u128,
    compressible: bool,
}

impl Generator {
    /// A generator for `seed`; `compressible` yields text-like data that
    /// deflate shrinks about 4x, for compression runs.
    pub fn new(seed: u64, compressible: bool) -> io::Result<Self> {
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&seed.to_be_bytes());
        let key = UnboundCipherKey::new(&AES_128, &k)
            .and_then(EncryptingKey::ctr)
            .map_err(|_| io::Error::other("AES key setup failed"))?;
        Ok(Generator {
            key,
            block: 0,
            compressible,
        })
    }

    /// Fills `buf` with the next bytes of the stream.
    pub fn fill(&mut self, buf: &mut [u8]) -> io::Result<()> {
        buf.fill(0);
        let iv = FixedLength::from(self.block.to_be_bytes());
        self.key
            .less_safe_encrypt(buf, EncryptionContext::Iv128(iv))
            .map_err(|_| io::Error::other("AES-CTR failed"))?;
        self.block = self.block.wrapping_add(buf.len().div_ceil(16) as u128);
        if self.compressible {
            // Map to a small alphabet with runs: roughly 4:1 under zlib level 6.
            for (i, b) in buf.iter_mut().enumerate() {
                *b = if i % 8 < 5 {
                    b"abcd efgh\n"[(*b % 10) as usize]
                } else {
                    b'.'
                };
            }
        }
        Ok(())
    }
}

/// Writes `n` bytes of the stream to `out`; returns their SHA-256 in hex.
pub fn generate(seed: u64, compressible: bool, n: u64, out: &mut dyn Write) -> io::Result<String> {
    let mut g = Generator::new(seed, compressible)?;
    let mut buf = vec![0u8; CHUNK];
    let mut ctx = Context::new(&SHA256);
    let mut left = n;
    while left > 0 {
        let take = (left as usize).min(CHUNK);
        let chunk = &mut buf[..take];
        g.fill(chunk)?;
        ctx.update(chunk);
        out.write_all(chunk)?;
        left -= take as u64;
    }
    out.flush()?;
    Ok(hex(ctx.finish().as_ref()))
}

/// Reads `input` to its end; returns (bytes, SHA-256 hex).
pub fn hash_stream(input: &mut dyn Read) -> io::Result<(u64, String)> {
    let mut buf = vec![0u8; CHUNK];
    let mut ctx = Context::new(&SHA256);
    let mut total = 0u64;
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        ctx.update(&buf[..n]);
        total += n as u64;
    }
    Ok((total, hex(ctx.finish().as_ref())))
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `sluice demo-helper source SEED N [text]` writes the stream to stdout and
/// its hash to stderr; `sluice demo-helper sink` hashes stdin and prints
/// `bytes hash` on stdout. Returns the process exit code.
pub fn helper_main(args: &[String]) -> i32 {
    let run = || -> io::Result<()> {
        match args.first().map(String::as_str) {
            Some("source") => {
                let seed = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
                let n = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0);
                let text = args.get(3).is_some_and(|s| s == "text");
                let h = generate(seed, text, n, &mut io::stdout().lock())?;
                crate::errln!("{h}");
                Ok(())
            }
            Some("sink") => {
                let (n, h) = hash_stream(&mut io::stdin().lock())?;
                crate::outln!("{n} {h}");
                Ok(())
            }
            _ => Err(io::Error::other(
                "usage: sluice demo-helper source SEED BYTES [text] | sink",
            )),
        }
    };
    match run() {
        Ok(()) => 0,
        Err(e) => {
            crate::errln!("demo-helper: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_is_deterministic_and_hash_matches() {
        let mut a = Vec::new();
        let h = generate(7, false, 3 * CHUNK as u64 + 5, &mut a).unwrap();
        let (n, h2) = hash_stream(&mut a.as_slice()).unwrap();
        assert_eq!((n, &h), (a.len() as u64, &h2));
        let mut b = Vec::new();
        generate(7, false, 100, &mut b).unwrap();
        assert_eq!(b, a[..100]);
        let mut t = Vec::new();
        generate(7, true, 1000, &mut t).unwrap();
        assert!(t.iter().all(|c| b"abcdefgh .\n".contains(c)));
    }
}
