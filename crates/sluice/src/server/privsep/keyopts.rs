//! A key's authorized_keys options as the monitor hands them to the
//! post-auth process in its `Start` message (wire.rs): the same fields
//! as `KeyOptions`, in the monitor protocol's field encoding, decoded
//! strictly.

use super::wire::{WireError, R, W};
use crate::keys::authorized_keys::KeyOptions;

/// authorized_keys options for the post-auth process.
pub(super) fn encode(k: &KeyOptions) -> Vec<u8> {
    let mut w = W(Vec::new());
    match &k.command {
        Some(c) => w.u8(1).bytes(c.as_bytes()),
        None => w.u8(0),
    };
    w.u32(k.environment.len() as u32);
    for (n, v) in &k.environment {
        w.bytes(n.as_bytes()).bytes(v.as_bytes());
    }
    for b in [
        k.no_pty,
        k.no_port_forwarding,
        k.no_agent_forwarding,
        k.no_x11_forwarding,
        k.no_user_rc,
    ] {
        w.u8(u8::from(b));
    }
    w.u32(k.permitopen.len() as u32);
    for p in &k.permitopen {
        w.bytes(p.as_bytes());
    }
    w.u32(k.permitlisten.len() as u32);
    for p in &k.permitlisten {
        w.bytes(p.as_bytes());
    }
    w.0
}

/// The options as [`encode`] wrote them, strictly.
pub(super) fn decode(b: &[u8]) -> Result<KeyOptions, WireError> {
    const MAX: usize = 64 * 1024;
    let mut r = R(b);
    let mut k = KeyOptions {
        command: if r.bool()? {
            Some(r.string(MAX)?)
        } else {
            None
        },
        ..KeyOptions::default()
    };
    for _ in 0..r.list_len()? {
        k.environment.push((r.string(MAX)?, r.string(MAX)?));
    }
    k.no_pty = r.bool()?;
    k.no_port_forwarding = r.bool()?;
    k.no_agent_forwarding = r.bool()?;
    k.no_x11_forwarding = r.bool()?;
    k.no_user_rc = r.bool()?;
    for _ in 0..r.list_len()? {
        k.permitopen.push(r.string(MAX)?);
    }
    for _ in 0..r.list_len()? {
        k.permitlisten.push(r.string(MAX)?);
    }
    r.finish()?;
    Ok(k)
}
