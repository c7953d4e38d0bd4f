//! OpenSSH's host key rotation (OpenSSH PROTOCOL 2.5): after
//! authentication the server sends the global request
//! `hostkeys-00@openssh.com` (no reply wanted) listing all its host keys;
//! a client that wants to learn some of them asks `hostkeys-prove-00@openssh.com`
//! (reply wanted) with those keys, and the server's REQUEST_SUCCESS carries
//! one signature per key, in order, each over
//! `string "hostkeys-prove-00@openssh.com" || string session_id || string key`.
//!
//! The request data and the reply data are the same shape: strings to the
//! end of the message. These are the codecs for that data (the part after
//! the GLOBAL_REQUEST's name and want-reply flag, or after REQUEST_SUCCESS's
//! number); which keys to ask about, signing and verifying are the
//! runtime's.

use crate::wire::{Reader, WireError, Writer};

/// The server's announcement of its host keys.
pub const HOSTKEYS: &str = "hostkeys-00@openssh.com";
/// The client's request for proofs of possession.
pub const HOSTKEYS_PROVE: &str = "hostkeys-prove-00@openssh.com";

/// The most keys (or signatures) one message may list. sshd holds a
/// handful of host keys; the bound keeps a hostile peer from making the
/// other side verify or sign without end within one packet.
pub const MAX_HOST_KEYS: usize = 64;

/// A list of strings filling the data to its end: the key blobs of
/// `hostkeys-00` and `hostkeys-prove-00`, or the signature blobs of the
/// prove reply.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HostKeyList {
    /// Key blobs (or signature blobs), in order.
    pub items: Vec<Vec<u8>>,
}

impl HostKeyList {
    /// Decodes request or reply data: one or more strings up to the end,
    /// none empty, at most [`MAX_HOST_KEYS`].
    pub fn decode(data: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(data);
        let mut items = Vec::new();
        while !r.remaining().is_empty() {
            if items.len() == MAX_HOST_KEYS {
                return Err(WireError::BadValue);
            }
            let s = r.string()?;
            if s.is_empty() {
                return Err(WireError::BadValue);
            }
            items.push(s.to_vec());
        }
        if items.is_empty() {
            return Err(WireError::BadValue);
        }
        Ok(HostKeyList { items })
    }

    /// The data: each item as a string.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.items.iter().map(|i| i.len() + 4).sum());
        let mut w = Writer::new(&mut out);
        for i in &self.items {
            w.string(i);
        }
        out
    }
}

/// What a proof signs for `key_blob` (OpenSSH PROTOCOL 2.5).
pub fn prove_signed_data(session_id: &[u8], key_blob: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HOSTKEYS_PROVE.len() + session_id.len() + key_blob.len() + 12);
    Writer::new(&mut out)
        .utf8(HOSTKEYS_PROVE)
        .string(session_id)
        .string(key_blob);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_round_trip_and_decode_strictly() {
        let l = HostKeyList {
            items: vec![b"key one".to_vec(), b"two".to_vec()],
        };
        assert_eq!(HostKeyList::decode(&l.encode()), Ok(l.clone()));
        let mut cut = l.encode();
        cut.pop();
        assert!(HostKeyList::decode(&cut).is_err());
        assert!(HostKeyList::decode(&[]).is_err());
        assert!(HostKeyList::decode(&[0, 0, 0, 0]).is_err());
        let many = HostKeyList {
            items: vec![b"k".to_vec(); MAX_HOST_KEYS + 1],
        };
        assert!(HostKeyList::decode(&many.encode()).is_err());
    }

    #[test]
    fn signed_data_is_name_session_id_and_key() {
        let d = prove_signed_data(b"sid", b"kb");
        let mut r = Reader::new(&d);
        assert_eq!(r.utf8(), Ok(HOSTKEYS_PROVE));
        assert_eq!(r.string(), Ok(&b"sid"[..]));
        assert_eq!(r.string(), Ok(&b"kb"[..]));
        assert!(r.finish().is_ok());
    }
}
