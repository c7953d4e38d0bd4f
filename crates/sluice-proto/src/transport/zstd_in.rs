//! The receiving end of `zstd@sluice.dev`: libzstd for compressed frames,
//! and raw-only frames parsed here (PROTOCOL.md).
//!
//! A sender at level 0 writes stored packets (`zstd.rs`): frames marked by
//! a 128 KiB window descriptor, holding raw blocks only, one whole block per
//! packet behind a 12-byte prefix. Such a packet's payload is taken where
//! it lies in the decrypted packet, with no copy, which is what makes
//! `Compression auto` cost nothing on links where it stays off. Any other
//! shape of a raw-only frame is still read here (copied), and everything
//! else goes to libzstd, whose frames are only ever handed over whole, so
//! each decoder sees complete frames. Both are valid zstd up to zstd's
//! 128 KiB block; stored packets longer than that (sent only to a peer that
//! lists `LONG_STORED`, as we do) are not, and only this reader takes them.

use crate::error::Violation;
use crate::transport::compress::Decompressor;
use crate::transport::zstd::{END_FRAME, LONG_MAX, RAW_FRAME_HEADER, WINDOW_LOG};
use std::ops::Range;
use zstd::stream::raw::{DParameter, Decoder, InBuffer, Operation, OutBuffer};

/// Three empty raw blocks: a stored packet's prefix inside an open frame.
const EMPTY_BLOCKS: [u8; 9] = [0; 9];

/// One incoming stream.
#[derive(Default)]
pub(crate) struct ZstdIn {
    z: Option<Decoder<'static>>,
    /// libzstd holds part of a frame.
    lib_open: bool,
    /// A raw-only frame is open (read here).
    raw_open: bool,
}

/// A raw block's header (RFC 8878 3.1.1.2.2): (last, size); any other
/// block type or a size over a stored packet's limit is refused. Raw-only
/// frames are read here, never by libzstd, so their blocks may be longer
/// than zstd's 128 KiB: we list [`crate::transport::zstd::LONG_STORED`].
fn raw_block(h: &[u8]) -> Result<(bool, usize), Violation> {
    let [a, b, c] = *h else {
        return Err(Violation::BadCompression);
    };
    let v = u32::from_le_bytes([a, b, c, 0]);
    let size = (v >> 3) as usize;
    if (v >> 1) & 3 != 0 || size > LONG_MAX {
        return Err(Violation::BadCompression);
    }
    Ok((v & 1 == 1, size))
}

