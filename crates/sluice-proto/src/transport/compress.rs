//! Payload compression (RFC 4253 section 6.2): `zlib` from the first NEWKEYS,
//! `zlib@openssh.com` from user authentication on. One deflate stream per
//! direction lives for the whole connection, each packet ends with a partial
//! flush (OpenSSH: level 6, `Z_PARTIAL_FLUSH`; inflate with `Z_SYNC_FLUSH`).
//! This is the slot later deflate engines plug into.

use crate::error::Violation;
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// Compression methods by wire name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// No compression.
    None,
    /// `zlib`: active from NEWKEYS.
    Zlib,
    /// `zlib@openssh.com`: active once user authentication succeeded.
    ZlibDelayed,
}

impl Method {
    /// Parses a wire name.
    pub fn from_name(name: &str) -> Option<Method> {
        match name {
            "none" => Some(Method::None),
            "zlib" => Some(Method::Zlib),
            "zlib@openssh.com" => Some(Method::ZlibDelayed),
            _ => None,
        }
    }
}

/// The outgoing deflate stream.
pub(crate) struct Compressor {
    z: Compress,
    /// Raw and compressed byte counts, for the `-v` summary OpenSSH prints.
    pub(crate) raw: u64,
    pub(crate) compressed: u64,
}

impl Compressor {
    pub(crate) fn new() -> Self {
        Compressor {
            z: Compress::new(Compression::new(6), true),
            raw: 0,
            compressed: 0,
        }
    }

    /// Deflates `input` into `out` (cleared first), ending with a partial flush.
    pub(crate) fn compress(&mut self, input: &[u8], out: &mut Vec<u8>) {
        out.clear();
        out.reserve(input.len() + input.len() / 1000 + 64);
        let mut consumed = 0usize;
        loop {
            let before_in = self.z.total_in();
            let rest = input.get(consumed..).unwrap_or_default();
            // Deflate never fails on valid state; a failure leaves `out` short
            // and the peer will report the stream broken, which is all we can do.
            if self
                .z
                .compress_vec(rest, out, FlushCompress::Partial)
                .is_err()
            {
                break;
            }
            consumed += (self.z.total_in() - before_in) as usize;
            if consumed >= input.len() && out.len() < out.capacity() {
                break;
            }
            out.reserve(out.capacity().max(1024));
        }
        self.raw += input.len() as u64;
        self.compressed += out.len() as u64;
    }
}

/// The incoming inflate stream.
pub(crate) struct Decompressor {
    z: Decompress,
    pub(crate) raw: u64,
    pub(crate) compressed: u64,
}

impl Decompressor {
    pub(crate) fn new() -> Self {
        Decompressor {
            z: Decompress::new(true),
            raw: 0,
            compressed: 0,
        }
    }

    /// Inflates `input` into `out` (cleared first); more than `limit` bytes
    /// of output is an error, which bounds a decompression bomb to one packet.
    pub(crate) fn decompress(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<(), Violation> {
        out.clear();
        out.reserve((input.len() * 4).max(1024).min(limit + 1));
        let mut consumed = 0usize;
        loop {
            let before_in = self.z.total_in();
            let rest = input.get(consumed..).unwrap_or_default();
            let status = self
                .z
                .decompress_vec(rest, out, FlushDecompress::Sync)
                .map_err(|_| Violation::BadCompression)?;
            consumed += (self.z.total_in() - before_in) as usize;
            if out.len() > limit {
                return Err(Violation::BadCompression);
            }
            let done = consumed >= input.len() && out.len() < out.capacity();
            if done || status == Status::StreamEnd {
                break;
            }
            if status == Status::BufError && out.len() < out.capacity() {
                // No progress possible with room left: input exhausted.
                break;
            }
            out.reserve(out.capacity().max(1024).min(limit + 1));
        }
        self.raw += out.len() as u64;
        self.compressed += input.len() as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_round_trip_across_packets() {
        let mut c = Compressor::new();
        let mut d = Decompressor::new();
        let (mut z, mut back) = (Vec::new(), Vec::new());
        for i in 0..50u32 {
            let msg: Vec<u8> = (0..(i * 997) as usize).map(|j| (j % 7) as u8).collect();
            c.compress(&msg, &mut z);
            d.decompress(&z, &mut back, 1 << 20).unwrap();
            assert_eq!(back, msg);
        }
    }

    #[test]
    fn bomb_is_bounded() {
        let mut c = Compressor::new();
        let mut z = Vec::new();
        c.compress(&vec![0u8; 1 << 20], &mut z);
        let mut d = Decompressor::new();
        assert_eq!(
            d.decompress(&z, &mut Vec::new(), 1000),
            Err(Violation::BadCompression)
        );
        assert!(Decompressor::new()
            .decompress(b"garbage!", &mut Vec::new(), 1000)
            .is_err());
    }
}
