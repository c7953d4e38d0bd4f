//! The user authentication protocol (RFC 4252), client and server halves,
//! and the `ssh-userauth` service request (RFC 4253 section 10) that leads to it.

mod client;
mod server;

/// Most keyboard-interactive prompts accepted in one INFO_REQUEST (as ssh).
pub const MAX_KBDINT_PROMPTS: usize = 256;
/// Most prompts the server sends, and answers it accepts, per round (as sshd).
pub const MAX_KBDINT_ANSWERS: usize = 100;

use crate::core::{Connection, Role};
use crate::error::{Error, Violation};
use crate::wire::MsgNum;

/// Authentication state of one connection.
#[derive(Default)]
pub(crate) struct AuthState {
    /// Authentication succeeded; the connection protocol may run.
    pub(crate) authenticated: bool,
    /// The authenticated user.
    pub(crate) user: Option<String>,
    /// Server: the service request was accepted.
    service_accepted: bool,
    /// Client: signature algorithms the server accepts (RFC 8308 server-sig-algs).
    pub(crate) server_sig_algs: Option<Vec<String>>,
    /// Client: the method of the request in flight, which says what a
    /// message 60 is (PK_OK, PASSWD_CHANGEREQ or INFO_REQUEST).
    in_flight: client::InFlight,
    /// Server: the request the runtime must decide.
    pending: Option<server::Pending>,
    /// Server: failed attempts so far.
    failures: u32,
    /// Server: prompts in the INFO_REQUEST the client must answer.
    info_prompts: Option<usize>,
    /// Server: the banner went out already.
    banner_sent: bool,
}

impl Connection {
    /// After the first key exchange the client asks for the user-auth service.
    pub(crate) fn on_initial_kex_done(&mut self) {
        if self.role == Role::Client {
            self.queue_with(|p| {
                crate::msg::ServiceRequest {
                    name: "ssh-userauth".into(),
                }
                .encode(p)
            });
        }
    }

    /// Handles messages 5-7 and 50-79.
    pub(crate) fn handle_auth(&mut self, num: MsgNum, payload: &[u8]) -> Result<(), Error> {
        if self.kex.session_id.is_none() {
            return Err(Violation::UnexpectedMessage(num, "before key exchange").into());
        }
        match self.role {
            Role::Client => self.client_auth_message(num, payload),
            Role::Server => self.server_auth_message(num, payload),
        }
    }

    /// The authenticated user, once authentication succeeded.
    pub fn authenticated_user(&self) -> Option<&str> {
        self.auth.user.as_deref()
    }

    /// Client: the server's `server-sig-algs`, if it sent them.
    pub fn server_sig_algs(&self) -> Option<&[String]> {
        self.auth.server_sig_algs.as_deref()
    }
}
