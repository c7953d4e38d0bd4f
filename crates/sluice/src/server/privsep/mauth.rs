//! The monitor's authentication decisions for its sandboxed child: the
//! same policy as a single-process server (server/auth.rs for passwords,
//! keyboard-interactive and PAM, conn/publickey.rs for authorized_keys),
//! made as root in the monitor, with verdicts recorded for the child
//! instead of applied to an engine.
//!
//! The child is hostile: a request out of turn, an answer nobody asked
//! for, a public-key signature that does not verify against the session
//! id the monitor fixed itself, all end the connection ([`Violation`]).

use super::accepted::Accepted;
use super::signer::KeyHolder;
use super::stripe_join::{self, Joining};
use super::wire::{Method, Msg};
use crate::config::sshd::{MatchContext, ServerConfig as Sshd};
use crate::keys::authorized_keys::KeyOptions;
use crate::server::auth::{Answers, ServerAuth};
use crate::server::auth_info;
use crate::server::session::UserInfo;
use sluice_proto::crypto::hostkey;
use sluice_proto::AuthMethodRequest;
use std::net::SocketAddr;
use std::time::Duration;
use zeroize::Zeroizing;

mod join;
mod recorder;

use recorder::Recorder;

pub use super::error::Violation;

/// A striping secondary admitted by its session's monitor, to be handed
/// over to that session (monitor.rs) instead of starting a session.
pub struct Joined {
    /// The user, as the session's monitor admitted it.
    pub user: String,
    /// The admission, holding the way to the session's monitor.
    pub joining: Joining,
}

/// How the child's last line starts (server/privsep/mod.rs `log_end`).
const CLOSE_LINES: [&str; 4] = [
    "Connection closed by ",
    "Connection reset by ",
    "Disconnected from ",
    "Connection from ",
];

/// The monitor's authentication state for one connection.
pub struct MonitorAuth {
    base: Sshd,
    cfg: Sshd,
    match_user: Option<String>,
    peer: SocketAddr,
    local: SocketAddr,
    auth: ServerAuth,
    rec: Recorder,
    /// The child waits for a verdict.
    awaiting: bool,
    /// The last verdict was keyboard-interactive prompts.
    prompted: bool,
    /// A method other than `none` was tried (PerSourcePenalties' authfail).
    attempted: bool,
    accepted: Option<Accepted>,
    /// ExposeAuthInfo's line for a request whose verdict comes later.
    pending_info: String,
    /// ExposeAuthInfo's lines of the steps of AuthenticationMethods met
    /// so far (the last step's line follows them).
    partial_info: String,
    /// The merged authorized_keys options of keys that met a step.
    partial_key_options: Option<KeyOptions>,
    /// A striping join was admitted (stripe_join.rs).
    joined: Option<Joined>,
    /// Where join sockets live ([`stripe_join::STRIPE_DIR`]).
    stripe_dir: std::path::PathBuf,
}

impl MonitorAuth {
    /// State for a connection from `peer` to `local` under `cfg`.
    pub fn new(cfg: Sshd, peer: SocketAddr, local: SocketAddr) -> Self {
        let rec = Recorder {
            max_tries: cfg.max_auth_tries,
            ..Recorder::default()
        };
        MonitorAuth {
            base: cfg.clone(),
            cfg,
            match_user: None,
            peer,
            local,
            auth: ServerAuth::new(peer),
            rec,
            awaiting: false,
            prompted: false,
            attempted: false,
            accepted: None,
            pending_info: String::new(),
            partial_info: String::new(),
            partial_key_options: None,
            joined: None,
            stripe_dir: stripe_join::STRIPE_DIR.into(),
        }
    }

    /// The configuration in force (Match applied for the user asked for).
    pub fn config(&self) -> &Sshd {
        &self.cfg
    }

    /// The user asked for, for log lines.
    pub fn user_name(&self) -> Option<&str> {
        self.match_user.as_deref()
    }

    /// Authentication succeeded (a verdict the child was given).
    pub fn accepted(&self) -> Option<&Accepted> {
        self.accepted.as_ref()
    }

