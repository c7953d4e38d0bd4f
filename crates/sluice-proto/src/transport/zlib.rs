//! The zlib engine (RFC 4253 6.2 `zlib`, OpenSSH PROTOCOL 1.3
//! `zlib@openssh.com`) through flate2: one zlib stream (RFC 1950 header,
//! RFC 1951 deflate) per direction and key epoch, as OpenSSH makes it:
//! level 6, each packet ended with a partial flush (`Z_PARTIAL_FLUSH`),
//! inflated with a sync flush. Sequential: each packet depends on the
//! stream state the previous one left. When this engine runs is the
//! transport's business ([`super::compress`]).

use crate::error::Violation;
use crate::transport::compress::{
    Activation, CompressError, CompressionEngine, Compressor, Decompressor, SequentialCompressor,
};
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// zlib under either name.
#[derive(Debug, Clone, Copy)]
pub struct ZlibEngine {
    activation: Activation,
}

impl ZlibEngine {
    /// `zlib`: from the first NEWKEYS.
    pub fn immediate() -> Self {
        ZlibEngine {
            activation: Activation::Immediate,
        }
    }

    /// `zlib@openssh.com`: from user authentication on.
    pub fn delayed() -> Self {
        ZlibEngine {
            activation: Activation::Delayed,
        }
    }
}

impl CompressionEngine for ZlibEngine {
    fn name(&self) -> &str {
        name(self.activation)
    }

    fn activation(&self) -> Activation {
        self.activation
    }

    fn compressor(&self) -> Compressor {
        Compressor::Sequential(Box::new(Deflate {
            z: Compress::new(Compression::new(6), true),
        }))
    }

    fn decompressor(&self) -> Box<dyn Decompressor> {
        inflater()
    }
}

/// The wire name of zlib started `activation`: `zlib` or `zlib@openssh.com`
/// (shared with the parallel engine, `super::pzlib`).
pub(crate) fn name(activation: Activation) -> &'static str {
    match activation {
        Activation::Immediate => "zlib",
        Activation::Delayed => "zlib@openssh.com",
    }
}

/// An incoming zlib stream (also the parallel engine's, `super::pzlib`:
/// the receiver's side of the contract is the same).
pub(crate) fn inflater() -> Box<dyn Decompressor> {
    Box::new(Inflate {
        z: Decompress::new(true),
    })
}

/// The outgoing deflate stream.
struct Deflate {
    z: Compress,
}

impl SequentialCompressor for Deflate {
    fn compress(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), CompressError> {
        out.reserve(input.len() + input.len() / 1000 + 64);
        let mut consumed = 0usize;
        loop {
            let before_in = self.z.total_in();
            let rest = input.get(consumed..).unwrap_or_default();
            self.z
                .compress_vec(rest, out, FlushCompress::Partial)
                .map_err(|_| CompressError)?;
            consumed += (self.z.total_in() - before_in) as usize;
            // Room left in `out` means the flush is complete.
            if consumed >= input.len() && out.len() < out.capacity() {
                return Ok(());
            }
            out.reserve(out.capacity().max(1024));
        }
    }
}

/// The incoming inflate stream.
struct Inflate {
    z: Decompress,
}

impl Decompressor for Inflate {
    /// Inflates into `out`, growing it in steps but never past `limit + 1`
    /// bytes, so a decompression bomb costs at most one packet's worth.
    fn decompress(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<(), Violation> {
        out.clear();
        let cap = limit.saturating_add(1);
        let mut size = input.len().saturating_mul(4).max(1024).min(cap);
        let mut consumed = 0usize;
        loop {
            let filled = out.len();
            out.resize(size, 0);
            let (before_in, before_out) = (self.z.total_in(), self.z.total_out());
            let rest = input.get(consumed..).unwrap_or_default();
            let status = match out.get_mut(filled..) {
                Some(room) => self.z.decompress(rest, room, FlushDecompress::Sync),
                None => return Err(Violation::BadCompression),
            };
            let produced = (self.z.total_out() - before_out) as usize;
            out.truncate(filled + produced);
            let status = status.map_err(|_| Violation::BadCompression)?;
            consumed += (self.z.total_in() - before_in) as usize;
            if out.len() > limit {
                return Err(Violation::BadCompression);
            }
            let room_left = out.len() < size;
            if (consumed >= input.len() && room_left) || status == Status::StreamEnd {
                return Ok(());
            }
            if status == Status::BufError && room_left {
                // No progress possible with room left: input exhausted.
                return Ok(());
            }
            size = size.saturating_add(size.max(1024)).min(cap);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (Box<dyn SequentialCompressor>, Box<dyn Decompressor>) {
        let e = ZlibEngine::delayed();
        let Compressor::Sequential(c) = e.compressor() else {
            unreachable!("zlib is sequential")
        };
        (c, e.decompressor())
    }

    #[test]
    fn streams_round_trip_across_packets() {
        let (mut c, mut d) = pair();
        let (mut z, mut back) = (Vec::new(), Vec::new());
        for i in 0..50u32 {
            let msg: Vec<u8> = (0..(i * 997) as usize).map(|j| (j % 7) as u8).collect();
            z.clear();
            c.compress(&msg, &mut z).unwrap();
            d.decompress(&z, &mut back, 1 << 20).unwrap();
            assert_eq!(back, msg);
        }
    }

    #[test]
    fn bomb_is_bounded() {
        let (mut c, mut d) = pair();
        let mut z = Vec::new();
        c.compress(&vec![0u8; 1 << 20], &mut z).unwrap();
        let mut out = Vec::new();
        assert_eq!(
            d.decompress(&z, &mut out, 1000),
            Err(Violation::BadCompression)
        );
        // Never more than one byte past the limit was written.
        assert!(out.len() <= 1001 && out.capacity() < 4096, "{}", out.len());
        assert!(ZlibEngine::immediate()
            .decompressor()
            .decompress(b"garbage!", &mut Vec::new(), 1000)
            .is_err());
    }

    #[test]
    fn exactly_the_limit_inflates() {
        let (mut c, mut d) = pair();
        let mut z = Vec::new();
        c.compress(&vec![b'a'; 5000], &mut z).unwrap();
        let mut out = Vec::new();
        d.decompress(&z, &mut out, 5000).unwrap();
        assert_eq!(out.len(), 5000);
    }

    /// The bytes on the wire are those of the engine before it became a slot
    /// (known answer recorded from that code): same level, flushes, stream.
    #[test]
    fn wire_bytes_unchanged() {
        let (mut c, _) = pair();
        let mut all = Vec::new();
        let mut z = Vec::new();
        let mut raw = 0usize;
        let mut x = 0x9e3779b97f4a7c15u64;
        for i in 0..40usize {
            let n = [1usize, 17, 300, 5000, 70_000, 255 * 1024][i % 6] + i;
            let p: Vec<u8> = (0..n)
                .map(|j| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    if (j / 64 + i) % 3 == 0 {
                        x as u8
                    } else {
                        b"sluice bulk text "[j % 17]
                    }
                })
                .collect();
            z.clear();
            c.compress(&p, &mut z).unwrap();
            raw += p.len();
            all.extend_from_slice(&(z.len() as u32).to_be_bytes());
            all.extend_from_slice(&z);
        }
        let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, &all);
        let hex: String = d.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!((all.len(), raw), (707_608, 2_024_726));
        assert_eq!(
            hex,
            "caa884115083a59f38081d211ef3784854510c1cfe2ee1a083baa6d08a1bfbc6"
        );
    }
}
