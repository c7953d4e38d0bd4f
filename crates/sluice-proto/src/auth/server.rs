//! Server side of RFC 4252. Signatures are checked here; whether a key or
//! password is authorised for the user is asked of the runtime through
//! [`Event::AuthRequest`], which answers with `auth_accept`, `auth_pk_ok` or
//! `auth_reject`, for keyboard-interactive after `auth_info_request` rounds,
//! or `auth_partial` when the method was one step of several the runtime
//! requires (sshd's AuthenticationMethods). `MaxAuthTries` is enforced here.

use crate::core::Connection;
use crate::crypto::hostkey;
use crate::error::{Error, Phase, Violation};
use crate::event::{AuthMethodRequest, Event};
use crate::msg::{self, AuthMethod, DisconnectReason};
use crate::stripe::codec::JoinRequest;
use crate::wire::{MsgNum, WireError};

/// A request waiting for the runtime's decision.
pub(super) struct Pending {
    user: String,
    /// For a join, `None` stands in: the request is in the event.
    method: AuthMethodRequest,
    /// A secondary connection's `stripe-join-v00@sluice.dev`.
    join: bool,
}

impl Connection {
    pub(super) fn server_auth_message(&mut self, num: MsgNum, payload: &[u8]) -> Result<(), Error> {
        let bad = |e: WireError| Error::Protocol(Violation::Malformed(num, e));
        match num {
            MsgNum::SERVICE_REQUEST => {
                let r = msg::ServiceRequest::decode(payload).map_err(bad)?;
                // Asked again before success it is accepted again, as by
                // sshd: paramiko asks before each method it tries, so its
                // second step after a partial success starts this way.
                if r.name != "ssh-userauth" || self.auth.authenticated {
                    self.disconnect(
                        DisconnectReason::SERVICE_NOT_AVAILABLE,
                        "service not available",
                    );
                    return Ok(());
                }
                self.auth.service_accepted = true;
                self.queue_with(|p| msg::ServiceAccept { name: r.name }.encode(p));
                Ok(())
            }
            MsgNum::USERAUTH_REQUEST if self.auth.service_accepted => {
                if self.auth.authenticated {
                    return Ok(()); // RFC 4252 5.1: ignored after success.
                }
                let req = msg::UserauthRequest::decode(payload).map_err(bad)?;
                if self.auth.info_prompts.take().is_some() {
                    // The client gave up answering keyboard-interactive
                    // prompts: that attempt failed (no FAILURE is owed).
                    self.auth.pending = None;
                    self.count_failure()?;
                }
                if self.auth.pending.is_some() {
                    return Err(Violation::AuthRequestWhilePending.into());
                }
                self.on_userauth_request(req)
            }
            MsgNum::USERAUTH_INFO_RESPONSE if self.auth.info_prompts.is_some() => {
                let r = msg::UserauthInfoResponse::decode(payload).map_err(bad)?;
                let want = self.auth.info_prompts.take().unwrap_or_default();
                if r.responses.len() != want {
                    return Err(Violation::WrongAnswerCount {
                        prompts: want,
                        answers: r.responses.len(),
                    }
                    .into());
                }
                self.events.push_back(Event::AuthInfoResponse {
                    answers: r.responses,
                });
                Ok(())
            }
            _ => Err(Violation::UnexpectedMessage {
                num,
                state: Phase::ServerAuth,
            }
            .into()),
        }
    }

    /// The banner goes out once, just before the first answer, so the
    /// runtime can still choose it per user (see `set_auth_policy`).
    fn send_banner_once(&mut self) {
        if !self.auth.banner_sent {
            self.auth.banner_sent = true;
            if let Some(b) = self.server.as_ref().and_then(|s| s.banner.clone()) {
                self.queue_with(|p| {
                    msg::UserauthBanner {
                        message: b,
                        language: String::new(),
                    }
                    .encode(p)
                });
            }
        }
    }

    /// Server: the authentication policy for the user of the pending
    /// request (sshd's Match blocks): the methods named in failures,
    /// MaxAuthTries, and the banner if it has not gone out yet.
    pub fn set_auth_policy(
        &mut self,
        methods: Vec<String>,
        max_auth_tries: u32,
        banner: Option<String>,
    ) {
        let sent = self.auth.banner_sent;
        if let Some(s) = self.server.as_mut() {
            s.auth_methods = methods;
            s.max_auth_tries = max_auth_tries;
            if !sent {
                s.banner = banner;
            }
        }
    }

