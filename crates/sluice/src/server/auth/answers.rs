//! Where an authentication verdict goes: the engine (`Connection`) when
//! one process serves the connection, or the privilege-separation
//! monitor's record for its child (privsep/mauth/recorder.rs).

use sluice_proto::msg::{DisconnectReason, Prompt};
use sluice_proto::Connection;

/// Where verdicts go: the engine itself (one process), or the
/// privilege-separation monitor's record of what to tell its child
/// (server/privsep/), which answers the engine in the child.
pub trait Answers {
    /// The pending request succeeds.
    fn auth_accept(&mut self);
    /// The pending request fails.
    fn auth_reject(&mut self);
    /// The pending request met one step of AuthenticationMethods; the
    /// methods that can continue.
    fn auth_partial(&mut self, methods: Vec<String>);
    /// Keyboard-interactive prompts for the pending request.
    fn auth_info_request(
        &mut self,
        name: &str,
        instruction: &str,
        prompts: Vec<Prompt>,
    ) -> Result<(), sluice_proto::Error>;
    /// The connection is over (MaxAuthTries reached).
    fn is_closed(&self) -> bool;
    /// Ends the connection.
    fn disconnect(&mut self, reason: DisconnectReason, description: &str);
}

impl Answers for Connection {
    fn auth_accept(&mut self) {
        Connection::auth_accept(self);
    }
    fn auth_reject(&mut self) {
        Connection::auth_reject(self);
    }
    fn auth_partial(&mut self, methods: Vec<String>) {
        Connection::auth_partial(self, methods);
    }
    fn auth_info_request(
        &mut self,
        name: &str,
        instruction: &str,
        prompts: Vec<Prompt>,
    ) -> Result<(), sluice_proto::Error> {
        Connection::auth_info_request(self, name, instruction, prompts)
    }
    fn is_closed(&self) -> bool {
        Connection::is_closed(self)
    }
    fn disconnect(&mut self, reason: DisconnectReason, description: &str) {
        Connection::disconnect(self, reason, description);
    }
}
