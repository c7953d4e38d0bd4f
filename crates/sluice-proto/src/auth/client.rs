//! Client side of RFC 4252 and keyboard-interactive (RFC 4256): requests
//! made on the runtime's behalf, answers turned into events. Which methods
//! and keys to try, in what order, and what to answer, is the runtime's choice.

use crate::core::Connection;
use crate::crypto::hostkey::Signer;
use crate::error::{Error, Phase, Violation};
use crate::event::Event;
use crate::msg::{self, AuthMethod, UserauthRequest};
use crate::wire::{MsgNum, WireError};

const CONNECTION_SERVICE: &str = "ssh-connection";

/// The method of the request in flight: message 60 means PK_OK after a
/// public key query, PASSWD_CHANGEREQ after a password, INFO_REQUEST
/// during keyboard-interactive, and nothing otherwise.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum InFlight {
    #[default]
    Other,
    PkQuery,
    /// A publickey request with its signature.
    PkSigned,
    Password,
    KbdInt,
    /// Keyboard-interactive with an INFO_REQUEST not answered yet.
    KbdIntPrompted,
}

impl Connection {
    pub(super) fn client_auth_message(&mut self, num: MsgNum, payload: &[u8]) -> Result<(), Error> {
        let bad = |e: WireError| Error::Protocol(Violation::Malformed(num, e));
        match num {
            MsgNum::SERVICE_ACCEPT => {
                msg::ServiceAccept::decode(payload).map_err(bad)?;
                self.events.push_back(Event::ServiceAccepted);
            }
            MsgNum::EXT_INFO => {
                let info = msg::ExtInfo::decode(payload).map_err(bad)?;
                for (name, value) in info.extensions {
                    if name == "server-sig-algs" {
                        let list = String::from_utf8_lossy(&value)
                            .split(',')
                            .map(str::to_owned)
                            .collect();
                        self.auth.server_sig_algs = Some(list);
                        self.events.push_back(Event::ServerSigAlgs);
                    } else if name == msg::HOSTBOUND_EXTENSION && value == b"0" {
                        self.auth.server_hostbound = true;
                    }
                }
            }
            MsgNum::USERAUTH_BANNER => {
                let b = msg::UserauthBanner::decode(payload).map_err(bad)?;
                self.events.push_back(Event::AuthBanner(b.message));
            }
            MsgNum::USERAUTH_FAILURE => {
                let f = msg::UserauthFailure::decode(payload).map_err(bad)?;
                self.auth.in_flight = InFlight::Other;
                self.early_open_failed_auth();
                self.events.push_back(Event::AuthFailure {
                    methods: f.methods,
                    partial: f.partial_success,
                });
            }
            MsgNum::USERAUTH_SUCCESS if !self.auth.authenticated => {
                self.auth.authenticated = true;
                self.auth.in_flight = InFlight::Other;
                self.start_delayed_compression();
                self.early_open_resend();
                let user = self.auth.user.clone().unwrap_or_default();
                self.events.push_back(Event::Authenticated { user });
            }
            MsgNum::USERAUTH_PK_OK if self.auth.in_flight == InFlight::PkQuery => {
                let ok = msg::UserauthPkOk::decode(payload).map_err(bad)?;
                self.auth.in_flight = InFlight::Other;
                self.events.push_back(Event::AuthPkOk {
                    algorithm: ok.algorithm,
                    key_blob: ok.key_blob,
                });
            }
            MsgNum::USERAUTH_PK_OK if self.auth.in_flight == InFlight::Password => {
                let req = msg::UserauthPasswdChangereq::decode(payload).map_err(bad)?;
                self.auth.in_flight = InFlight::Other;
                self.events
                    .push_back(Event::AuthPasswdChangeReq { prompt: req.prompt });
            }
            MsgNum::USERAUTH_PK_OK if self.auth.in_flight == InFlight::KbdInt => {
                let req = msg::UserauthInfoRequest::decode(payload).map_err(bad)?;
                if req.prompts.len() > super::MAX_KBDINT_PROMPTS {
                    return Err(Violation::TooManyPrompts(req.prompts.len()).into());
                }
                self.auth.in_flight = InFlight::KbdIntPrompted;
                self.events.push_back(Event::AuthInfoRequest {
                    name: req.name,
                    instruction: req.instruction,
                    prompts: req.prompts,
                });
            }
            _ => {
                return Err(Violation::UnexpectedMessage {
                    num,
                    state: Phase::ClientAuth,
                }
                .into())
            }
        }
        Ok(())
    }