    /// The user the handover must name: the one accepted, or the one a
    /// striping join was admitted for.
    pub fn handover_user(&self) -> Option<&str> {
        match (&self.accepted, &self.joined) {
            (Some(a), _) => Some(&a.user.name),
            (None, Some(j)) => Some(&j.user),
            (None, None) => None,
        }
    }

    /// Where authentication is, for the monitor's table (policy.rs);
    /// `keyed`: the session id is fixed.
    pub fn phase(&self, keyed: bool) -> super::policy::Pre {
        use super::policy::Pre;
        if !keyed {
            Pre::Kex
        } else if self.rec.closed {
            Pre::Closed
        } else if self.handover_user().is_some() {
            Pre::Accepted
        } else if self.awaiting {
            Pre::Waiting
        } else if self.prompted {
            Pre::Prompted
        } else {
            Pre::Auth
        }
    }

    /// The striping join admitted, if this connection is a secondary.
    pub fn take_join(&mut self) -> Option<Joined> {
        self.joined.take()
    }

    /// The connection must end (MaxAuthTries, LoginGraceTime).
    pub fn closed(&self) -> bool {
        self.rec.closed
    }

    /// LoginGraceTime ran out: the child is to be killed.
    pub fn timed_out(&self) -> bool {
        self.rec.timed_out
    }

    /// Whether the client tried a real method (not `none`).
    pub fn attempted(&self) -> bool {
        self.attempted
    }

