//! Cutting a byte stream into SFTP packets as it arrives, for either end:
//! each byte is copied once, into its packet's body, however the channel
//! chunks the stream.

use super::{frame_within, FrameError};

/// The packet being read from a stream.
#[derive(Debug, Default)]
pub struct Deframer {
    /// The length field, as far as it came.
    head: [u8; 4],
    head_len: usize,
    /// The body being filled, `want` bytes once whole.
    body: Vec<u8>,
    want: usize,
}

impl Deframer {
    /// Takes `data`, handing each whole packet's body (type byte onwards)
    /// to `packet` in order. A length field over `max`, or too short for a
    /// type and an id, is an error; the stream cannot be followed after it.
    pub fn feed(
        &mut self,
        mut data: &[u8],
        max: u32,
        packet: &mut dyn FnMut(Vec<u8>),
    ) -> Result<(), FrameError> {
        while !data.is_empty() {
            if self.head_len < 4 {
                let take = (4 - self.head_len).min(data.len());
                let (now, rest) = data.split_at(take);
                if let Some(h) = self.head.get_mut(self.head_len..self.head_len + take) {
                    h.copy_from_slice(now);
                }
                self.head_len += take;
                data = rest;
                if self.head_len < 4 {
                    break;
                }
                // The length field alone: checked, never whole yet.
                frame_within(&self.head, max)?;
                self.want = u32::from_be_bytes(self.head) as usize;
                self.body = Vec::with_capacity(self.want);
            }
            let take = (self.want - self.body.len()).min(data.len());
            let (now, rest) = data.split_at(take);
            self.body.extend_from_slice(now);
            data = rest;
            if self.body.len() == self.want {
                self.head_len = 0;
                packet(std::mem::take(&mut self.body));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_come_whole_however_the_stream_is_cut() {
        let mut stream = Vec::new();
        let bodies: Vec<Vec<u8>> = (0..20u8)
            .map(|i| vec![i; 5 + usize::from(i) * 37])
            .collect();
        for b in &bodies {
            stream.extend_from_slice(&(b.len() as u32).to_be_bytes());
            stream.extend_from_slice(b);
        }
        for chunk in [1, 2, 3, 7, 100, stream.len()] {
            let mut d = Deframer::default();
            let mut got = Vec::new();
            for c in stream.chunks(chunk) {
                d.feed(c, 1 << 20, &mut |b| got.push(b)).unwrap();
            }
            assert_eq!(got, bodies, "chunks of {chunk}");
        }
    }

    #[test]
    fn bad_lengths_are_errors() {
        let mut d = Deframer::default();
        assert_eq!(
            d.feed(&[0, 0, 1, 0, 9], 255, &mut |_| {}),
            Err(FrameError::TooLong(256))
        );
        let mut d = Deframer::default();
        assert_eq!(d.feed(&[0, 0], 255, &mut |_| {}), Ok(()));
        assert_eq!(
            d.feed(&[0, 1], 255, &mut |_| {}),
            Err(FrameError::TooShort(1))
        );
    }
}