    fn on_userauth_request(&mut self, req: msg::UserauthRequest) -> Result<(), Error> {
        if req.service != "ssh-connection" {
            self.disconnect(
                DisconnectReason::SERVICE_NOT_AVAILABLE,
                "service not available",
            );
            return Ok(());
        }
        // Every request names the first one's user, as sshd requires: the
        // user's policy (Match, MaxAuthTries, steps met) holds for the whole
        // exchange. The BSD auth style of `user:style` may vary (sshd
        // compares the name without it).
        let name = req.user.split_once(':').map_or(&*req.user, |(u, _)| u);
        match &self.auth.first_user {
            None => self.auth.first_user = Some(name.to_owned()),
            Some(first) if first != name => {
                return Err(Violation::UserChanged {
                    from: first.clone(),
                    to: name.to_owned(),
                }
                .into());
            }
            Some(_) => {}
        }
        if self.auth.stripe_join {
            if let Some(join) = JoinRequest::from_method(&req.method) {
                return self.on_stripe_join(req.user, join);
            }
        }
        let method = match req.method {
            AuthMethod::None => AuthMethodRequest::None,
            AuthMethod::PublicKey {
                algorithm,
                key_blob,
                host_key,
                signature,
            } => {
                // The hostbound form must name the host key of our first
                // exchange (what the client's agent was bound to); sshd
                // ends the connection on any other.
                if let Some(h) = &host_key {
                    if self.kex.host_key.as_ref() != Some(h) {
                        return Err(Violation::HostboundKeyMismatch.into());
                    }
                }
                let key_type = hostkey::blob_key_type(&key_blob).unwrap_or_default();
                let usable = self.config.pubkey_algs.contains(&algorithm)
                    && (self.config.provider.sig_algs_for_key_type)(key_type)
                        .contains(&algorithm.as_str())
                    && self.method_offered("publickey");
                if !usable {
                    return self.reject_now(true);
                }
                let signature = match signature {
                    None => None,
                    Some(sig) => {
                        let sid = self.kex.session_id.clone().unwrap_or_default();
                        let data = msg::publickey_signed_data(
                            &sid,
                            &req.user,
                            &req.service,
                            &algorithm,
                            &key_blob,
                            host_key.as_deref(),
                        );
                        let verify = self.config.provider.verify;
                        if verify(&algorithm, &key_blob, &sig, &data).is_err() {
                            return self.reject_now(true);
                        }
                        Some(sig)
                    }
                };
                AuthMethodRequest::PublicKey {
                    algorithm,
                    key_blob,
                    host_key,
                    signed: signature.is_some(),
                    signature,
                }
            }
            AuthMethod::Password {
                password,
                new_password: None,
            } if self.method_offered("password") => AuthMethodRequest::Password { password },
            AuthMethod::KeyboardInteractive { submethods, .. }
                if self.method_offered("keyboard-interactive") =>
            {
                AuthMethodRequest::KeyboardInteractive { submethods }
            }
            _ => return self.reject_now(true),
        };
        self.auth.pending = Some(Pending {
            user: req.user.clone(),
            method: method.clone(),
            join: false,
        });
        self.events.push_back(Event::AuthRequest {
            user: req.user,
            method,
        });
        Ok(())
    }

    /// A secondary connection asks to join a striped session (PROTOCOL.md,
    /// "Channel striping"): the runtime checks it against the session's
    /// admission. Malformed fields fail as a wrong proof would.
    fn on_stripe_join(
        &mut self,
        user: String,
        join: Result<JoinRequest, crate::stripe::StripeError>,
    ) -> Result<(), Error> {
        let Ok(join) = join else {
            return self.reject_now(true);
        };
        self.auth.pending = Some(Pending {
            user: user.clone(),
            method: AuthMethodRequest::None,
            join: true,
        });
        self.events
            .push_back(Event::StripeJoinRequest { user, join });
        Ok(())
    }

    /// Server: hands `stripe-join-v00@sluice.dev` requests to the runtime
    /// as [`Event::StripeJoinRequest`] instead of refusing them as an
    /// unknown method. Only for a server that keeps striped sessions.
    pub fn enable_stripe_join(&mut self) {
        self.auth.stripe_join = true;
    }

    fn method_offered(&self, name: &str) -> bool {
        self.server
            .as_ref()
            .is_some_and(|s| s.auth_methods.iter().any(|m| m == name))
    }

    /// One more failed attempt; an error once MaxAuthTries is reached.
    fn count_failure(&mut self) -> Result<(), Error> {
        let max = self.server.as_ref().map_or(6, |s| s.max_auth_tries);
        self.auth.failures += 1;
        if max > 0 && self.auth.failures >= max {
            return Err(Violation::TooManyAuthFailures.into());
        }
        Ok(())
    }

