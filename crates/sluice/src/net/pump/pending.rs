//! Received channel bytes a sink has not taken yet. The peer's window
//! bounds how much can wait here: the engine is told bytes are consumed
//! only once a sink took them, so a stalled sink closes the window.

use std::collections::VecDeque;

/// Bytes waiting for a sink: a ring, so taking from the front moves
/// nothing (a `Vec` compacted now and then moved a copy's worth of bytes
/// per byte written on a busy download: 5% of the client's cycles).
#[derive(Debug, Default)]
pub(crate) struct Pending {
    buf: VecDeque<u8>,
}

impl Pending {
    /// Nothing waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The oldest waiting bytes that lie in one piece (all of them unless
    /// the ring wraps; [`Pending::slices`] gives both pieces).
    pub(crate) fn bytes(&self) -> &[u8] {
        self.buf.as_slices().0
    }

    /// All waiting bytes, oldest first, as the ring's two pieces (one
    /// `writev` takes both).
    pub(crate) fn slices(&self) -> [&[u8]; 2] {
        let (a, b) = self.buf.as_slices();
        [a, b]
    }

    /// Queues `data` behind what waits.
    pub(crate) fn extend(&mut self, data: &[u8]) {
        self.buf.extend(data);
    }

    /// `n` bytes from the front were taken.
    pub(crate) fn advance(&mut self, n: usize) {
        self.buf.drain(..n.min(self.buf.len()));
    }

    /// Drops everything; returns how many bytes that was.
    pub(crate) fn clear(&mut self) -> usize {
        let n = self.buf.len();
        self.buf.clear();
        n
    }

    /// Bytes waiting.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_across_partial_takes() {
        let mut p = Pending::default();
        p.extend(b"hello ");
        p.advance(2);
        p.extend(b"world");
        assert_eq!(p.bytes(), b"llo world");
        assert_eq!(p.clear(), 9);
        assert!(p.is_empty());
    }

    #[test]
    fn a_wrapped_ring_gives_both_pieces_in_order() {
        let mut p = Pending::default();
        p.extend(&[1; 100]);
        p.advance(90);
        // Fill past the ring's end so it wraps.
        let more: Vec<u8> = (0..=255).cycle().take(5000).collect();
        p.extend(&more);
        let [a, b] = p.slices();
        let mut all = a.to_vec();
        all.extend_from_slice(b);
        assert_eq!(all.len(), 5010);
        assert_eq!(&all[..10], &[1; 10]);
        assert_eq!(&all[10..], &more[..]);
        assert_eq!(p.bytes(), a);
        p.advance(5010);
        assert!(p.is_empty());
        p.advance(7);
        assert_eq!(p.len(), 0);
    }
}
