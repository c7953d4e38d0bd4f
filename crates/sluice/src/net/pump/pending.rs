//! Received channel bytes a sink has not taken yet. The peer's window
//! bounds how much can wait here: the engine is told bytes are consumed
//! only once a sink took them, so a stalled sink closes the window.

/// Bytes waiting for a sink, consumed from the front without moving the
/// rest (a plain `Vec::drain` per write would be quadratic).
#[derive(Debug, Default)]
pub(crate) struct Pending {
    buf: Vec<u8>,
    pos: usize,
}

impl Pending {
    /// Nothing waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// The bytes still waiting, oldest first.
    pub(crate) fn bytes(&self) -> &[u8] {
        self.buf.get(self.pos..).unwrap_or_default()
    }

    /// Queues `data` behind what waits.
    pub(crate) fn extend(&mut self, data: &[u8]) {
        if self.is_empty() {
            self.buf.clear();
            self.pos = 0;
        }
        self.buf.extend_from_slice(data);
    }

    /// `n` bytes from the front were taken. The buffer is compacted only
    /// once more than 1 MiB was taken and that is over half of it, so a
    /// partial packet moves rarely.
    pub(crate) fn advance(&mut self, n: usize) {
        self.pos += n;
        if self.is_empty() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > (1 << 20) && self.pos * 2 > self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
    }

    /// Drops everything; returns how many bytes that was.
    pub(crate) fn clear(&mut self) -> usize {
        let n = self.buf.len() - self.pos.min(self.buf.len());
        self.buf.clear();
        self.pos = 0;
        n
    }

    /// Bytes waiting.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.bytes().len()
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
}
