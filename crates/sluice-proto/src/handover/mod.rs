//! Handing a server connection's transport over to another process after
//! user authentication, as OpenSSH's privilege separation does: the
//! sandboxed pre-auth engine stops at the handover point, exports a
//! [`TransportState`] (version lines, session id, algorithms, the keys in
//! force and each direction's packet position), and a fresh engine in the
//! user's process imports it with [`crate::Connection::import_server`] and
//! carries on; the peer notices nothing.
//!
//! The state is plain data; its byte encoding is in [`codec`]. It carries
//! no authority: it comes from a process that parsed everything the peer
//! sent, so the user it names is only checked against the user the monitor
//! vouches for, and nothing from the runtime's configuration (host keys,
//! limits, windows) travels in it: the importer brings its own. The engine
//! side (the handover point, export and import) is in [`engine`].

pub mod codec;
mod engine;

pub use codec::DecodeError;

use crate::crypto::cipher::{self, DirectionKeys};
use crate::crypto::{Opener, Sealer};
use crate::error::Error;
use crate::negotiate::Algorithms;
use std::fmt;
use zeroize::Zeroizing;

/// The keys of one direction, as RFC 4253 7.2 derived them for the
/// cipher and MAC in force. Zeroized on drop; `Debug` shows no secret.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyMaterial {
    /// Cipher wire name.
    pub cipher: String,
    /// MAC wire name (empty for AEAD ciphers).
    pub mac: String,
    /// Encryption key.
    pub key: Zeroizing<Vec<u8>>,
    /// Initial IV.
    pub iv: Zeroizing<Vec<u8>>,
    /// Integrity key (empty for AEAD ciphers).
    pub mac_key: Zeroizing<Vec<u8>>,
}

impl KeyMaterial {
    /// The borrowed form the cipher constructors take.
    pub fn keys(&self) -> DirectionKeys<'_> {
        DirectionKeys {
            cipher: &self.cipher,
            mac: &self.mac,
            key: &self.key,
            iv: &self.iv,
            mac_key: &self.mac_key,
        }
    }

    /// A sealer with these keys.
    pub(crate) fn sealer(&self) -> Result<Box<dyn Sealer>, Error> {
        cipher::sealer(self.keys()).map_err(|_| Error::InvalidState("cipher rejected its keys"))
    }

    /// An opener with these keys.
    pub(crate) fn opener(&self) -> Result<Box<dyn Opener>, Error> {
        cipher::opener(self.keys()).map_err(|_| Error::InvalidState("cipher rejected its keys"))
    }
}

impl fmt::Debug for KeyMaterial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyMaterial")
            .field("cipher", &self.cipher)
            .field("mac", &self.mac)
            .finish_non_exhaustive()
    }
}

/// One direction of the transport at the handover point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectionState {
    /// The keys in force.
    pub keys: KeyMaterial,
    /// Sequence number of the next packet (RFC 4253 6.4).
    pub seq: u32,
    /// Packets under these keys so far (the AES-GCM invocation counter).
    pub index: u64,
    /// Bytes encrypted under these keys so far (the AES-CTR counter offset).
    pub offset: u64,
    /// Bytes on the wire under these keys, for `RekeyLimit`.
    pub bytes: u64,
}

/// What a server connection needs to continue in another process after
/// authentication. Only [`crate::Connection::export_transport`] and
/// [`TransportState::decode`] make one, so its contents are consistent
/// (names known, key lengths right for them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportState {
    /// The client's identification line (V_C of later exchange hashes).
    pub(crate) client_version: String,
    /// Ours, as sent (V_S).
    pub(crate) server_version: String,
    /// The first exchange hash.
    pub(crate) session_id: Vec<u8>,
    /// The algorithms of the last exchange (names, strict KEX, ext-info).
    pub(crate) algorithms: Algorithms,
    /// Key exchanges completed (at least one).
    pub(crate) exchanges: u32,
    /// Strict KEX was negotiated in the first exchange.
    pub(crate) strict: bool,
    /// Time since the last exchange completed, in milliseconds (RekeyLimit's time).
    pub(crate) since_kex_ms: u64,
    /// Server to client.
    pub(crate) send: DirectionState,
    /// Client to server.
    pub(crate) recv: DirectionState,
    /// The user the exporting engine saw authenticated: a claim only.
    pub(crate) user: Option<String>,
}

impl TransportState {
    /// The session identifier; the monitor, which signed the first
    /// exchange hash, may compare it with what it signed.
    pub fn session_id(&self) -> &[u8] {
        &self.session_id
    }

    /// The user the exporting engine claims was authenticated.
    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// The client's identification line.
    pub fn client_version(&self) -> &str {
        &self.client_version
    }

    /// Our identification line as the client saw it.
    pub fn server_version(&self) -> &str {
        &self.server_version
    }

    /// The algorithms in force.
    pub fn algorithms(&self) -> &Algorithms {
        &self.algorithms
    }

    /// The outgoing (server to client) direction.
    pub fn send(&self) -> &DirectionState {
        &self.send
    }

    /// The incoming (client to server) direction.
    pub fn recv(&self) -> &DirectionState {
        &self.recv
    }
}
