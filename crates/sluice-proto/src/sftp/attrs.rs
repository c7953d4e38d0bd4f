//! ATTRS (draft-ietf-secsh-filexfer-02 5): size, owner, permissions,
//! times and extended pairs, each present when its flag is set.

use crate::wire::{Reader, WireError, Writer};

const SIZE: u32 = 0x01;
const UIDGID: u32 = 0x02;
const PERMISSIONS: u32 = 0x04;
const ACMODTIME: u32 = 0x08;
const EXTENDED: u32 = 0x8000_0000;

/// At most this many extended pairs are accepted in one ATTRS.
const MAX_EXTENDED: u32 = 1024;

/// File attributes; `None` fields are absent on the wire.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attrs {
    /// Size in bytes.
    pub size: Option<u64>,
    /// Owner and group ids.
    pub uid_gid: Option<(u32, u32)>,
    /// Mode bits (type and permissions, as st_mode).
    pub permissions: Option<u32>,
    /// Access and modification times (seconds since the epoch).
    pub atime_mtime: Option<(u32, u32)>,
    /// Extended (type, data) pairs.
    pub extended: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Attrs {
    /// Reads ATTRS. Flag bits of later versions are ignored, as OpenSSH's
    /// sftp-server and sftp do (their fields, if any, end up as bytes
    /// after the request, which are ignored too).
    pub fn decode(r: &mut Reader<'_>) -> Result<Attrs, WireError> {
        let flags = r.u32()?;
        let mut a = Attrs::default();
        if flags & SIZE != 0 {
            a.size = Some(r.u64()?);
        }
        if flags & UIDGID != 0 {
            a.uid_gid = Some((r.u32()?, r.u32()?));
        }
        if flags & PERMISSIONS != 0 {
            a.permissions = Some(r.u32()?);
        }
        if flags & ACMODTIME != 0 {
            a.atime_mtime = Some((r.u32()?, r.u32()?));
        }
        if flags & EXTENDED != 0 {
            let n = r.u32()?;
            if n > MAX_EXTENDED {
                return Err(WireError::BadValue);
            }
            for _ in 0..n {
                let t = r.string()?.to_vec();
                let d = r.string()?.to_vec();
                a.extended.push((t, d));
            }
        }
        Ok(a)
    }

    /// Writes ATTRS.
    pub fn encode(&self, w: &mut Writer<'_>) {
        let mut flags = 0;
        flags |= if self.size.is_some() { SIZE } else { 0 };
        flags |= if self.uid_gid.is_some() { UIDGID } else { 0 };
        flags |= if self.permissions.is_some() {
            PERMISSIONS
        } else {
            0
        };
        flags |= if self.atime_mtime.is_some() {
            ACMODTIME
        } else {
            0
        };
        flags |= if self.extended.is_empty() {
            0
        } else {
            EXTENDED
        };
        w.u32(flags);
        if let Some(s) = self.size {
            w.u64(s);
        }
        if let Some((u, g)) = self.uid_gid {
            w.u32(u).u32(g);
        }
        if let Some(p) = self.permissions {
            w.u32(p);
        }
        if let Some((a, m)) = self.atime_mtime {
            w.u32(a).u32(m);
        }
        if !self.extended.is_empty() {
            w.u32(self.extended.len() as u32);
            for (t, d) in &self.extended {
                w.string(t).string(d);
            }
        }
    }
}
