//! The user authentication protocol (RFC 4252), client and server halves,
//! and the `ssh-userauth` service request (RFC 4253 section 10) that leads to it.

mod client;
pub(crate) mod early_open;
mod server;

/// Most keyboard-interactive prompts accepted in one INFO_REQUEST (as ssh).
pub const MAX_KBDINT_PROMPTS: usize = 256;
/// Most prompts the server sends, and answers it accepts, per round (as sshd).
pub const MAX_KBDINT_ANSWERS: usize = 100;

use crate::core::{Connection, Role};
use crate::error::{Error, Phase, Violation};
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
    /// Client: the server offered `publickey-hostbound@openssh.com`
    /// (OpenSSH PROTOCOL 2.5): signed publickey requests name its host key.
    pub(crate) server_hostbound: bool,
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
    /// Server: the user the first request named (without a `:style`);
    /// later requests must name the same (sshd refuses a change of user).
    first_user: Option<String>,
    /// Client: the session's CHANNEL_OPEN sent ahead of success.
    pub(crate) early_open: Option<early_open::EarlyOpen>,
    /// Server: non-authentication messages answered UNIMPLEMENTED so far.
    pub(crate) early_unimplemented: u32,
    /// Server: `stripe-join-v00@sluice.dev` requests go to the runtime
    /// (`enable_stripe_join`); otherwise refused as any unknown method.
    pub(crate) stripe_join: bool,
}

impl AuthState {
    /// Server: a request waits for the runtime's decision (not for the
    /// client's keyboard-interactive answers).
    pub(crate) fn decision_pending(&self) -> bool {
        self.pending.is_some() && self.info_prompts.is_none()
    }

    /// Server: the state after `user` authenticated (a handover import).
    pub(crate) fn authenticated_as(user: String) -> AuthState {
        AuthState {
            authenticated: true,
            user: Some(user),
            service_accepted: true,
            banner_sent: true,
            ..AuthState::default()
        }
    }

    /// Client: a signed publickey request awaits its answer.
    pub(crate) fn signed_request_in_flight(&self) -> bool {
        self.in_flight == client::InFlight::PkSigned
    }
}

impl Connection {
    /// Client: right behind our first NEWKEYS, asks for the user-auth
    /// service and lets the runtime send its first request at once, without
    /// waiting for SERVICE_ACCEPT: servers handle messages in order, so the
    /// request is read after the service was accepted.
    pub(crate) fn request_userauth_service(&mut self) {
        self.queue_with(|p| {
            crate::msg::ServiceRequest {
                name: "ssh-userauth".into(),
            }
            .encode(p)
        });
        self.events.push_back(crate::event::Event::AuthReady);
    }

    /// Handles messages 5-7 and 50-79.
    pub(crate) fn handle_auth(&mut self, num: MsgNum, payload: &[u8]) -> Result<(), Error> {
        if self.kex.session_id.is_none() {
            return Err(Violation::UnexpectedMessage {
                num,
                state: Phase::BeforeKeyExchange,
            }
            .into());
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
