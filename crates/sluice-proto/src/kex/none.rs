//! The NONE cipher and NONE MAC, as HPN-SSH offers them: after user
//! authentication, for bulk transfers only, by a re-key whose KEXINIT names
//! `none`. The client puts `none` first (its order decides, RFC 4253 7.1);
//! a server that allows it lists `none` last; a server that does not,
//! omits it, and the negotiation falls back to the next cipher: the session
//! simply stays encrypted. See PROTOCOL.md.
//!
//! The engine enforces what does not depend on policy: never before
//! authentication, never once a channel asked for a pty or a shell (an
//! interactive session must stay private), and the NONE MAC only together
//! with the NONE cipher. A pty or shell is refused not only while NONE is
//! in force but also during an exchange our KEXINIT offered `none` in and
//! whose outcome is not known yet (a server-started re-key: the client's
//! KEXINIT may still pick it); and should an exchange ever end with NONE
//! while a pty or shell was granted, the connection ends there. Whether to allow it at all is the runtime's
//! configuration (NoneEnabled, NoneMacEnabled: off by default).

use crate::core::Connection;
use crate::error::Error;

/// What the runtime allowed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NoneState {
    /// `none` may be offered as cipher.
    pub(crate) cipher: bool,
    /// `none` may be offered as MAC as well.
    pub(crate) mac: bool,
    /// A channel asked for a pty or a shell: NONE is off for good.
    pub(crate) interactive: bool,
    /// A pty or shell was granted (not refused): no exchange may end
    /// with the NONE cipher.
    pub(crate) granted_interactive: bool,
    /// Our KEXINIT of the exchange in progress lists `none`.
    pub(crate) offered: bool,
}

impl Connection {
    /// Allows the NONE cipher (and with `mac`, the NONE MAC) in the key
    /// exchanges from now on. Client: call [`Connection::switch_to_none`]
    /// to ask for it. Server: the client's next re-key may then select it.
    pub fn allow_none(&mut self, mac: bool) -> Result<(), Error> {
        if !self.auth.authenticated {
            return Err(Error::InvalidState("NONE cipher before authentication"));
        }
        if self.none.interactive {
            return Err(Error::InvalidState("NONE cipher in an interactive session"));
        }
        self.none.cipher = true;
        self.none.mac = mac;
        Ok(())
    }

    /// Client: allows NONE and re-keys with `none` first. The session stays
    /// encrypted when the server declines; [`Connection::none_active`] tells.
    pub fn switch_to_none(&mut self, mac: bool) -> Result<(), Error> {
        self.allow_none(mac)?;
        self.rekey();
        Ok(())
    }

    /// Marks the connection interactive (a pty or shell was requested):
    /// NONE is withdrawn from later exchanges. Returns true when the
    /// request must be refused (and the runtime may re-key back to
    /// encryption): the NONE cipher is in use or negotiated, or an exchange
    /// in progress offered it and the peer's choice is not known yet.
    pub fn mark_interactive(&mut self) -> bool {
        self.none.interactive = true;
        self.none.cipher = false;
        self.none.mac = false;
        let undecided = self.none.offered && self.kex.in_progress() && !self.kex.negotiated();
        let refuse = self.none_active() || undecided;
        if !refuse {
            self.none.granted_interactive = true;
        }
        refuse
    }

    /// True when the last key exchange chose the NONE MAC either way: the
    /// peer's messages, channel requests included, are no longer
    /// integrity-protected.
    pub fn none_mac_active(&self) -> bool {
        self.kex
            .algorithms()
            .is_some_and(|a| a.mac_c2s == "none" || a.mac_s2c == "none")
    }

    /// True when the last key exchange chose the NONE cipher either way.
    pub fn none_active(&self) -> bool {
        self.kex
            .algorithms()
            .is_some_and(|a| a.cipher_c2s == "none" || a.cipher_s2c == "none")
    }

    /// The cipher and MAC lists for our next KEXINIT, with `none` where allowed.
    pub(crate) fn kexinit_lists(&self) -> (Vec<String>, Vec<String>) {
        let mut ciphers = self.config.ciphers.clone();
        let mut macs = self.config.macs.clone();
        if self.none.cipher && !self.none.interactive {
            let client = self.role == crate::core::Role::Client;
            let add = |list: &mut Vec<String>| {
                list.retain(|a| a != "none");
                if client {
                    list.insert(0, "none".into());
                } else {
                    list.push("none".into());
                }
            };
            add(&mut ciphers);
            if self.none.mac {
                add(&mut macs);
            }
        }
        (ciphers, macs)
    }
}