    pub(crate) fn send_userauth(&mut self, user: &str, method: AuthMethod) {
        self.auth.in_flight = match &method {
            AuthMethod::PublicKey {
                signature: None, ..
            } => InFlight::PkQuery,
            AuthMethod::PublicKey { .. } => InFlight::PkSigned,
            AuthMethod::Password { .. } => InFlight::Password,
            AuthMethod::KeyboardInteractive { .. } => InFlight::KbdInt,
            _ => InFlight::Other,
        };
        self.auth.user = Some(user.to_owned());
        let req = UserauthRequest {
            user: user.to_owned(),
            service: CONNECTION_SERVICE.to_owned(),
            method,
        };
        self.queue_with(|p| req.encode(p));
        if self.auth.in_flight == InFlight::PkSigned {
            self.early_open_resend();
        }
    }

    /// Client: asks with method `none`, which returns the methods that can continue.
    pub fn auth_none(&mut self, user: &str) {
        self.send_userauth(user, AuthMethod::None);
    }

    /// Client: asks whether a key would be accepted, without signing (RFC 4252 7).
    pub fn auth_publickey_query(&mut self, user: &str, algorithm: &str, key_blob: &[u8]) {
        let m = AuthMethod::PublicKey {
            algorithm: algorithm.to_owned(),
            key_blob: key_blob.to_vec(),
            host_key: None,
            signature: None,
        };
        self.send_userauth(user, m);
    }

    /// Client: authenticates with a signature from `signer`.
    pub fn auth_publickey_sign(
        &mut self,
        user: &str,
        algorithm: &str,
        signer: &dyn Signer,
    ) -> Result<(), Error> {
        let sid = self
            .kex
            .session_id
            .clone()
            .ok_or(Error::InvalidState("no session yet"))?;
        let blob = signer.public_blob();
        // As ssh: the signed request names the server's host key when the
        // server offers it, so an agent can tell where its key is used.
        let host_key = self
            .kex
            .host_key
            .clone()
            .filter(|_| self.auth.server_hostbound);
        let data = msg::publickey_signed_data(
            &sid,
            user,
            CONNECTION_SERVICE,
            algorithm,
            &blob,
            host_key.as_deref(),
        );
        let sig = signer
            .sign(algorithm, &data)
            .map_err(|_| Error::InvalidState("signing failed"))?;
        let m = AuthMethod::PublicKey {
            algorithm: algorithm.to_owned(),
            key_blob: blob,
            host_key,
            signature: Some(sig),
        };
        self.send_userauth(user, m);
        Ok(())
    }

    /// Client: authenticates with a password.
    pub fn auth_password(&mut self, user: &str, password: &str) {
        self.send_userauth(
            user,
            AuthMethod::Password {
                password: password.to_owned(),
                new_password: None,
            },
        );
    }

    /// Client: starts keyboard-interactive (RFC 4256 3.1); the server's
    /// prompts come as [`Event::AuthInfoRequest`]. `submethods` is a hint,
    /// usually empty.
    pub fn auth_kbdint(&mut self, user: &str, submethods: &str) {
        self.send_userauth(
            user,
            AuthMethod::KeyboardInteractive {
                language: String::new(),
                submethods: submethods.to_owned(),
            },
        );
    }

    /// Client: answers the last [`Event::AuthInfoRequest`], one answer per
    /// prompt in order. The server then sends another request, success or
    /// failure.
    pub fn auth_info_response(&mut self, answers: Vec<String>) -> Result<(), Error> {
        if self.auth.in_flight != InFlight::KbdIntPrompted {
            return Err(Error::InvalidState(
                "no keyboard-interactive prompts to answer",
            ));
        }
        self.auth.in_flight = InFlight::KbdInt;
        let m = msg::UserauthInfoResponse { responses: answers };
        self.queue_with(|p| m.encode(p));
        Ok(())
    }
}