    /// A log line of the pre-auth child in sshd's words: the child names
    /// the user "authenticating user" when its connection ends, because it
    /// is never told whether the user exists (that would let a subverted
    /// child enumerate users); the monitor knows, and says "invalid user"
    /// where sshd does (fail2ban's filters read it).
    pub fn child_line<'a>(&self, line: &'a str) -> std::borrow::Cow<'a, str> {
        match self.auth.invalid_user() {
            Some(u) => {
                let child = format!("authenticating user {u} ");
                match line.split_once(&child) {
                    Some((head, tail)) if CLOSE_LINES.iter().any(|p| head == *p) => {
                        format!("{head}invalid user {u} {tail}").into()
                    }
                    _ => line.into(),
                }
            }
            None => line.into(),
        }
    }

    /// The Match blocks for `user`; the child's engine gets the policy.
    fn user_config(&mut self, user: &str, out: &mut Vec<Msg>) {
        if self.match_user.as_deref() == Some(user) {
            return;
        }
        let ctx = MatchContext::connection(user, self.peer, self.local);
        self.cfg = self.base.for_connection(&ctx);
        self.match_user = Some(user.to_owned());
        self.rec.max_tries = self.cfg.max_auth_tries;
        let banner = self
            .cfg
            .banner
            .as_ref()
            .and_then(|p| crate::server::auth::read_banner(p));
        out.push(Msg::Policy {
            methods: self.cfg.auth_methods(),
            max_tries: self.cfg.max_auth_tries,
            banner,
        });
    }

    /// A USERAUTH_REQUEST relayed by the child; messages for it go to `out`.
    pub fn on_request(
        &mut self,
        keys: &KeyHolder,
        user: String,
        method: Method,
        out: &mut Vec<Msg>,
    ) -> Result<(), Violation> {
        if self.awaiting || self.accepted.is_some() || self.joined.is_some() {
            return Err(Violation::OutOfTurn("authentication request"));
        }
        self.awaiting = true;
        self.prompted = false;
        // `user:style` logs in `user`; a signature covers the name as sent.
        let sent = user;
        let user = crate::server::auth::without_style(sent.clone());
        let first = self.match_user.as_deref().unwrap_or(&user);
        if first != user || !self.auth.same_user(&user) {
            return Err(Violation::UserChanged);
        }
        self.user_config(&user, out);
        self.rec.none = matches!(method, Method::None);
        self.attempted |= !self.rec.none;
        let line = match &method {
            Method::None => auth_info::method_line("none", None),
            Method::Password(_) => auth_info::method_line("password", None),
            Method::KeyboardInteractive => self.kbdint_info(),
            Method::PublicKey { .. } | Method::StripeJoin(_) => String::new(),
        };
        let request = match method {
            Method::StripeJoin(req) => return self.stripe_join(keys, (&sent, &user), &req),
            Method::PublicKey {
                algorithm,
                key_blob,
                host_key,
                signature,
            } => {
                let key = (algorithm.as_str(), key_blob.as_slice(), host_key.as_deref());
                return self.publickey(keys, (&sent, &user), key, signature);
            }
            Method::None => AuthMethodRequest::None,
            Method::Password(p) => AuthMethodRequest::Password {
                password: p.to_string(),
            },
            Method::KeyboardInteractive => AuthMethodRequest::KeyboardInteractive {
                submethods: String::new(),
            },
        };
        if let Some(info) = self
            .auth
            .on_request(&mut self.rec, &self.cfg, &user, request)
        {
            self.accept(info, None, line);
        } else {
            self.pending_info = line; // PAM may accept it later (tick)
        }
        Ok(())
    }

    fn publickey(
        &mut self,
        keys: &KeyHolder,
        (sent, user): (&str, &str),
        (algorithm, key_blob, host_key): (&str, &[u8], Option<&[u8]>),
        signature: Option<Vec<u8>>,
    ) -> Result<(), Violation> {
        // A hostbound request names the key of the first exchange, which
        // this monitor signed (the child's engine checked it too).
        if host_key.is_some_and(|h| keys.session_host_key() != Some(h)) {
            return Err(Violation::WrongHostKey);
        }
        // The engine's own check, made again: the child could skip it.
        let key_type = hostkey::blob_key_type(key_blob).unwrap_or_default();
        if !hostkey::sig_algs_for_key_type(key_type).contains(&algorithm) {
            return Err(Violation::BadAlgorithm);
        }
        // The engine lets every algorithm sluiced implements through; the
        // user's list (Match blocks applied) is decided here, as sshd's
        // userauth_pubkey does, with an ordinary failure.
        if !self.cfg.pubkey_algorithms.iter().any(|a| a == algorithm) {
            crate::log!(
                Info,
                "userauth_pubkey: signature algorithm {algorithm} not in PubkeyAcceptedAlgorithms [preauth]"
            );
            self.auth.reject(&mut self.rec);
            return Ok(());
        }
        if let Some(sig) = &signature {
            check_signature(keys, sent, (algorithm, key_blob, host_key), sig)?;
        }
        let signed = signature.is_some();
        let allowed = self.auth.valid_user(&self.cfg, user).is_some()
            && self.auth.publickey_allowed(&self.cfg, key_blob);
        let word = self.auth.verdict_word(&self.cfg, "publickey", None);
        let decided = if allowed {
            // With the signature: a FIDO key's flags are judged there too.
            crate::server::conn::publickey::decide_signed(
                &self.cfg,
                (self.peer, self.local),
                user,
                key_blob,
                signature.as_deref(),
                word,
            )
        } else {
            None
        };
        // UsePAM: the account modules have the last word on a right key,
        // as in sshd (an expired account, pam_access, pam_nologin).
        let decided = decided
            .filter(|(info, _)| !(signed && self.cfg.use_pam) || self.pam_account_allows(info));
        // Every key that met a step restricts the session.
        let decided = decided.and_then(|(info, opts)| match &self.partial_key_options {
            Some(earlier) if signed => earlier.clone().merge(&opts).map(|o| (info, o)),
            _ => Some((info, opts)),
        });
        let Some((info, opts)) = decided else {
            self.auth.reject_publickey();
            return Ok(());
        };
        if !signed {
            self.rec.auth_accept(); // PK_OK
            return Ok(());
        }
        self.pending_info = auth_info::method_line("publickey", Some(key_blob));
        let done = self
            .auth
            .succeed(&mut self.rec, &self.cfg, "publickey", None, Some(key_blob));
        if done {
            let line = std::mem::take(&mut self.pending_info);
            self.accept(info, Some(opts), line);
        } else {
            self.partial_key_options = Some(opts);
        }
        Ok(())
    }

    /// UsePAM's account modules on a user whose key was right.
    fn pam_account_allows(&self, info: &UserInfo) -> bool {
        match crate::server::pam_session::account(
            &self.cfg.pam_service(),
            &info.name,
            &self.peer.ip().to_string(),
        ) {
            Ok(()) => true,
            Err(e) => {
                crate::log!(
                    Info,
                    "Access denied for user {} by PAM account configuration ({e})",
                    info.name
                );
                false
            }
        }
    }

    /// Authentication is complete: `auth_info` is the last step's line;
    /// earlier steps' key options (merged) hold when this step had none.
    fn accept(&mut self, user: UserInfo, key_options: Option<KeyOptions>, auth_info: String) {
        let key_options = key_options.or_else(|| self.partial_key_options.take());
        let mut all = std::mem::take(&mut self.partial_info);
        all.push_str(&auth_info);
        self.accepted = Some(Accepted {
            user,
            key_options,
            auth_info: all,
        });
    }

    /// keyboard-interactive's line: with PAM, sshd names the device.
    fn kbdint_info(&self) -> String {
        let method = if self.cfg.use_pam {
            "keyboard-interactive/pam"
        } else {
            "keyboard-interactive"
        };
        auth_info::method_line(method, None)
    }

    /// Keyboard-interactive answers relayed by the child.
    pub fn on_info_response(&mut self, answers: Vec<Zeroizing<String>>) -> Result<(), Violation> {
        if self.awaiting || !self.prompted {
            return Err(Violation::UnaskedAnswers);
        }
        self.awaiting = true;
        self.prompted = false;
        let answers = answers.iter().map(|a| a.to_string()).collect();
        if let Some(info) = self
            .auth
            .on_info_response(&mut self.rec, &self.cfg, answers)
        {
            let line = self.kbdint_info();
            self.accept(info, None, line);
        } else {
            self.pending_info = self.kbdint_info();
        }
        Ok(())
    }

    /// Delayed failures, PAM's progress, LoginGraceTime.
    pub fn tick(&mut self) {
        if let Some(info) = self.auth.tick(&mut self.rec, &self.cfg, false) {
            let line = std::mem::take(&mut self.pending_info);
            self.accept(info, None, line);
        }
    }

    /// How soon [`MonitorAuth::tick`] must run.
    pub fn tick_interval(&self) -> Option<Duration> {
        self.auth.tick_interval(&self.cfg, false)
    }

    /// The verdict to send the child now, if one is ready.
    pub fn take_verdict(&mut self) -> Option<Msg> {
        let v = self.rec.verdict.take()?;
        self.awaiting = false;
        if matches!(v, Msg::Partial { .. }) {
            let line = std::mem::take(&mut self.pending_info);
            self.partial_info.push_str(&line);
        }
        self.prompted = matches!(v, Msg::InfoRequest { .. });
        Some(v)
    }
}

