//! Bounded reader for the SSH data types of RFC 4251 section 5.
//!
//! Every read checks the remaining length first, so a malformed packet from a
//! peer produces [`WireError`] and never a panic. [`Reader::finish`] rejects
//! trailing bytes, which keeps message parsing strict.

use super::WireError;

/// Reads SSH data types from a borrowed byte slice.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader over `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> &'a [u8] {
        self.buf
    }

    /// True when everything has been read.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Fails unless every byte was consumed.
    pub fn finish(&self) -> Result<(), WireError> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(WireError::TrailingData)
        }
    }

    /// The next `n` raw bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if n > self.buf.len() {
            return Err(WireError::Truncated);
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    /// A fixed-size array of raw bytes.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let b = self.bytes(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(b);
        Ok(out)
    }

    /// `byte`.
    pub fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.array::<1>()?[0])
    }

    /// `boolean`: any non-zero value is true (RFC 4251).
    pub fn bool(&mut self) -> Result<bool, WireError> {
        Ok(self.u8()? != 0)
    }

    /// `uint32`.
    pub fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    /// `uint64`.
    pub fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    /// `string` as raw bytes.
    pub fn string(&mut self) -> Result<&'a [u8], WireError> {
        let n = self.u32()? as usize;
        self.bytes(n)
    }

    /// `string` that must be UTF-8 (user names, descriptions, commands).
    pub fn utf8(&mut self) -> Result<&'a str, WireError> {
        std::str::from_utf8(self.string()?).map_err(|_| WireError::BadUtf8)
    }

    /// `name-list`: comma-separated US-ASCII names, none empty.
    pub fn name_list(&mut self) -> Result<NameList<'a>, WireError> {
        let s = self.string()?;
        NameList::parse(s)
    }

    /// `mpint` as its big-endian two's complement magnitude bytes (leading
    /// zero byte kept as on the wire). Negative values are rejected.
    pub fn mpint(&mut self) -> Result<&'a [u8], WireError> {
        let s = self.string()?;
        if let Some(&first) = s.first() {
            if first & 0x80 != 0 {
                return Err(WireError::NegativeMpint);
            }
        }
        Ok(s)
    }

    /// `mpint` with leading zero bytes stripped: the unsigned magnitude.
    pub fn mpint_unsigned(&mut self) -> Result<&'a [u8], WireError> {
        let s = self.mpint()?;
        let start = s.iter().position(|&b| b != 0).unwrap_or(s.len());
        Ok(s.get(start..).unwrap_or_default())
    }
}

/// A validated `name-list` borrowed from the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NameList<'a>(&'a str);

impl<'a> NameList<'a> {
    /// Validates a name-list: printable US-ASCII without spaces, no empty names.
    pub fn parse(raw: &'a [u8]) -> Result<Self, WireError> {
        if raw.iter().any(|&b| !(0x21..=0x7e).contains(&b)) {
            return Err(WireError::BadNameList);
        }
        let s = std::str::from_utf8(raw).map_err(|_| WireError::BadNameList)?;
        if !s.is_empty() && s.split(',').any(str::is_empty) {
            return Err(WireError::BadNameList);
        }
        Ok(NameList(s))
    }

    /// The names in order.
    pub fn iter(&self) -> impl Iterator<Item = &'a str> {
        let s = self.0;
        s.split(',').filter(|n| !n.is_empty())
    }

    /// True if `name` is in the list.
    pub fn contains(&self, name: &str) -> bool {
        self.iter().any(|n| n == name)
    }

    /// The raw comma-separated text.
    pub fn as_str(&self) -> &'a str {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_type_and_rejects_truncation() {
        let buf = [0, 0, 0, 3, b'a', b'b', b'c', 1, 0, 0, 0, 0, 0, 0, 0, 7];
        let mut r = Reader::new(&buf);
        assert_eq!(r.string().unwrap(), b"abc");
        assert!(r.bool().unwrap());
        assert_eq!(r.u64().unwrap(), 7);
        r.finish().unwrap();
        assert_eq!(
            Reader::new(&[0, 0, 0, 9, 1]).string(),
            Err(WireError::Truncated)
        );
        assert_eq!(Reader::new(&[0xff; 4]).string(), Err(WireError::Truncated));
    }

    #[test]
    fn name_lists_are_strict() {
        assert!(NameList::parse(b"a,b").unwrap().contains("b"));
        assert_eq!(NameList::parse(b"").unwrap().iter().count(), 0);
        assert!(NameList::parse(b"a,,b").is_err());
        assert!(NameList::parse(b"a b").is_err());
        assert!(NameList::parse(b"a,").is_err());
    }

    #[test]
    fn mpint_sign_is_checked() {
        assert!(Reader::new(&[0, 0, 0, 1, 0x80]).mpint().is_err());
        assert_eq!(
            Reader::new(&[0, 0, 0, 2, 0, 0x80])
                .mpint_unsigned()
                .unwrap(),
            &[0x80]
        );
    }
}
