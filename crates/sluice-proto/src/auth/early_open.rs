//! Client: the session's CHANNEL_OPEN sent right behind a signed publickey
//! request, before its answer (RFC 4252 5.1: messages sent after the request
//! that succeeds go to the service). If that request fails, a server that
//! reads in order (OpenSSH, sluiced) answers the open with UNIMPLEMENTED; the
//! open then goes out again behind the next signed request, or after success.

use crate::core::Connection;
use crate::error::{Error, FloodKind, Violation};
use crate::event::ChannelId;
use crate::wire::{MsgNum, Writer};
use crate::Role;

/// The early CHANNEL_OPEN and what became of it.
pub(crate) struct EarlyOpen {
    pub(crate) id: ChannelId,
    payload: Vec<u8>,
    /// Its sequence number once sealed (the server's UNIMPLEMENTED names it).
    seq: Option<u32>,
    /// The server read it before authentication: it must go out again.
    refused: bool,
}

impl Connection {
    /// Client: opens the session channel behind the signed publickey request
    /// in flight, before its answer. Only toward servers known to pass such
    /// messages on after success (OpenSSH, sluiced): others may disconnect.
    /// The answer comes as [`crate::Event::ChannelOpened`] after
    /// [`crate::Event::Authenticated`], whichever request succeeds.
    pub fn open_session_early(&mut self) -> Result<ChannelId, Error> {
        if self.auth.authenticated {
            return self.open_session();
        }
        if !self.early_open_possible() {
            return Err(Error::InvalidState(
                "early open without a signed request in flight",
            ));
        }
        let (id, payload) = self.new_channel_open("session", &[])?;
        self.queue(payload.clone());
        self.auth.early_open = Some(EarlyOpen {
            id,
            payload,
            seq: None,
            refused: false,
        });
        Ok(id)
    }

    /// Client: a signed publickey request awaits its answer and nothing
    /// forbids an open behind it now. The server decompresses from right
    /// after the request that succeeds, we compress only once we have read
    /// its success: with a delayed engine the open goes in the engine's
    /// before-authentication form (zstd@sluice.dev has one, PROTOCOL.md),
    /// and with one that has none (zlib@openssh.com) not at all.
    pub fn early_open_possible(&self) -> bool {
        !self.auth.authenticated
            && self.auth.signed_request_in_flight()
            && self.auth.early_open.is_none()
            && (!self.send.compression.waits_for_auth()
                || self.send.compression.before_auth_form(&[]).is_some())
    }

    /// The bytes that go on the wire for payload `p`: for the early open
    /// while our delayed compression waits for authentication, the
    /// engine's before-authentication form; None: `p` as it is.
    pub(crate) fn early_open_wire_form(&self, p: &[u8]) -> Option<Vec<u8>> {
        let e = self.auth.early_open.as_ref()?;
        if self.role != Role::Client || e.payload != p {
            return None;
        }
        self.send.compression.before_auth_form(p)
    }

    /// Notes the early open's sequence number when it is sealed.
    pub(crate) fn early_open_sent(&mut self, payload: &[u8]) {
        let seq = self.send.seq.wrapping_sub(1);
        if let Some(e) = self.auth.early_open.as_mut() {
            if e.seq.is_none() && !e.refused && e.payload == payload {
                e.seq = Some(seq);
            }
        }
    }

    /// The request the early open followed failed: the server read the
    /// open before authentication and refused it.
    pub(crate) fn early_open_failed_auth(&mut self) {
        if let Some(e) = self.auth.early_open.as_mut() {
            e.refused = true;
        }
    }

    /// A new signed request (pipelined again) or success (sent now): a
    /// refused early open goes out again.
    pub(crate) fn early_open_resend(&mut self) {
        let Some(e) = self.auth.early_open.as_mut() else {
            return;
        };
        if !e.refused {
            return;
        }
        e.refused = false;
        e.seq = None;
        let p = e.payload.clone();
        self.queue(p);
        if self.auth.authenticated {
            // Sent after success: the server answers it like any open.
            self.auth.early_open = None;
        }
    }

    /// UNIMPLEMENTED for packet `seq`: if it names the early open, the
    /// server did not take it; send it again once authenticated.
    pub(crate) fn on_unimplemented(&mut self, seq: u32) {
        let Some(e) = self.auth.early_open.as_mut() else {
            return;
        };
        if e.seq == Some(seq) && !e.refused {
            e.refused = true;
            if self.auth.authenticated {
                self.early_open_resend();
            }
        }
    }

    /// The open was answered (confirmation or failure): nothing to track.
    pub(crate) fn early_open_answered(&mut self, recipient: u32) {
        if self
            .auth
            .early_open
            .as_ref()
            .is_some_and(|e| e.id.0 == recipient)
        {
            self.auth.early_open = None;
        }
    }
}

/// The sequence number an UNIMPLEMENTED message names.
pub(crate) fn unimplemented_seq(payload: &[u8]) -> Option<u32> {
    match payload {
        [n, a, b, c, d, ..] if *n == MsgNum::UNIMPLEMENTED.0 => {
            Some(u32::from_be_bytes([*a, *b, *c, *d]))
        }
        _ => None,
    }
}

impl Connection {
    /// Server, after the first key exchange: a connection-protocol message
    /// before authentication (a client pipelining its channel open behind a
    /// request that failed) gets UNIMPLEMENTED, as sshd answers; a few dozen
    /// are plenty for any honest client.
    pub(crate) fn unimplemented_before_auth(&mut self, seq: u32) -> Result<bool, Error> {
        if self.role != Role::Server || self.auth.authenticated || !self.kex.initial_done() {
            return Ok(false);
        }
        self.auth.early_unimplemented += 1;
        if self.auth.early_unimplemented > crate::core::MAX_UNIMPLEMENTED_BEFORE_AUTH {
            return Err(Violation::Flood(FloodKind::ConnectionBeforeAuth).into());
        }
        let mut p = Vec::new();
        Writer::new(&mut p).u8(MsgNum::UNIMPLEMENTED.0).u32(seq);
        self.queue(p);
        Ok(true)
    }
}