/// A publickey request's signature over this session's data, checked in
/// the monitor (the child could skip the engine's check).
fn check_signature(
    keys: &KeyHolder,
    sent: &str,
    (algorithm, key_blob, host_key): (&str, &[u8], Option<&[u8]>),
    sig: &[u8],
) -> Result<(), Violation> {
    let sid = keys.session_id().ok_or(Violation::NoSession)?;
    let data = sluice_proto::msg::publickey_signed_data(
        sid,
        sent,
        "ssh-connection",
        algorithm,
        key_blob,
        host_key,
    );
    if hostkey::verify(algorithm, key_blob, sig, &data).is_err() {
        return Err(Violation::BadSignature);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth() -> MonitorAuth {
        let a: SocketAddr = "127.0.0.1:2000".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:22".parse().unwrap();
        MonitorAuth::new(Sshd::default(), a, b)
    }

    #[test]
    fn a_hostile_child_is_caught() {
        let keys = KeyHolder::new(Vec::new());
        let mut out = Vec::new();
        // Answers nobody asked for.
        let mut m = auth();
        assert_eq!(
            m.on_info_response(vec![Zeroizing::new("x".into())]),
            Err(Violation::UnaskedAnswers)
        );
        // A signed request before any key exchange: no session id to check.
        let kp = sluice_proto::crypto::hostkey::KeyPair::generate_ed25519().unwrap();
        let blob = sluice_proto::crypto::hostkey::Signer::public_blob(&kp);
        let pk = |sig: Option<Vec<u8>>| Method::PublicKey {
            algorithm: "ssh-ed25519".into(),
            key_blob: blob.clone(),
            host_key: None,
            signature: sig,
        };
        assert_eq!(
            m.on_request(&keys, "root".into(), pk(Some(vec![1, 2, 3])), &mut out),
            Err(Violation::NoSession)
        );
        // A signature that does not verify over the monitor's session id.
        let host: std::sync::Arc<dyn sluice_proto::crypto::hostkey::Signer> = std::sync::Arc::new(
            sluice_proto::crypto::hostkey::KeyPair::generate_ed25519().unwrap(),
        );
        let host_blob = host.public_blob();
        let mut keys = KeyHolder::new(vec![host]);
        let t = super::super::signer::test_transcript("SSH-2.0-OpenSSH_9.2", &host_blob, 7);
        keys.sign_exchange(0, "ssh-ed25519", 2, &t).unwrap();
        let mut m = auth();
        let wrong =
            sluice_proto::crypto::hostkey::Signer::sign(&kp, "ssh-ed25519", b"other").unwrap();
        assert_eq!(
            m.on_request(&keys, "root".into(), pk(Some(wrong)), &mut out),
            Err(Violation::BadSignature)
        );
        // A hostbound request naming another host key than the exchange's.
        let mut m = auth();
        let elsewhere = Method::PublicKey {
            algorithm: "ssh-ed25519".into(),
            key_blob: blob.clone(),
            host_key: Some(blob.clone()),
            signature: None,
        };
        assert_eq!(
            m.on_request(&keys, "root".into(), elsewhere, &mut out),
            Err(Violation::WrongHostKey)
        );
        // An algorithm the key cannot make.
        let mut m = auth();
        let bad = Method::PublicKey {
            algorithm: "rsa-sha2-256".into(),
            key_blob: blob.clone(),
            host_key: None,
            signature: None,
        };
        assert_eq!(
            m.on_request(&keys, "root".into(), bad, &mut out),
            Err(Violation::BadAlgorithm)
        );
        // A second request before the child was given the first verdict.
        let mut m = auth();
        m.on_request(&keys, "nosuchuser-privsep".into(), Method::None, &mut out)
            .unwrap();
        let again = m.on_request(&keys, "nosuchuser-privsep".into(), Method::None, &mut out);
        assert_eq!(again, Err(Violation::OutOfTurn("authentication request")));
        assert_eq!(m.take_verdict(), Some(Msg::Reject));
        m.on_request(&keys, "nosuchuser-privsep".into(), Method::None, &mut out)
            .unwrap();
        // Another user than the first request's, even before any step was
        // met; `user:style` is the user (the style may vary).
        assert_eq!(m.take_verdict(), Some(Msg::Reject));
        m.on_request(
            &keys,
            "nosuchuser-privsep:pam".into(),
            Method::None,
            &mut out,
        )
        .unwrap();
        assert_eq!(m.take_verdict(), Some(Msg::Reject));
        let other = m.on_request(&keys, "nosuchuser-other".into(), Method::None, &mut out);
        assert_eq!(other, Err(Violation::UserChanged));
    }

    #[test]
    fn the_childs_close_line_says_invalid_user_where_sshd_does() {
        let keys = KeyHolder::new(Vec::new());
        let mut out = Vec::new();
        let mut m = auth();
        let line = "Connection closed by authenticating user nosuchuser-cl 10.0.0.1 port 5";
        assert_eq!(m.child_line(line), line, "no user looked up yet");
        m.on_request(&keys, "nosuchuser-cl".into(), Method::None, &mut out)
            .unwrap();
        assert_eq!(
            m.child_line(line),
            "Connection closed by invalid user nosuchuser-cl 10.0.0.1 port 5"
        );
        let reset = "Connection reset by authenticating user nosuchuser-cl 10.0.0.1 port 5";
        assert!(m
            .child_line(reset)
            .starts_with("Connection reset by invalid user "));
        // Only the close lines, and only the name looked up.
        let other = "Something about authenticating user nosuchuser-cl 10.0.0.1 port 5";
        assert_eq!(m.child_line(other), other);
        let else_ = "Connection closed by authenticating user somebody 10.0.0.1 port 5";
        assert_eq!(m.child_line(else_), else_);
        // A user that exists stays "authenticating user", as in sshd.
        let mut m = auth();
        m.on_request(&keys, "root".into(), Method::None, &mut out)
            .unwrap();
        let root = "Connection closed by authenticating user root 10.0.0.1 port 5";
        assert_eq!(m.child_line(root), root);
    }
}
