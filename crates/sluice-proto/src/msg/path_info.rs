//! sluice's `path-info-v00@sluice.dev` (PROTOCOL.md, "Path figures"): a
//! client asks a sluiced server, after authentication, for what the server
//! measures of this connection (TCP_INFO, its socket buffers and the kernel's
//! caps on them, its CPU time), so that the client can say what limited a
//! transfer. The request carries no data; the reply's data is a list of
//! named unsigned numbers, `string name || uint64 value` to the end of the
//! message.
//!
//! This is the codec for that list only. Which names exist and what they
//! mean is the runtime's (and PROTOCOL.md's); a receiver keeps names it does
//! not know, so either end may add figures without a new version.

use crate::wire::{Reader, WireError, Writer};

/// The global request's name.
pub const PATH_INFO_REQUEST: &str = "path-info-v00@sluice.dev";

/// The most figures one reply may carry: a bound on what a peer can make us
/// hold; sluiced sends about 40.
pub const MAX_PATH_FIGURES: usize = 128;

/// The longest figure name accepted.
pub const MAX_FIGURE_NAME: usize = 64;

/// The figures of a `path-info-v00@sluice.dev` reply, in the sender's order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PathFigures {
    /// (name, value) pairs.
    pub items: Vec<(String, u64)>,
}

impl PathFigures {
    /// Decodes a reply's data: pairs to the end, each name 1 to
    /// [`MAX_FIGURE_NAME`] printable ASCII bytes, at most
    /// [`MAX_PATH_FIGURES`] pairs, no name twice.
    pub fn decode(data: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(data);
        let mut items: Vec<(String, u64)> = Vec::new();
        while !r.remaining().is_empty() {
            if items.len() == MAX_PATH_FIGURES {
                return Err(WireError::BadValue);
            }
            let name = r.string()?;
            let printable = name.iter().all(|b| b.is_ascii_graphic());
            if name.is_empty() || name.len() > MAX_FIGURE_NAME || !printable {
                return Err(WireError::BadValue);
            }
            let name = String::from_utf8_lossy(name).into_owned();
            if items.iter().any(|(n, _)| *n == name) {
                return Err(WireError::BadValue);
            }
            let value = r.u64()?;
            items.push((name, value));
        }
        Ok(PathFigures { items })
    }

    /// The reply's data.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.items.iter().map(|(n, _)| n.len() + 12).sum());
        let mut w = Writer::new(&mut out);
        for (name, value) in &self.items {
            w.utf8(name).u64(*value);
        }
        out
    }

    /// The value of `name`, if the sender gave it.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.items.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }

    /// Adds a figure (the sender's side).
    pub fn push(&mut self, name: &str, value: u64) {
        self.items.push((name.to_owned(), value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_is_strict() {
        let mut f = PathFigures::default();
        f.push("rtt-us", 100_000);
        f.push("so-rcvbuf", 212_992);
        let data = f.encode();
        assert_eq!(PathFigures::decode(&data), Ok(f.clone()));
        assert_eq!(f.get("so-rcvbuf"), Some(212_992));
        assert_eq!(f.get("nope"), None);
        // Empty: no figures (a server with nothing to say).
        assert_eq!(PathFigures::decode(&[]), Ok(PathFigures::default()));
        // A value cut short, an empty name, a name twice, a control byte.
        assert!(PathFigures::decode(&data[..data.len() - 1]).is_err());
        let mut bad = Vec::new();
        Writer::new(&mut bad).utf8("").u64(1);
        assert!(PathFigures::decode(&bad).is_err());
        let mut dup = PathFigures::default();
        dup.push("a", 1);
        dup.push("a", 2);
        assert!(PathFigures::decode(&dup.encode()).is_err());
        let mut ctl = PathFigures::default();
        ctl.push("a\nb", 1);
        assert!(PathFigures::decode(&ctl.encode()).is_err());
        // Too many.
        let mut many = PathFigures::default();
        for i in 0..=MAX_PATH_FIGURES {
            many.push(&format!("f{i}"), i as u64);
        }
        assert!(PathFigures::decode(&many.encode()).is_err());
    }
}
