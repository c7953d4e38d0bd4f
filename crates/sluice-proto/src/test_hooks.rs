//! Test-only hooks into the engine, compiled with the `test-hooks` feature
//! or under `cfg(fuzzing)` and never part of the runtime's API:
//!
//! - making this end misbehave: overrun the peer's window, address a
//!   channel that does not exist (bad-input tests);
//! - sealing a raw payload with this end's current keys, bypassing every
//!   state check (fuzzing: arbitrary messages that still open cleanly,
//!   compressed by our deflater or handed raw to the peer's inflater);
//! - IGNORE/DEBUG noise before outgoing packets, as Go's x/crypto/ssh
//!   handshake tests inject, sealed by the sending path itself so it is
//!   valid on the wire (RFC 4253 11.2 and 11.3: a peer must skip both).
//!
//! Without the feature, `Connection::noise_before_packet` is an empty
//! inline function, so the data path carries no test code.

#[cfg(any(feature = "test-hooks", fuzzing))]
mod on {
    use crate::core::Connection;
    use crate::event::ChannelId;
    use crate::msg::{Debug, Ignore};

    impl Connection {
        /// Adds `n` bytes to our view of the peer's window, letting this
        /// end overrun it.
        pub fn force_send_window(&mut self, id: ChannelId, n: u32) {
            if let Some(ch) = self.channels.get_mut(id) {
                ch.send_window = ch.send_window.saturating_add(n);
            }
        }

        /// Addresses our packets for `id` to another remote channel number.
        pub fn force_remote_channel(&mut self, id: ChannelId, remote: u32) {
            if let Some(ch) = self.channels.get_mut(id) {
                ch.remote = remote;
            }
        }

        /// Frames and seals `payload` as the next packet in `out`, with this
        /// end's current keys and sequence number. Nothing checks or records
        /// what the payload says. With `compress` false it also bypasses
        /// compression, so with compression on the peer inflates exactly
        /// these bytes.
        pub fn seal_raw(&mut self, payload: &[u8], compress: bool, out: &mut Vec<u8>) {
            let saved = (!compress).then(|| std::mem::take(&mut self.send.compression));
            self.send.send(payload, out, self.rng.as_mut());
            if let Some(compression) = saved {
                self.send.compression = compression;
            }
        }

        /// From now on, send an IGNORE or DEBUG packet (random length and
        /// contents from the connection's Rng) before every packet the peer
        /// must accept one in front of.
        pub fn set_noise(&mut self, on: bool) {
            self.noise = on;
        }

        /// Appends one noise packet to `out` if noise is on and allowed here.
        pub(crate) fn noise_before_packet(&mut self, out: &mut Vec<u8>) {
            // During the first key exchange a strict-KEX peer accepts nothing
            // but KEX messages until it has our NEWKEYS (OpenSSH PROTOCOL 1.10).
            if !self.noise || !(self.kex.initial_done() || self.kex.newkeys_out()) {
                return;
            }
            let mut pick = [0u8; 1];
            self.rng.fill(&mut pick);
            let [pick] = pick;
            let mut data = vec![0u8; usize::from(pick % 48)];
            self.rng.fill(&mut data);
            let mut p = Vec::new();
            if pick & 0x80 == 0 {
                Ignore { data }.encode(&mut p);
            } else {
                Debug {
                    // Shown to nobody: the test's event lists stay as they were.
                    always_display: false,
                    message: data.iter().map(|b| char::from(b'a' + b % 26)).collect(),
                    language: String::new(),
                }
                .encode(&mut p);
            }
            self.send.send(&p, out, self.rng.as_mut());
        }
    }
}

#[cfg(not(any(feature = "test-hooks", fuzzing)))]
impl crate::core::Connection {
    /// No noise without the `test-hooks` feature.
    #[inline(always)]
    pub(crate) fn noise_before_packet(&mut self, _out: &mut Vec<u8>) {}
}
