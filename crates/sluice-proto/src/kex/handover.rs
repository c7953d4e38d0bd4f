//! The key exchange state a handed-over connection needs (see
//! `crate::handover`): the session id, the algorithms and keys in force,
//! strict KEX and the exchange count, read out of a [`KexMachine`] between
//! exchanges and put back into a fresh one. Re-keys after the handover run
//! as after any exchange: not first, so no pseudo-algorithms, the same
//! session id in the derivations.

use super::KexMachine;
use crate::error::Error;
use crate::handover::KeyMaterial;
use crate::negotiate::Algorithms;
use crate::transport::compress::Method;

/// The key exchange's part of a transport state.
pub(crate) struct KexSnapshot {
    pub(crate) session_id: Vec<u8>,
    pub(crate) algorithms: Algorithms,
    pub(crate) exchanges: u32,
    pub(crate) strict: bool,
    /// Outgoing keys, then incoming.
    pub(crate) send_keys: KeyMaterial,
    pub(crate) recv_keys: KeyMaterial,
}

impl KexMachine {
    /// The state between exchanges; an error during one, before the first,
    /// or with immediate `zlib` compression, whose running deflate streams
    /// cannot be carried over.
    pub(crate) fn snapshot(&self) -> Result<KexSnapshot, Error> {
        if self.in_progress() || self.exchanged.is_some() || self.awaiting_host_key {
            return Err(Error::InvalidState("handover during a key exchange"));
        }
        if self.comp_send == Some(Method::Zlib) || self.comp_recv == Some(Method::Zlib) {
            return Err(Error::InvalidState(
                "zlib compression is active before authentication and cannot be handed over \
                 (offer zlib@openssh.com instead, as sshd does)",
            ));
        }
        let (Some(session_id), Some(algorithms), Some(send), Some(recv)) = (
            &self.session_id,
            &self.algs,
            &self.send_keys,
            &self.recv_keys,
        ) else {
            return Err(Error::InvalidState("handover before the first key exchange"));
        };
        Ok(KexSnapshot {
            session_id: session_id.clone(),
            algorithms: algorithms.clone(),
            exchanges: self.completed,
            strict: self.strict,
            send_keys: send.clone(),
            recv_keys: recv.clone(),
        })
    }

    /// A machine as it stood after the snapshot's last exchange, on the
    /// server (`server` selects which compression name is outgoing).
    pub(crate) fn restored(snap: KexSnapshot, server: bool) -> KexMachine {
        let a = &snap.algorithms;
        let (send, recv) = if server {
            (&a.comp_s2c, &a.comp_c2s)
        } else {
            (&a.comp_c2s, &a.comp_s2c)
        };
        KexMachine {
            session_id: Some(snap.session_id),
            // Our first KEXINIT carried the markers; only later ones follow.
            strict_offered: true,
            strict: snap.strict,
            completed: snap.exchanges,
            comp_send: Method::from_name(send),
            comp_recv: Method::from_name(recv),
            algs: Some(snap.algorithms),
            send_keys: Some(snap.send_keys),
            recv_keys: Some(snap.recv_keys),
            ..KexMachine::default()
        }
    }
}