    /// Sends USERAUTH_FAILURE; `counts` when the attempt counts against MaxAuthTries.
    fn reject_now(&mut self, counts: bool) -> Result<(), Error> {
        self.send_banner_once();
        if counts {
            self.count_failure()?;
        }
        let methods = self
            .server
            .as_ref()
            .map(|s| s.auth_methods.clone())
            .unwrap_or_default();
        self.queue_with(|p| {
            msg::UserauthFailure {
                methods,
                partial_success: false,
            }
            .encode(p)
        });
        Ok(())
    }

    /// Server: the pending request succeeds. For an unsigned public key
    /// this sends PK_OK (the key is acceptable) rather than success.
    pub fn auth_accept(&mut self) {
        let Some(p) = self.auth.pending.take() else {
            return;
        };
        self.auth.info_prompts = None;
        self.send_banner_once();
        if let AuthMethodRequest::PublicKey {
            algorithm,
            key_blob,
            signed: false,
            ..
        } = p.method
        {
            self.queue_with(|out| {
                msg::UserauthPkOk {
                    algorithm,
                    key_blob,
                }
                .encode(out)
            });
            return;
        }
        self.auth.authenticated = true;
        self.auth.user = Some(p.user.clone());
        // The client compresses what it sends after this request (what it
        // sends once it reads our success, and an early open in its
        // engine's before-authentication form), so the next packet read is
        // inflated even if the runtime reads it before our success is
        // framed. Our own stream starts when the success is framed.
        self.recv.compression.authenticated();
        self.queue_with(|out| out.push(MsgNum::USERAUTH_SUCCESS.0));
        self.events.push_back(Event::Authenticated { user: p.user });
    }

    /// Server: the pending request succeeded as one step of several: the
    /// client gets USERAUTH_FAILURE with partial success and `methods`, the
    /// methods that can continue (which later failures list too). Not a
    /// failure for MaxAuthTries. An unsigned publickey query is answered
    /// PK_OK instead, as by [`Connection::auth_accept`].
    pub fn auth_partial(&mut self, methods: Vec<String>) {
        if self.auth.pending.as_ref().is_some_and(|p| p.join) {
            // A join is not one step of several: all or nothing.
            return self.auth_reject();
        }
        let unsigned = matches!(
            self.auth.pending.as_ref().map(|p| &p.method),
            Some(AuthMethodRequest::PublicKey { signed: false, .. })
        );
        if unsigned {
            return self.auth_accept();
        }
        if self.auth.pending.take().is_none() {
            return;
        }
        self.auth.info_prompts = None;
        self.send_banner_once();
        if let Some(s) = self.server.as_mut() {
            s.auth_methods = methods.clone();
        }
        self.queue_with(|out| {
            msg::UserauthFailure {
                methods,
                partial_success: true,
            }
            .encode(out)
        });
    }

    /// Server: the pending request fails; after MaxAuthTries failures the
    /// connection is closed with "Too many authentication failures".
    pub fn auth_reject(&mut self) {
        let Some(p) = self.auth.pending.take() else {
            return;
        };
        self.auth.info_prompts = None;
        let counts = p.join || !matches!(p.method, AuthMethodRequest::None);
        if let Err(e) = self.reject_now(counts) {
            let _ = self.fail(e);
        }
    }

    /// Server: sends keyboard-interactive prompts (RFC 4256 3.2) for the
    /// pending keyboard-interactive request; the answers come as
    /// [`Event::AuthInfoResponse`]. At most 100 prompts per round.
    pub fn auth_info_request(
        &mut self,
        name: &str,
        instruction: &str,
        prompts: Vec<msg::Prompt>,
    ) -> Result<(), Error> {
        let kbdint = matches!(
            self.auth.pending.as_ref().map(|p| &p.method),
            Some(AuthMethodRequest::KeyboardInteractive { .. })
        );
        if !kbdint || self.auth.info_prompts.is_some() {
            return Err(Error::InvalidState(
                "no keyboard-interactive request waiting for prompts",
            ));
        }
        if prompts.len() > super::MAX_KBDINT_ANSWERS {
            return Err(Error::InvalidState("too many keyboard-interactive prompts"));
        }
        self.auth.info_prompts = Some(prompts.len());
        self.send_banner_once();
        let m = msg::UserauthInfoRequest {
            name: name.to_owned(),
            instruction: instruction.to_owned(),
            language: String::new(),
            prompts,
        };
        self.queue_with(|p| m.encode(p));
        Ok(())
    }
}