impl ZstdIn {
    fn decoder(&mut self) -> Result<&mut Decoder<'static>, Violation> {
        if self.z.is_none() {
            let mut d = Decoder::new().map_err(|_| Violation::BadCompression)?;
            d.set_parameter(DParameter::WindowLogMax(WINDOW_LOG))
                .map_err(|_| Violation::BadCompression)?;
            self.z = Some(d);
        }
        self.z.as_mut().ok_or(Violation::BadCompression)
    }

    /// Feeds libzstd from `input` until it is used up or a frame ends;
    /// appends what comes out to `out` (never past `limit + 1` bytes of
    /// capacity it adds); returns the bytes taken.
    fn lib_run(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<usize, Violation> {
        let (used, open) = self.lib_feed(input, out, limit)?;
        self.lib_open = open;
        Ok(used)
    }

    /// [`ZstdIn::lib_run`]'s work: (bytes taken, a frame is still open).
    fn lib_feed(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<(usize, bool), Violation> {
        let cap = limit.saturating_add(1);
        let d = self.decoder()?;
        let mut inb = InBuffer::around(input);
        let mut want = input.len().saturating_mul(4).max(1024);
        loop {
            if out.capacity() <= out.len() || out.capacity() - out.len() < 64 {
                if out.len() >= cap {
                    return Err(Violation::BadCompression);
                }
                // Exact: the decoder writes up to the capacity, no further.
                out.reserve_exact(want.min(cap - out.len()));
                want = want.saturating_mul(2);
            }
            let before = (inb.pos(), out.len());
            let hint = {
                let mut o = OutBuffer::around_pos(out, before.1);
                d.run(&mut inb, &mut o)
            };
            let hint = hint.map_err(|_| Violation::BadCompression)?;
            if out.len() > limit {
                return Err(Violation::BadCompression);
            }
            if hint == 0 {
                // A frame ended (and is flushed): the next starts afresh.
                return Ok((inb.pos(), false));
            }
            if inb.pos() >= input.len() && out.len() < out.capacity() {
                return Ok((inb.pos(), true));
            }
            if (inb.pos(), out.len()) == before && out.len() < out.capacity() {
                return Err(Violation::BadCompression);
            }
        }
    }

    /// Reads raw-only frame content from `input` up to the end of the frame
    /// or of the input; returns the bytes taken. Blocks never cross packets
    /// (the sender writes whole ones).
    fn raw_run(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<usize, Violation> {
        let mut used = 0;
        while self.raw_open && used < input.len() {
            let rest = input.get(used..).unwrap_or_default();
            let (last, size) = raw_block(rest.get(..3).unwrap_or_default())?;
            let data = rest.get(3..3 + size).ok_or(Violation::BadCompression)?;
            if out.len() + size > limit {
                return Err(Violation::BadCompression);
            }
            out.extend_from_slice(data);
            used += 3 + size;
            self.raw_open = !last;
        }
        Ok(used)
    }

    /// Closes whichever frame is open with `END_FRAME`, as the peer's
    /// stored packet after a compressed frame does.
    fn end_frame(&mut self) -> Result<(), Violation> {
        if self.raw_open {
            self.raw_open = false;
            return Ok(());
        }
        if !self.lib_open {
            return Err(Violation::BadCompression);
        }
        let mut none = Vec::new();
        self.lib_run(&END_FRAME, &mut none, 0)?;
        if self.lib_open || !none.is_empty() {
            return Err(Violation::BadCompression);
        }
        Ok(())
    }
}

impl Decompressor for ZstdIn {
    /// Decodes into `out`, never past `limit + 1` bytes: a packet that
    /// would inflate further (a bomb) is refused after one packet's worth.
    fn decompress(
        &mut self,
        compressed: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<(), Violation> {
        out.clear();
        let mut rest = compressed;
        while !rest.is_empty() {
            let used = if self.raw_open {
                self.raw_run(rest, out, limit)?
            } else if !self.lib_open && rest.starts_with(&RAW_FRAME_HEADER) {
                self.raw_open = true;
                RAW_FRAME_HEADER.len()
            } else {
                self.lib_run(rest, out, limit)?
            };
            if used == 0 {
                return Err(Violation::BadCompression);
            }
            rest = rest.get(used..).unwrap_or_default();
        }
        Ok(())
    }

    /// The three prefixes a stored packet has: inside its frame, after a
    /// compressed frame, and at the stream's start.
    fn in_place(
        &mut self,
        compressed: &[u8],
        limit: usize,
    ) -> Result<Option<Range<usize>>, Violation> {
        const P: usize = 12;
        let (Some(prefix), Some(block)) = (compressed.get(..P - 3), compressed.get(P - 3..P))
        else {
            return Ok(None);
        };
        let Ok((false, size)) = raw_block(block) else {
            return Ok(None);
        };
        if size != compressed.len() - P || size > limit {
            return Ok(None);
        }
        let (head, tail) = prefix.split_at(3);
        let inside = self.raw_open && prefix == EMPTY_BLOCKS;
        let after_frame = head == END_FRAME && tail == RAW_FRAME_HEADER;
        let first = !self.raw_open
            && !self.lib_open
            && prefix.starts_with(&RAW_FRAME_HEADER)
            && prefix.get(6..) == Some(&[0u8; 3][..]);
        if after_frame {
            self.end_frame()?;
        } else if !inside && !first {
            return Ok(None);
        }
        self.raw_open = true;
        Ok(Some(P..compressed.len()))
    }
}
