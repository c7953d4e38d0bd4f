//! Writer for the SSH data types of RFC 4251 section 5, appending to a `Vec`.

/// Appends SSH data types to a caller-owned buffer.
#[derive(Debug)]
pub struct Writer<'a> {
    buf: &'a mut Vec<u8>,
}

impl<'a> Writer<'a> {
    /// A writer that appends to `buf`.
    pub fn new(buf: &'a mut Vec<u8>) -> Self {
        Writer { buf }
    }

    /// Raw bytes.
    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(b);
        self
    }

    /// `byte`.
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.buf.push(v);
        self
    }

    /// `boolean`.
    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.u8(u8::from(v))
    }

    /// `uint32`.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.bytes(&v.to_be_bytes())
    }

    /// `uint64`.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.bytes(&v.to_be_bytes())
    }

    /// `string`. Lengths above `u32::MAX` cannot occur: packets are bounded far below.
    pub fn string(&mut self, s: &[u8]) -> &mut Self {
        self.u32(s.len() as u32).bytes(s)
    }

    /// `string` holding UTF-8 text.
    pub fn utf8(&mut self, s: &str) -> &mut Self {
        self.string(s.as_bytes())
    }

    /// `name-list` from individual names.
    pub fn name_list<S: AsRef<str>>(&mut self, names: &[S]) -> &mut Self {
        let start = self.buf.len();
        self.u32(0);
        for (i, n) in names.iter().enumerate() {
            if i > 0 {
                self.buf.push(b',');
            }
            self.buf.extend_from_slice(n.as_ref().as_bytes());
        }
        let len = (self.buf.len() - start - 4) as u32;
        if let Some(slot) = self.buf.get_mut(start..start + 4) {
            slot.copy_from_slice(&len.to_be_bytes());
        }
        self
    }

    /// `mpint` from an unsigned big-endian magnitude: strips leading zeros and
    /// adds one zero byte when the top bit is set (RFC 4251).
    pub fn mpint_unsigned(&mut self, magnitude: &[u8]) -> &mut Self {
        let (pad, m) = mpint_parts(magnitude);
        self.u32((m.len() + usize::from(pad)) as u32);
        if pad {
            self.buf.push(0);
        }
        self.bytes(m)
    }

    /// A nested `string` whose contents are written by `f` (e.g. a key blob).
    pub fn nested(&mut self, f: impl FnOnce(&mut Writer<'_>)) -> &mut Self {
        let start = self.buf.len();
        self.u32(0);
        f(&mut Writer::new(self.buf));
        let len = (self.buf.len() - start - 4) as u32;
        if let Some(slot) = self.buf.get_mut(start..start + 4) {
            slot.copy_from_slice(&len.to_be_bytes());
        }
        self
    }
}

/// An unsigned magnitude's `mpint` body as (a zero byte goes first, the
/// magnitude without leading zeros) (RFC 4251 section 5).
pub(crate) fn mpint_parts(magnitude: &[u8]) -> (bool, &[u8]) {
    let start = magnitude
        .iter()
        .position(|&b| b != 0)
        .unwrap_or(magnitude.len());
    let m = magnitude.get(start..).unwrap_or_default();
    (m.first().is_some_and(|&b| b & 0x80 != 0), m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Reader;

    #[test]
    fn round_trips() {
        let mut v = Vec::new();
        Writer::new(&mut v)
            .string(b"xy")
            .name_list(&["a", "b"])
            .mpint_unsigned(&[0, 0x80, 1])
            .nested(|w| {
                w.u32(5);
            });
        let mut r = Reader::new(&v);
        assert_eq!(r.string().unwrap(), b"xy");
        assert_eq!(r.name_list().unwrap().as_str(), "a,b");
        assert_eq!(r.mpint().unwrap(), &[0, 0x80, 1]);
        assert_eq!(r.string().unwrap(), &[0, 0, 0, 5]);
        r.finish().unwrap();
    }

    #[test]
    fn mpint_zero_is_empty() {
        let mut v = Vec::new();
        Writer::new(&mut v).mpint_unsigned(&[0, 0]);
        assert_eq!(v, [0, 0, 0, 0]);
    }
}
