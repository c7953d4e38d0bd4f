//! The client's KEX guess (RFC 4253 7.1, `first_kex_packet_follows`): its
//! first KEX packet goes out with its KEXINIT, for its preferred method.
//! When the server's KEXINIT arrives, the client must know whether the
//! server took that packet or dropped it, and servers judge differently:
//!
//! - RFC 4253 (OpenSSH, sluiced, Dropbear, Go, libssh): the guess was right
//!   when both sides list the same method and host key algorithm first;
//!   otherwise the packet is ignored.
//! - asyncssh: right when the method chosen is the client's first (host key
//!   lists do not matter).
//! - paramiko: ignores the flag and always takes the packet as the real one,
//!   which only works when the method chosen is the one guessed.

use crate::core::Connection;
use crate::error::{Error, Violation};
use crate::msg::KexInit;
use crate::negotiate::{self, Algorithms};

/// How a server treats a client's guessed KEX packet.
enum GuessRule {
    Rfc,
    ChosenMethod,
    AlwaysTaken,
}

fn rule_for(peer_version: &str) -> GuessRule {
    if peer_version.starts_with("SSH-2.0-AsyncSSH_") {
        GuessRule::ChosenMethod
    } else if peer_version.starts_with("SSH-2.0-paramiko_") {
        GuessRule::AlwaysTaken
    } else {
        GuessRule::Rfc
    }
}

impl Connection {
    /// Client: true when the server uses the KEX packet we guessed, which
    /// then stands; false when there was no guess or the server drops it
    /// (a new first packet must follow for the method chosen).
    pub(super) fn guess_stands(
        &mut self,
        client: &KexInit,
        server: &KexInit,
        algs: &Algorithms,
    ) -> Result<bool, Error> {
        let Some(guessed) = self.kex.guessed.take() else {
            return Ok(false);
        };
        let chosen = algs.kex == guessed;
        let taken = match rule_for(self.peer_version.as_deref().unwrap_or_default()) {
            GuessRule::Rfc => !negotiate::guess_was_wrong(client, server),
            GuessRule::ChosenMethod => chosen,
            GuessRule::AlwaysTaken if chosen => true,
            GuessRule::AlwaysTaken => return Err(Violation::KexGuessNotIgnored.into()),
        };
        if !taken {
            self.kex.client = None;
        }
        self.kex.guess_outcome = Some(taken);
        Ok(taken)
    }

    /// Client: `Some(true)` when the server took the KEX packet guessed with
    /// our first KEXINIT (a round trip saved), `Some(false)` when it dropped
    /// it, `None` when no guess was sent.
    pub fn kex_guess_stood(&self) -> Option<bool> {
        self.kex.guess_outcome
    }
}
